#!/usr/bin/python3
# Writes the golden-vector fixtures that tests/optim/test_optim_golden.cpp checks lbt's fused
# optimizers against: initial parameters, per-step gradients and the parameters after STEPS steps,
# computed in float64. SGD/Adam/AdamW are torch.optim itself; LARS (You et al. 2017,
# arXiv:1708.03888, Alg. 1, and the timm / MoCo-v3 "lr after momentum" form), LARC (NVIDIA Apex
# apex/parallel/LARC.py, around a torch.optim base) and LAMB (You et al. 2019, arXiv:1904.00962,
# Alg. 2) are written out below from the papers, not from lbt's code.
#
# With Debian's torch (scripts/setup.sh installs python3-torch):
#   /usr/bin/python3 tests/optim/golden/make_golden.py [OUT_DIR]   (default: this folder)
# The CTest test optim_golden_from_torch writes them into a scratch folder and compares them with
# the committed ones byte for byte, so a golden file that torch would no longer write fails.
# Inputs are float32 values (stored exactly), so lbt reads the same numbers the script used.
import json
import math
import os
import sys

import numpy as np
import torch

torch.set_default_dtype(torch.float64)
STEPS = 20
HERE = os.path.dirname(os.path.abspath(__file__))

# (name, shape, kind, gradient scale, init scale). Biases and norm gains are excluded from weight
# decay and trust ratios, as lbt's default segment table does (core/params.cpp make_segment).
TENSORS = [
    ("fc.weight", (4, 8), "weight", 1e-1, 0.5),
    ("fc.bias", (4,), "bias", 1.0, 0.1),
    ("norm.weight", (4,), "norm", 1e-1, 0.1),  # a LayerNorm gain: 1 + 0.1 u
    ("out.weight", (3, 4), "weight", 1e-3, 0.01),
    ("out.bias", (3,), "bias", 1e-3, 0.01),
]


def f32(x):
    """float64 array of float32-representable values."""
    return np.asarray(x, dtype=np.float32).astype(np.float64)


def make_problem():
    rng = np.random.default_rng(31)
    w0, grads = [], [[] for _ in range(STEPS)]
    for name, shape, kind, g_scale, w_scale in TENSORS:
        n = int(np.prod(shape))
        w = w_scale * rng.uniform(-1, 1, n)
        w0.append(f32(1.0 + w if kind == "norm" else w))
        mean = rng.uniform(-1, 1, n)  # a persistent direction plus per-step noise
        for t in range(STEPS):
            grads[t].append(f32(g_scale * (mean + 0.5 * rng.uniform(-1, 1, n))))
    return w0, grads


W0, GRADS = make_problem()


def decays(kind):
    return kind == "weight"


def constant(lr):
    return [lr] * STEPS


def cosine(lr):  # from lr to lr / 10
    return [lr * (0.1 + 0.45 * (1 + math.cos(math.pi * t / STEPS))) for t in range(STEPS)]


def poly(lr):  # LARS paper, Alg. 1: gamma_t = gamma_0 (1 - t / T)^2, T = STEPS + 1
    return [lr * (1 - t / (STEPS + 1)) ** 2 for t in range(STEPS)]


def run(step_fn, lrs):
    """Runs STEPS steps of step_fn(params, grads, lr, t) on torch float64 tensors and returns the
    final flat parameters, per element max_t |w_t| and sum_t |w_{t+1} - w_t|."""
    params = [torch.tensor(w) for w in W0]
    w_max = np.abs(np.concatenate(W0))
    path = np.zeros_like(w_max)
    for t in range(STEPS):
        before = np.concatenate([p.detach().numpy().copy() for p in params])
        step_fn(params, [torch.tensor(g) for g in GRADS[t]], lrs[t], t)
        after = np.concatenate([p.detach().numpy() for p in params])
        w_max = np.maximum(w_max, np.abs(after))
        path += np.abs(after - before)
    return after, w_max, path


def torch_optimizer(make, **decay_kw):
    """step_fn driving a torch.optim optimizer; weight decay only on the decayed tensors."""
    state = {}

    def step(params, grads, lr, t):
        if "opt" not in state:
            for p in params:
                p.requires_grad_(True)
            decayed = [p for p, tensor in zip(params, TENSORS) if decays(tensor[2])]
            rest = [p for p, tensor in zip(params, TENSORS) if not decays(tensor[2])]
            state["opt"] = make([{"params": decayed, **decay_kw}, {"params": rest, "weight_decay": 0.0}])
        for p, g in zip(params, grads):
            p.grad = g.clone()
        for group in state["opt"].param_groups:
            group["lr"] = lr
        state["opt"].step()

    return step


def lars(before_momentum, exact, momentum=0.9, beta=5e-4, eta=1e-3):
    """LARS, Alg. 1: local_lr = eta |w| / (|g| + beta |w|) ("exact": / |g + beta w|, MoCo v3);
    before_momentum (paper): v = m v + lr local_lr (g + beta w), w -= v;
    after momentum (timm, MoCo v3): v = m v + local_lr (g + beta w), w -= lr v.
    Excluded tensors: no decay, local_lr = 1 (momentum SGD). local_lr = 1 when a norm is 0."""
    velocity = {}

    def step(params, grads, lr, t):
        with torch.no_grad():
            for i, (p, g, tensor) in enumerate(zip(params, grads, TENSORS)):
                b = beta if decays(tensor[2]) else 0.0
                d = g + b * p
                local_lr = 1.0
                if decays(tensor[2]):
                    w_norm = p.norm().item()
                    denom = d.norm().item() if exact else g.norm().item() + b * w_norm
                    if w_norm > 0 and denom > 0:
                        local_lr = eta * w_norm / denom
                v = velocity.get(i, torch.zeros_like(p))
                v = momentum * v + (lr * local_lr if before_momentum else local_lr) * d
                velocity[i] = v
                p -= v if before_momentum else lr * v

    return step


def larc(clip, base_make, weight_decay, trust=0.02, eps=1e-8):
    """Apex LARC: with |w| and |g| nonzero, local_lr = trust |w| / (|g| + wd |w| + eps),
    clip: local_lr = min(local_lr / lr, 1); g = (g + wd w) * local_lr; then the base optimizer's
    step with its weight decay 0. Excluded tensors keep their gradient (no decay, no scaling)."""
    state = {}

    def step(params, grads, lr, t):
        if "opt" not in state:
            for p in params:
                p.requires_grad_(True)
            state["opt"] = base_make(params)
        with torch.no_grad():
            for p, g, tensor in zip(params, grads, TENSORS):
                p.grad = g.clone()
                if not decays(tensor[2]):
                    continue
                w_norm, g_norm = p.norm().item(), g.norm().item()
                if w_norm != 0 and g_norm != 0:
                    local_lr = trust * w_norm / (g_norm + w_norm * weight_decay + eps)
                    if clip:
                        local_lr = min(local_lr / lr, 1.0)
                    p.grad += weight_decay * p
                    p.grad *= local_lr
        for group in state["opt"].param_groups:
            group["lr"] = lr
        state["opt"].step()

    return step


def lamb(weight_decay=0.01, beta1=0.9, beta2=0.999, eps=1e-6, bias_correction=True):
    """LAMB, Alg. 2: m, v as Adam, r = m_hat / (sqrt(v_hat) + eps), u = r + lambda w,
    w -= lr |w| / |u| u (ratio 1 when a norm is 0). Excluded tensors: lambda = 0, ratio 1."""
    moments = {}

    def step(params, grads, lr, t):
        with torch.no_grad():
            for i, (p, g, tensor) in enumerate(zip(params, grads, TENSORS)):
                m, v = moments.get(i, (torch.zeros_like(p), torch.zeros_like(p)))
                m = beta1 * m + (1 - beta1) * g
                v = beta2 * v + (1 - beta2) * g * g
                moments[i] = (m, v)
                bc1 = 1 - beta1 ** (t + 1) if bias_correction else 1.0
                bc2 = 1 - beta2 ** (t + 1) if bias_correction else 1.0
                u = (m / bc1) / (torch.sqrt(v / bc2) + eps)
                ratio = 1.0
                if decays(tensor[2]):
                    u = u + weight_decay * p
                    w_norm, u_norm = p.norm().item(), u.norm().item()
                    if w_norm > 0 and u_norm > 0:
                        ratio = w_norm / u_norm
                p -= lr * ratio * u

    return step


SGD, Adam, AdamW = torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW


def L(cls, **kw):
    """A maker of cls(param_groups, **kw)."""
    return lambda groups: cls(groups, **kw)


# (file, case name, lbt [optimizer] table, reference, step_fn, per-step lr)
CASES = [
    ("sgd", "sgd", "name='sgd'\nmomentum=0.0", "torch.optim.SGD(momentum=0)",
     torch_optimizer(L(cls=SGD, lr=0.1)), constant(0.1)),
    ("sgd", "sgd_weight_decay", "name='sgd'\nmomentum=0.0\nweight_decay=0.01",
     "torch.optim.SGD(momentum=0, weight_decay=0.01)",
     torch_optimizer(L(cls=SGD, lr=0.1), weight_decay=0.01), constant(0.1)),
    ("sgd", "momentum_cosine_lr", "name='momentum'\nmomentum=0.9", "torch.optim.SGD(momentum=0.9)",
     torch_optimizer(L(cls=SGD, lr=0.1, momentum=0.9)), cosine(0.1)),
    ("sgd", "momentum_dampening_weight_decay",
     "name='momentum'\nmomentum=0.9\ndampening=0.1\nweight_decay=0.0005",
     "torch.optim.SGD(momentum=0.9, dampening=0.1, weight_decay=5e-4)",
     torch_optimizer(L(cls=SGD, lr=0.05, momentum=0.9, dampening=0.1), weight_decay=5e-4),
     constant(0.05)),
    ("sgd", "nesterov_weight_decay", "name='nesterov'\nmomentum=0.9\nweight_decay=0.001",
     "torch.optim.SGD(momentum=0.9, nesterov=True, weight_decay=1e-3)",
     torch_optimizer(L(cls=SGD, lr=0.1, momentum=0.9, nesterov=True), weight_decay=1e-3),
     cosine(0.1)),
    ("adam", "adam", "name='adam'", "torch.optim.Adam()",
     torch_optimizer(L(cls=Adam, lr=1e-2)), constant(1e-2)),
    ("adam", "adam_l2", "name='adam'\nweight_decay=0.01", "torch.optim.Adam(weight_decay=0.01)",
     torch_optimizer(L(cls=Adam, lr=1e-2), weight_decay=0.01), constant(1e-2)),
    ("adam", "adam_betas_cosine_lr", "name='adam'\nbeta1=0.8\nbeta2=0.99\neps=1e-6",
     "torch.optim.Adam(betas=(0.8, 0.99), eps=1e-6)",
     torch_optimizer(L(cls=Adam, lr=3e-3, betas=(0.8, 0.99), eps=1e-6)), cosine(3e-3)),
    ("adam", "adamw_default", "name='adamw'", "torch.optim.AdamW() (weight_decay=0.01)",
     torch_optimizer(L(cls=AdamW, lr=1e-2), weight_decay=0.01), constant(1e-2)),
    ("adam", "adamw_cosine_lr", "name='adamw'\nweight_decay=0.1",
     "torch.optim.AdamW(weight_decay=0.1)",
     torch_optimizer(L(cls=AdamW, lr=1e-2), weight_decay=0.1), cosine(1e-2)),
    ("lars", "lars_paper_poly_lr", "name='lars'", "You et al. 2017 Alg. 1 (eta 1e-3, beta 5e-4)",
     lars(True, False), poly(10.0)),
    ("lars", "lars_before_momentum_cosine_lr",
     "name='lars'\n[optimizer.lars]\nlr_placement='before_momentum'",
     "Alg. 1, lr inside the momentum", lars(True, False), cosine(10.0)),
    ("lars", "lars_after_momentum_cosine_lr",
     "name='lars'\n[optimizer.lars]\nlr_placement='after_momentum'",
     "timm Lars: local_lr inside the momentum, w -= lr v", lars(False, False), cosine(10.0)),
    ("lars", "lars_after_momentum_exact_cosine_lr",
     "name='lars'\n[optimizer.lars]\nlr_placement='after_momentum'\ndenominator='exact'",
     "MoCo v3 LARS: eta |w| / |g + beta w|, w -= lr v", lars(False, True), cosine(10.0)),
    ("larc", "larc_clip_sgd", "name='larc'\nweight_decay=0.0005\n[optimizer.larc]\nmode='clip'",
     "Apex LARC(clip) over torch.optim.SGD(momentum=0.9)",
     larc(True, lambda p: SGD(p, lr=0.15, momentum=0.9), 5e-4), cosine(0.15)),
    ("larc", "larc_scale_sgd", "name='larc'\nweight_decay=0.0005\n[optimizer.larc]\nmode='scale'",
     "Apex LARC(scale) over torch.optim.SGD(momentum=0.9)",
     larc(False, lambda p: SGD(p, lr=1.0, momentum=0.9), 5e-4), constant(1.0)),
    ("larc", "larc_clip_adam",
     "name='larc'\nweight_decay=0.01\n[optimizer.larc]\nmode='clip'\nbase='adam'",
     "Apex LARC(clip) over torch.optim.Adam()",
     larc(True, lambda p: Adam(p, lr=0.1), 0.01), constant(0.1)),
    ("larc", "larc_scale_adamw",
     "name='larc'\nweight_decay=0.01\n[optimizer.larc]\nmode='scale'\nbase='adamw'",
     "Apex LARC(scale) over torch.optim.AdamW(weight_decay=0: LARC folds decay in)",
     larc(False, lambda p: AdamW(p, lr=1e-2, weight_decay=0.0), 0.01), cosine(1e-2)),
    ("lamb", "lamb", "name='lamb'", "You et al. 2019 Alg. 2 (bias correction, wd 0.01)",
     lamb(), constant(0.05)),
    ("lamb", "lamb_wd_cosine_lr", "name='lamb'\nweight_decay=0.1", "Alg. 2, wd 0.1",
     lamb(weight_decay=0.1), cosine(0.05)),
    ("lamb", "lamb_no_bias_correction", "name='lamb'\n[optimizer.lamb]\nbias_correction=false",
     "Alg. 2 without bias correction", lamb(bias_correction=False), constant(0.05)),
]


def dumps(fixture):
    """JSON with one line per key, per gradient step and per case field (short diffs)."""
    def value(key, v):
        if key == "grads":
            return "[\n  " + ",\n  ".join(json.dumps(row) for row in v) + "\n ]"
        if key == "cases":
            return "[\n  " + ",\n  ".join(
                "{\n   " + ",\n   ".join(f"{json.dumps(k)}: {json.dumps(x)}" for k, x in c.items())
                + "\n  }" for c in v) + "\n ]"
        return json.dumps(v)
    return "{\n " + ",\n ".join(f"{json.dumps(k)}: {value(k, v)}" for k, v in fixture.items()) + "\n}\n"


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else HERE
    files = {}
    for file, name, config, reference, step_fn, lrs in CASES:
        w_final, w_max, path = run(step_fn, lrs)
        files.setdefault(file, []).append({
            "name": name, "config": config, "reference": reference, "lr": lrs,
            "w_final": w_final.tolist(), "w_max": w_max.tolist(), "path": path.tolist()})
    for file, cases in files.items():
        fixture = {
            "about": "written by tests/optim/golden/make_golden.py (float64; torch " +
                     torch.__version__ + "); inputs are float32 values",
            "steps": STEPS,
            "tensors": [{"name": n, "shape": list(s), "kind": k} for n, s, k, _, _ in TENSORS],
            "w0": np.concatenate(W0).tolist(),
            "grads": [np.concatenate(g).tolist() for g in GRADS],
            "cases": cases,
        }
        with open(os.path.join(out_dir, file + ".json"), "w") as out:
            out.write(dumps(fixture))
        print(file + ".json:", ", ".join(c["name"] for c in cases))


if __name__ == "__main__":
    main()
