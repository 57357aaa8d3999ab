"""The module path `torchlinops.linops.scalar` of torchlinops:
`from jaxlinops.linops.scalar import Scalar`."""

from . import Scalar as Scalar

__all__ = ["Scalar"]
