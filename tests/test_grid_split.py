"""Splitting the image grid by domain decomposition (`jaxlinops.sharding._grid`): a
Cartesian SENSE operator split along `Nx` across 2, 3 and 8 of the simulated devices, with
even and ragged slabs, in 2-D and 3-D, equals the unsplit operator (forward, adjoint,
normal, a CG solve), passes the dot test, keeps its data split (no all-gather in the
compiled program), and refuses the couplings it does not cover yet with an error naming
the operator.

References: the unsplit operator (itself tested against numpy's FFT elsewhere).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops.testing import assert_adjoint

C128 = jnp.complex128


def sense(shape, coils=3, seed=0):
    """mask @ centered FFT @ coil maps: (Nx, Ny[, Nz]) -> (C, Kx, Ky[, Kz])."""
    grid = ("Nx", "Ny", "Nz")[: len(shape)]
    kspace = ("Kx", "Ky", "Kz")[: len(shape)]
    maps = jl.Dense(rand(seed, (coils, *shape)), ("C", *grid), grid, ("C", *grid))
    fft = jl.FFT(len(shape), "C", centered=True)
    mask = np.random.default_rng(seed).random(shape) < 0.6
    return jl.Diagonal(jnp.asarray(mask, jnp.float64), ("C", *kspace), "C") @ fft @ maps


def split(A, devices, dim="Nx"):
    n = A.size(dim)
    spec = jl.BatchSpec({dim: -(-n // devices)}, device_matrix=jax.devices()[:devices])
    return jl.create_batched_linop(A, spec)


@pytest.mark.parametrize(
    "shape, devices",
    [((8, 6), 2), ((10, 6), 3), ((10, 12), 8), ((6, 4, 5), 3)],
    ids=["2d-even-2", "2d-ragged-3", "2d-ragged-8", "3d-ragged-3"],
)
def test_grid_split_sense_equals_the_operator(shape, devices):
    A = sense(shape)
    B = split(A, devices)
    assert isinstance(B, jl.sharding.GridSplitLinop)
    x, y = rand(1, shape), rand(2, (3, *shape))
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    for g, want in zip(got, (A(x), A.H(y), A.N(x))):
        assert_close(g, want, C128)
    if shape[1] % devices == 0:  # (ragged outputs are resharded when their padding is cut)
        # the forward output stays split, along the dim the FFT moved the split to (Ky)
        assert got[0].sharding.spec[2] == "Nx" and len(got[0].sharding.device_set) == devices
    assert_adjoint(B, x, y)


def test_cg_on_a_grid_split_normal_solves_as_on_one_device():
    A = sense((10, 6))
    B = split(A, 3)
    y = A.H(rand(3, (3, 10, 6)))

    def solve(op):
        N = op.N + 0.1 * jl.Identity(("Nx", "Ny"), op.N.oshape)
        return jl.alg.conjugate_gradients(N, y, max_num_iters=50, gtol=1e-12)

    # both solves stop at a residual of 1e-12; the condition number (< 1e3 here) bounds
    # how far apart that leaves them
    want = solve(A)
    scale = float(jnp.max(jnp.abs(want)))
    np.testing.assert_allclose(jax.jit(solve)(B), want, rtol=0, atol=1e-8 * scale)


def test_compiled_normal_transposes_and_never_gathers_the_grid():
    """The normal of a 64x48 SENSE operator over 8 devices: its program exchanges blocks
    (`all-to-all`), gathers nothing, and each device's temporaries are a fraction of the
    whole coil images (a gather would need all of them on every device)."""
    A = sense((64, 48), coils=4)
    B = split(A, 8)
    x = rand(4, (64, 48))
    compiled = jax.jit(lambda B, x: B.N(x)).lower(B, x).compile()
    text = compiled.as_text()
    assert "all-to-all" in text and "all-gather" not in text
    whole = 4 * 64 * 48 * 16  # the coil images, complex128
    assert compiled.memory_analysis().temp_size_in_bytes < 0.5 * whole


@pytest.mark.parametrize("case", ["nufft", "pad"])
def test_couplings_not_covered_yet_are_refused_by_name(case):
    if case == "nufft":
        locs = np.random.default_rng(5).uniform(-4, 4, (20, 2))
        A = jl.NUFFT(locs, (8, 8), "R")
        name = "NUFFT"
    else:
        A = jl.FFT(2, centered=True, grid_shapes=(("Nx1", "Ny1"), ("Kx", "Ky"))) @ jl.Pad(
            (12, 12), (8, 8), ("Nx", "Ny"), ("Nx1", "Ny1")
        )
        name = "Pad"
    with pytest.raises(ValueError, match=rf"{name}.*grid dim 'Nx'|{name}.*couples"):
        split(A, 2)


def test_more_slabs_than_devices_is_refused():
    A = sense((8, 6))
    spec = jl.BatchSpec({"Nx": 1}, device_matrix=jax.devices()[:2])
    with pytest.raises(ValueError, match=r"one slab per device.*at least 4"):
        jl.create_batched_linop(A, spec)
