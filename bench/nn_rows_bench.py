"""PyTorch and Triton on the work of `nn/examples/rows_bench.rs`, in its table format:
softmax, RMSNorm with a learned scale and LayerNorm with a learned scale and bias along the
rows of a [ROWS, COLS] f32 matrix, forward and backward in PyTorch (the backward computes the
input gradient and the parameters' gradients), forward in Triton: one program a row, the row
loaded whole in one masked block, reduced and stored, as Triton's tutorials write them (more
warps for longer rows); and PyTorch's `cross_entropy` forward (per-row losses, its log-softmax
written beside them as tessera writes the probabilities). Rows longer than 16384 time the
loss alone, as the Rust side does.

    python3 bench/nn_rows_bench.py [ROWS COLS] [f16]   # default 16384 4096 in f32

With `f16` every tensor is `float16` (Triton's kernels sum in f32, as tessera's do; PyTorch's
eager kernels likewise), bytes are counted at 2 a scalar, and the loss is left out (tessera's
is f32 only).

Bytes per pass: each [rows, cols] matrix read or written once (forward: x, y; backward: the
saved input, grad_y, grad_x), as the Rust side counts. Each figure is the median of 5 timings
of 20 launches (CUDA events) after at least 1 s of warm-up. The softmax kernel and the
launch are `rows_bench.py`'s (stage it, and `cuda_timing.py`, beside this file).
"""
import sys

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from cuda_timing import time_ms
from rows_bench import launch_rows, softmax_rows


@triton.jit
def rms_norm_scaled_rows(x_ptr, y_ptr, cols, scale_ptr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=0.0).to(tl.float32)
    scale = tl.load(scale_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * cols + offsets, x * rstd * scale, mask=inside)


@triton.jit
def layer_norm_rows(x_ptr, y_ptr, cols, scale_ptr, bias_ptr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / cols
    centered = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / cols + eps)
    scale = tl.load(scale_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + offsets, mask=inside, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * cols + offsets, centered * rstd * scale + bias, mask=inside)


def main():
    words = sys.argv[1:]
    halves = bool(words) and words[-1] == "f16"
    args = [int(a) for a in (words[:-1] if halves else words)]
    rows, cols = args if len(args) == 2 else (16384, 4096)
    dtype, suffix = (torch.float16, " f16") if halves else (torch.float32, "")
    x = torch.rand(rows, cols, device="cuda", dtype=dtype, requires_grad=True)
    grad_y = torch.rand(rows, cols, device="cuda", dtype=dtype)
    scale = torch.rand(cols, device="cuda", dtype=dtype, requires_grad=True)
    bias = torch.rand(cols, device="cuda", dtype=dtype, requires_grad=True)
    ops = {
        "softmax": lambda: F.softmax(x, dim=-1),
        "rms_norm": lambda: F.rms_norm(x, (cols,), scale, eps=1e-6),
        "layer_norm": lambda: F.layer_norm(x, (cols,), scale, bias, eps=1e-5),
    }
    y_triton = torch.empty(rows, cols, device="cuda", dtype=dtype)
    tritons = {
        "softmax": lambda: launch_rows(softmax_rows, x, y_triton),
        "rms_norm": lambda: launch_rows(rms_norm_scaled_rows, x, y_triton, scale, 1e-6),
        "layer_norm": lambda: launch_rows(layer_norm_rows, x, y_triton, scale, bias, 1e-5),
    }
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__}, Triton {triton.__version__})")
    print("| work | pass | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    matrix = rows * cols * x.element_size()
    if not halves:
        labels = torch.arange(rows, device="cuda") % cols
        with torch.no_grad():
            ms = time_ms(lambda: F.cross_entropy(x, labels, reduction="none"))
        print(f"| cross_entropy {rows}x{cols} | PyTorch forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
    if cols > 16384:
        return
    tolerance = 2e-2 if halves else 1e-4
    for work, op in ops.items():
        with torch.no_grad():
            ms = time_ms(op)
            print(f"| {work}{suffix} {rows}x{cols} | PyTorch forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
            tritons[work]()
            torch.testing.assert_close(y_triton, op(), rtol=tolerance, atol=tolerance)
            ms = time_ms(tritons[work])
            print(f"| {work}{suffix} {rows}x{cols} | Triton forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
        y = op()
        inputs = [x] if work == "softmax" else [x, scale] if work == "rms_norm" else [x, scale, bias]
        ms = time_ms(lambda: torch.autograd.grad(y, inputs, grad_y, retain_graph=True))
        print(f"| {work}{suffix} {rows}x{cols} | PyTorch backward | {ms:.4f} | {3 * matrix / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
