"""Ways to grid a NUFFT's points in pure JAX on a CPU, timed against each other in one run.

    python benchmarks/bench_gridding_variants.py            # 2D 320² / 65,536, 3D 160³ / 262,144
    python benchmarks/bench_gridding_variants.py --quick    # small sizes, few runs

The padded grids and point counts of `bench_nufft_peers.py` (oversampling 1.25, width 4,
complex64, one coil), gridding only (no FFT). Interpolation (grid -> points) and spreading
(points -> grid), each by:

- `jaxlinops`: what the NUFFT runs: points sorted by cell once at plan time, the window
  weights evaluated on every call from the points by the fitted polynomials, a 4^D window;
  one fused gather-and-sum contracted one axis at a time, a chunked scatter-add of window
  rows (4 contiguous entries each);
- `precomputed weights`: the same, the weights computed once and passed in (fastest, but
  the operator would then hold arrays derived from its points, stale after an update);
- `A&S kernel per call`: the same sorted windows, the weights evaluated by the
  Abramowitz–Stegun Bessel function torchlinops uses (jaxlinops' previous NUFFT);
- `unsorted`: `jaxlinops` without the plan-time order;
- `flat indices` (the segment-sum formulation): every (point, window entry) pair as one
  scalar gather or one `segment_sum` into the flattened grid, indices precomputed and, for
  the sum, sorted.

A per-tile dense accumulation (cuFINUFFT's shared-memory subproblems) has no CPU
counterpart in XLA: each tile's points would have to be padded to the densest tile's
count, which for MRI trajectories (dense at the k-space centre) multiplies the work.

Ratio: the variant's median over `jaxlinops`' (>1: `jaxlinops` faster).
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops  # noqa: F401
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from harness import QUICK, Budget, jax_impl, time_impl  # noqa: E402

from jaxlinops.functional import _gridding, _kernels, _nufft_gridding  # noqa: E402

CASES = (((320, 320), 65536), ((160,) * 3, 262144))
QUICK_CASES = (((40, 40), 1024), ((20,) * 3, 2048))
WIDTH, BETA = 4.0, math.pi * math.sqrt((4 / 1.25) ** 2 * 0.75**2 - 0.8)


def variants(locs: np.ndarray, grid: tuple[int, ...]) -> dict:
    """`name -> (interpolate(a, k), spread(a, y), a)`: the arrays `a` are passed to the
    compiled function as arguments (not folded into it as constants)."""
    nd, points = len(grid), len(locs)
    q = jnp.asarray(locs)
    order = _gridding.point_order(q, grid)
    windows = _nufft_gridding.nufft_windows(q[order], grid, WIDTH, BETA)
    settings = _kernels.KernelSettings((WIDTH,) * nd, "kaiser_bessel", 1, "circular",
                                       (("beta", BETA),))  # fmt: skip
    size, flat, sort = math.prod(grid), *_flat_indices(np.asarray(windows.starts), grid)
    flat_weights = _gridding._window_weights(windows.weights).reshape(points, -1)

    def unpermute(out, order_):
        return jnp.zeros_like(out).at[:, order_].set(out, unique_indices=True)

    def ours(a, k):
        return _nufft_gridding.interp_points(k, a["q"], a["order"], WIDTH, BETA)

    def ours_adj(a, y):
        return _nufft_gridding.spread_points(y, a["q"], a["order"], grid, WIDTH, BETA)

    def precomputed(a, k):
        nbhd = a["windows"]
        out = _nufft_gridding._unless_wrapped(
            nbhd, grid, lambda m: _gridding.gather_windows(k, nbhd, m)
        )
        return unpermute(out, a["order"])

    def precomputed_adj(a, y):
        nbhd, vals = a["windows"], y[:, a["order"]]
        return _nufft_gridding._unless_wrapped(
            nbhd, grid, lambda m: _gridding.scatter_windows(vals, nbhd, grid, m)
        )

    def bessel(a, k):
        nbhd = _gridding.neighbourhoods(a["q"][a["order"]], grid, settings)
        return unpermute(_gridding.gather_windows(k, nbhd, "circular"), a["order"])

    def bessel_adj(a, y):
        nbhd = _gridding.neighbourhoods(a["q"][a["order"]], grid, settings)
        return _gridding.scatter_windows(y[:, a["order"]], nbhd, grid, "circular")

    def flat_gather(a, k):
        vals = k.reshape(k.shape[0], size)[:, a["flat"]]  # [B, P, L^D]
        out = jnp.sum(vals * a["weights"].astype(k.dtype)[None], axis=-1)
        return unpermute(out, a["order"])

    def flat_sum(a, y):
        terms = y[:, a["order"], None] * a["weights"].astype(y.dtype)[None]
        terms = terms.reshape(y.shape[0], -1)[:, a["sort"]]
        index = a["flat"].ravel()[a["sort"]]
        sums = jax.vmap(lambda t: jax.ops.segment_sum(t, index, size, indices_are_sorted=True))(
            terms
        )
        return sums.reshape((y.shape[0],) + grid)

    base = {"q": q, "order": order}
    unsorted = {"q": q, "order": jnp.arange(points, dtype=jnp.int32)}
    flat_args = base | {"flat": flat, "sort": sort, "weights": flat_weights}
    return {
        "jaxlinops": (ours, ours_adj, base),
        "precomputed weights": (precomputed, precomputed_adj, base | {"windows": windows}),
        "A&S kernel per call": (bessel, bessel_adj, base),
        "unsorted": (ours, ours_adj, unsorted),
        "flat indices": (flat_gather, flat_sum, flat_args),
    }


def _flat_indices(starts: np.ndarray, grid: tuple[int, ...]):
    """The flattened grid index of every (point, window entry) `[P, 4^D]`, wrapped, and the
    order that sorts them all."""
    nd = len(grid)
    strides = np.cumprod((1,) + grid[::-1])[:-1][::-1]
    entries = np.indices((4,) * nd).reshape(nd, -1)  # [D, 4^D]
    flat = np.zeros((len(starts), entries.shape[1]), np.int64)
    for d in range(nd):
        flat += ((starts[:, d : d + 1] + entries[d][None]) % grid[d]) * strides[d]
    sort = np.argsort(flat.ravel(), kind="stable")
    return jnp.asarray(flat, jnp.int32), jnp.asarray(sort, jnp.int32)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="one small case, few runs")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else Budget()
    print(f"# gridding variants, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, "
          f"jax {jax.__version__}, complex64, width 4\n")  # fmt: skip
    print("| case | variant | interpolate ms | ratio | spread ms | ratio |")
    print("|---|---|---|---|---|---|")
    for grid, points in QUICK_CASES if args.quick else CASES:
        rng = np.random.default_rng(0)
        locs = (rng.random((points, len(grid))) * np.array(grid)).astype(np.float32)
        label = f"{'x'.join(map(str, grid))}, {points} pts"
        base = None
        for name, (interp, spread, arrays) in variants(locs, grid).items():
            times = []
            for fn, shape in ((interp, (1,) + grid), (spread, (1, points))):
                impl = jax_impl(fn, arrays)
                times.append(time_impl(impl, rng, shape, np.complex64, budget)["median_ms"])
            base = base or times
            print(f"| {label} | {name} | {times[0]:.2f} | {times[0] / base[0]:.2f} "
                  f"| {times[1]:.2f} | {times[1] / base[1]:.2f} |", flush=True)  # fmt: skip
    print(f"\nload at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
