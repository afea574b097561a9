"""PyTorch on the work of `examples/elementwise.rs`, in its table format: a device copy and
`y = a * x + y` over f32 buffers of the same size (MiB per buffer, default 256); and, for
`examples/std_scan.rs`, an inclusive scan (`torch.cumsum`) of as many `u32`s (stored as
`int32`, PyTorch having no unsigned scan), which reads and writes each once.

    python3 bench/elementwise_bench.py [MiB]

Run on the GPU machine in the same device command as the Rust side. Bytes: the copy reads x
and writes y; axpy reads x and y and writes y. Each figure is the median of 5 timings of 20
launches (CUDA events) after at least 1 s of warm-up, as the Rust side times.
"""
import sys

import torch

from cuda_timing import time_ms

def main():
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    n = mib * (1 << 20) // 4
    x = torch.rand(n, device="cuda")
    y = torch.rand(n, device="cuda")
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    print("| work | kernel | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    for work, run, reads in [
        ("copy", lambda: y.copy_(x), 1),
        ("axpy", lambda: y.add_(x, alpha=2.0), 2),
    ]:
        ms = time_ms(run)
        moved = (reads + 1) * n * 4
        print(f"| {work} {mib} MiB | PyTorch | {ms:.4f} | {moved / ms / 1e9:.2f} |")
    ints = torch.randint(0, 100, (n,), device="cuda", dtype=torch.int32)
    sums = torch.empty_like(ints)
    ms = time_ms(lambda: torch.cumsum(ints, 0, dtype=torch.int32, out=sums))
    print(f"| scan {n} u32 | PyTorch cumsum | {ms:.4f} | {2 * n * 4 / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
