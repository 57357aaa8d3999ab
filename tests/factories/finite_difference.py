"""Factories for FiniteDifference: each boundary, a "..." batch, the FFT normal mode, and
the normal and adjoint as operators of their own. Every one has a dim it does not
difference (a batch dim to tile)."""

from helpers import operator_factory

from jaxlinops.linops._finite_difference import FiniteDifference


@operator_factory
def make_finite_difference_periodic_2d(getkey, dtype):
    return FiniteDifference("C Nx Ny", "Nx Ny"), (2, 5, 4)


@operator_factory
def make_finite_difference_zero_1d(getkey, dtype):
    return FiniteDifference("... N", "N", boundary="zero"), (2, 7)


@operator_factory
def make_finite_difference_neumann_3d(getkey, dtype):
    # the dims differenced in another order than ishape's, and another output dim name
    op = FiniteDifference("B X Y Z", "Z X Y", boundary="neumann", odim="D")
    return op, (2, 3, 3, 2)


@operator_factory
def make_finite_difference_fft_normal(getkey, dtype):
    return FiniteDifference("C Nx Ny", "Ny", normal_mode="fft"), (2, 4, 5)


@operator_factory
def make_finite_difference_normal_zero(getkey, dtype):
    return FiniteDifference("C Nx Ny", "Nx Ny", boundary="zero").N, (2, 4, 3)


@operator_factory
def make_finite_difference_adjoint(getkey, dtype):
    return FiniteDifference("C Nx Ny", "Nx Ny", boundary="zero").H, (2, 2, 4, 3)
