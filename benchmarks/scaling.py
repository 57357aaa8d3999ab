"""Scaling with the device count: per-device memory and bytes communicated per application.

    python benchmarks/scaling.py                  # 1, 2, 4, 8 simulated CPU devices
    python benchmarks/scaling.py --json out.json  # also write the figures

A radial SENSE NUFFT (8 coils, 256², 64 spokes × 512 readouts, Toeplitz normal) is split by
coils with `BatchSpec({"C": 1}, device_matrix=jax.devices()[:D])` for each device count D.
For its forward, adjoint and normal operators, each compiled program gives:

- XLA's memory per device (`memory_analysis()`: arguments, output, temporaries);
- the bytes each device sends and receives per application, read from the compiled HLO:
  every collective (`all-reduce`, `all-gather`, `reduce-scatter`, `all-to-all`,
  `collective-permute`) with its size and group, counted by
  `jaxlinops.sharding._hlo.collective_bytes` (a ring all-reduce moves $2 (D - 1) / D$ of
  its operand);
- the median time per application. On simulated CPU devices, which share the same cores,
  this shows overheads, not speed-ups; on GPUs it is the absolute time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:
    import jaxlinops as jl
except ImportError:  # run from a checkout without installing it
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import jaxlinops as jl

import numpy as np  # noqa: E402
from cases import sense_maps  # noqa: E402
from harness import machine_info  # noqa: E402

from jaxlinops.demo import radial_trajectory  # noqa: E402
from jaxlinops.sharding._hlo import collective_bytes  # noqa: E402

MiB = 2**20


def measure(op, x, runs: int) -> dict:
    compiled = jax.jit(lambda o, v: o(v)).lower(op, x).compile()
    stats = compiled.memory_analysis()
    devices = len(op.mesh.devices.flat) if getattr(op, "mesh", None) is not None else 1
    comm = collective_bytes(compiled.as_text(), devices)
    jax.block_until_ready(compiled(op, x))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        jax.block_until_ready(compiled(op, x))
        times.append(time.perf_counter() - start)
    return {
        "arguments_MiB": stats.argument_size_in_bytes / MiB,
        "output_MiB": stats.output_size_in_bytes / MiB,
        "temporaries_MiB": stats.temp_size_in_bytes / MiB,
        "communicated_MiB": sum(comm.values()) / MiB,
        "collectives": comm,
        "median_ms": 1e3 * float(np.median(times)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter, description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--counts", default="1,2,4,8", help="device counts")
    parser.add_argument("--n", type=int, default=256, help="image size n (n x n)")
    parser.add_argument("--coils", type=int, default=8, help="receive coils")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per count")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    counts = [int(c) for c in args.counts.split(",")]
    jax.config.update("jax_num_cpu_devices", max(counts))  # used where there is no GPU
    devices = jax.devices()
    counts = [c for c in counts if c <= len(devices)]

    rng = np.random.default_rng(0)
    n, coils = args.n, args.coils
    locs = radial_trajectory(n, 64, 2 * n)
    A = jl.NUFFT(locs, (n, n), "S R", batch_shape="C", oversamp=2.0, width=6.0, toeplitz=True)
    A = A @ jl.Dense(sense_maps(rng, coils, n), "C Nx Ny", "Nx Ny", "C Nx Ny")
    image = np.asarray(rng.standard_normal((n, n)), np.complex64)
    kspace = np.asarray(A(image))
    print(f"SENSE NUFFT {coils} coils, {n}x{n}, {locs.shape[0]}x{locs.shape[1]} points, "
          f"Toeplitz normal; {jax.default_backend()} ({devices[0].device_kind})")  # fmt: skip
    head = (f"{'':8s} {'devices':>7s} {'args MiB':>9s} {'out MiB':>8s} {'temp MiB':>9s} "
            f"{'comm MiB':>9s} {'ms':>8s}")  # fmt: skip
    results = {}
    for direction in ("forward", "adjoint", "normal"):
        base = {"forward": A, "adjoint": A.H, "normal": A.N}[direction]
        x = kspace if direction == "adjoint" else image
        print(f"\n{head}")
        for count in counts:
            spec = jl.BatchSpec({"C": 1}, device_matrix=devices[:count])
            row = measure(jl.create_batched_linop(base, spec), x, args.runs)
            results[f"{direction}/{count}"] = row
            print(f"{direction:8s} {count:7d} {row['arguments_MiB']:9.2f} {row['output_MiB']:8.2f} "
                  f"{row['temporaries_MiB']:9.2f} {row['communicated_MiB']:9.3f} "
                  f"{row['median_ms']:8.2f}")  # fmt: skip
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine_info(), "settings": vars(args), "results": results},
                      f, indent=1)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
