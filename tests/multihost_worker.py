"""One process of the two-process test in `test_multihost.py` (run as a script).

Usage: `python multihost_worker.py PROCESS_ID COORDINATOR_PORT`. Each process has 4
simulated CPU devices; after `jax.distributed.initialize` the mesh spans all 8. The
batched SENSE-type operator's forward and adjoint, and those of a NUFFT split along its
grid dim `Nx` (one slab per device), gathered, are compared with the unsplit operators
applied in this process alone; the result is printed as JSON.
"""

import json
import sys

import jax

jax.config.update("jax_num_cpu_devices", 4)
jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402

import jaxlinops as jl  # noqa: E402


def main(process_id: int, port: int) -> None:
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=process_id)
    rng = np.random.default_rng(0)  # the same operator and data in both processes

    def crand(*shape):
        return jnp.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))

    maps = jl.Dense(crand(8, 16, 16), "C Nx Ny", "Nx Ny", "C Nx Ny")
    mask = jnp.asarray(rng.random((16, 16)) < 0.5, jnp.float64)
    A = jl.Diagonal(mask, "C Kx Ky") @ jl.FFT(2, batch_shape="C", centered=True) @ maps
    x = crand(16, 16)

    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()))
    forward = jax.jit(lambda op, v: op(v))(B, x)
    adjoint = jax.jit(lambda op, v: op.H(v))(B, forward)
    gathered = multihost_utils.process_allgather(forward, tiled=True)
    F = jl.NUFFT(rng.uniform(-8, 8, (16, 12, 2)), (16, 16), "R K", backend="jax")
    G = jl.create_batched_linop(F, jl.BatchSpec({"Nx": 2}, device_matrix=jax.devices()))
    k = jax.jit(lambda op, v: op(v))(G, x)
    back = jax.jit(lambda op, v: op.H(v))(G, k)
    local = jax.local_devices()[0]
    want_forward = np.asarray(A(x))
    want_adjoint = np.asarray(A.H(A(x)))
    result = {
        "process": jax.process_index(),
        "devices": jax.device_count(),
        "local_devices": jax.local_device_count(),
        "forward_shards_here": len(forward.addressable_shards),
        "forward_error": float(np.abs(gathered - want_forward).max()),
        "adjoint_error": float(np.abs(np.asarray(adjoint) - want_adjoint).max()),
        "local_device": str(local),
        "grid_split": type(G).__name__,
        "grid_forward_error": relative(multihost_utils.process_allgather(k, tiled=True), F(x)),
        "grid_adjoint_error": relative(
            multihost_utils.process_allgather(back, tiled=True), F.H(F(x))
        ),
    }
    print("RESULT " + json.dumps(result), flush=True)
    jax.distributed.shutdown()


def relative(got, want) -> float:
    """The largest error relative to the largest entry of `want`."""
    want = np.asarray(want)
    return float(np.abs(np.asarray(got) - want).max() / np.abs(want).max())


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
