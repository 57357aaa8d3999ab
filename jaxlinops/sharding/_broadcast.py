"""torchlinops' helpers for fitting device matrices and nested lists to a tile grid.

Each works on a numpy array (an object array of devices, as `BatchSpec` holds) or on a
JAX array, and returns the same kind. jaxlinops' own `BatchSpec` fits its device matrix
in contiguous runs (`_spec.fit_devices`); `fuzzy_broadcast_to` is torchlinops' fit, which
deals devices out in turn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

Array = np.ndarray | jax.Array


def _numpy_or_jax(arr: object):
    """The array module of `arr` (`jnp` for a JAX array) and `arr` as an array of it."""
    if isinstance(arr, jax.Array):
        return jnp, arr
    return np, np.asarray(arr)


def flatten_recursive(nested_list: list, max_depth: int | None = None) -> list:
    """The items of `nested_list` with nested lists spliced in, at most `max_depth` levels
    deep (None: all the way): `flatten_recursive([[1, 2], [3, [4]]], max_depth=1)` is
    `[1, 2, 3, [4]]`; `max_depth=0` leaves `nested_list`'s items as they are. Only lists
    are flattened (tuples and arrays are items)."""
    if max_depth is not None and (not isinstance(max_depth, int) or max_depth < 0):
        raise ValueError(
            f"`flatten_recursive(max_depth=...)` expects None or an integer >= 0; got "
            f"{max_depth!r}."
        )
    flat = []
    for item in nested_list:
        if isinstance(item, list) and max_depth != 0:
            flat.extend(flatten_recursive(item, None if max_depth is None else max_depth - 1))
        else:
            flat.append(item)
    return flat


def is_broadcastable(a: Sequence[int], b: Sequence[int]) -> bool:
    """Whether the shapes `a` and `b` broadcast together (numpy's rules)."""
    try:
        np.broadcast_shapes(tuple(a), tuple(b))
    except ValueError:
        return False
    return True


def _per_axis(arr: Array, counts: Sequence[int], what: str, xp) -> tuple[Array, list[int]]:
    """`arr` with trailing size-1 axes up to `len(counts)` axes, and `counts` padded with
    1s to `arr.ndim` entries (each checked to be an integer >= 1)."""
    counts = list(counts)
    for c in counts:
        if not isinstance(c, (int, np.integer)) or isinstance(c, bool) or c < 1:
            raise ValueError(f"`{what}`: counts must be integers >= 1; got {counts}.")
    if len(counts) > arr.ndim:
        arr = xp.reshape(arr, arr.shape + (1,) * (len(counts) - arr.ndim))
    return arr, counts + [1] * (arr.ndim - len(counts))


def repeat_along_axes(arr: Array, repeats: Sequence[int]) -> Array:
    """`arr` with each entry repeated `repeats[i]` times along axis `i` (`[a, b]` with
    `[2]` is `[a, a, b, b]`). Missing counts are 1; extra counts add trailing axes."""
    xp, arr = _numpy_or_jax(arr)
    arr, repeats = _per_axis(arr, repeats, "repeat_along_axes", xp)
    for axis, r in enumerate(repeats):
        arr = xp.repeat(arr, r, axis=axis)
    return arr


def tile_along_axes(arr: Array, tile_counts: Sequence[int]) -> Array:
    """`arr` repeated whole `tile_counts[i]` times along axis `i` (`[a, b]` with `[2]` is
    `[a, b, a, b]`). Missing counts are 1; extra counts add trailing axes."""
    xp, arr = _numpy_or_jax(arr)
    arr, tile_counts = _per_axis(arr, tile_counts, "tile_along_axes", xp)
    return xp.tile(arr, tile_counts)


def fuzzy_broadcast_to(arr: Array, target_shape: Sequence[int]) -> Array:
    """`arr` fitted to `target_shape`, axes aligned on the right, as torchlinops fits a
    device matrix to a tile grid.

    Missing leading axes have size 1. An axis of size 1 broadcasts; an axis shorter than
    its target is tiled ($\\lceil n / m \\rceil$ copies) and cut to the target, so entries
    are dealt out in turn: `[1, 2, 3]` to `(4,)` is `[1, 2, 3, 1]`; an axis longer than
    its target is cut to it. Extra leading axes of `arr` beyond `target_shape` must
    broadcast (size 1). The result may be a read-only broadcast view.
    """
    xp, arr = _numpy_or_jax(arr)
    target = tuple(target_shape)
    target = (1,) * (arr.ndim - len(target)) + target
    arr = xp.reshape(arr, (1,) * (len(target) - arr.ndim) + arr.shape)
    if not is_broadcastable(arr.shape, target):
        counts = [math.ceil(t / n) if 1 < n < t else 1 for n, t in zip(arr.shape, target)]
        arr = tile_along_axes(arr, counts)
        arr = arr[tuple(slice(0, t) for t in target)]
    return xp.broadcast_to(arr, np.broadcast_shapes(target, arr.shape))
