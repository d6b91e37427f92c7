"""Plots of an `lbt scaling` study: epoch time, throughput and speedup vs workers, with the
ideal (linear) line. Reads only scaling.csv (columns: workers, epoch_time_s, samples_per_s,
speedup, efficiency, cores; medians over repeats). When the CSV has the repeat columns
(samples_per_s_min/max, efficiency_min/max) the points get min-max error bars: throughput
from samples_per_s_min/max, epoch time from the same (examples per epoch is fixed), speedup
as workers x efficiency_min/max (per repeat, speedup = workers x efficiency). CSVs without
them plot as before. A study run with --compare has a `variant` column: one curve per
variant (in the CSV's order, the baseline first), each against its own smallest worker count;
CSVs without the column plot one curve. To be folded into notebooks/lbt_plot.py as its
`scaling` command.

    /usr/bin/python3 notebooks/lbt_plot_scaling.py [scaling] SCALING_CSV OUTDIR
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_scaling(path):
    """The CSV's rows grouped by variant: [(variant, rows sorted by workers)], in the order the
    variants first appear; one group named "" for a CSV without the column."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"error: {path} has no rows")
    groups = {}
    for r in rows:
        groups.setdefault(r.get("variant") or "", []).append(r)
    return [(v, sorted(g, key=lambda r: int(r["workers"]))) for v, g in groups.items()]


def spreads(rows, workers, epoch, throughput):
    """Min-max error bars per panel as matplotlib yerr ([below], [above]), or None each."""
    try:
        sps_lo = [float(r["samples_per_s_min"]) for r in rows]
        sps_hi = [float(r["samples_per_s_max"]) for r in rows]
        eff_lo = [float(r["efficiency_min"]) for r in rows]
        eff_hi = [float(r["efficiency_max"]) for r in rows]
    except (KeyError, TypeError, ValueError):  # a CSV from before --repeats
        return None, None, None
    speedup = [float(r["speedup"]) for r in rows]

    def yerr(mid, lo, hi):
        return [[max(m - a, 0.0) for m, a in zip(mid, lo)],
                [max(b - m, 0.0) for m, b in zip(mid, hi)]]

    examples = [e * t for e, t in zip(epoch, throughput)]  # examples per epoch
    epoch_lo = [x / hi for x, hi in zip(examples, sps_hi)]
    epoch_hi = [x / lo for x, lo in zip(examples, sps_lo)]
    speedup_lo = [w * e for w, e in zip(workers, eff_lo)]
    speedup_hi = [w * e for w, e in zip(workers, eff_hi)]
    return (yerr(epoch, epoch_lo, epoch_hi), yerr(throughput, sps_lo, sps_hi),
            yerr(speedup, speedup_lo, speedup_hi))


def curve(rows):
    """One variant's values and min-max error bars per panel."""
    workers = [int(r["workers"]) for r in rows]
    epoch = [float(r["epoch_time_s"]) for r in rows]
    throughput = [float(r["samples_per_s"]) for r in rows]
    speedup = [float(r["speedup"]) for r in rows]
    epoch_err, throughput_err, speedup_err = spreads(rows, workers, epoch, throughput)
    return workers, {"epoch_time": (epoch, epoch_err), "throughput": (throughput, throughput_err),
                     "speedup": (speedup, speedup_err)}


def plot_scaling(csv_path, outdir):
    groups = read_scaling(csv_path)
    first = groups[0][1]
    cores = int(first[0].get("cores") or 0)
    repeats = int(first[0].get("repeats") or 1)
    curves = [(variant, *curve(rows)) for variant, rows in groups]
    # The ideal line from the first curve (the baseline with --compare).
    workers0, values0 = curves[0][1], curves[0][2]
    w0 = workers0[0]
    ideal = [w / w0 for w in workers0]  # relative to the smallest worker count
    os.makedirs(outdir, exist_ok=True)
    panels = [
        ("epoch_time", "epoch time (s)", [values0["epoch_time"][0][0] / f for f in ideal]),
        ("throughput", "throughput (samples/s)", [values0["throughput"][0][0] * f for f in ideal]),
        ("speedup", f"speedup vs {w0} worker(s)", [w0 * f for f in ideal]),
    ]
    written = []
    for name, ylabel, ideal_values in panels:
        fig, ax = plt.subplots(figsize=(4.5, 3.5))
        all_workers = sorted({w for _, ws, _ in curves for w in ws})
        for variant, workers, values in curves:
            mid, err = values[name]
            spread = f"median [min-max] of {repeats} repeats" if err and repeats > 1 else "measured"
            ax.errorbar(workers, mid, yerr=err, fmt="o-", capsize=3, label=variant or spread)
            if variant:  # several curves: the spread once, as the title
                ax.set_title(spread, fontsize="small")
        ax.plot(workers0, ideal_values, "k--", lw=1, label="ideal")
        if cores and all_workers[-1] > cores:
            ax.axvline(cores, color="gray", lw=0.8, ls=":", label=f"{cores} cores")
        ax.set_xscale("log", base=2)
        ax.set_xticks(all_workers)
        ax.set_xticklabels([str(w) for w in all_workers])
        ax.set_xlabel("workers (MPI processes, 1 thread each)")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small" if len(curves) > 1 else None)
        fig.tight_layout()
        path = os.path.join(outdir, f"scaling_{name}.png")
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def main(argv):
    args = argv[1:]
    if args and args[0] == "scaling":
        args = args[1:]
    if len(args) != 2:
        raise SystemExit(__doc__)
    for path in plot_scaling(args[0], args[1]):
        print(path)


if __name__ == "__main__":
    main(sys.argv)
