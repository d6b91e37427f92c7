#!/usr/bin/env python3
"""Adaptive vs fixed batch sizes to a target (McCandlish et al. 2018, arXiv:1812.06162, App. D).

Runs `lbt train` once with the preset's adaptive batch and once per fixed batch (stop at the
target), then reports steps- and examples-to-target for each, and compares the measured gain of
adapting with the gain predicted from the adaptive run's B_noise trajectory.

The prediction (App. D, eq. D.5, as we derive it from the paper's per-step model): a step with
batch B at noise scale B_noise makes the progress of 1/(1 + B_noise/B) optimal steps, so over a
run S - S_min = sum B_noise/B ds and E - E_min = sum B ds (s: optimal steps). A fixed batch gives
(S/S_min - 1)(E/E_min - 1) = 1; B proportional to sqrt(B_noise) gives
    gamma = <sqrt(B_noise)>^2 / <B_noise>  (averages over s),
the factor by which adapting shrinks that product. The measured counterpart fits S_min, E_min to
the fixed runs ((S/S_min - 1)(E/E_min - 1) = 1, eq. 2.11) and evaluates the product at the
adaptive run. Our rule follows B_simple itself, not sqrt(B_noise): gamma is the bound.

Usage: python3 experiments/adaptive_compare.py [--batches 128,512,2048] [--out DIR]
       [--set key=value ...]  (extra --set for every run, e.g. to shrink the model)
"""
import argparse
import json
import math
import os
import subprocess
import sys


def run(lbt, config, out, sets, prefix=()):
    cmd = list(prefix) + [lbt, "train", "-c", config, "--out", out, "--overwrite", "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)


def noise_trajectory(run_dir, until_step):
    """(step, B_noise EMA, batch) of the estimator the adaptive rule follows, to the target."""
    rows = {}
    with open(os.path.join(run_dir, "noise.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            if "estimator" not in j or j["b_simple_ema"] is None or j["step"] >= until_step:
                continue
            # the rule's choice: per_example where resolved (non-null), else two_batch
            if j["estimator"] == "per_example" or j["step"] not in rows:
                rows[j["step"]] = (j["step"], j["b_simple_ema"], j["B_big"])
    return [rows[k] for k in sorted(rows)]


def predicted_gamma(trajectory):
    """eq. D.5: <sqrt(B_noise)>^2 / <B_noise>, weighted by optimal steps ds = dS/(1 + Bn/B)."""
    w = [1.0 / (1.0 + bn / b) for _, bn, b in trajectory]
    sw = sum(w)
    mean_sqrt = sum(wi * math.sqrt(bn) for wi, (_, bn, _) in zip(w, trajectory)) / sw
    mean_bn = sum(wi * bn for wi, (_, bn, _) in zip(w, trajectory)) / sw
    return mean_sqrt**2 / mean_bn


def fit_pareto(points):
    """S_min, E_min minimising sum log((S/S_min - 1)(E/E_min - 1))^2 (eq. 2.11) on a grid."""
    best = None
    s_hi = min(s for s, _ in points)
    e_hi = min(e for _, e in points)
    for i in range(1, 400):
        smin = s_hi * i / 400
        for k in range(1, 400):
            emin = e_hi * k / 400
            err = sum(math.log((s / smin - 1) * (e / emin - 1)) ** 2 for s, e in points)
            if best is None or err < best[0]:
                best = (err, smin, emin)
    return best[1], best[2]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--lbt", default=os.path.join(here, "..", "build", "cli", "lbt"))
    p.add_argument("--config", default=os.path.join(here, "configs", "fmnist_mlp_adaptive.toml"))
    p.add_argument("--batches", default="128,512,2048")
    p.add_argument("--out", default="runs/adaptive_compare")
    p.add_argument("--set", action="append", default=[], dest="sets")
    p.add_argument("--prefix", default="", help="command before each run, e.g. 'flock LOCK'")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    common = a.sets + ["train.stop_at_target=true"]
    results = []
    adaptive_dir = os.path.join(a.out, "adaptive")
    prefix = a.prefix.split()
    s = run(a.lbt, a.config, adaptive_dir, common, prefix)
    results.append(("adaptive", s))
    for b in [int(x) for x in a.batches.split(",")]:
        fixed = common + ["train.batch_schedule=fixed", f"train.global_batch={b}",
                          "train.micro_batch=0", "noise.enabled=false",
                          f"train.eval_every={max(1, 6400 // b)}"]
        results.append((f"fixed {b}", run(a.lbt, a.config, os.path.join(a.out, f"fixed_{b}"), fixed, prefix)))
    rows = []
    print("\nrun          status          steps_to_target (lo)   examples_to_target")
    for name, s in results:
        print(f"{name:12s} {s['status']:15s} {str(s['steps_to_target']):>8s} "
              f"({str(s['steps_lo']):>6s})   {str(s['examples_to_target']):>12s}")
        rows.append({"run": name, "status": s["status"], "steps_to_target": s["steps_to_target"],
                     "steps_lo": s["steps_lo"], "examples_to_target": s["examples_to_target"]})
    report = {"runs": rows}
    ad = results[0][1]
    if ad["steps_to_target"] is not None:
        traj = noise_trajectory(adaptive_dir, ad["steps_to_target"])
        if traj:
            report["gamma_predicted"] = predicted_gamma(traj)
            report["trajectory"] = traj
    fixed_pts = [(s["steps_to_target"], s["examples_to_target"]) for n, s in results[1:]
                 if s["steps_to_target"] is not None]
    if len(fixed_pts) >= 2 and ad["steps_to_target"] is not None:
        smin, emin = fit_pareto(fixed_pts)
        report.update(S_min=smin, E_min=emin)
        sa, ea = ad["steps_to_target"], ad["examples_to_target"]
        if sa > smin and ea > emin:
            report["gamma_measured"] = (sa / smin - 1) * (ea / emin - 1)
    for k in ("S_min", "E_min", "gamma_predicted", "gamma_measured"):
        if k in report:
            print(f"{k}: {report[k]:.4g}")
    with open(os.path.join(a.out, "compare.json"), "w") as f:
        json.dump(report, f, indent=1)
    plot(a.out, results, report)


def plot(out, results, report):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, (l, r) = plt.subplots(1, 2, figsize=(11, 4))
    if "trajectory" in report:
        t = report["trajectory"]
        l.plot([x[0] for x in t], [x[1] for x in t], label="B_simple (EMA)")
        l.step([x[0] for x in t], [x[2] for x in t], where="post", label="global batch")
        l.set_yscale("log"), l.set_xlabel("step"), l.legend(), l.set_title("adaptive run")
    for name, s in results:
        if s["steps_to_target"] is not None:
            r.scatter(s["steps_to_target"], s["examples_to_target"], label=name)
    r.set_xscale("log"), r.set_yscale("log"), r.set_xlabel("steps to target")
    r.set_ylabel("examples to target"), r.legend()
    g = [f"{k}={report[k]:.3g}" for k in ("gamma_predicted", "gamma_measured") if k in report]
    r.set_title(", ".join(g))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "adaptive_compare.png"), dpi=100)


if __name__ == "__main__":
    sys.exit(main())
