"""The module path `torchlinops.linops.add` of torchlinops:
`from jaxlinops.linops.add import Add`."""

from . import Add as Add

__all__ = ["Add"]
