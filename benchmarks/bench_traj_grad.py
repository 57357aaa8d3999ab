"""The cost of differentiating a NUFFT with respect to its trajectory, on CPU.

    python benchmarks/bench_traj_grad.py            # 2D 128² (20,000 pts), 3D 48³ (50,000 pts)
    python benchmarks/bench_traj_grad.py --quick    # 2D 32² (1,000 pts) only, few runs

For each case (complex64 image, float32 points uniform at random in [-N/2, N/2) per axis,
torchlinops' kernel: oversamp 1.25, width 4) and backend (`"jax"`, and `"finufft"` when
jax-finufft is installed), five functions of the image `x` under `jax.jit`, with the
operator built inside from the points, which are an argument (so each call also prepares
and sorts the points, as a training step that updates the trajectory must):

- `forward`: `A x`;
- `adjoint`: `A^H y`;
- `loss`: `||A x - y||^2`;
- `grad locs`: `jax.grad` of the loss w.r.t. the points;
- `grad x`: `jax.grad` of the loss w.r.t. the image.

Timing: `harness.time_impl` (a fresh random input per run, medians and interquartile
ranges, `block_until_ready`). Memory: XLA's figures for the compiled function
(`memory_analysis()`): temporaries + output + arguments, in MiB. Ratio: the row's median
over the forward's median for the same case and backend.
"""

from __future__ import annotations

import argparse
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
from harness import QUICK, Budget, jax_impl, random_input, time_impl  # noqa: E402

from jaxlinops.functional._finufft import finufft_available  # noqa: E402

CASES = (((128, 128), 20_000), ((48, 48, 48), 50_000))
QUICK_CASES = (((32, 32), 1_000),)


def functions(grid: tuple[int, ...], backend: str) -> dict:
    """The timed functions, each `fn(locs, other, x)` with `x` the fresh input."""

    def op(locs):
        return jl.NUFFT(locs, grid, ("K",), backend=backend)

    def loss(locs, y, x):
        return jnp.sum(jnp.abs(op(locs)(x) - y) ** 2)

    return {
        "forward": (lambda locs, y, x: op(locs)(x), "image"),
        "adjoint": (lambda locs, y, x: op(locs).H(x), "points"),
        "loss": (loss, "image"),
        "grad locs": (jax.grad(loss, 0), "image"),
        "grad x": (jax.grad(loss, 2), "image"),
    }


def run_case(grid, npts, backend, budget, rng) -> list[dict]:
    half = np.asarray(grid, np.float32) / 2
    locs = jnp.asarray(rng.uniform(-half, half, (npts, len(grid))).astype(np.float32))
    y = jnp.asarray(random_input(rng, (npts,)))
    rows = []
    for name, (fn, kind) in functions(grid, backend).items():
        shape = grid if kind == "image" else (npts,)
        impl = jax_impl(fn, locs, y)
        start = time.perf_counter()
        stats = impl.compile(random_input(rng, shape))
        compile_s = time.perf_counter() - start
        timing = time_impl(impl, rng, shape, np.complex64, budget)
        mib = (stats["temporaries"] + stats["output"] + stats["arguments"]) / 2**20
        rows.append(dict(name=name, timing=timing, mib=mib, compile_s=compile_s))
    return rows


def format_rows(label: str, backend: str, rows: list[dict]) -> str:
    forward = rows[0]
    lines = []
    for row in rows:
        t = row["timing"]
        ratio = t["median_ms"] / forward["timing"]["median_ms"]
        mem_ratio = row["mib"] / forward["mib"]
        lines.append(
            f"| {label} | {backend} | {row['name']} | {t['median_ms']:.2f} "
            f"({t['p25_ms']:.2f}-{t['p75_ms']:.2f}) | {ratio:.2f} | {row['mib']:.1f} "
            f"| {mem_ratio:.2f} | {row['compile_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a tiny 2D case, few runs")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    budget = QUICK if args.quick else Budget(warmup=2, min_runs=5, min_time=0.5, cap_s=10.0)
    backends = ("jax", "finufft") if finufft_available() else ("jax",)
    if not finufft_available():
        print("notice: jax-finufft not installed; its rows are skipped", file=sys.stderr)
    print(f"# NUFFT trajectory gradients, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, jax {jax.__version__}, "
          f"{jax.default_backend()}")  # fmt: skip
    print(
        "complex64 data, float32 points, oversamp 1.25, width 4; ratio: ms / forward ms; "
        "memory: XLA's temporaries + output + arguments\n"
    )
    print("| case | backend | function | ms median (IQR) | ratio | MiB | MiB ratio | compile s |")
    print("|---|---|---|---|---|---|---|---|")
    for grid, npts in QUICK_CASES if args.quick else CASES:
        label = f"{len(grid)}D {'x'.join(map(str, grid))}, {npts} pts"
        for backend in backends:
            print(f"running {label}, {backend} ...", file=sys.stderr, flush=True)
            rng = np.random.default_rng(args.seed)
            rows = run_case(grid, npts, backend, budget, rng)
            print(format_rows(label, backend, rows), flush=True)
    print(f"\nload at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
