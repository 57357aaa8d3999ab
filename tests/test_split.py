"""`jl.split`: tiles Q A P^T of NUFFT (forward, adjoint, Toeplitz normal), Interpolate,
blocks, containers and internal dims, each against slices of the unsplit operator's
output; and the errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from test_nufft import random_locs

import jaxlinops as jl

C128 = jnp.complex128


def nufft(**kwargs):
    locs = random_locs(40, (6, 6), 12).reshape(3, 4, 2)
    return jl.NUFFT(locs, (6, 6), "R K", batch_shape="C", oversamp=2.0, **kwargs)


def test_nufft_forward_adjoint_and_toeplitz_normal():
    A, x = nufft(), rand(41, (4, 6, 6))
    y = A(x)
    tile = jl.split(A, {"C": slice(1, 3), "K": slice(2, 4), "R": slice(0, 2)})
    assert tile.plan.locs.shape == (2, 2, 2)
    assert_close(tile(x[1:3]), y[1:3, 0:2, 2:4], C128)
    # the adjoint of a tile along output dims: the columns of A.H for those points
    yt = rand(42, (2, 3, 2))
    embedded = jnp.zeros((2, 3, 4), C128).at[..., 2:].set(yt)
    assert_close(jl.split(A.H, {"C": slice(0, 2), "K": slice(2, 4)})(yt), A.H(embedded), C128)
    # Toeplitz normal: batch dim C splits; the coil tiles are the slices of the output
    N = nufft(toeplitz=True).N
    assert_close(jl.split(N, {"C": slice(2, 4)})(x[2:]), N(x)[2:], C128)
    with pytest.raises(ValueError, match=r"`NUFFT` \(.*\) cannot be split along dim 'Nx'"):
        jl.split(A, {"Nx": slice(0, 3)})


def test_interpolate_and_blocks():
    locs = np.random.default_rng(43).uniform(0, 7, (5, 3, 2))
    op = jl.Interpolate(locs, (8, 8), batch_shape="B", locs_batch_shape="P Q")
    x = rand(44, (2, 8, 8))
    assert_close(jl.split(op, {"Q": slice(1, 3), "B": slice(1, 2)})(x[1:]), op(x)[1:, :, 1:], C128)
    blocks = jl.ArrayToBlocks((6, 6), (2, 2), (2, 2), batch_shape="B")
    x = rand(45, (3, 6, 6))
    assert_close(jl.split(blocks, {"B": slice(0, 2)})(x[:2]), blocks(x)[:2], C128)
    with pytest.raises(ValueError, match="`ArrayToBlocks` .* cannot be split along dim 'Nx'"):
        jl.split(blocks, {"Nx": slice(0, 2)})


def test_internal_dim_tiles_sum_to_the_operator():
    first = jl.Dense(rand(46, (5, 3)), "N K", "K", "N")
    second = jl.Dense(rand(47, (2, 5)), "M N", "N", "M")
    A = second @ first  # N is internal: the tiles are partial sums over it
    x = rand(48, (3,))
    parts = [jl.split(A, {"N": slice(i, i + 2)})(x) for i in (0, 2, 4)]
    assert_close(sum(parts), A(x), C128)


def test_concat_keeps_the_blocks_a_tile_covers():
    blocks = [jl.Dense(rand(50 + i, (2, 1 + i)), "M N", "N", "M") for i in range(3)]
    horizontal = jl.Concat(*blocks, idim="N")  # N = 1 + 2 + 3
    x = rand(53, (6,))
    tile = jl.split(horizontal, {"N": slice(2, 4)})  # the last of block 1, the first of 2
    assert len(tile.linops) == 2
    assert_close(tile(x[2:4]), horizontal(jnp.zeros(6, C128).at[2:4].set(x[2:4])), C128)
    diagonal = jl.Concat(*[jl.Dense(rand(54 + i, (2, 3)), "M N", "N", "M") for i in range(2)],
                         idim="N", odim="M")  # fmt: skip
    x = rand(56, (6,))
    # input tile inside block 0 only: block 1's output rows stay, as zeros
    tile = jl.split(diagonal, {"N": slice(0, 2)})
    assert [type(op).__name__ for op in tile.linops] == ["Dense", "Zero"]
    assert_close(tile(x[:2]), diagonal(jnp.zeros(6, C128).at[:2].set(x[:2])), C128)
    # an input tile in block 0 and an output tile in block 1: nothing couples them
    empty = jl.split(diagonal, {"N": slice(0, 2), "M": slice(3, 4)})
    assert [type(op).__name__ for op in empty.linops] == ["Zero", "Zero"]
    assert_close(empty(x[:2]), jnp.zeros(1, C128), C128)


def matrix_of(A, isizes):
    """The matrix of `A` as an array of shape (output sizes) + `isizes`."""
    k = int(np.prod(isizes))
    cols = jax.vmap(A)(jnp.eye(k, dtype=C128).reshape(k, *isizes))
    return jnp.moveaxis(
        cols.reshape(*isizes, *cols.shape[1:]), range(len(isizes)), range(-len(isizes), 0)
    )


def test_stack_tiles_are_blocks_of_its_matrix():
    ws = [rand(57 + i, (2, 3)) for i in range(3)]
    ops = [jl.Dense(w, "M N", "N", "M") for w in ws]
    vertical = jl.Stack(*ops, odim_and_idx=("L", 0))
    x = rand(60, (3,))
    assert_close(jl.split(vertical, {"L": slice(1, 3)})(x), vertical(x)[1:], C128)
    # block diagonal (I N) -> (L M): entry [l, m, i, n] = ws[l][m, n] where i == l
    diagonal = jl.Stack(*ops, idim_and_idx=("I", 0), odim_and_idx=("L", 0))
    matrix = np.einsum("li,lmn->lmin", np.eye(3), np.stack(ws))
    assert_close(matrix_of(diagonal, (3, 3)), matrix, C128)
    tiles = [
        {"I": slice(0, 1)},  # along one block dim: the other keeps every block's row
        {"L": slice(1, 3)},
        {"I": slice(0, 2), "L": slice(1, 3)},  # overlapping: one block, zeros around it
        {"I": slice(0, 1), "L": slice(2, 3), "N": slice(1, 3)},  # off the diagonal: zero
        {"I": slice(1, 3), "L": slice(1, 3), "M": slice(0, 1)},  # same range: a Stack
    ]
    for tile in tiles:
        rows, cols, m, n = (tile.get(d, slice(None)) for d in ("L", "I", "M", "N"))
        want = matrix[rows, m, cols, n]
        T = jl.split(diagonal, tile)
        assert_close(matrix_of(T, want.shape[2:]), want, C128)
        adjoint = np.conj(np.moveaxis(want, (0, 1), (2, 3)))
        assert_close(matrix_of(T.H, want.shape[:2]), adjoint, C128)
    assert isinstance(jl.split(diagonal, tiles[-1]), jl.Stack)


def test_sized_dims_follow_the_tile_and_jit():
    zero = jl.split(jl.Zero("N", "M", {"M": 5, "N": 3}), {"M": slice(1, 5)})
    assert zero(jnp.ones(3)).shape == (4,)
    repeat = jl.split(jl.Repeat({"C": 3}, "A", "A C"), {"C": slice(0, 2)})
    assert repeat(jnp.ones(4)).shape == (4, 2) and repeat.size("C") == 2
    A, x = nufft(), rand(61, (2, 6, 6))
    tiled = jax.jit(lambda op, v: jl.split(op, {"K": slice(1, 3)})(v))(A, x)
    assert_close(tiled, A(x)[..., 1:3], C128)


@pytest.mark.parametrize(
    "tile, error, match",
    [
        ({"C": 1}, TypeError, "tile of dim 'C' must be a slice"),
        ({"C": slice(0, 4, 2)}, TypeError, "step 1"),
        ({"C": slice(-1, None)}, TypeError, "non-negative integer bounds"),
        ({"K": slice(4, 9)}, ValueError, r"tile slice\(4, 9, None\) of dim 'K' \(size 4\)"),
        ({"X": slice(0, 1)}, ValueError, r"dims \['X'\] are not dims of NUFFT"),
    ],
)
def test_errors(tile, error, match):
    with pytest.raises(error, match=match):
        jl.split(nufft(), tile)
    with pytest.raises(TypeError, match="`split` expects a NamedLinop"):
        jl.split(np.eye(2), {})


def test_split_linop_grid_as_torchlinops():
    W = rand(62, (10, 3, 7))
    A = jl.Dense(W, "B M N", "B N", "B M")
    tiles, ins, outs = jl.split_linop(A, {"N": 2, "M": 1})
    assert tiles.shape == (4, 3) and ins.shape == outs.shape == (4, 3)
    assert_close(tiles[1, 2].weight, W[:, 2:3, 2:4], C128)
    assert ins[1, 2] == [slice(None), slice(2, 4)] and outs[1, 2] == [slice(None), slice(2, 3)]
    assert ins[3, 0] == [slice(None), slice(6, 7)]  # ragged: 7 = 2 + 2 + 2 + 1
    # reassembly: N only in the input is summed, M in the output is concatenated
    x = rand(63, (10, 7))
    y = jnp.zeros((10, 3), C128)
    for index in np.ndindex(tiles.shape):
        y = y.at[tuple(outs[index])].add(tiles[index](x[tuple(ins[index])]))
    assert_close(y, A(x), C128)


def test_split_linop_needs_sizes_of_unfixed_dims():
    A = nufft()
    with pytest.raises(ValueError, match=r"does not fix the size of dim 'C'; pass it as `sizes"):
        jl.split_linop(A, {"C": 2})
    tiles, ins, _ = jl.split_linop(A, {"C": 3, "K": 3}, sizes={"C": 4})
    assert tiles.shape == (2, 2) and ins[1, 0][0] == slice(3, 4)
    with pytest.raises(ValueError, match="tile size of dim 'K' must be a positive integer"):
        jl.split_linop(A, {"K": 0})


def test_split_linop_binds_torchlinops_names_and_named_dimensions():
    """`split_linop(linop=..., batch_sizes=...)` as torchlinops, with NamedDimension keys
    (equal to their names), gives the grid of the string keys."""
    from jaxlinops.nameddim import ND

    W = rand(64, (4, 6))
    A = jl.Dense(W, "M N", "N", "M")
    tiles, ins, outs = jl.split_linop(linop=A, batch_sizes={ND("N"): 4, ND("M"): 3})
    want, want_ins, want_outs = jl.split_linop(A, {"N": 4, "M": 3})
    assert tiles.shape == want.shape == (2, 2)
    for index in np.ndindex(tiles.shape):
        assert_close(tiles[index].weight, want[index].weight, C128)
        assert ins[index] == want_ins[index] and outs[index] == want_outs[index]
    sub = jl.NamedLinop.split(A, {ND("N"): slice(0, 2)})
    assert_close(sub.weight, W[:, :2], C128)
