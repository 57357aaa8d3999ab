"""The module path `torchlinops.linops.chain` of torchlinops:
`from jaxlinops.linops.chain import Chain`."""

from . import Chain as Chain

__all__ = ["Chain"]
