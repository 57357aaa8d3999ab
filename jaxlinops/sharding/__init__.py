"""Batched execution: tiles of one operator across a device mesh or in a loop.

`create_batched_linop(A, BatchSpec(...))` and the lower-level `shard(A, mesh, axes)`
return a `BatchedLinop` that behaves like `A`.
"""

from ._batched import BatchDim as BatchDim, BatchedLinop as BatchedLinop
from ._build import create_batched_linop as create_batched_linop, shard as shard
from ._spec import BatchSpec as BatchSpec, ResolvedBatchSpec as ResolvedBatchSpec
