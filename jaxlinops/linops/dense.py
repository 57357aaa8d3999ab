"""The module path `torchlinops.linops.dense` of torchlinops:
`from jaxlinops.linops.dense import Dense`."""

from . import Dense as Dense

__all__ = ["Dense"]
