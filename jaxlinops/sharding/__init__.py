"""Batched execution: tiles of one operator across a device mesh or in a loop.

`create_batched_linop(A, BatchSpec(...))` and the lower-level `shard(A, mesh, axes)`
return a `BatchedLinop` that behaves like `A` (a `GridSplitLinop` when the batched dim
is one `A` couples, such as an FFT's image dim: split by domain decomposition);
`plan_batches(A)` chooses the `BatchSpec`s from the compiled programs of candidate plans.
An operator declares how it splits with `coupling`, `tiling` and `grid_form` (one of the
forms re-exported here: `Rename`, `Fourier`, `Resize`, `OffGrid`, `Steps`).
"""

from .._core import (
    Fourier as Fourier,
    GridForm as GridForm,
    OffGrid as OffGrid,
    Rename as Rename,
    Resize as Resize,
    Steps as Steps,
)
from ._batched import BatchedLinop as BatchedLinop
from ._build import create_batched_linop as create_batched_linop, shard as shard
from ._dim_split import BatchDim as BatchDim
from ._grid import GridSplitLinop as GridSplitLinop
from ._planner import Plan as Plan, PlanReport as PlanReport, plan_batches as plan_batches
from ._spec import BatchSpec as BatchSpec, ResolvedBatchSpec as ResolvedBatchSpec
from ._strategy import (
    DeviceRole as DeviceRole,
    TilingStrategy as TilingStrategy,
    create_batched_linop_v2 as create_batched_linop_v2,
)
