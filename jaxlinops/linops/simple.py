"""The module path `torchlinops.linops.simple` of torchlinops:
`from jaxlinops.linops.simple import SimpleLinop`."""

from . import SimpleLinop as SimpleLinop

__all__ = ["SimpleLinop"]
