r"""Grid splitting by domain decomposition: an operator run on slabs of a dim it couples.

A dim that an operator couples (an FFT's image axis) cannot be tiled: every output entry
needs every input entry. Split by *domain decomposition* instead: each of the $D$ devices
of a mesh axis holds a slab of $B = \lceil N / D \rceil$ entries of the dim (the last
slabs zero-padded, see `_halo` and `_dfft`), and the operator runs leaf by leaf, in one
`jax.shard_map`, on the slabs:

- a leaf that applies the split dim entry by entry (`Coupling.NONE`: coil maps, masks,
  weights) runs on each device's slab, its arrays split to the slab (`split`);
- a leaf that transforms the split dim (an `FFT` or its adjoint) is a distributed FFT:
  one `all_to_all` transposes the slabs so that the dim is whole and another transformed
  dim is split (`_dfft.fft_split`); the split then moves to that dim, and later leaves
  see it split there (the output of a Cartesian SENSE operator split along `Nx` is split
  along `Ky`).

The leaves only declare their coupling; this module alone communicates. The adjoint runs
the stages backwards (each local piece's adjoint, each transpose undone), and the normal
$A^H A$ runs both in one program, with no gather in between. Other couplings (halos,
resizes) are refused with an error naming the leaf, for now.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec

from .._core import Adjoint, Chain, Coupling, Identity, NamedLinop, Tile, all_dims, dims_field
from .._dims import Dims, axis_of, fmt
from ..linops._fft import _ADJOINT_NORM, FFT
from ._dfft import fft_split
from ._tile_arrays import place, stack_tiles


class _Local(eqx.Module):
    """A leaf on each device's slab: `tiles` is the leaf split to each slab, stacked on a
    leading device axis (of size 1 for an array every slab shares)."""

    tiles: NamedLinop
    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)

    def adjoint(self) -> _Local:
        tiles = self.tiles.linop if isinstance(self.tiles, Adjoint) else Adjoint(self.tiles)
        return _Local(tiles, self.dim_out, self.dim_in)

    def tile(self, arrays=None) -> NamedLinop:
        """This device's piece (inside `shard_map`, `arrays` its blocks), or the first."""
        own, static = eqx.partition(self.tiles, eqx.is_array)
        own = own if arrays is None else arrays
        return eqx.combine(jax.tree.map(lambda a: a[0], own), static)


class _Transform(eqx.Module):
    """A distributed FFT: `fft` (forward, or its adjoint with `inverse`) over its grid dims,
    the split moving from `dim_in` to `dim_out` (the output name of `trade`, the transformed
    dim it trades places with)."""

    fft: FFT
    inverse: bool = eqx.field(static=True)
    dim_in: str = eqx.field(static=True)
    trade: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)

    def adjoint(self) -> _Transform:
        # back: the split returns from `dim_out` to `dim_in`, trading with its image
        image = dict(zip(*self._grid()))[self.dim_in]
        return _Transform(self.fft, not self.inverse, self.dim_out, image, self.dim_in)

    def _grid(self) -> tuple[Dims, Dims]:
        """The transformed dims at the input and the output of this stage."""
        return _transformed(self.fft, self.inverse)

    def run(self, x: jax.Array, n: int, axis_name: str) -> jax.Array:
        dims_in, _ = self._grid()
        ndim = len(dims_in)
        first = x.ndim - ndim
        split, trade = first + dims_in.index(self.dim_in), first + dims_in.index(self.trade)
        sizes = tuple(n if a == split else s for a, s in enumerate(x.shape))
        norm = _ADJOINT_NORM[self.fft.norm] if self.inverse else self.fft.norm
        y, _ = fft_split(
            x, tuple(range(first, x.ndim)), split, axis_name, sizes, inverse=self.inverse,
            centered=self.fft.centered, norm=norm, out_split=trade,
        )  # fmt: skip
        return y


Stage = _Local | _Transform


class GridSplitLinop(NamedLinop):
    """An operator run on slabs of a dim it couples, across the devices of one mesh axis
    (see the module doc); build it with `create_batched_linop(A, BatchSpec({dim: tile},
    device_matrix=devices))` where `A` couples `dim`.

    `stages` run in order inside one `shard_map`; the input is split along `dim`, the
    output along the dim the split ends on. `sizes` holds the operator's dim sizes (the
    split dims' global sizes included).
    """

    stages: tuple[Stage, ...]
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")
    mesh: Mesh = eqx.field(static=True)

    @property
    def name(self) -> str:
        axis, devices = next(iter(self.mesh.shape.items()))
        return f"GridSplit[{self.stages[0].dim_in} over {axis}:{devices}]"

    @property
    def axis(self) -> str:
        return next(iter(self.mesh.shape))

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def coupling(self, dim: str) -> Coupling:
        return Coupling.GLOBAL

    def adjoint(self) -> NamedLinop:
        stages = tuple(s.adjoint() for s in reversed(self.stages))
        return dataclasses.replace(self, stages=stages, ishape=self.oshape, oshape=self.ishape)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.adjoint().apply(y)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """$A^H A$ as one program: the stages, then their adjoints (no gather between)."""
        if inner is not None:
            return None
        back = tuple(s.adjoint() for s in reversed(self.stages))
        return dataclasses.replace(self, stages=self.stages + back, oshape=self.ishape)

    def split(self, tile) -> NamedLinop:
        raise ValueError(
            f"`{self.name}` is split across its devices already; split the operator before "
            f"building it (a list of BatchSpecs nests splits)."
        )

    def apply(self, x: jax.Array) -> jax.Array:
        devices = self.mesh.devices.size
        shapes = self._shapes(x)
        first = _axis(self.ishape, self.stages[0].dim_in, x.ndim)
        x = _pad(x, first, devices)
        arrays = tuple(s.tiles if isinstance(s, _Local) else None for s in self.stages)
        arrays, static = eqx.partition(arrays, eqx.is_array)
        specs = jax.tree.map(lambda a: PartitionSpec(self.axis if a.shape[0] > 1 else None), arrays)
        out_shape, out_axis = shapes[-1]

        def body(arrays, block):
            pieces = eqx.combine(arrays, static)
            for stage, piece, (shape, axis) in zip(self.stages, pieces, shapes):
                if isinstance(stage, _Local):
                    block = stage.tile(eqx.filter(piece, eqx.is_array))(block)
                else:
                    block = stage.run(block, shape[axis], self.axis)
            return block

        y = jax.shard_map(
            body,
            mesh=self.mesh,
            in_specs=(specs, _spec(x.ndim, first, self.axis)),
            out_specs=_spec(len(out_shape), out_axis, self.axis),
        )(arrays, x)
        return jax.lax.slice_in_dim(y, 0, out_shape[out_axis], axis=out_axis)

    def _shapes(self, x: jax.Array) -> list[tuple[tuple[int, ...], int]]:
        """The global (unpadded) shape at the input of each stage and the axis split there,
        then the output's (traced shapes only: one piece per stage is evaluated)."""
        devices = self.mesh.devices.size
        shape, axis = tuple(x.shape), _axis(self.ishape, self.stages[0].dim_in, x.ndim)
        out = []
        for stage in self.stages:
            out.append((shape, axis))
            if isinstance(stage, _Transform):
                dims, _ = stage._grid()
                axis = len(shape) - len(dims) + dims.index(stage.trade)
                continue
            block = list(shape)
            block[axis] = -(-shape[axis] // devices)
            piece = stage.tile()
            local = jax.eval_shape(piece, jax.ShapeDtypeStruct(tuple(block), x.dtype))
            n, axis = shape[axis], _axis(piece.oshape, stage.dim_out, local.ndim)
            shape = tuple(n if a == axis else s for a, s in enumerate(local.shape))
        out.append((shape, axis))
        return out


def grid_split(A: NamedLinop, dim: str, size: int, mesh: Mesh) -> GridSplitLinop:
    """`A` split along `dim` (of `size` entries) across the one axis of `mesh`: its leaves
    (a Chain's, in order) become stages; a ValueError names a leaf whose coupling of the
    split dim this cannot do yet."""
    devices = mesh.devices.size
    stages, split, n = [], dim, size
    for leaf in A.flatten() if isinstance(A, Chain) else (A,):
        if isinstance(leaf, Identity):  # a renaming, position by position
            split = leaf.oshape[leaf.ishape.index(split)]
            continue
        fft, inverse = _fft_of(leaf)
        if fft is not None and split in (fft.dual_shape if inverse else fft.primal_shape):
            dims_in, dims_out = _transformed(fft, inverse)
            others = [d for d in dims_in if d != split]
            if not others:
                raise ValueError(
                    f"`create_batched_linop`: {leaf.name} transforms only the split dim "
                    f"{split!r}; a distributed FFT needs a second transformed dim to trade with."
                )
            trade = others[0]
            stages.append(_Transform(fft, inverse, split, trade, dims_out[dims_in.index(trade)]))
            split, n = stages[-1].dim_out, _size_of(A, trade, dims_in, dims_out)
            continue
        stages.append(_local(leaf, split, n, devices, mesh))
    return GridSplitLinop(
        stages=tuple(stages), ishape=A.ishape, oshape=A.oshape, sizes=_sizes(A), mesh=mesh
    )


def _local(leaf: NamedLinop, split: str, n: int, devices: int, mesh: Mesh) -> _Local:
    """The stage of a leaf that applies the split dim entry by entry, or a ValueError."""
    if split not in all_dims(leaf):
        tiles = stack_tiles([leaf] * devices, (devices,))
        assert tiles is not None, "identical tiles stack"
        return _Local(place(tiles, mesh, (next(iter(mesh.shape)),)), split, split)
    coupling = leaf.coupling(split)
    if coupling != Coupling.NONE or split not in leaf.oshape or split not in leaf.ishape:
        what = "sums over it" if coupling == Coupling.NONE else f"couples it ({coupling})"
        raise ValueError(
            f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)}) "
            f"{what}: splitting the grid dim {split!r} across devices does not cover it yet "
            f"(entry-by-entry operators and FFTs do)."
        )
    block = -(-n // devices)
    padded = {split: n} if block * devices != n else {}
    slabs = [Tile({split: slice(i * block, (i + 1) * block)}, padded) for i in range(devices)]
    parts = [leaf.split(tile) for tile in slabs]
    tiles = stack_tiles(parts, (devices,))
    if tiles is None:
        raise ValueError(
            f"`create_batched_linop`: the slabs of {leaf.name} along {split!r} differ in "
            f"structure, so they cannot run as one program."
        )
    return _Local(place(tiles, mesh, (next(iter(mesh.shape)),)), split, split)


def _fft_of(leaf: NamedLinop) -> tuple[FFT | None, bool]:
    """The FFT a leaf is (`inverse` False) or the adjoint of (True), else None."""
    if isinstance(leaf, FFT):
        return leaf, False
    if isinstance(leaf, Adjoint) and isinstance(leaf.linop, FFT):
        return leaf.linop, True
    return None, False


def _transformed(fft: FFT, inverse: bool) -> tuple[Dims, Dims]:
    """The dims an FFT (or its adjoint, `inverse`) transforms, at its input and output."""
    return (fft.dual_shape, fft.primal_shape) if inverse else (fft.primal_shape, fft.dual_shape)


def _size_of(A: NamedLinop, trade: str, dims_in: Dims, dims_out: Dims) -> int:
    """The size of the dim the split moves to: `A` fixes it (under either name)."""
    n = A.size(trade) or A.size(dims_out[dims_in.index(trade)])
    if n is None:
        raise ValueError(
            f"`create_batched_linop`: {A.name} does not fix the size of dim {trade!r}, "
            f"which a distributed FFT moves the split to."
        )
    return n


def _sizes(A: NamedLinop) -> tuple[tuple[str, int], ...]:
    return tuple((d, n) for d in sorted(all_dims(A)) if (n := A.size(d)) is not None)


def _axis(shape: Dims, dim: str, ndim: int) -> int:
    """The array axis of `dim` in an array of `ndim` axes laid out by `shape`."""
    axis = axis_of(shape, dim)
    return axis + ndim if axis < 0 else axis


def _spec(ndim: int, axis: int, name: str) -> PartitionSpec:
    return PartitionSpec(*(name if a == axis else None for a in range(ndim)))


def _pad(x: jax.Array, axis: int, devices: int) -> jax.Array:
    """`x` zero-padded at the end of `axis` to a multiple of `devices` blocks."""
    n = x.shape[axis]
    extra = -(-n // devices) * devices - n
    if not extra:
        return x
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, extra)
    return jnp.pad(x, widths)
