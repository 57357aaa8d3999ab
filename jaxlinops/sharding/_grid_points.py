r"""Gridding on a split grid: an operator that reads a grid at off-grid points (`OffGrid`:
`Interpolate`, the NUFFT's interpolation, `ArrayToBlocks`), run on slabs of one grid dim.

The grid dim of $N$ entries is held in slabs of $B = \lceil N / D \rceil$ (see `_halo`).
At build time each point goes into the *bucket* of the slab holding its cell
$c = \lfloor p \rfloor$ along the dim (taken modulo $N$ when the grid wraps around), and
is shifted to that slab's coordinates extended by $h$, the operator's reach along the
dim: $p' = p - dB + h$. On device $d$:

- forward: the slab is extended by $h$ entries from each neighbour (`halo_extend`), the
  operator runs unchanged on it at the bucket's points (`OffGrid.local`; the buckets are
  padded to the largest with points whose values are never used), and the values go to
  the devices that own them in the output, which is split along the first point dim in
  blocks of $\lceil L_0 / D \rceil$: one `all_to_all` of fixed-size chunks whose indices
  are fixed at build time. Per-point trailing dims (`OffGrid.trailing`: a block's
  entries) travel with their point untouched;
- adjoint: the values come back from their owners (the same `all_to_all`, reversed), are
  spread onto the extended slab, and the halos are added into the neighbours
  (`halo_reduce`).

Each device reads and writes only its slab and two $h$-wide halos and holds only its
bucket's points: the grid is never gathered. The collective bytes per application are the
two halo faces and the points' values (the chunks padded to the largest).
"""

from __future__ import annotations

import dataclasses
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.sharding import Mesh

from .._core import NamedLinop, OffGrid
from .._dims import fmt
from ._halo import _Layout, halo_extend, halo_reduce
from ._tile_arrays import place, stack_tiles, tile_at

Shape = tuple[int, ...]


class Points(eqx.Module):
    """The stage of an off-grid operator split along its grid dim `dim_in` (axis `split`
    of its `grid`), its output split along its first point dim `dim_out` (see the module
    doc). `tiles` is the operator on each device's extended slab at its bucket's `bucket`
    points, stacked on a leading device axis. `send` `[D, D, Q]`: per device and
    destination, the bucket positions of the values sent there (`bucket` for padding);
    `recv` `[D, D, Q]`: per device and source, their positions in this device's output
    block (past the block for padding). `trailing`: the sizes of the per-point dims
    after the point dims (see `OffGrid`). `reduce`: the adjoint."""

    tiles: NamedLinop
    send: jax.Array
    recv: jax.Array
    grid: Shape = eqx.field(static=True)
    split: int = eqx.field(static=True)
    points: Shape = eqx.field(static=True)
    bucket: int = eqx.field(static=True)
    halo: int = eqx.field(static=True)
    periodic: bool = eqx.field(static=True)
    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)
    trailing: Shape = eqx.field(static=True, default=())
    reduce: bool = eqx.field(static=True, default=False)

    def adjoint(self) -> Points:
        return dataclasses.replace(
            self, dim_in=self.dim_out, dim_out=self.dim_in, reduce=not self.reduce
        )

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        tile = tile_at(self.tiles, (0,))
        send, recv, n = self.send[0], self.recv[0], self.grid[self.split]
        w = self.trailing
        if self.reduce:
            batch = x.shape[: x.ndim - len(self.points) - len(w)]
            got = _exchange(_take(x.reshape(batch + (-1,) + w), recv, w), axis_name, w)
            values = _put(jnp.zeros(batch + (self.bucket,) + w, x.dtype), send, got, w)
            slab = tile.apply_adjoint(values)
            at = len(batch) + self.split
            return halo_reduce(slab, at, self.halo, axis_name, n, self.periodic)
        values = tile(halo_extend(x, axis, self.halo, axis_name, n, self.periodic))
        batch = values.shape[: values.ndim - 1 - len(w)]
        got = _exchange(_take(values, send, w), axis_name, w)
        block = -(-self.points[0] // jax.lax.axis_size(axis_name))
        out = jnp.zeros(batch + (block * math.prod(self.points[1:]),) + w, values.dtype)
        return _put(out, recv, got, w).reshape(batch + (block,) + self.points[1:] + w)

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        if self.reduce:
            batch = shape[: len(shape) - len(self.points) - len(self.trailing)]
            return batch + self.grid, len(batch) + self.split
        batch = shape[: len(shape) - len(self.grid)]
        return batch + self.points + self.trailing, len(batch)


# The helpers below find the point axis of their arrays before the trailing per-point
# dims of sizes `w`, which they carry along untouched.


def _take(values: jax.Array, index: jax.Array, w: Shape) -> jax.Array:
    """`values[..., index, *w]` for `index` `[D, Q]`: `[..., D, Q, *w]`, zero where
    `index` is past the end (padding)."""
    at = values.ndim - 1 - len(w)
    return jnp.take(values, index, axis=at, mode="fill", fill_value=0)


def _put(out: jax.Array, index: jax.Array, values: jax.Array, w: Shape) -> jax.Array:
    """`out` with `out[..., index, *w] = values` for `index` `[D, Q]` and `values`
    `[..., D, Q, *w]`; indices past the end (padding) are dropped."""
    at = values.ndim - 2 - len(w)
    flat = values.reshape(values.shape[:at] + (-1,) + w)
    where = (Ellipsis, index.reshape(-1)) + (slice(None),) * len(w)
    return out.at[where].set(flat, mode="drop")


def _exchange(chunks: jax.Array, axis_name: str, w: Shape) -> jax.Array:
    """`chunks` `[..., D, Q, *w]`: chunk `e` goes to device `e`; returns `[..., D, Q, *w]`,
    the chunks received, by source device."""
    at = chunks.ndim - 2 - len(w)
    moved = jnp.moveaxis(chunks, at, 0)
    return jnp.moveaxis(jax.lax.all_to_all(moved, axis_name, 0, 0, tiled=True), 0, at)


def points_stage(leaf: NamedLinop, grid: OffGrid, split: str, devices: int, mesh: Mesh) -> Points:
    """The stage of `leaf` (declaring `grid`) split along its grid dim `split` over the
    `devices` of `mesh`'s one axis: the points bucketed by slab (see the module doc), or a
    ValueError naming the leaf when it cannot be split so."""
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    if isinstance(grid.locs, Tracer):
        raise ValueError(
            f"{where}: its points are traced (built inside `jit`, `vmap` or `grad`), so they "
            f"cannot be bucketed by slab to split the grid dim {split!r}; build the split "
            f"operator outside the traced function."
        )
    axis = list(grid.grid_dims).index(split)
    n, h = grid.grid_size[axis], grid.reach[axis]
    lay = _Layout(n, devices, h, grid.periodic)
    if h > lay.limit:
        raise ValueError(
            f"{where}: a point reads {h} entries on either side along the grid dim "
            f"{split!r}, more than the {lay.limit} entries each halo can take from one "
            f"neighbour ({lay.describe()}); split over fewer devices."
        )
    locs = np.asarray(grid.locs)
    points, flat = locs.shape[:-1], locs.reshape(-1, locs.shape[-1])
    coord = flat[:, axis]
    if grid.periodic:
        coord = np.remainder(coord, n)
        coord = np.where(coord >= n, coord - n, coord)  # a tiny negative rounds up to n
    slab = np.clip(np.floor(coord).astype(np.int64), 0, n - 1) // lay.block
    members = [np.flatnonzero(slab == d) for d in range(devices)]
    bucket = max(1, *(len(m) for m in members))
    local_grid = tuple(lay.block + 2 * h if a == axis else s for a, s in enumerate(grid.grid_size))
    parts = []
    for d, m in enumerate(members):
        local = np.zeros((bucket, flat.shape[1]), flat.dtype)  # padding points at 0, h
        local[:, axis] = h
        local[: len(m)] = flat[m]
        local[: len(m), axis] = coord[m] - d * lay.block + h
        parts.append(grid.local(jnp.asarray(local), local_grid))
    tiles = stack_tiles(parts, (devices,))
    assert tiles is not None, "the local operators differ only in their arrays"
    send, recv = _routes(members, points, devices, bucket)
    name = next(iter(mesh.shape))
    tiles, send, recv = place((tiles, jnp.asarray(send), jnp.asarray(recv)), mesh, (name,))
    w = tuple(grid.trailing)
    dim_out = leaf.oshape[len(leaf.oshape) - len(points) - len(w)]
    args = (grid.grid_size, axis, points, bucket, h, grid.periodic, split, dim_out, w)
    return Points(tiles, send, recv, *args)


def _routes(members: list, points: Shape, devices: int, bucket: int):
    """`send` and `recv` `[D, D, Q]` (see `Points`) for the buckets `members` (flat point
    indices per device), the output split along the first of the point dims `points`."""
    rest = math.prod(points[1:])
    block = -(-points[0] // devices) * rest
    pairs = {}
    for d, m in enumerate(members):
        dest = m // block
        for e in range(devices):
            where = np.flatnonzero(dest == e)
            pairs[d, e] = (where, m[where] - e * block)
    width = max(1, *(len(w) for w, _ in pairs.values()))
    send = np.full((devices, devices, width), bucket, np.int32)
    recv = np.full((devices, devices, width), block, np.int32)
    for (d, e), (where, pos) in pairs.items():
        send[d, e, : len(where)] = where
        recv[e, d, : len(pos)] = pos
    return send, recv
