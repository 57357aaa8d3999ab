r"""Gridding on a split grid: an operator that reads a grid at off-grid points (`OffGrid`:
`Interpolate`, the NUFFT's interpolation, `ArrayToBlocks`), run on slabs of one grid dim.

The grid dim of $N$ entries is held in slabs of $B = \lceil N / D \rceil$ (see `_halo`).
At build time each point goes into the *bucket* of the slab holding its cell
$c = \lfloor p \rfloor$ along the dim (taken modulo $N$ when the grid wraps around), and
is shifted to that slab's coordinates extended by $h$, the operator's reach along the
dim: $p' = p - dB + h$. On device $d$:

- forward: the slab is extended by $h$ entries from the neighbouring slabs (`halo_extend`), the
  operator runs unchanged on it at the bucket's points (`OffGrid.local`; the buckets are
  padded to the largest with points whose values are never used), and the values go to
  the devices that own them in the output, which is split along the first point dim in
  blocks of $\lceil L_0 / D \rceil$: one `all_to_all` of fixed-size chunks whose indices
  are fixed at build time. Per-point trailing dims (`OffGrid.trailing`: a block's
  entries) travel with their point untouched;
- adjoint: the values come back from their owners (the same `all_to_all`, reversed), are
  spread onto the extended slab, and the halos are added into the neighbours
  (`halo_reduce`).

Split along several grid dims at once (a pencil, one mesh axis each), a point goes into
the bucket of the block holding its cell along every split dim, the block is extended
along each of them (the corners come along), and the output is split along the first
point dim over all those mesh axes together (devices in row-major order).

Each device reads and writes only its block and its halos and holds only its bucket's
points: the grid is never gathered. The collective bytes per application are the
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

from ..._core import NamedLinop, OffGrid
from ..._dims import fmt
from .._halo import _Layout, halo_extend, halo_reduce
from .._tile_arrays import grid_spec, place, stack_tiles, tile_at
from ._stages import AbstractStage

Shape = tuple[int, ...]


class Points(AbstractStage):
    """The stage of an off-grid operator split along its grid dims `dims_in` (axes
    `split` of its `grid`, one per slab axis of the mesh), its output split along its
    first point dim over all those mesh axes (see the module doc). `tiles` is the
    operator on each device's extended block at its bucket's `bucket` points, stacked on
    leading device axes (one per slab axis). `send` `[D..., P, Q]` ($P$ devices in all):
    per device and destination, the bucket positions of the values sent there (`bucket`
    for padding); `recv` `[D..., P, Q]`: per device and source, their positions in this
    device's output block (past the block for padding). `halos`: the reach along each
    split axis. `trailing`: the sizes of the per-point dims after the point dims (see
    `OffGrid`). `reduce`: the adjoint."""

    tiles: NamedLinop
    send: jax.Array
    recv: jax.Array
    grid: Shape = eqx.field(static=True)
    split: tuple[int, ...] = eqx.field(static=True)
    points: Shape = eqx.field(static=True)
    bucket: int = eqx.field(static=True)
    halos: tuple[int, ...] = eqx.field(static=True)
    periodic: bool = eqx.field(static=True)
    dims_in: tuple[str, ...] = eqx.field(static=True)
    dims_out: tuple[str, ...] = eqx.field(static=True)
    trailing: Shape = eqx.field(static=True, default=())
    reduce: bool = eqx.field(static=True, default=False)

    def adjoint(self) -> Points:
        return dataclasses.replace(
            self, dims_in=self.dims_out, dims_out=self.dims_in, reduce=not self.reduce
        )

    def array_specs(self, arrays, names: tuple[str, ...]):
        """Along their leading (device) axes, one per slab axis."""
        return jax.tree.map(lambda a: grid_spec(a, names), arrays)

    def run(self, x: jax.Array, shape: Shape, axes, names: tuple[str, ...]) -> jax.Array:
        first = (0,) * len(self.split)
        tile, send, recv = tile_at(self.tiles, first), self.send[first], self.recv[first]
        halos = list(zip(self.split, self.halos, names))
        w = self.trailing
        if self.reduce:
            batch = x.shape[: x.ndim - len(self.points) - len(w)]
            got = _exchange(_take(x.reshape(batch + (-1,) + w), recv, w), names, w)
            values = _put(jnp.zeros(batch + (self.bucket,) + w, x.dtype), send, got, w)
            slab = tile.apply_adjoint(values)
            for a, h, name in reversed(halos):
                slab = halo_reduce(slab, len(batch) + a, h, name, self.grid[a], self.periodic)
            return slab
        for (a, h, name), at in zip(halos, axes):
            x = halo_extend(x, at, h, name, self.grid[a], self.periodic)
        values = tile(x)
        batch = values.shape[: values.ndim - 1 - len(w)]
        got = _exchange(_take(values, send, w), names, w)
        block = -(-self.points[0] // math.prod(jax.lax.axis_size(n) for n in names))
        out = jnp.zeros(batch + (block * math.prod(self.points[1:]),) + w, values.dtype)
        return _put(out, recv, got, w).reshape(batch + (block,) + self.points[1:] + w)

    def out(self, shape: Shape, axes, devices: Shape, dtype) -> tuple[Shape, tuple[int, ...]]:
        if self.reduce:
            batch = shape[: len(shape) - len(self.points) - len(self.trailing)]
            return batch + self.grid, tuple(len(batch) + a for a in self.split)
        batch = shape[: len(shape) - len(self.grid)]
        return batch + self.points + self.trailing, (len(batch),) * len(self.split)


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


def _exchange(chunks: jax.Array, names: tuple[str, ...], w: Shape) -> jax.Array:
    """`chunks` `[..., P, Q, *w]`: chunk `e` goes to device `e` (row-major over the mesh
    axes `names`); returns `[..., P, Q, *w]`, the chunks received, by source device."""
    at = chunks.ndim - 2 - len(w)
    moved = jnp.moveaxis(chunks, at, 0)
    return jnp.moveaxis(jax.lax.all_to_all(moved, names, 0, 0, tiled=True), 0, at)


def points_stage(leaf: NamedLinop, grid: OffGrid, split: tuple[str, ...], mesh: Mesh) -> Points:
    """The stage of `leaf` (declaring `grid`) split along its grid dims `split` over the
    first `len(split)` axes of `mesh`, one each: the points bucketed by block (see the
    module doc), or a ValueError naming the leaf when it cannot be split so."""
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    if isinstance(grid.locs, Tracer):
        raise ValueError(
            f"{where}: its points are traced (built inside `jit`, `vmap` or `grad`), so they "
            f"cannot be bucketed by slab to split the grid dims {list(split)}; build the split "
            f"operator outside the traced function."
        )
    others = [s for s in split if s not in grid.grid_dims]
    if others or len(set(split)) < len(split):
        raise ValueError(
            f"{where}: grids along {list(grid.grid_dims)}, but the grid split holds it split "
            f"along {list(split)}; gridding covers splits of distinct grid dims only."
        )
    names = tuple(mesh.axis_names[: len(split)])
    devices = tuple(mesh.shape[n] for n in names)
    axes = tuple(list(grid.grid_dims).index(s) for s in split)
    locs = np.asarray(grid.locs)
    points, flat = locs.shape[:-1], locs.reshape(-1, locs.shape[-1])
    local, cells, local_grid = flat.copy(), [], list(grid.grid_size)
    for s, a, d in zip(split, axes, devices):
        n, h = grid.grid_size[a], grid.reach[a]
        lay = _Layout(n, d, h, grid.periodic)
        coord = flat[:, a]
        if grid.periodic:
            coord = np.remainder(coord, n)
            coord = np.where(coord >= n, coord - n, coord)  # a tiny negative rounds up to n
        cell = np.clip(np.floor(coord).astype(np.int64), 0, n - 1) // lay.block
        local[:, a] = coord - cell * lay.block + h
        cells.append(cell)
        local_grid[a] = lay.block + 2 * h
    owner = np.ravel_multi_index(tuple(cells), devices)
    count = math.prod(devices)
    members = [np.flatnonzero(owner == d) for d in range(count)]
    bucket = max(1, *(len(m) for m in members))
    parts = []
    for m in members:
        at = np.zeros((bucket, flat.shape[1]), flat.dtype)
        at[:, list(axes)] = [grid.reach[a] for a in axes]  # padding points at a cell's corner
        at[: len(m)] = local[m]
        parts.append(grid.local(jnp.asarray(at), tuple(local_grid)))
    tiles = stack_tiles(parts, devices)
    assert tiles is not None, "the local operators differ only in their arrays"
    send, recv = _routes(members, points, count, bucket)
    routes = (
        jnp.asarray(send.reshape(devices + send.shape[1:])),
        jnp.asarray(recv.reshape(devices + recv.shape[1:])),
    )
    tiles, send, recv = place((tiles, *routes), mesh, names)
    w = tuple(grid.trailing)
    dim_out = leaf.oshape[len(leaf.oshape) - len(points) - len(w)]
    halos = tuple(grid.reach[a] for a in axes)
    args = (
        grid.grid_size,
        axes,
        points,
        bucket,
        halos,
        grid.periodic,
        split,
        (dim_out,) * len(split),
        w,
    )
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
