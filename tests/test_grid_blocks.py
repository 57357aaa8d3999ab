"""Blocks on a split grid: `ArrayToBlocks` split along an array dim across 2, 3 and 8
simulated devices (its blocks are the points of `jaxlinops.sharding._grid._points`, each
carrying its entries), and `BlocksToArray` split along its output array dim, give the
forward, adjoint and normal of a numpy block extraction, pass the dot test, keep the grid
split in the compiled program (no all-gather), blocks wider than a slab included.
`BlocksAt`, the piece each device runs, is checked against numpy on its own."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split as split, rand, rtol

import jaxlinops as jl
from jaxlinops.linops._blocks_at import BlocksAt
from jaxlinops.sharding._grid._points import Points
from jaxlinops.testing import inner

C128 = jnp.complex128


def unfold(x, block, stride, mask=None):
    """numpy: `y[..., k, p] = x[..., k s + p]` over the last `len(block)` axes, the block
    entries kept where `mask` is True (row-major, one axis)."""
    ndim = len(block)
    im = x.shape[x.ndim - ndim :]
    nblocks = tuple((n - b) // s + 1 for n, b, s in zip(im, block, stride))
    y = np.zeros(x.shape[: x.ndim - ndim] + nblocks + tuple(block), x.dtype)
    for k in itertools.product(*map(range, nblocks)):
        window = tuple(slice(k[d] * stride[d], k[d] * stride[d] + block[d]) for d in range(ndim))
        y[(..., *k) + (slice(None),) * ndim] = x[(..., *window)]
    return y if mask is None else y[..., np.asarray(mask)]


def fold(y, im, block, stride, mask=None):
    """numpy: the adjoint of `unfold`, the blocks added back at their origins."""
    ndim = len(block)
    if mask is not None:
        full = np.zeros(y.shape[:-1] + tuple(block), y.dtype)
        full[..., np.asarray(mask)] = y
        y = full
    nblocks = y.shape[y.ndim - 2 * ndim : y.ndim - ndim]
    x = np.zeros(y.shape[: y.ndim - 2 * ndim] + tuple(im), y.dtype)
    for k in itertools.product(*map(range, nblocks)):
        window = tuple(slice(k[d] * stride[d], k[d] * stride[d] + block[d]) for d in range(ndim))
        x[(..., *window)] += y[(..., *k) + (slice(None),) * ndim]
    return x


def check_split(B, x, y, want_fwd, want_adj, want_normal):
    """B's forward, adjoint and normal (one compiled program) equal the numpy references,
    and pass the dot test <y, B x> = <B^H y, x>."""
    got = jax.jit(lambda B, x, y: (B(x), B.H(y), B.N(x)))(B, x, y)
    for g, want in zip(got, (want_fwd, want_adj, want_normal)):
        assert_close(g, want, C128)
    dot_test(x, y, got[0], got[1])


def dot_test(x, y, Bx, BHy):
    """<y, B x> = <B^H y, x>, to the precision of the inner products' scale."""
    scale = float(
        jnp.linalg.norm(y) * jnp.linalg.norm(Bx) + jnp.linalg.norm(BHy) * jnp.linalg.norm(x)
    )
    assert abs(complex(inner(y, Bx) - inner(BHy, x))) <= rtol(C128) * scale


def random_mask(block, seed):
    mask = np.random.default_rng(seed).random(block) < 0.6
    mask.flat[0] = True
    return mask


CASES = [
    # grid, block, stride, masked, batch, devices, dim
    ((11, 6), (3, 2), (2, 1), False, (), 2, "Nx"),  # overlap; ragged (12 padded rows)
    ((10, 7), (3, 3), (3, 3), True, (2,), 3, "Nx"),  # stride == block, ragged, masked
    ((19, 5), (3, 3), (1, 2), True, (), 8, "Nx"),  # overlap; the last device holds nothing
    ((16, 4), (2, 2), (2, 2), False, (2,), 8, "Nx"),  # stride == block, even
    ((5, 8, 4), (2, 3, 2), (1, 2, 2), False, (2,), 3, "Ny"),  # 3-D, a middle dim, ragged
    ((4, 4, 9), (2, 2, 3), (2, 2, 3), True, (), 2, "Nz"),  # 3-D, stride == block, masked
    ((17, 3, 3), (2, 2, 2), (1, 1, 2), True, (2,), 8, "Nx"),  # 3-D, devices 6-7 hold none
    ((8, 8), (4, 4), (2, 2), False, (), 8, "Nx"),  # blocks over 4 slabs of 1: 3 hops
]


@pytest.mark.parametrize(
    "grid, block, stride, masked, batch, devices, dim",
    CASES,
    ids=["2d-2", "2d-mask-3", "2d-mask-8", "2d-even-8", "3d-3", "3d-mask-2", "3d-mask-8", "wide-8"],
)
def test_grid_split_array_to_blocks_equals_numpy(grid, block, stride, masked, batch, devices, dim):
    mask = random_mask(block, len(grid) + devices) if masked else None
    A = jl.ArrayToBlocks(grid, block, stride, mask=mask)
    B = split(A, devices, dim)
    x = rand(1, batch + grid)
    y = rand(2, batch + A.nblocks + A.geometry.entries)
    want_fwd = unfold(np.asarray(x), block, stride, mask)
    want_adj = fold(np.asarray(y), grid, block, stride, mask)
    want_normal = fold(unfold(np.asarray(x), block, stride, mask), grid, block, stride, mask)
    check_split(B, x, y, want_fwd, want_adj, want_normal)
    # the normal is the overlap counts, split entry by entry (no blocks moved)
    assert B.normal_split is not None
    assert not any(isinstance(s, Points) for s in B.normal_split.stages)


@pytest.mark.parametrize(
    "grid, block, stride, masked, devices",
    [((9, 6), (3, 2), (2, 2), False, 3), ((12, 5), (2, 3), (1, 1), True, 8)],
    ids=["3", "mask-8"],
)
def test_grid_split_blocks_to_array_along_its_output_dim(grid, block, stride, masked, devices):
    """`BlocksToArray` split along `Nx`, a dim of its output: the adjoint of
    `ArrayToBlocks` split there (its input, the blocks, arrives split along `Bx`)."""
    mask = random_mask(block, 5) if masked else None
    A = jl.BlocksToArray(grid, block, stride, mask=mask, batch_shape="C")
    B = split(A, devices, "Nx")
    blocks = (2,) + A.nblocks + A.geometry.entries
    x, y = rand(3, blocks), rand(4, (2,) + grid)
    want_fwd = fold(np.asarray(x), grid, block, stride, mask)
    want_adj = unfold(np.asarray(y), block, stride, mask)
    want_normal = unfold(want_fwd, block, stride, mask)
    check_split(B, x, y, want_fwd, want_adj, want_normal)


def test_grid_split_weighted_blocks_chain():
    """Weights on the blocks after the extraction (`Diagonal` over `Bx, By, Px, Py`) split
    along `Nx` over 3 devices: the weights follow the blocks, split along `Bx`."""
    grid, block, stride = (13, 6), (4, 3), (3, 1)
    A = jl.ArrayToBlocks(grid, block, stride, batch_shape="C")
    w = rand(7, A.nblocks + block)
    W = jl.Diagonal(w, ("C", "Bx", "By", "Px", "Py"), "C")
    B = split(W @ A, 3, "Nx")
    x, y = rand(8, (2, *grid)), rand(9, (2, *A.nblocks, *block))
    wn, blocks = np.asarray(w), unfold(np.asarray(x), block, stride)
    want_fwd = wn * blocks
    want_adj = fold(np.conj(wn) * np.asarray(y), grid, block, stride)
    want_normal = fold(np.abs(wn) ** 2 * blocks, grid, block, stride)
    check_split(B, x, y, want_fwd, want_adj, want_normal)


def test_compiled_grid_split_blocks_exchanges_and_never_gathers_the_grid():
    """ArrayToBlocks (20x8 array, 6x4 blocks, stride 2: 8x3 blocks) split along Nx over 4
    devices: its forward and adjoint exchange halos (`collective-permute`), send the blocks
    to their owners (`all-to-all`) and gather nothing. (Even sizes: a ragged output is
    resharded when its padding is cut.)"""
    A = jl.ArrayToBlocks((20, 8), (6, 4), (2, 2))
    B = split(A, 4, "Nx")
    x, y = rand(1, (20, 8)), rand(2, A.nblocks + (6, 4))
    text = jax.jit(lambda B, x, y: (B(x), B.H(y))).lower(B, x, y).compile().as_text()
    assert "all-to-all" in text and "collective-permute" in text
    assert "all-gather" not in text


@pytest.mark.parametrize("masked", [False, True])
def test_blocks_at_given_origins_equals_numpy_and_passes_the_dot_test(masked):
    """The local piece: blocks at arbitrary (unsorted, repeated, overlapping) origins,
    forward against numpy slicing, adjoint against numpy adding back, and the dot test."""
    grid, block = (6, 5), (3, 2)
    keep = random_mask(block, 1) if masked else np.ones(block, bool)
    mask = tuple(map(bool, keep.ravel())) if masked else None
    entries = ("P",) if masked else ("Px", "Py")
    origins = np.array([[3, 0], [0, 3], [1, 1], [3, 0], [2, 2]], np.int32)
    op = BlocksAt(jnp.asarray(origins), grid, block, mask, ("C",), ("Nx", "Ny"), ("L", *entries))
    windows = [tuple(slice(o, o + b) for o, b in zip(origin, block)) for origin in origins]
    x = rand(5, (2, *grid))
    want = np.stack([np.asarray(x)[(..., *w)][..., keep] for w in windows], axis=1)
    got = jax.jit(lambda op, x: op(x))(op, x)
    assert_close(got, want.reshape(got.shape), C128)
    y = rand(6, got.shape)
    values = np.asarray(y).reshape(2, len(origins), -1)
    back = np.zeros((2, *grid), complex)
    for i, window in enumerate(windows):
        part = np.zeros((2, *block), complex)
        part[..., keep] = values[:, i]
        back[(..., *window)] += part
    got_back = jax.jit(lambda op, y: op.H(y))(op, y)
    assert_close(got_back, back, C128)
    dot_test(x, y, got, got_back)


def test_blocks_at_refuses_a_block_outside_the_array():
    origins = jnp.asarray([[0, 0], [4, 1]])
    with pytest.raises(ValueError, match=r"BlocksAt.*inside the array.*to \(4, 1\)"):
        BlocksAt(origins, (6, 5), (3, 2), None, (), ("Nx", "Ny"), ("L", "Px", "Py"))
