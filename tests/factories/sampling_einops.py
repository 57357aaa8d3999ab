"""Factories for Sampling and the einops operators (Rearrange, SumReduce, Repeat)."""

import numpy as np
from helpers import operator_factory

import jaxlinops as jl

# Points on a (4, 5) grid, laid out (R, K) = (2, 3); (1, 2) is sampled twice.
IDX_2D = (
    np.array([[0, 1, 3], [1, 3, 2]], np.int32),
    np.array([[4, 2, 0], [2, 1, 2]], np.int32),
)


@operator_factory
def make_sampling_1d(getkey, dtype):
    idx = (np.array([6, 0, 3, 3, 1], np.int32),)
    return jl.Sampling(idx, (7,), "K", "N", "C"), (2, 7)


@operator_factory
def make_sampling_2d_batch(getkey, dtype):
    return jl.Sampling(IDX_2D, (4, 5), "R K", "Nx Ny", "C"), (2, 4, 5)


@operator_factory
def make_sampling_default_shapes(getkey, dtype):
    return jl.Sampling(IDX_2D, (4, 5)), (3, 4, 5)


@operator_factory
def make_sampling_from_mask(getkey, dtype):
    mask = np.zeros((3, 4), bool)
    mask[0, 1] = mask[2, 0] = mask[2, 3] = mask[1, 1] = True
    return jl.Sampling.from_mask(mask, (3, 4), "K", "Nx Ny", "... C"), (2, 2, 3, 4)


@operator_factory
def make_sampling_H(getkey, dtype):
    return jl.Sampling(IDX_2D, (4, 5), "R K", "Nx Ny", "C").H, (2, 2, 3)


@operator_factory
def make_sampling_normal(getkey, dtype):
    return jl.Sampling(IDX_2D, (4, 5), "R K", "Nx Ny", "C").N, (2, 4, 5)


@operator_factory
def make_rearrange_merge(getkey, dtype):
    return jl.Rearrange("a b c", "a (b c)", "A B C", "A BC", {"b": 3}), (2, 3, 4)


@operator_factory
def make_rearrange_split_transpose(getkey, dtype):
    op = jl.Rearrange("(a b) c", "c b a", "AB C", "C B A", {"a": 2})
    return op, (6, 4)


@operator_factory
def make_rearrange_ellipsis(getkey, dtype):
    return jl.Rearrange("... a b", "... b () a", "... A B", "... B One A"), (2, 3, 4)


@operator_factory
def make_rearrange_H(getkey, dtype):
    op = jl.Rearrange("(a b) c", "c b a", "AB C", "C B A", {"a": 2})
    return op.H, (4, 3, 2)


@operator_factory
def make_sumreduce(getkey, dtype):
    return jl.SumReduce("A B C", "A C", {"B": 3}), (2, 3, 4)


@operator_factory
def make_sumreduce_ellipsis(getkey, dtype):
    return jl.SumReduce("... B C D", "... C", {"B": 2, "D": 3}), (2, 2, 4, 3)


@operator_factory
def make_sumreduce_H(getkey, dtype):
    return jl.SumReduce("A B C", "A C", {"B": 3}).H, (2, 4)


@operator_factory
def make_repeat(getkey, dtype):
    return jl.Repeat({"C": 3}, "A B", "A B C"), (4, 5)


@operator_factory
def make_repeat_ellipsis(getkey, dtype):
    return jl.Repeat({"B": 2, "D": 3}, "... A C", "... A B C D"), (2, 3, 4)


@operator_factory
def make_repeat_broadcast(getkey, dtype):
    return jl.Repeat({"C": 2}, "A B", "A C B D", broadcast_dims="D"), (3, 4)


@operator_factory
def make_repeat_H(getkey, dtype):
    return jl.Repeat({"C": 3}, "A B", "A B C").H, (4, 5, 3)
