"""jaxlinops: named-dimension linear operators for JAX.

`import jaxlinops as jl`; build operators such as `jl.Dense`, `jl.Diagonal`, `jl.FFT`,
compose them with `@`, and use `A.H` (adjoint) and `A.N` (normal).
"""

import importlib.metadata as _metadata

from . import alg as alg, config as config, functional as functional, testing as testing
from ._core import (
    Coupling as Coupling,
    NamedLinop as NamedLinop,
    Tiling as Tiling,
    dims_field as dims_field,
    rename as rename,
    split as split,
    split_arrays as split_arrays,
    split_linop as split_linop,
)
from ._dims import Dim as Dim, Dims as Dims, next_unused as next_unused
from .linops import (
    FFT as FFT,
    NUFFT as NUFFT,
    Add as Add,
    Adjoint as Adjoint,
    ArrayToBlocks as ArrayToBlocks,
    BlocksToArray as BlocksToArray,
    Chain as Chain,
    Concat as Concat,
    Convolution as Convolution,
    Crop as Crop,
    Dense as Dense,
    Diagonal as Diagonal,
    Identity as Identity,
    Interpolate as Interpolate,
    Pad as Pad,
    PadDim as PadDim,
    Rearrange as Rearrange,
    Repeat as Repeat,
    Sampling as Sampling,
    Scalar as Scalar,
    ShapeSpec as ShapeSpec,
    SimpleLinop as SimpleLinop,
    Stack as Stack,
    SumReduce as SumReduce,
    ToDevice as ToDevice,
    Truncate as Truncate,
    Zero as Zero,
)
from .sharding import (
    BatchedLinop as BatchedLinop,
    BatchSpec as BatchSpec,
    create_batched_linop as create_batched_linop,
    shard as shard,
)

__all__ = [
    "alg",
    "config",
    "functional",
    "testing",
    "Dim",
    "Dims",
    "next_unused",
    "NamedLinop",
    "dims_field",
    "rename",
    "split",
    "split_arrays",
    "Coupling",
    "Tiling",
    "split_linop",
    "FFT",
    "NUFFT",
    "Add",
    "Adjoint",
    "ArrayToBlocks",
    "BlocksToArray",
    "Chain",
    "Concat",
    "Convolution",
    "Crop",
    "Dense",
    "Diagonal",
    "Identity",
    "Interpolate",
    "Pad",
    "PadDim",
    "Rearrange",
    "Repeat",
    "Sampling",
    "Scalar",
    "ShapeSpec",
    "SimpleLinop",
    "Stack",
    "SumReduce",
    "ToDevice",
    "Truncate",
    "Zero",
    "BatchedLinop",
    "BatchSpec",
    "create_batched_linop",
    "shard",
]

try:
    __version__ = _metadata.version("jaxlinops")
except _metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0.0.0+local"
