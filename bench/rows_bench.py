"""Triton and PyTorch on the row kernels of `examples/std_rows.rs`, in its table format.

Run on the GPU machine in the same device command as the Rust side, so that both meet the
same GPU state:

    python3 bench/rows_bench.py                    # 16384 x 1000 softmax, 16384 x 4096 RMSNorm and argmax
    python3 bench/rows_bench.py ROWS SOFTMAX RMS    # other shapes, as std_rows takes them

Work as std_rows defines it: a row softmax, and an RMSNorm without a learned scale
(`x / sqrt(mean(x^2) + 1e-6)`), both f32, and PyTorch's argmax of each row; bytes moved are
each element read once and written once (argmax: read once). The Triton kernels are the usual one-program-per-row form: the whole row
loaded into registers in one masked block, reduced, and stored. The copy is PyTorch's
device copy of the same bytes, the ceiling both are measured against. Each figure is the
median of 5 timings of 20 launches (CUDA events) after a warm-up (`cuda_timing.py`), as
std_rows times.
"""
import sys

import torch
import triton
import triton.language as tl

from cuda_timing import time_ms

@triton.jit
def softmax_rows(x_ptr, y_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * cols + offsets, e / tl.sum(e, axis=0), mask=inside)


@triton.jit
def rms_norm_rows(x_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=0.0)
    scale = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * cols + offsets, x * scale, mask=inside)


def launch_rows(kernel, x, y, *extra):
    rows, cols = x.shape
    block = triton.next_power_of_2(cols)
    # More warps for longer rows, so that each thread holds few elements.
    warps = 4 if block <= 1024 else 8 if block <= 4096 else 16
    kernel[(rows,)](x, y, cols, *extra, BLOCK=block, num_warps=warps)


def inputs(rows, cols):
    generator = torch.Generator(device="cuda").manual_seed(1)
    return torch.rand(rows, cols, device="cuda", generator=generator) * 8 - 4


def main():
    args = [int(a) for a in sys.argv[1:]]
    rows, softmax_cols, rms_cols = args if len(args) == 3 else (16384, 1000, 4096)
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__}, Triton {triton.__version__})")
    print("| work | kernel | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    for work, cols in [("softmax", softmax_cols), ("rms_norm", rms_cols)]:
        x = inputs(rows, cols)
        y = torch.empty_like(x)
        bytes_moved = 2 * x.numel() * x.element_size()
        if work == "softmax":
            want = torch.softmax(x, dim=-1)
            sides = [
                ("Triton", lambda: launch_rows(softmax_rows, x, y)),
                ("PyTorch", lambda: torch.softmax(x, dim=-1)),
            ]
        else:
            want = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-6)
            sides = [
                ("Triton", lambda: launch_rows(rms_norm_rows, x, y, 1e-6)),
                ("PyTorch", lambda: torch.nn.functional.rms_norm(x, (cols,), eps=1e-6)),
            ]
        sides.append(("copy (PyTorch device copy)", lambda: y.copy_(x)))
        label = f"{work} {rows}x{cols}"
        for name, run in sides:
            run()
            if name == "Triton":
                torch.testing.assert_close(y, want, rtol=1e-4, atol=1e-5)
            ms = time_ms(run)
            print(f"| {label} | {name} | {ms:.4f} | {bytes_moved / ms / 1e9:.2f} |")
    x = inputs(rows, rms_cols)
    ms = time_ms(lambda: torch.argmax(x, dim=-1))
    read = x.numel() * x.element_size()
    print(f"| argmax {rows}x{rms_cols} | PyTorch | {ms:.4f} | {read / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
