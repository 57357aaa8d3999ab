"""The cost of a gradient through CG-SENSE against the forward solve alone, on CPU.

    python benchmarks/bench_grad.py            # 8 coils, 128², 100 x 256 radial points; 20, 100 it
    python benchmarks/bench_grad.py --quick    # 2 coils, 32², 8 x 64 points; 5, 25 it; few runs

The problem: radial SENSE $A = \\mathrm{NUFFT}(p)\\, S$ (golden-angle spokes, the NUFFT's
defaults: oversamp 1.25, width 4; smooth coil maps $S$; complex64 data, float32 points),
solved by `jl.alg.conjugate_gradients` on $(A^H A + 10^{-2} I)\\, x = A^H b$ with the
Toeplitz normal (`toeplitz=True`: an FFT convolution on the 2x grid, its kernel computed
from the points on every call) and with the plain normal (a NUFFT and its adjoint per
iteration). `disable_tracking=True`, so that exactly `k` iterations run, forward and
adjoint. The loss is $\\|x - x_\\text{true}\\|^2$ (the Shepp-Logan phantom). Timed, each
under `jax.jit`, with the operator built inside from the points and maps, which are
arguments, as in a training step that learns them:

- `forward`: the loss alone (one CG solve);
- `implicit grad`: `jax.value_and_grad` w.r.t. the trajectory and the coil maps,
  `adjoint=jl.alg.ImplicitAdjoint()` (the default: one more CG solve, of the adjoint system);
- `unrolled grad`: the same with `adjoint=jl.alg.UnrolledAdjoint()` (reverse mode through
  a `lax.scan` of the `k` iterations, which stores them).

Timing: the three are timed in turns on the same fresh random right-hand side `b` per run
(`harness.time_turns`), so that the machine's drift falls on all;
medians and interquartile ranges; the ratio is a row's median over the forward's. Memory:
XLA's figures for the compiled function (`memory_analysis()`): temporaries (the peak of
the intermediate buffers), arguments and output, in MiB.

Targets (the issue): the implicit gradient costs at most 3x the forward solve, and its
temporaries do not grow with the iteration count (at the largest `k` within 10% of the
smallest).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from functools import partial

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from harness import QUICK, Budget, jax_impl, time_turns  # noqa: E402

from jaxlinops.demo import coil_maps, phantom, radial_trajectory  # noqa: E402

PROBLEM = dict(n=128, coils=8, spokes=100, readouts=256, iters=(20, 100))
QUICK_PROBLEM = dict(n=32, coils=2, spokes=8, readouts=64, iters=(5, 25))
REG = 1e-2
MAX_RATIO = 3.0  # the targets
MAX_GROWTH = 1.1
FUNCTIONS = ("forward", "implicit grad", "unrolled grad")


def loss(toeplitz: bool, iters: int, adjoint, locs, maps, target, b):
    """$\\|x - x_\\text{true}\\|^2$ for $x$ from `iters` CG iterations on the SENSE normal."""
    n = target.shape[0]
    S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    A = jl.NUFFT(locs, (n, n), "S R", batch_shape="C", toeplitz=toeplitz) @ S
    N = A.N + REG * jl.Identity(("Nx", "Ny"), A.N.oshape)
    x = jl.alg.conjugate_gradients(
        N, A.H(b), max_num_iters=iters, disable_tracking=True, progress=False, adjoint=adjoint
    )
    return jnp.sum(jnp.abs(x - target) ** 2)


def functions(toeplitz: bool, iters: int) -> dict:
    """The timed functions, each `fn(locs, maps, target, b)`; gradients w.r.t. `locs` and
    `maps`."""
    implicit = partial(loss, toeplitz, iters, jl.alg.ImplicitAdjoint())
    unrolled = partial(loss, toeplitz, iters, jl.alg.UnrolledAdjoint())
    return {
        "forward": implicit,
        "implicit grad": jax.value_and_grad(implicit, (0, 1)),
        "unrolled grad": jax.value_and_grad(unrolled, (0, 1)),
    }


def run_case(problem: dict, toeplitz: bool, iters: int, budget: Budget, seed: int) -> dict:
    """Timings and memory of `FUNCTIONS` for one normal and iteration count."""
    rng = np.random.default_rng(seed)
    n, coils = problem["n"], problem["coils"]
    locs = jnp.asarray(radial_trajectory(n, problem["spokes"], problem["readouts"]))
    args = locs, jnp.asarray(coil_maps(n, coils)), jnp.asarray(phantom(n).astype(np.complex64))
    shape = (coils, problem["spokes"], problem["readouts"])
    rows = {}
    for name, fn in functions(toeplitz, iters).items():
        impl = jax_impl(fn, *args)
        start = time.perf_counter()
        memory = impl.compile(np.zeros(shape, np.complex64))
        rows[name] = dict(impl=impl, memory=memory, compile_s=time.perf_counter() - start)
    timings = time_turns([row["impl"] for row in rows.values()], rng, shape, np.complex64, budget)
    for row, timing in zip(rows.values(), timings):
        row["timing"] = timing
        row["ratio"] = timing["median_ms"] / timings[0]["median_ms"]
    return rows


def mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f}"


def format_rows(label: str, iters: int, rows: dict) -> str:
    lines = []
    for name in FUNCTIONS:
        row, t = rows[name], rows[name]["timing"]
        m = row["memory"]
        lines.append(
            f"| {label} | {iters} | {name} | {t['median_ms']:.1f} ({t['p25_ms']:.1f}-"
            f"{t['p75_ms']:.1f}) | {row['ratio']:.2f} | {mib(m['temporaries'])} "
            f"| {mib(m['arguments'])} | {mib(m['output'])} | {row['compile_s']:.1f} |"
        )
    return "\n".join(lines)


def verdict(label: str, results: dict) -> list[str]:
    """Whether the targets hold for one normal: `results` maps iterations to rows."""
    few, many = min(results), max(results)
    ratios = [results[k]["implicit grad"]["ratio"] for k in sorted(results)]
    temps = {
        name: (results[few][name]["memory"]["temporaries"],
               results[many][name]["memory"]["temporaries"])
        for name in FUNCTIONS
    }  # fmt: skip
    growth = {name: b / max(a, 1) for name, (a, b) in temps.items()}
    fast = max(ratios) <= MAX_RATIO
    flat = growth["implicit grad"] <= MAX_GROWTH
    return [
        f"- {label}: implicit grad / forward = {', '.join(f'{r:.2f}' for r in ratios)} "
        f"at {', '.join(map(str, sorted(results)))} it: "
        f"{'yes' if fast else 'NO'} (target <= {MAX_RATIO:g})",
        f"- {label}: temporaries at {many} it / at {few} it: implicit grad "
        f"{growth['implicit grad']:.2f}, forward {growth['forward']:.2f}, unrolled grad "
        f"{growth['unrolled grad']:.2f}; implicit memory flat: {'yes' if flat else 'NO'} "
        f"(target <= {MAX_GROWTH:g})",
    ]


def cpu_model() -> str:
    """`lscpu`'s "Model name" (the processor's name where lscpu is missing)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        out = ""
    names = [line.split(":", 1)[1].strip() for line in out.splitlines()
             if line.startswith("Model name")]  # fmt: skip
    return names[0] if names else "unknown CPU"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="a tiny problem, few runs")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    args = parser.parse_args(argv)
    problem = QUICK_PROBLEM if args.quick else PROBLEM
    budget = QUICK if args.quick else Budget(warmup=1, min_runs=4)
    n = problem["n"]
    print(f"# Gradient cost of CG-SENSE, {time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, "
          f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}, jax {jax.__version__}, "
          f"{jax.default_backend()}")  # fmt: skip
    print(f"{problem['coils']} coils, {n}x{n}, {problem['spokes']} x {problem['readouts']} "
          "radial points, os 1.25 w 4, complex64; gradients w.r.t. the trajectory and the "
          "coil maps; ratio: ms / forward ms (the three timed in turns); memory: XLA's "
          "temporaries, arguments, output (MiB)\n")  # fmt: skip
    print("| normal | iters | function | ms median (IQR) | ratio | temp MiB | args MiB "
          "| out MiB | compile s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    verdicts = []
    for toeplitz in (True, False):
        label = "Toeplitz" if toeplitz else "plain"
        results = {}
        for iters in problem["iters"]:
            print(f"running {label}, {iters} it ...", file=sys.stderr, flush=True)
            results[iters] = run_case(problem, toeplitz, iters, budget, args.seed)
            print(format_rows(label, iters, results[iters]), flush=True)
        verdicts += verdict(label, results)
    print("\nTargets:")
    print("\n".join(verdicts))
    print(f"\nload at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
