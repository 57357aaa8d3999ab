"""`Truncate` and `PadDim`: keep the start of one axis, or zero-pad it at the end."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_size
from .._core import NamedLinop, Resize, Tiling, dims_field, identity_normal, split_arrays
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt


class AbstractEndResize(NamedLinop):
    """Shared logic of [`Truncate`][] and [`PadDim`][]: tensor axis `dim` changes length
    from `from_length` (input) to `to_length` (output); every other dim is a batch dim.

    The resized dim may keep its name (`ishape[dim] == oshape[dim]`, as torchlinops
    writes it) or be renamed. A kept name has a different size on each side, so `size`
    reports none for it and the lengths are checked when the operator is applied.
    """

    dim: eqx.AbstractVar[int]
    from_length: eqx.AbstractVar[int]
    to_length: eqx.AbstractVar[int]

    @property
    def _where(self) -> str:
        return f"`{self.name}(dim={self.dim}, {fmt(self.ishape)} -> {fmt(self.oshape)})`"

    def size(self, dim: str) -> int | None:
        if self.ishape[self.dim] == self.oshape[self.dim]:
            return None
        if dim == self.ishape[self.dim]:
            return self.from_length
        if dim == self.oshape[self.dim]:
            return self.to_length
        return None

    def tiling(self) -> Tiling:
        resized = self.ishape[self.dim], self.oshape[self.dim]
        return Tiling(batch=[d for d in self.ishape if d not in resized])

    def grid_form(self) -> Resize:
        """The one dim resized at its end (the window starts at entry 0)."""
        sizes = ((self.from_length, self.to_length),)
        return Resize(self.ishape, self.oshape, (self.dim,), sizes, (0,))

    def split(self, tile) -> NamedLinop:
        """A tile along the batch dims is the same operator; the resized dim is refused."""
        resized = dict.fromkeys((self.ishape[self.dim], self.oshape[self.dim]))
        sliced = [d for d in resized if d in tile]
        if sliced:
            raise ValueError(
                f"{self._where}: Cannot slice along {sliced[0]!r}, the dim it resizes from "
                f"{self.from_length} to {self.to_length}; tile only its other dims."
            )
        return split_arrays(self, tile, batch=self.tiling().batch)

    def _length(self, x: jax.Array, expected: int, side: str) -> int:
        """The axis of `x` along `dim`, after checking its length is `expected`."""
        axis = self.dim % x.ndim
        if x.shape[axis] != expected:
            raise ValueError(
                f"{self._where} expected its {side} to have length {expected} along dim "
                f"{self.ishape[self.dim] if side == 'input' else self.oshape[self.dim]!r} "
                f"(axis {self.dim}); got an array of shape {tuple(x.shape)}."
            )
        return axis

    def _keep(self, x: jax.Array, n: int, side: str, length: int) -> jax.Array:
        axis = self._length(x, n, side)
        return jax.lax.slice_in_dim(x, 0, length, axis=axis)

    def _pad(self, x: jax.Array, n: int, side: str, length: int) -> jax.Array:
        widths = [(0, 0)] * x.ndim
        widths[self._length(x, n, side)] = (0, length - n)
        return jnp.pad(x, widths)


class Truncate(AbstractEndResize):
    r"""$y = x[\dots, :\mathrm{to}]$ along tensor axis `dim` (of length `from_length`).

    Dims: `ishape -> oshape` (same length; the truncated dim is `ishape[dim]` in the
    input and `oshape[dim]` in the output, one name or two). Adjoint: [`PadDim`][]
    (zero-padding at the end); normal: the default, which zeroes the tail.
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

    def apply(self, x: jax.Array) -> jax.Array:
        return self._keep(x, self.from_length, "input", self.to_length)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._pad(y, self.to_length, "adjoint's input", self.from_length)

    def adjoint(self) -> NamedLinop:
        return PadDim(self.dim, self.to_length, self.from_length, self.oshape, self.ishape)


class PadDim(AbstractEndResize):
    r"""Zero-pad tensor axis `dim` at the end, from `from_length` to `to_length`.

    Dims: `ishape -> oshape` (same length; the padded dim is `ishape[dim]` in the input
    and `oshape[dim]` in the output, one name or two). Adjoint: [`Truncate`][]; normal:
    the identity.
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

    def apply(self, x: jax.Array) -> jax.Array:
        return self._pad(x, self.from_length, "input", self.to_length)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._keep(y, self.to_length, "adjoint's input", self.from_length)

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


def _check(op: AbstractEndResize, short: int, long: int, rule: str) -> None:
    """Validate lengths (`0 <= short <= long`), shapes and the axis `dim`."""
    if not 0 <= short <= long:
        raise ValueError(
            f"{op._where}: needs {rule}; got from_length={op.from_length}, "
            f"to_length={op.to_length}."
        )
    ish, osh = op.ishape, op.oshape
    if len(ish) != len(osh) or (ELLIPSIS in ish and ish.index(ELLIPSIS) != osh.index(ELLIPSIS)):
        raise ValueError(f"{op._where}: ishape and oshape need the same length and '...' position.")
    if not -len(ish) <= op.dim < len(ish) or ish[op.dim] == ELLIPSIS:
        raise ValueError(f"{op._where}: `dim` must index a named dim of ishape.")
    if ELLIPSIS in ish and (op.dim >= 0) != (op.dim % len(ish) < ish.index(ELLIPSIS)):
        raise ValueError(
            f"{op._where}: `dim` must count from the side of ishape without '...' (a "
            f"non-negative dim before '...', a negative dim after it)."
        )
