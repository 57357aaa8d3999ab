"""The module path `torchlinops.linops.nufft.toeplitz` of torchlinops:
`from jaxlinops.linops.nufft.toeplitz import toeplitz_psf`."""

from .._nufft_utils import toeplitz_psf as toeplitz_psf

__all__ = ["toeplitz_psf"]
