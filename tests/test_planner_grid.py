"""`plan_batches` proposes grid splits with coils: the grid and the coils on a 2-D device
mesh, and the grid across the devices with a loop over coil blocks on each. 8 simulated
CPU devices; Cartesian SENSE `A = M F S` (coil maps S, a centered 2-D FFT F, a sampling
mask M): its only dim applied entry by entry is the coil dim C, the image and k-space dims
are coupled by the FFT, so a budget the coil split alone cannot meet needs the grid.

- 2 coils, a third of the unsplit peak: the coil split (2 devices, half of everything) is
  over it; the grid x coil mesh fits and moves fewer bytes than the grid alone (its FFTs
  transpose over 4 devices, not 8);
- 8 coils, an eighth of the unsplit peak: every one-tile split is over it (the coil split
  holds the whole image, the grid splits their transposes' temporaries); the grid with
  the coils looped over in blocks fits.

A 3-D grid whose dims are all shorter than the devices is planned as pencils.

Each planned operator's compiled peak is within the budget and its result is numpy's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops.sharding._hlo import collective_bytes

N = 16
RNG = np.random.default_rng(1)


def cplx(*shape):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(np.complex64)


MASK = (RNG.uniform(size=(N, N)) < 0.5).astype(np.complex64)


def sense(coils):
    """SENSE with `coils` maps, and its numpy reference (centered orthonormal 2-D DFT)."""
    maps = cplx(coils, N, N)
    F = jl.FFT(2, batch_shape="C", grid_shapes=("Nx Ny", "Kx Ky"), centered=True)
    A = (
        jl.Diagonal(jnp.asarray(MASK), "... Kx Ky")
        @ F
        @ jl.Dense(jnp.asarray(maps), "C Nx Ny", "Nx Ny", "C Nx Ny")
    )

    def reference(x):
        axes = (-2, -1)
        z = np.fft.ifftshift(maps * x, axes)
        return MASK * np.fft.fftshift(np.fft.fftn(z, axes=axes, norm="ortho"), axes)

    return A, reference


apply = jax.jit(lambda B, v: B(v))


def compiled(op, x):
    return apply.lower(op, x).compile()


def peak(op, x) -> int:
    """Per-device peak of the compiled application, as XLA reports it."""
    stats = compiled(op, x).memory_analysis()
    total = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    return total - stats.alias_size_in_bytes


# float32 FFTs of 256 entries: relative errors about 1e-7; 1e-5 leaves room for any CPU
TOL = {"rtol": 1e-5, "atol": 1e-5}


def planned(coils, fraction):
    """The plan for SENSE with `coils` within `fraction` of its unsplit peak; its planned
    operator checked: compiled peak within the budget (and as reported), result numpy's."""
    A, reference = sense(coils)
    x = cplx(N, N)
    budget = int(peak(A, x) * fraction)
    plan = jl.plan_batches(A, memory_limit=budget)
    B = jl.create_batched_linop(A, plan)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    assert peak(B, x) == plan.report.chosen.peak <= budget
    np.testing.assert_allclose(np.asarray(apply(B, jnp.asarray(x))), reference(x), **TOL)
    return A, plan, B


def test_grid_by_coils_on_a_2d_mesh():
    A, plan, B = planned(coils=2, fraction=1 / 3)
    ((spec,),) = [plan]
    assert dict(spec.batch_sizes) == {"Nx": 4, "C": 1}  # the grid dim first, as its axis
    assert spec.device_matrix.shape == (4, 2)
    assert dict(B.mesh.shape) == {"Nx": 4, "C": 2}
    chosen = plan.report.chosen
    assert chosen.candidate.grid and chosen.candidate.devices == 8
    # fewer collective bytes than the grid split alone over the 8 devices (built by hand)
    grid = jl.create_batched_linop(A, jl.BatchSpec({"Nx": 2}, device_matrix=jax.devices()))
    alone = collective_bytes(
        compiled(grid, jax.ShapeDtypeStruct((N, N), jnp.complex64)).as_text(), 8
    )
    assert 0 < chosen.communicated < sum(alone.values())
    text = str(plan)
    assert "chosen: grid Nx/4 over 4 x C/1 over 2 (8 devices, a 4 x 2 mesh, one slab and a " in text
    assert "grid split along 'Nx' with 'C' on a 4 x 2 mesh moves" in text


def test_grid_with_a_coil_loop_meets_a_tight_budget():
    A, plan, B = planned(coils=8, fraction=1 / 8)
    outer, loop = plan
    assert dict(outer.batch_sizes) == {"Nx": 2} and outer.device_matrix.shape == (8,)
    ((dim, tile),) = loop.batch_sizes.items()
    assert dim == "C" and 1 <= tile < 8 and loop.device_matrix is None
    chosen = plan.report.chosen
    assert chosen.candidate.tiles_per_device == -(-8 // tile)
    # the loop moves what the grid split alone moves, in blocks: its collectives are counted
    # per iteration, not once per loop body (the plain split, built by hand, has no loop)
    grid = jl.create_batched_linop(A, outer)
    x = jax.ShapeDtypeStruct((N, N), jnp.complex64)
    alone = collective_bytes(compiled(grid, x).as_text(), 8)
    assert chosen.collectives == pytest.approx(alone)
    assert peak(grid, x) > plan.report.budget  # the loop is what fits
    assert f"chosen: grid Nx/2 over 8 (8 devices, one slab each), then C/{tile} in a loop" in (
        str(plan)
    )
    assert "grid split along 'Nx' with a loop over 'C' moves" in str(plan)


def test_pencils_when_every_grid_dim_is_shorter_than_the_devices():
    """A 3-D FFT chain on a (4, 4, 6) grid (no dim applied entry by entry): a slab split uses
    at most 6 of the 8 devices (and a ragged one returns its output whole), so within a
    third of the unsplit peak only pencils fit: two grid dims, each over one axis of a 2-D
    mesh of all 8 devices."""
    shape = (4, 4, 6)
    w, mask = cplx(*shape), (RNG.uniform(size=shape) < 0.5).astype(np.complex64)
    F = jl.FFT(3, grid_shapes=("Nx Ny Nz", "Kx Ky Kz"), centered=True)
    A = jl.Diagonal(jnp.asarray(mask), "Kx Ky Kz") @ F @ jl.Diagonal(jnp.asarray(w), "Nx Ny Nz")
    x = cplx(*shape)
    budget = peak(A, x) // 3
    plan = jl.plan_batches(A, memory_limit=budget)
    ((spec,),) = [plan]
    assert len(spec.batch_sizes) == 2 and spec.device_matrix.shape in ((2, 4), (4, 2))
    assert plan.report.chosen.candidate.pencil and "one pencil each" in str(plan)
    B = jl.create_batched_linop(A, plan)
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.grids == 2
    assert peak(B, x) == plan.report.chosen.peak <= budget
    z = np.fft.ifftshift(w * x)
    want = mask * np.fft.fftshift(np.fft.fftn(z, norm="ortho"))
    np.testing.assert_allclose(np.asarray(apply(B, jnp.asarray(x))), want, **TOL)


def test_candidates_are_measured_without_their_structured_normal(monkeypatch):
    """The planner compiles each candidate's forward only: building a grid candidate does
    not build its structured normal (for a Toeplitz NUFFT, a kernel on the 2x grid); the
    operator built from the plan has it."""
    locs = RNG.uniform(-N / 2, N / 2, (64, 2))
    A = jl.NUFFT(locs, (N, N), "K", toeplitz=True, backend="jax")
    x = cplx(N, N)
    budget = peak(A, x) // 3  # no communication-free split: the grid
    real = jl.sharding._grid._split._structured_normal

    def refuse(*args):
        raise AssertionError("a structured normal was built while planning")

    monkeypatch.setattr(jl.sharding._grid._split, "_structured_normal", refuse)
    plan = jl.plan_batches(A, memory_limit=budget, x=jnp.asarray(x))
    monkeypatch.setattr(jl.sharding._grid._split, "_structured_normal", real)
    B = jl.create_batched_linop(A, plan)
    assert isinstance(B, jl.sharding.GridSplitLinop) and B.normal_split is not None
