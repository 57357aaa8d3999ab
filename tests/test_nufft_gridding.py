"""The NUFFT's gridding core (`functional._nufft_gridding`): the polynomial Kaiser–Bessel
window weights against numpy's Bessel function, the half-open window origins, NaN points,
and both gridding branches (windows that cross the periodic grid's end and windows that do
not) against the dense reference pipeline."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from test_nufft import nufft_matrix

import jaxlinops as jl
from jaxlinops.functional._nufft_gridding import kernel_polynomials, nufft_windows

F = jl.functional
SETTINGS = [(1.25, 4.0), (2.0, 6.0), (1.5, 4.5), (2.0, 3.0), (2.0, 12.0), (1.25, 16.0)]


def beta(oversamp, width):
    return math.pi * math.sqrt((width / oversamp) ** 2 * (oversamp - 0.5) ** 2 - 0.8)


def ref_windows(locs, padded, width, b):
    """Origins floor(q - w/2) + 1 (mod N) and weights I0(b sqrt(1 - x^2)) at
    x = (origin + l - q) / (w/2), 0 outside (-1, 1], one point and axis at a time."""
    size, radius = math.ceil(width), width / 2
    starts = np.zeros(locs.shape, int)
    weights = np.zeros(locs.shape + (size,))
    for i, j in np.ndindex(locs.shape):
        first = math.floor(locs[i, j] - radius) + 1
        starts[i, j] = first % padded[j]
        for k in range(size):
            x = (first + k - locs[i, j]) / radius
            weights[i, j, k] = np.i0(b * math.sqrt(1 - x * x)) if -1 < x <= 1 else 0.0
    return starts, weights


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("oversamp, width", SETTINGS)
def test_window_weights_against_numpy_bessel(oversamp, width, dtype):
    padded = (40, 36)
    rng = np.random.default_rng(int(10 * width))
    locs = rng.uniform(0, 1, (60, 2)) * np.array(padded)
    locs[:6] = rng.integers(0, 36, (6, 2))  # points on grid nodes
    locs[6:9] = np.array(padded) - 1e-3  # points at the seam
    locs = locs.astype(dtype)
    b = beta(oversamp, width)
    nbhd = nufft_windows(jnp.asarray(locs), padded, width, b)
    starts, weights = ref_windows(locs.astype(np.float64), padded, width, b)
    np.testing.assert_array_equal(nbhd.starts, starts)
    got = np.stack([np.asarray(w) for w in nbhd.weights], axis=1)
    # the fit is within 1e-12 of I0(b); float32 rounds t and each Horner step (~1e-6)
    tol = (1e-5 if dtype == np.float32 else 1e-11) * np.i0(b)
    assert np.max(np.abs(got - weights)) <= tol


def test_polynomials_are_fitted_once_per_setting():
    coeffs, lows = kernel_polynomials(4.5, beta(1.5, 4.5))
    assert coeffs.shape[1] == 5 and list(lows) == [0, 0, 0, 0, 0.5]
    assert kernel_polynomials(4.5, beta(1.5, 4.5))[0] is coeffs


def test_non_finite_points_get_nan_weights_and_a_valid_origin():
    locs = jnp.asarray([[1.5, 2.5], [jnp.nan, 3.0], [4.0, jnp.inf]])
    nbhd = nufft_windows(locs, (10, 10), 4.0, beta(1.25, 4.0))
    assert np.all(np.isfinite(np.asarray(nbhd.weights[0][0])))
    for d, row in ((0, 1), (1, 2)):
        assert np.all(np.isnan(np.asarray(nbhd.weights[d][row])))
        assert nbhd.starts[row, d] == 0


@pytest.mark.parametrize("spread", [0.2, 1.0], ids=["inside", "wrapping"])
@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.complex128], ids=["c64", "c128"])
def test_both_gridding_branches_against_the_dense_pipeline(spread, dtype):
    """Points near the k-space centre (no window crosses the grid's end: the gridding reads
    the grid itself) and over the whole k-space (windows wrap: a padded copy)."""
    grid = (10, 12)
    rng = np.random.default_rng(7)
    locs = rng.uniform(-0.5, 0.5, (40, 2)) * np.array(grid) * spread
    locs = locs.astype(jnp.finfo(dtype).dtype)
    plan = F.nufft_plan(locs, grid)
    starts = np.floor(np.asarray(plan.locs) - 2) + 1
    wraps = np.any(starts < 0) or np.any(starts + 4 > np.array(plan.padded_size))
    assert wraps == (spread == 1.0)
    M = nufft_matrix(locs, grid)
    x, y = np.asarray(rand(8, grid, dtype)), np.asarray(rand(9, (40,), dtype))
    assert_close(F.nufft(x, plan), M @ x.ravel(), dtype)
    assert_close(F.nufft_adjoint(y, plan), (M.conj().T @ y).reshape(grid), dtype)
