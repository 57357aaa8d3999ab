"""The module path `torchlinops.linops.fft` of torchlinops:
`from jaxlinops.linops.fft import FFT`."""

from . import FFT as FFT

__all__ = ["FFT"]
