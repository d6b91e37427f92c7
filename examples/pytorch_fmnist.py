#!/usr/bin/env python3
"""A PyTorch training script that speaks lbt's `--exec` protocol: the MLP 784-256-256-10 of
experiments/configs/fmnist_mlp_sweep.toml (He init, momentum-0.9 SGD at the LR lbt gives it,
Goyal warmup from the B = 128 LR over half an epoch) on Debian's Fashion-MNIST, evaluating on
the last 10,000 training images (lbt's validation split is a seeded random one, so the two are
comparable, not identical). It appends {"step", "val_loss", "val_accuracy"} to
RUN_DIR/eval.jsonl on the same geometric schedule as lbt (at least EVAL_EVERY steps apart, 1.5x
further each time), stops at the target, and writes the two-batch gradient norms (the two
halves of each batch and their mean) to RUN_DIR/noise.jsonl every 10 steps.

  lbt sweep --config experiments/configs/fmnist_mlp_sweep.toml --jobs 2 --out runs/torch \\
    --exec '/usr/bin/python3 examples/pytorch_fmnist.py {batch_size} {lr} {seed} {run_dir} \\
            {max_steps} {eval_every} {optimizer.lr}'
"""
import gzip
import json
import math
import os
import sys

import numpy as np
import torch

DATA = os.environ.get("LBT_FMNIST", "/usr/share/datasets/fashion-mnist")
TARGET = 0.85  # val_accuracy, as the sweep config's train.target


def idx(name):
    path = os.path.join(DATA, name)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(stem):
    for suffix in ("", ".gz"):
        if os.path.exists(os.path.join(DATA, stem + suffix)):
            return stem + suffix
    raise SystemExit(f"pytorch_fmnist: no {stem}[.gz] in {DATA} (set LBT_FMNIST)")


def main(argv):
    batch, lr, seed, run_dir, max_steps, eval_every, base_lr = (
        int(argv[1]), float(argv[2]), int(argv[3]), argv[4], int(argv[5]), int(argv[6]),
        float(argv[7]))
    torch.manual_seed(seed)
    torch.set_num_threads(max(1, int(os.environ.get("LBT_THREADS", "1"))))
    x = torch.tensor(idx(find("train-images-idx3-ubyte")).reshape(-1, 784), dtype=torch.float32) / 255
    y = torch.tensor(idx(find("train-labels-idx1-ubyte")).astype(np.int64))
    x_train, y_train, x_val, y_val = x[:50000], y[:50000], x[50000:], y[50000:]
    model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    for m in model:
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            torch.nn.init.zeros_(m.bias)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    warmup = math.ceil(0.5 * 50000 / batch)  # half an epoch, from base_lr up to lr (flat if lr <= base_lr)
    gen = torch.Generator().manual_seed(seed)
    perm, pos, next_eval = torch.randperm(50000, generator=gen), 0, eval_every
    ev = open(os.path.join(run_dir, "eval.jsonl"), "a")
    nz = open(os.path.join(run_dir, "noise.jsonl"), "a")
    for step in range(1, max_steps + 1):
        if pos + batch > 50000:
            perm, pos = torch.randperm(50000, generator=gen), 0
        idx_b = perm[pos:pos + batch]
        pos += batch
        start = min(1.0, base_lr / lr)
        frac = min(1.0, (step - 1) / warmup) if warmup > 0 else 1.0
        for g in opt.param_groups:
            g["lr"] = lr * (start + (1 - start) * frac)
        loss_fn = torch.nn.functional.cross_entropy
        if step % 10 == 0 and batch >= 2:  # two halves: the small batch; their mean: the big one
            norms, grads = [], []
            for half in (idx_b[: batch // 2], idx_b[batch // 2:]):
                opt.zero_grad()
                loss_fn(model(x_train[half]), y_train[half]).backward()
                g = torch.cat([p.grad.flatten() for p in model.parameters()])
                grads.append(g.clone())
                norms.append(float(g.dot(g)))
            big = (grads[0] + grads[1]) / 2
            nz.write(json.dumps({"step": step, "b_small": batch // 2, "b_big": batch,
                                 "g_small_sq": sum(norms) / 2, "g_big_sq": float(big.dot(big))}) + "\n")
        opt.zero_grad()
        loss = loss_fn(model(x_train[idx_b]), y_train[idx_b])
        loss.backward()
        opt.step()
        if step == next_eval or step == max_steps or not math.isfinite(loss.item()):
            next_eval = step + max(eval_every, math.ceil(0.5 * step))
            with torch.no_grad():
                out = model(x_val)
                val_loss = float(loss_fn(out, y_val))
                acc = float((out.argmax(1) == y_val).float().mean())
            ev.write(json.dumps({"step": step, "val_loss": val_loss if math.isfinite(val_loss) else "nan",
                                 "val_accuracy": acc}) + "\n")
            ev.flush()
            if not math.isfinite(val_loss) or acc >= TARGET:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
