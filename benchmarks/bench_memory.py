"""Per-device memory of a batched multi-coil NUFFT SENSE operator, from XLA's own figures.

The operator is `A = NUFFT(batch C) @ Dense(coil maps)`: an `Nx x Ny` image to `C` coils of
`R` k-space points (complex64, oversamp 1.25, width 4). For the forward, adjoint and normal
(`A.N`, batched directly) it compiles, without running, one program each way and prints
`compile().memory_analysis()` per device (arguments, output, temporaries):

- `1 device`: `A` unbatched;
- `D devices`: `create_batched_linop(A, BatchSpec({"C": 1}, device_matrix=devices))`, one
  coil per device when `D == C`;
- `memory-only`: `BatchSpec({"C": 1})` on one device (coils one after another), and the
  same with readout chunks as well (`{"C": 1}` then `{"R": R // 8}`).

For an SPMD program XLA reports one device's figures. With `D` devices the coil-dependent
part (coil maps, k-space, per-coil grids) should shrink to about `1/D`, while the image,
the trajectory and a tile's working set (gridding weights of all points, one oversampled
grid) stay whole on each device (the replicated part). The script prints the ratio of
each figure to the single-device one.

Usage: `python benchmarks/bench_memory.py [--coils 8] [--n 256] [--points 65536]
[--devices 8] [--run] [--json PATH]`; `--run` also runs each program (median of 20, ms)
and prints its relative difference to the unbatched operator's output. On a CPU-only
machine it simulates `--devices` CPU devices; with one GPU, the `D devices` row is that
GPU alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import jax

try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

MiB = 2**20
FIELDS = ("arguments", "output", "temporaries", "total")


def sense(coils: int, n: int, points: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    maps = rng.standard_normal((coils, n, n)) + 1j * rng.standard_normal((coils, n, n))
    locs = rng.uniform(-n / 2, n / 2, (points, 2)).astype(np.float32)
    F = jl.NUFFT(locs, (n, n), "R", batch_shape="C", oversamp=1.25, width=4.0, backend="jax")
    return F @ jl.Dense(jnp.asarray(maps, jnp.complex64), "C Nx Ny", "Nx Ny", "C Nx Ny")


def memory(op, x, run: bool, reference=None) -> tuple[dict[str, float], jax.Array | None]:
    """XLA's per-device memory figures (MiB) for `op(x)`; with `run`, also the median time
    of 20 applications (ms) and the relative difference to `reference`."""
    compiled = jax.jit(lambda o, v: o(v)).lower(op, x).compile()
    stats = compiled.memory_analysis()
    fields = {
        "arguments": stats.argument_size_in_bytes,
        "output": stats.output_size_in_bytes,
        "temporaries": stats.temp_size_in_bytes,
    }
    out = {k: v / MiB for k, v in fields.items()}
    out["total"] = sum(out.values())
    if not run:
        return out, None
    y = compiled(op, x).block_until_ready()
    times = []
    for _ in range(20):
        start = time.perf_counter()
        compiled(op, x).block_until_ready()
        times.append(time.perf_counter() - start)
    out["ms"] = 1e3 * float(np.median(times))
    if reference is not None:
        diff = np.linalg.norm(np.asarray(y) - np.asarray(reference))
        out["rel_diff"] = float(diff / np.linalg.norm(np.asarray(reference)))
    return out, y


def main() -> None:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.splitlines()[0]
    )
    parser.add_argument("--coils", type=int, default=8, help="receive coils")
    parser.add_argument("--n", type=int, default=256, help="image size n (n x n)")
    parser.add_argument("--points", type=int, default=65536, help="k-space points")
    parser.add_argument("--devices", type=int, default=8, help="simulated devices")
    parser.add_argument("--json", help="write the figures to this file")
    parser.add_argument(
        "--run", action="store_true", help="also run each program: time and difference"
    )
    args = parser.parse_args()
    jax.config.update("jax_num_cpu_devices", args.devices)  # used where there is no GPU
    devices = jax.devices()[: args.devices]

    A = sense(args.coils, args.n, args.points)
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.standard_normal((args.n, args.n)), jnp.complex64)
    y = jnp.asarray(rng.standard_normal((args.coils, args.points)), jnp.complex64)
    specs = {
        "1 device": None,
        f"{len(devices)} devices": [jl.BatchSpec({"C": 1}, device_matrix=devices)],
        "memory-only C": [jl.BatchSpec({"C": 1})],
        "memory-only C, R/8": [jl.BatchSpec({"C": 1}), jl.BatchSpec({"R": args.points // 8})],
    }
    image = args.n * args.n * 8 / MiB
    grid = int(1.25 * args.n) ** 2 * 8 / MiB
    kspace = args.coils * args.points * 8 / MiB
    maps = args.coils * image
    locs = args.points * 2 * 4 / MiB
    print(
        f"SENSE NUFFT: {args.coils} coils, {args.n}x{args.n}, {args.points} points; "
        f"image {image:.2f} MiB, maps {maps:.2f} MiB, k-space {kspace:.2f} MiB, "
        f"oversampled grid {grid:.2f} MiB per coil, trajectory {locs:.2f} MiB; "
        f"{jax.default_backend()} ({len(devices)} devices), jax {jax.__version__}"
    )
    results = {}
    for direction in ("forward", "adjoint", "normal"):
        print(f"\n{direction}: MiB per device")
        head = f"{'':22s} {'arguments':>10s} {'output':>8s} {'temporaries':>12s} {'total':>8s}"
        print(head + (f" {'ms':>8s} {'rel. diff':>10s}" if args.run else ""))
        base = A.N if direction == "normal" else A
        reference = None
        for label, spec in specs.items():
            op = base if spec is None else jl.create_batched_linop(base, spec)
            op = op.H if direction == "adjoint" else op
            v = y if direction == "adjoint" else x
            stats, out = memory(op, v, args.run, reference)
            reference = out if reference is None else reference
            results[f"{direction}/{label}"] = stats
            line = (
                f"{label:22s} {stats['arguments']:10.2f} {stats['output']:8.2f} "
                f"{stats['temporaries']:12.2f} {stats['total']:8.2f}"
            )
            if args.run:
                line += f" {stats['ms']:8.2f} {stats.get('rel_diff', 0.0):10.1e}"
            print(line)
        one = results[f"{direction}/1 device"]
        for label in list(specs)[1:]:
            part = results[f"{direction}/{label}"]
            ratios = ", ".join(f"{k} {part[k] / one[k]:.3f}" for k in FIELDS if one[k])
            print(f"  {label} / 1 device: {ratios}")
    meta = {
        "coils": args.coils,
        "n": args.n,
        "points": args.points,
        "devices": len(devices),
        "backend": jax.default_backend(),
        "device_kind": devices[0].device_kind,
        "jax": jax.__version__,
        "python": platform.python_version(),
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
