"""PyTorch's `scaled_dot_product_attention` on the work of `nn/examples/attention_bench.rs`, in
its table format: (batch x heads, sequence, head dim) = (32, 1024, 64), (8, 4096, 64),
(16, 2048, 128), causal and not, forward and backward; in f32 (the backend PyTorch picks:
memory-efficient attention, TF32 off) and in f16 with the flash backend. FLOPs as
FlashAttention counts them: forward `4 * BH * N^2 * D`, half when causal; backward 2.5 times.

    python3 bench/attention_bench.py

Each figure is the median of 5 timings of 20 launches (CUDA events) after at least 1 s of
warm-up (`cuda_timing.py`, staged beside this file).
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from cuda_timing import time_ms

SHAPES = [(32, 1024, 64), (8, 4096, 64), (16, 2048, 128)]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__})")
    print("| shape | mask | pass | who | ms | TFLOP/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for bh, n, d in SHAPES:
        for causal in (False, True):
            flops = 4 * bh * n * n * d / (2 if causal else 1)
            name = "causal" if causal else "none"
            for dtype, who, backends in (
                (torch.float32, "PyTorch SDPA f32", None),
                (torch.float16, "PyTorch SDPA f16 (flash)", [SDPBackend.FLASH_ATTENTION]),
            ):
                q, k, v = (torch.randn(bh, 1, n, d, device="cuda", dtype=dtype, requires_grad=True)
                           for _ in range(3))
                grad = torch.randn(bh, 1, n, d, device="cuda", dtype=dtype)

                def forward():
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                def run(fn):
                    if backends is None:
                        return fn()
                    with sdpa_kernel(backends):
                        return fn()

                with torch.no_grad():
                    fwd = time_ms(lambda: run(forward))
                out = run(forward)
                # The backward alone: one graph kept, its gradient taken again each launch.
                bwd = time_ms(lambda: torch.autograd.grad(out, (q, k, v), grad, retain_graph=True))
                for pass_, ms, f in (("forward", fwd, flops), ("backward", bwd, 2.5 * flops)):
                    print(f"| {bh}x{n}x{d} | {name} | {pass_} | {who} | {ms:.3f} | {f / ms / 1e9:.2f} |")


if __name__ == "__main__":
    main()
