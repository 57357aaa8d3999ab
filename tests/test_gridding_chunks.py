"""The chunked gridding path (`functional/_gridding.py`): points are gathered and scattered
in chunks of `_chunk_size(batch, window)` points (`_CHUNK` window entries, 2**19), which
every realistic-size NUFFT takes. Checked at real sizes against a vectorised numpy kernel
sum, with several chunks and a ragged last one, and with tiny forced chunks against the
unchunked path for every kind of boundary (one chunk, an exact multiple, ragged)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand
from test_nufft import dft_matrix, rel_err

import jaxlinops as jl
from jaxlinops.functional import _gridding
from jaxlinops.functional._kernels import KernelSettings

F = jl.functional


def kb(x, beta):
    """The Kaiser–Bessel kernel I0(beta sqrt(1 - x^2)) on |x| <= 1, 0 outside."""
    inside = np.abs(x) <= 1
    return np.where(inside, np.i0(beta * np.sqrt(np.clip(1 - x * x, 0, None))), 0.0)


def window_weights(locs, grid, width, beta):
    """Per axis: the grid points g = ceil(p - w/2) + k, k = 0..floor(w), which hold every
    g with |g - p| <= w/2, wrapped into the grid, and their weights K((g - p) / (w/2))."""
    r = width / 2
    k = np.arange(int(np.floor(width)) + 1)
    out = []
    for d, n in enumerate(grid):
        g = np.ceil(locs[:, d] - r)[:, None] + k  # [P, L]
        out.append((g.astype(int) % n, kb((g - locs[:, d, None]) / r, beta)))
    return out


def reference(x, locs, width, beta):
    """Forward [B, *grid] -> [B, P] and its adjoint: the 2-D kernel sum, vectorised."""
    (i, wi), (j, wj) = window_weights(locs, x.shape[1:], width, beta)
    weights = wi[:, :, None] * wj[:, None, :]  # [P, L, L]
    return np.einsum("bpkl,pkl->bp", x[:, i[:, :, None], j[:, None, :]], weights), weights, i, j


def spread(y, grid, weights, i, j):
    out = np.zeros((y.shape[0], *grid), y.dtype)
    for b in range(y.shape[0]):
        np.add.at(out[b], (i[:, :, None], j[:, None, :]), y[b, :, None, None] * weights)
    return out


def test_real_size_interpolation_takes_several_chunks_with_a_ragged_last_one():
    grid, batch, width, beta = (16, 12), 2, 4.0, 2.0
    chunk = _gridding._chunk_size(batch, _gridding.window_sizes((width, width)))
    points = 3 * chunk + 17  # four chunks, the last one of 17 points
    locs = np.random.default_rng(0).uniform(-2, 20, (points, 2))  # wraps around too
    x, y = np.asarray(rand(1, (batch, *grid))), np.asarray(rand(2, (batch, points)))
    want, weights, i, j = reference(x, locs, width, beta)
    params = {"beta": beta}
    got = F.interpolate(x, locs, width, kernel_params=params)
    assert rel_err(got, want) <= 1e-6  # A&S I0 vs np.i0
    back = F.interpolate_adjoint(y, locs, grid, width, kernel_params=params)
    assert rel_err(back, spread(y, grid, weights, i, j)) <= 1e-6


def test_real_size_nufft_takes_two_chunks():
    grid = (16,)
    chunk = _gridding._chunk_size(1, _gridding.window_sizes((6.0,)))
    points = chunk + 1000
    locs = np.random.default_rng(3).uniform(-8, 8, (points, 1))
    op = jl.NUFFT(locs, grid, "K", oversamp=2.0, width=6.0)
    x, y = rand(4, grid), rand(5, (points,))
    E = dft_matrix(locs, grid)
    assert rel_err(op(x), E @ np.asarray(x)) <= 1e-4  # (2, 6): about 1e-5
    assert rel_err(op.H(y), E.conj().T @ np.asarray(y)) <= 1e-4


@pytest.mark.parametrize("points", [5, 8, 13, 24, 25])
def test_forced_small_chunks_match_the_unchunked_path(monkeypatch, points):
    """Window 3x3, batch 2: with `_CHUNK = 72` a chunk holds 4 points; 5 (ragged), 8
    (exact), 13, 24 and 25 points span 2 to 7 chunks."""
    grid, width = (7, 6), 2.0
    locs = jnp.asarray(np.random.default_rng(points).uniform(0, 7, (points, 2)))
    x, y = rand(6, (2, *grid)), rand(7, (2, points))

    def run():
        settings = KernelSettings((width, width), "spline", 1, "circular", ())
        nbhd = _gridding.neighbourhoods(locs, grid, settings)
        fwd = _gridding.gather_windows(x, nbhd, "circular")
        return fwd, _gridding.scatter_windows(y, nbhd, grid, "circular")

    whole = jax.jit(run)()
    monkeypatch.setattr(_gridding, "_CHUNK", 72)
    assert _gridding._chunk_size(2, (3, 3)) == 4
    chunked = jax.jit(lambda: run())()  # a new function: traced with the small chunks
    for got, want in zip(chunked, whole):
        assert rel_err(got, want) <= 1e-10  # the scatter may add in another order
    # and the unchunked path itself against the kernel sum (spline: 1 - |x|)
    M = np.zeros((points, *grid))
    r = width / 2
    for p, (a, b) in enumerate(np.asarray(locs)):
        for gi in range(int(np.floor(a - r)), int(np.ceil(a + r)) + 1):
            for gj in range(int(np.floor(b - r)), int(np.ceil(b + r)) + 1):
                w = max(1 - abs(gi - a) / r, 0) * max(1 - abs(gj - b) / r, 0)
                M[p, gi % grid[0], gj % grid[1]] += w
    M = M.reshape(points, -1)
    assert rel_err(whole[0], np.asarray(x).reshape(2, -1) @ M.T) <= 1e-12
    assert rel_err(whole[1], (np.asarray(y) @ M).reshape(2, *grid)) <= 1e-12
