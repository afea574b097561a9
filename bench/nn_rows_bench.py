"""PyTorch on the work of `nn/examples/rows_bench.rs`, in its table format: softmax, RMSNorm
with a learned scale and LayerNorm with a learned scale and bias along the rows of a
[ROWS, COLS] f32 matrix, forward and backward (the backward computes the input gradient and
the parameters' gradients).

    python3 bench/nn_rows_bench.py [ROWS COLS]      # default 16384 4096

Bytes per pass: each [rows, cols] matrix read or written once (forward: x, y; backward: the
saved input, grad_y, grad_x), as the Rust side counts. Each figure is the median of 3 timings
of 20 launches (CUDA events) after at least 200 ms of warm-up.
"""
import sys

import torch
import torch.nn.functional as F

from cuda_timing import time_ms

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
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    print("| work | pass | ms | TB/s |")
    print("| --- | --- | --- | --- |")
    matrix = rows * cols * 4
    for work, op in ops.items():
        with torch.no_grad():
            ms = time_ms(op)
        print(f"| {work} {rows}x{cols} | PyTorch forward | {ms:.4f} | {2 * matrix / ms / 1e9:.2f} |")
        y = op()
        inputs = [x] if work == "softmax" else [x, scale] if work == "rms_norm" else [x, scale, bias]
        ms = time_ms(lambda: torch.autograd.grad(y, inputs, grad_y, retain_graph=True))
        print(f"| {work} {rows}x{cols} | PyTorch backward | {ms:.4f} | {3 * matrix / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
