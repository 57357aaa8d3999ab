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


apply = jax.jit(lambda B, v: B(v))


def peak(op, x) -> int:
    """Per-device peak of the compiled application, as XLA reports it (as the planner
    measures it: arguments, output and temporaries, less buffers they share)."""
    stats = apply.lower(op, x).compile().memory_analysis()
    total = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    return total - stats.alias_size_in_bytes


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


# -- grid candidates: a dim the operator couples, split by domain decomposition ----------------


def toeplitz_normal(n=16, points=60):
    """The Toeplitz normal of a 2-D NUFFT (Pad, FFT, kernel, FFT.H, Crop on a 2n x 2n
    grid): every dim it has is coupled, so only a grid split can share it out."""
    locs = np.random.default_rng(6).uniform(-n / 2, n / 2, (points, 2))
    return jl.NUFFT(locs, (n, n), "R", backend="jax", toeplitz=True).N


TOEPLITZ = toeplitz_normal()
# A 1-D FFT along Py of a padded image: its only split is along Nx (the Pad's other dim);
# along Ny the FFT would transform the split dim alone, which the sharding layer refuses
PAD_FFT = jl.FFT(1, "Px", ("Py", "Ky"), centered=True) @ jl.Pad((32, 24), (8, 6), "Nx Ny", "Px Py")


# A 3x3 convolution (a halo of 1) of a weighted 25 x 23 image: on 8 devices, slabs of 4 and
# 3 entries are ragged (25 = 6 * 4 + 1, 23 = 7 * 3 + 2); a ragged split holds its whole input
# and output on each device, over the budget, so the plan takes 5 slabs of 5 on 5 devices
CONV = jl.Convolution(jnp.asarray(RNG.standard_normal((3, 3))), "...", "Nx Ny", "Mx My") @ (
    jl.Diagonal(jnp.asarray(RNG.standard_normal((25, 23))), "Nx Ny")
)


def pad_fft(x):  # numpy reference of PAD_FFT: the centered pad, the centered 1-D FFT
    z = np.pad(x, [(12, 12), (9, 9)])
    return np.fft.fftshift(np.fft.fft(np.fft.ifftshift(z, -1), norm="ortho"), -1)


def rand128(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


# complex128 transforms of 1024 entries: errors about 1e-15 of the scale; complex64 as TOL
TOL128 = {"rtol": 1e-10, "atol": 1e-10}


@pytest.mark.parametrize(
    "op, x, reference, tol, split",
    [
        (TOEPLITZ, rand128(16, 16), TOEPLITZ, TOL128, ("Nx", 2, 8)),
        (PAD_FFT, cplx(8, 6), pad_fft, TOL, ("Nx", 1, 8)),
        (CONV, RNG.standard_normal((25, 23)), CONV, TOL128, ("Nx", 5, 5)),
    ],
    ids=["toeplitz-normal", "pad-fft", "convolution-ragged"],
)
def test_grid_only_operator_is_split_along_the_grid(op, x, reference, tol, split):
    """An operator whose every dim is coupled: a third of its unsplit peak is met by a grid
    split only (`split`: its dim, slab and devices); the planned operator's compiled peak
    is within the budget and its result is the unsplit operator's (a numpy reference for
    PAD_FFT; the unsplit operators are checked against references in their own tests)."""
    budget = peak(op, x) // 3
    plan = jl.plan_batches(op, memory_limit=budget, x=x)
    assert len(plan) == 1 and plan.report.chosen.candidate.grid
    B = jl.create_batched_linop(op, plan)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    assert peak(B, x) == plan.report.chosen.peak <= budget
    assert plan.report.chosen.communicated > 0
    text = str(plan)
    assert "tile(s) per device" in text and "per application" in text
    ((dim, tile),) = plan[0].batch_sizes.items()
    assert (dim, tile, plan[0].device_matrix.size) == split
    assert len(plan.report.refused) == (op is PAD_FFT)  # only its split along Ny is refused
    assert (
        f"no split is communication-free (every dim is coupled or summed over): grid "
        f"split along {dim!r} moves" in text
    )
    want = apply(reference, x) if isinstance(reference, jl.NamedLinop) else reference(x)
    np.testing.assert_allclose(np.asarray(apply(B, x)), np.asarray(want), **tol)


def test_grid_split_the_sharding_layer_refuses_is_dropped():
    x = cplx(8, 6)
    plan = jl.plan_batches(PAD_FFT, memory_limit=peak(PAD_FFT, x) // 3, x=x)
    assert dict(plan[0].batch_sizes) == {"Nx": 1}
    ((refused, reason),) = plan.report.refused
    assert refused.outer[0][0] == "Ny" and "transforms only the split dim" in reason
    assert "refused: grid Ny/" in str(plan)


def test_impossible_budget_for_a_grid_split_names_the_smallest_that_fits():
    x = rand128(16, 16)
    with pytest.raises(ValueError, match=r"plan_batches.*budget of 1 bytes.*grid N") as info:
        jl.plan_batches(TOEPLITZ, memory_limit=1, x=x)
    smallest = int(re.search(r"smallest budget that fits is (\d+) bytes", str(info.value))[1])
    plan = jl.plan_batches(TOEPLITZ, memory_limit=smallest, x=x)
    assert plan.report.chosen.candidate.grid
    B = jl.create_batched_linop(TOEPLITZ, plan)
    assert peak(B, x) == plan.report.chosen.peak <= smallest
    np.testing.assert_allclose(np.asarray(apply(B, x)), np.asarray(apply(TOEPLITZ, x)), **TOL128)
    with pytest.raises(ValueError, match=r"smallest budget that fits"):
        jl.plan_batches(TOEPLITZ, memory_limit=smallest - 1, x=x)


def test_prefers_a_coil_split_to_a_grid_split():
    """SENSE on 8 devices: both the coil split (no communication) and the grid split along
    Nx (all-to-all) fit a third of the unsplit peak, and the grid split has the lower peak;
    the plan takes the coils, and says why."""
    x = jax.ShapeDtypeStruct((N, N), jnp.complex64)
    budget = peak(SENSE, x) // 3
    grid = jl.create_batched_linop(SENSE, jl.BatchSpec({"Nx": 1}, device_matrix=jax.devices()))
    compiled = jax.jit(lambda B, v: B(v)).lower(grid, x).compile()
    assert collective_bytes(compiled.as_text(), 8).get("all-to-all", 0) > 0
    plan = jl.plan_batches(SENSE, memory_limit=budget)
    assert len(plan) == 1 and dict(plan[0].batch_sizes) == {"C": 1}
    assert plan.report.chosen.collectives == {}
    assert peak(grid, x) < plan.report.chosen.peak <= budget
    assert plan.report.grid_dims == ("Nx", "Ny")
    assert not any(m.candidate.grid for m in plan.report.compiled)  # the search stopped first
    assert "needs no communication" in str(plan)
    assert "preferred to the grid splits along 'Nx', 'Ny', which communicate" in str(plan)


def test_no_split_when_the_sharding_layer_refuses_every_grid_split():
    """A 1-D `Pad`: its only dim is coupled, and moving the edge slabs of a 1-D array is
    refused when the split is traced; the error names the operator and the refusal."""
    match = r"plan_batches.*Pad.*no dim that can be split.*grid Nx/1 over 8.*1-D array"
    with pytest.raises(ValueError, match=match):
        jl.plan_batches(jl.Pad((16,), (8,)), x=cplx(8))
