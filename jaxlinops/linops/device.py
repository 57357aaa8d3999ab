"""The module path `torchlinops.linops.device` of torchlinops:
`from jaxlinops.linops.device import ToDevice`."""

from . import ToDevice as ToDevice

__all__ = ["ToDevice"]
