"""Factories for FFT, Pad/Crop and Truncate/PadDim (these operators hold no arrays)."""

from helpers import operator_factory

import jaxlinops as jl


@operator_factory
def make_fft_batched(getkey, dtype):
    return jl.FFT(2, batch_shape="C"), (2, 3, 4)


@operator_factory
def make_fft_backward(getkey, dtype):
    return jl.FFT(1, batch_shape="C", grid_shapes=("N", "K"), norm="backward"), (2, 6)


@operator_factory
def make_fft_forward_centered(getkey, dtype):
    return jl.FFT(2, norm="forward", centered=True), (2, 3, 5)


@operator_factory
def make_fft_adjoint(getkey, dtype):
    return jl.FFT(2, batch_shape="C", norm="backward").H, (2, 3, 4)


@operator_factory
def make_fft_normal_backward(getkey, dtype):
    return jl.FFT(2, norm="backward").N, (2, 3, 4)


@operator_factory
def make_pad(getkey, dtype):
    return jl.Pad((6, 5), (3, 4), batch_shape="C"), (2, 3, 4)


@operator_factory
def make_crop(getkey, dtype):
    return jl.Crop((2, 3), (5, 4), batch_shape="C"), (2, 5, 4)


@operator_factory
def make_crop_normal(getkey, dtype):
    return jl.Crop((2, 3), (5, 4)).N, (2, 5, 4)


@operator_factory
def make_truncate(getkey, dtype):
    return jl.Truncate(-2, 5, 2, "...NC", "...MC"), (2, 5, 3)


@operator_factory
def make_truncate_normal(getkey, dtype):
    return jl.Truncate(0, 5, 3, "NA", "MA").N, (5, 2)


@operator_factory
def make_paddim(getkey, dtype):
    return jl.PadDim(1, 3, 5, "AN", "AM"), (2, 3)
