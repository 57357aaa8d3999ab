"""The module path `torchlinops.linops.nufft` of torchlinops:
`from jaxlinops.linops.nufft import NUFFT, NUFFTBase, toeplitz_psf`, with its submodules
`toeplitz` (`toeplitz_psf`) and `utils` (point shifts, grid scaling, `clamp`)."""

from .._nufft import NUFFT as NUFFT
from .._nufft_utils import (
    NUFFTBase as NUFFTBase,
    clamp as clamp,
    clear_nufft_parameter_caches as clear_nufft_parameter_caches,
    fftshift_locs as fftshift_locs,
    ifftshift_locs as ifftshift_locs,
    scale_int as scale_int,
    toeplitz_psf as toeplitz_psf,
)
from .._sampling_nufft import (
    FastSamplingNUFFT as FastSamplingNUFFT,
    SamplingNUFFT as SamplingNUFFT,
)

__all__ = [
    "NUFFT",
    "SamplingNUFFT",
    "FastSamplingNUFFT",
    "NUFFTBase",
    "clear_nufft_parameter_caches",
    "toeplitz_psf",
    "clamp",
    "fftshift_locs",
    "ifftshift_locs",
    "scale_int",
]
