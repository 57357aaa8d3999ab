"""The module path `torchlinops.linops.pad_last` of torchlinops:
`from jaxlinops.linops.pad_last import Crop`."""

from . import Crop as Crop, Pad as Pad, PadLast as PadLast

__all__ = ["Crop", "Pad", "PadLast"]
