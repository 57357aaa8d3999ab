"""Padded tiles: `split_arrays` slices an operator's arrays, and `mask_padded` zeroes the
entries of a padded tile past the end of a dim that the operator creates or consumes with
a 0/1 `Diagonal`; `split_clamped` pads the tiles of a split that slices only inside its
dims (an operator written to torchlinops' protocol) into a `PaddedTile`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .._dims import ELLIPSIS, Dims, axis_of, fmt
from ._coupling import Coupling
from ._diagonal import Diagonal
from ._linop import NamedLinop, dims_field
from ._tiles import ArrayAxes, Tile, as_tile, slice_arrays, take, tile_length, valid_length


def split_arrays(
    op: NamedLinop,
    tile: Mapping[str, slice],
    arrays: Iterable[ArrayAxes] = (),
    batch: Iterable[str] = (),
    zeroed: bool = True,
) -> NamedLinop:
    """The tile of `op` for an operator that works entry by entry along the tiled dims: its
    arrays sliced along those dims. Use it to implement `NamedLinop.split`.

    - `arrays`: `(where, axes)` pairs: `where(op)` returns one of `op`'s arrays and `axes`
      names the dim of each of its axes (None for an unnamed one). Size-1 axes broadcast
      and are kept.
    - `batch`: dims that `op` applies entry by entry without an array along them; a tile
      along them is the same operator.
    - `zeroed`: whether zero entries of the arrays give zero outputs (weights: yes; indices
      and points: no). When not, padded entries of ragged tiles are masked.

    A tiled dim of `op` that is in neither is one `op` mixes or resizes: a ValueError.
    """
    out, indexed = slice_arrays(op, tile, arrays, batch)
    return mask_padded(out, op, tile, indexed if zeroed else ())


def mask_padded(
    out: NamedLinop, op: NamedLinop, tile: Mapping[str, slice], zeroed: Iterable[str] = ()
) -> NamedLinop:
    """The tile `out` of `op`, masked to zero along the padded dims of `tile` that `op`
    has on one side only (it creates or consumes them), except those in `zeroed`.

    The mask $M$ is a 0/1 `Diagonal` (1 on the entries inside the dim): `M @ out` for an
    output dim, `out @ M` for an input dim, so the tile is $Q_t A P_t^T$ exactly.
    """
    tile, zeroed = as_tile(tile), set(zeroed)
    one_sided = set(op.ishape) ^ set(op.oshape)
    dims = [d for d in tile.padded if d in tile and d in one_sided and d not in zeroed]
    for side in ("ishape", "oshape"):
        shape = getattr(op, side)
        here = sorted((shape.index(d), d) for d in dims if d in shape)
        if not here:
            continue
        first = here[0][0]
        if ELLIPSIS in shape[first:]:
            raise ValueError(
                f"`{op.name}` ({fmt(op.ishape)} -> {fmt(op.oshape)}) cannot be padded along "
                f"{here[0][1]!r}: a '...' follows it."
            )
        weight = np.ones((1,) * (len(shape) - first), bool)
        for i, d in here:
            n = tile_length(tile, d, 0)
            keep = np.arange(n) < valid_length(tile[d], tile.padded[d])
            weight = weight & keep.reshape((-1,) + (1,) * (len(shape) - 1 - i))
        mask = Diagonal(jnp.asarray(weight), getattr(out, side))
        out = mask @ out if side == "oshape" else out @ mask
    return out


def split_clamped(op: NamedLinop, tile: Mapping[str, slice], impl: Callable) -> NamedLinop:
    """The tile of `op` by `impl(op, tile)`, a split that knows nothing of padding (one
    written to torchlinops' protocol): each padded slice of a dim of `op` is clamped to the
    dim's entries before `impl` sees it, and the result is padded back (`PaddedTile`). An
    all-padding slice becomes the dim's last entry, which the `PaddedTile` zeroes."""
    tile = as_tile(tile)
    slices, pads = dict(tile.slices), {}
    for d, n in tile.padded.items():
        if d in tile and d in op.dims:
            s, valid = tile[d], valid_length(tile[d], n)
            start = min(s.start or 0, n - 1)
            slices[d] = slice(start, start + max(valid, 1))
            pads[d] = (valid, tile_length(tile, d, n))
    return padded_tile(impl(op, Tile(slices)), pads)


def padded_tile(op: NamedLinop, pads: Mapping[str, tuple[int, int]]) -> NamedLinop:
    """`op` padded along `pads = {dim: (valid, length)}` (those with `valid < length`)."""
    pads = {d: p for d, p in pads.items() if p[0] < p[1]}
    if isinstance(op, PaddedTile):
        op, pads = op.linop, {**dict(op.pads), **pads}
    return PaddedTile(op, tuple(pads.items())) if pads else op


class PaddedTile(NamedLinop):
    r"""A padded tile of an operator whose own `split` slices only inside its dims (see
    `split_clamped`): `linop` is the tile of the entries inside; along each padded dim,
    `pads` holds `(dim, (valid, length))`: the tile has `length` entries, the first `valid`
    inside the dim (`linop` has `max(valid, 1)` there).

    $A_t = E_o A_v E_i^T$, where $E$ embeds the first `valid` entries in zeros (a zero row
    for `linop`'s stand-in entry when `valid` is 0), so the padded entries of the output
    are zero and those of the input are ignored: the tile is $Q_t A P_t^T$ exactly.
    """

    linop: NamedLinop
    pads: tuple[tuple[str, tuple[int, int]], ...] = dims_field(kind="pairs")

    def __init__(self, linop: NamedLinop, pads: tuple[tuple[str, tuple[int, int]], ...]):
        # written out: type checkers take the base's abstract `ishape`/`oshape` for fields
        self.linop = linop
        self.pads = pads

    @property
    def ishape(self) -> Dims:
        return self.linop.ishape

    @property
    def oshape(self) -> Dims:
        return self.linop.oshape

    @property
    def name(self) -> str:
        return self.linop.name

    def size(self, dim: str) -> int | None:
        return dict(self.pads).get(dim, (None, self.linop.size(dim)))[1]

    def coupling(self, dim: str) -> Coupling:
        return self.linop.coupling(dim)

    def apply(self, x: jax.Array) -> jax.Array:
        y = self.linop.apply(self._embed(x, self.ishape, inner=True))
        return self._embed(y, self.oshape, inner=False)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        x = self.linop.apply_adjoint(self._embed(y, self.oshape, inner=True))
        return self._embed(x, self.ishape, inner=False)

    def _embed(self, a: jax.Array, shape: Dims, inner: bool) -> jax.Array:
        """`a` (laid out by `shape`) cut to the `valid` entries of each padded dim and
        zero-filled to `linop`'s length there (`inner`) or to the tile's `length`."""
        for d, (valid, length) in self.pads:
            if d in shape:
                axis = axis_of(shape, d) % a.ndim
                kept = jax.lax.slice_in_dim(a, 0, valid, axis=axis)
                a = take(kept, axis, slice(0, max(valid, 1) if inner else length), padded=True)
        return a

    def split(self, tile: Mapping[str, slice]) -> NamedLinop:
        """Along a padded dim, the sub-slice of `linop` inside the dim, padded again; along
        the other dims, `linop`'s tile."""
        tile, pads = as_tile(tile), dict(self.pads)
        slices = dict(tile.slices)
        for d in set(tile) & set(pads):
            valid, length = pads[d]
            start = tile[d].start or 0
            n = tile_length(tile, d, length)
            keep = max(0, min(start + n, valid) - start)
            slices[d] = slice(start, start + keep) if keep else slice(0, 1)
            pads[d] = (keep, n)
        padded = {d: n for d, n in tile.padded.items() if d not in pads}
        return padded_tile(self.linop.split(Tile(slices, padded)), pads)
