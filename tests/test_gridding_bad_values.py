"""Bad values where Python cannot check them (traced under `jit`/`vmap`): non-finite points
give NaN in NUFFT and Interpolate (forward: that point's output; adjoint: NaN on the grid),
points outside the grid with `pad_mode="zero"` give NaN, out-of-range traced indices raise
a run-time error; and huge but finite points are reduced without losing precision."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand
from test_interp import ref_matrix
from test_nufft import dft_matrix, random_locs, rel_err

import jaxlinops as jl

F = jl.functional
GRID = (8, 6)


def bad_locs(locs, value):
    locs = np.array(locs)
    locs[1, 0] = value
    return jnp.asarray(locs)


def assert_nan_only_at_point_1(out):
    out = np.asarray(out)
    assert np.isnan(out[..., 1]).all()
    assert np.isfinite(np.delete(out, 1, axis=-1)).all()


# ------------------------------------------------------------------ NaN / Inf points
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nufft_non_finite_point_gives_nan(value):
    locs = bad_locs(random_locs(1, GRID, 5), value)
    x, y = rand(2, (2, *GRID)), rand(3, (2, 5))
    fwd = jax.jit(lambda p, v: jl.NUFFT(p, GRID, "K", oversamp=2.0, width=6.0)(v))(locs, x)
    assert_nan_only_at_point_1(fwd)
    good = np.delete(np.arange(5), 1)
    E = dft_matrix(np.asarray(locs)[good], GRID)
    want = np.asarray(x).reshape(2, -1) @ E.T
    assert rel_err(np.asarray(fwd)[:, good], want) <= 1e-4  # the others are unaffected
    adj = jax.jit(lambda p, w: jl.NUFFT(p, GRID, "K").H(w))(locs, y)
    assert np.isnan(np.asarray(adj)).any()
    normal = jax.jit(lambda p, v: jl.NUFFT(p, GRID, "K", toeplitz=True).N(v))(locs, x)
    assert np.isnan(np.asarray(normal)).all()


@pytest.mark.parametrize("pad_mode", ["circular", "zero"])
@pytest.mark.parametrize("norm", [1, 2])
def test_interpolate_non_finite_point_gives_nan(norm, pad_mode):
    locs = np.random.default_rng(4).uniform(1, 4, (5, 2))
    x, y = rand(5, (2, *GRID)), rand(6, (2, 5))

    def op(p):
        return jl.Interpolate(p, GRID, width=3.0, norm=norm, pad_mode=pad_mode)

    for value in (np.nan, np.inf):
        fwd = jax.jit(lambda p, v: op(p)(v))(bad_locs(locs, value), x)
        assert_nan_only_at_point_1(fwd)
        adj = np.asarray(jax.jit(lambda p, w: op(p).H(w))(bad_locs(locs, value), y))
        assert np.isnan(adj).any()
        # the other points still spread their values: the grid is not all NaN
        assert np.isfinite(adj).any()


def test_functional_interpolate_under_vmap_gives_nan():
    locs = np.random.default_rng(7).uniform(1, 4, (2, 5, 2))
    locs[0, 1, 1] = np.nan
    x = rand(8, GRID)
    got = jax.vmap(lambda p: F.interpolate(x, p, 3.0))(jnp.asarray(locs))
    assert_nan_only_at_point_1(got[0])
    assert np.isfinite(np.asarray(got[1])).all()


# ------------------------------------------------------------------ points outside the grid
@pytest.mark.parametrize("outside", [-0.5, 7.25, 40.0])
def test_interpolate_zero_padding_point_outside_the_grid_gives_nan(outside):
    locs = bad_locs(np.random.default_rng(9).uniform(1, 4, (5, 2)), outside)
    x, y = rand(10, GRID), rand(11, (5,))
    op = jax.jit(lambda p, v: jl.Interpolate(p, GRID, width=3.0, pad_mode="zero")(v))
    assert_nan_only_at_point_1(op(locs, x))
    adj = jax.jit(lambda p, w: F.interpolate_adjoint(w, p, GRID, 3.0, pad_mode="zero"))(locs, y)
    assert np.isnan(np.asarray(adj)).any()


def test_interpolate_zero_padding_edges_are_inside():
    """0 and N - 1 are valid points: no NaN, and the reference kernel sum."""
    locs = np.array([[0.0, 5.0], [7.0, 0.0], [3.5, 2.5]])
    x = rand(12, GRID)
    got = jax.jit(lambda p, v: jl.Interpolate(p, GRID, width=3.0, pad_mode="zero")(v))(locs, x)
    want = ref_matrix(locs, GRID, 3.0, pad_mode="zero") @ np.asarray(x).ravel()
    np.testing.assert_allclose(got, want, rtol=1e-6)


# ------------------------------------------------------------------ out-of-range indices
def _raises_at_run_time(call, match):
    with pytest.raises(Exception, match=match) as info:
        jax.block_until_ready(call())
    assert re.search(match, str(info.value))


def test_sampling_out_of_range_traced_index_raises():
    x = jnp.arange(6.0)
    f = jax.jit(lambda i, v: jl.Sampling((i,), (6,), "K", "N")(v))
    np.testing.assert_array_equal(f(jnp.array([5, 0]), x), [5.0, 0.0])
    for bad in ([6, 0], [0, -1]):
        _raises_at_run_time(lambda: f(jnp.array(bad), x), r"`Sampling`: indices of axis 0")
    g = jax.vmap(lambda i: jl.Sampling((i,), (6,), "K", "N")(x))
    _raises_at_run_time(lambda: g(jnp.array([[1, 2], [3, 9]])), r"`Sampling`: indices of axis 0")


def test_index_out_of_range_traced_index_raises():
    x = jnp.arange(12.0).reshape(3, 4)
    f = jax.jit(lambda i: F.index(x, (i, i)))
    np.testing.assert_array_equal(f(jnp.array([-3, 2])), [x[-3, -3], x[2, 2]])
    _raises_at_run_time(lambda: f(jnp.array([0, 3])), r"`index`: indices of axis 0 .* \[-3, 2\]")
    g = jax.jit(lambda i: F.index_adjoint(jnp.ones(2), (i,), (4,)))
    _raises_at_run_time(lambda: g(jnp.array([0, -5])), r"`index_adjoint`: indices of axis 0")


def test_nufft_sampling_mode_non_finite_traced_point_raises():
    locs = bad_locs(random_locs(13, GRID, 4), np.nan)
    f = jax.jit(lambda p: jl.NUFFT(p, GRID, "K", mode="sampling")(jnp.ones(GRID)))
    _raises_at_run_time(lambda: f(locs), r"`NUFFT`: locs contain NaN or Inf")


# ------------------------------------------------------------------ huge finite points
def test_nufft_huge_frequencies_keep_their_precision():
    """float32 frequencies near 1e6 (spacing 1/16) and 1e9 (whole multiples of 64): the
    transform is N-periodic in each coordinate, so the exact DFT at the stored values is
    the reference. Without an exact reduction, scaling to the padded grid first rounds
    the position by up to 1/8 of a grid step at 1e6 and 64 steps at 1e9."""
    small = np.round(random_locs(14, GRID, 6) * 16) / 16
    huge = small + np.array(GRID) * 2.0**17  # about 1e6, exact in float32
    huge[0] = [1e9, -1e9 + 64]  # whole numbers in float32
    locs = huge.astype(np.float32)
    x = rand(15, GRID, jnp.complex64)
    want = dft_matrix(locs.astype(np.float64), GRID) @ np.asarray(x, np.complex128).ravel()
    got = jl.NUFFT(locs, GRID, "K", oversamp=2.0, width=6.0)(x)
    assert rel_err(got, want) <= 1e-4  # float32 NUFFT at (2, 6): about 1e-5
    traced = jax.jit(lambda p: jl.NUFFT(p, GRID, "K", oversamp=2.0, width=6.0)(x))(locs)
    assert rel_err(traced, want) <= 1e-4


@pytest.mark.parametrize("dtype, offset", [(np.float64, 1e12 + 0.3), (np.float32, 3e9)])
def test_interpolate_huge_points_are_wrapped_exactly(dtype, offset):
    """Circular padding: a point p and p + k N read the same grid entries. Past 2**31 the
    window origin overflowed int32 before the reduction modulo N."""
    locs = (np.random.default_rng(16).uniform(0, 5, (4, 2)) + offset).astype(dtype)
    x = rand(17, GRID, jnp.float64).astype(dtype)
    got = jl.Interpolate(locs, GRID, width=3.0)(x)
    want = ref_matrix(locs.astype(np.float64), GRID, 3.0) @ np.asarray(x, np.float64).ravel()
    # float32: the kernel evaluated at positions of float32 precision in [0, N)
    np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-6)
