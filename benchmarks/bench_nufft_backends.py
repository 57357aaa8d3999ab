"""The cost table behind the NUFFT's `backend="auto"`, and the cost model fitted to it.

    python benchmarks/bench_nufft_backends.py                # the table (minutes)
    python benchmarks/bench_nufft_backends.py --quick        # three small cases
    python benchmarks/bench_nufft_backends.py --json out.json  # the table, stored
    python benchmarks/bench_nufft_backends.py --fit a.json b.json  # fit stored tables

Cases: complex64 NUFFT operators at their defaults (oversamp 1.25, width 4), points
uniform at random in $[-N/2, N/2)$ per axis, on a ladder of grids (2-D 64² to 512², 3-D
32³ to 128³) and point densities (points per image pixel). Each case times the forward and
the adjoint of `jl.NUFFT(..., backend=b)` for `b` = `"jax"` and `"finufft"` (jax-finufft
asked for the error the JAX path promises, as `"auto"` would ask it), in turns on the same
fresh inputs (`harness.time_turns`), under `jax.jit`. The cost of a plan is the forward's
median plus the adjoint's (a solver applies both).

The model (`jaxlinops.functional._backend_cost`), per platform and backend:
$t = a + b \\cdot P L^D / 10^6 + c \\cdot G \\log_2 G / 10^6 + d \\cdot G_{big} / 10^6$ ms, with
$P$ the points, $L^D$ the kernel window ($L = \\lceil w \\rceil$), $G$ the padded grid's cells,
$G_{big}$ the same when three padded grids exceed 32 MiB (else 0); fitted by non-negative
least squares on the relative error (each case's row divided by its time). The script prints the
table, the fit (coefficients; per case the measured and predicted ratio finufft / jax and
the backend each picks, `_backend_cost.MARGIN` applied to both) and the coefficients as
the Python literal the library holds.
Without jax-finufft it times the JAX path alone and fits nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops  # noqa: F401
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from harness import Budget, jax_impl, machine_info, time_turns  # noqa: E402

import jaxlinops as jl  # noqa: E402
from jaxlinops.functional import _backend_cost  # noqa: E402
from jaxlinops.functional._finufft import finufft_available  # noqa: E402

# (grid, points per pixel)
CASES = [((n, n), rho) for n in (64, 128, 256, 512) for rho in (0.25, 1.0, 4.0)] + [
    ((n,) * 3, rho) for n in (32, 48, 64, 96, 128) for rho in (0.125, 0.5)
]
QUICK_CASES = [((64, 64), 1.0), ((32,) * 3, 0.5), ((48,) * 3, 0.125)]
BUDGET = Budget(warmup=2, min_runs=3)
QUICK = Budget(warmup=1, min_runs=3)


def time_case(grid, rho, backends, budget, rng) -> dict:
    """Forward and adjoint medians (ms) per backend, timed in turns."""
    points = max(1, round(rho * math.prod(grid)))
    locs = rng.uniform(-np.asarray(grid) / 2, np.asarray(grid) / 2, (points, len(grid)))
    ops = {b: jl.NUFFT(locs.astype(np.float32), grid, "K", backend=b) for b in backends}
    row = {"grid": list(grid), "points": points, "features": features(ops["jax"].plan)}
    for direction, shape in (("forward", grid), ("adjoint", (points,))):
        impls = [
            jax_impl(lambda A, x: A(x) if direction == "forward" else A.H(x), ops[b])
            for b in backends
        ]
        for b, timing in zip(backends, time_turns(impls, rng, shape, np.complex64, budget)):
            row.setdefault(b, {})[direction] = timing["median_ms"]
    for b in backends:
        row[b]["total"] = row[b]["forward"] + row[b]["adjoint"]
    return row


def features(plan) -> list[float]:
    """The model's features of a complex64 plan (`_backend_cost.features`)."""
    points = math.prod(plan.locs.shape[:-1])
    return list(_backend_cost.features(plan.padded_size, plan.width, points, 8))


def fit(rows: list[dict], backend: str) -> list[float]:
    """Non-negative least squares on the relative error, `(1, *features) @ coef ≈ t` with
    each row divided by `t`: least squares, then the most negative coefficient held at 0
    and the rest fitted again, until none is negative."""
    t = np.array([r[backend]["total"] for r in rows])
    design = np.array([[1.0, *r["features"]] for r in rows]) / t[:, None]
    free = list(range(design.shape[1]))
    while True:
        coef = np.zeros(design.shape[1])
        coef[free] = np.linalg.lstsq(design[:, free], np.ones_like(t), rcond=None)[0]
        if coef.min() >= 0:
            return [float(c) for c in coef]
        free.remove(int(np.argmin(coef)))


def measure(args) -> tuple[list[dict], dict]:
    """Time the cases, printing each row as it is measured."""
    backends = ["jax", "finufft"] if finufft_available() else ["jax"]
    if len(backends) == 1:
        print("jax-finufft is not installed: the JAX path alone, no fit")
    info = machine_info()
    print(f"# NUFFT backends' cost table, {info['processor']}, {info['cpu_count']} CPUs, "
          f"jax {jax.__version__}, {jax.default_backend()}, "
          f"GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}")  # fmt: skip
    rng = np.random.default_rng(args.seed)
    rows = []
    print("| grid | points | " + " | ".join(f"{b} fwd / adj ms" for b in backends) + " |")
    print("|---|---|" + "---|" * len(backends))
    for grid, rho in QUICK_CASES if args.quick else CASES:
        row = time_case(grid, rho, backends, QUICK if args.quick else BUDGET, rng)
        rows.append(row)
        cells = " | ".join(f"{row[b]['forward']:.2f} / {row[b]['adjoint']:.2f}" for b in backends)
        print(f"| {'x'.join(map(str, grid))} | {row['points']} | {cells} |", flush=True)
    return rows, {"machine": info, "jax": jax.__version__, "platform": jax.default_backend()}


def report_fit(rows: list[dict]) -> dict:
    """Fit the model to `rows` and print the fit, each row's measured and predicted pick,
    and the coefficients as `_backend_cost.COSTS` holds them."""
    backends = ("jax", "finufft")
    coefs = {b: fit(rows, b) for b in backends}
    print("\nfit: t = a + b * P L^D / 1e6 + c * G log2 G / 1e6 + d * G_big / 1e6 (ms)")
    for b, c in coefs.items():
        print(f"  {b}: " + " ".join(f"{k}={v:.4g}" for k, v in zip("abcd", c)))
    print("\n| grid | points | measured finufft/jax | predicted | measured pick | model pick |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        pred = {b: coefs[b][0] + np.dot(coefs[b][1:], row["features"]) for b in backends}
        measured = row["finufft"]["total"] / row["jax"]["total"]
        predicted = pred["finufft"] / pred["jax"]
        picks = ["finufft" if r * _backend_cost.MARGIN <= 1 else "jax"
                 for r in (measured, predicted)]  # fmt: skip
        print(f"| {'x'.join(map(str, row['grid']))} | {row['points']} | {measured:.2f} "
              f"| {predicted:.2f} | {picks[0]} | {picks[1]} |")  # fmt: skip
    print("\nfor _backend_cost.COSTS:")
    print({b: tuple(round(v, 4) for v in c) for b, c in coefs.items()})
    return coefs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="three small cases")
    parser.add_argument("--json", help="also write the table and the fit here")
    parser.add_argument("--fit", nargs="+", metavar="JSON", help="fit the rows of these "
                        "tables (written by --json) instead of timing")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fit:
        rows = [row for path in args.fit for row in json.load(open(path))["rows"]]
        result = {"tables": args.fit}
    else:
        rows, result = measure(args)
    result["rows"] = rows
    if all("finufft" in row for row in rows):
        result["fit"] = report_fit(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
