"""PyTorch on the same shapes as `examples/bench.rs`, printed in the same line format.

Run on the GPU machine next to the Rust benchmark:

    python3 bench/torch_bench.py            # strict f32 (TF32 off), then TF32
    python3 bench/torch_bench.py --gemm     # GEMMs only (`--conv`: convolutions only)

Each figure is the median of 3 timings of 10 launches (CUDA events), after a warm-up, as in
bench.rs. GEMM work is GEMM + bias + GELU (tanh form); its backward is the gradient through
GELU, both operand gradients and the bias gradient. Convolutions have no bias or activation.
"""
import sys

import torch

REPS = 10
GEMMS = [  # (M, N, K)
    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 4096, 1024),
    (4096, 3072, 768), (256, 4, 16384), (35, 8457, 2048), (4096, 1024, 1024),
]
CONVS = [  # (batch, in channels, height = width, out channels, kernel, stride, padding)
    (32, 64, 56, 64, 3, 1, 1), (32, 128, 28, 128, 3, 1, 1), (32, 256, 14, 256, 3, 1, 1),
    (32, 512, 7, 512, 3, 1, 1), (32, 64, 56, 128, 3, 2, 1), (32, 3, 224, 64, 7, 2, 3),
    (32, 256, 56, 64, 1, 1, 0), (32, 1024, 14, 256, 1, 1, 0),
]


def timed(fn):
    """Seconds per call: the median of 3 timings of REPS calls."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(REPS):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / REPS / 1e3)
    return sorted(times)[1]


def gelu(x):
    return torch.nn.functional.gelu(x, approximate="tanh")


def bench_gemm(tag, m, n, k):
    a = torch.randn(m, k, device="cuda")
    b = torch.randn(k, n, device="cuda")
    bias = torch.randn(n, device="cuda")
    grad_y = torch.randn(m, n, device="cuda")
    pre = torch.addmm(bias, a, b)

    def forward():
        p = torch.addmm(bias, a, b)
        return gelu(p)

    def backward():
        t = torch.tanh(0.7978845608 * (pre + 0.044715 * pre ** 3))
        d = 0.5 * (1 + t) + 0.5 * pre * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * pre * pre)
        grad_pre = grad_y * d
        return grad_pre @ b.T, a.T @ grad_pre, grad_pre.sum(0)

    f, bw = timed(forward), timed(backward)
    flop = 2.0 * m * n * k
    print(f"torch[{tag}] gemm M={m} K={k} N={n}: forward {f * 1e3:.3f} ms {flop / f / 1e12:.2f} TFLOP/s"
          f" | backward {bw * 1e3:.3f} ms {2 * flop / bw / 1e12:.2f} TFLOP/s"
          f" | forward+backward {3 * flop / (f + bw) / 1e12:.2f} TFLOP/s (6MNK)")


def bench_conv(tag, n, ci, hw, co, k, s, p):
    x = torch.randn(n, ci, hw, hw, device="cuda")
    w = torch.randn(co, ci, k, k, device="cuda")
    y = torch.nn.functional.conv2d(x, w, stride=s, padding=p)
    grad_y = torch.randn_like(y)
    f = timed(lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=p))
    d = timed(lambda: torch.nn.grad.conv2d_input(x.shape, w, grad_y, stride=s, padding=p))
    g = timed(lambda: torch.nn.grad.conv2d_weight(x, w.shape, grad_y, stride=s, padding=p))
    flop = 2.0 * n * co * y.shape[2] * y.shape[3] * ci * k * k
    print(f"torch[{tag}] conv N={n} Ci={ci} H={hw} W={hw} Co={co} k={k} s={s} p={p}:"
          f" forward {f * 1e3:.3f} ms {flop / f / 1e12:.2f} TFLOP/s"
          f" | dgrad {d * 1e3:.3f} ms {flop / d / 1e12:.2f} TFLOP/s"
          f" | wgrad {g * 1e3:.3f} ms {flop / g / 1e12:.2f} TFLOP/s")


def main():
    only_gemm, only_conv = "--gemm" in sys.argv, "--conv" in sys.argv
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
    # Warm the GPU up so that the first shape is not timed at idle clocks.
    warm = torch.randn(4096, 4096, device="cuda")
    for _ in range(50):
        warm = warm @ warm / 64
    torch.cuda.synchronize()
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        tag = "tf32" if tf32 else "f32"
        if not only_conv:
            for m, n, k in GEMMS:
                bench_gemm(tag, m, n, k)
        if not only_gemm:
            for shape in CONVS:
                bench_conv(tag, *shape)


if __name__ == "__main__":
    main()
