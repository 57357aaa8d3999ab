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
  along `Ky`);
- a leaf that couples the split dim within a halo of $k$ entries (`Coupling.halo(k)`: a
  `Convolution`) runs *itself* on each device's slab extended by $k$ entries from each
  neighbour (`_halo.halo_extend`: wrapped around the ends of the dim when the halo is
  periodic, zeros otherwise), and the interior $B$ entries of its output are kept. This
  is exact for an operator shift invariant along the dim (see `jaxlinops._core._coupling`:
  declaring the halo is all an operator does), so no per-operator code is needed; one
  that fixes the dim's size (its arrays are indexed along it) is refused. The adjoint
  applies the operator's adjoint to the slab zero-padded by $k$ on each side and adds the
  halos back into the neighbours (`_halo.halo_reduce`);
- a `Pad` or `Crop` that resizes the split dim moves its edge slabs by a slab transpose
  there and back (`_dfft.transpose_split`): the split trades places with the largest dim
  held whole, the split dim (now whole) is padded or cropped on each device, and the
  split returns to it, in blocks of $\lceil N_\text{out} / D\rceil$. Its other resized
  dims, held whole, are cropped before the transposes or padded after them (the
  transposes then move the smaller array). Two `all_to_all`s of the slab: a direct
  re-blocking with `ppermute`s would move less, but its sources depend on $N$, $D$ and
  the resize in ways that need a general ragged exchange.

No stage reads the padding entries of its input blocks (they may hold anything: the
halo stages zero them, the transposes drop them, entry-by-entry leaves keep them apart).
The leaves only declare their coupling; this module alone communicates. The adjoint runs
the stages backwards (each local piece's adjoint, each transpose undone), and the normal
$A^H A$ runs both in one program, with no gather in between. Other couplings (gridding
onto a fixed grid, operators that sum over or reshape the split dim) are refused with an
error naming the leaf.

A dim the operator applies entry by entry (the coils of a SENSE operator) can be split
with the grid (`BatchAxis`): across a second mesh axis named after it, each device holding
a (slab, block of coils), the stages' collectives staying on the slab axis (they act
within each row of devices of one block) and a `psum` across the coil axis after the
leaf that sums the coils; or in a loop on each device (nested specs), the stages run
once per block (`_looped`). Only entry-by-entry leaves are split along that dim.
"""

from __future__ import annotations

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from .._core import (
    Adjoint,
    Chain,
    Coupling,
    Identity,
    NamedLinop,
    Tile,
    all_dims,
    default_normal,
    dims_field,
)
from .._dims import Dims, axis_of, fmt
from ..functional._pad import pad_widths
from ..linops._fft import _ADJOINT_NORM, FFT
from ..linops._pad import AbstractCenterResize
from ._batched import onto_mesh
from ._dfft import fft_split, transpose_split
from ._grid_points import Points, points_stage
from ._halo import _Layout, _valid, halo_extend, halo_reduce
from ._log import logger
from ._tile_arrays import grid_spec, place, stack_tiles, tile_at

Shape = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class BatchAxis:
    """A dim applied entry by entry (coils) split with the grid into `blocks` blocks of
    `block` of its `size` entries, the last ones zero-padded: `across` the mesh's second
    axis (named after it), one block per device, else in a loop on each device."""

    dim: str
    size: int
    blocks: int
    across: bool = True

    @property
    def block(self) -> int:
        return -(-self.size // self.blocks)


class _Local(eqx.Module):
    """A leaf on each device's slab: `tiles` is the leaf split to each slab, stacked on a
    leading device axis (of size 1 for an array every slab shares); with `batch`, split to
    each (slab, block of the batch dim), stacked on two leading axes `[slabs, blocks]`."""

    tiles: NamedLinop
    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)
    batch: BatchAxis | None = eqx.field(static=True, default=None)

    def adjoint(self) -> _Local:
        tiles = self.tiles.linop if isinstance(self.tiles, Adjoint) else Adjoint(self.tiles)
        return _Local(tiles, self.dim_out, self.dim_in, self.batch)

    def tile(self) -> NamedLinop:
        """This device's piece (inside `shard_map`, where the arrays are its blocks)."""
        return tile_at(self.tiles, (0,) * (1 if self.batch is None else 2))

    def at(self, j: jax.Array) -> _Local:
        """The stage of block `j` of a batch dim run in a loop (its tiles along the second
        axis, the one kept)."""

        def pick(a):
            return jax.lax.dynamic_slice_in_dim(a, j, 1, axis=1) if a.shape[1] > 1 else a

        own, static = eqx.partition(self.tiles, eqx.is_array)
        return dataclasses.replace(self, tiles=eqx.combine(jax.tree.map(pick, own), static))

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        y = self.tile()(x)
        b, dims = self.batch, self.tiles
        if b is not None and b.across and b.dim in dims.ishape and b.dim not in dims.oshape:
            return jax.lax.psum(y, b.dim)  # each device summed its block of the batch dim
        return y

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        piece, b = self.tile(), self.batch
        block = _with(shape, axis, -(-shape[axis] // devices))
        if b is not None and b.dim in piece.ishape:
            block = _with(block, _axis(piece.ishape, b.dim, len(block)), b.block)
        local = jax.eval_shape(piece, jax.ShapeDtypeStruct(block, dtype))
        out = _axis(piece.oshape, self.dim_out, local.ndim)
        shape = _with(tuple(local.shape), out, shape[axis])
        if b is not None and b.dim in piece.oshape:
            shape = _with(shape, _axis(piece.oshape, b.dim, len(shape)), b.size)
        return shape, out


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

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        dims_in, _ = self._grid()
        first = x.ndim - len(dims_in)
        trade = first + dims_in.index(self.trade)
        norm = _ADJOINT_NORM[self.fft.norm] if self.inverse else self.fft.norm
        y, _ = fft_split(
            x, tuple(range(first, x.ndim)), axis, axis_name, shape, inverse=self.inverse,
            centered=self.fft.centered, norm=norm, out_split=trade,
        )  # fmt: skip
        return y

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        dims, _ = self._grid()
        return shape, len(shape) - len(dims) + dims.index(self.trade)


class _Halo(eqx.Module):
    r"""A leaf coupling the split dim within a halo of `width` entries, run on each
    device's extended slab. Forward (`reduce` False): extend by the halos, apply `leaf`,
    keep the interior $B$ entries; adjoint (`reduce` True, `leaf` the adjoint): zero the
    padding entries, pad by `width` zeros on each side, apply `leaf`, add the halos into
    the neighbours. The input's padding entries are never read."""

    leaf: NamedLinop
    width: int = eqx.field(static=True)
    periodic: bool = eqx.field(static=True)
    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)
    reduce: bool = eqx.field(static=True)

    def adjoint(self) -> _Halo:
        return dataclasses.replace(
            self, leaf=self.leaf.H, dim_in=self.dim_out, dim_out=self.dim_in, reduce=not self.reduce
        )

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        w, n = self.width, shape[axis]
        if self.reduce:
            x = jnp.pad(_masked(x, axis, n, axis_name), _widths(x.ndim, axis, (w, w)))
        else:
            x = halo_extend(x, axis, w, axis_name, n, self.periodic)
        y = self.leaf(x)
        out = _axis(self.leaf.oshape, self.dim_out, y.ndim)
        if self.reduce:
            return halo_reduce(y, out, w, axis_name, n, self.periodic)
        return jax.lax.slice_in_dim(y, w, y.shape[out] - w, axis=out)

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        out_shape, out = _global_out(self.leaf, self.dim_out, shape, dtype)
        if out_shape[out] != shape[axis]:
            raise ValueError(
                f"`create_batched_linop`: {self.leaf.name} declares a halo along "
                f"{self.dim_in!r} but maps its {shape[axis]} entries to {out_shape[out]} "
                f"along {self.dim_out!r}; splitting a dim by halo exchange needs an operator "
                f"that keeps its size (shift invariant)."
            )
        return out_shape, out


class _Resize(eqx.Module):
    """A `Pad` or `Crop` resizing the split dim (`dim_in` -> `dim_out`): the split trades
    places with the largest dim held whole, the dim is resized whole, the split returns
    (see the module doc). Its other resized dims are cropped before, padded after."""

    resize: AbstractCenterResize
    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)

    def adjoint(self) -> _Resize:
        resize = self.resize.H  # a Pad's adjoint is a Crop, and back
        assert isinstance(resize, AbstractCenterResize)
        return _Resize(resize, self.dim_out, self.dim_in)

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        r = self.resize
        first = x.ndim - len(r.in_size)
        sizes = dict(enumerate(zip(r.in_size, r.out_size), start=first))
        n_in, n_out = sizes.pop(axis)
        if n_in == n_out:  # only whole dims change size
            return _resize(x, sizes)
        grows = n_out > n_in  # a Pad grows every dim, a Crop shrinks every dim
        if not grows:
            x = _resize(x, sizes)
        whole = [a for a in range(x.ndim) if a != axis]
        if not whole:
            raise ValueError(
                f"`create_batched_linop`: {r.name} resizes the split dim {self.dim_in!r} of "
                f"a 1-D array; moving its slabs needs a second dim held whole to trade places "
                f"with (split a batch of at least one more dim, or do not split this dim)."
            )
        trade = max(whole, key=lambda a: x.shape[a])
        size = x.shape[trade]
        x = transpose_split(x, axis, trade, axis_name, _with(x.shape, axis, n_in))
        x = _resize(x, {axis: (n_in, n_out)})
        x = transpose_split(x, trade, axis, axis_name, _with(x.shape, trade, size))
        return _resize(x, sizes) if grows else x

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        return _global_out(self.resize, self.dim_out, shape, dtype)


class _Rename(eqx.Module):
    """A renaming of the dims (an `Identity` between different dims): the split dim
    `dim_in` is called `dim_out` from here on; the data does not move."""

    dim_in: str = eqx.field(static=True)
    dim_out: str = eqx.field(static=True)

    def adjoint(self) -> _Rename:
        return _Rename(self.dim_out, self.dim_in)

    def run(self, x: jax.Array, shape: Shape, axis: int, axis_name: str) -> jax.Array:
        return x

    def out(self, shape: Shape, axis: int, devices: int, dtype) -> tuple[Shape, int]:
        return shape, axis


Stage = _Local | _Transform | _Halo | _Resize | _Rename | Points


class GridSplitLinop(NamedLinop):
    """An operator run on slabs of a dim it couples, across the devices of one mesh axis
    (see the module doc); build it with `create_batched_linop(A, BatchSpec({dim: tile},
    device_matrix=devices))` where `A` couples `dim`. A second mesh axis, named after a
    dim `A` applies entry by entry (coils), splits that dim too, in blocks (see
    `grid_split`).

    `stages` run in order inside one `shard_map`; the input is split along `dim`, the
    output along the dim the split ends on (and both along the batch dim where they have
    it). `sizes` holds the operator's dim sizes (the split dims' global sizes included).
    `normal_split` is the split of the operator's own structured normal (kept by the
    adjoint, `adjointed`, whose normal is not it).
    """

    stages: tuple[Stage, ...]
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")
    mesh: Mesh = eqx.field(static=True)
    normal_split: GridSplitLinop | None = None
    adjointed: bool = eqx.field(static=True, default=False)
    loop: BatchAxis | None = eqx.field(static=True, default=None)

    @property
    def name(self) -> str:
        b, devices = self.batch, self.mesh.shape[self.axis]
        also = "" if b is None else f", {b.dim} over {b.dim}:{b.blocks}"
        if self.loop is not None:
            also = f", {self.loop.dim}/{self.loop.block} in a loop"
        return f"GridSplit[{self.stages[0].dim_in} over {self.axis}:{devices}{also}]"

    @property
    def axis(self) -> str:
        """The mesh axis holding the slabs (the first)."""
        return self.mesh.axis_names[0]

    @property
    def batch(self) -> BatchAxis | None:
        """The batch dim split across the mesh's second axis, if it has one."""
        return _batch_of(self.mesh, self.size)

    def size(self, dim: str) -> int | None:
        return dict(self.sizes).get(dim)

    def coupling(self, dim: str) -> Coupling:
        return Coupling.GLOBAL

    def adjoint(self) -> GridSplitLinop:
        stages = tuple(s.adjoint() for s in reversed(self.stages))
        flipped = not self.adjointed
        return dataclasses.replace(
            self, stages=stages, ishape=self.oshape, oshape=self.ishape, adjointed=flipped
        )

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self.adjoint().apply(y)

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """$A^H A$: the split of the operator's own structured normal (`normal_split`: a
        Toeplitz embedding, an FFT's identity), else one program of the stages and then
        their adjoints (no gather between)."""
        if inner is not None:
            return None
        if self.normal_split is not None and not self.adjointed:
            return self.normal_split
        back = tuple(s.adjoint() for s in reversed(self.stages))
        return dataclasses.replace(
            self, stages=self.stages + back, oshape=self.ishape, normal_split=None
        )

    def split(self, tile) -> NamedLinop:
        dims = ", ".join(repr(d) for d in tile)
        raise ValueError(
            f"`{self.name}` cannot be split along dim(s) {dims}: it is split across its "
            f"devices already; split the operator before building it (a list of BatchSpecs "
            f"nests splits)."
        )

    def apply(self, x: jax.Array) -> jax.Array:
        return _apply_compiled(self, onto_mesh(x, self.mesh))

    def _apply(self, x: jax.Array) -> jax.Array:
        """The stages in one `shard_map`, the input padded to whole slabs and blocks, the
        output cut back."""
        shapes = self._shapes(x)
        first = _axis(self.ishape, self.stages[0].dim_in, x.ndim)
        x_axes = self._split_axes(self.ishape, first, x.ndim)
        for a, name in x_axes.items():
            x = _pad(x, a, self.mesh.shape[name])
        arrays, static = eqx.partition(self.stages, eqx.is_array)
        specs = tuple(_specs(s, a, self.axis) for s, a in zip(self.stages, arrays))
        out_shape, out_axis = shapes[-1]
        y_axes = self._split_axes(self.oshape, out_axis, len(out_shape))
        loop, loop_axes = self.loop, (None, None)
        if loop is not None:  # its dim: padded to whole blocks, not split across devices
            loop_axes = tuple(
                _axis(dims, loop.dim, ndim) if loop.dim in dims else None
                for dims, ndim in ((self.ishape, x.ndim), (self.oshape, len(out_shape)))
            )
            if loop_axes[0] is not None:
                x = _pad(x, loop_axes[0], loop.blocks)

        def body(arrays, block):
            stages = eqx.combine(arrays, static)
            if loop is not None:
                return _looped(stages, shapes, block, loop, loop_axes, self.axis)
            return _run(stages, shapes, block, self.axis)

        y = jax.shard_map(
            body,
            mesh=self.mesh,
            in_specs=(specs, _spec(x.ndim, x_axes)),
            out_specs=_spec(len(out_shape), y_axes),
        )(arrays, x)
        for a in (*y_axes, *(a for a in loop_axes[1:] if a is not None)):
            y = jax.lax.slice_in_dim(y, 0, out_shape[a], axis=a)
        return y

    def _split_axes(self, shape: Dims, axis: int, ndim: int) -> dict[int, str]:
        """The mesh axis of each split array axis of an input or output laid out by `shape`
        (`ndim` axes, split along `axis`): the slabs', and the batch dim's where it has it."""
        axes, b = {axis: self.axis}, self.batch
        if b is not None and b.dim in shape:
            axes[_axis(shape, b.dim, ndim)] = b.dim
        return axes

    def _shapes(self, x: jax.Array) -> list[tuple[Shape, int]]:
        """The global (unpadded) shape at the input of each stage and the axis split there,
        then the output's (traced shapes only)."""
        devices = self.mesh.shape[self.axis]
        shape, axis = tuple(x.shape), _axis(self.ishape, self.stages[0].dim_in, x.ndim)
        out = []
        for stage in self.stages:
            out.append((shape, axis))
            shape, axis = stage.out(shape, axis, devices, x.dtype)
        out.append((shape, axis))
        return out


@eqx.filter_jit
def _apply_compiled(op: GridSplitLinop, x: jax.Array) -> jax.Array:
    """One compiled program per operator structure and input shape, as for a
    `BatchedLinop`: eager calls do not run the `shard_map` body op by op (inside a
    caller's `jit` it is inlined)."""
    return op._apply(x)


def grid_split(
    A: NamedLinop,
    dim: str,
    size: int,
    mesh: Mesh,
    normal: bool = True,
    loop: BatchAxis | None = None,
) -> GridSplitLinop:
    r"""`A` split along `dim` (of `size` entries) across the first axis of `mesh`: its
    leaves (a Chain's, in order; a NUFFT's steps) become stages; a ValueError names a leaf
    whose coupling of the split dim this cannot do yet, and the dim asked for. With
    `normal`, a structured `A.N` is split too (see `_structured_normal`). A dim of the
    output only (the image of an adjoint NUFFT) is split as the adjoint of `A.H` split
    there.

    A second mesh axis, named after a dim `A` applies entry by entry (coils, of a size `A`
    fixes), splits that dim too, in one block of $\lceil C / D_c \rceil$ entries per
    device along it (the last blocks zero-padded): every device holds a (slab, block).
    The stages communicate along the first axis only (within each row of devices of one
    block); a leaf that has the batch dim only in its output (coil maps) makes its block
    from an input every block shares, one that has it only in its input (their adjoint)
    sums its block, and a `psum` across the second axis adds the blocks' sums (zero
    padded blocks add zero). With `loop` (a batch dim not `across` the mesh: nested
    specs) the blocks run in a loop on each device instead (see `_looped`)."""
    if dim not in A.ishape and dim in A.oshape:  # split an output: the adjoint's input
        try:
            return grid_split(A.H, dim, size, mesh, normal=False, loop=loop).adjoint()
        except ValueError as error:
            raise ValueError(
                f"{error} ({A.name} is split along {dim!r}, a dim of its output only, as "
                f"the adjoint of {A.H.name} split there)"
            ) from None
    batch = loop or _batch_of(mesh, A.size)
    stages, split, n, known = [], dim, size, [A]
    leaves = list(A.flatten() if isinstance(A, Chain) else (A,))
    while leaves:
        leaf = leaves.pop(0)
        couples = split in all_dims(leaf) and leaf.coupling(split) != Coupling.NONE
        try:
            steps = leaf.decompose() if couples else None
        except ValueError as error:  # an operator with no steps to run on slabs says why
            raise ValueError(f"{error} (splitting along the grid dim {dim!r})") from None
        if steps is not None:  # a NUFFT runs step by step
            leaves[:0], known = steps.flatten(), known + [steps]
            continue
        try:
            split, n = _add_stage(stages, known, leaf, split, n, mesh, batch)
            _check_batch(stages[-1], leaf, batch)
        except ValueError as error:
            if split == dim:
                raise
            raise ValueError(
                f"{error} (splitting along the grid dim {dim!r}, which the operators before "
                f"{leaf.name} move to {split!r})"
            ) from None
    return GridSplitLinop(
        stages=tuple(stages), ishape=A.ishape, oshape=A.oshape, sizes=_sizes(A), mesh=mesh,
        normal_split=_structured_normal(A, dim, size, mesh, loop) if normal else None,
        loop=loop,
    )  # fmt: skip


def _structured_normal(
    A: NamedLinop, dim: str, size: int, mesh: Mesh, loop: BatchAxis | None
) -> GridSplitLinop | None:
    """The split of `A.N` where its folding rules give it a structure of its own (a
    NUFFT's Toeplitz embedding, $F^H F = I$), built now, as its arrays (a Toeplitz kernel)
    are split like the operator's; None where `A.N` is the plain chain `A`, `A^H`. A
    structured normal that cannot be split is said in a warning: the stages and their
    adjoints are exact but slower."""
    try:
        N = A.normal()
        if jax.tree.structure(N) == jax.tree.structure(default_normal(A)):
            return None
        return grid_split(N, dim, size, mesh, normal=False, loop=loop)
    except ValueError as error:
        logger.warning(
            "`create_batched_linop`: the normal of %s keeps no structure: %s", A.name, error
        )
        return None


def _add_stage(stages: list, known: list, leaf, split: str, n: int, mesh: Mesh, batch):
    """Append the stage of `leaf` (at split dim `split` of `n` entries) to `stages`; return
    where the split is after it: its dim and size (the first of the operators `known`
    that fixes it)."""
    devices = mesh.shape[mesh.axis_names[0]]
    if isinstance(leaf, Identity):  # a renaming, position by position
        stages.append(_Rename(split, leaf.oshape[leaf.ishape.index(split)]))
        return stages[-1].dim_out, n
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
        return stages[-1].dim_out, _size_of(known, trade, dims_in, dims_out)
    if isinstance(leaf, AbstractCenterResize) and split in leaf.in_shape:
        i = leaf.in_shape.index(split)
        stages.append(_Resize(leaf, split, leaf.out_shape[i]))
        return leaf.out_shape[i], leaf.out_size[i]
    grid = leaf.off_grid() if split in all_dims(leaf) else None
    if grid is not None and split in grid.grid_dims:
        stages.append(points_stage(leaf, grid, split, devices, mesh))
        return stages[-1].dim_out, stages[-1].points[0]
    if split in all_dims(leaf) and leaf.coupling(split).kind == "halo":
        stages.append(_halo(leaf, split, n, devices, mesh))
        return stages[-1].dim_out, n
    stages.append(_local(leaf, split, n, devices, mesh, batch))
    return split, n


def _local(
    leaf: NamedLinop, split: str, n: int, devices: int, mesh: Mesh, batch: BatchAxis | None
) -> _Local:
    """The stage of a leaf that applies the split dim entry by entry, or a ValueError;
    split along the `batch` dim too where `_splits_batch` says so."""
    dims = all_dims(leaf)
    coupling = leaf.coupling(split) if split in dims else Coupling.NONE
    if split in dims and (coupling != Coupling.NONE or not _both_sides(leaf, split)):
        what = "sums over it" if coupling == Coupling.NONE else f"couples it ({coupling})"
        raise ValueError(
            f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)}) "
            f"{what}: splitting the grid dim {split!r} across devices does not cover it yet "
            f"(entry-by-entry operators, FFTs, Pad, Crop and shift-invariant halo operators "
            f"such as Convolution do)."
        )
    cuts = {split: (n, devices)}
    if batch is not None and _splits_batch(leaf, batch.dim):
        cuts[batch.dim] = (batch.size, batch.blocks)
    else:
        batch = None
    grid = tuple(count for _, count in cuts.values())
    parts = []
    for index in np.ndindex(*grid):
        at = {d: i for d, i in zip(cuts, index) if d in dims}
        parts.append(leaf.split(_tile(cuts, at)) if at else leaf)
    tiles = stack_tiles(parts, grid)
    if tiles is None:
        raise ValueError(
            f"`create_batched_linop`: the tiles of {leaf.name} along {tuple(cuts)} differ in "
            f"structure, so they cannot run as one program."
        )
    names = (mesh.axis_names[0],) + ((batch.dim if batch.across else None,) if batch else ())
    return _Local(place(tiles, mesh, names), split, split, batch)


def _tile(cuts: dict[str, tuple[int, int]], at: dict[str, int]) -> Tile:
    r"""Block `at[d]` of each dim `d` cut into `cuts[d] = (size, count)` blocks of
    $\lceil size / count \rceil$ entries, the last ones padded past the end."""
    slices, padded = {}, {}
    for d, i in at.items():
        n, count = cuts[d]
        block = -(-n // count)
        slices[d] = slice(i * block, (i + 1) * block)
        if block * count != n:
            padded[d] = n
    return Tile(slices, padded)


def _both_sides(leaf: NamedLinop, dim: str) -> bool:
    return dim in leaf.ishape and dim in leaf.oshape


def _splits_batch(leaf: NamedLinop, dim: str) -> bool:
    """Whether a leaf is split along the batch dim `dim` (into the blocks of the devices):
    it has arrays along it (coil maps), or has it on one side only (it makes or sums it).
    Others (an FFT, a kernel broadcast over the coils) run unchanged on each block."""
    has = dim in all_dims(leaf)
    return has and (leaf.size(dim) is not None or not _both_sides(leaf, dim))


def _check_batch(stage: Stage, leaf: NamedLinop, batch: BatchAxis | None) -> None:
    """Refuse a leaf (run as `stage`) through which the batch dim cannot be split: one
    coupling it, having it internally, or one run by a communicating stage that would need
    splitting along it (only entry-by-entry leaves are)."""
    if batch is None or batch.dim not in all_dims(leaf):
        return
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    coupling = leaf.coupling(batch.dim)
    if coupling != Coupling.NONE:
        raise ValueError(
            f"{where} couples the batch dim {batch.dim!r} ({coupling}); splitting it with "
            f"the grid needs operators that apply it entry by entry."
        )
    if batch.dim not in leaf.ishape and batch.dim not in leaf.oshape:
        raise ValueError(
            f"{where} sums over the batch dim {batch.dim!r} internally; splitting it with "
            f"the grid needs it in the operator's input or output."
        )
    if not isinstance(stage, _Local) and _splits_batch(leaf, batch.dim):
        raise ValueError(
            f"{where} has arrays along the batch dim {batch.dim!r} (or makes or sums it) "
            f"and couples the grid; splitting the batch dim with the grid covers only such "
            f"operators that apply the grid entry by entry."
        )


def _batch_of(mesh: Mesh, size) -> BatchAxis | None:
    """The batch dim of a mesh's second axis (named after it; `size`: its size), if any."""
    if len(mesh.axis_names) < 2:
        return None
    dim = mesh.axis_names[1]
    n = size(dim)
    if n is None:
        raise ValueError(
            f"`create_batched_linop`: the operator does not fix the size of the batch dim "
            f"{dim!r} split with the grid."
        )
    return BatchAxis(dim, n, mesh.shape[dim])


def _run(stages, shapes: list[tuple[Shape, int]], x: jax.Array, name: str) -> jax.Array:
    """The stages on this device's block `x` (inside `shard_map`; `shapes`: the global
    shape and split axis at each stage's input, see `GridSplitLinop._shapes`)."""
    for stage, (shape, axis) in zip(stages, shapes):
        x = stage.run(x, shape, axis, name)
    return x


def _looped(stages, shapes, x: jax.Array, loop: BatchAxis, axes, name: str) -> jax.Array:
    """The stages run once per block $j$ of the `loop` dim, with the stages split along
    it at block $j$ (`_Local.at`) on block $j$ of the input where it has the dim (`axes`:
    its axis in the input and the output, or None): the outputs stacked along the dim
    where the output has it, else added (the operator is linear, so the stages after the
    one that sums over the dim may run on each block's partial sum)."""
    at_in, at_out = axes

    def one(j):
        own = [s.at(j) if isinstance(s, _Local) and s.batch is not None else s for s in stages]
        if at_in is not None:
            x_j = jax.lax.dynamic_slice_in_dim(x, j * loop.block, loop.block, axis=at_in)
        else:
            x_j = x
        return _run(own, shapes, x_j, name)

    if at_out is None:  # (the sum varies over the slab axis, as each block's output)
        out = jax.eval_shape(one, 0)
        zero = jax.lax.pcast(jnp.zeros(out.shape, out.dtype), (name,), to="varying")
        return jax.lax.fori_loop(0, loop.blocks, lambda j, acc: acc + one(j), zero)
    ys = jnp.moveaxis(jax.lax.map(one, jnp.arange(loop.blocks)), 0, at_out)
    return ys.reshape(ys.shape[:at_out] + (-1,) + ys.shape[at_out + 2 :])


def _halo(leaf: NamedLinop, split: str, n: int, devices: int, mesh: Mesh) -> _Halo:
    """The stage of a leaf that couples the split dim within a halo (see
    `jaxlinops._core._coupling` for the rule), or a ValueError naming what it lacks."""
    coupling = leaf.coupling(split)
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    if leaf.size(split) is not None:
        raise ValueError(
            f"{where} couples the grid dim {split!r} within {coupling} but fixes its size "
            f"({leaf.size(split)}): its arrays are indexed along it, so it cannot run on an "
            f"extended slab (only shift-invariant halo operators such as Convolution can)."
        )
    if split not in leaf.ishape or len(leaf.ishape) != len(leaf.oshape):
        raise ValueError(
            f"{where} couples the grid dim {split!r} within {coupling} but does not map it "
            f"position by position to its output; splitting it by halo exchange needs that."
        )
    lay = _Layout(n, devices, coupling.width, coupling.periodic)
    if coupling.width > lay.limit:
        raise ValueError(
            f"{where} couples the grid dim {split!r} within {coupling}, more than the "
            f"{lay.limit} entries each halo can take from one neighbour ({lay.describe()}); "
            f"split over fewer devices."
        )
    dim_out = leaf.oshape[leaf.ishape.index(split)]
    leaf = place(leaf, mesh, ())
    return _Halo(leaf, coupling.width, coupling.periodic, split, dim_out, reduce=False)


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


def _size_of(known: list[NamedLinop], trade: str, dims_in: Dims, dims_out: Dims) -> int:
    """The size of the dim the split moves to: an operator of `known` (the whole operator,
    then the steps of the leaves it decomposed) fixes it, under either name."""
    names = (trade, dims_out[dims_in.index(trade)])
    n = next((k for op in known for d in names if (k := op.size(d)) is not None), None)
    if n is None:
        raise ValueError(
            f"`create_batched_linop`: {known[0].name} does not fix the size of dim "
            f"{trade!r}, which a distributed FFT moves the split to."
        )
    return n


def _sizes(A: NamedLinop) -> tuple[tuple[str, int], ...]:
    return tuple((d, n) for d in sorted(all_dims(A)) if (n := A.size(d)) is not None)


def _axis(shape: Dims, dim: str, ndim: int) -> int:
    """The array axis of `dim` in an array of `ndim` axes laid out by `shape`."""
    axis = axis_of(shape, dim)
    return axis + ndim if axis < 0 else axis


def _specs(stage: Stage, arrays, name: str):
    """The `shard_map` specs of a stage's arrays: those of a `_Local` or `Points` split
    along their leading (device) axis where it has one entry per device (a `_Local` with
    a batch dim: also along the second, across the batch dim's mesh axis); the others'
    replicated."""
    if isinstance(stage, (_Local, Points)):
        b = stage.batch if isinstance(stage, _Local) else None
        axes = (name,) if b is None else (name, b.dim if b.across else None)
        return jax.tree.map(lambda a: grid_spec(a, axes), arrays)
    return jax.tree.map(lambda a: PartitionSpec(), arrays)


def _global_out(leaf: NamedLinop, dim: str, shape: Shape, dtype) -> tuple[Shape, int]:
    """The output shape of `leaf` on the whole (unsplit) input `shape`, and the axis of
    `dim` there."""
    out = jax.eval_shape(leaf, jax.ShapeDtypeStruct(shape, dtype))
    return tuple(out.shape), _axis(leaf.oshape, dim, out.ndim)


def _masked(x: jax.Array, axis: int, n: int, axis_name: str) -> jax.Array:
    """This device's block of a dim of `n` entries split along `axis`, its padding zero."""
    lay = _Layout(n, jax.lax.axis_size(axis_name), 0, False)
    return _valid(x, axis, lay, jax.lax.axis_index(axis_name))


def _resize(x: jax.Array, sizes: dict[int, tuple[int, int]]) -> jax.Array:
    """`x` centered-padded or cropped along each axis `a` of `sizes` from `sizes[a][0]`
    entries to `sizes[a][1]` (as `center_pad` and `center_crop`)."""
    for a, (n_in, n_out) in sizes.items():
        ((before, after),) = pad_widths((min(n_in, n_out),), (max(n_in, n_out),))
        if n_out >= n_in:
            x = jnp.pad(x, _widths(x.ndim, a, (before, after)))
        else:
            x = jax.lax.slice_in_dim(x, before, before + n_out, axis=a)
    return x


def _widths(ndim: int, axis: int, width: tuple[int, int]) -> list[tuple[int, int]]:
    """`jnp.pad` widths: `width` along `axis`, none elsewhere."""
    return [width if a == axis else (0, 0) for a in range(ndim)]


def _with(shape: Shape, axis: int, n: int) -> Shape:
    """`shape` with `n` entries along `axis`."""
    return tuple(n if a == axis else s for a, s in enumerate(shape))


def _spec(ndim: int, axes: dict[int, str]) -> PartitionSpec:
    """An array of `ndim` axes split along each axis of `axes` over its mesh axis."""
    return PartitionSpec(*(axes.get(a) for a in range(ndim)))


def _pad(x: jax.Array, axis: int, devices: int) -> jax.Array:
    """`x` zero-padded at the end of `axis` to a multiple of `devices` blocks."""
    n = x.shape[axis]
    extra = -(-n // devices) * devices - n
    return jnp.pad(x, _widths(x.ndim, axis, (0, extra))) if extra else x
