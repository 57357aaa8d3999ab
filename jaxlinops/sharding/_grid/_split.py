r"""Grid splitting by domain decomposition: an operator run on slabs of a dim it couples.

A dim that an operator couples (an FFT's image axis) cannot be tiled: every output entry
needs every input entry. Split by *domain decomposition* instead: each of the $D$ devices
of a mesh axis holds a slab of $B = \lceil N / D \rceil$ entries of the dim (the last
slabs zero-padded, see `_halo` and `_dfft`), and the operator runs leaf by leaf, in one
`jax.shard_map`, on the slabs. Each leaf runs as the stage of what it declares (its
coupling, and its grid form, `jaxlinops._core._forms`; the table `_FORMS`), never of its
class:

- a leaf that applies the split dim entry by entry (`Coupling.NONE`: coil maps, masks,
  weights) runs on each device's slab, its arrays split to the slab (`split`);
- a leaf of the `Fourier` form (an `FFT` or its adjoint) is a distributed FFT:
  one `all_to_all` transposes the slabs so that the dim is whole and another transformed
  dim is split (`_dfft.fft_split`); the split then moves to that dim, and later leaves
  see it split there (the output of a Cartesian SENSE operator split along `Nx` is split
  along `Ky`);
- a leaf that couples the split dim within a halo of $k$ entries (`Coupling.halo(k)`: a
  `Convolution`) runs *itself* on each device's slab extended by $k$ entries from the
  neighbouring slabs (`_halo.halo_extend`: wrapped around the ends of the dim when the halo is
  periodic, zeros otherwise), and the interior $B$ entries of its output are kept. This
  is exact for an operator shift invariant along the dim (see `jaxlinops._core._coupling`:
  declaring the halo is all an operator does), so no per-operator code is needed; one
  that fixes the dim's size (its arrays are indexed along it) is refused. The adjoint
  applies the operator's adjoint to the slab zero-padded by $k$ on each side and adds the
  halos back into the neighbours (`_halo.halo_reduce`);
- a leaf of the `Resize` form (`Pad`, `Crop`, `Truncate`, `PadDim`) that resizes the
  split dim moves its edge slabs by a slab transpose
  there and back (`_dfft.transpose_split`): the split trades places with the largest dim
  held whole, the split dim (now whole) is padded or cropped on each device, and the
  split returns to it, in blocks of $\lceil N_\text{out} / D\rceil$. Its other resized
  dims, held whole, are cropped before the transposes or padded after them (the
  transposes then move the smaller array). Two `all_to_all`s of the slab: a direct
  re-blocking with `ppermute`s would move less, but its sources depend on $N$, $D$ and
  the resize in ways that need a general ragged exchange;
- a leaf of the `Rename` form (an `Identity` between dims) renames the split dims;
- a leaf of the `OffGrid` form (gridding) has its points bucketed by slab
  (`_points`), and one of the `Steps` form (a NUFFT) runs as its steps.

No stage reads the padding entries of its input blocks (they may hold anything: the
halo stages zero them, the transposes drop them, entry-by-entry leaves keep them apart).
The leaves only declare their coupling and form; this module alone communicates. The
adjoint runs the stages backwards (each local piece's adjoint, each transpose undone), and
the normal $A^H A$ runs both in one program, with no gather in between. Other leaves (one coupling
the split dim globally with no form, one summing over or reshaping it) are refused with
an error naming the leaf.

Several grid dims can be split at once (a *pencil* decomposition, needed when a grid dim
has fewer entries than there are devices), each over its own mesh axis: every device
holds a block split along each of them. Each stage then acts on every split dim it
touches, one mesh axis after the other: an FFT trades each split transformed dim with a
transformed dim held whole (so a pencil needs a third, whole, transformed dim; an inverse
FFT takes the mesh axes in the reverse order, so that it leaves a pencil split as the
forward FFT found it), a halo
leaf extends its block along each split dim (the corners come along), a `Pad` or `Crop`
moves the edge slabs of each resized split dim, and gridding buckets the points by the
block of each split grid dim, its output split along the points over all the slab axes
together.

A dim the operator applies entry by entry (the coils of a SENSE operator) can be split
with the grid (a `GridBatch`: its name and its `BatchDim`): across a last mesh axis
named after it, each device holding a (slab, block of coils), the stages' collectives
staying on the slab axes (they act within each row of devices of one block) and a `psum`
across the coil axis after the leaf that sums the coils; or in a loop on each device
(nested specs), the stages run once per block (`_looped`). Only entry-by-entry leaves are
split along that dim.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from ..._core import (
    Coupling,
    Fourier,
    GridForm,
    NamedLinop,
    OffGrid,
    Rename,
    Resize,
    Steps,
    Tile,
    all_dims,
    default_normal,
    dims_field,
)
from ..._dims import Dims, fmt
from ...linops._toeplitz import with_kernel_builder
from .._dim_split import BatchDim
from .._log import logger
from .._program import apply_compiled, cut_to, on_mesh, pad_to, partition_spec
from .._tile_arrays import place, stack_tiles
from ._kernel import sharded_tiles, split_kernel, spread
from ._points import points_stage
from ._stages import (
    AbstractStage,
    Axes,
    GridBatch,
    Shape,
    _Halo,
    _Local,
    _Rename,
    _Resize,
    _Transform,
    array_axis,
    traded,
)


class GridSplitLinop(NamedLinop):
    """An operator run on slabs of dims it couples, across the devices of the first
    `grids` axes of a mesh (see the module doc); build it with `create_batched_linop(A,
    BatchSpec({dim: tile}, device_matrix=devices))` where `A` couples `dim` (a pencil:
    two such dims and a 2-D device matrix). A last mesh axis, named after a dim `A`
    applies entry by entry (coils), splits that dim too, in blocks (see `grid_split`).

    `stages` run in order inside one `shard_map`; the input is split along the dims
    `stages[0].dims_in`, the output along the dims the splits end on (and both along the
    batch dim where they have it). `sizes` holds the operator's dim sizes (the split dims'
    global sizes included). `normal_split` is the split of the operator's own structured
    normal (kept by the adjoint, `adjointed`, whose normal is not it).
    """

    stages: tuple[AbstractStage, ...]
    ishape: Dims = dims_field()
    oshape: Dims = dims_field()
    sizes: tuple[tuple[str, int], ...] = dims_field(kind="pairs")
    mesh: Mesh = eqx.field(static=True)
    grids: int = eqx.field(static=True, default=1)
    normal_split: GridSplitLinop | None = None
    adjointed: bool = eqx.field(static=True, default=False)
    loop: GridBatch | None = eqx.field(static=True, default=None)

    @property
    def name(self) -> str:
        split = zip(self.stages[0].dims_in, self.names)
        over = ", ".join(f"{d} over {n}:{self.mesh.shape[n]}" for d, n in split)
        also = ""
        if self.batch is not None:
            dim, b = self.batch
            also = f", {dim} over {b.axis}:{b.devices}"
        if self.loop is not None:
            dim, b = self.loop
            also = f", {dim}/{b.tile} in a loop"
        return f"GridSplit[{over}{also}]"

    @property
    def names(self) -> tuple[str, ...]:
        """The mesh axes holding the slabs (the first `grids`)."""
        return tuple(self.mesh.axis_names[: self.grids])

    @property
    def batch(self) -> GridBatch | None:
        """The batch dim split across the mesh's last axis, if it has one."""
        return _batch_of(self.mesh, self.grids, self.size)

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
        return apply_compiled(self, x)

    def _program(self, x: jax.Array) -> jax.Array:
        """The stages in one `shard_map`, the input padded to whole slabs and blocks, the
        output cut back (see `_program`)."""
        shapes = self._shapes(x)
        x_axes = self._split_axes(self.ishape, shapes[0][1], x.ndim)
        lengths = {a: _whole(x.shape[a], self._devices(names)) for a, names in x_axes.items()}
        out_shape, out_axes = shapes[-1]
        y_axes = self._split_axes(self.oshape, out_axes, len(out_shape))
        loop, loop_axes = self.loop, (None, None)
        if loop is not None:  # its dim: padded to whole blocks, not split across devices
            dim, b = loop
            loop_axes = tuple(
                array_axis(dims, dim, ndim) if dim in dims else None
                for dims, ndim in ((self.ishape, x.ndim), (self.oshape, len(out_shape)))
            )
            if loop_axes[0] is not None:
                lengths[loop_axes[0]] = b.tiles * b.tile

        def body(stages, block):
            if loop is not None:
                return _looped(stages, shapes, block, loop, loop_axes, self.names)
            return _run(stages, shapes, block, self.names)

        def specs(arrays):
            return tuple(s.array_specs(a, self.names) for s, a in zip(self.stages, arrays))

        x = pad_to(x, lengths)
        x_spec = partition_spec(x.ndim, x_axes)
        y_spec = partition_spec(len(out_shape), y_axes)
        y = on_mesh(body, self.mesh, self.stages, specs, x, x_spec, y_spec)
        cut = (*y_axes, *(a for a in loop_axes[1:] if a is not None))
        return cut_to(y, {a: out_shape[a] for a in cut})

    def _devices(self, names: tuple[str, ...]) -> int:
        return math.prod(self.mesh.shape[n] for n in names)

    def _split_axes(self, shape: Dims, axes: Axes, ndim: int) -> dict[int, tuple[str, ...]]:
        """The mesh axes splitting each split array axis of an input or output laid out by
        `shape` (`ndim` axes, split along `axes` over the slab axes): the slabs', and the
        batch dim's where it has it."""
        out: dict[int, tuple[str, ...]] = {}
        for a, name in zip(axes, self.names):
            out[a] = out.get(a, ()) + (name,)
        if self.batch is not None and self.batch[0] in shape:
            dim, b = self.batch
            assert b.axis is not None, "a batch dim across the mesh"
            out[array_axis(shape, dim, ndim)] = (b.axis,)
        return out

    def _shapes(self, x: jax.Array) -> list[tuple[Shape, Axes]]:
        """The global (unpadded) shape at the input of each stage and the axes split there
        over the slab axes, then the output's (traced shapes only)."""
        devices = tuple(self.mesh.shape[n] for n in self.names)
        shape = tuple(x.shape)
        axes = tuple(array_axis(self.ishape, d, x.ndim) for d in self.stages[0].dims_in)
        out = []
        for stage in self.stages:
            out.append((shape, axes))
            shape, axes = stage.out(shape, axes, devices, x.dtype)
        out.append((shape, axes))
        return out


def grid_split(
    A: NamedLinop,
    dims: tuple[str, ...],
    mesh: Mesh,
    normal: bool = True,
    loop: GridBatch | None = None,
) -> GridSplitLinop:
    r"""`A` split along its grid `dims` (sizes `A` fixes) across the first `len(dims)` axes
    of `mesh`, one each: its leaves (a Chain's, in order; a NUFFT's steps) become stages;
    a ValueError names a leaf whose coupling of a split dim this cannot do yet, and the
    dim asked for. With `normal`, a structured `A.N` is split too (see
    `_structured_normal`). Dims of the output only (the image of an adjoint NUFFT) are
    split as the adjoint of `A.H` split there.

    A last mesh axis, named after a dim `A` applies entry by entry (coils, of a size `A`
    fixes), splits that dim too, in one block of $\lceil C / D_c \rceil$ entries per
    device along it (the last blocks zero-padded): every device holds a (slab, block).
    The stages communicate along the slab axes only (within each group of devices of one
    block); a leaf that has the batch dim only in its output (coil maps) makes its block
    from an input every block shares, one that has it only in its input (their adjoint)
    sums its block, and a `psum` across the last axis adds the blocks' sums (zero padded
    blocks add zero). With `loop` (a batch dim not `across` the mesh: nested specs) the
    blocks run in a loop on each device instead (see `_looped`)."""
    outputs = [d for d in dims if d not in A.ishape and d in A.oshape]
    if outputs and len(outputs) < len(dims):
        raise ValueError(
            f"`create_batched_linop`: {A.name} ({fmt(A.ishape)} -> {fmt(A.oshape)}) has the "
            f"grid dims {outputs} in its output only and {[d for d in dims if d not in outputs]}"
            f" in its input; split dims of one side."
        )
    if outputs:  # split an output: the adjoint's input
        try:
            return grid_split(A.H, dims, mesh, normal=False, loop=loop).adjoint()
        except ValueError as error:
            raise ValueError(
                f"{error} ({A.name} is split along {list(dims)}, dims of its output only, "
                f"as the adjoint of {A.H.name} split there)"
            ) from None
    batch = loop or _batch_of(mesh, len(dims), A.size)
    stages: list[AbstractStage] = []
    split = tuple(dims)
    n = tuple(A.size(d) for d in dims)
    known = [A]
    leaves = A.flatten()
    while leaves:
        leaf = leaves.pop(0)
        form = leaf.grid_form() if any(s in all_dims(leaf) for s in split) else None
        if isinstance(form, Steps) and _couples(leaf, split):  # a NUFFT runs step by step
            if form.chain is None:
                raise ValueError(f"{form.why} (splitting along the grid dims {list(dims)})")
            leaves[:0], known = form.chain.flatten(), known + [form.chain]
            continue
        try:
            split, n = _add_stage(stages, known, leaf, form, split, n, mesh, batch)
            _check_batch(stages[-1], leaf, batch)
        except ValueError as error:
            if split == tuple(dims):
                raise
            raise ValueError(
                f"{error} (splitting along the grid dims {list(dims)}, which the operators "
                f"before {leaf.name} move to {list(split)})"
            ) from None
    return GridSplitLinop(
        stages=tuple(stages), ishape=A.ishape, oshape=A.oshape, sizes=_sizes(A), mesh=mesh,
        grids=len(dims), loop=loop,
        normal_split=(
            _structured_normal(A, dims, mesh, loop) if normal else None
        ),
    )  # fmt: skip


def _structured_normal(
    A: NamedLinop, dims: tuple[str, ...], mesh: Mesh, loop: GridBatch | None
) -> GridSplitLinop | None:
    """The split of `A.N` where its folding rules give it a structure of its own (a
    NUFFT's Toeplitz embedding, $F^H F = I$), built now, as its arrays (a Toeplitz kernel)
    are split like the operator's; None where `A.N` is the plain chain `A`, `A^H`. A
    Toeplitz kernel is computed split across the mesh (`split_kernel`), never whole on
    one device. A structured normal that cannot be split is said in a warning: the stages
    and their adjoints are exact but slower."""
    try:
        build = functools.partial(split_kernel, mesh=mesh, dims=dims, split=grid_split)
        built = with_kernel_builder(A, build)
        N = built.normal()
        if jax.tree.structure(N) == jax.tree.structure(default_normal(built)):
            return None
        return grid_split(N, dims, mesh, normal=False, loop=loop)
    except ValueError as error:
        logger.warning(
            "`create_batched_linop`: the normal of %s keeps no structure: %s", A.name, error
        )
        return None


def _couples(leaf: NamedLinop, split: tuple) -> bool:
    return any(s in all_dims(leaf) and leaf.coupling(s) != Coupling.NONE for s in split)


def _add_stage(
    stages: list, known: list, leaf, form: GridForm | None, split: tuple, n: tuple, mesh, batch
):
    """Append the stage of `leaf` (of the grid form `form`, None where it touches no
    split dim; the split dims `split` of sizes `n`, one per slab axis) to `stages`: the
    stage of its form (`_FORMS`) where that moves a split dim, else a halo exchange or a
    local stage, as its coupling says. Return the split dims and sizes after it (a size:
    the first of the operators `known` that fixes it)."""
    made = _FORMS[type(form)](form, leaf, split, n, known, mesh) if type(form) in _FORMS else None
    if made is not None:
        stage, sizes = made
        stages.append(stage)
        return stage.dims_out, sizes
    touched = [s for s in split if s in all_dims(leaf)]
    if any(leaf.coupling(s).kind == "halo" for s in touched):
        stages.append(_halo(leaf, split, mesh))
        return stages[-1].dims_out, n
    stages.append(_local(leaf, split, n, mesh, batch))
    return split, n


def _renamed(form: Rename, leaf, split: tuple, n: tuple, known, mesh):
    """A renaming, position by position."""
    return _Rename(split, tuple(form.image(s) for s in split)), n


def _transform(form: Fourier, leaf, split: tuple, n: tuple, known, mesh):
    """A distributed DFT, where it transforms a split dim."""
    moves = tuple(k for k, s in enumerate(split) if s in form.dims_in)
    if form.inverse:  # the mesh axes in reverse order: an inverse DFT undoes a forward one's
        moves = moves[::-1]  # layout (a pencil returns to its slab axes, not a new one)
    if not moves:
        return None
    trades = _trades(leaf, form.dims_in, [split[k] for k in moves], split)
    sizes = list(n)
    for k, t in zip(moves, trades):
        sizes[k] = _size_of(known, t, form)
    return _Transform(form, split, moves, trades), tuple(sizes)


def _resize(form: Resize, leaf, split: tuple, n: tuple, known, mesh):
    """Slab moves, where it resizes a split dim."""
    resized = form.resized()
    if not any(s in resized for s in split):
        return None
    if len(set(split)) < len(split):
        raise ValueError(
            f"`create_batched_linop`: {leaf.name} resizes {list(split)}, a dim split "
            f"over several mesh axes together; resizing it is not covered."
        )
    sizes = tuple(resized[s][2] if s in resized else m for s, m in zip(split, n))
    return _Resize(form, split, leaf.name), sizes


def _points(form: OffGrid, leaf, split: tuple, n: tuple, known, mesh):
    """Points bucketed by slab, where it reads a split grid dim."""
    if not any(s in form.grid_dims for s in split):
        return None
    stage = points_stage(leaf, form, split, mesh)
    return stage, (stage.points[0],) * len(split)


# The stage of each grid form (see `jaxlinops._core._forms`): `(form, leaf, split dims,
# their sizes, the operators that fix sizes, mesh) -> (stage, sizes after)`, or None where
# the form leaves the split dims alone (then the leaf's coupling decides).
_FORMS = {Rename: _renamed, Fourier: _transform, Resize: _resize, OffGrid: _points}


def _trades(leaf: NamedLinop, dims: Dims, moving: list[str], split: tuple) -> tuple[str, ...]:
    """The transformed dim each split dim of `moving` trades places with, in order (see
    `traded`), or a ValueError."""
    trades = traded(dims, moving, set(split))
    if len(dims) == 1:
        raise ValueError(
            f"`create_batched_linop`: {leaf.name} transforms only the split dim "
            f"{moving[0]!r}; a distributed FFT needs a second transformed dim to trade with."
        )
    if trades is None:
        raise ValueError(
            f"`create_batched_linop`: {leaf.name} transforms {list(dims)}, all of them "
            f"split; a distributed FFT needs a transformed dim held whole to trade each "
            f"split one with (split fewer of its dims: a 2-D grid as slabs, not pencils)."
        )
    return tuple(trades)


def _local(leaf: NamedLinop, split: tuple, n: tuple, mesh: Mesh, batch: GridBatch | None) -> _Local:
    """The stage of a leaf that applies the split dims entry by entry, or a ValueError;
    split along the `batch` dim too where `_splits_batch` says so."""
    dims = all_dims(leaf)
    for s in dict.fromkeys(split):
        coupling = leaf.coupling(s) if s in dims else Coupling.NONE
        if s in dims and (coupling != Coupling.NONE or not _both_sides(leaf, s)):
            what = "sums over it" if coupling == Coupling.NONE else f"couples it ({coupling})"
            raise ValueError(
                f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> "
                f"{fmt(leaf.oshape)}) {what}: splitting the grid dim {s!r} across devices "
                f"does not cover it yet (entry-by-entry operators, FFTs, Pad, Crop, gridding "
                f"and shift-invariant halo operators such as Convolution do)."
            )
    names = mesh.axis_names[: len(split)]
    grid = [mesh.shape[a] for a in names]
    cut = list(split)
    sizes = dict(zip(split, n))
    if batch is not None and _splits_batch(leaf, batch[0]):
        dim, b = batch
        grid.append(b.tiles)
        cut.append(dim)
        sizes[dim] = b.size
    else:
        batch = None
    tiles = []
    for index in np.ndindex(*grid):
        at = _blocks_at(cut, grid, index)
        cuts = {d: (sizes[d], c, i) for d, (c, i) in at.items() if d in dims and sizes[d]}
        tiles.append(_tile(cuts))  # (a dim of unknown size has no arrays along it to cut)
    axes = tuple(names) + ((batch[1].axis,) if batch else ())
    if spread(leaf):  # its arrays split across devices already (a Toeplitz kernel)
        placed = sharded_tiles(leaf, tiles, cut, tuple(grid), mesh, axes)
    else:
        parts = stack_tiles([leaf.split(t) if t.slices else leaf for t in tiles], tuple(grid))
        placed = None if parts is None else place(parts, mesh, axes)
    if placed is None:
        raise ValueError(
            f"`create_batched_linop`: the tiles of {leaf.name} along {cut} differ in "
            f"structure, so they cannot run as one program."
        )
    return _Local(placed, split, batch)


def _blocks_at(cut: list[str], grid: list[int], index: tuple) -> dict[str, tuple[int, int]]:
    """`(count, block)` along each dim of `cut` (one per grid axis, a dim repeated where
    several axes split it together, row-major) at the grid `index`."""
    at: dict[str, tuple[int, int]] = {}
    for d, count, i in zip(cut, grid, index):
        c, j = at.get(d, (1, 0))
        at[d] = (c * count, j * count + i)
    return at


def _tile(cuts: dict[str, tuple[int, int, int]]) -> Tile:
    r"""Block $i$ of each dim `d` of `cuts[d] = (size, count, i)`, cut into `count` blocks
    of $\lceil size / count \rceil$ entries, the last ones padded past the end."""
    slices, padded = {}, {}
    for d, (n, count, i) in cuts.items():
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


def _check_batch(stage: AbstractStage, leaf: NamedLinop, batch: GridBatch | None) -> None:
    """Refuse a leaf (run as `stage`) through which the batch dim cannot be split: one
    coupling it, having it internally, or one run by a communicating stage that would need
    splitting along it (only entry-by-entry leaves are)."""
    if batch is None or batch[0] not in all_dims(leaf):
        return
    dim = batch[0]
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    coupling = leaf.coupling(dim)
    if coupling != Coupling.NONE:
        raise ValueError(
            f"{where} couples the batch dim {dim!r} ({coupling}); splitting it with "
            f"the grid needs operators that apply it entry by entry."
        )
    if dim not in leaf.ishape and dim not in leaf.oshape:
        raise ValueError(
            f"{where} sums over the batch dim {dim!r} internally; splitting it with "
            f"the grid needs it in the operator's input or output."
        )
    if not isinstance(stage, _Local) and _splits_batch(leaf, dim):
        raise ValueError(
            f"{where} has arrays along the batch dim {dim!r} (or makes or sums it) "
            f"and couples the grid; splitting the batch dim with the grid covers only such "
            f"operators that apply the grid entry by entry."
        )


def _batch_of(mesh: Mesh, grids: int, size) -> GridBatch | None:
    """The batch dim of a mesh's axis after its `grids` slab axes (named after it;
    `size`: its size), if any."""
    if len(mesh.axis_names) <= grids:
        return None
    dim = mesh.axis_names[grids]
    n = size(dim)
    if n is None:
        raise ValueError(
            f"`create_batched_linop`: the operator does not fix the size of the batch dim "
            f"{dim!r} split with the grid."
        )
    return dim, BatchDim.blocks(n, mesh.shape[dim], axis=dim)


def _run(stages, shapes: list[tuple[Shape, Axes]], x: jax.Array, names) -> jax.Array:
    """The stages on this device's block `x` (inside `shard_map`; `shapes`: the global
    shape and split axes at each stage's input, see `GridSplitLinop._shapes`)."""
    for stage, (shape, axes) in zip(stages, shapes):
        x = stage.run(x, shape, axes, names)
    return x


def _looped(stages, shapes, x: jax.Array, loop: GridBatch, axes, names) -> jax.Array:
    """The stages run once per block $j$ of the `loop` dim, with the stages split along
    it at block $j$ (`_Local.at`) on block $j$ of the input where it has the dim (`axes`:
    its axis in the input and the output, or None): the outputs stacked along the dim
    where the output has it, else added (the operator is linear, so the stages after the
    one that sums over the dim may run on each block's partial sum)."""
    at_in, at_out = axes
    b = loop[1]

    def one(j):
        own = [s.at(j) for s in stages]
        if at_in is not None:
            x_j = jax.lax.dynamic_slice_in_dim(x, j * b.tile, b.tile, axis=at_in)
        else:
            x_j = x
        return _run(own, shapes, x_j, names)

    if at_out is None:  # (the sum varies over the slab axes, as each block's output)
        out = jax.eval_shape(one, 0)
        zero = jax.lax.pcast(jnp.zeros(out.shape, out.dtype), tuple(names), to="varying")
        return jax.lax.fori_loop(0, b.tiles, lambda j, acc: acc + one(j), zero)
    ys = jnp.moveaxis(jax.lax.map(one, jnp.arange(b.tiles)), 0, at_out)
    return ys.reshape(ys.shape[:at_out] + (-1,) + ys.shape[at_out + 2 :])


def _halo(leaf: NamedLinop, split: tuple, mesh: Mesh) -> _Halo:
    """The stage of a leaf that couples split dims within a halo (see
    `jaxlinops._core._coupling` for the rule; the other split dims it must apply entry by
    entry), or a ValueError naming what it lacks."""
    where = f"`create_batched_linop`: {leaf.name} ({fmt(leaf.ishape)} -> {fmt(leaf.oshape)})"
    if len(set(split)) < len(split):
        raise ValueError(
            f"{where} couples {list(split)} within a halo, a dim split over several mesh axes "
            f"together; splitting it so is not covered."
        )
    halo_widths, periodic = [], []
    for s in split:
        coupling = leaf.coupling(s) if s in all_dims(leaf) else Coupling.NONE
        if coupling == Coupling.GLOBAL:
            raise ValueError(
                f"{where} couples the split grid dim {s!r} globally and another split dim "
                f"within a halo; a stage for both at once is not covered."
            )
        if leaf.size(s) is not None:
            raise ValueError(
                f"{where} couples the grid dim {s!r} within {coupling} but fixes its size "
                f"({leaf.size(s)}): its arrays are indexed along it, so it cannot run on an "
                f"extended slab (only shift-invariant halo operators such as Convolution can)."
            )
        if s not in leaf.ishape or len(leaf.ishape) != len(leaf.oshape):
            raise ValueError(
                f"{where} couples the grid dim {s!r} within {coupling} but does not map it "
                f"position by position to its output; splitting it by halo exchange needs that."
            )
        halo_widths.append(coupling.width)
        periodic.append(coupling.periodic)
    dims_out = tuple(leaf.oshape[leaf.ishape.index(s)] for s in split)
    placed = place(leaf, mesh, ())
    return _Halo(placed, tuple(halo_widths), tuple(periodic), split, dims_out, reduce=False)


def _size_of(known: list[NamedLinop], trade: str, form: Fourier) -> int | None:
    """The size of the dim the split moves to, where an operator of `known` (the whole
    operator, then the steps of the leaves it decomposed) fixes it, under either name;
    else None (the input fixes it)."""
    names = (trade, form.image(trade))
    return next((k for op in known for d in names if (k := op.size(d)) is not None), None)


def _sizes(A: NamedLinop) -> tuple[tuple[str, int], ...]:
    return tuple((d, n) for d in sorted(all_dims(A)) if (n := A.size(d)) is not None)


def _whole(n: int, devices: int) -> int:
    """The length of `n` entries padded to a multiple of `devices` blocks."""
    return -(-n // devices) * devices
