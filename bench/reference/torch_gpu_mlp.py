"""PyTorch's MLP training step on a GPU, as bench/gpu_mlp_step.cpp times lbt's: 784-512-512-10,
forward, cross-entropy, backward, SGD momentum 0.9, fp32 (TF32 off), a fixed batch on the device.
--model cnn: Shallue et al.'s simple CNN (lbt's cnn:simple) on 1x28x28 images instead; --model
resnet8: He et al.'s ResNet-8 (lbt's resnet:8: BatchNorm, basic blocks with 1x1 projection
shortcuts, global average pool) on 1x28x28 images.
Eager mode, and with --graph the whole step captured in a CUDA graph (what framework overhead
costs). Prints CSV rows impl,batch,samples_per_s,min,max (median [min-max] over windows); with
--profile instead, torch.profiler's table of the GPU time per kernel over 10 eager steps (what
lbt's kernels are to be compared with: scripts/gpu/check.sh's profile stage).
    python3 torch_gpu_mlp.py [--batches 32,128,...] [--seconds 1] [--graph | --profile]
                             [--model mlp|cnn|resnet8]
"""
import argparse
import statistics
import time

import torch


def step_fn(model, opt, x, y):
    def step():
        opt.zero_grad(set_to_none=False)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return step


class BasicBlock(torch.nn.Module):
    """lbt's BasicBlock (nn/cpu/basic_block.hpp): relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        nn = torch.nn
        self.branch = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                                    nn.BatchNorm2d(cout), nn.ReLU(),
                                    nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, 0, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.branch(x) + self.shortcut(x))


def resnet8(channels):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(channels, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                         nn.ReLU(), BasicBlock(16, 16, 1), BasicBlock(16, 32, 2),
                         BasicBlock(32, 64, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(64, 10))


def rate(step, batch, seconds):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    rates, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(rates) < 5:
        t0, steps = time.perf_counter(), 0
        while time.perf_counter() - t0 < seconds / 10:
            step()
            steps += 1
            if steps % 64 == 0:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
        rates.append(steps * batch / (time.perf_counter() - t0))
    return statistics.median_high(rates), min(rates), max(rates)


def profile(step, batch):
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    print(f"batch {batch}: 10 eager steps, GPU time per kernel")
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=25,
                                      max_name_column_width=70)
    print(table)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batches", default="32,128,512,2048,8192")
    p.add_argument("--seconds", type=float, default=1.0)
    p.add_argument("--graph", action="store_true")
    p.add_argument("--profile", action="store_true")
    p.add_argument("--model", choices=["mlp", "cnn", "resnet8"], default="mlp")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    print("impl,batch,samples_per_s,min,max", flush=True)
    for batch in (int(b) for b in a.batches.split(",")):
        torch.manual_seed(1)
        nn = torch.nn
        if a.model == "cnn":
            model = nn.Sequential(nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                                  nn.Flatten(), nn.Linear(3136, 1024), nn.ReLU(),
                                  nn.Linear(1024, 10)).to(dev)
            x = torch.rand(batch, 1, 28, 28, device=dev)
        elif a.model == "resnet8":
            model = resnet8(1).to(dev)
            x = torch.rand(batch, 1, 28, 28, device=dev)
        else:
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                                  nn.Linear(512, 10)).to(dev)
            x = torch.rand(batch, 784, device=dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        y = torch.arange(batch, device=dev) % 10
        step = step_fn(model, opt, x, y)
        impl = "torch_eager"
        if a.profile:
            profile(step, batch)
            continue
        if a.graph:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    step()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                step()
            step, impl = graph.replay, "torch_graph"
        med, lo, hi = rate(step, batch, a.seconds)
        print(f"{impl},{batch},{med:.0f},{lo:.0f},{hi:.0f}", flush=True)


if __name__ == "__main__":
    main()
