"""The tile arrays of a batched operator: tiles of one structure as one operator whose
arrays have leading tile-grid axes (`stack_tiles`, `unstack_tiles`), and their placement on
a mesh.

An array that is the same in every tile along a grid axis (e.g. a NUFFT trajectory when
tiling coils) keeps a size-1 axis there: it is stored once, replicated across that mesh
axis instead of copied per tile.
"""

from __future__ import annotations

import functools
from typing import TypeVar

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._core import NamedLinop

Tiles = TypeVar("Tiles")


def stack_tiles(tiles: list[NamedLinop], grid: tuple[int, ...]) -> NamedLinop | None:
    """The tiles (in row-major grid order) as one operator with stacked arrays, or None
    where they differ in structure, array shapes or dtypes, or non-array leaves."""
    flat, treedef = jax.tree.flatten(tiles[0])
    columns = [[leaf] for leaf in flat]
    for t in tiles[1:]:
        other, other_def = jax.tree.flatten(t)
        if other_def != treedef:
            return None
        for column, a, b in zip(columns, flat, other):
            if eqx.is_array(a) != eqx.is_array(b):
                return None
            if eqx.is_array(a) and (a.shape != b.shape or a.dtype != b.dtype):
                return None
            if not eqx.is_array(a) and a != b:
                return None
            column.append(b)
    leaves = [_stack_leaf(c, grid) if eqx.is_array(c[0]) else c[0] for c in columns]
    return jax.tree.unflatten(treedef, leaves)


def _stack_leaf(column: list, grid: tuple[int, ...]):
    """One array of every tile, stacked on the grid axes along which it varies."""
    cells = np.empty(grid, dtype=object)
    for i, a in enumerate(column):
        cells[np.unravel_index(i, grid)] = a
    for axis in range(len(grid)):
        first = np.take(cells, [0], axis=axis)
        if all(_same(a, b) for a, b in zip(cells.flat, np.broadcast_to(first, cells.shape).flat)):
            cells = first
    return _stack(list(cells.flat), cells.shape)


@functools.partial(jax.jit, static_argnums=1)
def _stack(arrays: list, grid: tuple[int, ...]) -> jax.Array:
    """`arrays` stacked on the leading `grid` axes (one program)."""
    return jnp.stack(arrays).reshape(grid + arrays[0].shape)


_equal = jax.jit(jnp.array_equal)  # one program per shape, not one per step


def _same(a, b) -> bool:
    """Whether two arrays of the same shape and dtype are equal (identical under `jit`)."""
    if a is b:
        return True
    if isinstance(a, Tracer) or isinstance(b, Tracer):
        return False
    return bool(_equal(a, b))


def tile_at(stacked: NamedLinop, index: tuple) -> NamedLinop:
    """The tile at grid `index` (ints or traced ints) of a stacked operator."""
    arrays, static = eqx.partition(stacked, eqx.is_array)
    return eqx.combine(jax.tree.map(lambda a: a[pick(a, index)], arrays), static)


def pick(a: jax.Array, index: tuple[int | jax.Array, ...]) -> tuple[int | jax.Array, ...]:
    """`index` into the grid axes of `a`, with 0 where `a` is the same for every tile."""
    return tuple(i if n > 1 else 0 for i, n in zip(index, a.shape))


def unstack_tiles(stacked: NamedLinop, grid: tuple[int, ...]) -> list[NamedLinop]:
    """The tiles of a stacked operator, in row-major grid order (the inverse of
    `stack_tiles`)."""
    return [tile_at(stacked, index) for index in np.ndindex(*grid)]


def grid_spec(a: jax.Array | jax.ShapeDtypeStruct, axes: tuple[str | None, ...]) -> PartitionSpec:
    """The grid axes of `a` on the mesh `axes`, replicated where `a` has size 1."""
    return PartitionSpec(*(ax if n > 1 else None for ax, n in zip(axes, a.shape)))


def place(tiles: Tiles, mesh: Mesh | None, axes: tuple[str | None, ...]) -> Tiles:
    """Put the tile arrays on `mesh`, sharded along their grid axes (`axes`: the mesh axis
    of each; `()` replicates every array)."""
    if mesh is None:
        return tiles
    arrays, static = eqx.partition(tiles, eqx.is_array)
    placed = jax.tree.map(lambda a: _put(a, NamedSharding(mesh, grid_spec(a, axes))), arrays)
    return eqx.combine(placed, static)


def _put(a, sharding: NamedSharding):
    """`a` (the same value in every process) placed with `sharding`; on a mesh spanning
    processes, each process puts only its own shards. An array in the CPU's memory is cut
    into shards by numpy (jax would compile a slicing program per shape and sharding)."""
    if isinstance(a, Tracer):
        return jax.device_put(a, sharding)
    on_cpu = isinstance(a, jax.Array) and all(d.platform == "cpu" for d in a.devices())
    if on_cpu and a.is_fully_addressable:
        a = np.asarray(a)
    if sharding.is_fully_addressable:
        return jax.device_put(a, sharding)
    return jax.make_array_from_callback(a.shape, sharding, lambda index: a[index])
