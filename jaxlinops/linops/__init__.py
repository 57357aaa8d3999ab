"""The operator catalogue; every name here is re-exported from `jaxlinops`."""

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
)
from ._blocks_ops import ArrayToBlocks as ArrayToBlocks, BlocksToArray as BlocksToArray
from ._breakpoint import BreakpointLinop as BreakpointLinop, Sleep as Sleep
from ._concat import Concat as Concat
from ._conv import Convolution as Convolution
from ._dense import Dense as Dense
from ._device import ToDevice as ToDevice
from ._einops import Rearrange as Rearrange, Repeat as Repeat, SumReduce as SumReduce
from ._fft import FFT as FFT
from ._interp import Interpolate as Interpolate
from ._nufft import NUFFT as NUFFT
from ._pad import Crop as Crop, Pad as Pad, PadLast as PadLast
from ._sampling import Sampling as Sampling
from ._sampling_nufft import FastSamplingNUFFT as FastSamplingNUFFT, SamplingNUFFT as SamplingNUFFT
from ._simple import SimpleLinop as SimpleLinop
from ._stack import Stack as Stack
from ._truncate import PadDim as PadDim, Truncate as Truncate
