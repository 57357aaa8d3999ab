"""`plan_batches` on 8 simulated CPU devices: the planned operator's compiled per-device peak
stays within the budget and its results equal a numpy reference; an impossible budget
names the smallest that fits; communication-free splits win when they fit; and the HLO
collective parser counts the bytes of a tiny program by hand.

The operators are Cartesian SENSE models `A = M F S` (coil maps S, a centered 2D FFT F, a
sampling mask M), tiny so that each candidate compiles in a fraction of a second; the
soft-SENSE variant has Q sets of maps summed into each coil image (an input dim whose
tiles are partial sums, so splitting it needs a `psum`)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, PartitionSpec

import jaxlinops as jl
from jaxlinops.sharding._hlo import collective_bytes

N = 8
RNG = np.random.default_rng(0)


def cplx(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


MASK = (RNG.uniform(size=(N, N)) < 0.5).astype(np.complex64)
MAPS = cplx(8, N, N)  # [C, Nx, Ny]
SOFT_MAPS = cplx(2, 8, N, N)  # [C, Q, Nx, Ny]
F = jl.FFT(2, batch_shape="C", grid_shapes=("Nx Ny", "Kx Ky"), centered=True)
M = jl.Diagonal(jnp.asarray(MASK), "... Kx Ky")
SENSE = M @ F @ jl.Dense(jnp.asarray(MAPS), "C Nx Ny", "Nx Ny", "C Nx Ny")
SOFT = M @ F @ jl.Dense(jnp.asarray(SOFT_MAPS), "C Q Nx Ny", "Q Nx Ny", "C Nx Ny")


def fft2c(x):
    axes = (-2, -1)
    return np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(x, axes), axes=axes, norm="ortho"), axes)


def ifft2c(y):
    axes = (-2, -1)
    return np.fft.fftshift(np.fft.ifftn(np.fft.ifftshift(y, axes), axes=axes, norm="ortho"), axes)


def sense(x):  # numpy reference of SENSE
    return MASK * fft2c(MAPS * x)


def sense_normal(x):
    return np.sum(MAPS.conj() * ifft2c(MASK.conj() * sense(x)), axis=0)


def soft(x):  # numpy reference of SOFT, x [Q, Nx, Ny]
    return MASK * fft2c(np.einsum("cqxy,qxy->cxy", SOFT_MAPS, x))


def peak(op, x) -> int:
    """Per-device peak of the compiled application, as XLA reports it."""
    stats = jax.jit(lambda B, v: B(v)).lower(op, x).compile().memory_analysis()
    return stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes


# float32 FFTs of 64 entries: relative errors about 1e-7; 1e-5 leaves room for any CPU
TOL = {"rtol": 1e-5, "atol": 1e-5}


@pytest.mark.parametrize(
    "op, reference, shape",
    [(SENSE, sense, (N, N)), (SENSE.N, sense_normal, (N, N)), (SOFT, soft, (8, N, N))],
    ids=["sense", "sense-normal", "soft-sense"],
)
def test_third_of_the_unsplit_peak(op, reference, shape):
    x = cplx(*shape)
    budget = peak(op, x) // 3
    plan = jl.plan_batches(op, memory_limit=budget)
    B = jl.create_batched_linop(op, plan)
    measured = peak(B, x)
    assert measured <= budget
    assert measured == plan.report.chosen.peak
    np.testing.assert_allclose(np.asarray(B(jnp.asarray(x))), reference(x), **TOL)
    assert "per device" in str(plan) and "chosen" in str(plan)


def test_impossible_budget_names_the_smallest_that_fits():
    with pytest.raises(ValueError, match=r"plan_batches.*Chain.*budget of 100 bytes") as info:
        jl.plan_batches(SENSE.N, memory_limit=100)
    smallest = int(re.search(r"smallest budget that fits is (\d+) bytes", str(info.value))[1])
    x = cplx(N, N)
    assert smallest < peak(SENSE.N, x)
    plan = jl.plan_batches(SENSE.N, memory_limit=smallest)
    B = jl.create_batched_linop(SENSE.N, plan)
    assert peak(B, x) == plan.report.chosen.peak <= smallest
    np.testing.assert_allclose(np.asarray(B(jnp.asarray(x))), sense_normal(x), **TOL)


def test_prefers_no_communication():
    """Both the coil split (2 devices, concatenated) and the map-set split (8 devices,
    a `psum`) fit; the map-set split has the lower peak, and the plan takes the coils."""
    x = jax.ShapeDtypeStruct((8, N, N), jnp.complex64)
    by_q = jl.create_batched_linop(SOFT, jl.BatchSpec({"Q": 1}, device_matrix=jax.devices()))
    compiled = jax.jit(lambda B, v: B(v)).lower(by_q, x).compile()
    assert collective_bytes(compiled.as_text(), 8).get("all-reduce", 0) > 0
    plan = jl.plan_batches(SOFT, memory_limit=peak(SOFT, x) // 2)
    assert len(plan) == 1 and dict(plan[0].batch_sizes) == {"C": 1}
    assert plan.report.chosen.collectives == {}
    assert peak(by_q, x) < plan.report.chosen.peak


def test_devices_subset():
    devices = jax.devices()[2:5]
    x = cplx(N, N)
    plan = jl.plan_batches(SENSE, devices=devices)
    B = jl.create_batched_linop(SENSE, plan)
    assert set(B.mesh.devices.flat) <= set(devices)
    assert plan.report.devices == 3
    np.testing.assert_allclose(np.asarray(B(jnp.asarray(x))), sense(x), **TOL)


def test_collective_bytes_by_hand():
    """A psum, an all-gather, a ppermute, an all-to-all and a psum_scatter of a float32
    [8, 4] block per device on a (4, 2) mesh; bytes per device counted by hand."""
    mesh = jax.make_mesh((4, 2), ("a", "b"), axis_types=(AxisType.Auto,) * 2)

    def f(x):
        parts = (
            jax.lax.psum(x, "a"),  # 128 bytes, 4 devices: 2 * 3 / 4 * 128 = 192
            jax.lax.all_gather(x, "b", tiled=True),  # result 256 bytes, 2: 128
            jax.lax.ppermute(x, "a", [(i, (i + 1) % 4) for i in range(4)]),  # 128
            jax.lax.all_to_all(x, "a", 0, 0, tiled=True),  # 128 bytes, 4: 96
            jax.lax.psum_scatter(x, "a", scatter_dimension=0, tiled=True),  # 32 * 3 = 96
        )
        return sum(p.sum() for p in parts)

    spec = PartitionSpec("a", "b")
    g = jax.shard_map(f, mesh=mesh, in_specs=spec, out_specs=PartitionSpec(), check_vma=False)
    hlo = jax.jit(g).lower(jax.ShapeDtypeStruct((32, 8), jnp.float32)).compile().as_text()
    found = collective_bytes(hlo, 8)
    expected = {
        "all-reduce": 192,
        "all-gather": 128,
        "collective-permute": 128,
        "all-to-all": 96,
        "reduce-scatter": 96,
    }
    assert found == pytest.approx(expected)
