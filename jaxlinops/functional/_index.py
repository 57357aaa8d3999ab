"""Gathering values at integer grid points and its adjoint, scatter-adding them back."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from .._arrays import as_array, promote


def index(vals: jax.Array, idx: Sequence[jax.Array]) -> jax.Array:
    r"""Gather the last `len(idx)` axes of `vals` at integer points.

    $y[b, m] = v[b, i_1[m], \dots, i_D[m]]$: `vals` has shape `[B..., *grid]` with
    `len(grid) == D == len(idx)`; the index arrays share one shape `[M...]`; the result has
    shape `[B..., M...]`. Indices are taken modulo the grid size, so negative indices
    count from the end as in numpy.

    **Arguments:**

    - `vals`: the array to sample.
    - `idx`: a tuple of `D` integer arrays of identical shape, one per sampled axis.
    """
    vals = as_array(vals, "`index(vals=...)`")
    idx = _as_indices("index", idx)
    if vals.ndim < len(idx):
        raise ValueError(
            f"`index`: {len(idx)} index arrays need an array with at least {len(idx)} axes; "
            f"got `vals` of shape {tuple(vals.shape)}."
        )
    grid = vals.shape[vals.ndim - len(idx) :]
    batch = vals.shape[: vals.ndim - len(idx)]
    flat = _ravel(idx, grid)
    out = vals.reshape(batch + (math.prod(grid),)).at[..., flat.ravel()]
    return out.get(mode="promise_in_bounds").reshape(batch + flat.shape)


def index_adjoint(vals: jax.Array, idx: Sequence[jax.Array], grid_size: Sequence[int]) -> jax.Array:
    r"""The adjoint of [`index`][]: scatter-add values onto a zero grid.

    $g[b, n] = \sum_{m : i[m] = n} v[b, m]$: `vals` has shape `[B..., M...]` with `[M...]`
    the shape of the index arrays; the result has shape `[B..., *grid_size]`. Repeated
    points accumulate.

    **Arguments:**

    - `vals`: the values at the points.
    - `idx`: a tuple of `D` integer arrays of identical shape `[M...]`.
    - `grid_size`: the `D` sizes of the grid axes.
    """
    vals = as_array(vals, "`index_adjoint(vals=...)`")
    idx = _as_indices("index_adjoint", idx)
    grid = tuple(int(n) for n in grid_size)
    if len(grid) != len(idx):
        raise ValueError(
            f"`index_adjoint`: `grid_size` must give one size per index array ({len(idx)}); "
            f"got {tuple(grid_size)}."
        )
    points = idx[0].shape
    if vals.ndim < len(points) or vals.shape[vals.ndim - len(points) :] != points:
        raise ValueError(
            f"`index_adjoint`: the last axes of `vals` must have the index shape {points}; "
            f"got `vals` of shape {tuple(vals.shape)}."
        )
    batch = vals.shape[: vals.ndim - len(points)]
    flat = _ravel(idx, grid).ravel()
    out = jnp.zeros(batch + (math.prod(grid),), vals.dtype)
    out = out.at[..., flat].add(vals.reshape(batch + flat.shape), mode="promise_in_bounds")
    return out.reshape(batch + grid)


def _as_indices(name: str, idx) -> tuple[jax.Array, ...]:
    """Validate a tuple of integer index arrays of one shape, cast to one dtype."""
    if isinstance(idx, jax.Array) or not isinstance(idx, Sequence) or not idx:
        raise TypeError(
            f"`{name}`: `idx` must be a non-empty tuple of integer arrays (one per sampled "
            f"axis); got {type(idx).__name__}."
        )
    arrays = tuple(as_array(i, f"`{name}(idx=...)`") for i in idx)
    for d, i in enumerate(arrays):
        if not jnp.issubdtype(i.dtype, jnp.integer):
            raise TypeError(f"`{name}`: `idx[{d}]` must be an integer array; got {i.dtype}.")
    shapes = [tuple(i.shape) for i in arrays]
    if len(set(shapes)) > 1:
        raise ValueError(f"`{name}`: the index arrays must share one shape; got shapes {shapes}.")
    return promote(*arrays)


def _ravel(idx: tuple[jax.Array, ...], grid: tuple[int, ...]) -> jax.Array:
    """Flat (row-major) positions of the points, indices taken modulo the grid sizes."""
    flat = idx[0] % grid[0]
    for i, n in zip(idx[1:], grid[1:]):
        flat = flat * n + i % n
    return flat
