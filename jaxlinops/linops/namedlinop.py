"""torchlinops' module path `torchlinops.linops.namedlinop`:
`from jaxlinops.linops.namedlinop import NamedLinop`."""

from . import NamedLinop as NamedLinop

__all__ = ["NamedLinop"]
