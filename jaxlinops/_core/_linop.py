"""The `NamedLinop` base class, its dims, and the slot for the operator algebra.

The base class defines what every operator has: application with input checks, `.H`,
`.N`, `@`, `+`, `*`, dims and renaming. The operators that the algebra builds (`Chain`,
`Add`, `Scalar`, `Adjoint`) subclass `NamedLinop`, so this module cannot import them
without a cycle. Instead the algebra is one object, an `Algebra`, that
`jaxlinops._core` installs with `use_algebra` when the package is imported; the base
class calls it for composition, sums, scaling, adjoints and normals.

A class written to torchlinops' protocol (static `fn(linop, x)` and `adj_fn(linop, x)`,
`super().__init__(NamedShape(ishape, oshape))`, attributes set in `__init__`) derives
from the algebra's `function_base` instead of `NamedLinop` (see `_LinopMeta`).
"""

import abc
import copy
import dataclasses
import functools
import numbers
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol, dataclass_transform, overload

import equinox as eqx
import jax
import numpy as np
from equinox import AbstractVar
from jax.typing import ArrayLike

from .._arrays import as_array, as_device, check_dtype, check_rank, dim_sizes
from .._dims import Dims, fmt, substitute, unique
from .._reverse_mode import forward_mode_error
from ..nameddim import NamedShape
from ._coupling import Coupling, Tiling
from ._forms import GridForm

if TYPE_CHECKING:
    # Type checkers recognise the fields of an equinox Module only through `eqx.field`
    # (a dataclass_transform field specifier): the wrappers below read as one of them.
    dims_field = stacked_field = eqx.field
else:

    def dims_field(kind: str = "shape", **kwargs):
        """A static field holding dims: a tuple of names (`kind="shape"`) or a tuple of
        `(dim, value)` pairs (`kind="pairs"`).

        Marking dims this way lets `rename` and wildcard resolution rewrite every operator,
        including user-defined ones, without per-class code.
        """
        return eqx.field(static=True, metadata={"dims": kind}, **kwargs)

    def stacked_field(**kwargs):
        """A field holding operators whose arrays are stacked per tile (a batched
        operator's tiles): renaming does not re-validate them, since their arrays carry an
        extra axis."""
        return eqx.field(metadata={"stacked": True}, **kwargs)


_ALGEBRA: "list[Algebra]" = []  # the installed algebra (`use_algebra`)


# Type checkers read `dataclass_transform` on an operator's own metaclass only, not on the
# metaclass it derives from (equinox's): repeated here, as equinox declares it, so that every
# operator's generated `__init__` is seen.
@dataclass_transform(field_specifiers=(dataclasses.field, eqx.field))
class _LinopMeta(type(eqx.Module)):
    """`NamedLinop`'s metaclass: it reads classes written to torchlinops' protocol.

    - A static `split(linop, tile)` is the method `split(self, tile)`: the same function,
      bound to the operator (`A.split(tile)` and `type(A).split(A, tile)` both work). A
      class's `split` receives a checked `Tile`: called with a user's `{dim: slice}`, it
      goes through `NamedLinop.split` first (`_takes_tiles`).
    - A direct subclass of `NamedLinop` that defines `fn` or `adj_fn` and not `apply` is
      a torchlinops-style operator: it derives from the algebra's `function_base`, which
      runs those functions and holds the attributes its `__init__` sets.
    - `NamedLinop(NamedShape(ishape, oshape), name=None)`, torchlinops' base class built
      directly, builds the algebra's `base_stand_in`: an operator with those dims and
      torchlinops' default functions (`fn(A, x) = x`).
    """

    def __new__(mcs, name, bases, namespace, **kwargs):
        split = namespace.get("split")
        if split is not None:
            namespace["split"] = _takes_tiles(getattr(split, "__func__", split))
        if _ALGEBRA and {"fn", "adj_fn"} & namespace.keys() and "apply" not in namespace:
            base = algebra().function_base
            bases = tuple(base if b is NamedLinop else b for b in bases)
        return super().__new__(mcs, name, bases, namespace, **kwargs)

    def __call__(cls, *args, **kwargs):
        if cls is NamedLinop:  # torchlinops' base class, built directly
            return algebra().base_stand_in(*args, **kwargs)
        return super().__call__(*args, **kwargs)


def _takes_tiles(impl: Callable) -> Callable:
    """A class's `split(linop, tile)`, called with a user's `{dim: slice}` (torchlinops'
    call `A.split(tile)`), checks it first: `NamedLinop.split` turns it into a `Tile` and
    calls back."""

    @functools.wraps(impl)
    def split(linop, tile, *rest):
        if rest:  # torchlinops' static call on an instance, `A.split(B, tile)`: B's tile
            op, tile = _static_call("split", linop, tile, rest)
            return op.split(tile)
        if not isinstance(tile, algebra().tile_type):
            return algebra().split(linop, tile)
        return impl(linop, tile)

    return split


def _static_call(method: str, linop, op, rest: tuple) -> "tuple[NamedLinop, Mapping[str, slice]]":
    """The operator and tile of torchlinops' static `split`/`adj_split` called on an
    instance, `A.split(B, tile)` (`op` = B, `rest` = `(tile,)`)."""
    if len(rest) != 1 or not isinstance(op, NamedLinop):
        raise TypeError(
            f"`{linop.name}.{method}` takes a tile, `A.{method}(tile)`, or an operator and a "
            f"tile, `A.{method}(A, tile)`; got {1 + len(rest)} arguments, the first a "
            f"{type(op).__name__}."
        )
    return op, rest[0]


class NamedLinop(eqx.Module, metaclass=_LinopMeta):
    r"""Abstract base of all named-dimension linear operators.

    A linop $A$ maps arrays laid out by `ishape` to arrays laid out by `oshape`. Concrete
    subclasses provide `ishape` and `oshape` (static `dims_field()`s or properties,
    tuples of dim names), `apply(x)` $= A x$ and
    `apply_adjoint(y)` $= A^H y$. They may override `adjoint`, `normal`, `split` and
    `size` to return cheaper or specialised operators.

    Every linop has `A(x)`, `A.H`, `A.N`, `A @ B`, `A + B`, `A - B`, `c * A`, `-A`,
    `A.size(dim)`, `A.dims` and `A.shape`, and torchlinops' static `fn`, `adj_fn`,
    `normal_fn`, `split` and `adj_split`. Classes may also be written to torchlinops'
    protocol (`fn` and `adj_fn` instead of `apply` and `apply_adjoint`; see
    `docs/custom-operators.md`).
    """

    ishape: AbstractVar[Dims]
    oshape: AbstractVar[Dims]

    __array_ufunc__ = None  # numpy defers `array * A` and `array @ A` to us

    @abc.abstractmethod
    def apply(self, x: jax.Array) -> jax.Array:
        """$A x$ for `x` laid out by `ishape` (no input checks)."""

    @abc.abstractmethod
    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        """$A^H y$ for `y` laid out by `oshape` (no input checks)."""

    def __setattr__(self, name: str, value: object) -> None:
        """Operators are immutable: assigning a field raises `FrozenInstanceError` (build a
        changed copy with `jaxlinops.rename` or `eqx.tree_at`). A private annotation, a
        name with a leading underscore that is not a field (`A._locs_orig = locs`, as
        torch code tags its modules), is kept on this object; it is not part of the
        pytree, so JAX transformations and `eqx.tree_at` do not carry it."""
        if name.startswith("_") and name not in {f.name for f in dataclasses.fields(self)}:
            object.__setattr__(self, name, value)
        else:
            super().__setattr__(name, value)

    # ----------------------------------------------------------------- application
    def __call__(self, x) -> jax.Array:
        """Apply the operator after checking `x` against `ishape` and known sizes."""
        x = as_array(x, f"`{self.name}(x)`")
        check_dtype(f"`{self.name}(x)`", x)
        check_input(self, self.ishape, x)
        try:
            return self.apply(x)
        except TypeError as error:
            named = forward_mode_error(f"`{self.name}(x)`", self, error)
            if named is None:
                raise
            raise named from error

    def check_input_shape(self, x, broadcast: bool = True) -> None:
        """torchlinops' input check, without applying: a ValueError when `x` cannot be laid
        out by `ishape` or a dim's size differs from the operator's. With `broadcast`, a
        dim of size 1 in the operator accepts any size; calling the operator does not."""
        check_input(
            self, self.ishape, as_array(x, f"`{self.name}.check_input_shape(x)`"), broadcast
        )

    def to(self, device, memory_aware: bool = False) -> "NamedLinop":
        """A copy of the operator with its arrays on `device` (a `jax.Device`, a device
        string such as `"cpu"` or `"gpu:1"`, or a `DeviceSpec`): torchlinops' `A.to`.
        `memory_aware` (torchlinops' option to keep shared storage shared) is accepted
        and has no effect: JAX arrays are immutable, so a copy changes nothing shared."""
        del memory_aware
        return jax.device_put(self, as_device(device, f"`{self.name}.to(device)`"))

    # ----------------------------------------------------------------- derived operators
    @property
    def H(self) -> "NamedLinop":
        """The adjoint (conjugate transpose) $A^H$."""
        return self.adjoint()

    @property
    def N(self) -> "NamedLinop":
        """The normal operator $A^H A$; unshared input dims are renamed in its output."""
        return self.normal()

    def adjoint(self) -> "NamedLinop":
        """$A^H$. The default wraps `self` (`Adjoint`); `A.H.H` gives back `A`."""
        return algebra().adjoint(self)

    def normal(self, inner: "NamedLinop | None" = None) -> "NamedLinop":
        """$A^H \\, \\mathrm{inner} \\, A$ (or $A^H A$ without `inner`).

        `inner` takes `oshape` (wildcards and a pointwise weight on trailing dims are
        aligned to it) and returns `oshape` with some dims renamed; Chain folds normals
        through this argument from the outside in. Operators do not override this method:
        the rules of `fold_normal` apply first, then the `_normal` hook. A plain normal
        built as a container is labelled `"<name>.N"`, so its errors name the operator
        the user wrote, not the Chain it became.
        """
        normal = algebra().normal(self, inner)
        if inner is None and isinstance(normal, Labelled) and normal.children:
            if normal.label is None:
                return with_label(normal, f"{self.name}.N")
        return normal

    def _normal(self, inner: "NamedLinop | None") -> "NamedLinop | None":
        """Hook for a structured normal: $A^H \\, \\mathrm{inner} \\, A$, or None for the
        default `Chain(A, inner, A^H)`.

        `inner` is None (plain $A^H A$; the result's output dims are renamed afterwards)
        or an operator that is neither an identity nor a scalar (those are folded before
        the hook is called); the result then maps `ishape` to
        `normal_oshape(self, inner.oshape)`.
        """
        return None

    def size(self, dim: str) -> int | None:
        """The size of `dim` if this operator fixes it, else None."""
        return None

    def tiling(self) -> Tiling:
        """What a tile slices: the operator's arrays along their named axes and the dims
        it applies entry by entry (see `Tiling`). The default: none; every own dim is then
        coupled globally and refuses to split."""
        return Tiling()

    def coupling(self, dim: str) -> Coupling:
        """How this operator couples the entries of `dim`, one of its dims: `Coupling.NONE`
        for the dims of `tiling()`, else `Coupling.GLOBAL`. An operator whose outputs
        depend only on nearby entries along a dim overrides this with `Coupling.halo(k)`;
        one with its own `split` overrides both."""
        return Coupling.NONE if dim in self.tiling().dims else Coupling.GLOBAL

    def grid_form(self) -> GridForm | None:
        """What this operator does along the dims it couples, for splitting them across
        devices (see `jaxlinops._core._forms`): a renaming, a DFT, a resize, a reader at
        off-grid points, or a chain of steps; None (the default) for an operator split by
        its `coupling` alone (entry by entry, or by halo exchange)."""
        return None

    def split(linop, tile: Mapping[str, slice]) -> "NamedLinop":
        """The tile $Q_t A P_t^T$ for `tile = {dim: slice}`, as `jaxlinops.split(A, tile)`.

        Called as torchlinops does, `NamedLinop.split(A, tile)`, `A.split(A, tile)` or
        `A.split(tile)`, with
        dim names or `NamedDimension`s as keys, the tile is checked as `jaxlinops.split`
        checks it (a dim `A` lacks is refused) and dispatched to the operator's own
        `split`. Operators override this method (named `split(self, tile)` or a static
        `split(linop, tile)`) and receive a checked `Tile`, which may name dims of other
        operators of a container (ignored); a tiled dim of its own that `tiling()` does
        not declare is refused with a ValueError. The default slices what `tiling()`
        declares.
        """
        return algebra().split(linop, tile)

    def adj_split(linop, tile: Mapping[str, slice], *rest) -> "NamedLinop":
        """torchlinops' `adj_split`: the adjoint of the tile of the adjoint,
        `split(A.H, tile).H`, which is the tile `split(A, tile)` (a tile names dims, not
        sides). Called as torchlinops does, `A.adj_split(A, tile)` or `A.adj_split(tile)`."""
        if rest:
            op, tile = _static_call("adj_split", linop, tile, rest)
            return op.adj_split(tile)
        return NamedLinop.split(linop.adjoint(), tile).adjoint()

    @staticmethod
    def fn(linop: "NamedLinop", x: jax.Array, /, context=None) -> jax.Array:
        """torchlinops' forward function: $A x$ (`linop.apply(x)`, no input checks).

        A class written to torchlinops' protocol defines it instead of `apply`.
        `context` (torch's CUDA synchronisation) is accepted and ignored.
        """
        return linop.apply(x)

    @staticmethod
    def adj_fn(linop: "NamedLinop", x: jax.Array, /, context=None) -> jax.Array:
        """torchlinops' adjoint function: $A^H x$ (`linop.apply_adjoint(x)`)."""
        return linop.apply_adjoint(x)

    @staticmethod
    def normal_fn(linop: "NamedLinop", x: jax.Array, /, context=None) -> jax.Array:
        """torchlinops' normal function: $A^H A x$. A class written to torchlinops'
        protocol may define a cheaper one; `A.N` then applies it."""
        return linop.adj_fn(linop, linop.fn(linop, x))

    def flatten(self) -> "list[NamedLinop]":
        """The operators this one contributes to a Chain, as a list (torchlinops'
        `flatten`; a Chain returns its children)."""
        return [self]

    # ----------------------------------------------------------------- shape helpers
    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def dims(self) -> Dims:
        """Dims of `ishape` and `oshape`, in order, without repeats."""
        return unique(self.ishape + self.oshape)

    @property
    def shape(self) -> NamedShape:
        """`NamedShape(ishape, oshape)`, torchlinops' `A.shape`: a new object on each
        access, so changing it does not change `A` (operators are immutable; build a
        renamed operator with `jaxlinops.rename`)."""
        return NamedShape(self.ishape, self.oshape)

    @property
    def children(self) -> "tuple[NamedLinop, ...]":
        """Sub-operators shown in the repr tree (containers override this)."""
        return ()

    def modules(self) -> "Iterator[NamedLinop]":
        """This operator and every operator inside it, each once, depth first: torch's
        `Module.modules()`, found in the fields (any operator-valued field, not only
        `children`)."""
        seen: set[int] = set()
        stack: list[NamedLinop] = [self]
        while stack:
            op = stack.pop()
            if id(op) in seen:
                continue
            seen.add(id(op))
            yield op
            inner = [getattr(op, f.name) for f in dataclasses.fields(op)]
            found = jax.tree.leaves(inner, is_leaf=lambda v: isinstance(v, NamedLinop))
            stack.extend(reversed([v for v in found if isinstance(v, NamedLinop)]))

    def __repr__(self) -> str:
        head = f"{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)})"
        lines = [head] + ["  " + line for c in self.children for line in repr(c).splitlines()]
        return "\n".join(lines)

    # ----------------------------------------------------------------- algebra
    @overload
    def __matmul__(self, other: "NamedLinop") -> "NamedLinop": ...

    @overload
    def __matmul__(self, other: jax.Array | np.ndarray) -> jax.Array: ...

    def __matmul__(self, other: object) -> "NamedLinop | jax.Array":
        if isinstance(other, NamedLinop):
            return algebra().compose(self, other)
        if isinstance(other, (jax.Array, np.ndarray)):
            return self(other)
        raise TypeError(
            f"`{self.name} @ x` composes with a NamedLinop or applies the operator to an "
            f"array; got {type(other).__name__} {other!r:.40}. Scale with `c * A` instead."
        )

    def __rmatmul__(self, other):
        raise TypeError(
            f"`x @ {self.name}` is not defined: apply an operator as `A(x)` or `A @ x`; got "
            f"a left operand of type {type(other).__name__}."
        )

    def __add__(self, other: "NamedLinop") -> "NamedLinop":
        _check_addend(self, other, "+")
        return algebra().add(self, other)

    def __radd__(self, other):
        if isinstance(other, (int, float)) and other == 0:  # lets `sum(linops)` work
            return self
        _check_addend(self, other, "+")

    def __sub__(self, other: "NamedLinop") -> "NamedLinop":
        _check_addend(self, other, "-")
        return self + (-other)

    def __rsub__(self, other: "NamedLinop") -> "NamedLinop":
        """`other - self` (`B.__rsub__(A)` is `A - B`)."""
        _check_addend(self, other, "-")
        return other + (-self)

    def __neg__(self) -> "NamedLinop":
        return -1 * self

    def __mul__(self, c: ArrayLike) -> "NamedLinop":
        """`A * c`: scale the input, $A (c x)$."""
        return _scaled(self, c, side="input")

    def __rmul__(self, c: ArrayLike) -> "NamedLinop":
        """`c * A`: scale the output, $c (A x)$."""
        return _scaled(self, c, side="output")

    def __truediv__(self, c: ArrayLike) -> "NamedLinop":
        return _scaled(self, 1 / c, side="output")


class SameDims(NamedLinop):
    """An operator whose input and output dims are both its `ioshape` (a diagonal, a device
    move; `Scalar` spells the two properties out, as the docs' example of an operator)."""

    ioshape: AbstractVar[Dims]

    @property
    def ishape(self) -> Dims:
        return self.ioshape

    @property
    def oshape(self) -> Dims:
        return self.ioshape


class Labelled(NamedLinop):
    """An operator with an optional display name (torchlinops' `name=`): the `label`
    replaces the class name in its repr and error messages."""

    label: str | None = eqx.field(default=None, static=True, kw_only=True)

    @property
    def name(self) -> str:
        return self.label or type(self).__name__


def with_label(op: Labelled, label: str) -> Labelled:
    """A copy of `op` displayed as `label` (a static field: `eqx.tree_at` cannot set it)."""
    labelled = copy.copy(op)
    object.__setattr__(labelled, "label", label)
    return labelled


def check_label(owner: str, name) -> str | None:
    """A `name=` argument: None or a string."""
    if name is not None and not isinstance(name, str):
        raise TypeError(f"`{owner}(name=...)` expects a string or None; got {name!r:.40}.")
    return name


def adjoint_label(label: str | None) -> str | None:
    """The label of an adjoint: `"A"` -> `"A.H"`, `"A.H"` -> `"A"` (as torchlinops)."""
    if label is None:
        return None
    return label.removesuffix(".H") if label.endswith(".H") else label + ".H"


class Algebra(Protocol):
    """What the base class builds; implemented by `jaxlinops._core._algebra`."""

    def compose(self, outer: NamedLinop, inner: NamedLinop) -> NamedLinop:
        """`outer @ inner`: a flat `Chain`, adjoint pairs folded into normals."""
        ...

    def add(self, a: NamedLinop, b: NamedLinop) -> NamedLinop:
        """`a + b`: a flat `Add`."""
        ...

    def scale(self, op: NamedLinop, c, side: str) -> NamedLinop:
        """`c * op` (`side="output"`) or `op * c` (`side="input"`), with a `Scalar`."""
        ...

    def adjoint(self, op: NamedLinop) -> NamedLinop:
        """The generic adjoint, `Adjoint(op)`."""
        ...

    def normal(self, op: NamedLinop, inner: NamedLinop | None) -> NamedLinop:
        """$A^H \\, \\mathrm{inner} \\, A$ by the folding rules."""
        ...

    def split(self, op: NamedLinop, tile: Mapping[str, slice]) -> NamedLinop:
        """`NamedLinop.split(op, tile)`: a user's tile checked, a `Tile` dispatched to the
        operator's own `split` or sliced as its `tiling()` declares."""
        ...

    function_base: type
    """The base of classes written to torchlinops' protocol (see `_LinopMeta`)."""

    base_stand_in: type
    """What `NamedLinop(shape)` builds: torchlinops' base class as an operator."""

    tile_type: type
    """The checked tile that `split` implementations receive (`Tile`)."""


def use_algebra(impl: Algebra) -> None:
    """Install the algebra (done once, by `jaxlinops._core`)."""
    _ALGEBRA[:] = [impl]


def algebra() -> Algebra:
    """The installed algebra."""
    return _ALGEBRA[0]


def check_input(op: NamedLinop, shape: Dims, x: jax.Array, broadcast: bool = False) -> None:
    """Raise a ValueError naming `op` when `x` does not fit `shape` or a known size. With
    `broadcast`, a dim of size 1 in the operator accepts any size (torchlinops' rule)."""
    check_rank(op.name, shape, x)
    for d, n in dim_sizes(shape, x.shape).items():
        expected = op.size(d)
        if expected is not None and expected != n and not (broadcast and expected == 1):
            raise ValueError(
                f"`{op.name}` expected dim {d} with size {expected} in its input "
                f"{fmt(shape)}; got an array of shape {tuple(x.shape)}."
            )


def _check_addend(op: NamedLinop, other, sign: str) -> None:
    if not isinstance(other, NamedLinop):
        raise TypeError(
            f"`{op.name} {sign} B` needs a NamedLinop B; got {type(other).__name__} "
            f"{other!r:.40}. Add a multiple of the identity as `c * jaxlinops.Identity()`."
        )


def _scaled(op: NamedLinop, c, side: str) -> NamedLinop:
    expr = f"`{op.name} * c`" if side == "input" else f"`c * {op.name}`"
    if isinstance(c, NamedLinop):
        raise TypeError(f"{expr}: compose operators with `@`, not `*`; got {c.name}.")
    not_a_number = TypeError(f"{expr} needs a number c; got {type(c).__name__} {c!r:.40}.")
    if isinstance(c, (jax.Array, np.ndarray, np.generic)):
        if np.dtype(c.dtype).kind not in "iufc":
            raise not_a_number
        if c.ndim != 0:
            raise TypeError(
                f"{expr} needs a scalar c; got an array of shape {c.shape}. Use "
                f"`jaxlinops.Diagonal(weight, dims)` for elementwise weights."
            )
    elif not isinstance(c, numbers.Number) or isinstance(c, bool):
        raise not_a_number
    return algebra().scale(op, c, side)


# --------------------------------------------------------------------- dims rewriting
def map_dims(op: NamedLinop, f: Callable[[Dims], Dims], validate: bool = True) -> NamedLinop:
    """A copy of `op` (and its sub-operators) with every dims field passed through `f`.

    Array leaves are shared, not copied. The copy is validated again by each class's
    `__check_init__`, as if it had been constructed with the new dims, except inside a
    field marked `stacked_field()`, whose operators hold one array per tile stacked along
    a leading axis.
    """
    new = object.__new__(type(op))
    for field in dataclasses.fields(op):
        value = getattr(op, field.name)
        kind = field.metadata.get("dims")
        inner = validate and not field.metadata.get("stacked", False)
        if kind == "shape":
            value = f(value)
        elif kind == "pairs":
            value = tuple((f((d,))[0], v) for d, v in value)
        elif isinstance(value, NamedLinop):
            value = map_dims(value, f, inner)
        elif isinstance(value, tuple) and any(isinstance(v, NamedLinop) for v in value):
            value = tuple(map_dims(v, f, inner) if isinstance(v, NamedLinop) else v for v in value)
        object.__setattr__(new, field.name, value)
    if validate:
        for cls in type(new).__mro__:
            if "__check_init__" in cls.__dict__:
                cls.__dict__["__check_init__"](new)
    return new


def rename(op: NamedLinop, mapping: Mapping[str, str | Dims]) -> NamedLinop:
    """Rename dims throughout `op`: `rename(A, {"N": "N1"})`.

    A value may also be a tuple of dims, which replaces a `"..."` wildcard. Two distinct
    dims may not be renamed to one name (that would silently turn, say, a matrix product
    over `N` into a diagonal scaling); swaps such as `{"M": "N", "N": "M"}` are fine. The
    renamed operator is validated like a newly constructed one.
    """
    if not isinstance(op, NamedLinop):
        raise TypeError(f"`rename(op, mapping)` expects a NamedLinop; got {type(op).__name__}.")
    if not isinstance(mapping, Mapping):
        raise TypeError(
            f"`rename(op, mapping)` expects a mapping {{old: new}}; got {type(mapping).__name__}."
        )
    merged: dict[str, str] = {}
    for d in sorted(all_dims(op)):
        new = mapping.get(d, d)
        if isinstance(new, str) and merged.setdefault(new, d) != d:
            raise ValueError(
                f"`rename({op.name}, ...)` would merge its distinct dims {merged[new]!r} and "
                f"{d!r} into {new!r}; rename one of them to an unused name."
            )
    return relabel(op, mapping)


def relabel(op: NamedLinop, mapping: Mapping[str, str | Dims]) -> NamedLinop:
    """`rename` without the check against merging dims, for the library's own renamings
    (wildcard resolution, the normal's fresh names), which never merge two dims."""
    return map_dims(op, lambda shape: substitute(shape, mapping))


def own_split(op: NamedLinop) -> bool:
    """Whether `op`'s class defines its own `split` (else a tile slices what `tiling()`
    declares)."""
    return type(op).split is not NamedLinop.split


def all_dims(op: NamedLinop) -> set[str]:
    """Every dim named anywhere in `op`, including internal dims of sub-operators."""
    found: set[str] = set(op.ishape) | set(op.oshape)

    def collect(shape: Dims) -> Dims:
        found.update(shape)
        return shape

    map_dims(op, collect, validate=False)
    return found
