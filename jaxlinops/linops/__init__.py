"""The operator catalogue; every name here is re-exported from `jaxlinops`.

torchlinops also exports its batching names here (`BatchSpec`, `ResolvedBatchSpec`,
`create_batched_linop`); they live one layer up, in `jaxlinops.sharding`, and are loaded
from `jaxlinops.linops.split` on first access.
"""

from .._core import (
    Add as Add,
    Adjoint as Adjoint,
    Chain as Chain,
    Diagonal as Diagonal,
    Identity as Identity,
    NamedLinop as NamedLinop,
    Scalar as Scalar,
    ShapeSpec as ShapeSpec,
    Zero as Zero,
    split_linop as split_linop,
)
from ._blocks_ops import ArrayToBlocks as ArrayToBlocks, BlocksToArray as BlocksToArray
from ._breakpoint import BreakpointLinop as BreakpointLinop, Sleep as Sleep
from ._concat import Concat as Concat
from ._conv import Convolution as Convolution
from ._dense import Dense as Dense
from ._device import DeviceSpec as DeviceSpec, ToDevice as ToDevice
from ._einops import Rearrange as Rearrange, Repeat as Repeat, SumReduce as SumReduce
from ._fft import FFT as FFT
from ._fft_conv import FFTConvolution as FFTConvolution
from ._finite_difference import FiniteDifference as FiniteDifference
from ._interp import Interpolate as Interpolate
from ._nufft import NUFFT as NUFFT
from ._nufft_utils import (
    NUFFTBase as NUFFTBase,
    clamp as clamp,
    clear_nufft_parameter_caches as clear_nufft_parameter_caches,
    fftshift_locs as fftshift_locs,
    ifftshift_locs as ifftshift_locs,
    psf_sizing as psf_sizing,
    rescale_locs as rescale_locs,
    scale_int as scale_int,
    toeplitz_psf as toeplitz_psf,
)
from ._pad import Crop as Crop, Pad as Pad, PadLast as PadLast
from ._sampling import Sampling as Sampling
from ._sampling_nufft import FastSamplingNUFFT as FastSamplingNUFFT, SamplingNUFFT as SamplingNUFFT
from ._simple import SimpleLinop as SimpleLinop
from ._stack import Stack as Stack
from ._truncate import PadDim as PadDim, Truncate as Truncate
from ._wavelet import Wavelet as Wavelet

_FROM_SPLIT = ("BatchSpec", "ResolvedBatchSpec", "create_batched_linop")


def __getattr__(name: str):
    """torchlinops' batching names, from the layer above on first access (PEP 562)."""
    if name in _FROM_SPLIT:
        from . import split

        return getattr(split, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
