"""Sampling and the index kernels against numpy fancy indexing and `np.add.at`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close

import jaxlinops as jl

F = jl.functional
RNG = np.random.default_rng(0)

# Points on a (4, 5) grid laid out as (2, 3); (1, 2) appears twice.
IDX = (
    np.array([[0, 1, 3], [1, 3, 2]], np.int32),
    np.array([[4, 2, 0], [2, 1, 2]], np.int32),
)


def randn(*shape, dtype=np.complex128):
    x = RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)
    return (x if np.dtype(dtype).kind == "c" else x.real).astype(dtype)


def scatter_add(vals, idx, grid_size):
    """Independent reference for index_adjoint: np.add.at with a batch slice."""
    batch = vals.shape[: vals.ndim - idx[0].ndim]
    out = np.zeros(batch + tuple(grid_size), vals.dtype)
    np.add.at(out, (Ellipsis, *idx), vals)
    return out


# ------------------------------------------------------------------ index kernels
@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_index_matches_fancy_indexing(dtype):
    x = randn(3, 4, 5, dtype=dtype)
    got = F.index(x, IDX)
    assert got.dtype == dtype
    assert_close(got, x[:, IDX[0], IDX[1]], dtype)


def test_index_1d_and_no_batch():
    x = randn(7)
    idx = (np.array([6, 0, 3, 3], np.int32),)
    assert_close(F.index(x, idx), x[idx[0]], np.complex128)


def test_index_negative_indices_wrap_like_numpy():
    x = randn(2, 4, 5)
    idx = (np.array([-1, 0, -4]), np.array([2, -5, -1]))
    assert_close(F.index(x, idx), x[:, idx[0], idx[1]], np.complex128)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_index_adjoint_accumulates_duplicates(dtype):
    vals = randn(3, 2, 3, dtype=dtype)
    got = F.index_adjoint(vals, IDX, (4, 5))
    assert got.shape == (3, 4, 5) and got.dtype == dtype
    want = scatter_add(vals, IDX, (4, 5))
    assert_close(got, want, dtype)
    assert np.count_nonzero(np.asarray(got)[0]) == 5  # 6 points, one grid point hit twice


def test_index_adjoint_torchlinops_example():
    got = F.index_adjoint(np.array([5.0, 4.0, -1.0]), (np.array([1, 3, 2]),), (4,))
    np.testing.assert_array_equal(got, [0.0, 5.0, -1.0, 4.0])


def test_index_adjoint_is_the_adjoint_of_index():
    x, y = randn(2, 4, 5), randn(2, 2, 3)
    lhs = np.vdot(y, F.index(x, IDX))
    rhs = np.vdot(F.index_adjoint(y, IDX, (4, 5)), x)
    assert abs(lhs - rhs) < 1e-10 * abs(lhs)


def test_index_mixed_index_dtypes_and_jit():
    x = randn(4, 5)
    idx = (jnp.asarray(IDX[0]), jnp.asarray(IDX[1], jnp.int64))
    got = jax.jit(F.index)(x, idx)
    assert_close(got, x[IDX[0], IDX[1]], np.complex128)


def test_index_out_of_range_concrete_indices():
    x = randn(4, 5)
    with pytest.raises(ValueError, match=r"`index`: indices of axis 1 must lie in \[-5, 4\]"):
        F.index(x, (IDX[0], IDX[1] + 1))
    with pytest.raises(ValueError, match=r"`index_adjoint`: indices of axis 0 .* \[-4, 3\]"):
        F.index_adjoint(randn(2, 3), (IDX[0] - 5, IDX[1]), (4, 5))
    with pytest.raises(ValueError, match=r"`index_adjoint\(grid_size=...\)` expects integer"):
        F.index_adjoint(randn(2, 3), IDX, (4, 5.5))


def test_index_errors():
    x = randn(4, 5)
    with pytest.raises(TypeError, match="`index`: `idx` must be a non-empty tuple"):
        F.index(x, jnp.asarray(IDX[0]))
    with pytest.raises(TypeError, match="`index`: `idx` must be a non-empty tuple"):
        F.index(x, ())
    with pytest.raises(TypeError, match=r"`index`: `idx\[1\]` must be an integer array"):
        F.index(x, (IDX[0], IDX[1].astype(np.float32)))
    with pytest.raises(ValueError, match="`index`: the index arrays must share one shape"):
        F.index(x, (IDX[0], IDX[1][0]))
    with pytest.raises(ValueError, match=r"`index`: 2 index arrays need .* shape \(5,\)"):
        F.index(x[0], IDX)


def test_index_adjoint_errors():
    vals = randn(2, 3)
    with pytest.raises(ValueError, match="`grid_size` must give one size per index array"):
        F.index_adjoint(vals, IDX, (4,))
    with pytest.raises(ValueError, match=r"index shape \(2, 3\); got `vals` of shape \(3,\)"):
        F.index_adjoint(vals[0], IDX, (4, 5))
    with pytest.raises(ValueError, match=r"got `vals` of shape \(3, 2\)"):
        F.index_adjoint(vals.T, IDX, (4, 5))


# ------------------------------------------------------------------ Sampling
def test_sampling_forward_adjoint_with_batch_dims():
    A = jl.Sampling(IDX, (4, 5), "R K", "Nx Ny", "C")
    assert A.ishape == ("C", "Nx", "Ny") and A.oshape == ("C", "R", "K")
    x, y = randn(3, 4, 5), randn(3, 2, 3)
    assert_close(A(x), x[:, IDX[0], IDX[1]], np.complex128)
    assert_close(A.H(y), scatter_add(y, IDX, (4, 5)), np.complex128)


def test_sampling_sizes_and_locs():
    A = jl.Sampling(IDX, (4, 5), "R K", "Nx Ny", "C")
    assert (A.size("R"), A.size("K"), A.size("Nx"), A.size("Ny"), A.size("C")) == (
        2,
        3,
        4,
        5,
        None,
    )
    np.testing.assert_array_equal(A.locs, np.stack(IDX, -1))
    with pytest.raises(ValueError, match="expected dim Ny with size 5"):
        A(randn(3, 4, 6))


def test_sampling_default_shapes_are_wildcards_resolved_by_chain():
    A = jl.Sampling(IDX, (4, 5))
    assert A.ishape == ("...", "(1)", "(2)") and A.oshape == ("...", "(3)", "(4)")
    chain = A @ jl.Identity("C Kx Ky")
    assert chain.ishape == ("C", "Kx", "Ky")
    x = randn(2, 4, 5)
    assert_close(chain(x), x[:, IDX[0], IDX[1]], np.complex128)


def test_sampling_default_batch_shape_takes_any_leading_axes():
    A = jl.Sampling((IDX[0][0],), (4,), "K", "N")
    x = randn(2, 3, 4)
    assert_close(A(x), x[..., IDX[0][0]], np.complex128)


def test_sampling_normal_is_counts_then_renaming():
    A = jl.Sampling(IDX, (4, 5), "R K", "Nx Ny", "C")
    N = A.N
    assert N.ishape == ("C", "Nx", "Ny") and N.oshape == ("C", "Nx1", "Ny1")
    counts = np.zeros((4, 5))
    np.add.at(counts, IDX, 1)
    diag = N.linops[0]
    assert isinstance(diag, jl.Diagonal)
    np.testing.assert_array_equal(diag.weight, counts)
    x = randn(3, 4, 5)
    assert_close(N(x), counts * x, np.complex128)


def test_sampling_normal_falls_back_for_wildcards_and_inner():
    A = jl.Sampling(IDX, (4, 5))
    assert isinstance(A.N.linops[0], jl.Sampling)
    B = jl.Sampling(IDX, (4, 5), "R K", "Nx Ny")
    inner = jl.Scalar(2.0, "... R K")
    N = B.normal(inner)
    x = randn(4, 5)
    assert_close(N(x), 2 * B.H(B(x)), np.complex128)


def test_sampling_from_mask_matches_nonzero():
    mask = RNG.random((4, 5)) < 0.4
    A = jl.Sampling.from_mask(mask, output_shape="K", input_shape="Nx Ny", batch_shape="C")
    assert A.input_size == (4, 5) and A.size("K") == mask.sum()
    x = randn(2, 4, 5)
    assert_close(A(x), x[:, mask], np.complex128)
    rows, cols = np.nonzero(mask)
    np.testing.assert_array_equal(A.idx[0], rows)
    np.testing.assert_array_equal(A.idx[1], cols)


def test_sampling_from_mask_takes_input_size_second():
    """torchlinops' order: `from_mask(mask, input_size, output_shape, input_shape, ...)`.
    A grid larger than the mask samples the mask's entries from its leading corner."""
    mask = np.zeros((2, 3), bool)
    mask[0, 2] = mask[1, 0] = True
    A = jl.Sampling.from_mask(mask, (4, 5), ("K",), ("Nx", "Ny"), ("C",))
    assert (A.ishape, A.oshape, A.input_size) == (("C", "Nx", "Ny"), ("C", "K"), (4, 5))
    x = randn(2, 4, 5)
    assert_close(A(x), x[:, [0, 1], [2, 0]], np.complex128)


@pytest.mark.parametrize(
    "input_size, exc, match",
    [
        ("K", TypeError, r"second argument is the grid size `input_size`.*'K'"),
        ((4,), ValueError, r"`input_size` must have one size per mask axis.*\(4,\)"),
        ((1, 5), ValueError, r"each at least the mask's; got input_size \(1, 5\)"),
        ((4.5, 5), ValueError, r"`Sampling.from_mask\(input_size=...\)`"),
    ],
)
def test_sampling_from_mask_bad_input_size(input_size, exc, match):
    with pytest.raises(exc, match=match):
        jl.Sampling.from_mask(np.ones((2, 3), bool), input_size)


def test_sampling_from_mask_rejects_non_bool():
    with pytest.raises(TypeError, match="`Sampling.from_mask` expects a boolean mask; got dtype"):
        jl.Sampling.from_mask(np.ones((3, 3), np.int32))


@pytest.mark.parametrize("dim", [-1, 0])
def test_sampling_from_stacked_idx(dim):
    stacked = np.stack(IDX, axis=dim)
    A = jl.Sampling.from_stacked_idx(stacked, (4, 5), "R K", "Nx Ny", dim=dim)
    x = randn(4, 5)
    assert_close(A(x), x[IDX[0], IDX[1]], np.complex128)


def test_sampling_accepts_traced_indices_and_checks_them_at_run_time():
    x = randn(6)

    @jax.jit
    def f(i):
        return jl.Sampling((i,), (6,), "K", "N")(x)

    idx = np.array([5, 0, 2], np.int32)
    assert_close(f(idx), x[idx], np.complex128)
    stacked = np.array([[0, 1], [5, 5]], np.int32)
    got = jax.vmap(lambda i: jl.Sampling((i,), (6,), "K", "N")(x))(stacked)
    assert_close(got, x[stacked], np.complex128)
    with pytest.raises(Exception, match=r"`Sampling`: indices of axis 0 must lie in \[0, 5\]"):
        jax.block_until_ready(f(np.array([9, 0, 0], np.int32)))  # wrapped to 3 before


@pytest.mark.parametrize(
    "idx, msg",
    [
        ((np.array([0, 5]), np.array([1, 1])), r"axis 0 must lie in \[0, 3\] .* \[0, 5\]"),
        ((np.array([0, 3]), np.array([-1, 4])), r"axis 1 must lie in \[0, 4\] .* \[-1, 4\]"),
    ],
)
def test_sampling_out_of_range(idx, msg):
    with pytest.raises(ValueError, match=r"`Sampling`: indices of " + msg):
        jl.Sampling(idx, (4, 5))


def test_sampling_constructor_errors():
    with pytest.raises(TypeError, match="`Sampling\\(idx=...\\)` expects a tuple"):
        jl.Sampling(np.stack(IDX), (4, 5))
    with pytest.raises(ValueError, match="needs one index array per grid axis: got 1"):
        jl.Sampling(IDX[:1], (4, 5))
    with pytest.raises(ValueError, match="needs one index array per grid axis: got 0"):
        jl.Sampling((), ())
    with pytest.raises(TypeError, match=r"`idx\[0\]` must be integer; got float64"):
        jl.Sampling((IDX[0].astype(np.float64),), (4,))
    with pytest.raises(ValueError, match="the index arrays must share one shape"):
        jl.Sampling((IDX[0], IDX[1][0]), (4, 5))
    with pytest.raises(ValueError, match=r"`Sampling\(input_size=...\)` expects sizes of at le"):
        jl.Sampling(IDX, (4, 0))
    with pytest.raises(ValueError, match=r"`Sampling\(input_size=...\)` expects integer sizes"):
        jl.Sampling(IDX, (4, 5.5))
    with pytest.raises(ValueError, match=r"`Sampling.from_stacked_idx`: dim=3 is not an axis"):
        jl.Sampling.from_stacked_idx(np.stack(IDX, -1), (4, 5), dim=3)
    with pytest.raises(ValueError, match=r"'\.\.\.' may appear only in `batch_shape`"):
        jl.Sampling(IDX, (4, 5), "R K", "... Ny")
    with pytest.raises(ValueError, match=r"`input_shape` must name 2 dims .* got \(N\)"):
        jl.Sampling(IDX, (4, 5), "R K", "N")
    with pytest.raises(ValueError, match=r"`output_shape` must name 2 dims .* got \(K\)"):
        jl.Sampling(IDX, (4, 5), "K", "Nx Ny")
    with pytest.raises(ValueError, match="batch, input and output dims must all be distinct"):
        jl.Sampling(IDX, (4, 5), "R Nx", "Nx Ny")


def test_sampling_is_a_pytree_of_index_arrays():
    A = jl.Sampling(IDX, (4, 5), "R K", "Nx Ny")
    leaves = jax.tree_util.tree_leaves(A)
    assert len(leaves) == 2 and all(jnp.issubdtype(v.dtype, jnp.integer) for v in leaves)
    renamed = jl.rename(A, {"Nx": "X"})
    assert renamed.ishape == ("...", "X", "Ny") and renamed.size("X") == 4
