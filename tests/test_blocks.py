"""Patch extraction (unfold/fold) and ArrayToBlocks/BlocksToArray against numpy loops."""

import itertools

import equinox as eqx
import jax
import numpy as np
import pytest
from helpers import assert_close, rand, rtol

import jaxlinops as jl

F = jl.functional

PLUS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
CROSS = np.zeros((3, 3, 3), bool)
CROSS[1, 1, :] = CROSS[1, :, 1] = CROSS[:, 1, 1] = True  # 7 voxels

# torchlinops' unfold fixtures: batch, image, block, stride, mask.
CASES = {
    "small1d": ((1,), (15,), (3,), (1,), np.array([False, True, False])),
    "medium1d": ((2, 2), (33,), (7,), (2,), None),
    "tiny2d": ((1,), (4, 4), (2, 2), (1, 1), None),
    "small2d": ((1,), (15, 15), (3, 3), (1, 1), PLUS),
    "medium2d": ((2, 2), (33, 43), (7, 7), (2, 2), None),
    "tiny3d": ((1,), (4, 4, 4), (2, 2, 2), (1, 1, 1), None),
    "small3d": ((1,), (15, 15, 15), (3, 3, 3), (1, 1, 1), CROSS),
    "medium3d": ((2, 2), (33, 43, 23), (7, 7, 5), (2, 2, 2), None),
    # strides beyond the block (gaps), not dividing it, and trailing uncovered samples
    "gaps2d": ((1,), (17, 13), (3, 2), (4, 5), None),
    "gapsmasked2d": ((2,), (19, 16), (3, 3), (5, 4), PLUS),
    "mixed3d": ((3,), (20, 18, 11), (8, 5, 3), (4, 3, 3), None),
}


# ------------------------------------------------------------------ numpy references
def ref_nblocks(im, block, stride):
    return tuple(len(range(0, i - b + 1, s)) for i, b, s in zip(im, block, stride))


def block_slices(im, block, stride):
    """(block index, image slices) for every block, by an explicit loop."""
    ranges = [range(0, i - b + 1, s) for i, b, s in zip(im, block, stride)]
    for k, starts in zip(
        itertools.product(*map(range, map(len, ranges))), itertools.product(*ranges)
    ):
        yield k, tuple(slice(t, t + b) for t, b in zip(starts, block))


def ref_unfold(x, block, stride, mask=None):
    ndim = len(block)
    im = x.shape[-ndim:]
    out = np.zeros(x.shape[:-ndim] + ref_nblocks(im, block, stride) + tuple(block), x.dtype)
    for k, sl in block_slices(im, block, stride):
        out[(Ellipsis, *k) + (slice(None),) * ndim] = x[(Ellipsis, *sl)]
    return out if mask is None else out[..., mask]


def ref_fold(y, im, block, stride, mask=None):
    ndim = len(block)
    nb = ref_nblocks(im, block, stride)
    if mask is not None:
        full = np.zeros(y.shape[:-1] + tuple(block), y.dtype)
        full[..., mask] = y
        y = full
    out = np.zeros(y.shape[: y.ndim - 2 * ndim] + tuple(im), y.dtype)
    for k, sl in block_slices(im, block, stride):
        out[(Ellipsis, *sl)] += y[(Ellipsis, *k) + (slice(None),) * ndim]
    assert y.shape[y.ndim - 2 * ndim : y.ndim - ndim] == nb
    return out


def ref_counts(im, block, stride, mask=None):
    counts = np.zeros(im, np.int64)
    weights = np.ones(block, np.int64) if mask is None else mask.astype(np.int64)
    for _, sl in block_slices(im, block, stride):
        counts[sl] += weights
    return counts


# ------------------------------------------------------------------ kernels
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
@pytest.mark.parametrize("case", sorted(CASES))
def test_unfold_fold_match_numpy_loops(case, dtype):
    batch, im, block, stride, mask = CASES[case]
    x = np.asarray(rand(1, batch + im, dtype))
    want = ref_unfold(x, block, stride, mask)
    y = np.asarray(rand(2, want.shape, dtype))

    unfold = jax.jit(lambda x: F.array_to_blocks(x, block, stride, mask))
    fold = jax.jit(jax.vmap(lambda y: F.blocks_to_array(y, im, block, stride, mask)))
    got = unfold(x)
    folded, round_trip = fold(np.stack([y, np.asarray(got)]))
    assert got.dtype == folded.dtype == dtype
    np.testing.assert_array_equal(got, want)
    assert_close(folded, ref_fold(y, im, block, stride, mask), dtype)
    assert_close(round_trip, x * ref_counts(im, block, stride, mask).astype(dtype), dtype)
    lhs, rhs = np.vdot(y, got), np.vdot(folded, x)
    assert abs(lhs - rhs) <= rtol(dtype) * np.linalg.norm(x) * np.linalg.norm(y)


def test_unfold_default_stride_and_any_ndim():
    x = np.arange(2 * 3 * 4 * 3 * 2, dtype=np.float32).reshape(2, 3, 4, 3, 2)
    got = F.array_to_blocks(x, (2, 2, 2, 2))
    np.testing.assert_array_equal(got, ref_unfold(x, (2, 2, 2, 2), (1, 1, 1, 1)))
    assert got.shape == (2, 2, 3, 2, 1, 2, 2, 2, 2)


def test_unfold_masked_entries_are_row_major():
    x = np.arange(16.0).reshape(4, 4)
    mask = np.array([[False, True], [True, True]])
    got = F.array_to_blocks(x, (2, 2), (2, 2), mask)
    np.testing.assert_array_equal(got[0, 1], [3.0, 6.0, 7.0])
    np.testing.assert_array_equal(got[1, 0], [9.0, 12.0, 13.0])


@pytest.mark.parametrize(
    "im, block, stride, want",
    [
        ((5, 5), (3, 3), (1, 1), (3, 3)),
        ((7, 7), (3, 3), (2, 2), (3, 3)),
        ((10, 10), (8, 8), (4, 4), (1, 1)),
    ],
)
def test_get_nblocks_torchlinops_examples(im, block, stride, want):
    assert F.get_nblocks(im, block, stride) == want == ref_nblocks(im, block, stride)


def test_get_nblocks_default_stride():
    assert F.get_nblocks((6, 4), (2, 3)) == (5, 2)


def test_kernel_errors():
    x = np.zeros((5, 5), np.float32)
    with pytest.raises(
        ValueError,
        match=r"`get_nblocks`: the block size \(6, 6\) is larger than the array size \(5, 5\)",
    ):
        F.get_nblocks((5, 5), (6, 6))
    with pytest.raises(
        ValueError,
        match=r"`array_to_blocks`: the block size \(3, 6\) is larger than the array size \(5, 5\)",
    ):
        F.array_to_blocks(x, (3, 6))
    with pytest.raises(ValueError, match=r"`blocks_to_array`: the block size \(6, 3\) is larger"):
        F.blocks_to_array(x, (5, 5), (6, 3))
    with pytest.raises(
        ValueError,
        match=r"need the same .* got array size \(5, 5\), block size \(3, 3\) and stride \(1,\)",
    ):
        F.array_to_blocks(x, (3, 3), (1,))
    with pytest.raises(
        ValueError, match=r"`get_nblocks`: the array size, block size and stride need the same"
    ):
        F.get_nblocks((5,), (3, 3))
    with pytest.raises(
        ValueError,
        match=r"`array_to_blocks`: sizes and strides must be positive; .* stride \(0, 1\)",
    ):
        F.array_to_blocks(x, (3, 3), (0, 1))
    with pytest.raises(
        ValueError,
        match=r"`array_to_blocks`: `mask` must have the block shape \(3, 3\); got shape \(3,\)",
    ):
        F.array_to_blocks(x, (3, 3), mask=np.ones(3, bool))
    with pytest.raises(
        TypeError, match="`blocks_to_array`: `mask` must be a boolean array; got dtype int64"
    ):
        F.blocks_to_array(np.zeros((3, 3, 9)), (5, 5), (3, 3), mask=np.ones((3, 3), np.int64))
    with pytest.raises(
        ValueError, match=r"`array_to_blocks`: a 3D block needs .* got an array of shape \(5, 5\)"
    ):
        F.array_to_blocks(x, (2, 2, 2))
    with pytest.raises(
        ValueError,
        match=r"`blocks_to_array`: expected the last 4 axes .* \(3, 3, 3, 3\) .* \(3, 3, 9\)",
    ):
        F.blocks_to_array(np.zeros((3, 3, 9), np.float32), (5, 5), (3, 3))


# ------------------------------------------------------------------ operators
def test_array_to_blocks_operator_defaults_and_sizes():
    A = jl.ArrayToBlocks((7, 6), (3, 2), (2, 2))
    assert A.ishape == ("...", "Nx", "Ny") and A.oshape == ("...", "Bx", "By", "Px", "Py")
    assert [A.size(d) for d in ("Nx", "Ny", "Bx", "By", "Px", "Py", "C")] == [
        7,
        6,
        3,
        3,
        3,
        2,
        None,
    ]
    x = np.asarray(rand(0, (2, 7, 6), np.complex64))
    np.testing.assert_array_equal(A(x), ref_unfold(x, (3, 2), (2, 2)))
    y = np.asarray(rand(1, (2, 3, 3, 3, 2), np.complex64))
    assert_close(A.H(y), ref_fold(y, (7, 6), (3, 2), (2, 2)), np.complex64)
    with pytest.raises(ValueError, match="expected dim Ny with size 6"):
        A(np.zeros((7, 5), np.float32))


def test_masked_operator_has_one_block_dim():
    A = jl.ArrayToBlocks((15, 15), (3, 3), (1, 1), mask=PLUS, batch_shape="C")
    assert A.oshape == ("C", "Bx", "By", "P") and A.size("P") == 5 and A.size("Bx") == 13
    np.testing.assert_array_equal(A.block_mask, PLUS)
    x = np.asarray(rand(0, (2, 15, 15), np.float32))
    np.testing.assert_array_equal(A(x), ref_unfold(x, (3, 3), (1, 1), PLUS))


def test_adjoints_swap_classes_and_round_trip():
    A = jl.ArrayToBlocks(
        (5,), (3,), (1,), mask=np.array([True, False, True]), array_shape="N", blocks_shape="KM"
    )
    B = A.H
    assert (
        isinstance(B, jl.BlocksToArray)
        and B.ishape == ("...", "K", "M")
        and B.oshape == ("...", "N")
    )
    assert eqx.tree_equal(B.H, A) and eqx.tree_equal(B.H.H, B)
    y = np.asarray(rand(0, (3, 2), np.float32))
    assert_close(B(y), ref_fold(y, (5,), (3,), (1,), np.array([True, False, True])), np.float32)


@pytest.mark.parametrize("mask", [None, PLUS])
def test_normal_is_overlap_counts(mask):
    A = jl.ArrayToBlocks((6, 5), (3, 3), (1, 2), mask=mask, batch_shape="C")
    N = A.N
    assert N.ishape == ("C", "Nx", "Ny") and N.oshape == ("C", "Nx1", "Ny1")
    x = np.asarray(rand(0, (2, 6, 5), np.complex128))
    assert_close(N(x), x * ref_counts((6, 5), (3, 3), (1, 2), mask), np.complex128)
    inner = jl.Diagonal(np.full(A.nblocks + ((3, 3) if mask is None else (5,)), 2.0), A.oshape)
    assert_close(
        A.normal(inner)(x), 2 * x * ref_counts((6, 5), (3, 3), (1, 2), mask), np.complex128
    )


def test_operator_errors():
    with pytest.raises(
        ValueError,
        match=r"`ArrayToBlocks`: the block size \(4,\) is larger than the array size \(3,\)",
    ):
        jl.ArrayToBlocks((3,), (4,), (1,))
    with pytest.raises(
        ValueError, match=r"`BlocksToArray`: the array size, block size and stride need the same"
    ):
        jl.BlocksToArray((5, 5), (3, 3), (1,))
    with pytest.raises(
        TypeError, match="`ArrayToBlocks`: `mask` must be a boolean array; got dtype float64"
    ):
        jl.ArrayToBlocks((5,), (3,), mask=np.ones(3))
    with pytest.raises(
        ValueError,
        match=r"`ArrayToBlocks\(\(\.\.\., Nx\) -> \(\.\.\., Bx, By, P\)\)`: `blocks_shape` must",
    ):
        jl.ArrayToBlocks((5,), (3,), mask=np.ones(3, bool), blocks_shape="BxByP")
    with pytest.raises(
        ValueError, match=r"`array_shape` must name 2 dims \(no '...'\); got \(Nx\)"
    ):
        jl.ArrayToBlocks((5, 5), (3, 3), array_shape="Nx")
    with pytest.raises(
        ValueError, match="`BlocksToArray.*`: batch, array and blocks dims must all be distinct"
    ):
        jl.BlocksToArray((5,), (3,), batch_shape="Bx")
