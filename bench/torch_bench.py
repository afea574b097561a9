"""PyTorch on the same shapes as `nn/examples/bench.rs`, printed in the same line format.

Run on the GPU machine next to the Rust benchmark:

    python3 bench/torch_bench.py              # strict f32 (TF32 off), then TF32
    python3 bench/torch_bench.py --gemm       # GEMMs only (`--conv`: convolutions only)
    python3 bench/torch_bench.py --out DIR    # also DIR/torch_f32.csv and DIR/torch_tf32.csv
    python3 bench/torch_bench.py --fastest OUT DIR...  # OUT/torch_*.csv: each row's fastest

cuDNN's choice of algorithm varies between processes (on an H100 one process ran the TF32
input gradient of 256@14 in 0.055 ms, another in 0.099), so BENCHMARKS.md compares against
the fastest of several processes, each row on its own (`--fastest`).

Each figure is the median of 3 timings of 10 launches (CUDA events), after a warm-up, as in
bench.rs. GEMM work is GEMM + bias + GELU (tanh form); its backward is the gradient through
GELU, both operand gradients and the bias gradient. Convolutions have no bias or activation;
asymmetric padding is applied with `F.pad` outside the timed region, so the convolution itself
is what is timed. The CSV columns are `work,pass,ms,tflops`, with the same `work` labels as
bench.rs, which `cargo xtask bench-report` joins on.
"""
import os
import sys

if "--fastest" not in sys.argv:  # merging runs needs no PyTorch
    import torch
    import torch.nn.functional as F

REPS = 10
GEMMS = [  # (M, N, K)
    (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (8192, 4096, 1024),
    (4096, 3072, 768), (256, 4, 16384), (35, 8457, 2048), (4096, 1024, 1024),
    (65536, 64, 64),
]
# (batch, in channels, height = width, out channels, kernel, stride,
#  padding (top, bottom, left, right), dilation): as in bench.rs.
CONVS = [
    (32, 64, 56, 64, 3, 1, (1, 1, 1, 1), 1), (32, 128, 28, 128, 3, 1, (1, 1, 1, 1), 1),
    (32, 256, 14, 256, 3, 1, (1, 1, 1, 1), 1), (32, 512, 7, 512, 3, 1, (1, 1, 1, 1), 1),
    (32, 64, 56, 128, 3, 2, (1, 1, 1, 1), 1), (32, 3, 224, 64, 7, 2, (3, 3, 3, 3), 1),
    (32, 256, 56, 64, 1, 1, (0, 0, 0, 0), 1), (32, 1024, 14, 256, 1, 1, (0, 0, 0, 0), 1),
    # Other shapes: odd channel counts, 5x5, dilation, asymmetric padding, a batch of one.
    (32, 67, 28, 131, 3, 1, (1, 1, 1, 1), 1), (32, 64, 28, 64, 5, 1, (2, 2, 2, 2), 1),
    (32, 128, 28, 128, 3, 1, (2, 2, 2, 2), 2), (32, 64, 28, 64, 4, 1, (1, 2, 1, 2), 1),
    (1, 256, 14, 256, 3, 1, (1, 1, 1, 1), 1),
]


def conv_label(n, ci, hw, co, k, s, pad, d):
    """The `work` label bench.rs gives the same convolution."""
    top, bottom, left, right = pad
    padding = f"p{top}" if len(set(pad)) == 1 else f"pad t{top} b{bottom} l{left} r{right}"
    dilation = f" d{d}" if d != 1 else ""
    return f"conv N={n} Ci={ci} {hw}x{hw} Co={co} k{k}x{k} s{s} {padding}{dilation}"


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
    return F.gelu(x, approximate="tanh")


def bench_gemm(tag, rows, m, n, k):
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
    work = f"gemm M={m} N={n} K={k}"
    rows += [(work, "forward", f, flop / f), (work, "backward", bw, 2 * flop / bw),
             (work, "forward+backward", f + bw, 3 * flop / (f + bw))]
    print(f"torch[{tag}] gemm M={m} K={k} N={n}: forward {f * 1e3:.3f} ms {flop / f / 1e12:.2f} TFLOP/s"
          f" | backward {bw * 1e3:.3f} ms {2 * flop / bw / 1e12:.2f} TFLOP/s"
          f" | forward+backward {3 * flop / (f + bw) / 1e12:.2f} TFLOP/s (6MNK)")


def bench_conv(tag, rows, n, ci, hw, co, k, s, pad, d):
    top, bottom, left, right = pad
    x = torch.randn(n, ci, hw, hw, device="cuda")
    # The padded input, so that any padding is a convolution with none.
    xp = F.pad(x, (left, right, top, bottom))
    w = torch.randn(co, ci, k, k, device="cuda")
    y = F.conv2d(xp, w, stride=s, dilation=d)
    grad_y = torch.randn_like(y)
    f = timed(lambda: F.conv2d(xp, w, stride=s, dilation=d))
    dg = timed(lambda: torch.nn.grad.conv2d_input(xp.shape, w, grad_y, stride=s, dilation=d))
    g = timed(lambda: torch.nn.grad.conv2d_weight(xp, w.shape, grad_y, stride=s, dilation=d))
    flop = 2.0 * n * co * y.shape[2] * y.shape[3] * ci * k * k
    work = conv_label(n, ci, hw, co, k, s, pad, d)
    rows += [(work, "forward", f, flop / f), (work, "dgrad", dg, flop / dg),
             (work, "wgrad", g, flop / g)]
    print(f"torch[{tag}] {work}:"
          f" forward {f * 1e3:.3f} ms {flop / f / 1e12:.2f} TFLOP/s"
          f" | dgrad {dg * 1e3:.3f} ms {flop / dg / 1e12:.2f} TFLOP/s"
          f" | wgrad {g * 1e3:.3f} ms {flop / g / 1e12:.2f} TFLOP/s")


def write_csv(path, note, rows):
    with open(path, "w") as out:
        out.write(f"# {note}\nwork,pass,ms,tflops\n")
        for work, pass_, seconds, flops in rows:
            out.write(f"{work},{pass_},{seconds * 1e3:.6f},{flops / 1e12:.4f}\n")


def fastest(out, dirs):
    """Writes `out/torch_{f32,tf32}.csv` with each row's fastest time among `dirs`'."""
    for tag in ("f32", "tf32"):
        note, flop, best = None, {}, {}
        for d in dirs:
            with open(os.path.join(d, f"torch_{tag}.csv")) as f:
                lines = f.read().splitlines()
            note = note or lines[0].lstrip("# ")
            for line in lines[2:]:
                work, pass_, ms, tflops = line.rsplit(",", 3)
                key, seconds = (work, pass_), float(ms) / 1e3
                flop.setdefault(key, float(tflops) * 1e12 * seconds)
                best[key] = min(best.get(key, seconds), seconds)
        rows = [(work, pass_, s, flop[(work, pass_)] / s) for (work, pass_), s in best.items()]
        note = f"{note}, fastest of {len(dirs)} processes"
        write_csv(os.path.join(out, f"torch_{tag}.csv"), note, rows)


def main():
    if "--fastest" in sys.argv:
        at = sys.argv.index("--fastest")
        out, dirs = sys.argv[at + 1:at + 2], sys.argv[at + 2:]
        if not out or not dirs:
            sys.exit("--fastest takes the folder to write, then the run folders to merge")
        out = out[0]
        os.makedirs(out, exist_ok=True)
        fastest(out, dirs)
        return
    only_gemm, only_conv = "--gemm" in sys.argv, "--conv" in sys.argv
    out = sys.argv[sys.argv.index("--out") + 1] if "--out" in sys.argv else None
    note = (f"PyTorch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
            f"CUDA {torch.version.cuda}, on {torch.cuda.get_device_name()}")
    print(note)
    # Warm the GPU up so that the first shape is not timed at idle clocks.
    warm = torch.randn(4096, 4096, device="cuda")
    for _ in range(50):
        warm = warm @ warm / 64
    torch.cuda.synchronize()
    # cuDNN times its algorithms at each shape's first call and keeps the fastest, as a
    # convolutional network tuned for speed runs it (its heuristics alone once picked a TF32
    # forward of 128@28 slower than the f32 one: 0.167 against 0.143 ms, H100, 2026-11-27).
    torch.backends.cudnn.benchmark = True
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        tag = "tf32" if tf32 else "f32"
        rows = []
        if not only_conv:
            for m, n, k in GEMMS:
                bench_gemm(tag, rows, m, n, k)
        if not only_gemm:
            for shape in CONVS:
                bench_conv(tag, rows, *shape)
        if out:
            os.makedirs(out, exist_ok=True)
            write_csv(os.path.join(out, f"torch_{tag}.csv"), f"{note}, {tag}", rows)


if __name__ == "__main__":
    main()
