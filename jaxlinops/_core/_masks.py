"""Tiles of operators that create or consume a dim: `split_arrays` slices an operator's
arrays, and `mask_padded` zeroes the entries of a padded tile past the end of such a dim
with a 0/1 `Diagonal`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import jax.numpy as jnp
import numpy as np

from .._dims import ELLIPSIS, fmt
from ._diagonal import Diagonal
from ._linop import NamedLinop
from ._tiles import ArrayAxes, as_tile, slice_arrays, tile_length, valid_length


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
