"""The model of `nn/examples/gpt` in PyTorch, at the same sizes, with the same optimizer, on
the same text and split, so that one device command compares tokens per second, memory and
the held-out loss: eager and `torch.compile`, in f32 (TF32 off, as tessera's strict f32) and
with autocast to f16.

    python3 bench/gpt.py [--large] [--steps N] [--modes eager,compile,eager-f16,compile-f16]

Run from the repository root, or with `--text PATH` naming `shakespeare.txt`. Prints one table
row a mode: the mean time of a training step after 3 warm-up steps (wall clock over
synchronized steps), tokens a second, the peak memory, and the held-out loss in bits a
character after the steps (the same held-out windows as the example's).

What matches tessera's model: token and position embeddings (uniform, standard deviation
0.02); blocks of LayerNorm (eps 1e-5), a fused query-key-value `Linear`, causal
`scaled_dot_product_attention`, an output `Linear`, a residual add, LayerNorm, `Linear` to 4x
with GELU (tanh), `Linear` back, a residual add; a final LayerNorm and a `Linear` to the
vocabulary; `Linear`s as PyTorch starts them; AdamW (betas 0.9, 0.99, eps 1e-8, decay 0.1 on
every parameter), gradients clipped to a global norm of 1; the training windows, in the same
order (`Draws`, the example's SplitMix64 from the seed 1). What does not: the parameters'
starting values (each side draws its own), so the curves match within noise, not exactly.
After the table, each mode's training loss at the steps the example reports it.
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

MASK = (1 << 64) - 1


class Draws:
    """SplitMix64, as `Draws` in nn/examples/gpt/text.rs: where the training windows start."""

    def __init__(self, seed):
        self.state = seed

    def below(self, n):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return (z ^ (z >> 31)) % n


SMALL = dict(context=32, dim=64, heads=4, layers=2, batch=16, steps=300, lr=3e-3)
LARGE = dict(context=256, dim=384, heads=6, layers=6, batch=64, steps=500, lr=1e-3)
EVAL_WINDOWS = 256


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.fc, self.out = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab, context, dim, heads, layers):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(context, dim)
        bound = 0.02 * math.sqrt(3)
        for table in (self.tokens, self.positions):
            nn.init.uniform_(table.weight, -bound, bound)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(dim), nn.Linear(dim, vocab)

    def forward(self, ids, targets):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1], device=ids.device))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--large", action="store_true")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--modes", default="eager,compile,eager-f16,compile-f16")
    parser.add_argument("--text", default="nn/examples/gpt/shakespeare.txt")
    args = parser.parse_args()
    size = LARGE if args.large else SMALL
    steps = args.steps if args.steps is not None else size["steps"]
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    text = open(args.text).read()
    chars = sorted(set(text))
    ids = torch.tensor(list(text.encode()), dtype=torch.long)
    lookup = torch.zeros(256, dtype=torch.long)
    lookup[torch.tensor([ord(c) for c in chars])] = torch.arange(len(chars))
    ids = lookup[ids].cuda()
    held_out = len(ids) - len(ids) // 10
    train, test = ids[:held_out], ids[held_out:]
    n, b = size["context"], size["batch"]
    windows = min(EVAL_WINDOWS, (len(test) - 1) // n)
    eval_x = torch.stack([test[i * n:(i + 1) * n] for i in range(windows)])
    eval_y = torch.stack([test[i * n + 1:(i + 1) * n + 1] for i in range(windows)])

    print(f"{torch.cuda.get_device_name()} (PyTorch {torch.__version__}); "
          f"{'--large' if args.large else 'default'} size, {steps} steps")
    print("| mode | ms a step | tokens/s | peak MiB | held-out bits/char |")
    print("| --- | --- | --- | --- | --- |")
    curves = []
    for mode in args.modes.split(","):
        torch.manual_seed(1)
        model = Gpt(len(chars), n, size["dim"], size["heads"], size["layers"]).cuda()
        optimizer = torch.optim.AdamW(model.parameters(), lr=size["lr"], betas=(0.9, 0.99),
                                      eps=1e-8, weight_decay=0.1)
        forward = torch.compile(model) if mode.startswith("compile") else model
        autocast = torch.autocast("cuda", dtype=torch.float16, enabled=mode.endswith("f16"))
        scaler = torch.amp.GradScaler(enabled=mode.endswith("f16"))
        # Every step's window starts, drawn before the timing as the example draws them.
        draws = Draws(1)
        all_starts = torch.tensor([[draws.below(len(train) - n) for _ in range(b)]
                                   for _ in range(steps)], device="cuda")
        trained = []

        def step():
            offsets = all_starts[len(trained)][:, None] + torch.arange(n, device="cuda")
            with autocast:
                loss = forward(train[offsets], train[offsets + 1])
            trained.append(loss.detach().float())
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()

        torch.cuda.reset_peak_memory_stats()
        for _ in range(min(3, steps)):
            step()
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(max(steps - 3, 0)):
            step()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - start) * 1e3 / max(steps - 3, 1)
        with torch.no_grad(), autocast:
            losses = [forward(eval_x[i:i + b], eval_y[i:i + b]).float() * len(eval_x[i:i + b])
                      for i in range(0, windows, b)]
        bits = float(sum(losses)) / windows / math.log(2)
        peak = torch.cuda.max_memory_allocated() / 2**20
        print(f"| PyTorch {mode} | {ms:.2f} | {b * n / ms * 1e3:.0f} | {peak:.0f} | {bits:.3f} |")
        every = max(steps // 10, 1)
        shown = [i for i in range(steps) if i % every == 0 or i + 1 == steps]
        curves.append(f"{mode}: " + ", ".join(
            f"{i} {float(trained[i]) / math.log(2):.3f}" for i in shown))
    print("\ntraining loss in bits a character, step by step:")
    for curve in curves:
        print(curve)


if __name__ == "__main__":
    main()
