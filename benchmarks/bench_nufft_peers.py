"""jaxlinops' NUFFT against the CPU peers jax-finufft and nufftax, at equal accuracy, in one run.

    python benchmarks/bench_nufft_peers.py            # 2D 256², 3D 64³, 3D 128³ (minutes)
    python benchmarks/bench_nufft_peers.py --quick    # 2D 256² only, few runs

Cases (complex64, points uniform at random in [-N/2, N/2) per axis): 2D 256² with 65,536
points, 3D 64³ with 32,768 points, 3D 128³ with 262,144 points; forward (image -> points)
and adjoint (points -> image). Rows:

- jaxlinops' pure-JAX path (`backend="jax"`) at its defaults (oversamp 1.25, width 4), at
  `eps` 1e-2, 1e-4, 1e-6 (an eps the table cannot deliver in single precision on the grid
  is reported and skipped) and at (oversamp 2, width 8), the finest single precision
  resolves, with the plan's bytes per point and XLA's temporaries;
- jax-finufft at the largest eps of a ladder whose error is no worse than each of those
  rows' ("= jl ..."), and nufftax (its default upsampfac 2) likewise;
- when jax-finufft is installed: jaxlinops with `backend="finufft"` at eps 1e-2, 1e-4,
  1e-6 against raw jax-finufft at the tolerance the operator passes it (eps / 3, "= jl
  finufft ..."), the two timed in turns on the same inputs: what the operator adds; and,
  where `"auto"` picks finufft for the case (its cost model: 3-D 128^3 here), the
  operator at its defaults (`"jaxlinops auto"`), with the peers matched to its error
  ("= jl auto");
- `XLA FFT alone`: XLA's FFT of the oversampled grid of jaxlinops' defaults and nothing
  else, the time below which no NUFFT built on XLA's FFT can go (its ratio is its share of
  the defaults' time).

Run it with `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` as well as without: glibc serves every
allocation above 32 MiB by a fresh `mmap`, so each call of any library page-faults its
large arrays in again (4 KiB pages); the tunable backs them with huge pages. The header
prints the setting in force.

Conventions (`../shared/reference/anchors.md`): jaxlinops' points p (grid units) are the
peers' angles 2π·p/N; the forward is finufft type 2 with iflag -1, the adjoint type 1 with
iflag +1, both times N^{-1/2} (N the number of pixels); nufftax takes the point arrays in
reversed axis order (and `n_modes` reversed) and returns the image indexed like jaxlinops'.

Accuracy: relative l2 error against an exact DFT in double precision, on a random subset of
the points (forward) or of the pixels (adjoint), with no fitted scale factor, so that a
wrong convention shows up as an error of order 1. Timing: `harness.time_impl` (fresh
inputs, medians and interquartile ranges), every library under `jax.jit` with the points
passed as arguments. Ratio: the row's median over jaxlinops' median at the matching
accuracy (jaxlinops' defaults for the fixed-eps rows); above 1, jaxlinops is faster.
Peers that are not installed are skipped with a notice.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from harness import (  # noqa: E402
    QUICK,
    Budget,
    Impl,
    jax_impl,
    random_input,
    rel_l2,
    time_impl,
    time_turns,
)

CASES = (((256, 256), 65536), ((64,) * 3, 32768), ((128,) * 3, 262144))
FIXED_EPS = (1e-2, 1e-4, 1e-6)
JL_SETTINGS = (
    (("defaults", {}),)
    + tuple((f"eps {e:g}", {"eps": e}) for e in FIXED_EPS)
    + (("finest", {"oversamp": 2.0, "width": 8.0}),)  # single precision's floor
)
LADDER = (1e-1, 5e-2, 2e-2, 1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4, 5e-5, 2e-5, 1e-5,
          5e-6, 2e-6, 1e-6, 5e-7, 2e-7, 1e-7)  # fmt: skip
SUBSET = 256  # points (forward) or pixels (adjoint) of the exact reference


def load_peers() -> dict:
    """The importable peers by name; a missing one is reported and left out."""
    peers = {}
    for name, module in (("jax-finufft", "jax_finufft"), ("nufftax", "nufftax")):
        try:
            peers[name] = importlib.import_module(module)
        except ImportError as error:  # jax-finufft without pydantic fails here too
            print(f"notice: {name} not usable ({error}); its rows are skipped", file=sys.stderr)
    return peers


# --------------------------------------------------------------------------- exact reference
def _centered(grid) -> list[np.ndarray]:
    return [(np.arange(n) - n // 2) / n for n in grid]


def exact_forward(locs, grid, x, idx) -> np.ndarray:
    """$y_j = N^{-1/2} \\sum_n x_n e^{-2\\pi i \\sum_d p_{jd} (n_d - N_d//2)/N_d}$ at the
    points `idx`, separably: one axis at a time, the last first."""
    p = locs[idx].astype(np.float64)
    phases = [np.exp(-2j * np.pi * np.outer(p[:, d], c)) for d, c in enumerate(_centered(grid))]
    t = np.tensordot(x.astype(np.complex128), phases[-1], axes=([x.ndim - 1], [1]))
    for d in reversed(range(len(grid) - 1)):
        t = np.einsum("...aj,ja->...j", t, phases[d])
    return t / math.sqrt(math.prod(grid))


def exact_adjoint(locs, grid, y, pixels, chunk: int = 16384) -> np.ndarray:
    """$x_n = N^{-1/2} \\sum_j y_j e^{+2\\pi i \\sum_d p_{jd} (n_d - N_d//2)/N_d}$ at the
    pixels `pixels` `[S, D]`, summed over the points in chunks."""
    freqs = np.stack([c[pixels[:, d]] for d, c in enumerate(_centered(grid))], axis=1)
    out = np.zeros(len(pixels), np.complex128)
    for start in range(0, len(locs), chunk):
        p = locs[start : start + chunk].astype(np.float64)
        out += y[start : start + chunk].astype(np.complex128) @ np.exp(2j * np.pi * p @ freqs.T)
    return out / math.sqrt(math.prod(grid))


# --------------------------------------------------------------------------- implementations
def jaxlinops_impl(locs, grid, adjoint, options) -> tuple[Impl, str, dict]:
    """The operator's Impl, its settings and its memory: the plan's bytes per point and
    XLA's temporaries (MiB) for one application (and finufft's tolerance, or None)."""
    op = jl.NUFFT(locs, grid, ("K",), **options)
    impl = jax_impl(lambda a, x: a(x), op.H if adjoint else op)
    plan = op.plan
    settings = f"os {plan.oversamp:g}, w {plan.width:g}"
    if plan.backend == "finufft":
        settings = f"finufft, eps {plan.eps:.3g}"
    plan_bytes = sum(leaf.nbytes for leaf in jax.tree.leaves(plan) if hasattr(leaf, "nbytes"))
    shape = (len(locs),) if adjoint else grid
    stats = impl.compile(np.zeros(shape, np.complex64))
    memory = dict(
        plan_bytes_per_point=plan_bytes / len(locs),
        temp_mib=stats["temporaries"] / 2**20,
        tolerance=plan.eps,
    )
    return impl, settings, memory


def fft_alone(locs, grid, adjoint) -> tuple[str, Impl, float]:
    """XLA's FFT (inverse FFT for the adjoint) of the oversampled grid that jaxlinops'
    defaults transform, and nothing else: the time no NUFFT built on XLA's FFT goes below.
    Its settings, its Impl (each input repeated into the grid outside the timing) and a
    NaN error."""
    padded = jl.NUFFT(locs[:1], grid, ("K",), backend="jax").plan.padded_size
    impl = jax_impl(jnp.fft.ifftn if adjoint else jnp.fft.fftn)
    impl = dataclasses.replace(impl, fresh=lambda a: jax.device_put(np.resize(a, padded)))
    return f"{'x'.join(map(str, padded))} grid, no gridding", impl, float("nan")


def finufft_impl(mod, angles, grid, adjoint, eps) -> Impl:
    scale = np.float32(1 / math.sqrt(math.prod(grid)))
    if adjoint:
        fn = lambda pts, y: scale * mod.nufft1(grid, y, *pts, iflag=1, eps=eps)  # noqa: E731
    else:
        fn = lambda pts, x: scale * mod.nufft2(x, *pts, iflag=-1, eps=eps)  # noqa: E731
    return jax_impl(fn, angles)


def nufftax_impl(mod, angles, grid, adjoint, eps) -> Impl:
    nd, scale = len(grid), np.float32(1 / math.sqrt(math.prod(grid)))
    if adjoint:
        type1 = getattr(mod, f"nufft{nd}d1")
        fn = lambda pts, y: scale * type1(*pts[::-1], y, grid[::-1], eps=eps, isign=1)  # noqa: E731
    else:
        type2 = getattr(mod, f"nufft{nd}d2")
        fn = lambda pts, x: scale * type2(*pts[::-1], x, eps=eps, isign=-1)  # noqa: E731
    return jax_impl(fn, angles)


# --------------------------------------------------------------------------- one case
class Direction:
    """One case in one direction: its reference input, exact values and the rows so far."""

    def __init__(self, rng, locs, grid, adjoint: bool):
        self.grid, self.adjoint = grid, adjoint
        self.shape = (len(locs),) if adjoint else grid
        self.x0 = random_input(rng, self.shape)
        if adjoint:
            self.pick = np.stack([rng.integers(0, n, SUBSET) for n in grid], axis=1)
            self.truth = exact_adjoint(locs, grid, self.x0, self.pick)
        else:
            self.pick = rng.choice(len(locs), SUBSET, replace=False)
            self.truth = exact_forward(locs, grid, self.x0, self.pick)

    def error(self, impl: Impl) -> float:
        out = impl.read(impl.call(impl.fresh(self.x0)))
        out = out[tuple(self.pick.T)] if self.adjoint else out[self.pick]
        return rel_l2(out, self.truth)


def match_eps(make, direction: Direction, target: float, cache: dict):
    """The largest eps of `LADDER` whose error is at most `target`: `(eps, impl, error)`,
    or None. Starts near `target` and walks the ladder; `cache` maps eps to `(impl, err)`."""

    def evaluate(i):
        eps = LADDER[i]
        if eps not in cache:
            impl = make(eps)
            cache[eps] = (impl, direction.error(impl))
        return cache[eps][1] <= target

    i = next((k for k, e in enumerate(LADDER) if e <= 3 * target), len(LADDER) - 1)
    if evaluate(i):
        while i > 0 and evaluate(i - 1):
            i -= 1
    else:
        while i < len(LADDER) - 1 and not evaluate(i):
            i += 1
        if not evaluate(i):
            return None
    return LADDER[i], *cache[LADDER[i]]


def run_direction(rng, locs, grid, adjoint, peers, budget) -> list[dict]:
    direction = Direction(rng, locs, grid, adjoint)
    angles = tuple(
        np.ascontiguousarray(2 * np.pi * locs[:, d] / n, np.float32) for d, n in enumerate(grid)
    )
    rows = []

    def add(library, settings, impl, error, reference_ms=None, memory=None, timing=None):
        timing = timing or time_impl(impl, rng, direction.shape, np.complex64, budget)
        ms = timing["median_ms"]
        ratio, rate = ms / (reference_ms or ms), len(locs) / ms * 1e3
        row = dict(library=library, settings=settings, error=error, timing=timing)
        rows.append(row | dict(ratio=ratio, pts_per_s=rate, memory=memory))
        return ms

    jl_rows, finufft_rows = [], []
    for label, options in JL_SETTINGS:
        for backend in ("jax", "finufft") if "jax-finufft" in peers else ("jax",):
            if backend == "finufft" and "eps" not in options:
                continue
            try:
                impl, settings, memory = jaxlinops_impl(
                    locs, grid, adjoint, options | {"backend": backend}
                )
            except ValueError as error:  # an eps single precision cannot deliver here
                print(f"notice: jaxlinops {label}: {error}", file=sys.stderr)
                continue
            error = direction.error(impl)
            if backend == "jax":
                ms = add("jaxlinops", f"{label}: {settings}", impl, error, memory=memory)
                jl_rows.append((f"jl {label}", error, ms))
            else:  # timed below, in turns with raw jax-finufft at the plan's tolerance
                finufft_rows.append((label, settings, impl, error, memory))
    impl, settings, memory = jaxlinops_impl(locs, grid, adjoint, {"backend": "auto"})
    if settings.startswith("finufft"):  # the defaults where "auto" does not run the JAX path
        error = direction.error(impl)
        ms = add("jaxlinops auto", f"defaults: {settings}", impl, error, memory=memory)
        jl_rows.append(("jl auto", error, ms))
    add("XLA FFT alone", *fft_alone(locs, grid, adjoint), jl_rows[0][2])
    makers = {
        "jax-finufft": lambda mod: lambda eps: finufft_impl(mod, angles, grid, adjoint, eps),
        "nufftax": lambda mod: lambda eps: nufftax_impl(mod, angles, grid, adjoint, eps),
    }
    for name, mod in peers.items():
        make, cache = makers[name](mod), {}
        for label, target, jl_ms in jl_rows:
            found = match_eps(make, direction, target, cache)
            if found is None:
                print(f"notice: {name} reaches no error <= {target:.1e}", file=sys.stderr)
                continue
            eps, impl, error = found
            add(name, f"eps {eps:g} (= {label})", impl, error, jl_ms)
        if name != "jax-finufft":
            continue
        for label, settings, op, op_error, memory in finufft_rows:
            eps = memory["tolerance"]
            raw = make(eps)
            mine, theirs = time_turns([op, raw], rng, direction.shape, np.complex64, budget)
            ms = add("jaxlinops finufft", f"{label}: {settings}", op, op_error,
                     memory=memory, timing=mine)  # fmt: skip
            add(name, f"eps {eps:.3g} (= jl finufft {label})", raw, direction.error(raw), ms,
                timing=theirs)  # fmt: skip
    return rows


def format_rows(label: str, rows: list[dict]) -> str:
    lines = []
    for row in rows:
        t = row["timing"]
        iqr = f"{t['p25_ms']:.2f}-{t['p75_ms']:.2f}"
        memory = row["memory"]
        mem = "" if memory is None else (
            f"{memory['plan_bytes_per_point']:.0f} B/pt, {memory['temp_mib']:.0f} MiB"
        )  # fmt: skip
        error = "" if math.isnan(row["error"]) else f"{row['error']:.1e}"
        lines.append(
            f"| {label} | {row['library']} | {row['settings']} | {t['median_ms']:.2f} ({iqr}) "
            f"| {row['ratio']:.2f} | {error} | {row['pts_per_s']:.2e} | {mem} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="2D 256² only, few runs")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else Budget()
    peers = load_peers()
    versions = {name: getattr(mod, "__version__", "?") for name, mod in peers.items()}
    print(f"# NUFFT vs CPU peers, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}, jax {jax.__version__}, "
          f"peers {versions}, GLIBC_TUNABLES={os.environ.get('GLIBC_TUNABLES', '')!r}")  # fmt: skip
    print("ratio: row ms / jaxlinops ms at matching accuracy (>1: jaxlinops faster); "
          f"rel. error vs exact DFT on {SUBSET} points (fwd) or pixels (adj); memory: the "
          "plan's bytes per point and XLA's temporaries for one application\n")  # fmt: skip
    print("| case | library | settings | ms median (IQR) | ratio | rel. error | points/s "
          "| memory |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for grid, npts in CASES[:1] if args.quick else CASES:
        rng = np.random.default_rng(args.seed)
        half = np.asarray(grid, np.float32) / 2
        locs = rng.uniform(-half, half, (npts, len(grid))).astype(np.float32)
        for adjoint in (False, True):
            size = "x".join(map(str, grid))
            label = f"{len(grid)}D {size}, {npts} pts, {'adj' if adjoint else 'fwd'}"
            print(f"running {label} ...", file=sys.stderr, flush=True)
            rows = run_direction(rng, locs, grid, adjoint, peers, budget)
            print(format_rows(label, rows), flush=True)
    print(f"\nload at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
