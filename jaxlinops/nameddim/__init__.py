"""torchlinops' `nameddim` module: `from jaxlinops.nameddim import NamedDimension as ND`.

`Dim` is jaxlinops' own parser; `NamedDimension` is a `str` subclass that jaxlinops
operators accept as a dim (they store its plain name; `Dense(W)` without shapes holds
torchlinops' `AnyDim(k)` objects). torchlinops' matching helpers
(`isequal`, `iscompatible`, `align`, `resolve_wildcards`, `max_shape`, `coalesce`) keep
its rules for code that calls them; jaxlinops' operators match shapes with
`jaxlinops._dims`. `standardize_shapes` is not provided: it sets operators' shapes in
place, and jaxlinops operators are immutable (`jaxlinops.rename` relabels a copy).
"""

from .._dims import ANY as ANY, Dim as Dim
from ._collection import (
    NamedDimCollection as NamedDimCollection,
    NamedShape as NamedShape,
    Shape as Shape,
)
from ._matching import (
    align as align,
    coalesce as coalesce,
    iscompatible as iscompatible,
    isequal as isequal,
    max_shape as max_shape,
    resolve_wildcards as resolve_wildcards,
)
from ._nameddim import (
    ELLIPSES as ELLIPSES,
    AnyDim as AnyDim,
    NamedDimension as NamedDimension,
    is_any as is_any,
)
from ._shapes import (
    K2N as K2N,
    N2K as N2K,
    fake_dims as fake_dims,
    get_nd_shape as get_nd_shape,
    is_spatial_dim as is_spatial_dim,
    partition as partition,
)

ND = NamedDimension
NS = NamedShape

__all__ = [
    "ANY",
    "ELLIPSES",
    "AnyDim",
    "Dim",
    "K2N",
    "N2K",
    "ND",
    "NS",
    "NamedDimCollection",
    "NamedDimension",
    "NamedShape",
    "Shape",
    "align",
    "coalesce",
    "fake_dims",
    "get_nd_shape",
    "is_any",
    "is_spatial_dim",
    "iscompatible",
    "isequal",
    "max_shape",
    "partition",
    "resolve_wildcards",
]
