"""PyTorch and Triton on the work of `nn/examples/rows_bench.rs`, in its table format:
softmax, RMSNorm with a learned scale and LayerNorm with a learned scale and bias along the
rows of a [ROWS, COLS] f32 matrix, forward and backward in PyTorch (the backward computes the
input gradient and the parameters' gradients), forward in Triton: one program a row, the row
loaded whole in one masked block, reduced and stored, as Triton's tutorials write them (more
warps for longer rows); and PyTorch's `cross_entropy` forward (per-row losses, its log-softmax
written beside them as tessera writes the probabilities). Rows longer than 16384 time the
loss alone, as the Rust side does.

    python3 bench/nn_rows_bench.py [ROWS COLS]      # default 16384 4096

Bytes per pass: each [rows, cols] matrix read or written once (forward: x, y; backward: the
saved input, grad_y, grad_x), as the Rust side counts. Each figure is the median of 3 timings
of 20 launches (CUDA events) after at least 200 ms of warm-up. The softmax kernel and the
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
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=0.0)
    scale = tl.load(scale_ptr + offsets, mask=inside, other=0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * cols + offsets, x * rstd * scale, mask=inside)


@triton.jit
def layer_norm_rows(x_ptr, y_ptr, cols, scale_ptr, bias_ptr, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offsets = tl.arange(0, BLOCK)
    inside = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=inside, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    centered = tl.where(inside, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / cols + eps)
    scale = tl.load(scale_ptr + offsets, mask=inside, other=0.0)
    bias = tl.load(bias_ptr + offsets, mask=inside, other=0.0)
    tl.store(y_ptr + row * cols + offsets, centered * rstd * scale + bias, mask=inside)


def main():
    args = [int(a) for a in sys.argv[1:]]
    rows, cols = args if len(args) == 2 else (16384, 4096)
    x = torch.rand(rows, cols, device="cuda", requires_grad=True)
    grad_y = torch.rand(rows, cols, device="cuda")
    scale = torch.rand(cols, device="cuda", requires_grad=True)
    bias = torch.rand(cols, device="cuda", requires_grad=True)
    ops = {
        "softmax": lambda: F.softmax(x, dim=-1),
        "rms_norm": lambda: F.rms_norm(x, (cols,), scale, eps=1e-6),
        "layer_norm": lambda: F.layer_norm(x, (cols,), scale, bias, eps=1e-5),
    }
    y_triton = torch.empty(rows, cols, device="cuda")
    tritons = {
        "softmax": lambda: launch_rows(softmax_rows, x, y_triton),
        "rms_norm": lambda: launch_rows(rms_norm_scaled_rows, x, y_triton, scale, 1e-6),
        "layer_norm": lambda: launch_rows(layer_norm_rows, x, y_triton, scale, bias, 1e-5),
    }
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__}, Triton {triton.__version__})")
    print("| work | pass | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    matrix = rows * cols * 4
    labels = torch.arange(rows, device="cuda") % cols
    with torch.no_grad():
        ms = time_ms(lambda: F.cross_entropy(x, labels, reduction="none"))
    print(f"| cross_entropy {rows}x{cols} | PyTorch forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
    if cols > 16384:
        return
    for work, op in ops.items():
        with torch.no_grad():
            ms = time_ms(op)
            print(f"| {work} {rows}x{cols} | PyTorch forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
            tritons[work]()
            torch.testing.assert_close(y_triton, op(), rtol=1e-4, atol=1e-4)
            ms = time_ms(tritons[work])
            print(f"| {work} {rows}x{cols} | Triton forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
        y = op()
        inputs = [x] if work == "softmax" else [x, scale] if work == "rms_norm" else [x, scale, bias]
        ms = time_ms(lambda: torch.autograd.grad(y, inputs, grad_y, retain_graph=True))
        print(f"| {work} {rows}x{cols} | PyTorch backward | {ms:.4f} | {3 * matrix / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
