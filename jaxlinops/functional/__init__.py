"""Pure array kernels used by the operators (no Modules): `import jaxlinops.functional as F`."""

from ._blocks import (
    array_to_blocks as array_to_blocks,
    blocks_to_array as blocks_to_array,
    get_nblocks as get_nblocks,
)
from ._index import index as index, index_adjoint as index_adjoint
from ._interp import interpolate as interpolate, interpolate_adjoint as interpolate_adjoint
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
    "index",
    "index_adjoint",
    "interpolate",
    "interpolate_adjoint",
    "NUFFTPlan",
    "nufft",
    "nufft_adjoint",
    "nufft_plan",
    "center_crop",
    "center_pad",
]
