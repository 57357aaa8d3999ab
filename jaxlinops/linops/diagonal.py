"""The module path `torchlinops.linops.diagonal` of torchlinops:
`from jaxlinops.linops.diagonal import Diagonal`."""

from . import Diagonal as Diagonal

__all__ = ["Diagonal"]
