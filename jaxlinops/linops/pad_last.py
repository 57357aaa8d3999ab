"""The module path `torchlinops.linops.pad_last` of torchlinops:
`from jaxlinops.linops.pad_last import Crop`."""

from ..functional._pad import (
    crop_slice_from_pad as crop_slice_from_pad,
    pad_to_scale as pad_to_scale,
    pad_to_size as pad_to_size,
)
from . import Crop as Crop, Pad as Pad, PadLast as PadLast

__all__ = ["Crop", "Pad", "PadLast", "crop_slice_from_pad", "pad_to_scale", "pad_to_size"]
