"""The module path `torchlinops.linops.identity` of torchlinops:
`from jaxlinops.linops.identity import Identity`."""

from . import Identity as Identity, ShapeSpec as ShapeSpec, Sleep as Sleep, Zero as Zero

__all__ = ["Identity", "ShapeSpec", "Sleep", "Zero"]
