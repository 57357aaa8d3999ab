"""Factories for the core operators and compositions."""

import jax.numpy as jnp
from helpers import operator_factory, rand, real_dtype

import jaxlinops as jl


@operator_factory
def make_dense(getkey, dtype):
    return jl.Dense(rand(getkey(), (5, 4), dtype), "MN", "N", "M"), (4,)


@operator_factory
def make_dense_batched(getkey, dtype):
    # weight (B, M, N) with an extra broadcast batch dim C in input and output
    w = rand(getkey(), (3, 1, 2, 4), dtype)
    return jl.Dense(w, "BCMN", "CBN", "CBM", broadcast_dims="C"), (2, 3, 4)


@operator_factory
def make_dense_inferred(getkey, dtype):
    return jl.Dense(rand(getkey(), (2, 3, 4), dtype)), (2, 4)


@operator_factory
def make_dense_repeated_dim(getkey, dtype):
    # weightshape (C, M, M): the diagonal W[c, m, m] scales x[m] for each output c
    return jl.Dense(rand(getkey(), (2, 3, 3), dtype), "CMM", "M", "CM"), (3,)


@operator_factory
def make_dense_sense(getkey, dtype):
    maps = rand(getkey(), (3, 4, 5), dtype)
    return jl.Dense(maps, "CNxNy", "NxNy", "CNxNy"), (4, 5)


@operator_factory
def make_diagonal(getkey, dtype):
    return jl.Diagonal(rand(getkey(), (3, 4), dtype), "CNxNy"), (2, 3, 4)


@operator_factory
def make_diagonal_broadcast(getkey, dtype):
    return jl.Diagonal(rand(getkey(), (3, 1), dtype), "AB", broadcast_dims="B"), (3, 5)


@operator_factory
def make_diagonal_real_weight(getkey, dtype):
    w = rand(getkey(), (6,), real_dtype(dtype))
    return jl.Diagonal(w, "...N"), (2, 6)


@operator_factory
def make_scalar(getkey, dtype):
    return jl.Scalar(rand(getkey(), (), dtype), "NxNy"), (3, 4)


@operator_factory
def make_identity(getkey, dtype):
    return jl.Identity("AB"), (3, 2)


@operator_factory
def make_shapespec(getkey, dtype):
    return jl.ShapeSpec("NxNy", "KxKy"), (3, 2)


@operator_factory
def make_zero(getkey, dtype):
    return jl.Zero("AN", "AM", sizes={"M": 3, "N": 4}), (2, 4)


@operator_factory
def make_chain(getkey, dtype):
    A = jl.Dense(rand(getkey(), (5, 4), dtype), "MN", "N", "M")
    D = jl.Diagonal(rand(getkey(), (5,), dtype), "...")
    return 0.5 * (D @ A) @ jl.Diagonal(rand(getkey(), (4,), dtype), "N"), (4,)


@operator_factory
def make_add(getkey, dtype):
    A = jl.Dense(rand(getkey(), (5, 4), dtype), "MN", "N", "M")
    B = jl.Dense(rand(getkey(), (5, 4), dtype), "MN", "N", "M")
    return A + 2 * B - A @ jl.Scalar(jnp.asarray(3, real_dtype(dtype))), (4,)


@operator_factory
def make_adjoint_of_chain(getkey, dtype):
    A = jl.Dense(rand(getkey(), (5, 4), dtype), "MN", "N", "M")
    return (jl.Diagonal(rand(getkey(), (5,), dtype), "M") @ A).H, (5,)


@operator_factory
def make_normal_of_chain(getkey, dtype):
    S = jl.Dense(rand(getkey(), (2, 3, 4), dtype), "CNxNy", "NxNy", "CNxNy")
    D = jl.Diagonal(rand(getkey(), (2, 1, 4), dtype), "CNxNy")
    return (D @ S).N, (3, 4)


def _blocks(getkey, dtype, n=3):
    return [jl.Dense(rand(getkey(), (2, 2 + i), dtype), "MN", "N", "M") for i in range(n)]


@operator_factory
def make_concat_horizontal(getkey, dtype):
    return jl.Concat(*_blocks(getkey, dtype), idim="N"), (9,)


@operator_factory
def make_concat_vertical(getkey, dtype):
    ops = [jl.Dense(rand(getkey(), (1 + i, 3), dtype), "MN", "N", "M") for i in range(3)]
    return jl.Concat(*ops, odim="M"), (3,)


@operator_factory
def make_concat_diagonal(getkey, dtype):
    ops = [jl.Dense(rand(getkey(), (2, 4, 1 + i), dtype), "CMN", "CN", "CM") for i in range(2)]
    return jl.Concat(*ops, idim="N", odim="M"), (2, 3)


@operator_factory
def make_stack_horizontal(getkey, dtype):
    ops = [jl.Dense(rand(getkey(), (2, 3), dtype), "MN", "N", "M") for _ in range(3)]
    return jl.Stack(*ops, idim_and_idx=("L", 0)), (3, 3)


@operator_factory
def make_stack_vertical(getkey, dtype):
    ops = [jl.Diagonal(rand(getkey(), (4,), dtype), "...N") for _ in range(2)]
    return jl.Stack(*ops, odim_and_idx=("L", -1)), (3, 4)


@operator_factory
def make_stack_accumulate(getkey, dtype):
    ops = [jl.Dense(rand(getkey(), (2, 3), dtype), "MN", "N", "M") for _ in range(3)]
    return jl.Stack(*ops, odim_and_idx=("L", 0), accumulate=True, num_workers=2), (3,)


@operator_factory
def make_stack_diagonal(getkey, dtype):
    ops = [jl.Dense(rand(getkey(), (2, 3), dtype), "MN", "N", "M") for _ in range(2)]
    return jl.Stack(*ops, idim_and_idx=("L", 1), odim_and_idx=("L", 0)), (3, 2)
