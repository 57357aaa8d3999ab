"""The module path `torchlinops.linops.breakpt` of torchlinops:
`from jaxlinops.linops.breakpt import BreakpointLinop`."""

from . import BreakpointLinop as BreakpointLinop

__all__ = ["BreakpointLinop"]
