#!/usr/bin/python3
"""PyTorch reference for bench_cnn_step: the same image-model training step (forward, softmax
cross-entropy, backward, SGD momentum update) on a fixed in-memory batch, same thread count.
Models mirror lbt's model_zoo.cpp: cnn:simple (Shallue et al. 2018) and resnet:DEPTH (He et
al. 2016 CIFAR ResNets with 1x1 projection shortcuts). Prints CSV lines in bench_cnn_step's
format. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import time

import torch
from torch import nn


def simple_cnn(c, h, w, classes=10):
    return nn.Sequential(
        nn.Conv2d(c, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2, 2),
        nn.Flatten(), nn.Linear(64 * (h // 4) * (w // 4), 1024), nn.ReLU(), nn.Linear(1024, classes))


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


def resnet(depth, c, classes=10):
    n = (depth - 2) // 6
    layers = [nn.Conv2d(c, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for stage in range(3):
        cout = 16 << stage
        for b in range(n):
            layers.append(BasicBlock(cin, cout, 2 if stage > 0 and b == 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def macs(model, x):
    """Multiply-adds of conv and linear layers for one example (as lbt's macs_per_example)."""
    total = 0

    def hook(m, inp, out):
        nonlocal total
        if isinstance(m, nn.Conv2d):
            total += out[0].numel() * m.in_channels * m.kernel_size[0] * m.kernel_size[1]
        elif isinstance(m, nn.Linear):
            total += m.in_features * m.out_features
    hs = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    with torch.no_grad():
        model(x[:1])
    for h in hs:
        h.remove()
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--spec", default="cnn:simple")
    p.add_argument("--shape", default="1,28,28")
    p.add_argument("--batches", default="32,128,512")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--label", default="torch")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    c, h, w = (int(s) for s in a.shape.split(","))
    family, body = a.spec.split(":")
    for batch in [int(b) for b in a.batches.split(",")]:
        model = simple_cnn(c, h, w) if family == "cnn" else resnet(int(body), c)
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
        loss_fn = nn.CrossEntropyLoss()
        x = torch.randn(batch, c, h, w)
        y = torch.randint(0, 10, (batch,))

        def step():
            opt.zero_grad(set_to_none=False)
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()

        end = time.perf_counter() + 0.5
        n = 0
        while time.perf_counter() < end or n < 2:
            step()
            n += 1
        rates = []
        end = time.perf_counter() + a.seconds
        while time.perf_counter() < end or len(rates) < 5:
            t0 = time.perf_counter()
            n = 0
            while time.perf_counter() - t0 < 0.3:
                step()
                n += 1
            rates.append(n * batch / (time.perf_counter() - t0))
        rates.sort()
        median = rates[len(rates) // 2]
        print(f"{a.label},{a.spec},{batch},{a.threads},{median:.0f},{rates[0]:.0f},{rates[-1]:.0f},"
              f"{6 * median * macs(model, x) / 1e9:.1f}", flush=True)


if __name__ == "__main__":
    main()
