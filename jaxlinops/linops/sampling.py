"""The module path `torchlinops.linops.sampling` of torchlinops:
`from jaxlinops.linops.sampling import Sampling`."""

from . import Sampling as Sampling

__all__ = ["Sampling"]
