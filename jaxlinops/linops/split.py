"""torchlinops' module path `torchlinops.linops.split`:
`from jaxlinops.linops.split import BatchSpec, create_batched_linop, split_linop`, the
declarative `TilingStrategy`, `DeviceRole` and `create_batched_linop_v2`, and the
device-matrix helpers (`fuzzy_broadcast_to`, ...)."""

from .._core import split_linop as split_linop
from ..sharding import (
    BatchSpec as BatchSpec,
    DeviceRole as DeviceRole,
    ResolvedBatchSpec as ResolvedBatchSpec,
    TilingStrategy as TilingStrategy,
    create_batched_linop as create_batched_linop,
    create_batched_linop_v2 as create_batched_linop_v2,
)
from ..sharding._broadcast import (
    flatten_recursive as flatten_recursive,
    fuzzy_broadcast_to as fuzzy_broadcast_to,
    is_broadcastable as is_broadcastable,
    repeat_along_axes as repeat_along_axes,
    tile_along_axes as tile_along_axes,
)
from ..sharding._strategy import ALL_DEVICE_ROLES as ALL_DEVICE_ROLES

__all__ = ["BatchSpec", "ResolvedBatchSpec", "create_batched_linop", "split_linop"]
