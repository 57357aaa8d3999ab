"""The module path `torchlinops.linops.einops` of torchlinops:
`from jaxlinops.linops.einops import Rearrange`."""

from . import Rearrange as Rearrange, Repeat as Repeat, SumReduce as SumReduce

__all__ = ["Rearrange", "Repeat", "SumReduce"]
