"""Benchmark jaxlinops' non-Cartesian operators against torchlinops at torchlinops' sizes.

Cases (all complex64), as in torchlinops' own benchmark suite:

- NUFFT forward / adjoint (oversamp 1.25, width 4): 2-D 64^2 / 128^2 / 256^2 with 4096 /
  16384 / 65536 points, 3-D 32^3 / 64^3 / 128^3 with 4096 / 32768 / 262144 points;
- Interpolate forward / adjoint (Kaiser-Bessel, width 4, beta 1) at the same sizes;
- ArrayToBlocks / BlocksToArray 3-D at 32^3 / 64^3 / 128^3, block 8^3, stride 4.

Both libraries get the same random points (numpy, fixed seed) and the same inputs. jaxlinops
operators go through one `jax.jit`-compiled function taking the operator and the input (the
operator is a pytree argument, so nothing is constant-folded); the compile time is measured
apart. torchlinops is timed through its linop API (built once, then applied) and its
functional API, under `torch.inference_mode()`, with torch's default thread count. Every
repetition gets a fresh input generated outside the timed region; the reported figures are
the median and quartiles of `time.perf_counter` intervals (with device synchronisation).

Usage: `python benchmarks/bench_nonuniform.py [--quick] [--cases REGEX] [--json PATH]`.
Without torchlinops installed only the jaxlinops times are printed (ratios show "n/a").
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata

import jax
import numpy as np

try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

try:
    import torch
    import torchlinops as tl
    import torchlinops.functional as tlf
except ImportError as error:  # the jaxlinops-only mode (e.g. CI)
    torch = tl = tlf = None
    TORCH_MISSING = f"{type(error).__name__}: {error}"
else:
    TORCH_MISSING = None

OVERSAMP, NUFFT_WIDTH = 1.25, 4.0
INTERP_WIDTH, INTERP_BETA = 4.0, 1.0
BLOCK, STRIDE = (8, 8, 8), (4, 4, 4)
POINT_SIZES = {
    2: (((64, 64), 4096), ((128, 128), 16384), ((256, 256), 65536)),
    3: (((32,) * 3, 4096), ((64,) * 3, 32768), ((128,) * 3, 262144)),
}
BLOCK_GRIDS = ((32,) * 3, (64,) * 3, (128,) * 3)


# --------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark: an operation (`kind`), its direction and its sizes."""

    kind: str  # "NUFFT", "Interp", "ArrayToBlocks" or "BlocksToArray"
    adjoint: bool
    grid: tuple[int, ...]
    npts: int | None = None

    @property
    def name(self) -> str:
        direction = "" if self.npts is None else (" adj" if self.adjoint else " fwd")
        return f"{self.kind}{direction} {len(self.grid)}D"

    @property
    def size(self) -> str:
        grid = "x".join(map(str, self.grid))
        return grid if self.npts is None else f"{grid}, {self.npts} pts"

    @property
    def label(self) -> str:
        return f"{self.name} {self.size}"


def all_cases(quick: bool) -> list[Case]:
    """The cases in torchlinops' table order; `quick` keeps the smallest size of each."""
    keep = slice(0, 1) if quick else slice(None)
    cases = []
    for kind in ("NUFFT", "Interp"):
        for ndim in (2, 3):
            for adjoint in (False, True):
                sizes = POINT_SIZES[ndim][keep]
                cases += [Case(kind, adjoint, grid, npts) for grid, npts in sizes]
    for kind in ("ArrayToBlocks", "BlocksToArray"):
        cases += [Case(kind, kind == "BlocksToArray", grid) for grid in BLOCK_GRIDS[keep]]
    return cases


def interior_locs(rng: np.random.Generator, npts: int, grid, width: float) -> np.ndarray:
    """Points `[npts, D]` in grid units, at least `ceil(width / 2)` away from the borders
    (torchlinops' benchmark rule)."""
    margin = math.ceil(width / 2)
    low = np.full(len(grid), margin, np.float64)
    high = np.asarray(grid, np.float64) - 1 - margin
    return (low + rng.random((npts, len(grid))) * (high - low)).astype(np.float32)


@dataclasses.dataclass
class Setup:
    """What one case runs: input shape, the jaxlinops operator and the torchlinops peers."""

    in_shape: tuple[int, ...]
    jax_op: jl.NamedLinop
    torch_linop: Callable | None = None
    torch_func: Callable | None = None


def build(case: Case, rng: np.random.Generator, torch_device) -> Setup:
    """Build both libraries' operators for `case` from the same random points."""
    grid = case.grid
    if case.kind == "NUFFT":
        locs = interior_locs(rng, case.npts, grid, NUFFT_WIDTH)
        locs -= np.asarray(grid, np.float32) / 2  # cycles per FOV, in [-N/2, N/2]
        op = jl.NUFFT(locs, grid, ("K",), oversamp=OVERSAMP, width=NUFFT_WIDTH)
        setup = Setup((case.npts,) if case.adjoint else grid, op.H if case.adjoint else op)
        if torch_device is not None:
            locs_t = torch.from_numpy(locs).to(torch_device)
            lin = tl.NUFFT(locs_t, grid, ("K",), oversamp=OVERSAMP, width=NUFFT_WIDTH)
            lin = lin.to(torch_device)
            setup.torch_linop = lin.H if case.adjoint else lin
            if case.adjoint:
                setup.torch_func = lambda y: tlf.nufft_adjoint(
                    y, locs_t, grid, oversamp=OVERSAMP, width=NUFFT_WIDTH
                )
            else:
                setup.torch_func = lambda x: tlf.nufft(
                    x, locs_t, oversamp=OVERSAMP, width=NUFFT_WIDTH
                )
        return setup
    if case.kind == "Interp":
        locs = interior_locs(rng, case.npts, grid, INTERP_WIDTH)  # grid units, [0, N - 1]
        options = dict(width=INTERP_WIDTH, kernel="kaiser_bessel")
        params = {"beta": INTERP_BETA}
        op = jl.Interpolate(locs, grid, kernel_params=params, **options)
        setup = Setup((case.npts,) if case.adjoint else grid, op.H if case.adjoint else op)
        if torch_device is not None:
            locs_t = torch.from_numpy(locs).to(torch_device)
            lin = tl.Interpolate(locs_t, grid, kernel_params=dict(params), **options)
            lin = lin.to(torch_device)
            setup.torch_linop = lin.H if case.adjoint else lin
            if case.adjoint:
                setup.torch_func = lambda y: tlf.interpolate_adjoint(
                    y, locs_t, grid, kernel_params=dict(params), **options
                )
            else:
                setup.torch_func = lambda x: tlf.interpolate(
                    x, locs_t, kernel_params=dict(params), **options
                )
        return setup
    jl_cls = jl.BlocksToArray if case.adjoint else jl.ArrayToBlocks
    op = jl_cls(grid, BLOCK, STRIDE)
    nblocks = tuple((n - b) // s + 1 for n, b, s in zip(grid, BLOCK, STRIDE))
    setup = Setup(nblocks + BLOCK if case.adjoint else grid, op)
    if torch_device is not None:
        tl_cls = tl.BlocksToArray if case.adjoint else tl.ArrayToBlocks
        setup.torch_linop = tl_cls(grid, BLOCK, STRIDE).to(torch_device)
        if case.adjoint:
            setup.torch_func = lambda y: tlf.blocks_to_array(y, grid, BLOCK, STRIDE)
        else:
            setup.torch_func = lambda x: tlf.array_to_blocks(x, BLOCK, STRIDE)
    return setup


# --------------------------------------------------------------------------- timing
@dataclasses.dataclass(frozen=True)
class Budget:
    """Repetition rules: `warmup` calls, then at least `min_runs` runs and `min_time` s;
    a case whose warm-up predicts more than `cap_s` gets only `capped_runs` runs."""

    warmup: int = 3
    min_runs: int = 10
    min_time: float = 0.2
    max_runs: int = 2000
    cap_s: float = 60.0
    capped_runs: int = 3


def random_input(rng: np.random.Generator, shape) -> np.ndarray:
    pairs = rng.standard_normal((*shape, 2), dtype=np.float32)
    return pairs.view(np.complex64).reshape(shape)


def measure(call: Callable, fresh: Callable, budget: Budget) -> dict:
    """Time `call(fresh())`, the input being made (and moved) outside the timed region."""

    def once() -> float:
        x = fresh()
        start = time.perf_counter()
        call(x)
        return time.perf_counter() - start

    warm = [once() for _ in range(budget.warmup)]
    estimate = min(warm[1:] or warm)
    capped = estimate * (budget.warmup + budget.min_runs) > budget.cap_s
    if capped:
        runs = budget.capped_runs
    else:
        wanted = math.ceil(budget.min_time / max(estimate, 1e-9))
        runs = min(max(budget.min_runs, wanted), budget.max_runs)
    times = np.array([once() for _ in range(runs)]) * 1e3
    p25, median, p75 = np.percentile(times, [25, 50, 75])
    return {
        "median_ms": float(median),
        "p25_ms": float(p25),
        "p75_ms": float(p75),
        "n": runs,
        "capped": bool(capped),
        "warmup_ms": [round(t * 1e3, 3) for t in warm],
    }


def _jax_apply(op, x):
    return op(x)


def bench_jax(setup: Setup, rng, x0: np.ndarray, budget: Budget) -> tuple[dict, np.ndarray]:
    """Time the jitted jaxlinops operator; return the stats and its output for `x0`."""
    apply = jax.jit(_jax_apply)
    op = setup.jax_op
    first = jax.device_put(x0)
    start = time.perf_counter()
    apply.lower(op, first).compile()  # fills `apply`'s cache: the calls below reuse it
    compile_s = time.perf_counter() - start
    reference = np.asarray(apply(op, first).block_until_ready())

    def fresh():
        return jax.device_put(random_input(rng, setup.in_shape)).block_until_ready()

    stats = measure(lambda x: apply(op, x).block_until_ready(), fresh, budget)
    return {**stats, "compile_s": compile_s}, reference


def bench_torch(fn: Callable, in_shape, rng, x0, device, budget: Budget):
    """Time a torchlinops callable; return the stats and its output for `x0`."""
    cuda = device.type == "cuda"

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    def call(x):
        fn(x)
        sync()

    def fresh():
        x = torch.from_numpy(random_input(rng, in_shape)).to(device)
        sync()
        return x

    with torch.inference_mode():
        start = time.perf_counter()  # includes torch.compile of torchlinops' kernels
        reference = fn(torch.from_numpy(x0).to(device)).cpu().numpy()
        first_call_s = time.perf_counter() - start
        stats = measure(call, fresh, budget)
    return {**stats, "first_call_s": first_call_s}, reference


def rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    """`||a - b|| / ||b||`, or NaN when the shapes differ."""
    if a.shape != b.shape:
        return float("nan")
    a, b = a.astype(np.complex128), b.astype(np.complex128)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


def run_case(case: Case, args, budget: Budget, torch_device) -> dict:
    rng = np.random.default_rng(args.seed)
    setup = build(case, rng, torch_device)
    x0 = random_input(rng, setup.in_shape)
    result = {"case": case.name, "size": case.size}
    result["jaxlinops"], y_jax = bench_jax(setup, rng, x0, budget)
    peers = (("torchlinops_linop", setup.torch_linop), ("torchlinops_func", setup.torch_func))
    for key, fn in peers:
        if fn is None or (key == "torchlinops_func" and args.no_functional):
            continue
        stats, y_torch = bench_torch(fn, setup.in_shape, rng, x0, torch_device, budget)
        stats["rel_l2_vs_jaxlinops"] = rel_l2(y_jax, y_torch)
        result[key] = {**stats, "out_shape": list(y_torch.shape)}
    result["jaxlinops"]["out_shape"] = list(y_jax.shape)
    return result


# --------------------------------------------------------------------------- report
def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def source_state() -> dict:
    """The checkout's commit and whether `jaxlinops/` has uncommitted changes (or None)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def git(*args) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
        except OSError:
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", "jaxlinops")
    dirty = None if status is None else bool(status)
    return {"commit": git("rev-parse", "HEAD"), "jaxlinops_dirty": dirty}


def machine_info(torch_device) -> dict:
    info = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "source": source_state(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": sys.version.split()[0],
        "loadavg_start": list(os.getloadavg()),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "numpy": np.__version__,
        "equinox": _version("equinox"),
        "jaxlinops": _version("jaxlinops"),
        "torch": None if torch is None else torch.__version__,
        "torchlinops": _version("torch-named-linops"),
        "torch_missing": TORCH_MISSING,
    }
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        info["torch_device"] = None if torch_device is None else str(torch_device)
        if torch.cuda.is_available():
            info["torch_cuda_device"] = torch.cuda.get_device_name()
    return info


def _num(value: float) -> str:
    """Three significant digits without exponents (`1234.5 -> "1235"`, `0.0123 -> "0.0123"`)."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _ms(stats: dict | None) -> str:
    if stats is None:
        return "n/a"
    text = f"{_num(stats['median_ms'])} ({_num(stats['p75_ms'] - stats['p25_ms'])})"
    return text + "*" if stats["capped"] else text


def table(results: list[dict]) -> str:
    head = (
        "| case | size | jaxlinops ms (IQR) | torchlinops ms (IQR) | torchlinops func ms "
        "(IQR) | ratio tl/jl | rel. L2 diff | jax compile s |"
    )
    lines = [head, "|" + "---|" * 8]
    for r in results:
        jax_stats, linop = r["jaxlinops"], r.get("torchlinops_linop")
        ratio = "n/a" if linop is None else f"{linop['median_ms'] / jax_stats['median_ms']:.2f}"
        diff = "n/a" if linop is None else f"{linop['rel_l2_vs_jaxlinops']:.1e}"
        cells = (
            r["case"],
            r["size"],
            _ms(jax_stats),
            _ms(linop),
            _ms(r.get("torchlinops_func")),
            ratio,
            diff,
            f"{jax_stats['compile_s']:.2f}",
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smallest sizes, few runs")
    parser.add_argument("--cases", default="", help="regex on 'CASE SIZE', e.g. 'NUFFT.*2D'")
    parser.add_argument("--json", help="write machine info and per-case results here")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-torch", action="store_true", help="time jaxlinops only")
    parser.add_argument(
        "--no-functional", action="store_true", help="skip torchlinops' functional API"
    )
    parser.add_argument(
        "--torch-threads", type=int, help="torch.set_num_threads (default: torch's own)"
    )
    parser.add_argument(
        "--cap-s", type=float, default=60.0, help="cap a case predicted longer than this"
    )
    return parser.parse_args(argv)


def torch_device_for_run(args):
    """torch follows jax onto the GPU when it can; None when torchlinops is not used."""
    if torch is None or args.no_torch:
        return None
    gpu = jax.default_backend() == "gpu" and torch.cuda.is_available()
    return torch.device("cuda" if gpu else "cpu")


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.quick:
        budget = Budget(warmup=3, min_runs=5, min_time=0.05, cap_s=args.cap_s)
    else:
        budget = Budget(cap_s=args.cap_s)
    pattern = re.compile(args.cases, re.IGNORECASE)
    cases = [c for c in all_cases(args.quick) if pattern.search(c.label)]
    torch_device = torch_device_for_run(args)
    if torch_device is not None and args.torch_threads:
        torch.set_num_threads(args.torch_threads)
    info = machine_info(torch_device)
    if torch_device is None:
        reason = "--no-torch" if args.no_torch else TORCH_MISSING
        print(f"torchlinops not used ({reason}): jaxlinops times only.", file=sys.stderr)
    wall = time.perf_counter()
    results = []
    for case in cases:
        print(f"running {case.label} ...", file=sys.stderr, flush=True)
        results.append(run_case(case, args, budget, torch_device))
        gc.collect()
    info["loadavg_end"] = list(os.getloadavg())
    info["total_s"] = time.perf_counter() - wall
    versions = ", ".join(f"{k} {info[k]}" for k in ("jax", "torch", "torchlinops", "numpy"))
    print(
        f"{info['cpu_count']} CPUs, {info['platform']}, jax backend {info['jax_backend']}, "
        f"torch device {info.get('torch_device')}; {versions}; load avg "
        f"{info['loadavg_start'][0]:.1f} -> {info['loadavg_end'][0]:.1f}; jaxlinops at "
        f"{(info['source']['commit'] or '?')[:8]}"
        f"{' + local changes' if info['source']['jaxlinops_dirty'] else ''}\n"
    )
    print(table(results))
    print(
        "\nms: median (interquartile range) per call; * = capped at "
        f"{budget.capped_runs} runs (predicted over {budget.cap_s:g} s). ratio = torchlinops "
        "linop / jaxlinops (> 1: jaxlinops faster). rel. L2 diff = ||jl - tl|| / ||tl|| on "
        f"one input. Total {info['total_s']:.1f} s."
    )
    if args.json:
        budget_info = dataclasses.asdict(budget)
        record = {"machine": info, "settings": {**vars(args), **budget_info}, "results": results}
        with open(args.json, "w") as file:
            json.dump(record, file, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
