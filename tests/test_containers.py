"""Containers as torchlinops has them: scheduling (`parallel_execute`, `accumulate`),
indexing (`len`, `A[i]`, `A[i:j]`), `partition_slices`, and Dense with a repeated weight
dim; checked against numpy."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops.linops.concat import partition_slices
from jaxlinops.linops.schedule import parallel_execute


def _jit_apply(op, x):
    return jax.jit(lambda o, v: o(v))(op, x)


def _scalings(n):
    weights = [np.arange(1, 4) * (k + 1.0) for k in range(n)]
    return [lambda x, w=w: w * x for w in weights], [np.ones(3)] * n, weights


@pytest.mark.parametrize("n", [1, 2, 5])
@pytest.mark.parametrize("num_workers", [None, 1, 2, 3, 10])
@pytest.mark.parametrize("accumulate", [False, True])
def test_parallel_execute_sum_and_concat(n, num_workers, accumulate):
    ops, inputs, weights = _scalings(n)
    kwargs = dict(num_workers=num_workers, accumulate=accumulate)
    total = parallel_execute(ops, inputs, None, sum, **kwargs)
    np.testing.assert_allclose(total, np.sum(weights, axis=0))
    joined = parallel_execute(ops, inputs, None, np.concatenate, **kwargs)
    np.testing.assert_array_equal(joined, np.concatenate(weights))


def test_parallel_execute_accumulates_in_batches():
    ops, inputs, _ = _scalings(5)
    seen = []

    def merge(a, b):
        seen.append(len(b))
        return np.concatenate([a, b])

    parallel_execute(ops, inputs, None, np.concatenate, num_workers=2, accumulate_fn=merge)
    assert seen == [6, 3]  # batches of 2, 2 and 1 operators, 3 entries each


def test_parallel_execute_errors():
    ops, inputs, _ = _scalings(2)
    with pytest.raises(ValueError, match="at least one operator"):
        parallel_execute([], [], None, sum)
    with pytest.raises(ValueError, match="same length; got 2 operators and 1 inputs"):
        parallel_execute(ops, inputs[:1], None, sum)
    with pytest.raises(ValueError, match="num_workers"):
        parallel_execute(ops, inputs, None, sum, num_workers=0)


def _dense_blocks(n, dtype=jnp.complex128):
    return [rand(k, (4, 3), dtype) for k in range(n)]


@pytest.mark.parametrize("num_workers", [None, 2])
def test_accumulating_containers_match_numpy(num_workers):
    ws = _dense_blocks(3)
    ops = [jl.Dense(w, "MN", "N", "M") for w in ws]
    x, y, z = rand(10, (3,)), rand(11, (4,)), rand(12, (3, 4))
    add = jl.Add(*ops, accumulate=True, num_workers=num_workers)
    concat = jl.Concat(*ops, odim="M", accumulate=True, num_workers=num_workers)
    stack = jl.Stack(*ops, odim_and_idx=("L", 0), accumulate=True, num_workers=num_workers)
    np.testing.assert_allclose(_jit_apply(add, x), sum(np.asarray(w) @ x for w in ws))
    np.testing.assert_allclose(add.H(y), sum(np.conj(np.asarray(w)).T @ y for w in ws))
    np.testing.assert_allclose(concat(x), np.concatenate([w @ x for w in ws]))
    np.testing.assert_allclose(_jit_apply(stack, x), np.stack([w @ x for w in ws]))
    np.testing.assert_allclose(stack.H(z), sum(np.conj(w).T @ z[k] for k, w in enumerate(ws)))
    adjoint = add.H
    assert isinstance(adjoint, jl.Add)
    assert (add.accumulate, add.num_workers, adjoint.accumulate) == (True, num_workers, True)


def test_container_defaults_and_bad_options():
    A = jl.Dense(rand(0, (4, 3)), "MN", "N", "M")
    for op in (jl.Add(A, A), jl.Concat(A, A, odim="M"), jl.Stack(A, A, odim_and_idx=("L", 0))):
        assert (op.threaded, op.num_workers, op.accumulate) == (True, None, False)
    with pytest.raises(TypeError, match=r"`Add\(accumulate=...\)` expects a bool"):
        jl.Add(A, A, accumulate="yes")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match=r"`Stack\(num_workers=...\)`"):
        jl.Stack(A, odim_and_idx=("L", 0), num_workers=-1)


def test_container_indexing():
    ws = _dense_blocks(3)
    ops = [jl.Dense(w, "MN", "N", "M") for w in ws]
    x = rand(5, (3,))
    stack = jl.Stack(*ops, odim_and_idx=("L", 0))
    assert len(stack) == 3 and stack[1] is ops[1]
    sub = stack[0:2]
    assert isinstance(sub, jl.Stack) and len(sub) == 2
    np.testing.assert_allclose(sub(x), np.stack([ws[0] @ x, ws[1] @ x]))
    add = jl.Add(*ops)
    np.testing.assert_allclose(add[1:](x), ws[1] @ x + ws[2] @ x)
    B = jl.Dense(rand(6, (2, 4)), "KM", "M", "K")
    chain = jl.Chain(ops[0], B)
    assert isinstance(chain[0:1], jl.Chain) and chain[0:1].oshape == ("M",)
    assert set(chain.dims) == {"N", "M", "K"}
    with pytest.raises(IndexError, match="selects none of its 3 operators"):
        add[3:]


@pytest.mark.parametrize(
    "slc", [slice(3, 11), slice(None), slice(1, 17, 3), slice(None, None, 4), slice(-5, None, 2)]
)
def test_partition_slices_matches_numpy(slc):
    partition = [0, 3, 3, 8, 20]
    a = np.arange(20)
    pieces = partition_slices(partition, slc)
    blocks = [a[lo:hi] for lo, hi in zip(partition[:-1], partition[1:])]
    np.testing.assert_array_equal(np.concatenate([blocks[i][s] for i, s in pieces]), a[slc])
    assert all(len(blocks[i][s]) > 0 for i, s in pieces)


def test_partition_slices_errors():
    with pytest.raises(ValueError, match="first boundary"):
        partition_slices([1, 5], slice(0, 2))
    with pytest.raises(ValueError, match="non-decreasing"):
        partition_slices([0, 5, 3], slice(0, 2))
    with pytest.raises(ValueError, match="out of range"):
        partition_slices([0, 5], slice(0, 6))
    with pytest.raises(ValueError, match="positive step"):
        partition_slices([0, 5], slice(None, None, -1))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.complex128])
def test_dense_repeated_dim_is_einsum_diagonal(dtype):
    w, x, y = rand(0, (2, 3, 3), dtype), rand(1, (3,), dtype), rand(2, (2, 3), dtype)
    A = jl.Dense(w, "CMM", "M", "CM")
    np.testing.assert_allclose(_jit_apply(A, x), np.einsum("cmm,m->cm", w, x))
    np.testing.assert_allclose(A.H(y), np.einsum("cmm,cm->m", np.conj(w), y))
    np.testing.assert_allclose(A.N(x), np.einsum("cmm,cmm,m->m", np.conj(w), w, x))
    tile = A.split({"M": slice(1, 3)})
    np.testing.assert_allclose(tile(x[1:]), np.einsum("cmm,m->cm", w[:, 1:, 1:], x[1:]))
    with pytest.raises(ValueError, match="repeats in weightshape with different sizes"):
        jl.Dense(rand(3, (3, 4)), "MM", "M", "M")
