"""The Toeplitz-embedded NUFFT normal against the exact normal E^H W E built from a numpy
non-uniform DFT matrix, against A^H W A, and its structure and fallbacks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from test_nufft import ACCURACY, CASES, dft_matrix, random_locs, rel_err

import jaxlinops as jl


def kinds(op):
    return [type(child).__name__ for child in op.flatten()]


@pytest.mark.parametrize("oswidth", sorted(ACCURACY))
@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_accuracy_with_density_compensation(case, dtype, oswidth):
    grid, npoints = CASES[case]
    real = jnp.finfo(dtype).dtype
    locs = random_locs(21, grid, npoints, real)
    dcf = np.random.default_rng(22).uniform(0.5, 1.5, npoints).astype(real)
    op = jl.NUFFT(locs, grid, "K", batch_shape=(), oversamp=oswidth[0], width=oswidth[1],
                  toeplitz=True)  # fmt: skip
    normal = op.normal(jl.Diagonal(dcf, "K"))
    assert kinds(normal) == ["Pad", "FFT", "Diagonal", "Adjoint", "Crop"]
    assert normal.ishape == ("Nx", "Ny", "Nz")[: len(grid)]
    assert normal.oshape == ("Nx1", "Ny1", "Nz1")[: len(grid)]
    x = rand(23, grid, dtype)
    E = dft_matrix(locs, grid)
    exact = (E.conj().T @ (dcf * (E @ np.asarray(x).ravel()))).reshape(grid)
    weights = dcf.astype(dtype)
    got, plain = jax.jit(lambda A, N, v: (N(v), A.H(A(v) * weights)))(op, normal, x)
    assert got.dtype == dtype
    bound = ACCURACY[oswidth]
    assert rel_err(got, exact) <= bound
    # A^H W A carries the NUFFT's error twice over; the two differ by about the bound
    assert rel_err(got, plain) <= 2 * bound


def test_plain_normal_batch_jit_and_traced_construction():
    grid, locs = (8, 6), random_locs(24, (8, 6), 40)
    op = jl.NUFFT(locs, grid, "K", batch_shape="C", oversamp=2.0, width=6.0, toeplitz=True)
    x = rand(25, (3, *grid))
    E = dft_matrix(locs, grid)
    exact = np.einsum("kn,kl,cl->cn", E.conj(), E, np.asarray(x).reshape(3, -1))
    assert op.N.oshape == ("C", "Nx1", "Ny1") and kinds(op.N)[2] == "Diagonal"
    assert rel_err(op.N(x), exact.reshape(x.shape)) <= 1e-5
    assert_close(jax.jit(lambda A, v: A(v))(op.N, x), op.N(x), jnp.complex128)
    traced = jax.jit(lambda A, v: A.N(v))(op, x)  # the kernel computed from traced locs
    assert_close(traced, op.N(x), jnp.complex128)
    jl.testing.assert_adjoint(op.N, x, rand(26, x.shape))


@pytest.mark.parametrize("weightshape", ["C C1", "K C C1"])
def test_dense_inner_mixing_a_batch_dim(weightshape):
    grid, locs = (6, 6), random_locs(27, (6, 6), 30)
    op = jl.NUFFT(locs, grid, "K", batch_shape="C", oversamp=2.0, width=6.0, toeplitz=True)
    shape = {"C C1": (3, 2), "K C C1": (30, 3, 2)}[weightshape]
    w = rand(28, shape)
    inner = jl.Dense(w, weightshape, "C K", "C1 K")
    normal = op.normal(inner)
    assert kinds(normal) == ["Pad", "FFT", "Dense", "Adjoint", "Crop"]
    assert normal.oshape == ("C1", "Nx1", "Ny1")
    x = rand(29, (3, *grid))
    E = dft_matrix(locs, grid)
    k = np.einsum("kn,cn->ck", E, np.asarray(x).reshape(3, -1))
    mixed = np.einsum("ck,cd->dk", k, w) if w.ndim == 2 else np.einsum("ck,kcd->dk", k, w)
    exact = np.einsum("kn,dk->dn", E.conj(), mixed).reshape(2, *grid)
    assert rel_err(normal(x), exact) <= 1e-5


def test_sampling_mode_is_exact():
    grid, locs = (6, 5), random_locs(30, (6, 5), 12)
    op = jl.NUFFT(locs, grid, "K", batch_shape=(), mode="sampling", oversamp=1.5, toeplitz=True)
    dcf = np.linspace(0.5, 2.0, 12)
    normal = op.normal(jl.Diagonal(dcf, "K"))
    assert kinds(normal) == ["Pad", "FFT", "Diagonal", "Adjoint", "Crop"]
    x = rand(31, grid)
    assert_close(normal(x), op.H(op(x) * dcf.astype(complex)), jnp.complex128)
    assert_close(op.N(x), op.H(op(x)), jnp.complex128)


def test_in_a_sense_chain():
    grid, locs = (8, 8), random_locs(32, (8, 8), 50)
    maps = rand(33, (4, *grid))
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.NUFFT(locs, grid, "K", batch_shape="C", oversamp=2.0, width=6.0, toeplitz=True)
    D = jl.Diagonal(np.sqrt(np.linspace(0.5, 1.5, 50)), "C K")
    A = D @ F @ S
    assert "NUFFT" not in kinds(A.N) and A.N.oshape == ("Nx1", "Ny1")
    x = rand(34, grid)
    got, plain = jax.jit(lambda A, v: (A.N(v), A.H(A(v))))(A, x)
    assert rel_err(got, plain) <= 2e-5


def test_other_inner_operators_fall_back_to_the_default_normal():
    grid, locs = (6, 6), random_locs(35, (6, 6), 5)
    op = jl.NUFFT(locs, grid, "K", batch_shape=(), toeplitz=True)
    w = rand(36, (5, 5))
    normal = op.normal(jl.Dense(w, "K1 K", "K", "K1"))  # mixes the points
    assert "NUFFT" in kinds(normal)
    x = rand(37, grid)
    assert_close(normal(x), op.H(w @ op(x)), jnp.complex128)


def test_oversamp_below_two_is_an_error():
    with pytest.raises(ValueError, match=r"`NUFFT`: toeplitz_oversamp=1.5 .* at least 2N - 1"):
        jl.NUFFT(np.zeros((3, 2)), (8, 8), "K", toeplitz=True, toeplitz_oversamp=1.5)
