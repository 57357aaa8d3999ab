"""The module path `torchlinops.linops.stack` of torchlinops:
`from jaxlinops.linops.stack import Stack`."""

from . import Stack as Stack

__all__ = ["Stack"]
