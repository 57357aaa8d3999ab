"""The module path `torchlinops.linops.concat` of torchlinops:
`from jaxlinops.linops.concat import Concat`."""

from . import Concat as Concat

__all__ = ["Concat"]
