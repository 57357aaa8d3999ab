"""Factories for Convolution, FFTConvolution, SimpleLinop and ToDevice."""

import jax
import jax.numpy as jnp
import numpy as np
from helpers import operator_factory, rand, real_dtype

import jaxlinops as jl

# ----------------------------------------------------------------------------- Convolution


@operator_factory
def make_conv_zeros_1d(getkey, dtype):
    return jl.Convolution(rand(getkey(), (3,), dtype)), (2, 7)


@operator_factory
def make_conv_zeros_2d_batch(getkey, dtype):
    # an even kernel axis (padded to odd) and a named batch dim
    kernel = rand(getkey(), (3, 2), dtype)
    return jl.Convolution(kernel, batch_shape="C", in_grid_shape="XY"), (2, 5, 4)


@operator_factory
def make_conv_circular_2d_real_kernel(getkey, dtype):
    kernel = rand(getkey(), (3, 3), real_dtype(dtype))
    return jl.Convolution(kernel, padding_mode="circular"), (2, 5, 4)


@operator_factory
def make_conv_normal_mode_conv(getkey, dtype):
    kernel = rand(getkey(), (3, 2), dtype)
    return jl.Convolution(kernel, padding_mode="circular", normal_mode="conv"), (2, 5, 4)


@operator_factory
def make_conv_normal_mode_fft(getkey, dtype):
    kernel = rand(getkey(), (2, 3), dtype)
    return jl.Convolution(kernel, padding_mode="circular", normal_mode="fft"), (2, 4, 5)


@operator_factory
def make_conv_normal_conv_operator(getkey, dtype):
    # the autocorrelation kernel (size 9) is larger than the grid and wraps around it
    kernel = rand(getkey(), (4,), dtype)
    return jl.Convolution(kernel, padding_mode="circular", normal_mode="conv").N, (2, 5)


@operator_factory
def make_conv_normal_fft_operator(getkey, dtype):
    kernel = rand(getkey(), (3, 2), real_dtype(dtype))
    return jl.Convolution(kernel, padding_mode="circular", normal_mode="fft").N, (2, 5, 4)


@operator_factory
def make_fft_conv_2d(getkey, dtype):
    # an even kernel axis (padded to odd), named grid and output dims
    kernel = rand(getkey(), (2, 3), dtype)
    return jl.FFTConvolution(kernel, "C", "XY", "UV"), (2, 4, 5)


@operator_factory
def make_fft_conv_real_kernel(getkey, dtype):
    return jl.FFTConvolution(rand(getkey(), (3,), real_dtype(dtype))), (2, 6)


@operator_factory
def make_conv_adjoint(getkey, dtype):
    return jl.Convolution(rand(getkey(), (2, 3), dtype)).H, (2, 4, 5)


# ----------------------------------------------------------------------------- SimpleLinop
# Module-level functions: the functions are static fields, so new lambdas per operator
# would make `jax.jit` retrace.


def cumsum(x):
    return jnp.cumsum(x, axis=-1)


def reverse_cumsum(y):
    return jnp.flip(jnp.cumsum(jnp.flip(y, -1), axis=-1), -1)


def cumsum_normal(x):
    return reverse_cumsum(cumsum(x))


def difference(x):
    return x[..., 1:] - x[..., :-1]


MATRIX = np.arange(12.0).reshape(3, 4) - 5.5


def matmul(x):
    return jnp.einsum("mn,...n->...m", jnp.asarray(MATRIX, x.dtype), x)


@operator_factory
def make_simple_given_adjoint(getkey, dtype):
    return jl.SimpleLinop(cumsum, reverse_cumsum, ishape="...N"), (2, 5)


@operator_factory
def make_simple_given_normal(getkey, dtype):
    return jl.SimpleLinop(cumsum, reverse_cumsum, cumsum_normal, "N"), (5,)


@operator_factory
def make_simple_derived_adjoint(getkey, dtype):
    return jl.SimpleLinop(cumsum, ishape="...N"), (3, 4)


@operator_factory
def make_simple_derived_adjoint_sizes(getkey, dtype):
    op = jl.SimpleLinop(difference, ishape="...N", oshape="...M", sizes={"N": 6, "M": 5})
    return op, (2, 6)


@operator_factory
def make_simple_adjoint_of_derived(getkey, dtype):
    return jl.SimpleLinop(matmul, ishape="BN", oshape="BM", sizes={"N": 4}).H, (2, 3)


# ----------------------------------------------------------------------------- ToDevice


@operator_factory
def make_to_device(getkey, dtype):
    cpus = jax.devices("cpu")
    return jl.ToDevice(cpus[0], cpus[1], "NxNy"), (3, 4)


@operator_factory
def make_to_device_adjoint_default(getkey, dtype):
    return jl.ToDevice(None, jax.devices("cpu")[2]).H, (2, 3)
