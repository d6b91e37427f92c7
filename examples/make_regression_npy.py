"""Writes the linear-regression .npy files experiments/configs/npy_regression.toml reads.

x ~ N(0, I_d) float32 [N, d]; y = x w* + s * eps, eps ~ N(0, 1), float32 [N] (a float labels
file makes lbt treat the data as regression). w* ~ N(0, I_d) and s are printed and saved
(w_star.npy, meta.json) so a trained model can be checked against them. numpy only; run with
Debian's python: /usr/bin/python3 examples/make_regression_npy.py [--out runs/regression-data]
"""
import argparse
import json
import os

import numpy as np


def make_split(rng, n, w_star, noise):
    x = rng.standard_normal((n, w_star.size)).astype(np.float32)
    y = (x.astype(np.float64) @ w_star + noise * rng.standard_normal(n)).astype(np.float32)
    return x, y


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/regression-data", help="output directory")
    parser.add_argument("--examples", type=int, default=8192, help="training examples N")
    parser.add_argument("--test-examples", type=int, default=2048)
    parser.add_argument("--dim", type=int, default=16, help="input dimension d")
    parser.add_argument("--noise", type=float, default=0.5, help="label noise std s")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    w_star = rng.standard_normal(args.dim)
    x_train, y_train = make_split(rng, args.examples, w_star, args.noise)
    x_test, y_test = make_split(rng, args.test_examples, w_star, args.noise)

    os.makedirs(args.out, exist_ok=True)
    for name, a in [("x_train", x_train), ("y_train", y_train), ("x_test", x_test),
                    ("y_test", y_test), ("w_star", w_star.astype(np.float32))]:
        np.save(os.path.join(args.out, name + ".npy"), np.ascontiguousarray(a))
    meta = {"dim": args.dim, "examples": args.examples, "noise": args.noise, "seed": args.seed,
            "w_star": w_star.tolist(),
            # the best achievable R^2 on fresh data: var(x.w*) / (var(x.w*) + s^2)
            "r2_ceiling": float(w_star @ w_star / (w_star @ w_star + args.noise ** 2))}
    with open(os.path.join(args.out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", args.out, "x_train", x_train.shape, "y_train", y_train.shape)
    print("s =", args.noise)
    print("w* =", np.array2string(w_star, precision=4, max_line_width=100))
    print("|w*|^2 = %.4f  best R^2 = %.4f" % (w_star @ w_star, meta["r2_ceiling"]))


if __name__ == "__main__":
    main()
