"""`Diagonal`: elementwise multiplication by a weight array."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from .._arrays import as_array, promote, right_align
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, is_wildcard, unique
from .._linop import NamedLinop, dims_field
from .._split import split_arrays


class Diagonal(NamedLinop):
    r"""$y = w \odot x$, mapping `ioshape -> ioshape`.

    The weight aligns with the **trailing** dims of `ioshape` and broadcasts like numpy:
    a weight of shape `(Nx, Ny)` on `ioshape="C Nx Ny"` scales every coil alike, and a
    size-1 weight axis broadcasts over its dim. Adjoint: $\bar w$; normal: $|w|^2$;
    `D ** p` raises the weight to the power `p`.
    """

    weight: jax.Array
    ioshape: Dims = dims_field()
    broadcast_dims: Dims = dims_field()

    def __init__(self, weight, ioshape: DimsLike = None, broadcast_dims: DimsLike = None):
        """**Arguments:**

        - `weight`: the diagonal $w$; its last axis matches the last dim of `ioshape`.
        - `ioshape`: dims of input and output (default `"..."`: any array).
        - `broadcast_dims`: dims over which `weight` has a size-1 axis that broadcasts.
          Wildcard dims (`"()"`) always broadcast.
        """
        self.weight = as_array(weight, "`Diagonal(weight=...)`")
        self.ioshape = as_dims(ioshape, "...")
        extra = tuple(d for d in self.ioshape if is_wildcard(d) and d != ELLIPSIS)
        self.broadcast_dims = unique(as_dims(broadcast_dims) + extra)

    def __check_init__(self):
        core = tuple(d for d in self.ioshape if d != ELLIPSIS)
        if ELLIPSIS not in self.ioshape and self.weight.ndim > len(core):
            raise ValueError(
                f"`Diagonal(weight=...)` has {self.weight.ndim} axes (shape "
                f"{tuple(self.weight.shape)}) but `ioshape={fmt(self.ioshape)}` names only "
                f"{len(core)} dims."
            )
        for d in self.broadcast_dims:
            if d not in self.ioshape:
                raise ValueError(
                    f"`Diagonal`: broadcast dim {d!r} is not in ioshape {fmt(self.ioshape)}."
                )
            axis = self._weight_axis(d)
            if axis is not None and self.weight.shape[axis] != 1:
                raise ValueError(
                    f"`Diagonal`: broadcast dim {d!r} needs a size-1 weight axis; got "
                    f"size {self.weight.shape[axis]} (weight shape "
                    f"{tuple(self.weight.shape)})."
                )

    @property
    def ishape(self) -> Dims:
        return self.ioshape

    @property
    def oshape(self) -> Dims:
        return self.ioshape

    def _weight_axis(self, dim: str) -> int | None:
        """The weight axis aligned with `dim`, or None if the weight does not reach it."""
        i = self.ioshape.index(dim)
        if ELLIPSIS in self.ioshape[i:]:
            return None
        from_end = len(self.ioshape) - 1 - i
        return self.weight.ndim - 1 - from_end if from_end < self.weight.ndim else None

    def size(self, dim: str) -> int | None:
        if dim not in self.ioshape or dim in self.broadcast_dims or dim == ELLIPSIS:
            return None
        axis = self._weight_axis(dim)
        if axis is None or self.weight.shape[axis] == 1:
            return None
        return self.weight.shape[axis]

    def split(self, tile) -> NamedLinop:
        axes = [None] * self.weight.ndim
        for d in self.ioshape:
            if d != ELLIPSIS and self._weight_axis(d) is not None:
                axes[self._weight_axis(d)] = d
        return split_arrays(self, tile, [(lambda o: o.weight, axes)], self.ioshape)

    def _scale(self, w: jax.Array, x: jax.Array) -> jax.Array:
        if w.ndim > x.ndim:
            raise ValueError(
                f"`Diagonal` has a weight of shape {tuple(w.shape)} but got an input of "
                f"shape {tuple(x.shape)} with fewer axes."
            )
        w, x = promote(right_align(w, x.ndim), x)
        return w * x

    def apply(self, x: jax.Array) -> jax.Array:
        return self._scale(self.weight, x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._scale(jnp.conj(self.weight), y)

    def adjoint(self) -> NamedLinop:
        return Diagonal(jnp.conj(self.weight), self.ioshape, self.broadcast_dims)

    def normal(self, inner: NamedLinop | None = None) -> NamedLinop:
        if inner is None:
            return Diagonal(jnp.abs(self.weight) ** 2, self.ioshape, self.broadcast_dims)
        return super().normal(inner)

    def __pow__(self, p) -> Diagonal:
        return Diagonal(self.weight**p, self.ioshape, self.broadcast_dims)
