"""The module path `torchlinops.linops.interp` of torchlinops:
`from jaxlinops.linops.interp import Interpolate`."""

from . import Interpolate as Interpolate

__all__ = ["Interpolate"]
