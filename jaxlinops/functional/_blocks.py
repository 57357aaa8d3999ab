"""Patch extraction ("unfold") and its adjoint, summing patches back ("fold")."""

from __future__ import annotations

import dataclasses
import functools
import math
import warnings
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer
from jax.typing import ArrayLike

from .._arrays import as_array, as_sizes, promote_inexact

_IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS
# torchlinops' names of the array and block-size arguments of array_to_blocks/blocks_to_array
_TORCH_ARGS = ("input", "block_shape")


@dataclasses.dataclass(frozen=True)
class BlockGeometry:
    """Where the blocks of an array lie, as validated by [`block_geometry`][]. Hashable (a
    frozen dataclass of tuples), so the kernels take it as a static `jax.jit` argument.

    - `im`: the `D` array sizes.
    - `block`: the `D` block sizes.
    - `stride`: the `D` steps between block starts.
    - `nblocks`: the number of complete blocks per axis, `(im - block) // stride + 1`.
    - `offsets`: with a mask, the `D` per-axis positions of the masked block entries
      (row-major); None without a mask.
    """

    im: tuple[int, ...]
    block: tuple[int, ...]
    stride: tuple[int, ...]
    nblocks: tuple[int, ...]
    offsets: tuple[tuple[int, ...], ...] | None = None

    @property
    def entries(self) -> tuple[int, ...]:
        """The sizes of the block-entry axes: `block`, or `(nnz(mask),)` with a mask."""
        return self.block if self.offsets is None else (len(self.offsets[0]),)


def get_nblocks(
    im_size: Sequence[int], block_size: Sequence[int], block_stride: Sequence[int] | None = None
) -> tuple[int, ...]:
    """The number of complete blocks per axis, `(im - block) // block_stride + 1`.

    Incomplete blocks at the end of an axis are dropped:
    `get_nblocks((7, 7), (3, 3), (2, 2)) == (3, 3)`. `block_stride` defaults to all ones.
    """
    return block_geometry(
        "get_nblocks", im_size, block_size, block_stride, stride_arg="block_stride"
    ).nblocks


def array_to_blocks(
    input: jax.Array,
    block_shape: Sequence[int],
    stride: Sequence[int] | None = None,
    mask: ArrayLike | None = None,
    out: object = None,
) -> jax.Array:
    r"""Extract (possibly overlapping) blocks from the last $D$ axes of `input` ("unfold").

    $y[b, k, p] = x[b, k \cdot s + p]$ per axis: `input` of shape `[B..., *im]` with
    `D = len(block_shape)` gives `[B..., *nblocks, *block_shape]`, where
    `nblocks = get_nblocks(im, block_shape, stride)`. With a boolean `mask` of shape
    `block_shape` only the masked block entries are kept, in row-major order:
    `[B..., *nblocks, nnz(mask)]`. The adjoint is [`blocks_to_array`][].

    **Arguments** (torchlinops' names and order):

    - `input`: the array; its last `D` axes are the image.
    - `block_shape`: the `D` block sizes.
    - `stride`: the `D` steps between block starts (default all ones).
    - `mask`: an optional boolean array of shape `block_shape`.
    - `out`: torchlinops' output buffer. JAX arrays are immutable, so it cannot be
      filled: passing one warns (code that reads `out` afterwards would read stale
      values) and the result is returned as usual.
    """
    ignored_out("array_to_blocks", "out", out)
    return to_blocks("array_to_blocks", input, block_shape, stride, mask, _TORCH_ARGS)


def blocks_to_array(
    input: jax.Array,
    im_size: Sequence[int],
    block_shape: Sequence[int],
    stride: Sequence[int] | None = None,
    mask: ArrayLike | None = None,
    out: object = None,
) -> jax.Array:
    r"""Sum blocks back into an array of size `im_size` ("fold"), the adjoint of
    [`array_to_blocks`][].

    `input` of shape `[B..., *nblocks, *block_shape]` (or `[B..., *nblocks, nnz(mask)]`
    with a `mask`) gives `[B..., *im_size]`; overlapping blocks add up, and image samples
    that no block covers are zero.

    **Arguments** (torchlinops' names and order):

    - `input`: the blocks.
    - `im_size`: the `D` sizes of the output image.
    - `block_shape`, `stride`, `mask`, `out`: as for [`array_to_blocks`][].

    Integer or bool blocks raise a TypeError: the overlap-add would overflow silently.
    """
    ignored_out("blocks_to_array", "out", out)
    return from_blocks("blocks_to_array", input, im_size, block_shape, stride, mask, _TORCH_ARGS)


def to_blocks(
    name: str,
    x: object,
    block_size: Sequence[int],
    stride: Sequence[int] | None,
    mask: ArrayLike | None,
    args: tuple[str, str],
) -> jax.Array:
    """[`array_to_blocks`][] checked under the name `name`; `args` are the names of the
    array and block-size arguments, as errors quote them."""
    x_arg, block_arg = args
    x = as_array(x, f"`{name}({x_arg}=...)`")
    ndim = len(as_sizes(block_size, f"`{name}({block_arg}=...)`", None))
    if x.ndim < ndim:
        raise ValueError(
            f"`{name}`: a {ndim}D block needs an array with at least {ndim} axes; "
            f"got an array of shape {tuple(x.shape)}."
        )
    im = tuple(x.shape[x.ndim - ndim :])
    return _unfold(x, block_geometry(name, im, block_size, stride, mask, block_arg=block_arg))


def from_blocks(
    name: str,
    y: object,
    im_size: Sequence[int],
    block_size: Sequence[int],
    stride: Sequence[int] | None,
    mask: ArrayLike | None,
    args: tuple[str, str],
) -> jax.Array:
    """[`blocks_to_array`][] checked under the name `name`, `args` as for [`to_blocks`][]."""
    x_arg, block_arg = args
    (y,) = promote_inexact(name, as_array(y, f"`{name}({x_arg}=...)`"))
    geometry = block_geometry(name, im_size, block_size, stride, mask, block_arg=block_arg)
    core = geometry.nblocks + geometry.entries
    if y.ndim < len(core) or tuple(y.shape[y.ndim - len(core) :]) != core:
        raise ValueError(
            f"`{name}`: expected the last {len(core)} axes of the blocks to have "
            f"sizes {core} (nblocks, then block entries); got an array of shape "
            f"{tuple(y.shape)}."
        )
    return _fold(y, geometry)


def ignored_out(name: str, arg: str, out: object) -> None:
    """Warn that torchlinops' output buffer `out` of `name` is not filled (JAX arrays are
    immutable); None passes silently."""
    if out is not None:
        warnings.warn(
            f"`{name}({arg}=...)`: JAX arrays are immutable, so the buffer is not filled; "
            f"use the returned array instead.",
            UserWarning,
            stacklevel=3,
        )


def block_counts(geometry: BlockGeometry) -> jax.Array:
    """How many blocks cover each array sample (int32, shape `geometry.im`): the diagonal
    of `blocks_to_array(array_to_blocks(x))`, computed exactly in integers."""
    return _fold(jnp.ones(geometry.nblocks + geometry.entries, jnp.int32), geometry)


def block_geometry(
    name: str,
    im_size: Sequence[int],
    block_size: Sequence[int],
    stride: Sequence[int] | None,
    mask: ArrayLike | None = None,
    im_arg: str = "im_size",
    block_arg: str = "block_size",
    stride_arg: str = "stride",
) -> BlockGeometry:
    """The validated [`BlockGeometry`][]; errors name `name` and the argument (`im_arg` for
    the array size, `block_arg` and `stride_arg` for the others). Non-integral sizes
    (`4.5`) raise a ValueError, traced or non-numeric ones a TypeError (see
    `jaxlinops._arrays.as_sizes`); the mask is checked by [`block_mask`][]."""
    im = as_sizes(im_size, f"`{name}({im_arg}=...)`", None)
    block = as_sizes(block_size, f"`{name}({block_arg}=...)`", None)
    if stride is None:
        stride = (1,) * len(block)
    stride = as_sizes(stride, f"`{name}({stride_arg}=...)`", None)
    if not block or len(im) != len(block) or len(stride) != len(block):
        raise ValueError(
            f"`{name}`: the array size, block size and stride need the same (non-zero) "
            f"number of axes; got array size {im}, block size {block} and stride {stride}."
        )
    if min(im + block + stride) < 1:
        raise ValueError(
            f"`{name}`: sizes and strides must be positive; got array size {im}, block "
            f"size {block} and stride {stride}."
        )
    nblocks = tuple((i - b) // s + 1 for i, b, s in zip(im, block, stride))
    if min(nblocks) < 1:
        raise ValueError(
            f"`{name}`: the block size {block} is larger than the array size {im}, so no "
            f"complete block fits."
        )
    mask = block_mask(name, mask, block)
    offsets = None if mask is None else tuple(tuple(map(int, o)) for o in np.nonzero(mask))
    return BlockGeometry(im, block, stride, nblocks, offsets)


def block_mask(name: str, mask: ArrayLike | None, block_size: tuple[int, ...]) -> np.ndarray | None:
    """`mask` as a numpy boolean array of shape `block_size`, or None."""
    if mask is None:
        return None
    if isinstance(mask, Tracer):
        raise TypeError(
            f"`{name}`: `mask` must be concrete (a numpy or JAX array known at trace time): "
            f"it fixes which block entries exist; got a traced array."
        )
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise TypeError(f"`{name}`: `mask` must be a boolean array; got dtype {mask.dtype}.")
    if mask.shape != block_size:
        raise ValueError(
            f"`{name}`: `mask` must have the block shape {block_size}; got shape {mask.shape}."
        )
    return mask


@functools.partial(jax.jit, static_argnums=1)
def _unfold(x: jax.Array, geometry: BlockGeometry) -> jax.Array:
    im, block, nblocks = geometry.im, geometry.block, geometry.nblocks
    batch = x.shape[: x.ndim - len(im)]
    if geometry.offsets is not None:
        out = x.reshape(batch + (math.prod(im),)).at[..., _flat_index(geometry)]
        return out.get(mode="promise_in_bounds")
    flat = x.reshape((math.prod(batch),) + im)
    numbers = lax.GatherDimensionNumbers(
        offset_dims=tuple(range(1, len(im) + 2)),
        collapsed_slice_dims=(),
        start_index_map=tuple(range(1, len(im) + 1)),
    )
    sizes = (flat.shape[0],) + block
    out = lax.gather(flat, block_origins(geometry), numbers, sizes, mode=_IN_BOUNDS)
    return jnp.moveaxis(out, 1, 0).reshape(batch + nblocks + block)


@functools.partial(jax.jit, static_argnums=1)
def _fold(y: jax.Array, geometry: BlockGeometry) -> jax.Array:
    im, block, nblocks = geometry.im, geometry.block, geometry.nblocks
    batch = y.shape[: y.ndim - len(nblocks + geometry.entries)]
    if geometry.offsets is not None:
        out = jnp.zeros(batch + (math.prod(im),), y.dtype)
        out = out.at[..., _flat_index(geometry)].add(y, mode="promise_in_bounds")
        return out.reshape(batch + im)
    numbers = lax.ScatterDimensionNumbers(
        update_window_dims=tuple(range(1, len(im) + 2)),
        inserted_window_dims=(),
        scatter_dims_to_operand_dims=tuple(range(1, len(im) + 1)),
    )
    updates = y.reshape((math.prod(batch), math.prod(nblocks)) + block)
    out = jnp.zeros((updates.shape[0],) + im, y.dtype)
    out = lax.scatter_add(out, block_origins(geometry), jnp.moveaxis(updates, 1, 0), numbers)
    return out.reshape(batch + im)


def block_origins(geometry: BlockGeometry) -> np.ndarray:
    """The block origins `[prod(nblocks), D]` (row-major over the blocks)."""
    steps = zip(geometry.nblocks, geometry.stride)
    grids = np.meshgrid(*[np.arange(k) * s for k, s in steps], indexing="ij")
    return np.stack([g.ravel() for g in grids], axis=-1).astype(np.int32)


def _flat_index(geometry: BlockGeometry) -> jax.Array:
    """Row-major positions in the flattened image of every block entry:
    shape `(*nblocks, *block)`, or `(*nblocks, nnz)` with a mask."""
    im, block, stride, nblocks = geometry.im, geometry.block, geometry.stride, geometry.nblocks
    offsets = geometry.offsets
    ndim = len(block)
    dtype = jnp.int32 if math.prod(im) <= np.iinfo(np.int32).max else jnp.int64
    if offsets is None:
        entries = ndim
        offsets = [
            _axis(jnp.arange(b, dtype=dtype), ndim + d, 2 * ndim) for d, b in enumerate(block)
        ]
    else:
        entries = 1
        offsets = [jnp.asarray(o, dtype).reshape((1,) * ndim + (len(o),)) for o in offsets]
    flat = jnp.zeros((1,) * (ndim + entries), dtype)
    for d in range(ndim):
        start = _axis(jnp.arange(nblocks[d], dtype=dtype) * stride[d], d, ndim + entries)
        flat = flat * im[d] + start + offsets[d]
    return flat


def _axis(values: jax.Array, axis: int, ndim: int) -> jax.Array:
    """`values` (1D) reshaped to lie along `axis` of an `ndim`-axis array."""
    shape = [1] * ndim
    shape[axis] = values.shape[0]
    return values.reshape(shape)
