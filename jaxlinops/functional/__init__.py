"""Pure array kernels used by the operators (no Modules): `import jaxlinops.functional as F`.

torchlinops' names are here too: `fold`/`unfold` (the block kernels with its argument
names), `grid` (= `interpolate_adjoint`), `ungrid` (= `interpolate`), `mask2idx` and the
index helpers `slice2range`, `canonicalize_idx`, `ensure_tensor_indexing`.
"""

from ._blocks import (
    array_to_blocks as array_to_blocks,
    blocks_to_array as blocks_to_array,
    get_nblocks as get_nblocks,
)
from ._fold import fold as fold, unfold as unfold
from ._index import (
    canonicalize_idx as canonicalize_idx,
    ensure_tensor_indexing as ensure_tensor_indexing,
    index as index,
    index_adjoint as index_adjoint,
    mask2idx as mask2idx,
    slice2range as slice2range,
)
from ._interp import (
    interpolate as interpolate,
    interpolate as ungrid,
    interpolate_adjoint as grid,
    interpolate_adjoint as interpolate_adjoint,
)
from ._nufft import (
    NUFFTPlan as NUFFTPlan,
    nufft as nufft,
    nufft_adjoint as nufft_adjoint,
    nufft_plan as nufft_plan,
)
from ._pad import center_crop as center_crop, center_pad as center_pad

__all__ = [
    "array_to_blocks",
    "blocks_to_array",
    "get_nblocks",
    "fold",
    "unfold",
    "index",
    "index_adjoint",
    "mask2idx",
    "slice2range",
    "canonicalize_idx",
    "ensure_tensor_indexing",
    "interpolate",
    "interpolate_adjoint",
    "grid",
    "ungrid",
    "NUFFTPlan",
    "nufft",
    "nufft_adjoint",
    "nufft_plan",
    "center_crop",
    "center_pad",
]
