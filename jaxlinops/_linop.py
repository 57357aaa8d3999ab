"""The `NamedLinop` base class and the generic operations every operator inherits."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import numpy as np

from ._arrays import as_array, check_rank, dim_sizes
from ._dims import Dims, as_dims, fmt, next_unused, substitute, unique


def dims_field(kind: str = "shape", **kwargs):
    """A static field holding dims: a tuple of names (`kind="shape"`) or a tuple of
    `(dim, value)` pairs (`kind="pairs"`).

    Marking dims this way lets `rename` and wildcard resolution rewrite every operator,
    including user-defined ones, without per-class code.
    """
    return eqx.field(static=True, metadata={"dims": kind}, **kwargs)


class NamedLinop(eqx.Module):
    r"""Abstract base of all named-dimension linear operators.

    A linop $A$ maps arrays laid out by `ishape` to arrays laid out by `oshape`. Concrete
    subclasses provide `ishape` and `oshape` (static `dims_field()`s or properties,
    tuples of dim names), `apply(x)` $= A x$ and
    `apply_adjoint(y)` $= A^H y$. They may override `adjoint`, `normal`, `split` and
    `size` to return cheaper or specialised operators.

    Every linop has `A(x)`, `A.H`, `A.N`, `A @ B`, `A + B`, `A - B`, `c * A`, `-A`,
    `A.size(dim)` and `A.dims`.
    """

    __array_ufunc__ = None  # numpy defers `array * A` and `array @ A` to us

    @abc.abstractmethod
    def apply(self, x: jax.Array) -> jax.Array:
        """$A x$ for `x` laid out by `ishape` (no input checks)."""

    @abc.abstractmethod
    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        """$A^H y$ for `y` laid out by `oshape` (no input checks)."""

    # ----------------------------------------------------------------- application
    def __call__(self, x) -> jax.Array:
        """Apply the operator after checking `x` against `ishape` and known sizes."""
        x = as_array(x, f"`{self.name}(x)`")
        check_input(self, self.ishape, x)
        return self.apply(x)

    # ----------------------------------------------------------------- derived operators
    @property
    def H(self) -> NamedLinop:
        """The adjoint (conjugate transpose) $A^H$."""
        return self.adjoint()

    @property
    def N(self) -> NamedLinop:
        """The normal operator $A^H A$; unshared input dims are renamed in its output."""
        return self.normal()

    def adjoint(self) -> NamedLinop:
        """$A^H$. The default wraps `self`; `A.H.H` gives back `A`."""
        from .linops._adjoint import Adjoint

        return Adjoint(self)

    def normal(self, inner: NamedLinop | None = None) -> NamedLinop:
        """$A^H \\, \\mathrm{inner} \\, A$ (or $A^H A$ without `inner`).

        `inner` maps `oshape` to `oshape` with some dims renamed; Chain folds normals
        through this argument from the outside in so operators can specialise (Toeplitz).
        """
        return default_normal(self, inner)

    def size(self, dim: str) -> int | None:
        """The size of `dim` if this operator fixes it, else None."""
        return None

    def split(self, tile: Mapping[str, slice]) -> NamedLinop:
        """The tile $Q_t A P_t^T$ for `tile = {dim: slice}` (use `jaxlinops.split`, which
        checks the tile). Tiled dims this operator does not have are ignored. The default
        splits along none of its own dims; operators override it to slice their arrays."""
        from ._split import split_arrays

        return split_arrays(self, tile)

    def flatten(self) -> tuple[NamedLinop, ...]:
        """The operators this one contributes to a Chain (Chain returns its children)."""
        return (self,)

    # ----------------------------------------------------------------- shape helpers
    @property
    def name(self) -> str:
        return type(self).__name__

    @property
    def dims(self) -> Dims:
        """Dims of `ishape` and `oshape`, in order, without repeats."""
        return unique(self.ishape + self.oshape)

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        """Sub-operators shown in the repr tree (containers override this)."""
        return ()

    def __repr__(self) -> str:
        head = f"{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)})"
        lines = [head] + ["  " + line for c in self.children for line in repr(c).splitlines()]
        return "\n".join(lines)

    # ----------------------------------------------------------------- algebra
    def __matmul__(self, other):
        if isinstance(other, NamedLinop):
            from .linops._chain import Chain

            return Chain(*other.flatten(), *self.flatten())
        if isinstance(other, (jax.Array, np.ndarray)):
            return self(other)
        return NotImplemented

    def __rmatmul__(self, other):
        raise TypeError(
            f"`x @ {self.name}` is not defined: apply an operator as `A(x)` or `A @ x`; got "
            f"a left operand of type {type(other).__name__}."
        )

    def __add__(self, other):
        if not isinstance(other, NamedLinop):
            return NotImplemented
        from .linops._add import Add

        return Add(*_addends(self), *_addends(other))

    def __radd__(self, other):
        if isinstance(other, (int, float)) and other == 0:  # lets `sum(linops)` work
            return self
        return NotImplemented

    def __sub__(self, other):
        if not isinstance(other, NamedLinop):
            return NotImplemented
        return self + (-other)

    def __neg__(self):
        return -1 * self

    def __mul__(self, c):
        """`A * c`: scale the input, $A (c x)$."""
        return _scaled(self, c, side="input")

    def __rmul__(self, c):
        """`c * A`: scale the output, $c (A x)$."""
        return _scaled(self, c, side="output")

    def __truediv__(self, c):
        return _scaled(self, 1 / c, side="output")


def check_input(op: NamedLinop, shape: Dims, x: jax.Array) -> None:
    """Raise a ValueError naming `op` when `x` does not fit `shape` or a known size."""
    check_rank(op.name, shape, x)
    for d, n in dim_sizes(shape, x.shape).items():
        expected = op.size(d)
        if expected is not None and expected != n:
            raise ValueError(
                f"`{op.name}` expected dim {d!r} of size {expected} in its input "
                f"{fmt(shape)}; got an array of shape {tuple(x.shape)}."
            )


def _addends(op: NamedLinop) -> tuple[NamedLinop, ...]:
    from .linops._add import Add

    return op.linops if isinstance(op, Add) else (op,)


def _scaled(op: NamedLinop, c, side: str) -> NamedLinop:
    from .linops._scalar import Scalar

    if isinstance(c, NamedLinop) or np.ndim(c) != 0:
        return NotImplemented
    if side == "input":
        return op @ Scalar(c, op.ishape)
    return Scalar(c, op.oshape) @ op


# --------------------------------------------------------------------- dims rewriting
def map_dims(op: NamedLinop, f: Callable[[Dims], Dims]) -> NamedLinop:
    """A copy of `op` (and its sub-operators) with every dims field passed through `f`.

    Array leaves are shared, not copied.
    """
    new = object.__new__(type(op))
    for field in dataclasses.fields(op):
        value = getattr(op, field.name)
        kind = field.metadata.get("dims")
        if kind == "shape":
            value = f(value)
        elif kind == "pairs":
            value = tuple((f((d,))[0], v) for d, v in value)
        elif isinstance(value, NamedLinop):
            value = map_dims(value, f)
        elif isinstance(value, tuple) and any(isinstance(v, NamedLinop) for v in value):
            value = tuple(map_dims(v, f) if isinstance(v, NamedLinop) else v for v in value)
        object.__setattr__(new, field.name, value)
    return new


def rename(op: NamedLinop, mapping: Mapping[str, object]) -> NamedLinop:
    """Rename dims throughout `op`: `rename(A, {"N": "N1"})`.

    A value may also be a tuple of dims, which replaces a `"..."` wildcard.
    """
    return map_dims(op, lambda shape: substitute(shape, mapping))


def all_dims(op: NamedLinop) -> set[str]:
    """Every dim named anywhere in `op`, including internal dims of sub-operators."""
    found: set[str] = set(op.ishape) | set(op.oshape)

    def collect(shape: Dims) -> Dims:
        found.update(shape)
        return shape

    map_dims(op, collect)
    return found


def normal_renaming(op: NamedLinop, inner_oshape: Dims | None = None) -> dict[str, str]:
    """The renaming from `op.H`'s dims to the dims of the normal's adjoint half.

    `op.oshape` maps position-wise onto `inner_oshape` (the inner operator's output);
    an input dim shared with `oshape` follows its output name, an unshared one gets the
    next unused name (`N -> N1`).
    """
    target = op.oshape if inner_oshape is None else as_dims(inner_oshape)
    if len(target) != len(op.oshape):
        raise ValueError(
            f"`{op.name}.normal(inner)` needs `inner.oshape` to align with "
            f"{fmt(op.oshape)}; got {fmt(target)}."
        )
    mapping: dict[str, str] = dict(zip(op.oshape, target))
    avoid = all_dims(op) | set(target)
    for d in op.ishape:
        if d not in mapping:
            mapping[d] = next_unused(d, avoid)
            avoid.add(mapping[d])
    return mapping


def normal_oshape(op: NamedLinop, inner_oshape: Dims | None = None) -> Dims:
    """The output dims of `op`'s normal: `ishape` renamed by `normal_renaming`."""
    return substitute(op.ishape, normal_renaming(op, inner_oshape))


def with_oshape(op: NamedLinop, oshape: Dims) -> NamedLinop:
    """`op` followed by an identity renaming its output dims to `oshape` (if needed)."""
    from .linops._chain import Chain
    from .linops._identity import Identity

    if op.oshape == oshape:
        return op
    if isinstance(op, Identity):
        return Identity(op.ishape, oshape)
    return Chain(*op.flatten(), Identity(op.oshape, oshape))


def identity_normal(op: NamedLinop) -> NamedLinop:
    """$A^H A = I$, with the normal's dims: for operators with orthonormal columns."""
    from .linops._identity import Identity

    return Identity(op.ishape, normal_oshape(op))


def default_normal(op: NamedLinop, inner: NamedLinop | None = None) -> NamedLinop:
    """`Chain(op, inner, renamed op.H)`: $A^H \\, \\mathrm{inner} \\, A$."""
    from .linops._chain import Chain

    post = rename(op.adjoint(), normal_renaming(op, None if inner is None else inner.oshape))
    parts = (op,) if inner is None else (op, *inner.flatten())
    return Chain(*parts, *post.flatten())


def fold_normal(op: NamedLinop, inner: NamedLinop | None) -> NamedLinop:
    """`op.normal(inner)`, except that an `inner` that only renames dims (an `Identity`)
    is absorbed: $A^H I A = A^H A$, so `op`'s own (specialised) normal is used and its
    output dims are renamed to what `inner` implies."""
    from .linops._identity import Identity

    if inner is not None and not isinstance(inner, Identity):
        return op.normal(inner)
    oshape = normal_oshape(op, None if inner is None else inner.oshape)
    return with_oshape(op.normal(), oshape)
