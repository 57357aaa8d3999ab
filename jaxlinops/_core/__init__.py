"""The core layer: the `NamedLinop` base class and the operator algebra.

Modules, lowest first (each imports only those before it):

- `_coupling`: what operators declare about splitting (`Coupling`, `Tiling`);
- `_forms`: what they declare for grid splitting (`GridForm`: `Rename`, `Fourier`,
  `Resize`, `OffGrid`, `Steps`);
- `_linop`: the base class, dims fields and renaming, and the `Algebra` slot;
- `_tiles`: tiles (`Tile`, `split`, `slice_arrays`, `split_linop`);
- `_schedule`: how containers run their children (`parallel_execute`);
- `_containers`: shape bookkeeping shared by container operators;
- `_adjoint`, `_identity`, `_diagonal`, `_chain`, `_scalar`: the algebra's operators;
- `_unify`, `_add`: sums of parallel operators;
- `_masks`: tiles of operators that create or consume a dim (`split_arrays`);
- `_normal`: the normal's dims and folding rules;
- `_custom`: the base of classes written to torchlinops' protocol (`FunctionLinop`);
- `_algebra`: composition, sums, scaling, adjoints and normals, installed here into the
  base class.

The leaf operators (`jaxlinops.linops`) and everything above import from this package.
"""

from . import _algebra
from ._add import Add as Add
from ._adjoint import Adjoint as Adjoint, wrapped_adjoint as wrapped_adjoint
from ._chain import Chain as Chain
from ._containers import (
    Composite as Composite,
    Container as Container,
    Scheduled as Scheduled,
    add_all as add_all,
    as_linops as as_linops,
    block_apply as block_apply,
    call_adjoint as call_adjoint,
    children_coupling as children_coupling,
    consistent_size as consistent_size,
)
from ._coupling import Coupling as Coupling, Tiling as Tiling, strongest as strongest
from ._custom import FunctionLinop as FunctionLinop, NormalFn as NormalFn, user_split as user_split
from ._diagonal import Diagonal as Diagonal, weighted as weighted
from ._forms import (
    ADJOINT_NORM as ADJOINT_NORM,
    Fourier as Fourier,
    GridForm as GridForm,
    OffGrid as OffGrid,
    Rename as Rename,
    Resize as Resize,
    Steps as Steps,
)
from ._identity import (
    Identity as Identity,
    ShapeSpec as ShapeSpec,
    Zero as Zero,
    check_same_rank as check_same_rank,
)
from ._linop import (
    Labelled as Labelled,
    NamedLinop as NamedLinop,
    SameDims as SameDims,
    adjoint_label as adjoint_label,
    all_dims as all_dims,
    check_input as check_input,
    check_label as check_label,
    dims_field as dims_field,
    map_dims as map_dims,
    own_split as own_split,
    relabel as relabel,
    rename as rename,
    stacked_field as stacked_field,
    use_algebra,
)
from ._masks import mask_padded as mask_padded, split_arrays as split_arrays
from ._normal import (
    default_normal as default_normal,
    fold_normal as fold_normal,
    identity_normal as identity_normal,
    normal_oshape as normal_oshape,
    normal_renaming as normal_renaming,
    with_oshape as with_oshape,
)
from ._scalar import Scalar as Scalar
from ._schedule import check_schedule as check_schedule, parallel_execute as parallel_execute
from ._tiles import (
    ArrayAxes as ArrayAxes,
    Tile as Tile,
    as_tile as as_tile,
    slice_arrays as slice_arrays,
    split as split,
    split_children as split_children,
    split_linop as split_linop,
    take as take,
    tile_grid as tile_grid,
    tile_length as tile_length,
    valid_length as valid_length,
)
from ._unify import most_specific as most_specific, unify as unify

use_algebra(_algebra)
