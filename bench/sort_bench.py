"""`torch.sort` on the work of `nn/examples/sort_bench.rs`, in its table format: 2^LOG2 f32
keys sorted (PyTorch returns the sorted keys and their int64 indices), and the same with
`stable=True`. Bytes: each key read once and written once (8 a key), as the Rust side counts.

    python3 bench/sort_bench.py [LOG2_KEYS..]      # default 20 26

Each figure is the median of 5 timings of 20 launches (CUDA events) after at least 1 s of
warm-up (`cuda_timing.py`, staged beside this file).
"""
import sys

import torch

from cuda_timing import time_ms


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [20, 26]
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    print("| work | who | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    for log2 in sizes:
        n = 1 << log2
        keys = (torch.rand(n, device="cuda") - 0.5) * 1e6
        for who, stable in (("PyTorch", False), ("PyTorch stable", True)):
            ms = time_ms(lambda: torch.sort(keys, stable=stable))
            print(f"| sort f32 2^{log2} | {who} | {ms:.4f} | {8 * n / ms / 1e9:.3f} |")


if __name__ == "__main__":
    main()
