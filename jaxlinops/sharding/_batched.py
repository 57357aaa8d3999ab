r"""`BatchedLinop`: one operator applied tile by tile, across a device mesh or in a loop.

For batched dims $d$ with tile sizes $b_d$, the operator is the sum over the tile grid

$$A = \sum_t Q_t^T A_t P_t, \qquad A_t = Q_t A P_t^T,$$

where $P_t$ and $Q_t$ select the tile's entries of the batched input and output dims
(torchlinops' reassembly rule: a dim in the output is concatenated, any other is summed).
Every tile has the same structure (ragged tiles are zero-padded, see `jaxlinops._split`),
so the tiles' arrays are stacked along leading grid axes (of size 1 where an array is the
same in every tile, see `_tile_arrays`). With a mesh, `jax.shard_map`
gives each device its block of the grid (arrays sharded along the grid axes, the input
along the batched input dims); each device loops over its tiles with `lax.scan`,
accumulating into its block of the output; dims not in the output are reduced across
devices with `psum`, dims in the output stay sharded (`out_specs`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .._arrays import Device
from .._core import (
    Coupling,
    NamedLinop,
    Tile,
    as_tile,
    children_coupling,
    dims_field,
    normal_oshape,
    normal_renaming,
    stacked_field,
    tile_grid,
    tile_length,
    weighted,
    with_oshape,
    wrapped_adjoint,
)
from .._dims import ELLIPSIS, Dims, axis_of
from ._dim_split import BatchDim
from ._log import log_application
from ._program import apply_compiled, cut_to, on_mesh, pad_to, partition_spec
from ._tile_arrays import grid_spec, place, stack_tiles, tile_at, unstack_tiles
from ._unbatch import unbatch


class BatchedLinop(NamedLinop):
    """An operator run tile by tile (see the module doc); build it with
    `jaxlinops.create_batched_linop` or `jaxlinops.shard`.

    `tiles` holds the tiles' arrays stacked along one leading axis per dim of `stacked`
    (the batched dims the operator fixes), or, where the tiles differ in structure, a
    tuple of the tiles in grid order (each device then selects its tiles with
    `lax.switch`, and every array is replicated).
    """

    tiles: NamedLinop | tuple[NamedLinop, ...] = stacked_field()
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    batch: tuple[tuple[str, BatchDim], ...] = dims_field(kind="pairs")
    stacked: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")
    mesh: Mesh | None = eqx.field(static=True)
    base_device: Device | None = eqx.field(static=True)

    @property
    def name(self) -> str:
        parts = []
        for d, bd in self.batch:
            where = f" over {bd.axis}:{bd.devices}" if bd.axis is not None else ""
            parts.append(f"{d}/{bd.tile}{where}")
        return f"Batched[{', '.join(parts)}]"

    @property
    def children(self) -> tuple[NamedLinop, ...]:
        return self.tiles if isinstance(self.tiles, tuple) else (self.tiles,)

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def adjoint(self) -> NamedLinop:
        if isinstance(self.tiles, tuple):
            tiles = tuple(t.adjoint() for t in self.tiles)
        else:
            tiles = wrapped_adjoint(self.tiles)
        return dataclasses.replace(self, tiles=tiles, ishape=self.oshape, oshape=self.ishape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.adjoint().apply(y)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        r"""$\sum_t A_t^H\, \mathrm{inner}_t\, A_t$ when every batched dim is in the
        output (then $A = \sum_t Q_t^T A_t P_t$ with tiles writing disjoint outputs, and
        the cross terms $Q_s Q_t^T$ vanish): the tiles' own normals (a Toeplitz NUFFT's, a
        Gram `Dense`'s), batched and placed as the tiles are, each device summing its tiles
        and `psum` the devices. `inner` is split like the tiles' outputs; where tiles run
        past the end of a dim, a 0/1 weighting of the valid entries joins it (a padded
        tile's output there is cut off by the reassembly, not necessarily zero). Tiles along
        an input-only dim (partial sums), or padded tiles with an `inner` other than a
        `Diagonal`, get the default chain."""
        if not all(d in self.oshape for d, _ in self.batch) or ELLIPSIS in self.oshape:
            return None
        tiles = list(self.tiles) if isinstance(self.tiles, tuple) else self._unstacked()
        plan = self._plan()
        inners = [None if inner is None else inner.split(tile) for tile in plan]
        if any(tile.padded for tile in plan):
            out = self.oshape
            masked = [weighted(i, _valid(tile, out), out) for i, tile in zip(inners, plan)]
            if any(i is None for i in masked):
                return None
            inners = masked
        # each tile's normal in the batched normal's output dims (a tile picks fresh names
        # knowing only its own dims, and may pick a batched dim's)
        out = normal_oshape(self, None if inner is None else inner.oshape)
        normals = [with_oshape(t.normal(i), out) for t, i in zip(tiles, inners)]
        stacked = stack_tiles(normals, self.grid())
        if stacked is None:
            stacked = place(tuple(normals), self.mesh, ())
        else:
            stacked = place(stacked, self.mesh, self.grid_axes())
        renaming = normal_renaming(self, None if inner is None else inner.oshape)
        sizes = dict(self.sizes)
        sizes = {**sizes, **{renaming[d]: n for d, n in sizes.items() if d in self.ishape}}
        keep = set(self.ishape) | set(out)
        return dataclasses.replace(
            self,
            tiles=stacked,
            oshape=out,
            sizes=tuple((d, n) for d, n in sizes.items() if d in keep or d in dict(self.batch)),
        )

    def _unstacked(self) -> list[NamedLinop]:
        assert not isinstance(self.tiles, tuple)
        return unstack_tiles(self.tiles, self.grid())

    def _plan(self) -> list:
        """The tiles (`Tile`s, in grid order) the operator was split into."""
        batch, known = dict(self.batch), dict(self.sizes)
        sizes = {d: known[d] for d in self.stacked}
        tiles = {d: batch[d].tile for d in self.stacked}
        _, plan = tile_grid(sizes, tiles, dict(zip(self.stacked, self.grid())))
        return [tile for _, tile in plan]

    def coupling(self, dim: str) -> Coupling:
        """The coupling its tiles declare (every tile has the same dims)."""
        tiles = self.tiles if isinstance(self.tiles, tuple) else (self.tiles,)
        return children_coupling(tiles, dim)

    def split(self, tile: Mapping[str, slice]) -> NamedLinop:
        """Along dims it is not batched along (or that only the input sizes), every tile
        split alike: still batched. Along a batched dim, the tile of the reassembled
        operator (`unbatch`), which runs on one device."""
        tile = as_tile(tile)
        if any(d in self.stacked for d in tile):
            return unbatch(self).split(tile)
        if isinstance(self.tiles, tuple):
            parts = [t.split(tile) for t in self.tiles]
        else:
            parts = [t.split(tile) for t in unstack_tiles(self.tiles, self.grid())]
        tiles = stack_tiles(parts, self.grid()) if not isinstance(self.tiles, tuple) else None
        if tiles is None:
            tiles = place(tuple(parts), self.mesh, ())
        else:
            tiles = place(tiles, self.mesh, self.grid_axes())
        sizes = {d: tile_length(tile, d, n) for d, n in self.sizes}
        return dataclasses.replace(self, tiles=tiles, sizes=tuple(sizes.items()))

    def grid(self) -> tuple[int, ...]:
        """The tile counts along the stacked dims."""
        batch = dict(self.batch)
        counts = []
        for d in self.stacked:
            size = batch[d].size
            assert size is not None, "the operator fixes the size of a stacked dim"
            counts.append(batch[d].count(size))
        return tuple(counts)

    def grid_axes(self) -> tuple[str | None, ...]:
        """The mesh axis of each stacked grid axis of `tiles`."""
        batch = dict(self.batch)
        return tuple(batch[d].axis for d in self.stacked)

    # ----------------------------------------------------------------- application
    def apply(self, x: jax.Array) -> jax.Array:
        y = apply_compiled(self, x)
        if self.base_device is not None:
            y = gather(y, self.mesh, self.base_device)
        return y

    def _program(self, x: jax.Array) -> jax.Array:
        """Pad the batched input dims to whole tiles, run, cut the output back (see
        `_program`)."""
        batch = dict(self.batch)
        in_axes = {d: _axis(self.ishape, d, x.ndim) for d in batch if d in self.ishape}
        for d, bd in batch.items():
            if bd.size is None and d not in in_axes:  # e.g. the adjoint of a sum over d
                raise ValueError(
                    f"{self.name}: batched along dim {d!r}, whose size neither the operator "
                    f"nor its input {self.ishape} fixes (the adjoint of a sum over {d!r} "
                    f"broadcasts along it), so its tiles cannot be laid out; apply the "
                    f"unbatched operator here, or batch one that fixes the size of {d!r}."
                )
        sizes = {d: x.shape[in_axes[d]] if bd.size is None else bd.size for d, bd in batch.items()}
        counts = {d: bd.count(sizes[d]) for d, bd in batch.items()}
        x = pad_to(x, {axis: counts[d] * batch[d].tile for d, axis in in_axes.items()})
        run = _Runner(self, x.ndim, counts)
        y = run(x)
        out_axes = {d: _axis(self.oshape, d, y.ndim) for d in batch if d in self.oshape}
        y = cut_to(y, {axis: sizes[d] for d, axis in out_axes.items()})
        log_application(self, x, y)
        return y


@dataclasses.dataclass(frozen=True)
class _Runner:
    """The compiled program of one application: per-device body and its `shard_map`."""

    op: BatchedLinop
    ndim: int
    counts: dict[str, int]

    @property
    def batch(self) -> dict[str, BatchDim]:
        return dict(self.op.batch)

    def local_counts(self) -> dict[str, int]:
        return {d: self.counts[d] // bd.devices for d, bd in self.batch.items()}

    def __call__(self, x: jax.Array) -> jax.Array:
        mesh = self.op.mesh
        if mesh is None:
            return self.body(self.op.tiles, x)
        context = jax.sharding.get_abstract_mesh()
        if not context.empty and context != mesh.abstract_mesh:
            raise ValueError(
                f"`{self.op.name}` runs on its own mesh {dict(mesh.shape)} (Auto axes) but "
                f"is applied under `jax.set_mesh` with {context}; apply it outside that "
                f"context, or build the context mesh with Auto axes and pass it to `shard`."
            )
        x_spec = self.spec(self.op.ishape, self.ndim)
        y_spec = self.spec(self.op.oshape, self.out_struct(x).ndim)
        axes = () if isinstance(self.op.tiles, tuple) else self.op.grid_axes()

        def specs(arrays):
            return jax.tree.map(lambda a: grid_spec(a, axes) if axes else PartitionSpec(), arrays)

        return on_mesh(self.body, mesh, self.op.tiles, specs, x, x_spec, y_spec)

    def spec(self, shape: Dims, ndim: int) -> PartitionSpec:
        """Mesh axes at the positions of the batched dims of an array laid out by `shape`."""
        axes = {_axis(shape, d, ndim): bd.axis for d, bd in self.batch.items() if d in shape}
        return partition_spec(ndim, axes)

    def tile_input(self, x: jax.Array) -> jax.ShapeDtypeStruct:
        shape = list(x.shape)
        for d, bd in self.batch.items():
            if d in self.op.ishape:
                shape[_axis(self.op.ishape, d, self.ndim)] = bd.tile
        return jax.ShapeDtypeStruct(tuple(shape), x.dtype)

    def out_struct(self, x: jax.Array) -> jax.ShapeDtypeStruct:
        """Shape and dtype of one tile's output."""
        first = {d: 0 for d in self.batch}
        return eqx.filter_eval_shape(
            lambda t, v: self.apply_tile(t, first, v, local=False),
            self.op.tiles,
            self.tile_input(x),
        )

    def apply_tile(self, tiles, index: dict, x: jax.Array, local=True) -> jax.Array:
        """The tile at grid `index` of `tiles` (the operator's, or this device's block of
        them; the index local to the device unless `local` is False) applied to `x`."""
        if not isinstance(tiles, tuple):
            return tile_at(tiles, tuple(index[d] for d in self.op.stacked)).apply(x)
        flat = 0
        for d in self.op.stacked:
            offset = self.device_index(d) * self.local_counts()[d] if local else 0
            flat = flat * self.counts[d] + offset + index[d]
        dtype = jnp.result_type(*(jax.eval_shape(t.apply, x).dtype for t in tiles))
        axes = self.mesh_axes() if local else ()
        branches = [_branch(k, dtype, axes) for k in range(len(tiles))]
        return jax.lax.switch(flat, branches, tiles, x)

    def mesh_axes(self) -> tuple[str, ...]:
        """The mesh axes of the batched dims (none without a mesh; with one, every
        batched dim has its axis)."""
        if self.op.mesh is None:
            return ()
        return tuple(bd.axis for bd in self.batch.values() if bd.axis is not None)

    def device_index(self, d: str):
        bd = self.batch[d]
        if self.op.mesh is None or bd.devices == 1:
            return 0
        return jax.lax.axis_index(bd.axis)

    def body(self, tiles, x: jax.Array) -> jax.Array:
        """One device: loop over its tiles, add each output into its block, reduce."""
        local = self.local_counts()
        names = list(self.batch)
        total = math.prod(local.values())
        ishape, oshape = self.op.ishape, self.op.oshape

        def index_of(flat) -> dict:
            index, rest = {}, flat
            for d in reversed(names):
                index[d], rest = rest % local[d], rest // local[d]
            return index

        def tile_output(flat):
            index = index_of(flat)
            xt = x
            for d in names:
                if d in ishape:
                    axis, b = _axis(ishape, d, x.ndim), self.batch[d].tile
                    xt = jax.lax.dynamic_slice_in_dim(xt, index[d] * b, b, axis)
            return index, self.apply_tile(tiles, index, xt)

        y = tile_output(0)[1]
        if total > 1:

            def step(acc, flat):
                index, yt = tile_output(flat)
                starts = [jnp.int32(0)] * yt.ndim
                for d in names:
                    if d in oshape:
                        starts[_axis(oshape, d, yt.ndim)] = index[d] * self.batch[d].tile
                block = jax.lax.dynamic_slice(acc, starts, yt.shape) + yt
                return jax.lax.dynamic_update_slice(acc, block, starts), None

            # the first tile's output, padded to the device's block, starts the sum (and
            # gives the carry the same device-varying type as every tile's output)
            widths = [(0, 0)] * y.ndim
            for d in names:
                if d in oshape:
                    widths[_axis(oshape, d, y.ndim)] = (0, (local[d] - 1) * self.batch[d].tile)
            flats = jnp.arange(1, total, dtype=jnp.int32)
            y = jax.lax.scan(step, jnp.pad(y, widths), flats)[0]
        summed = tuple(
            bd.axis for d, bd in self.batch.items() if d not in oshape and bd.axis is not None
        )
        if self.op.mesh is not None and summed:
            # the barrier keeps XLA:CPU from folding a constant (e.g. all-zero) block into
            # the all-reduce, which crashes its compiler (jax 0.10 and 0.12)
            y = jax.lax.psum(jax.lax.optimization_barrier(y), summed)
        return y


def gather(y: jax.Array, mesh: Mesh | None, device: Device) -> jax.Array:
    """`y` gathered: replicated across `mesh` inside `jit` (one program cannot move data
    off its devices), and on `device` when applied eagerly."""
    if mesh is not None:
        y = jax.lax.with_sharding_constraint(y, NamedSharding(mesh, PartitionSpec()))
    return jax.device_put(y, device)


def _branch(k: int, dtype, axes: tuple[str, ...]) -> Callable:
    """Branch `k` of the tile switch: tile `k`, in the common dtype, varying over the mesh
    `axes` like every other branch (a zero block does not vary)."""
    return lambda ops, v: _varying(ops[k].apply(v).astype(dtype), axes)


def _varying(y: jax.Array, axes: tuple[str, ...]) -> jax.Array:
    """`y`, typed as varying over the mesh `axes` (whether or not it did)."""
    if not axes:
        return y
    return y + jax.lax.pcast(jnp.zeros((), y.dtype), axes, to="varying")


def _axis(shape: Dims, dim: str, ndim: int) -> int:
    axis = axis_of(shape, dim)
    return axis + ndim if axis < 0 else axis


def _valid(tile: Tile, oshape: Dims) -> jax.Array:
    """The 0/1 weighting of the entries of `tile` inside its dims (1 up to each padded
    dim's size, 0 past it), its axes aligned to `oshape` (size 1 along unpadded dims)."""
    weight = jnp.ones([1] * len(oshape), jnp.float32)
    for d, size in tile.padded.items():
        if d in oshape:
            s, axis = tile[d], oshape.index(d)
            valid = (jnp.arange(s.start, s.stop) < size).astype(jnp.float32)
            weight = weight * valid.reshape([-1 if a == axis else 1 for a in range(len(oshape))])
    return weight
