r"""Grid splitting: an operator run on slabs of the dims it couples, across a device mesh
(see `_split` for the method).

- `_split`: `grid_split` and the executor `GridSplitLinop`, and the table `_FORMS` from
  what a leaf declares (its grid form, `jaxlinops._core._forms`) to the stage it runs as;
- `_stages`: the stages (`AbstractStage`): entry by entry, a distributed FFT, a halo
  exchange, slab moves around a resize, a renaming;
- `_points`: the stage of a reader of the grid at off-grid points (points bucketed by
  slab);
- `_kernel`: the Toeplitz kernel of a split NUFFT normal, computed split.
"""

from ._split import GridSplitLinop as GridSplitLinop, grid_split as grid_split
from ._stages import GridBatch as GridBatch
