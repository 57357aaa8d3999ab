"""Factories for Wavelet: 1-D, 2-D and 3-D (dims transformed in another order than
ishape's), the default level, a "..." batch, and the inverse. Every one has a dim it does
not transform (a batch dim to tile); the transformed dims refuse to split."""

from helpers import operator_factory

from jaxlinops.linops._wavelet import Wavelet


@operator_factory
def make_wavelet_haar_1d(getkey, dtype):
    return Wavelet("C N", "N", wavelet="haar", level=2), (2, 8)


@operator_factory
def make_wavelet_db2_2d(getkey, dtype):
    # level 2 leaves one sample per phase along Nx: the filter wraps around it
    return Wavelet("C Nx Ny", "Nx Ny", wavelet="db2", level=2), (2, 4, 8)


@operator_factory
def make_wavelet_db4_default_level(getkey, dtype):
    return Wavelet("... Nx", "Nx"), (3, 16)


@operator_factory
def make_wavelet_sym3_3d(getkey, dtype):
    return Wavelet("B X Y Z", "Z X", wavelet="sym3", level=1), (2, 4, 2, 4)


@operator_factory
def make_wavelet_inverse(getkey, dtype):
    return Wavelet("C Nx Ny", "Nx Ny", wavelet="db3", level=1).H, (2, 4, 6)
