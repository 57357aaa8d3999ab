"""`Diagonal`: elementwise multiplication by a weight array."""

from __future__ import annotations

from collections.abc import Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .._arrays import as_array, as_inexact, promote, promote_inexact, right_align
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, is_wildcard, unique
from ._coupling import Tiling
from ._linop import NamedLinop, SameDims, dims_field


class Diagonal(SameDims):
    r"""$y = w \odot x$, mapping `ioshape -> ioshape`.

    **Alignment.** The weight's axes right-align with the *named* dims of `ioshape` (the
    dims other than `"..."`) and broadcast like numpy: a weight of shape `(Nx, Ny)` on
    `ioshape="C Nx Ny"` scales every coil alike, and a size-1 weight axis broadcasts over
    its dim. The weight never spans the axes that a non-leading `"..."` stands for: with
    `ioshape="C ..."` a weight of shape `(3,)` scales `C` (the first axis of the input),
    and with `"C ... N"` a weight of shape `(C, N)` is applied as `(C, 1, ..., 1, N)`.
    Only a leading `"..."` lets extra leading weight axes reach into the batch axes, as
    numpy broadcasting does: `Diagonal(w)` multiplies any input that `w` broadcasts to.
    Every weight axis must equal the input's axis or be 1 (the output has the input's
    shape), else a ValueError names both shapes.

    **Dtypes.** The product is computed in the common dtype of weight and input: an
    integer weight on floating-point data is fine (e.g. overlap counts), but an integer
    or bool weight on integer or bool data raises a TypeError, as the product would
    overflow silently. The normal and `D ** p` of an integer weight are computed in
    floating point (at least float32).

    Adjoint: $\bar w$; normal: $|w|^2$; `D ** p` raises the weight to the power `p`.
    """

    weight: jax.Array
    ioshape: Dims = dims_field()
    broadcast_dims: Dims = dims_field()

    def __init__(self, weight, ioshape: DimsLike = None, broadcast_dims: DimsLike = None):
        """**Arguments:**

        - `weight`: the diagonal $w$; its axes right-align with the named dims of
          `ioshape` (see above).
        - `ioshape`: dims of input and output (default `"..."`: any array).
        - `broadcast_dims`: dims over which `weight` has a size-1 axis that broadcasts.
          Wildcard dims (`"()"`) always broadcast.
        """
        self.weight = as_array(weight, "`Diagonal(weight=...)`")
        self.ioshape = as_dims(ioshape, "...")
        extra = tuple(d for d in self.ioshape if is_wildcard(d) and d != ELLIPSIS)
        self.broadcast_dims = unique(as_dims(broadcast_dims) + extra + self._size_one())

    @classmethod
    def from_weight(
        cls,
        weight,
        weight_shape: DimsLike,
        ioshape: DimsLike,
        shape_kwargs: Mapping[str, int] | None = None,
    ) -> Diagonal:
        """A `Diagonal` on `ioshape` whose weight is `weight` (axes named `weight_shape`)
        transposed and repeated to `ioshape`, as `einops.repeat(weight, "weight_shape ->
        ioshape", **shape_kwargs)`: each dim of `weight_shape` must be in `ioshape`, and
        `shape_kwargs` gives the size of each new dim (a `"..."` in `weight_shape` carries
        the weight's extra leading axes to the `"..."` of `ioshape`).
        `Diagonal.from_weight(w, "Nx", "C Nx", {"C": 3})` repeats `w` over 3 coils.
        """
        name = "`Diagonal.from_weight"
        w = as_array(weight, f"{name}(weight=...)`")
        src, dst = as_dims(weight_shape), as_dims(ioshape)
        sizes = dict(shape_kwargs or {})
        n_batch = w.ndim - len(src) + (ELLIPSIS in src)
        if n_batch < 0 or (n_batch and ELLIPSIS not in src):
            raise ValueError(
                f"{name}`: weight has {w.ndim} axes but weight_shape={fmt(src)} names {len(src)}."
            )
        if any(d not in dst for d in src):
            raise ValueError(
                f"{name}`: weight dimensions must be named in ioshape: every dim of "
                f"weight_shape={fmt(src)} must be in ioshape={fmt(dst)}."
            )
        axes: dict[str, list[int]] = {}
        for d in src:
            start = sum(map(len, axes.values()))
            axes[d] = list(range(start, start + (n_batch if d == ELLIPSIS else 1)))
        for d, n in sizes.items():
            if d in axes and d != ELLIPSIS and w.shape[axes[d][0]] != n:
                raise ValueError(
                    f"{name}(shape_kwargs=...)`: {d}={n}, but the weight's axis {d} has "
                    f"length {w.shape[axes[d][0]]}."
                )
        missing = [d for d in dst if d not in axes and d != ELLIPSIS and d not in sizes]
        if missing:
            raise ValueError(
                f"{name}(shape_kwargs=...)`: the size of each new dim is needed; got none "
                f"for {missing}."
            )
        w = jnp.transpose(w, [a for d in dst if d in axes for a in axes[d]])
        kept = iter(w.shape)
        flat: list[int] = []  # the transposed weight with a size-1 axis per new dim
        full: list[int] = []  # ... repeated to the new dims' sizes
        for d in dst:
            if d in axes:
                lengths = [next(kept) for _ in axes[d]]
                flat += lengths
                full += lengths
            elif d != ELLIPSIS:
                flat.append(1)
                full.append(sizes[d])
        return cls(jnp.broadcast_to(w.reshape(flat), full), dst)

    def _size_one(self) -> Dims:
        """The named dims with a size-1 weight axis: they broadcast. Recorded at
        construction, so that a tile of length 1 (a split keeps `broadcast_dims`) still
        reports its size."""
        axes = {d: self._weight_axis(d) for d in self._named()}
        return tuple(d for d, a in axes.items() if a is not None and self.weight.shape[a] == 1)

    def __check_init__(self):
        named = self._named()
        if self.ioshape[:1] != (ELLIPSIS,) and self.weight.ndim > len(named):
            raise ValueError(
                f"`Diagonal(weight=...)` has {self.weight.ndim} axes (shape "
                f"{tuple(self.weight.shape)}) but `ioshape={fmt(self.ioshape)}` names only "
                f"{len(named)} dims (only a leading '...' lets the weight reach into the "
                f"batch axes)."
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

    def _named(self) -> Dims:
        return tuple(d for d in self.ioshape if d != ELLIPSIS)

    def _weight_axis(self, dim: str) -> int | None:
        """The weight axis aligned with `dim`, or None if the weight does not reach it."""
        named = self._named()
        axis = self.weight.ndim - len(named) + named.index(dim)
        return axis if axis >= 0 else None

    def size(self, dim: str) -> int | None:
        if dim not in self.ioshape or dim in self.broadcast_dims or dim == ELLIPSIS:
            return None
        axis = self._weight_axis(dim)
        return None if axis is None else self.weight.shape[axis]

    def tiling(self) -> Tiling:
        axes: list[str | None] = [None] * self.weight.ndim
        for d in self.ioshape:
            axis = None if d == ELLIPSIS else self._weight_axis(d)
            if axis is not None:
                axes[axis] = d
        return Tiling([(lambda o: o.weight, axes)], self.ioshape)

    def _aligned(self, w: jax.Array, x: jax.Array) -> jax.Array:
        """`w` reshaped to `x.ndim` axes by the alignment rule, checked against `x`."""
        where = f"`Diagonal({fmt(self.ioshape)})`"
        named = len(self._named())
        if w.ndim > x.ndim or x.ndim < named:
            raise ValueError(
                f"{where}: the input of shape {tuple(x.shape)} has fewer axes than the weight "
                f"of shape {tuple(w.shape)} or the {named} named dims."
            )
        if self.ioshape[:1] == (ELLIPSIS,) or ELLIPSIS not in self.ioshape:
            aligned = right_align(w, x.ndim)
        else:  # the axes of a non-leading '...' get singleton weight axes
            i = self.ioshape.index(ELLIPSIS)
            full = right_align(w, named).shape
            aligned = w.reshape(full[:i] + (1,) * (x.ndim - named) + full[i:])
        if any(n not in (1, m) for n, m in zip(aligned.shape, x.shape)):
            raise ValueError(
                f"{where}: the weight of shape {tuple(w.shape)} does not broadcast to the "
                f"input of shape {tuple(x.shape)} (aligned as {tuple(aligned.shape)}; each "
                f"weight axis must be 1 or the input's size)."
            )
        return aligned

    def _scale(self, w: jax.Array, x: jax.Array) -> jax.Array:
        w, x = promote_inexact("Diagonal", self._aligned(w, x), x)
        return w * x

    def apply(self, x: jax.Array) -> jax.Array:
        return self._scale(self.weight, x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._scale(jnp.conj(self.weight), y)

    def adjoint(self) -> NamedLinop:
        return Diagonal(jnp.conj(self.weight), self.ioshape, self.broadcast_dims)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """$|w|^2$, times `inner`'s weight when `inner` is a Diagonal on the same dims."""
        square = Diagonal(jnp.abs(as_inexact(self.weight)) ** 2, self.ioshape, self.broadcast_dims)
        if inner is None:
            return square
        if isinstance(inner, Diagonal) and inner.ioshape == self.ioshape:
            return merge_diagonals(square, inner)
        return None

    def __pow__(self, p) -> Diagonal:
        return Diagonal(as_inexact(self.weight) ** p, self.ioshape, self.broadcast_dims)


def merge_diagonals(a: Diagonal, b: Diagonal) -> Diagonal | None:
    """The product of two Diagonals on the same dims (their weights right-aligned, as
    they apply), or None when their weights do not broadcast together."""
    if a.ioshape != b.ioshape:
        return None
    ndim = max(a.weight.ndim, b.weight.ndim)
    wa, wb = (right_align(w, ndim) for w in (a.weight, b.weight))
    try:
        np.broadcast_shapes(wa.shape, wb.shape)
    except ValueError:
        return None
    wa, wb = promote(wa, wb)
    shared = tuple(d for d in a.broadcast_dims if d in b.broadcast_dims)
    return Diagonal(wa * wb, a.ioshape, shared)


def weighted(inner: NamedLinop | None, weight: jax.Array, dims: Dims) -> Diagonal | None:
    """`inner` times the pointwise `weight` (axes aligned to `dims`, size 1 where it is
    constant), as one `Diagonal` on `dims`: where `inner` is None (the identity) or a
    `Diagonal` on `dims`; None for any other `inner`."""
    if inner is not None:
        if not isinstance(inner, Diagonal):
            return None
        w = right_align(inner.weight, len(dims))
        weight = w * weight.astype(jnp.real(w).dtype)
    broadcast = tuple(d for d, n in zip(dims, weight.shape[-len(dims) :]) if n == 1)
    return Diagonal(weight, dims, broadcast)
