"""`BlocksAt`: blocks read at given origins, the piece of `ArrayToBlocks` that grid
splitting runs on each device's slab (`jaxlinops.sharding._grid._points`)."""

from __future__ import annotations

import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from .._arrays import promote_inexact
from .._core import NamedLinop, dims_field
from .._dims import Dims, fmt, size_of


class BlocksAt(NamedLinop):
    r"""$y[b, l, p] = x[b, o_l + p]$: the blocks of an array at the integer origins $o_l$
    (`origins` `[P, D]`), $p$ over the block's entries (`block_size`, row-major; with a
    `mask`, its `True` entries only, as one dim).

    Dims: `batch_shape + array_shape -> batch_shape + blocks_shape`, where `blocks_shape`
    is the point dim (of size $P$), then the block entries' dims (`D` dims, or one with a
    mask). Every block lies inside the array (`0 <= o_l` and `o_l + block_size <=
    grid_size`, checked for concrete origins). Adjoint: the blocks added into a zero array
    at their origins (a scatter-add, as `BlocksToArray` does for a regular layout).
    """

    origins: jax.Array
    grid_size: tuple[int, ...] = eqx.field(static=True)
    block_size: tuple[int, ...] = eqx.field(static=True)
    mask: tuple[bool, ...] | None = eqx.field(static=True)
    batch_shape: Dims = dims_field()
    array_shape: Dims = dims_field()
    blocks_shape: Dims = dims_field()

    def __init__(
        self,
        origins: jax.Array,
        grid_size: tuple[int, ...],
        block_size: tuple[int, ...],
        mask: tuple[bool, ...] | None,
        batch_shape: Dims,
        array_shape: Dims,
        blocks_shape: Dims,
    ):
        self.origins, self.grid_size, self.block_size = origins, grid_size, block_size
        self.mask, self.batch_shape = mask, batch_shape
        self.array_shape, self.blocks_shape = array_shape, blocks_shape

    def __check_init__(self):
        if isinstance(self.origins, Tracer):
            return
        origins = np.asarray(self.origins).reshape(-1, len(self.grid_size))
        last = np.asarray(self.grid_size) - np.asarray(self.block_size)
        if np.any(origins < 0) or np.any(origins > last):
            raise ValueError(
                f"`{self.name}({fmt(self.ishape)} -> {fmt(self.oshape)})`: every block of "
                f"size {self.block_size} must lie inside the array of size {self.grid_size} "
                f"(origins between 0 and {tuple(map(int, last))}); got origins from "
                f"{tuple(map(int, origins.min(0)))} to {tuple(map(int, origins.max(0)))}."
            )

    @property
    def ishape(self) -> Dims:
        return self.batch_shape + self.array_shape

    @property
    def oshape(self) -> Dims:
        return self.batch_shape + self.blocks_shape

    def size(self, dim: str) -> int | None:
        blocks = (self.origins.shape[0],) + self._offsets().shape[:-1]
        return size_of(dim, (self.array_shape, self.grid_size), (self.blocks_shape, blocks))

    def _offsets(self) -> np.ndarray:
        """The positions of the block entries within a block: `[*entries, D]`."""
        if self.mask is None:
            return np.moveaxis(np.indices(self.block_size), 0, -1)
        mask = np.array(self.mask, bool).reshape(self.block_size)
        return np.stack(np.nonzero(mask), axis=-1)

    def _index(self) -> jax.Array:
        """The row-major positions in the flattened array of every block entry:
        `[P, *entries]`."""
        n = math.prod(self.grid_size)
        dtype = np.int32 if n <= np.iinfo(np.int32).max else np.int64
        strides = np.array([math.prod(self.grid_size[d + 1 :]) for d in range(len(self.grid_size))])
        offsets = (self._offsets() @ strides).astype(dtype)
        starts = self.origins.astype(dtype) @ jnp.asarray(strides, dtype)
        return starts.reshape(starts.shape + (1,) * offsets.ndim) + offsets[None]

    def apply(self, x: jax.Array) -> jax.Array:
        batch = x.shape[: x.ndim - len(self.grid_size)]
        flat = x.reshape(batch + (-1,))
        return flat.at[..., self._index()].get(mode="promise_in_bounds")

    def apply_adjoint(self, y: jax.Array) -> jax.Array:
        (y,) = promote_inexact(self.name, y)  # the scatter-add overflows in integers
        index = self._index()
        batch = y.shape[: y.ndim - index.ndim]
        out = jnp.zeros(batch + (math.prod(self.grid_size),), y.dtype)
        out = out.at[..., index].add(y, mode="promise_in_bounds")
        return out.reshape(batch + self.grid_size)
