"""The module path `torchlinops.linops.nufft` of torchlinops:
`from jaxlinops.linops.nufft import NUFFT`."""

from . import NUFFT as NUFFT, FastSamplingNUFFT as FastSamplingNUFFT, SamplingNUFFT as SamplingNUFFT

__all__ = ["NUFFT", "SamplingNUFFT", "FastSamplingNUFFT"]
