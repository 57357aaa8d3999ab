"""torchlinops' module path `torchlinops.linops.split`:
`from jaxlinops.linops.split import BatchSpec, create_batched_linop, split_linop`."""

from .._core import split_linop as split_linop
from ..sharding import (
    BatchSpec as BatchSpec,
    ResolvedBatchSpec as ResolvedBatchSpec,
    create_batched_linop as create_batched_linop,
)

__all__ = ["BatchSpec", "ResolvedBatchSpec", "create_batched_linop", "split_linop"]
