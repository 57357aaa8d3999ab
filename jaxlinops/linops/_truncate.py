"""`Truncate` and `PadDim`: keep the start of one axis, or zero-pad it at the end."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_size
from .._core import NamedLinop, Tiling, dims_field, identity_normal
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt


class Truncate(NamedLinop):
    r"""$y = x[\dots, :\mathrm{to}]$ along tensor axis `dim` (of length `from_length`).

    Dims: `ishape -> oshape` (same length; the truncated dim is `ishape[dim]` in the
    input and `oshape[dim]` in the output). Adjoint: [`PadDim`][] (zero-padding at the
    end); normal: the default, which zeroes the tail.
    """

    dim: int = eqx.field(static=True)
    from_length: int = eqx.field(static=True)
    to_length: int = eqx.field(static=True)
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()

    def __init__(
        self, dim: int, from_length: int, to_length: int, ishape: DimsLike, oshape: DimsLike
    ):
        """**Arguments:**

        - `dim`: the tensor axis to truncate (negative counts from the end; it must
          count from the side of `ishape` that has no `"..."`).
        - `from_length`, `to_length`: its input and output lengths,
          `0 <= to_length <= from_length`.
        - `ishape`, `oshape`: input and output dims.
        """
        self.dim, self.from_length, self.to_length = _ints(self, dim, from_length, to_length)
        self.ishape, self.oshape = as_dims(ishape), as_dims(oshape)

    def __check_init__(self):
        _check(self, self.to_length, self.from_length, "0 <= to_length <= from_length")

    def size(self, dim: str) -> int | None:
        return _size(self, dim)

    def tiling(self) -> Tiling:
        resized = self.ishape[self.dim], self.oshape[self.dim]
        return Tiling(batch=[d for d in self.ishape if d not in resized])

    def apply(self, x: jax.Array) -> jax.Array:
        return jax.lax.slice_in_dim(x, 0, self.to_length, axis=self.dim % x.ndim)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return _end_pad(y, self.dim, self.from_length - self.to_length)

    def adjoint(self) -> NamedLinop:
        return PadDim(self.dim, self.to_length, self.from_length, self.oshape, self.ishape)


class PadDim(NamedLinop):
    r"""Zero-pad tensor axis `dim` at the end, from `from_length` to `to_length`.

    Dims: `ishape -> oshape` (same length; the padded dim is `ishape[dim]` in the input
    and `oshape[dim]` in the output). Adjoint: [`Truncate`][]; normal: the identity.
    """

    dim: int = eqx.field(static=True)
    from_length: int = eqx.field(static=True)
    to_length: int = eqx.field(static=True)
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()

    def __init__(
        self, dim: int, from_length: int, to_length: int, ishape: DimsLike, oshape: DimsLike
    ):
        """**Arguments:**

        - `dim`: the tensor axis to pad (negative counts from the end; it must count
          from the side of `ishape` that has no `"..."`).
        - `from_length`, `to_length`: its input and output lengths,
          `0 <= from_length <= to_length`.
        - `ishape`, `oshape`: input and output dims.
        """
        self.dim, self.from_length, self.to_length = _ints(self, dim, from_length, to_length)
        self.ishape, self.oshape = as_dims(ishape), as_dims(oshape)

    def __check_init__(self):
        _check(self, self.from_length, self.to_length, "0 <= from_length <= to_length")

    def size(self, dim: str) -> int | None:
        return _size(self, dim)

    def tiling(self) -> Tiling:
        resized = self.ishape[self.dim], self.oshape[self.dim]
        return Tiling(batch=[d for d in self.ishape if d not in resized])

    def apply(self, x: jax.Array) -> jax.Array:
        return _end_pad(x, self.dim, self.to_length - self.from_length)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return jax.lax.slice_in_dim(y, 0, self.from_length, axis=self.dim % y.ndim)

    def adjoint(self) -> NamedLinop:
        return Truncate(self.dim, self.to_length, self.from_length, self.oshape, self.ishape)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        return identity_normal(self) if inner is None else None


def _ints(
    op: NamedLinop, dim: object, from_length: object, to_length: object
) -> tuple[int, int, int]:
    """`dim` and the lengths as Python ints, refusing non-integral (`4.5`) or traced
    values (lengths are checked against each other in `_check`)."""

    def one(arg: str, value: object) -> int:
        return as_size(value, f"`{type(op).__name__}({arg}=...)`", None)

    return one("dim", dim), one("from_length", from_length), one("to_length", to_length)


def _end_pad(x: jax.Array, dim: int, n: int) -> jax.Array:
    widths = [(0, 0)] * x.ndim
    widths[dim % x.ndim] = (0, n)
    return jnp.pad(x, widths)


def _size(op, dim: str) -> int | None:
    if dim == op.ishape[op.dim]:
        return op.from_length
    if dim == op.oshape[op.dim]:
        return op.to_length
    return None


def _check(op, short: int, long: int, rule: str) -> None:
    """Validate lengths (`0 <= short <= long`), shapes and the axis `dim`."""
    where = f"`{op.name}(dim={op.dim}, {fmt(op.ishape)} -> {fmt(op.oshape)})`"
    if not 0 <= short <= long:
        raise ValueError(
            f"{where}: needs {rule}; got from_length={op.from_length}, to_length={op.to_length}."
        )
    ish, osh = op.ishape, op.oshape
    if len(ish) != len(osh) or (ELLIPSIS in ish and ish.index(ELLIPSIS) != osh.index(ELLIPSIS)):
        raise ValueError(f"{where}: ishape and oshape need the same length and '...' position.")
    if not -len(ish) <= op.dim < len(ish) or ish[op.dim] == ELLIPSIS:
        raise ValueError(f"{where}: `dim` must index a named dim of ishape.")
    if ELLIPSIS in ish and (op.dim >= 0) != (op.dim % len(ish) < ish.index(ELLIPSIS)):
        raise ValueError(
            f"{where}: `dim` must count from the side of ishape without '...' (a "
            f"non-negative dim before '...', a negative dim after it)."
        )
    if ish[op.dim] == osh[op.dim] and op.from_length != op.to_length:
        raise ValueError(
            f"{where}: dim {ish[op.dim]!r} would have size {op.from_length} in the input and "
            f"{op.to_length} in the output; name it differently in ishape and oshape."
        )
