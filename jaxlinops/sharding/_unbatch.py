"""A batched operator's tiles reassembled into one ordinary operator (torchlinops' form)."""

from __future__ import annotations

import jax
import numpy as np

from .._core import Add, NamedLinop, Tile
from ..linops._concat import Concat
from ._tile_arrays import unstack_tiles


def unbatch(op) -> NamedLinop:
    """The tiles of the `BatchedLinop` `op` joined by torchlinops' reassembly rule: along
    each stacked dim, `Concat` on the sides that have it, `Add` where neither does. Padded
    tiles are cut back to their entries inside the dim (all-padding tiles are dropped). The
    arrays go to the first device of the mesh: the result runs on one device."""
    grid = op.grid()
    batch = dict(op.batch)
    tiles = op.tiles if isinstance(op.tiles, tuple) else unstack_tiles(op.tiles, grid)
    cells = np.empty(grid, dtype=object)
    for flat, index in enumerate(np.ndindex(*grid)):
        valid = {d: min(batch[d].tile, batch[d].size - i * batch[d].tile)
                 for d, i in zip(op.stacked, index)}  # fmt: skip
        if min(valid.values()) <= 0:
            continue
        cut = {d: slice(0, v) for d, v in valid.items() if v < batch[d].tile}
        cells[index] = tiles[flat].split(Tile(cut)) if cut else tiles[flat]
    for d in reversed(op.stacked):
        cells = _join_last_axis(op, d, cells)
    joined = cells.item() if cells.shape == () else cells.flat[0]
    if op.mesh is not None:
        joined = jax.device_put(joined, op.mesh.devices.flat[0])
    return joined


def _join_last_axis(op, dim: str, cells: np.ndarray) -> np.ndarray:
    """`_join` along the last axis of the object array `cells`. A loop: numpy's
    `apply_along_axis` would read a container (which has `len` and indexing, as in
    torchlinops) as the sequence of its children."""
    out = np.empty(cells.shape[:-1], dtype=object)
    for index in np.ndindex(*out.shape):
        out[index] = _join(op, dim, list(cells[index]))
    return out


def _join(op, dim: str, parts) -> NamedLinop:
    parts = [p for p in parts if p is not None]
    if len(parts) == 1:
        return parts[0]
    idim = dim if dim in op.ishape else None
    odim = dim if dim in op.oshape else None
    if idim is None and odim is None:
        return Add(*parts)
    return Concat(*parts, idim=idim, odim=odim)
