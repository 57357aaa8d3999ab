r"""Scaling with the device count: per-device memory, bytes communicated and a cost model.

    python benchmarks/scaling.py                  # 1, 2, 4, 8 simulated CPU devices, ~5 min
    python benchmarks/scaling.py --quick          # tiny sizes (compiling dominates: ~1 min)
    python benchmarks/scaling.py --json out.json  # also write the figures

Two problems, each split for each device count $D$ (`device_matrix=jax.devices()[:D]`):

1. **3-D Cartesian CG-SENSE**: $A$ = mask @ centered 3-D FFT @ coil maps, `(Nx, Ny, Nz) ->
   (C, Kx, Ky, Kz)`, complex64, and a few CG iterations on $A^H A + \lambda I$ under `jit`.
   Split by coils, `BatchSpec({"C": ceil(C / D)})` (one group of coils per device, so that
   no device loops over its coils: a loop would save memory by time-slicing, which a grid
   split could do as well), and by the grid, `BatchSpec({"Nx": ceil(Nx / D)})` (slabs of
   `Nx`, the FFTs distributed). *Strong scaling*: the same `n x n x n` problem on every
   $D$. *Weak scaling*: the grid grows along the split dim, `(D s) x n x n` with a fixed
   slab `s`, so each device of a grid split holds exactly the same slab whatever $D$ (a
   cube $N^3$ with $N^3 / D$ constant would need sizes that are not integers); the coil
   split runs the same growing problem.
2. **SENSE NUFFT** (8 coils; radial 2-D, 256², 64 spokes × 512 readouts, and 3-D, 32³ at
   16,384 random points; `backend="jax"`, Toeplitz normal): forward, adjoint and normal,
   split by coils (`{"C": 1}`) and by the grid (`{"Nx": ...}`: the points bucketed by
   slab). After each, the issue's targets at the largest device count: the grid-split
   Toeplitz normal's peak per device over one device's, and the grid split's time per
   point over the coil split's.

Each compiled program gives:

- XLA's memory per device (`memory_analysis()`: arguments + output + temporaries = the
  peak), and its ratio to the unsplit operator's;
- the bytes each device sends per application, read from the collectives of the compiled
  HLO (`jaxlinops.sharding._hlo.collective_bytes`). In the CG program the loop body holds
  one iteration and is counted once, and CG with no `x0` applies the operator only in the
  loop: its figure is the bytes per CG iteration. Beside it, what the method implies:
  a grid split's normal runs the FFT stages of $A$ and of $A^H$, each a slab transpose
  (one `all_to_all`) in which a device keeps $1/D$ of its block and sends the rest,
  $(D-1)/D$ of its block; a coil split's normal sums the coil groups' images, one ring
  all-reduce of the image, $2 (D-1)/D$ of it. (CG's inner products add a few scalars.)
- the median time per application. On simulated CPU devices, which share the same cores,
  it shows overheads, not speed-ups; on GPUs it is the absolute time.
- A grid split that `create_batched_linop` refuses (a coupling it does not cover yet)
  prints `refused: <message>` in its row: the rows fill in as coverage grows.

The **cost model** projects the CG iteration on $D$ GPUs: the time on one device over $D$
(over $\min(D, C)$ for a coil split: there are only $C$ coils to share) plus the method's
collective bytes over the link bandwidth (`comm_seconds`: NVLink inside a node of 8 GPUs,
InfiniBand between nodes), for 8 GPUs in one node and for 2 and 4 nodes. The time on one
device is this machine's measured CPU time, and an H100's: measured where a
`results/scaling-h100-*.json` of this problem exists, else estimated from the H100 peaks
that `suite.py` measured (`results/suite-h100-*.json`): the FFT flops at its measured FFT
rate plus the other bytes at its measured copy bandwidth.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import sys
import time

# simulated devices share the cores: on a loaded machine one device's thread can reach a
# collective after XLA's default wait (40 s), which aborts the process
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_cpu_collective_call_terminate_timeout_seconds=600"
)

import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from cases import fft_flops  # noqa: E402
from harness import machine_info  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

from jaxlinops.demo import radial_trajectory  # noqa: E402
from jaxlinops.sharding._hlo import collective_bytes  # noqa: E402

MiB = 2**20
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
GRID, KSPACE = ("Nx", "Ny", "Nz"), ("Kx", "Ky", "Kz")
COMPLEX64 = 8  # bytes per entry
LAMBDA = 1e-2

# Link bandwidths per GPU and direction, from the data sheets:
# - NVLink 4 on H100 SXM5: 900 GB/s total per GPU (18 links), 450 GB/s each way (NVIDIA
#   H100 Tensor Core GPU data sheet; DGX H100: all 8 GPUs of a node through NVSwitch);
# - InfiniBand NDR: 400 Gb/s = 50 GB/s each way per port (NVIDIA ConnectX-7 / Quantum-2
#   data sheets; a DGX H100 has one 400 Gb/s port per GPU).
NVLINK_BPS = 450e9
INFINIBAND_BPS = 50e9
GPUS_PER_NODE = 8
LAYOUTS = ((1, "1 GPU"), (8, "1 node"), (16, "2 nodes"), (32, "4 nodes"))


# --------------------------------------------------------------------------- measuring
def compile_stats(fn, *args, devices: int):
    """`fn` compiled for `args`: the program, its per-device memory and bytes sent."""
    compiled = jax.jit(fn).lower(*args).compile()
    stats = compiled.memory_analysis()
    comm = collective_bytes(compiled.as_text(), devices)
    memory = {
        "arguments_MiB": stats.argument_size_in_bytes / MiB,
        "output_MiB": stats.output_size_in_bytes / MiB,
        "temporaries_MiB": stats.temp_size_in_bytes / MiB,
    }
    memory["peak_MiB"] = sum(memory.values())
    return compiled, memory, comm


def median_seconds(compiled, args, runs: int) -> float:
    jax.block_until_ready(compiled(*args))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def devices_of(op) -> int:
    return len(op.mesh.devices.flat) if getattr(op, "mesh", None) is not None else 1


def measure(op, x, runs: int) -> dict:
    compiled, memory, comm = compile_stats(lambda o, v: o(v), op, x, devices=devices_of(op))
    return {
        **memory,
        "communicated_MiB": sum(comm.values()) / MiB,
        "collectives": comm,
        "median_ms": 1e3 * median_seconds(compiled, (op, x), runs),
    }


def split(A, how: str, count: int, devices):
    """`A` split across `count` devices: by coil groups, by slabs of `Nx`, or by pencils of
    `Nx` and `Ny` on a 2 x (count / 2) mesh (a ValueError where the split is refused);
    "none": `A` itself."""
    if how == "none":
        return A
    if how == "pencil":
        shape = (2, count // 2)
        tiles = {d: -(-A.size(d) // m) for d, m in zip(GRID, shape)}
        matrix = np.array(devices[:count]).reshape(shape)
        return jl.create_batched_linop(A, jl.BatchSpec(tiles, device_matrix=matrix))
    dim = "C" if how == "coils" else "Nx"
    spec = jl.BatchSpec({dim: -(-A.size(dim) // count)}, device_matrix=devices[:count])
    return jl.create_batched_linop(A, spec)


def hows(count: int, pencils: bool = True) -> tuple[str, ...]:
    """The splits measured on `count` devices: pencils from 4 devices (2 x count / 2)."""
    return ("coils", "grid") + (("pencil",) if pencils and count >= 4 else ())


# --------------------------------------------------------------------------- CG-SENSE
def cartesian_sense(rng, coils: int, shape: tuple[int, ...]):
    """mask @ centered 3-D FFT @ coil maps: (Nx, Ny, Nz) -> (C, Kx, Ky, Kz), complex64."""
    maps = maps_op(rng, coils, shape)
    mask = jnp.asarray(rng.random(shape) < 0.3, jnp.float32)
    return jl.Diagonal(mask, ("C", *KSPACE), "C") @ jl.FFT(3, "C", centered=True) @ maps


def maps_op(rng, coils: int, shape: tuple[int, ...]):
    """Random coil maps normalised to a sum of squares of 1: `(N...) -> (C, N...)`."""
    maps = rng.standard_normal((coils, *shape)) + 1j * rng.standard_normal((coils, *shape))
    maps = (maps / np.sqrt(np.sum(np.abs(maps) ** 2, axis=0))).astype(np.complex64)
    grid = GRID[: len(shape)]
    return jl.Dense(maps, ("C", *grid), grid, ("C", *grid))


def fft_stages(op) -> int:
    """The distributed FFTs (slab transposes) in the program of a grid-split operator `op`
    (a `GridSplitLinop`, or a chain of them such as its normal)."""
    parts = op.flatten() if hasattr(op, "flatten") else (op,)
    return sum(hasattr(s, "fft") for part in parts for s in getattr(part, "stages", ()))


def method_bytes(how: str, count: int, coils: int, shape, transposes: int) -> float:
    """Bytes each device sends per normal application, as the method implies: a slab
    transpose sends $(D-1)/D$ of the device's block of coil images; a pencil FFT transposes
    along each mesh axis ($D_1 \\times D_2$), $(D_k-1)/D_k$ of the block each; a coil split
    all-reduces the image (a ring: $2 (D-1)/D$ of it)."""
    image = math.prod(shape) * COMPLEX64
    if how == "grid":
        return transposes * (count - 1) / count * coils * image / count
    if how == "pencil":
        share = sum((m - 1) / m for m in (2, count // 2))
        return transposes * share * coils * image / count
    if how == "coils":
        groups = min(count, coils)  # devices beyond the coil count get no coil
        return 2 * (groups - 1) / groups * image
    return 0.0


def cg_row(A, how: str, count: int, devices, iters: int, runs: int) -> dict:
    """Per-device memory, bytes and times of the normal and of `iters` CG iterations."""
    try:
        B = split(A, how, count, devices)
    except ValueError as error:
        return {"refused": str(error)}
    N = B.N + LAMBDA * jl.Identity(GRID, B.N.oshape)
    shape = tuple(A.size(d) for d in GRID)
    y = jnp.asarray(np.random.default_rng(1).standard_normal(shape), jnp.complex64)
    if how in ("grid", "pencil"):  # the right-hand side (so every CG vector) split so too
        y = jax.device_put(y, NamedSharding(B.mesh, PartitionSpec(*B.names)))

    def solve(N, y):
        return jl.alg.conjugate_gradients(N, y, max_num_iters=iters, disable_tracking=True)

    normal, _, comm_normal = compile_stats(lambda N, v: N(v), N, y, devices=count)
    cg, memory, comm_cg = compile_stats(solve, N, y, devices=count)
    coils = A.size("C")
    transposes = fft_stages(B.N) if how in ("grid", "pencil") else 0
    return {
        **memory,
        "comm_per_iteration_MiB": sum(comm_cg.values()) / MiB,
        "comm_per_normal_MiB": sum(comm_normal.values()) / MiB,
        "collectives_per_iteration": comm_cg,
        "fft_stages": transposes,
        "method_MiB": method_bytes(how, count, coils, shape, transposes) / MiB,
        "normal_ms": 1e3 * median_seconds(normal, (N, y), runs),
        "iteration_ms": 1e3 * median_seconds(cg, (N, y), runs) / iters,
    }


# two tables of 8 columns for each scaling (one of 13 ran off the page)
CG_HEADS = (
    "| split | D | grid | args MiB | out MiB | temp MiB | peak MiB | / unsplit |\n"
    "|---|---|---|---|---|---|---|---|",
    "| split | D | grid | comm MiB/it | method MiB | ratio | ms/normal | ms/CG it |\n"
    "|---|---|---|---|---|---|---|---|",
)


def cg_lines(how: str, count: int, shape, row: dict, unsplit_peak: float) -> tuple[str, str]:
    """The row of each of the two tables (`CG_HEADS`): memory, then collectives and time."""
    start = f"| {how} | {count} | {'x'.join(map(str, shape))} |"
    if "refused" in row:
        return (f"{start} refused: {row['refused']} |",) * 2
    model = row["method_MiB"]
    ratio = f"{row['comm_per_iteration_MiB'] / model:.3f}" if model else "—"
    return (
        f"{start} {row['arguments_MiB']:.2f} | {row['output_MiB']:.2f} | "
        f"{row['temporaries_MiB']:.2f} | {row['peak_MiB']:.2f} | "
        f"{row['peak_MiB'] / unsplit_peak:.3f} |",
        f"{start} {row['comm_per_iteration_MiB']:.3f} | {model:.3f} | {ratio} | "
        f"{row['normal_ms']:.1f} | {row['iteration_ms']:.1f} |",
    )


def cg_sense(args, counts, devices) -> dict:
    """The strong and weak scaling tables of the 3-D CG-SENSE."""
    rng = np.random.default_rng(0)
    n, coils = args.n3, args.coils
    problems = {
        "strong": [(count, (n, n, n)) for count in counts],
        "weak": [(count, (args.slab * count, n, n)) for count in counts],
    }
    print(f"\n3-D Cartesian CG-SENSE, {coils} coils, complex64, normal A^H A + {LAMBDA} I, "
          f"{args.iters} CG iterations under jit")  # fmt: skip
    results, unsplit = {}, {}
    for scaling, sizes in problems.items():
        what = (
            "n x n x n, the same on every D"
            if scaling == "strong"
            else (f"({args.slab} D) x {n} x {n}: one {args.slab}-entry slab of Nx per device")
        )
        tables: tuple[list, list] = ([], [])
        for count, shape in sizes:
            if shape not in unsplit:  # the operator and its unsplit figures, once per size
                A = cartesian_sense(rng, coils, shape)
                unsplit[shape] = A, cg_row(A, "none", 1, devices, args.iters, args.runs)
            A, base = unsplit[shape]
            results[f"{scaling}/none/{count}"] = {"shape": shape, **base}
            rows = [("none", 1, base)] if count == 1 or scaling == "weak" else []
            for how in hows(count):
                row = cg_row(A, how, count, devices, args.iters, args.runs)
                results[f"{scaling}/{how}/{count}"] = {"shape": shape, **row}
                rows.append((how, count, row))
            for how, d, row in rows:
                for table, line in zip(tables, cg_lines(how, d, shape, row, base["peak_MiB"])):
                    table.append(line)
        titles = ("memory per device", "collectives and time")
        for title, head, table in zip(titles, CG_HEADS, tables):
            print(f"\n{scaling} scaling ({what}): {title}\n\n{head}")
            print("\n".join(table), flush=True)
    return results


# --------------------------------------------------------------------------- cost model
def comm_seconds(how: str, count: int, coils: int, shape, transposes: int) -> float:
    """The collective time per CG iteration on `count` GPUs, `GPUS_PER_NODE` to a node.

    Grid (all-to-all): each device sends $1/D$ of its block to every peer, over NVLink to
    the peers of its node and over InfiniBand to the others. Coils (all-reduce of the image
    $S$): hierarchical, as NCCL does across nodes: within the node a ring,
    $2 (G-1)/G \\cdot S$ over NVLink; across the $M$ nodes a ring on each GPU's $1/G$ share,
    $2 (M-1)/M \\cdot S/G$ over InfiniBand."""
    if how == "coils":
        count = min(count, coils)  # devices beyond the coil count get no coil
    if count == 1:
        return 0.0
    image = math.prod(shape) * COMPLEX64
    local = min(count, GPUS_PER_NODE)
    if how == "grid":
        piece = coils * image / count / count  # what a device sends to each peer
        on_node, off_node = (local - 1) * piece, (count - local) * piece
        return transposes * (on_node / NVLINK_BPS + off_node / INFINIBAND_BPS)
    nodes = count // local
    inside = 2 * (local - 1) / local * image / NVLINK_BPS
    return inside + 2 * (nodes - 1) / nodes * image / local / INFINIBAND_BPS


def project(one_device_s: float, how: str, count: int, coils: int, shape, transposes: int):
    """(compute, communication) seconds of a CG iteration on `count` GPUs: the one-device
    time shared by the devices that have work (a coil split: at most one per coil)."""
    workers = min(count, coils) if how == "coils" else min(count, shape[0])
    return one_device_s / workers, comm_seconds(how, count, coils, shape, transposes)


def h100_iteration_seconds(coils: int, shape) -> tuple[float | None, str]:
    """An H100's time per CG iteration of this problem: measured where a
    `results/scaling-h100-*.json` has it, else estimated from `suite.py`'s H100 peaks."""
    for path in sorted(glob.glob(os.path.join(RESULTS, "scaling-h100-*.json"))):
        with open(path) as f:
            record = json.load(f)
        row = record.get("results", {}).get("strong/none/1", {})
        if (
            row.get("shape")
            and tuple(row["shape"]) == tuple(shape)
            and record.get("settings", {}).get("coils") == coils
        ):
            return row["iteration_ms"] / 1e3, f"measured ({os.path.basename(path)})"
    suites = sorted(glob.glob(os.path.join(RESULTS, "suite-h100-*.json")))
    if not suites:
        return None, "no H100 figure in benchmarks/results"
    with open(suites[-1]) as f:
        peaks = json.load(f)["machine"]["peaks"]
    points = math.prod(shape)
    # two FFT stacks (A and A^H) at the measured FFT rate; the maps read twice, the mask
    # and ~6 CG vectors read or written once, at the measured copy bandwidth
    flops = 2 * coils * fft_flops(points)
    other = (2 * coils + 1 + 6) * points * COMPLEX64
    seconds = flops / (peaks["fft_GFLOPps"] * 1e9) + other / (peaks["copy_GBps"] * 1e9)
    return seconds, f"estimated from the peaks of {os.path.basename(suites[-1])}"


def cost_model(args, cg: dict) -> dict:
    """The projection table: for each one-device time, split and GPU layout."""
    coils, n = args.coils, args.n3
    strong = (n, n, n)
    # the grid split's slab transposes per normal (as counted in its program; else the
    # FFT of A and that of A^H)
    stages = [row.get("fft_stages") for key, row in cg.items() if key.startswith("strong/grid")]
    transposes = next((s for s in stages if s), 2)
    cpu_s = cg["strong/none/1"]["iteration_ms"] / 1e3
    h100_s, h100_source = h100_iteration_seconds(coils, strong)
    large = (args.large, args.large, args.large)
    h100_large_s, _ = h100_iteration_seconds(coils, large)
    cases = [(f"{n}^3 CPU", strong, cpu_s), (f"{n}^3 H100", strong, h100_s),
             (f"{args.large}^3 H100", large, h100_large_s)]  # fmt: skip
    print("\nCost model: a CG iteration on D GPUs = one-device time / D (coils: / min(D, C)) "
          "+ collective bytes (the method's) / link bandwidth;\n"
          f"NVLink 4 {NVLINK_BPS / 1e9:.0f} GB/s and InfiniBand NDR {INFINIBAND_BPS / 1e9:.0f} "
          f"GB/s per GPU and direction (data sheets), {GPUS_PER_NODE} GPUs per node.\n"
          f"One-device times: CPU measured (the unsplit row); H100 {h100_source}.\n\n"
          "| one-device time | split | GPUs | compute ms | comm ms | total ms | speed-up |\n"
          "|---|---|---|---|---|---|---|")  # fmt: skip
    rows = {}
    for label, shape, one_s in cases:
        if one_s is None:
            print(f"| {label} | no figure | | | | | |")
            continue
        for how in ("coils", "grid"):
            for count, layout in LAYOUTS:
                compute, comm = project(one_s, how, count, coils, shape, transposes)
                total = compute + comm
                ms = {"compute_ms": 1e3 * compute, "comm_ms": 1e3 * comm, "total_ms": 1e3 * total}
                rows[f"{label}/{how}/{count}"] = ms
                print(f"| {label} | {how} | {count} ({layout}) | {1e3 * compute:.3f} | "
                      f"{1e3 * comm:.3f} | {1e3 * total:.3f} | {one_s / total:.1f} |")  # fmt: skip
    return {"h100_source": h100_source, "rows": rows}


# --------------------------------------------------------------------------- NUFFT
def nufft_sense(args, counts, devices) -> dict:
    """The radial 2-D SENSE NUFFT and a 3-D one (random points), each split by coils and
    by the grid: the tables, and the targets' figures at the largest device count."""
    rng = np.random.default_rng(0)
    n, coils = args.n, args.coils
    radial = radial_trajectory(n, args.spokes, 2 * n)
    m = args.n3nufft
    points = rng.uniform(-m / 2, m / 2, (args.points3, 3)).astype(np.float32)
    cases = {
        "2d": (radial, (n, n), "S R", dict(oversamp=2.0, width=6.0)),
        "3d": (points, (m, m, m), "R", {}),
    }
    results = {}
    for name, (locs, grid, dims, options) in cases.items():
        F = jl.NUFFT(locs, grid, dims, batch_shape="C", backend="jax", toeplitz=True, **options)
        A = F @ maps_op(rng, coils, grid)
        image = np.asarray(rng.standard_normal(grid), np.complex64)
        where = "x".join(map(str, grid))
        print(f"\n{name.upper()} SENSE NUFFT, {coils} coils, {where}, "
              f"{math.prod(locs.shape[:-1])} points, Toeplitz normal")  # fmt: skip
        results[name] = nufft_rows(A, image, counts, devices, args.runs, len(grid) == 3)
        print(f"\n{nufft_targets(results[name], max(counts))}")  # a list after the table
    return results


def nufft_rows(A, image, counts, devices, runs: int, pencils: bool) -> dict:
    """Forward, adjoint and normal of `A`: unsplit, and split by coils and by the grid
    (with `pencils`, by pencils too) at each count."""
    head = ("| direction | split | D | args MiB | out MiB | temp MiB | comm MiB | ms |\n"
            "|---|---|---|---|---|---|---|---|")  # fmt: skip
    kspace = np.asarray(A(image))
    results = {}
    for direction in ("forward", "adjoint", "normal"):
        base = {"forward": A, "adjoint": A.H, "normal": A.N}[direction]
        x = kspace if direction == "adjoint" else image
        print(f"\n{head}")
        for how in ("none", "coils", "grid", "pencil"):
            refused = None
            for count in [1] if how == "none" else [c for c in counts if how in hows(c, pencils)]:
                prefix = f"| {direction} | {how} | {count} |"
                if how == "none":
                    op = base
                elif how == "coils":  # one coil per tile: a device loops over its coils
                    spec = jl.BatchSpec({"C": 1}, device_matrix=devices[:count])
                    op = jl.create_batched_linop(base, spec)
                else:
                    try:
                        op = split(base, how, count, devices)
                    except ValueError as error:
                        results[f"{direction}/{how}/{count}"] = {"refused": str(error)}
                        same = str(error) == refused
                        print(f"{prefix} refused{' (as above)' if same else f': {error}'} |")
                        refused = str(error)
                        continue
                row = measure(op, x, runs)
                results[f"{direction}/{how}/{count}"] = row
                print(f"{prefix} {row['arguments_MiB']:.2f} | {row['output_MiB']:.2f} | "
                      f"{row['temporaries_MiB']:.2f} | {row['communicated_MiB']:.3f} | "
                      f"{row['median_ms']:.2f} |", flush=True)  # fmt: skip
    return results


def nufft_targets(rows: dict, count: int) -> str:
    """The issue's targets at `count` devices, for the slab (grid) and pencil splits: the
    split normal's peak per device over the unsplit operator's (target <= 0.2), and the
    split's time per application over the coil split's (the same points: the ratio per
    point; target <= 1.5)."""
    lines, one = [], rows.get("normal/none/1", {})
    for how in ("grid", "pencil"):
        normal = rows.get(f"normal/{how}/{count}", {})
        if "peak_MiB" in one and "peak_MiB" in normal:
            ratio = normal["peak_MiB"] / one["peak_MiB"]
            lines.append(
                f"Toeplitz normal, {how} split over {count}: peak {ratio:.3f} of one device"
            )
        for direction in ("forward", "adjoint", "normal"):
            split, coils = (
                rows.get(f"{direction}/{how}/{count}"),
                rows.get(f"{direction}/coils/{count}"),
            )
            if split and coils and "median_ms" in split and "median_ms" in coils:
                ratio = split["median_ms"] / coils["median_ms"]
                lines.append(
                    f"{direction}: {how} / coil split time per point at D={count}: {ratio:.2f}"
                )
    return "\n".join(f"- {line}" for line in lines)


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--counts", help="device counts (default 1,2,4,8; --quick: 1,8)")
    parser.add_argument("--n3", type=int, default=48, help="CG-SENSE grid n (n x n x n)")
    parser.add_argument("--slab", type=int, default=24, help="weak scaling: Nx per device")
    parser.add_argument("--large", type=int, default=256, help="cost model: a larger n")
    parser.add_argument("--iters", type=int, default=5, help="CG iterations")
    parser.add_argument("--n", type=int, default=256, help="NUFFT image size n (n x n)")
    parser.add_argument("--spokes", type=int, default=64, help="NUFFT spokes")
    parser.add_argument("--coils", type=int, default=8, help="receive coils")
    parser.add_argument("--n3nufft", type=int, default=32, help="3-D NUFFT grid n (n x n x n)")
    parser.add_argument("--points3", type=int, default=16384, help="3-D NUFFT points")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per row")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 and 8 devices")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    if args.quick:
        args.n3, args.slab, args.large, args.iters = 16, 8, 64, 2
        args.n, args.spokes, args.coils, args.runs = 32, 8, 4, 1
        args.n3nufft, args.points3 = 16, 1024
    counts = [int(c) for c in (args.counts or ("1,8" if args.quick else "1,2,4,8")).split(",")]
    jax.config.update("jax_num_cpu_devices", max(counts))  # used where there is no GPU
    devices = jax.devices()
    counts = [c for c in counts if c <= len(devices)]
    print(f"{jax.default_backend()} ({devices[0].device_kind}), {len(devices)} devices, "
          f"{os.cpu_count()} cores")  # fmt: skip

    cg = cg_sense(args, counts, devices)
    model = cost_model(args, cg) if "strong/none/1" in cg else {}
    nufft = nufft_sense(args, counts, devices)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "settings": vars(args), "cg_sense": cg,
                       "cost_model": model, "nufft": nufft}, f, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
