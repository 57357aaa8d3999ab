r"""The NUFFT's accuracy per (oversamp, width): the measurement behind `NUFFT(..., eps=...)`.

    python benchmarks/nufft_accuracy.py             # the full table (a few minutes on 2 cores)
    python benchmarks/nufft_accuracy.py --quick     # a tiny run (seconds), for CI
    python benchmarks/nufft_accuracy.py --out FILE  # also write the Markdown to FILE

For every oversampling factor in `OVERSAMPS` and every integer kernel width from the smallest
with a real Kaiser–Bessel beta ($(w / os)^2 (os - 1/2)^2 > 0.8$) up to `MAX_WIDTH`, the
relative l2 error of `jaxlinops.functional.nufft` (forward) and `nufft_adjoint` against an
exact non-uniform DFT computed in float64 numpy, on each case of `CASES` (1D, 2D, 3D). Points
are uniform at random in $[-N/2, N/2)$ per axis, the data random complex Gaussian. A cell is
the worst over the seeds `SEEDS` and over forward and adjoint.

The main columns run in complex128 with float64 points, so that they measure the method, not
rounding. The complex64 columns (float32 points; the exact DFT takes the rounded points and
data, so only the computation's own rounding counts) show where single precision floors the
error. It grows with the grid: the points are rounded to float32 in padded-grid units
$[0, N_{pad})$, an absolute error of about $N_{pad} \cdot 6 \cdot 10^{-8}$, so the report ends
with each case's floor (its smallest complex64 error at oversamp 2, widths >= 8) over
$|N| = \sqrt{\sum_d N_d^2}$.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)
F = jl.functional

# (label, grid size, number of points)
CASES = (
    ("1D 64", (64,), 256),
    ("1D 200", (200,), 400),
    ("2D 32²", (32, 32), 1024),
    ("3D 16³", (16, 16, 16), 1024),
)
SINGLE_CASES = (
    ("1D 64", (64,), 256),
    ("1D 200", (200,), 400),
    ("1D 1024", (1024,), 1024),
    ("2D 64²", (64, 64), 1024),
)
OVERSAMPS = (1.25, 1.5, 2.0)
MAX_WIDTH = 16
SEEDS = (0, 1, 2)

QUICK_CASES = (("1D 64", (64,), 128), ("2D 16²", (16, 16), 256))
QUICK_SINGLE = (("1D 64", (64,), 128),)
QUICK_OVERSAMPS = (1.25, 2.0)
QUICK_MAX_WIDTH = 5
QUICK_SEEDS = (0,)


def smallest_width(oversamp: float) -> int:
    """The smallest integer width with a real beta: $(w / os)^2 (os - 1/2)^2 > 0.8$."""
    width = 1
    while (width / oversamp) ** 2 * (oversamp - 0.5) ** 2 <= 0.8:
        width += 1
    return width


def exact_dft(locs: np.ndarray, grid: tuple[int, ...]) -> np.ndarray:
    r"""The centered, orthonormal non-uniform DFT matrix [points, prod(grid)] in float64:
    $e^{-2\pi i \sum_d p_d (n_d - N_d // 2) / N_d} / \sqrt{\prod N}$."""
    axes = np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij")
    phase = sum(np.outer(locs[:, d], axes[d].ravel()) / n for d, n in enumerate(grid))
    return np.exp(-2j * np.pi * phase) / np.sqrt(math.prod(grid))


def rel_l2(got, want: np.ndarray) -> float:
    got = np.asarray(got, np.complex128).ravel()
    return float(np.linalg.norm(got - want.ravel()) / np.linalg.norm(want))


def problem(seed: int, grid: tuple[int, ...], npoints: int, single: bool):
    """Points, image, point data and the exact forward / adjoint outputs (float64)."""
    rng = np.random.default_rng(seed)
    real, cplx = (np.float32, np.complex64) if single else (np.float64, np.complex128)
    locs = (rng.uniform(-0.5, 0.5, (npoints, len(grid))) * np.array(grid)).astype(real)
    x = (rng.standard_normal(grid) + 1j * rng.standard_normal(grid)).astype(cplx)
    y = (rng.standard_normal(npoints) + 1j * rng.standard_normal(npoints)).astype(cplx)
    E = exact_dft(locs.astype(np.float64), grid)
    return locs, x, y, E @ x.ravel().astype(np.complex128), E.conj().T @ y.astype(np.complex128)


def measure(cases, oversamps, max_width, seeds, single) -> dict:
    """`{(os, width): {case label: worst relative error}}` over seeds, forward and adjoint."""
    table: dict = {}
    for label, grid, npoints in cases:
        for seed in seeds:
            locs, x, y, fwd, adj = problem(seed, grid, npoints, single)
            for oversamp in oversamps:
                for width in range(smallest_width(oversamp), max_width + 1):
                    plan = F.nufft_plan(locs, grid, oversamp, float(width), backend="jax")
                    err = max(
                        rel_l2(F.nufft(jnp.asarray(x), plan), fwd),
                        rel_l2(F.nufft_adjoint(jnp.asarray(y), plan), adj),
                    )
                    cell = table.setdefault((oversamp, width), {})
                    cell[label] = max(cell.get(label, 0.0), err)
    return table


def markdown(double: dict, single: dict, cases, single_cases) -> str:
    """The table: one row per (oversamp, width); complex128 cases, their worst, complex64."""
    labels = [c[0] for c in cases]
    slabels = [c[0] for c in single_cases]
    head = ["os", "w", *labels, "worst c128", *[f"c64 {s}" for s in slabels]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (oversamp, width), cells in sorted(double.items()):
        row = [f"{oversamp:g}", str(width)] + [f"{cells[c]:.2e}" for c in labels]
        row.append(f"**{max(cells.values()):.2e}**")
        scells = single.get((oversamp, width), {})
        row += [f"{scells[c]:.2e}" if c in scells else "" for c in slabels]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def floors(single: dict, single_cases) -> str:
    r"""Each complex64 case's floor (smallest error at oversamp 2, widths >= 8) and its ratio
    to $|N| = \sqrt{\sum_d N_d^2}$."""
    lines = []
    for label, grid, _ in single_cases:
        errs = [c[label] for (os_, w), c in single.items() if os_ == 2.0 and w >= 8]
        if errs:
            norm = math.hypot(*grid)
            lines.append(f"- {label}: {min(errs):.2e} = {min(errs) / norm:.2e} |N|")
    return "\n".join(["", "complex64 floor (oversamp 2, widths >= 8):", *lines] if lines else [])


def main() -> None:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="The NUFFT's accuracy per (oversamp, width).",
    )
    parser.add_argument("--quick", action="store_true", help="a tiny run, for CI")
    parser.add_argument("--out", help="also write the Markdown report to this file")
    args = parser.parse_args()
    if args.quick:
        cases, single_cases = QUICK_CASES, QUICK_SINGLE
        oversamps, max_width, seeds = QUICK_OVERSAMPS, QUICK_MAX_WIDTH, QUICK_SEEDS
    else:
        cases, single_cases = CASES, SINGLE_CASES
        oversamps, max_width, seeds = OVERSAMPS, MAX_WIDTH, SEEDS
    start = time.perf_counter()
    double = measure(cases, oversamps, max_width, seeds, single=False)
    single = measure(single_cases, oversamps, max_width, seeds, single=True)
    cores = os.cpu_count()
    report = "\n".join(
        [
            "# NUFFT relative l2 error against an exact DFT",
            "",
            f"jaxlinops {jl.__version__}, jax {jax.__version__}, {jax.devices()[0].platform} "
            f"({cores} cores), seeds {list(seeds)}, worst of forward and adjoint; "
            f"{time.perf_counter() - start:.0f} s.",
            "",
            markdown(double, single, cases, single_cases),
            floors(single, single_cases),
        ]
    )
    print(report)
    if args.out:
        with open(args.out, "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
