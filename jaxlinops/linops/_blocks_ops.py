"""`ArrayToBlocks` and `BlocksToArray`: patch extraction and its adjoint."""

from __future__ import annotations

from collections.abc import Sequence

import equinox as eqx
import jax
import numpy as np

from .._arrays import promote_inexact
from .._core import (
    Coupling,
    Diagonal,
    NamedLinop,
    OffGrid,
    Tiling,
    dims_field,
    normal_oshape,
    with_oshape,
)
from .._default_dims import BLOCK_DIMS, GRID_DIMS, MASKED_BLOCK_DIM, NBLOCKS_DIMS
from .._dims import ELLIPSIS, Dims, DimsLike, as_dims, fmt, size_of
from ..functional._blocks import (
    BlockGeometry,
    array_to_blocks,
    block_counts,
    block_geometry,
    block_mask,
    block_origins,
    blocks_to_array,
)
from ._blocks_at import BlocksAt


class _Blocks(NamedLinop):
    """Fields, checks and sizes shared by `ArrayToBlocks` and `BlocksToArray`."""

    grid_size: tuple[int, ...] = eqx.field(static=True)
    block_size: tuple[int, ...] = eqx.field(static=True)
    stride: tuple[int, ...] = eqx.field(static=True)
    mask: tuple[bool, ...] | None = eqx.field(static=True)
    batch_shape: Dims = dims_field()
    array_shape: Dims = dims_field()
    blocks_shape: Dims = dims_field()

    def __init__(
        self,
        grid_size: Sequence[int],
        block_size: Sequence[int],
        stride: Sequence[int] | None = None,
        mask=None,
        batch_shape: DimsLike = None,
        array_shape: DimsLike = None,
        blocks_shape: DimsLike = None,
    ):
        """**Arguments:**

        - `grid_size`: the `D` sizes of the array (image) axes.
        - `block_size`: the `D` block sizes.
        - `stride`: the `D` steps between block starts (default all ones).
        - `mask`: an optional boolean array of shape `block_size`; only its `True`
          entries are kept (row-major), as one block dim.
        - `batch_shape`: leading dims shared by array and blocks (default `"..."`).
        - `array_shape`: the `D` array dims (default `("Nx", "Ny", "Nz")[:D]`).
        - `blocks_shape`: the `D` block-count dims, then the `D` block dims (one dim
          with a mask); default `("Bx", "By", "Bz")[:D] + ("Px", "Py", "Pz")[:D]`, or
          `("Bx", "By", "Bz")[:D] + ("P",)` with a mask.
        """
        name = type(self).__name__
        geometry = block_geometry(name, grid_size, block_size, stride, im_arg="grid_size")
        self.grid_size, self.block_size, self.stride = geometry.im, geometry.block, geometry.stride
        mask = block_mask(name, mask, self.block_size)
        self.mask = None if mask is None else tuple(bool(m) for m in mask.ravel())
        ndim = len(self.grid_size)
        block_dims = BLOCK_DIMS[:ndim] if mask is None else (MASKED_BLOCK_DIM,)
        self.batch_shape = as_dims(batch_shape, ELLIPSIS)
        self.array_shape = as_dims(array_shape, GRID_DIMS[:ndim])
        self.blocks_shape = as_dims(blocks_shape, NBLOCKS_DIMS[:ndim] + block_dims)

    def __check_init__(self):
        where = f"`{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)})`"
        ndim = len(self.grid_size)
        nblock_dims = 2 * ndim if self.mask is None else ndim + 1
        for role, shape, n in (
            ("array_shape", self.array_shape, ndim),
            ("blocks_shape", self.blocks_shape, nblock_dims),
        ):
            if len(shape) != n or ELLIPSIS in shape:
                raise ValueError(
                    f"{where}: `{role}` must name {n} dims (no '...'); got {fmt(shape)}."
                )
        named = self.batch_shape + self.array_shape + self.blocks_shape
        named = [d for d in named if d != ELLIPSIS]
        if len(set(named)) != len(named):
            raise ValueError(f"{where}: batch, array and blocks dims must all be distinct.")

    @property
    def block_mask(self) -> np.ndarray | None:
        """The mask as a boolean array of shape `block_size`, or None."""
        if self.mask is None:
            return None
        return np.array(self.mask, bool).reshape(self.block_size)

    @property
    def geometry(self) -> BlockGeometry:
        """Where the blocks lie (array, block and stride sizes, block counts, mask)."""
        return block_geometry(
            self.name, self.grid_size, self.block_size, self.stride, self.block_mask
        )

    @property
    def nblocks(self) -> tuple[int, ...]:
        """The number of blocks per axis."""
        return self.geometry.nblocks

    def size(self, dim: str) -> int | None:
        blocks = self.geometry.nblocks + self.geometry.entries
        return size_of(dim, (self.array_shape, self.grid_size), (self.blocks_shape, blocks))

    def _unfold(self, x: jax.Array) -> jax.Array:
        return array_to_blocks(x, self.block_size, self.stride, self.block_mask)

    def _fold(self, y: jax.Array) -> jax.Array:
        (y,) = promote_inexact(self.name, y)  # the overlap-add overflows in integers
        return blocks_to_array(y, self.grid_size, self.block_size, self.stride, self.block_mask)

    def _args(self) -> dict:
        return dict(
            grid_size=self.grid_size,
            block_size=self.block_size,
            stride=self.stride,
            mask=self.block_mask,
            batch_shape=self.batch_shape,
            array_shape=self.array_shape,
            blocks_shape=self.blocks_shape,
        )

    def tiling(self) -> Tiling:
        return Tiling(batch=self.batch_shape)

    def coupling(self, dim: str) -> Coupling:
        """A halo of `block - 1` along the array dims: a block reads that many entries
        past its origin."""
        if dim in self.array_shape:
            return Coupling.halo(self.block_size[self.array_shape.index(dim)] - 1)
        return super().coupling(dim)


class ArrayToBlocks(_Blocks):
    r"""Extract blocks (patches) from the last $D$ axes: $y[b, k, p] = x[b, k s + p]$.

    Dims: `batch_shape + array_shape -> batch_shape + blocks_shape`, by default
    `(..., Nx, Ny) -> (..., Bx, By, Px, Py)`: `Bx, By` count the blocks
    (`(N - block) // stride + 1` per axis; incomplete blocks are dropped) and `Px, Py`
    index the entries of a block. With a `mask` the block entries become one dim `P`
    holding the masked entries. Adjoint: [`BlocksToArray`][]; normal: the number of
    blocks covering each array sample, a diagonal.
    """

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.array_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.blocks_shape

    def apply(self, x: jax.Array) -> jax.Array:
        return self._unfold(x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._fold(y)

    def adjoint(self) -> NamedLinop:
        return BlocksToArray(**self._args())

    def grid_form(self) -> OffGrid:
        """The blocks as points (`Bx, By`) at their origins $k s$ (integers), each reading
        `block - 1` entries past its origin and none before it (the halo is symmetric:
        the larger side); the blocks are complete, so none reads outside the array (not
        periodic). The block entries (`Px, Py`, or `P` with a mask) trail each point;
        `BlocksAt` reads the blocks of a bucket at their origins on a slab."""
        geometry, ndim = self.geometry, len(self.grid_size)
        origins = block_origins(geometry).reshape(geometry.nblocks + (ndim,))
        reach = tuple(b - 1 for b in self.block_size)
        dims = self.blocks_shape[:1] + self.blocks_shape[ndim:]

        def local(locs: jax.Array, grid_size: tuple[int, ...]) -> BlocksAt:
            return BlocksAt(
                locs, grid_size, self.block_size, self.mask, self.batch_shape,
                self.array_shape, dims,
            )  # fmt: skip

        return OffGrid(
            origins, self.array_shape, self.grid_size, reach, False, local, geometry.entries
        )

    def _normal(self, inner: NamedLinop | None) -> NamedLinop | None:
        """Without `inner`: the overlap counts on the array, then a renaming of the array
        dims (`Nx -> Nx1`)."""
        if inner is not None:
            return None
        counts = block_counts(self.geometry)
        diagonal = Diagonal(counts, self.batch_shape + self.array_shape)
        return with_oshape(diagonal, normal_oshape(self))


class BlocksToArray(_Blocks):
    r"""Sum blocks back into an array: the adjoint of [`ArrayToBlocks`][] ("fold").

    Dims: `batch_shape + blocks_shape -> batch_shape + array_shape`, by default
    `(..., Bx, By, Px, Py) -> (..., Nx, Ny)`; overlapping blocks add up. The arguments
    are those of [`ArrayToBlocks`][], whose operator is the adjoint. Integer or bool
    blocks raise a TypeError (the sums would overflow silently); extracting blocks
    ([`ArrayToBlocks`][]) copies entries and keeps any dtype.

    The arguments follow torchlinops' order: `blocks_shape` (this operator's input)
    before `array_shape` (its output).
    """

    def __init__(
        self,
        grid_size: Sequence[int],
        block_size: Sequence[int],
        stride: Sequence[int] | None = None,
        mask=None,
        batch_shape: DimsLike = None,
        blocks_shape: DimsLike = None,
        array_shape: DimsLike = None,
    ):
        """**Arguments:** as for [`ArrayToBlocks`][], with `blocks_shape` and
        `array_shape` in this order."""
        super().__init__(
            grid_size, block_size, stride, mask, batch_shape, array_shape, blocks_shape
        )

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.blocks_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.array_shape

    def apply(self, x: jax.Array) -> jax.Array:
        return self._fold(x)

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        return self._unfold(y)

    def adjoint(self) -> NamedLinop:
        return ArrayToBlocks(**self._args())
