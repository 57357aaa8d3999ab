"""The module path `torchlinops.linops.trunc_pad` of torchlinops:
`from jaxlinops.linops.trunc_pad import PadDim`."""

from . import PadDim as PadDim, Truncate as Truncate

__all__ = ["PadDim", "Truncate"]
