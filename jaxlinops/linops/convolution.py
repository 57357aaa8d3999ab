"""The module path `torchlinops.linops.convolution` of torchlinops:
`from jaxlinops.linops.convolution import Convolution, FFTConvolution`."""

from . import Convolution as Convolution, FFTConvolution as FFTConvolution

__all__ = ["Convolution", "FFTConvolution"]
