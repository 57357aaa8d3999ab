"""The module path `torchlinops.linops.convolution` of torchlinops:
`from jaxlinops.linops.convolution import Convolution`."""

from . import Convolution as Convolution

__all__ = ["Convolution"]
