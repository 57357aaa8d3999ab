"""The GPU benchmark: each NUFFT backend against torchlinops on CUDA and nufftax, in one run.

    python benchmarks/gpu_bench.py --json gpu.json --markdown gpu.md    # on a GPU (minutes)
    python benchmarks/gpu_bench.py --cpu                                # dry run on a CPU

`scripts/gpu_check.sh` runs it after the GPU test subset. Cases (complex64):

- `NUFFT fwd/adj` at oversampling 1.25, width 4 (torchlinops' defaults): 2-D 256² with
  65,536 points, 3-D 64³ with 32,768 and 128³ with 262,144; jaxlinops on each backend
  (`jax`, `pallas`), torchlinops, and nufftax at the largest tolerance of a ladder whose
  error is no worse than the best jaxlinops backend's (`bench_nufft_peers.match_eps`);
- `Interp fwd/adj` (Kaiser–Bessel, width 4, β = 1) at the same sizes, and `ArrayToBlocks`
  / `BlocksToArray` (blocks 8³, stride 4) on the 64³ and 128³ grids: jaxlinops against
  torchlinops;
- `CG-SENSE`: the demo's radial problem at 256², 32 coils, 75 spokes × 512 readouts
  (oversampling 2, width 6), $A^H y$ and 20 CG iterations on the Toeplitz normal, each
  NUFFT backend against torchlinops' own CG.

Columns: the median time (interquartile range) of runs taken in turns on the same fresh
inputs (`harness.time_turns`); the speed-up over torchlinops and over nufftax (their time
over the row's; above 1, the row is faster); the error: against an exact DFT on 256 points
or pixels for the NUFFT, else the relative difference from torchlinops; points per second;
and the compulsory traffic of `cases.py`'s model per second, as a share of a
device-to-device copy measured in the same run. `--cpu` runs the same code at small sizes
on the CPU (Pallas interpreted, no CUDA peers), so that CI keeps the script working.
"""

from __future__ import annotations

import argparse
import json
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
import numpy as np  # noqa: E402
from bench_nufft_peers import Direction, match_eps, nufftax_impl  # noqa: E402
from cases import (  # noqa: E402
    DEMO,
    OVERSAMP,
    WIDTH,
    Peers,
    blocks_case,
    cg_sense_case,
    interior_locs,
    interp_case,
    nufft_case,
)
from harness import (  # noqa: E402
    Budget,
    Impl,
    jax_impl,
    machine_info,
    measure_peaks,
    random_input,
    rel_l2,
    time_turns,
    torch_impl,
)

BACKENDS = ("jax", "pallas")
SIZES = (((256, 256), 65536), ((64,) * 3, 32768), ((128,) * 3, 262144))
BLOCK_GRIDS = ((64,) * 3, (128,) * 3)
CG = {**DEMO, "n": 256, "coils": 32, "spokes": 75, "readouts": 512}
DRY = dict(  # --cpu: the same cases, small
    sizes=(((32, 32), 512), ((16,) * 3, 1024)),
    block_grids=((16,) * 3,),
    cg={**DEMO, "n": 32, "coils": 4, "spokes": 8, "readouts": 64, "iters": 3},
)
GPU_BUDGET = Budget(warmup=2, min_runs=10)
DRY_BUDGET = Budget(warmup=1, min_runs=3)
TARGETS = (
    "NUFFT: best backend >= 3x torchlinops and >= 1x nufftax at every size; "
    "3-D 128³ forward <= 0.5 ms; Interp and blocks >= 2x torchlinops"
)


def _apply(op, x):
    return op(x)


def load_peers(gpu: bool) -> tuple[Peers, object]:
    """torchlinops (on CUDA when `gpu`) and nufftax, each None when not importable."""
    peers = Peers.load({"torchlinops"}, gpu)
    try:
        import nufftax
    except ImportError:
        nufftax = None
    return peers, nufftax


# --------------------------------------------------------------------------- rows
class Rows:
    """The rows of the report, timed case by case against a deadline."""

    def __init__(self, budget: Budget, copy_gbps: float, deadline: float):
        self.budget, self.copy_gbps, self.deadline = budget, copy_gbps, deadline
        self.rows: list[dict] = []
        self.skipped: list[str] = []

    def late(self, label: str) -> bool:
        """Past the deadline: `label` is listed as not run."""
        if time.perf_counter() > self.deadline:
            self.skipped.append(label)
            return True
        print(f"running {label} ...", file=sys.stderr, flush=True)
        return False

    def add(self, case, label: str, impls: dict, shape, errors: dict, points: int, settings):
        """Time `impls` (name -> Impl) in turns and record one row each."""
        rng = np.random.default_rng(1)
        names = list(impls)
        timings = time_turns([impls[n] for n in names], rng, shape, np.complex64, self.budget)
        by_name = dict(zip(names, timings))
        for name in names:
            ms = by_name[name]["median_ms"]
            gbps = case.bytes / (ms * 1e-3) / 1e9
            row = {
                "case": label,
                "impl": name,
                "settings": settings.get(name, ""),
                "timing": by_name[name],
                "error": errors.get(name),
                "pts_per_s": points / (ms * 1e-3) if points else None,
                "GBps": gbps,
                "copy_fraction": gbps / self.copy_gbps,
            }
            for peer in ("torchlinops", "nufftax"):
                if peer in by_name and name != peer:
                    row[f"x_{peer}"] = by_name[peer]["median_ms"] / ms
            self.rows.append(row)


def nufft_rows(rows: Rows, grid, npts: int, adjoint: bool, peers: Peers, nufftax) -> None:
    case = nufft_case(grid, npts, adjoint, 6e-3)
    label = f"NUFFT {'adj' if adjoint else 'fwd'} {case.size}"
    if rows.late(label):
        return
    rng = np.random.default_rng(0)
    locs = interior_locs(rng, npts, grid, WIDTH) - np.asarray(grid, np.float32) / 2
    direction = Direction(rng, locs, grid, adjoint)
    impls: dict[str, Impl] = {}
    settings = {}
    for backend in BACKENDS:
        op = jl.NUFFT(locs, grid, ("K",), oversamp=OVERSAMP, width=WIDTH, backend=backend)
        impls[f"jaxlinops {backend}"] = jax_impl(_apply, op.H if adjoint else op)
        settings[f"jaxlinops {backend}"] = f"os {OVERSAMP:g}, w {WIDTH:g}"
    if peers.torchlinops is not None:
        lin = peers.torchlinops.NUFFT(
            peers.tensor(locs), grid, ("K",), oversamp=OVERSAMP, width=WIDTH
        ).to(peers.torch_device)
        impls["torchlinops"] = torch_impl(lin.H if adjoint else lin, peers.torch_device)
        settings["torchlinops"] = f"os {OVERSAMP:g}, w {WIDTH:g}"
    errors = {name: direction.error(impl) for name, impl in impls.items()}
    if nufftax is not None:
        angles = tuple(
            np.ascontiguousarray(2 * np.pi * locs[:, d] / n, np.float32) for d, n in enumerate(grid)
        )
        target = min(errors[f"jaxlinops {b}"] for b in BACKENDS)
        make = lambda eps: nufftax_impl(nufftax, angles, grid, adjoint, eps)  # noqa: E731
        found = match_eps(make, direction, target, {})
        if found is None:
            print(f"notice: nufftax reaches no error <= {target:.1e}", file=sys.stderr)
        else:
            eps, impl, error = found
            impls["nufftax"], errors["nufftax"], settings["nufftax"] = impl, error, f"eps {eps:g}"
    shape = (npts,) if adjoint else grid
    rows.add(case, label, impls, shape, errors, npts, settings)


def peer_rows(rows: Rows, case, peers: Peers, points: int, extra: dict | None = None) -> None:
    """A case of `cases.py` (jaxlinops first, torchlinops as the peer), with more jaxlinops
    implementations from `extra` (name -> Case built the same way without peers); the
    error column is each row's relative difference from torchlinops."""
    if rows.late(case.label):
        return
    rng = np.random.default_rng(0)
    built, shape, _ = case.build(rng, peers)
    impls = {f"jaxlinops{'' if not extra else ' jax'}": built.pop("jaxlinops")}
    for name, other in (extra or {}).items():
        impls[name] = other.build(np.random.default_rng(0), Peers())[0]["jaxlinops"]
    impls |= built
    x0 = random_input(np.random.default_rng(2), shape)
    outputs = {name: impl.read(impl.call(impl.fresh(x0))) for name, impl in impls.items()}
    errors = {}
    if "torchlinops" in outputs:
        errors = {n: rel_l2(y, outputs["torchlinops"]) for n, y in outputs.items()}
        errors.pop("torchlinops")
    rows.add(case, case.label, impls, shape, errors, points, {})


# --------------------------------------------------------------------------- report
def _fmt(value, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def markdown(record: dict) -> str:
    m = record["machine"]
    lines = [
        f"# GPU check: {m['device_kind']} ({m['jax_backend']}), {m['date']}",
        "",
        f"jax {m['jax']}, torch {m['torch']}, torchlinops {m['torch-named-linops']}, "
        f"nufftax {m['nufftax']}; commit {m['commit']}; {m['total_s']:.0f} s in all.",
        f"Device-to-device copy (jax, complex64, read + write): {m['peaks']['copy_GBps']:.0f} "
        "GB/s.",
        "",
    ]
    tests = record.get("tests")
    if tests:
        lines += [
            f"Tests on this device: {tests['passed']} passed, {tests['failed']} failed, "
            f"{tests['errors']} errors, {tests['skipped']} skipped ({tests['time_s']:.0f} s).",
        ]
        lines += [f"- FAILED {name}" for name in tests["failures"]]
        lines.append("")
    lines += [
        "| case | implementation | settings | ms median (IQR) | × torchlinops | × nufftax "
        "| rel. error | points/s | GB/s (% copy) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in record["rows"]:
        t = r["timing"]
        lines.append(
            f"| {r['case']} | {r['impl']} | {r['settings']} | {t['median_ms']:.3f} "
            f"({t['p25_ms']:.3f}-{t['p75_ms']:.3f}) | {_fmt(r.get('x_torchlinops'), '.2f')} "
            f"| {_fmt(r.get('x_nufftax'), '.2f')} | {_fmt(r['error'], '.1e')} "
            f"| {_fmt(r['pts_per_s'], '.2e')} | {r['GBps']:.0f} ({100 * r['copy_fraction']:.1f}%) |"
        )
    lines += [
        "",
        "rel. error: NUFFT rows against an exact DFT on 256 points (fwd) or pixels (adj); "
        "other rows, the difference from torchlinops.",
        f"Targets: {TARGETS}.",
    ]
    if record["skipped"]:
        lines.append(f"Not run (past the deadline): {', '.join(record['skipped'])}.")
    return "\n".join(lines) + "\n"


def junit_summary(path: str) -> dict:
    """Counts and failed test ids from pytest's JUnit XML."""
    import xml.etree.ElementTree as ET

    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    out = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "time_s": 0.0, "failures": []}
    for suite in suites:
        out["time_s"] += float(suite.get("time", 0))
        for case in suite.iter("testcase"):
            outcome = {child.tag for child in case}
            name = f"{case.get('classname')}::{case.get('name')}"
            if "failure" in outcome or "error" in outcome:
                out["failed" if "failure" in outcome else "errors"] += 1
                out["failures"].append(name)
            elif "skipped" in outcome:
                out["skipped"] += 1
            else:
                out["passed"] += 1
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="dry run: small sizes on the CPU")
    parser.add_argument("--deadline-s", type=float, default=300.0, help="skip cases after this")
    parser.add_argument("--junit", help="pytest's JUnit XML of the GPU tests, for the summary")
    parser.add_argument("--json", help="write the record here")
    parser.add_argument("--markdown", help="write the table here")
    args = parser.parse_args(argv)
    gpu = jax.default_backend() == "gpu"
    if not gpu and not args.cpu:
        parser.error("jax has no GPU backend here; use --cpu for a dry run.")
    start = time.perf_counter()
    sizes, grids, cg = (SIZES, BLOCK_GRIDS, CG) if gpu else tuple(DRY.values())
    peers, nufftax = load_peers(gpu)
    machine = machine_info() | {"nufftax": getattr(nufftax, "__version__", None)}
    machine["peaks"] = measure_peaks(quick=not gpu)
    rows = Rows(GPU_BUDGET if gpu else DRY_BUDGET, machine["peaks"]["copy_GBps"],
                start + args.deadline_s)  # fmt: skip
    for grid, npts in sizes:
        for adjoint in (False, True):
            nufft_rows(rows, grid, npts, adjoint, peers, nufftax)
    extra = {"jaxlinops pallas": cg_sense_case(cg, backend="pallas")}
    peer_rows(rows, cg_sense_case(cg), peers, 0, extra)
    for grid, npts in sizes:
        for adjoint in (False, True):
            peer_rows(rows, interp_case(grid, npts, adjoint), peers, npts)
    for grid in grids:
        for to_array in (False, True):
            peer_rows(rows, blocks_case(grid, to_array), peers, 0)
    machine["total_s"] = time.perf_counter() - start
    record = {"machine": machine, "rows": rows.rows, "skipped": rows.skipped}
    if args.junit and os.path.exists(args.junit):
        record["tests"] = junit_summary(args.junit)
    text = markdown(record)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1, default=str)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
