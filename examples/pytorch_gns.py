#!/usr/bin/env python3
"""The gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018,
arXiv:1812.06162) measured inside a plain single-process PyTorch loop with lbt.GradientNoise:
each step's two micro-batch gradients are the small batches (b = micro) and their mean, the
step's gradient, is the big batch (B = 2 micro) -- App. A.1's estimator at no extra compute.

    PYTHONPATH=build/python /usr/bin/python3 examples/pytorch_gns.py [--steps 300]
"""
import argparse
import gzip
import sys
from pathlib import Path

import numpy as np
import torch

try:
    import lbt
except ImportError:  # run from a source tree built into build/
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "build/python"))
    import lbt


def load_fashion_mnist(root):
    """The training split's IDX files (Debian's dataset-fashion-mnist), standardised."""
    with gzip.open(Path(root) / "train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open(Path(root) / "train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy((x - x.mean()) / x.std()), torch.from_numpy(y)


def flat_grad(model):
    return torch.cat([p.grad.reshape(-1) for p in model.parameters()])


def set_flat_grad(model, g):
    offset = 0
    for p in model.parameters():
        p.grad.copy_(g[offset:offset + p.numel()].view_as(p))
        offset += p.numel()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--micro-batch", type=int, default=64)
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    torch.manual_seed(0)
    x, y = load_fashion_mnist(args.data)
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    b = args.micro_batch

    # --- the ~20 lines of docs/python.md, "B_simple inside a PyTorch loop" ---
    gns = lbt.GradientNoise(b_small=b, b_big=2 * b)  # EMA over steps; estimate="now" for a window
    for step in range(args.steps):
        batch = torch.randint(len(x), (2 * b,))
        micro_grads = []
        for part in batch.split(b):  # two micro-batches: the small batches
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x[part]), y[part])
            loss.backward()
            micro_grads.append(flat_grad(model))
        g_big = (micro_grads[0] + micro_grads[1]) / 2  # the step's gradient: the big batch
        g_small_sq = sum(float(g @ g) for g in micro_grads) / 2
        gns.update(g_small_sq, float(g_big @ g_big))
        set_flat_grad(model, g_big)
        opt.step()
        if step % 50 == 0 or step == args.steps - 1:
            lo, hi = gns.b_simple_ci95()
            b_simple = gns.b_simple()
            print(f"step {step:4d}  loss {loss.item():.3f}  B_simple "
                  f"{'unresolved' if b_simple is None else f'{b_simple:.0f}'}  95% "
                  f"[{'none' if lo is None else f'{lo:.0f}'}, "
                  f"{'open' if hi is None else f'{hi:.0f}'}]")  # None: no bound, not infinity


if __name__ == "__main__":
    main()
