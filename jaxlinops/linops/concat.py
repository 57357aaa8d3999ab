"""The module path `torchlinops.linops.concat` of torchlinops:
`from jaxlinops.linops.concat import Concat, partition_slices`."""

from . import Concat as Concat
from ._partition import partition_slices as partition_slices

__all__ = ["Concat", "partition_slices"]
