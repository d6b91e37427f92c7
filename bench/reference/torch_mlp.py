#!/usr/bin/python3
"""PyTorch reference for bench_mlp_step: the same MLP training step (forward, softmax
cross-entropy, backward, SGD momentum update) on a fixed in-memory batch, same thread count.
Prints CSV lines in bench_mlp_step's format. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import time

import torch


def build(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    return torch.nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--spec", default="mlp:784-512-512-10")
    p.add_argument("--batches", default="32,128,512,2048,8192")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=2.0)
    p.add_argument("--label", default="torch")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    sizes = [int(s) for s in a.spec.split(":")[1].split("-")]
    for batch in [int(b) for b in a.batches.split(",")]:
        model = build(sizes)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        x = torch.randn(batch, sizes[0])
        y = torch.randint(0, sizes[-1], (batch,))

        def step():
            opt.zero_grad(set_to_none=False)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            step()
        rates = []
        end = time.perf_counter() + a.seconds
        while time.perf_counter() < end or len(rates) < 5:
            t0 = time.perf_counter()
            n = 0
            while time.perf_counter() - t0 < 0.2:
                step()
                n += 1
            rates.append(n * batch / (time.perf_counter() - t0))
        rates.sort()
        median = rates[len(rates) // 2]
        weights = sum(p.numel() for p in model.parameters())
        print(f"{a.label},{a.spec},{batch},{a.threads},{median:.0f},{rates[0]:.0f},{rates[-1]:.0f},"
              f"{6 * median * weights / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
