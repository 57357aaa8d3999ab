"""Factories for the operators and call forms added for torchlinops compatibility:
`SamplingNUFFT`, `FastSamplingNUFFT`, `PadLast`, `BlocksToArray` in torchlinops' argument
order, `SumReduce` adjoint and normal without `axes_lengths`, a `Dense` whose broadcast
dim has its full size (`Dense.from_einstr(..., broadcast_dims=...)`), the debugging
identities `BreakpointLinop` and `Sleep`, and an operator written to torchlinops' custom
operator protocol (static `fn`, `adj_fn`, `normal_fn` and `split`, and `size`)."""

import jax.numpy as jnp
import numpy as np
from helpers import operator_factory, rand, real_dtype

import jaxlinops as jl


def sampling_locs(getkey, dtype, grid, npoints, oversamp=1.25):
    """Points within 0.3 of a padded-grid point (away from the rounding boundary, so
    finite differences w.r.t. the points are smooth), in cycles per field of view."""
    rng = np.random.default_rng(getkey())
    grid = np.array(grid)
    padded = (grid * oversamp).astype(int)
    prepped = rng.integers(0, padded, (npoints, len(grid)))
    prepped = prepped + rng.uniform(-0.3, 0.3, prepped.shape)
    return ((prepped - padded // 2) * grid / padded).astype(real_dtype(dtype))


@operator_factory
def make_sampling_nufft(getkey, dtype):
    locs = sampling_locs(getkey, dtype, (5, 4), 6)
    return jl.SamplingNUFFT(locs, (5, 4), ("K",), None, None, ("C",)), (2, 5, 4)


@operator_factory
def make_fast_sampling_nufft_toeplitz_normal(getkey, dtype):
    locs = sampling_locs(getkey, dtype, (6,), 5, oversamp=1.5)
    A = jl.FastSamplingNUFFT(locs, (6,), "K", oversamp=1.5, phase_placement="grid", toeplitz=True)
    return A.N, (2, 6)


@operator_factory
def make_pad_last(getkey, dtype):
    return jl.PadLast((6, 7), (3, 4), ("X", "Y"), ("U", "V"), ("C",)), (2, 3, 4)


@operator_factory
def make_blocks_to_array_torch_order(getkey, dtype):
    op = jl.BlocksToArray((5, 4), (3, 2), (2, 2), None, ("C",), "Bx By Px Py", ("X", "Y"))
    return op, (2, 2, 2, 3, 2)


@operator_factory
def make_sumreduce_H_no_lengths(getkey, dtype):
    return jl.SumReduce("A B C", "A C").H, (2, 4)


@operator_factory
def make_sumreduce_N_no_lengths(getkey, dtype):
    return jl.SumReduce("... B C", "... C").N, (2, 3, 4)


@operator_factory
def make_dense_full_broadcast_dim(getkey, dtype):
    weight = rand(getkey(), (2, 3, 4), dtype)
    return jl.Dense.from_einstr(weight, "BMN,BN->BM", broadcast_dims=["B"]), (2, 4)


def ignore(x):
    """A breakpoint's callback that does nothing (module-level: the operator hashes it)."""


@operator_factory
def make_breakpoint_callback(getkey, dtype):
    return jl.BreakpointLinop(("C", "N"), callback=ignore), (2, 5)


@operator_factory
def make_sleep_renamed(getkey, dtype):
    return jl.Sleep(0.0, ("C", "N"), ("C", "M")), (2, 5)


class CustomScale(jl.NamedLinop):
    """$y = w x$ (elementwise), written as torchlinops' tutorials write an operator."""

    def __init__(self, weight, ioshape):
        super().__init__(jl.NamedShape(ioshape, ioshape))
        self.weight = weight

    @staticmethod
    def fn(linop, x, /):
        return linop.weight * x

    @staticmethod
    def adj_fn(linop, x, /):
        return jnp.conj(linop.weight) * x

    @staticmethod
    def normal_fn(linop, x, /):
        return (jnp.abs(linop.weight) ** 2).astype(x.dtype) * x

    @staticmethod
    def split(linop, tile):
        return CustomScale(
            linop.weight[tuple(tile.get(d, slice(None)) for d in linop.ishape)], linop.ishape
        )

    def size(self, dim):
        return self.weight.shape[self.ishape.index(dim)] if dim in self.ishape else None


@operator_factory
def make_custom_scale(getkey, dtype):
    return CustomScale(rand(getkey(), (2, 5), dtype), ("C", "N")), (2, 5)


@operator_factory
def make_custom_scale_normal(getkey, dtype):
    return CustomScale(rand(getkey(), (2, 5), dtype), ("C", "N")).N, (2, 5)
