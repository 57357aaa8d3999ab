"""`Rearrange`, `SumReduce` and `Repeat`: einops-style reshaping, summing and broadcasting."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp

from .._arrays import as_size, batch_shape_of, dim_sizes
from .._core import (
    Coupling,
    NamedLinop,
    Scalar,
    Tile,
    Tiling,
    dims_field,
    identity_normal,
    mask_padded,
    normal_oshape,
    split_arrays,
    tile_length,
)
from .._dims import ELLIPSIS, Dims, DimsLike, ShapeAssertionError, as_dims, axis_of, fmt
from .._pattern import check_patterns, dim_groups, group_size, parse_pattern, rearrange

Lengths = tuple[tuple[str, int], ...]


def _lengths(name: str, lengths: Mapping[str, int] | None, order: Dims) -> Lengths:
    """`{dim: n}` as a tuple of pairs sorted by position in `order` (then by name)."""
    if lengths is not None and not isinstance(lengths, Mapping):
        raise TypeError(f"`{name}` expects lengths as a mapping; got {type(lengths).__name__}.")
    pairs = tuple((d, as_size(n, f"`{name}`", None)) for d, n in (lengths or {}).items())
    bad = {d: n for d, n in pairs if n < 1}
    if bad:
        raise ValueError(f"`{name}`: lengths must be positive integers; got {bad}.")
    rank = {d: i for i, d in enumerate(order)}
    return tuple(sorted(pairs, key=lambda p: (rank.get(p[0], len(order)), p[0])))


class Rearrange(NamedLinop):
    r"""$y = \mathrm{rearrange}(x, \texttt{ipattern} \to \texttt{opattern})$, a permutation.

    Dims: `ishape -> oshape`, one dim per axis of the patterns. Patterns follow einops:
    `Rearrange("a b c", "a (b c)", "A B C", "A BC")` merges two axes,
    `Rearrange("(a b) c", "a b c", "AB C", "A B C", {"a": 2})` splits one (every merged
    group that has to be split needs the lengths of all but one of its axes), and
    `Rearrange("a b", "b a", "A B", "B A")` transposes. The adjoint is the reverse
    rearrangement; the normal is the identity.
    """

    ipattern: str = eqx.field(static=True)
    opattern: str = eqx.field(static=True)
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    axes_lengths: Lengths = eqx.field(static=True)

    def __init__(
        self,
        ipattern: str,
        opattern: str,
        ishape: DimsLike,
        oshape: DimsLike,
        axes_lengths: Mapping[str, int] | None = None,
    ):
        """**Arguments:**

        - `ipattern`, `opattern`: einops patterns of the input and output axes, e.g.
          `"a b c"` and `"a (b c)"` (space-separated names, parenthesised groups,
          `"()"` for a size-1 axis, `"..."` for the batch axes of `"..."` in the shapes).
        - `ishape`, `oshape`: the dims, one per axis of the corresponding pattern.
        - `axes_lengths`: lengths of pattern axes, e.g. `{"b": 4}`, needed to split a
          group in either direction.
        """
        self.ipattern = ipattern
        self.opattern = opattern
        self.ishape = as_dims(ishape)
        self.oshape = as_dims(oshape)
        self.axes_lengths = _lengths("Rearrange(axes_lengths=...)", axes_lengths, ())

    def __check_init__(self):
        check_patterns(self.ipattern, self.opattern, self.ishape, self.oshape, self.axes_lengths)

    def size(self, dim: str) -> int | None:
        for pattern, shape in ((self.ipattern, self.ishape), (self.opattern, self.oshape)):
            aligned = dim_groups(parse_pattern(pattern, "`Rearrange`"), shape)
            assert aligned is not None, "the patterns align with the dims (`__check_init__`)"
            groups = aligned[1]
            if dim in groups:
                return group_size(groups[dim], self.axes_lengths)
        return None

    def _rearrange(self, x: jax.Array, src: str, dst: str, name: str) -> jax.Array:
        lengths = dict(self.axes_lengths)
        return rearrange(x, parse_pattern(src, name), parse_pattern(dst, name), lengths, name)

    def tiling(self) -> Tiling:
        return Tiling(batch=[d for d in self.ishape if d in self.oshape and self.size(d) is None])

    def split(self, tile) -> NamedLinop:
        """A tile along the dims it keeps (`tiling`) is the same operator. A dim it merges
        or splits cannot be tiled: torchlinops' `slice(None)` (the whole dim) leaves the
        operator unchanged, with a warning (as torchlinops warns on splitting a
        rearrange); any bounded slice is refused."""
        batch = self.tiling().batch
        whole = [d for d in tile if d in self.dims and d not in batch and _covers(tile, d)]
        if whole:
            warnings.warn(
                f"`Rearrange` ({fmt(self.ishape)} -> {fmt(self.oshape)}): splitting along "
                f"{whole}, dims it merges or splits; `slice(None)` (the whole dim) leaves the "
                f"operator unchanged, a bounded slice is refused.",
                UserWarning,
                stacklevel=2,
            )
        rest = tile.with_slices({d: s for d, s in tile.items() if d not in whole})
        return split_arrays(self, rest, batch=batch)

    def apply(self, x: jax.Array) -> jax.Array:
        return self._rearrange(x, self.ipattern, self.opattern, "Rearrange")

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._rearrange(y, self.opattern, self.ipattern, "Rearrange.H")

    def adjoint(self) -> NamedLinop:
        lengths = dict(self.axes_lengths)
        return Rearrange(self.opattern, self.ipattern, self.oshape, self.ishape, lengths)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """Without `inner`: the identity (dims not in `oshape` renamed, `N -> N1`)."""
        return identity_normal(self) if inner is None else None


def _check_nested(name: str, big: Dims, small: Dims, verb: str) -> None:
    """`small` must be `big` less at least one dim, in the same order (`verb` for errors)."""
    rest = iter(big)
    ordered = all(d in rest for d in small)
    ellipsis_ok = (ELLIPSIS in big) == (ELLIPSIS in small)
    if not (ordered and ellipsis_ok and len(small) < len(big) and len(set(big)) == len(big)):
        raise ShapeAssertionError(
            f"`{name}`: `oshape` must be `ishape` with at least one dim {verb} (same order, "
            f"no repeated dims, '...' in both or neither); got ishape "
            f"{fmt(big if verb == 'removed' else small)} and oshape "
            f"{fmt(small if verb == 'removed' else big)}."
        )


def _extra(big: Dims, small: Dims) -> Dims:
    return tuple(d for d in big if d not in small)


def _sum(x: jax.Array, big: Dims, small: Dims) -> jax.Array:
    return jnp.sum(x, axis=tuple(axis_of(big, d) for d in _extra(big, small)))


def _broadcast(y: jax.Array, small: Dims, big: Dims, lengths: Mapping[str, int]) -> jax.Array:
    """Insert the dims of `big` missing from `small` (sizes `lengths`) by broadcasting."""
    sizes = dim_sizes(small, y.shape)
    batch = batch_shape_of(small, y.shape)
    kept: list[int] = []
    full: list[int] = []
    for d in big:
        if d == ELLIPSIS:
            kept.extend(batch)
            full.extend(batch)
        else:
            kept.append(sizes.get(d, 1))
            full.append(sizes[d] if d in small else lengths[d])
    return jnp.broadcast_to(y.reshape(tuple(kept)), tuple(full))


def _check_lengths(name: str, lengths: Lengths, allowed: Dims) -> None:
    stray = [d for d, _ in lengths if d not in allowed]
    if stray:
        raise ValueError(
            f"`{name}`: lengths are given for dims {stray}, which are not among the "
            f"{'summed' if name == 'SumReduce' else 'new'} dims {fmt(allowed)}."
        )


class SumReduce(NamedLinop):
    r"""$y = \sum_{d \notin \mathrm{oshape}} x$: sum over the dims of `ishape` not in `oshape`.

    Dims: `ishape -> oshape`, where `oshape` is `ishape` with the summed dims removed.
    The adjoint [`jaxlinops.Repeat`][] repeats into the summed dims to the sizes in
    `axes_lengths`; a summed dim without a length gets a size-1 axis there that broadcasts
    (a `Repeat` broadcast dim), as torchlinops' `SumReduce(...).H` does. The normal
    $\mathbf{1}\mathbf{1}^T$ (`SumRepeat`) sums and repeats back to the size of
    the input it is applied to, lengths given or not; its summed dims are renamed
    (`B -> B1`).
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    axes_lengths: Lengths = dims_field(kind="pairs")

    def __init__(
        self, ishape: DimsLike, oshape: DimsLike, axes_lengths: Mapping[str, int] | None = None
    ):
        """**Arguments:**

        - `ishape`: the input dims, e.g. `"A B C"`.
        - `oshape`: `ishape` with the summed dims removed, e.g. `"A B"`.
        - `axes_lengths` (jaxlinops only): sizes of the summed dims, e.g. `{"C": 4}`,
          for the adjoint to repeat into (else it returns size-1 axes there).
        """
        self.ishape = as_dims(ishape)
        self.oshape = as_dims(oshape)
        self.axes_lengths = _lengths("SumReduce(axes_lengths=...)", axes_lengths, self.ishape)

    def __check_init__(self):
        _check_nested("SumReduce", self.ishape, self.oshape, "removed")
        _check_lengths("SumReduce", self.axes_lengths, _extra(self.ishape, self.oshape))

    def size(self, dim: str) -> int | None:
        return dict(self.axes_lengths).get(dim)

    def coupling(self, dim: str) -> Coupling:
        """None: a tile sums (or repeats) the tile's entries."""
        return Coupling.NONE

    def split(self, tile) -> NamedLinop:
        tiled = SumReduce(self.ishape, self.oshape, _tiled(self.axes_lengths, tile))
        return mask_padded(tiled, self, tile)

    def apply(self, x: jax.Array) -> jax.Array:
        return _sum(x, self.ishape, self.oshape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return _broadcast(y, self.oshape, self.ishape, self._lengths())

    def _lengths(self) -> dict[str, int]:
        """`axes_lengths`, and 1 for each summed dim without a length."""
        return {**{d: 1 for d in _extra(self.ishape, self.oshape)}, **dict(self.axes_lengths)}

    def adjoint(self) -> NamedLinop:
        lengths = dict(self.axes_lengths)
        singleton = [d for d in _extra(self.ishape, self.oshape) if d not in lengths]
        return Repeat(lengths, self.oshape, self.ishape, singleton)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        if inner is not None:
            return None
        return SumRepeat(self.ishape, normal_oshape(self), _extra(self.ishape, self.oshape))


class SumRepeat(NamedLinop):
    r"""$y = \mathbf{1}\mathbf{1}^T x$ over the `summed` dims: sum over them, then repeat
    the sum back to their size in $x$. The normal of [`SumReduce`][] (self-adjoint).

    Dims: `ishape -> oshape`, the same dims position by position except for the summed
    ones, which `oshape` names differently (`B -> B1`).
    """

    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    summed: Dims = dims_field()

    def tiling(self) -> Tiling:
        return Tiling(batch=[d for d in self.ishape if d not in self.summed])

    def apply(self, x: jax.Array) -> jax.Array:
        axes = tuple(axis_of(self.ishape, d) for d in self.summed)
        return jnp.broadcast_to(jnp.sum(x, axis=axes, keepdims=True), x.shape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.adjoint().apply(y)

    def adjoint(self) -> NamedLinop:
        summed = tuple(self.oshape[self.ishape.index(d)] for d in self.summed)
        return SumRepeat(self.oshape, self.ishape, summed)


class Repeat(NamedLinop):
    r"""Broadcast $x$ along new dims: $y[\dots, r, \dots] = x[\dots]$ for every $r$.

    Dims: `ishape -> oshape`, where `oshape` is `ishape` with new dims inserted; each new
    dim has the length `n_repeats[dim]`. A dim in `broadcast_dims` is inserted with size 1
    (it broadcasts against later operations) and reports no size. The adjoint sums over
    the new dims ([`jaxlinops.SumReduce`][]); the normal is the scalar $\prod n$.
    """

    n_repeats: Lengths = dims_field(kind="pairs")
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    broadcast_dims: Dims = dims_field()

    def __init__(
        self,
        n_repeats: Mapping[str, int],
        ishape: DimsLike,
        oshape: DimsLike,
        broadcast_dims: DimsLike = None,
    ):
        """**Arguments:**

        - `n_repeats`: the length of every new dim, e.g. `{"C": 3}` (optional, and then 1,
          for `broadcast_dims`).
        - `ishape`: the input dims, e.g. `"A B"`.
        - `oshape`: `ishape` with the new dims inserted, e.g. `"A B C"`.
        - `broadcast_dims`: new dims inserted with size 1.
        """
        self.ishape = as_dims(ishape)
        self.oshape = as_dims(oshape)
        self.broadcast_dims = as_dims(broadcast_dims)
        self.n_repeats = _lengths("Repeat(n_repeats=...)", n_repeats, self.oshape)

    def __check_init__(self):
        _check_nested("Repeat", self.oshape, self.ishape, "added")
        new = _extra(self.oshape, self.ishape)
        _check_lengths("Repeat", self.n_repeats, new)
        lengths = dict(self.n_repeats)
        for d in self.broadcast_dims:
            if d not in new or lengths.get(d, 1) != 1:
                raise ValueError(
                    f"`Repeat`: broadcast dim {d!r} must be a new dim {fmt(new)} repeated "
                    f"once; got n_repeats {lengths}."
                )
        missing = [d for d in new if d not in lengths and d not in self.broadcast_dims]
        if missing:
            raise ValueError(
                f"`Repeat`: `n_repeats` must give the length of every new dim; missing {missing}."
            )

    @property
    def axes_lengths(self) -> dict[str, int]:
        """torchlinops' name for the lengths of the new dims: `n_repeats` as a dict."""
        return dict(self.n_repeats)

    def _all_lengths(self) -> dict[str, int]:
        return {**{d: 1 for d in self.broadcast_dims}, **dict(self.n_repeats)}

    def size(self, dim: str) -> int | None:
        if dim in self.broadcast_dims:
            return None
        return dict(self.n_repeats).get(dim)

    def coupling(self, dim: str) -> Coupling:
        """None: a tile sums (or repeats) the tile's entries."""
        return Coupling.NONE

    def split(self, tile) -> NamedLinop:
        lengths = _tiled(self.n_repeats, tile)
        tiled = Repeat(lengths, self.ishape, self.oshape, self.broadcast_dims)
        return mask_padded(tiled, self, tile)

    def apply(self, x: jax.Array) -> jax.Array:
        return _broadcast(x, self.ishape, self.oshape, self._all_lengths())

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return _sum(y, self.oshape, self.ishape)

    def adjoint(self) -> NamedLinop:
        """[`SumReduce`][], with the lengths of the dims that are not broadcast."""
        lengths = {d: n for d, n in self.n_repeats if d not in self.broadcast_dims}
        return SumReduce(self.oshape, self.ishape, lengths)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """Without `inner`: `Scalar(prod(n_repeats))` on `ishape`."""
        if inner is not None:
            return None
        return Scalar(math.prod(self._all_lengths().values()), self.ishape)


def _covers(tile: Tile, dim: str) -> bool:
    """Whether `tile` leaves `dim` whole: torchlinops' `slice(None)` (open at the end;
    a bounded slice is a tile, even one as long as the dim)."""
    s = tile[dim]
    return dim not in tile.padded and s.start in (None, 0) and s.stop is None


def _tiled(lengths: Lengths, tile) -> dict[str, int]:
    """`lengths` with each tiled dim's length replaced by its tile's."""
    return {d: tile_length(tile, d, n) for d, n in lengths}
