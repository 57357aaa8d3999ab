r"""The stages of a grid split (`GridSplitLinop`): one per leaf, run on each device's block.

A stage sees the *layout* of its input: the global (unpadded) `shape` and, for each slab
axis $k$ of the mesh (named `names[k]`, $D_k$ devices), the array axis `axes[k]` split
over it. Each axis of a pencil has its own mesh axis; several mesh axes may split one
array axis jointly (the points of a gridding stage: blocks over the devices in row-major
order of those mesh axes). A split axis of $N$ entries over $D$ devices is held in blocks
of $\lceil N / D \rceil$, the last ones zero-padded (see `_halo`). Each stage is an
`AbstractStage`; the module doc of `_split` says what each does.
"""

from __future__ import annotations

import abc
import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from ..._core import Adjoint, Fourier, NamedLinop, Resize
from ..._dims import Dims, axis_of
from .._dfft import fft_split, transpose_split
from .._dim_split import BatchDim
from .._halo import _Layout, _valid, halo_extend, halo_reduce
from .._tile_arrays import grid_spec, tile_at

Shape = tuple[int, ...]
Axes = tuple[int, ...]


# A dim applied entry by entry (coils) split with the grid: its name and its blocks (of a
# known size), along the mesh's last axis (named after the dim), one block per device, or
# in a loop on each device (no axis).
GridBatch = tuple[str, BatchDim]


class AbstractStage(eqx.Module):
    """One leaf of a grid split, run on each device's block inside `shard_map`.

    - `dims_in`, `dims_out` (a field or a property of each stage): the dim split over each
      slab axis before and after it;
    - `run(x, shape, axes, names)`: this device's block of the output, from its block `x`
      of an input of global `shape` split along `axes` over the mesh axes `names`;
    - `out(shape, axes, devices, dtype)`: the global shape and split axes after it;
    - `adjoint()`: the stage of the leaf's adjoint (the layout after it, back);
    - `array_specs(arrays, names)`: how its arrays are split across the mesh (replicated
      by default);
    - `at(j)`: the stage for block `j` of a batch dim run in a loop (itself by default).
    """

    if TYPE_CHECKING:  # (a field or a property of each stage: not an equinox field here)

        @property
        def dims_in(self) -> tuple[str, ...]: ...

        @property
        def dims_out(self) -> tuple[str, ...]: ...

    @abc.abstractmethod
    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        """This device's output block (see the class doc)."""

    @abc.abstractmethod
    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        """The global shape and split axes after the stage."""

    @abc.abstractmethod
    def adjoint(self) -> AbstractStage:
        """The stage of the leaf's adjoint."""

    def array_specs(self, arrays, names: tuple[str, ...]):
        return jax.tree.map(lambda a: PartitionSpec(), arrays)

    def at(self, j: jax.Array) -> AbstractStage:
        return self


class _Local(AbstractStage):
    """A leaf on each device's block: `tiles` is the leaf split to each block, stacked on
    one leading axis per slab axis of the mesh (of size 1 for an array every block
    shares); with `batch`, also split to each block of the batch dim, on one more axis.
    With `adjointed`, the stage runs the pieces' adjoints (the stacked arrays untouched)."""

    tiles: NamedLinop
    dims_in: tuple[str, ...] = eqx.field(static=True)
    batch: GridBatch | None = eqx.field(static=True, default=None)
    adjointed: bool = eqx.field(static=True, default=False)

    @property
    def dims_out(self) -> tuple[str, ...]:
        return self.dims_in

    def adjoint(self) -> _Local:
        return dataclasses.replace(self, adjointed=not self.adjointed)

    def tile(self) -> NamedLinop:
        """This device's piece (inside `shard_map`, where the arrays are its blocks)."""
        piece = tile_at(self.tiles, (0,) * (len(self.dims_in) + (self.batch is not None)))
        return Adjoint(piece) if self.adjointed else piece

    def array_specs(self, arrays, names: tuple[str, ...]):
        """Along their leading (device) axes, one per slab axis, where they have one entry
        per device; with a batch dim, also along the next, across its mesh axis."""
        axes = names + (() if self.batch is None else (self.batch[1].axis,))
        return jax.tree.map(lambda a: grid_spec(a, axes), arrays)

    def at(self, j: jax.Array) -> _Local:
        """The stage of block `j` of a batch dim run in a loop (its tiles along the batch
        axis, the one kept); itself where it is not split along the batch dim."""
        if self.batch is None:
            return self
        at = len(self.dims_in)

        def pick(a):
            return jax.lax.dynamic_slice_in_dim(a, j, 1, axis=at) if a.shape[at] > 1 else a

        own, static = eqx.partition(self.tiles, eqx.is_array)
        return dataclasses.replace(self, tiles=eqx.combine(jax.tree.map(pick, own), static))

    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        piece = self.tile()
        y = piece(x)
        if self.batch is not None:
            dim, b = self.batch
            if b.axis is not None and dim in piece.ishape and dim not in piece.oshape:
                return jax.lax.psum(y, b.axis)  # each device summed its block of the dim
        return y

    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        piece = self.tile()
        dim, b = self.batch if self.batch is not None else (None, None)
        block = blocks(shape, axes, devices)
        if b is not None and dim in piece.ishape:
            block = with_size(block, array_axis(piece.ishape, dim, len(block)), b.tile)
        local = jax.eval_shape(piece, jax.ShapeDtypeStruct(block, dtype))
        out = tuple(array_axis(piece.oshape, d, local.ndim) for d in self.dims_in)
        out_shape = tuple(local.shape)
        for at, a in zip(out, axes):  # each split dim back at its global size
            out_shape = with_size(out_shape, at, shape[a])
        if b is not None and b.size is not None and dim in piece.oshape:
            out_shape = with_size(out_shape, array_axis(piece.oshape, dim, len(out_shape)), b.size)
        return out_shape, out


class _Transform(AbstractStage):
    """A distributed DFT (an operator of the `Fourier` form `dft`) over its trailing dims,
    the split of each slab axis `moves[j]` (in that order) moving from the transformed dim
    on it to the output name of `trades[j]`, the transformed dim held whole it trades
    places with; the other slab axes' splits pass through."""

    dft: Fourier = eqx.field(static=True)
    dims_in: tuple[str, ...] = eqx.field(static=True)
    moves: tuple[int, ...] = eqx.field(static=True)
    trades: tuple[str, ...] = eqx.field(static=True)

    @property
    def dims_out(self) -> tuple[str, ...]:
        out = list(self.dims_in)
        for k, t in zip(self.moves, self.trades):
            out[k] = self.dft.image(t)
        return tuple(out)

    def adjoint(self) -> _Transform:
        # back: each split returns to where it came from, in the reverse order
        back = tuple(self.dft.image(self.dims_in[k]) for k in reversed(self.moves))
        return _Transform(self.dft.adjoint(), self.dims_out, self.moves[::-1], back)

    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        dims = self.dft.dims_in
        first = x.ndim - len(dims)
        y, _ = fft_split(
            x, tuple(range(first, x.ndim)), [axes[k] for k in self.moves],
            [names[k] for k in self.moves], shape, inverse=self.dft.inverse,
            centered=self.dft.centered, norm=self.dft.norm,
            out_split=[first + dims.index(t) for t in self.trades],
        )  # fmt: skip
        return y

    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        dims = self.dft.dims_in
        first = len(shape) - len(dims)
        out = list(axes)
        for k, t in zip(self.moves, self.trades):
            out[k] = first + dims.index(t)
        return shape, tuple(out)


class _Halo(AbstractStage):
    r"""A leaf coupling split dims within halos of `widths[k]` entries (per slab axis; 0
    where it applies the dim entry by entry), run on each device's extended block.
    Forward (`reduce` False): extend by the halos (one slab axis after the other: the
    corners come along), apply `leaf`, keep the interior entries; adjoint (`reduce` True,
    `leaf` the adjoint): zero the padding entries, pad by the widths with zeros, apply
    `leaf`, add the halos into the neighbours (in the reverse order). The input's padding
    entries are never read."""

    leaf: NamedLinop
    widths: tuple[int, ...] = eqx.field(static=True)
    periodic: tuple[bool, ...] = eqx.field(static=True)
    dims_in: tuple[str, ...] = eqx.field(static=True)
    dims_out: tuple[str, ...] = eqx.field(static=True)
    reduce: bool = eqx.field(static=True)

    def adjoint(self) -> _Halo:
        return dataclasses.replace(
            self, leaf=self.leaf.H, dims_in=self.dims_out, dims_out=self.dims_in,
            reduce=not self.reduce,
        )  # fmt: skip

    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        ks = [k for k, w in enumerate(self.widths) if w]
        for k in ks:
            a, w, name, n = axes[k], self.widths[k], names[k], shape[axes[k]]
            if self.reduce:
                x = jnp.pad(masked(x, a, n, name), widths(x.ndim, a, (w, w)))
            else:
                x = halo_extend(x, a, w, name, n, self.periodic[k])
        y = self.leaf(x)
        out = [array_axis(self.leaf.oshape, d, y.ndim) for d in self.dims_out]
        for k in reversed(ks) if self.reduce else ks:
            a, w, name, n = out[k], self.widths[k], names[k], shape[axes[k]]
            if self.reduce:
                y = halo_reduce(y, a, w, name, n, self.periodic[k])
            else:
                y = jax.lax.slice_in_dim(y, w, y.shape[a] - w, axis=a)
        return y

    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        out_shape, out = global_out(self.leaf, self.dims_out, shape, dtype)
        for d, a, b in zip(self.dims_in, axes, out):
            if out_shape[b] != shape[a]:
                raise ValueError(
                    f"`create_batched_linop`: {self.leaf.name} declares a halo along {d!r} "
                    f"but maps its {shape[a]} entries to {out_shape[b]}; splitting a dim by "
                    f"halo exchange needs an operator that keeps its size (shift invariant)."
                )
        return out_shape, out


class _Resize(AbstractStage):
    """An operator (`name`) of the `Resize` form `form` resizing split dims: for each (one
    slab axis after the other), the split trades places with the largest dim held whole,
    the dim is resized whole, the split returns (see `_split`'s module doc). Its other
    resized dims are cropped before, padded after."""

    form: Resize = eqx.field(static=True)
    dims_in: tuple[str, ...] = eqx.field(static=True)
    name: str = eqx.field(static=True)

    @property
    def dims_out(self) -> tuple[str, ...]:
        resized = self.form.resized()
        return tuple(resized[d][0] if d in resized else d for d in self.dims_in)

    def adjoint(self) -> _Resize:
        return _Resize(self.form.adjoint(), self.dims_out, f"{self.name}.H")

    def _sizes(self, ndim: int) -> dict[int, tuple[int, int, int]]:
        """Each resized array axis (of an input of `ndim` axes) -> `(n_in, n_out, offset)`."""
        f = self.form
        return {a % ndim: (*n, o) for a, n, o in zip(f.axes, f.sizes, f.offsets)}

    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        sizes = self._sizes(x.ndim)
        split = [
            (a, n, d, sizes.pop(a)) for a, n, d in zip(axes, names, self.dims_in) if a in sizes
        ]
        grows = any(m > n for n, m, _ in sizes.values()) or any(m > n for *_, (n, m, _) in split)
        if not grows:
            x = resize(x, sizes)
        whole = [a for a in range(x.ndim) if a not in axes]
        for a, name, d, (n_in, n_out, offset) in split:
            if n_in == n_out:
                continue
            if not whole:
                raise ValueError(
                    f"`create_batched_linop`: {self.name} resizes the split dim {d!r} of a "
                    f"{x.ndim}-D array with no dim held whole; moving its slabs needs one to "
                    f"trade places with (split a batch of at least one more dim, or split "
                    f"fewer dims)."
                )
            trade = max(whole, key=lambda b: x.shape[b])
            size = x.shape[trade]
            x = transpose_split(x, a, trade, name, with_size(x.shape, a, n_in))
            x = resize(x, {a: (n_in, n_out, offset)})
            x = transpose_split(x, trade, a, name, with_size(x.shape, trade, size))
        return resize(x, sizes) if grows else x

    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        out = list(shape)
        for a, (_, n_out, _) in self._sizes(len(shape)).items():
            out[a] = n_out
        return tuple(out), axes


class _Rename(AbstractStage):
    """A renaming of the dims (the `Rename` form): the split dims `dims_in` are called
    `dims_out` from here on; the data does not move."""

    dims_in: tuple[str, ...] = eqx.field(static=True)
    dims_out: tuple[str, ...] = eqx.field(static=True)

    def adjoint(self) -> _Rename:
        return _Rename(self.dims_out, self.dims_in)

    def run(self, x: jax.Array, shape: Shape, axes: Axes, names: tuple[str, ...]) -> jax.Array:
        return x

    def out(self, shape: Shape, axes: Axes, devices: Shape, dtype) -> tuple[Shape, Axes]:
        return shape, axes


def traded(dims: Sequence, moving: Sequence, held: set) -> list | None:
    """What each split dim of `moving` (transformed by a distributed FFT over `dims`, in
    order) trades places with: the first of `dims` held whole at that moment, `held`
    being the split ones (as `fft_split` chooses); None when none is whole."""
    held, out = set(held), []
    for s in moving:
        whole = [d for d in dims if d not in held]
        if not whole:
            return None
        out.append(whole[0])
        held = (held - {s}) | {whole[0]}
    return out


def blocks(shape: Shape, axes: Axes, devices: Shape) -> Shape:
    r"""This device's block of the global `shape`: $\lceil N / D \rceil$ entries along each
    split axis ($D$: the product of the devices of the slab axes splitting it)."""
    out = list(shape)
    for a in set(axes):
        count = math.prod(d for b, d in zip(axes, devices) if b == a)
        out[a] = -(-shape[a] // count)
    return tuple(out)


def array_axis(shape: Dims, dim: str, ndim: int) -> int:
    """The array axis of `dim` in an array of `ndim` axes laid out by `shape`."""
    axis = axis_of(shape, dim)
    return axis + ndim if axis < 0 else axis


def global_out(leaf: NamedLinop, dims: tuple[str, ...], shape: Shape, dtype) -> tuple[Shape, Axes]:
    """The output shape of `leaf` on the whole (unsplit) input `shape`, and the axis of
    each of `dims` there."""
    out = jax.eval_shape(leaf, jax.ShapeDtypeStruct(shape, dtype))
    return tuple(out.shape), tuple(array_axis(leaf.oshape, d, out.ndim) for d in dims)


def masked(x: jax.Array, axis: int, n: int, axis_name: str) -> jax.Array:
    """This device's block of a dim of `n` entries split along `axis`, its padding zero."""
    lay = _Layout(n, jax.lax.axis_size(axis_name), 0, False)
    return _valid(x, axis, lay, jax.lax.axis_index(axis_name))


def resize(x: jax.Array, sizes: dict[int, tuple[int, int, int]]) -> jax.Array:
    """`x` zero-padded or cropped along each axis `a` of `sizes`, from `sizes[a][0]` entries
    to `sizes[a][1]`, the shorter side starting at entry `sizes[a][2]` of the longer."""
    for a, (n_in, n_out, offset) in sizes.items():
        if n_out >= n_in:
            x = jnp.pad(x, widths(x.ndim, a, (offset, n_out - n_in - offset)))
        else:
            x = jax.lax.slice_in_dim(x, offset, offset + n_out, axis=a)
    return x


def widths(ndim: int, axis: int, width: tuple[int, int]) -> list[tuple[int, int]]:
    """`jnp.pad` widths: `width` along `axis`, none elsewhere."""
    return [width if a == axis else (0, 0) for a in range(ndim)]


def with_size(shape: Shape, axis: int, n: int) -> Shape:
    """`shape` with `n` entries along `axis`."""
    return tuple(n if a == axis else s for a, s in enumerate(shape))
