"""NUFFT, its Toeplitz normal, Interpolate and Sampling built *inside* `jax.jit` (from a
constant `jax.Array` and from a traced argument), `jax.vmap` over the points and `jax.grad`
with respect to the points, each against an independent numpy reference: the exact
non-uniform DFT, the explicit kernel sum, numpy fancy indexing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand
from test_interp import ref_matrix
from test_nufft import dft_matrix, random_locs, rel_err

import jaxlinops as jl

GRID = (6, 5)
OS, WIDTH = 2.0, 6.0
NUFFT_TOL = 1e-4  # relative error of the NUFFT at (oversamp, width) = (2, 6): about 1e-5
INTERP_TOL = 1e-6  # the Abramowitz–Stegun I0 in the kernel vs numpy's np.i0
# Derivatives: the NUFFT's error grows by about the bandwidth (2 pi N / 2) under d/dp.
GRAD_TOL = 1e-3


def nufft(locs, backend=None):
    return jl.NUFFT(locs, GRID, "K", oversamp=OS, width=WIDTH, backend=backend)


def interp(locs):
    return jl.Interpolate(locs, GRID, width=3.0, kernel_params={"beta": 2.0})


def toeplitz_normal(locs):
    return jl.NUFFT(locs, GRID, "K", oversamp=OS, width=WIDTH, toeplitz=True).N


NUFFT_LOCS = random_locs(1, GRID, 7)
INTERP_LOCS = np.random.default_rng(2).uniform(0, 4, (7, 2))
X = rand(3, GRID)


def nufft_ref(locs, x):
    return dft_matrix(locs, GRID) @ np.asarray(x).ravel()


def interp_ref(locs, x):
    return ref_matrix(locs, GRID, 3.0, beta=2.0) @ np.asarray(x).ravel()


def normal_ref(locs, x):
    E = dft_matrix(locs, GRID)
    return (E.conj().T @ (E @ np.asarray(x).ravel())).reshape(GRID)


OPERATORS = {
    "nufft": (nufft, NUFFT_LOCS, nufft_ref, NUFFT_TOL),  # "auto": the JAX path
    "nufft_jax": (lambda p: nufft(p, "jax"), NUFFT_LOCS, nufft_ref, NUFFT_TOL),
    "nufft_pallas": (lambda p: nufft(p, "pallas"), NUFFT_LOCS, nufft_ref, NUFFT_TOL),
    "interp": (interp, INTERP_LOCS, interp_ref, INTERP_TOL),
    "toeplitz_normal": (toeplitz_normal, NUFFT_LOCS, normal_ref, NUFFT_TOL),
}


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_built_inside_jit_from_a_constant_and_a_traced_array(name):
    build, locs, ref, tol = OPERATORS[name]
    constant = jnp.asarray(locs)
    from_constant = jax.jit(lambda x: build(constant)(x))(X)
    from_argument = jax.jit(lambda p, x: build(p)(x))(constant, X)
    want = ref(locs, X)
    assert rel_err(from_constant, want) <= tol
    assert rel_err(from_argument, want) <= tol


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_vmap_over_the_points(name):
    build, locs, ref, tol = OPERATORS[name]
    stacked = np.stack([locs, locs[::-1] + 0.25])
    got = jax.vmap(lambda p: build(p)(X))(jnp.asarray(stacked))
    for k in range(2):
        assert rel_err(got[k], ref(stacked[k], X)) <= tol


def _fd_grad(loss, locs, h=1e-6):
    """Central finite differences of a numpy loss in float64 (truncation ~h^2)."""
    grad = np.zeros_like(locs)
    for i in np.ndindex(locs.shape):
        step = np.zeros_like(locs)
        step[i] = h
        grad[i] = (loss(locs + step) - loss(locs - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("name", sorted(OPERATORS))
def test_grad_with_respect_to_the_points_inside_jit(name):
    """d/dp Re<c, A(p) x> against finite differences of the numpy reference."""
    build, locs, ref, tol = OPERATORS[name]
    c = rand(4, np.shape(ref(locs, X)))
    got = jax.jit(jax.grad(lambda p: jnp.real(jnp.vdot(c, build(p)(X)))))(jnp.asarray(locs))
    want = _fd_grad(lambda p: np.real(np.vdot(c, ref(p, X))), locs)
    scale = np.max(np.abs(want))
    assert np.max(np.abs(np.asarray(got) - want)) <= max(GRAD_TOL, 10 * tol) * scale


def test_sampling_inside_jit_vmap_and_grad():
    idx = np.array([[3, 0], [1, 4], [3, 0], [5, 2]], np.int32)
    x = np.asarray(rand(5, GRID))
    want = x[idx[:, 0], idx[:, 1]]

    def sample(i, v):
        return jl.Sampling.from_stacked_idx(i, GRID, "K", "Nx Ny")(v)

    constant = jnp.asarray(idx)
    np.testing.assert_allclose(jax.jit(lambda v: sample(constant, v))(x), want)
    rows, cols = jnp.asarray(idx[:, 0]), jnp.asarray(idx[:, 1])
    direct = jax.jit(lambda v: jl.Sampling((rows, cols), GRID, "K", "Nx Ny")(v))(x)
    np.testing.assert_allclose(direct, want)
    np.testing.assert_allclose(jax.jit(sample)(constant, x), want)
    stacked = jnp.asarray(np.stack([idx, idx[::-1]]))
    got = jax.vmap(sample, in_axes=(0, None))(stacked, x)
    np.testing.assert_allclose(got[1], want[::-1])
    # d/dx sum |S x|^2 = 2 S^H S x: the repeated point (3, 0) counts twice
    grad = jax.jit(jax.grad(lambda v, i: jnp.sum(jnp.abs(sample(i, v)) ** 2)))(x.real, constant)
    counts = np.zeros(GRID)
    np.add.at(counts, (idx[:, 0], idx[:, 1]), 1)
    np.testing.assert_allclose(grad, 2 * counts * x.real)


def test_batched_nufft_built_inside_jit():
    devices = np.array(jax.devices()[:2])
    constant = jnp.asarray(random_locs(6, GRID, 8))

    @jax.jit
    def f(x):
        A = jl.NUFFT(constant, GRID, "K", batch_shape="C", oversamp=OS, width=WIDTH)
        return jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=devices))(x)

    x = rand(7, (2, *GRID))
    E = dft_matrix(np.asarray(constant), GRID)
    want = np.asarray(x).reshape(2, -1) @ E.T
    assert rel_err(f(x), want) <= NUFFT_TOL
