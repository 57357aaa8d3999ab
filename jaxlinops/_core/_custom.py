r"""Operators written to torchlinops' protocol: `FunctionLinop` and `NormalFn`.

torchlinops' custom operator calls `super().__init__(NamedShape(ishape, oshape))`, sets
its data as attributes in `__init__`, and defines static `fn(linop, x, /)` ($A x$),
`adj_fn(linop, x, /)` ($A^H x$) and optionally `normal_fn(linop, x, /)` ($A^H A x$),
`split(linop, tile)` and `size(self, dim)`. Such a class, written as a subclass of
`NamedLinop`, derives from `FunctionLinop` (the metaclass swaps the base), so it is an
equinox Module like every other operator: attributes holding arrays are pytree leaves
(traced under `jit`, differentiable), the others are static.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from typing import Any

import equinox as eqx
import jax

from .._dims import Dims, as_dims, fmt
from ..nameddim import NamedShape
from ._coupling import Coupling
from ._linop import Labelled, NamedLinop, all_dims, check_label, dims_field, own_split
from ._masks import split_clamped
from ._normal import normal_oshape
from ._tiles import Tile


class FunctionLinop(Labelled, is_abstract=True):
    r"""The base of a class written to torchlinops' protocol: $A x$ is
    `type(A).fn(A, x)` and $A^H y$ is `type(A).adj_fn(A, y)`.

    `A.N` is the class's own `normal_fn` when it defines one (a `NormalFn`), else
    `A.H @ A`. The default `split` refuses to split the operator along its own dims;
    define `split(linop, tile)` to slice its arrays: the operator then declares
    `Coupling.NONE` along all its dims (override `coupling` where that is not so), and
    batched execution pads the tiles that run past the end of a dim itself (the class's
    `split` only sees slices inside its dims; see `split_clamped`). Attributes are
    read-only once `__init__` returns (operators are immutable pytrees).
    """

    ishape: Dims = dims_field(default=None)
    oshape: Dims = dims_field(default=None)
    arrays: dict[str, Any] | None = None  # attributes that hold arrays: pytree leaves
    settings: tuple[tuple[str, Any], ...] = eqx.field(static=True, default=())

    def __init__(self, shape: NamedShape, name: str | None = None, stream=None):
        """**Arguments:**

        - `shape`: a `NamedShape(ishape, oshape)` (anything with `ishape` and `oshape`).
        - `name`: a display name, shown by `repr` and in error messages.
        - `stream`: torch's CUDA stream; accepted and ignored (XLA schedules the work).
        """
        what = f"`{type(self).__name__}`: `super().__init__(shape)`"
        if not (hasattr(shape, "ishape") and hasattr(shape, "oshape")):
            raise TypeError(
                f"{what} expects a `NamedShape(ishape, oshape)`; got {type(shape).__name__}."
            )
        self.ishape = as_dims(shape.ishape)
        self.oshape = as_dims(shape.oshape)
        self.label = check_label(type(self).__name__, name)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.fn is NamedLinop.fn and cls.forward is FunctionLinop.forward:
            raise TypeError(f"`{cls.__name__}` must define a static `fn(linop, x, /)`.")
        if cls.adj_fn is NamedLinop.adj_fn and cls.adjoint is NamedLinop.adjoint:
            raise TypeError(
                f"`{cls.__name__}` defines `fn` but not its adjoint: define a static "
                f"`adj_fn(linop, x, /)` (or `adjoint()`)."
            )
        own = cls.__dict__.get("split")
        if own is not None:
            cls.split = _clamps_tiles(own)

    def __check_init__(self):
        if self.ishape is None:
            raise TypeError(
                f"`{type(self).__name__}.__init__` must call "
                f"`super().__init__(NamedShape(ishape, oshape))`."
            )

    def __setattr__(self, name: str, value) -> None:
        """`self.weight = w` in `__init__`: an array-valued attribute is stored in
        `arrays`, any other in `settings` (static, so it must be hashable)."""
        owner = type(self).__name__
        try:
            self._store(owner, name, value)
        except dataclasses.FrozenInstanceError:
            raise dataclasses.FrozenInstanceError(
                f"`{owner}.{name} = ...`: an operator is immutable once built; build a new "
                f"one (or a modified copy with `equinox.tree_at`)."
            ) from None

    def _store(self, owner: str, name: str, value) -> None:
        if name in ("ishape", "oshape", "label", "arrays", "settings"):
            return super().__setattr__(name, value)
        if hasattr(type(self), name):
            raise TypeError(
                f"`{owner}.{name} = ...` would hide the operator's own `{name}`; store the "
                f"value under another name."
            )
        if any(eqx.is_array(leaf) for leaf in jax.tree.leaves(value)):
            arrays = self.__dict__.get("arrays") or {}
            return super().__setattr__("arrays", {**arrays, name: value})
        try:
            hash(value)
        except TypeError:
            raise TypeError(
                f"`{owner}.{name} = ...`: an attribute without arrays is a static setting "
                f"and must be hashable; got a {type(value).__name__}. Store a tuple."
            ) from None
        kept = tuple((k, v) for k, v in self.__dict__.get("settings", ()) if k != name)
        return super().__setattr__("settings", (*kept, (name, value)))

    def __getattr__(self, name: str):
        """Attributes set in `__init__` (called only where normal lookup fails)."""
        own = object.__getattribute__(self, "__dict__")
        arrays = own.get("arrays") or {}
        if name in arrays:
            return arrays[name]
        for key, value in own.get("settings", ()):
            if key == name:
                return value
        raise AttributeError(f"`{type(self).__name__}` has no attribute {name!r}.")

    @property
    def _shape(self) -> NamedShape:
        """torchlinops' private `_shape`, which its examples read: `A.shape`."""
        return self.shape

    def forward(self, x: jax.Array) -> jax.Array:
        """$A x$: `fn(self, x)` (a class may override it, as torchlinops' examples do)."""
        return type(self).fn(self, x)

    def apply(self, x: jax.Array) -> jax.Array:
        return self.forward(x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return type(self).adj_fn(self, y)

    def coupling(self, dim: str) -> Coupling:
        """`Coupling.NONE` along its dims when the class defines its own `split`."""
        if own_split(self) and dim in self.dims:
            return Coupling.NONE
        return super().coupling(dim)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if inner is not None or type(self).normal_fn is NamedLinop.normal_fn:
            return None
        return NormalFn(linop=self, ishape=self.ishape, oshape=normal_oshape(self))


def user_split(op: object) -> bool:
    """Whether `op` is a class written to torchlinops' protocol with its own `split`."""
    return isinstance(op, FunctionLinop) and own_split(op)


class BaseStandIn(FunctionLinop):
    r"""torchlinops' base class built directly, `NamedLinop(NamedShape(ishape, oshape))`:
    an operator with dims and torchlinops' default functions, $A x = x$ and $A^H y = y$,
    a stand-in in shape algebra (`A.H`, `A.N`, `B @ A`, `A.split(tile)`). Shown as
    `NamedLinop` (or its `name`).

    Applied, it returns its input, so it maps arrays only when `ishape` and `oshape`
    have as many dims (it renames them); otherwise applying it is a ValueError naming it.
    """

    @property
    def name(self) -> str:
        return self.label or "NamedLinop"

    @staticmethod
    def fn(linop: NamedLinop, x: jax.Array, /, context=None) -> jax.Array:
        if len(linop.ishape) != len(linop.oshape):
            raise ValueError(
                f"`{linop.name}({fmt(linop.ishape)} -> {fmt(linop.oshape)})`: torchlinops' "
                f"base class built directly returns its input unchanged, which fits an "
                f"operator whose input and output have as many dims; subclass `NamedLinop` "
                f"with `fn` and `adj_fn` to define one that maps them."
            )
        return x

    @staticmethod
    def adj_fn(linop: NamedLinop, x: jax.Array, /, context=None) -> jax.Array:
        return BaseStandIn.fn(linop, x)


def _clamps_tiles(impl: Callable) -> Callable:
    """A class's `split(linop, tile)`, given a padded `Tile` (batched execution), sees only
    slices inside the dims: `split_clamped` pads its tile back. A user's `{dim: slice}` is
    checked first (`impl` calls back with a `Tile`)."""

    @functools.wraps(impl)
    def split(linop, tile):
        if not isinstance(tile, Tile):
            return impl(linop, tile)
        return split_clamped(linop, tile, impl)

    return split


class NormalFn(NamedLinop):
    r"""$A^H A x$ by the operator's own `normal_fn(A, x)`: `ishape -> oshape`, both laid
    out like `A.ishape` (the output with `A`'s unshared input dims renamed).

    Self-adjoint: the adjoint applies the same function from `oshape` to `ishape`. It splits
    through `A`'s `split`, along the dims where $A^H A$ is block diagonal or a sum: a dim
    `A` shares between input and output (the tile is $A_t^H A_t$, if `A` applies it entry
    by entry) and an output-only dim of `A` (internal here: $A^H A = \sum_t A_t^H A_t$).
    """

    linop: NamedLinop
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()

    @property
    def name(self) -> str:
        return f"{self.linop.name}.N"

    def apply(self, x: jax.Array) -> jax.Array:
        return type(self.linop).normal_fn(self.linop, x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return type(self.linop).normal_fn(self.linop, y)

    def adjoint(self) -> NamedLinop:
        return NormalFn(linop=self.linop, ishape=self.oshape, oshape=self.ishape)

    def _splits(self, dim: str) -> bool:
        """Whether `dim` is one `A`'s tiles split (see the class doc)."""
        shared = set(self.ishape) & set(self.oshape)
        return dim in shared or dim in all_dims(self.linop) - set(self.linop.ishape)

    def coupling(self, dim: str) -> Coupling:
        return self.linop.coupling(dim) if self._splits(dim) else Coupling.GLOBAL

    def split(self, tile: Mapping[str, slice]) -> NamedLinop:
        refused = sorted(d for d in tile if d in self.dims and not self._splits(d))
        if refused:
            raise ValueError(
                f"`{self.name}` cannot be split along dims {refused}: `{self.linop.name}`'s "
                f"normal couples an input-only dim of it with its renamed copy."
            )
        return NormalFn(linop=self.linop.split(tile), ishape=self.ishape, oshape=self.oshape)

    def size(self, dim: str) -> int | None:
        """The size of the dim of `A.ishape` at the same position, on either side; `A`'s
        size of an internal dim (one of `A`'s output only)."""
        for mine, theirs in zip(self.ishape + self.oshape, self.linop.ishape * 2):
            if mine == dim:
                return self.linop.size(theirs)
        return self.linop.size(dim)
