"""Gathering values at integer grid points and its adjoint, scatter-adding them back."""

from __future__ import annotations

import math
from collections.abc import Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.core import Tracer

from .._arrays import as_array, as_sizes, promote


def index(vals: jax.Array, idx: Sequence[jax.Array]) -> jax.Array:
    r"""Gather the last `len(idx)` axes of `vals` at integer points.

    $y[b, m] = v[b, i_1[m], \dots, i_D[m]]$: `vals` has shape `[B..., *grid]` with
    `len(grid) == D == len(idx)`; the index arrays share one shape `[M...]`; the result has
    shape `[B..., M...]`. As in numpy, an index may lie in `[-N, N - 1]` (negative indices
    count from the end).

    **Bad values:** concrete indices outside `[-N, N - 1]` raise a ValueError; traced ones
    (under `jit`, `vmap`, `grad`) are checked at run time by `equinox.error_if` (a cheap
    min/max), which raises an error naming the axis.

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
    return gather(vals, checked_range("index", idx, grid, negative=True))


def index_adjoint(vals: jax.Array, idx: Sequence[jax.Array], grid_size: Sequence[int]) -> jax.Array:
    r"""The adjoint of [`index`][]: scatter-add values onto a zero grid.

    $g[b, n] = \sum_{m : i[m] = n} v[b, m]$: `vals` has shape `[B..., M...]` with `[M...]`
    the shape of the index arrays; the result has shape `[B..., *grid_size]`. Repeated
    points accumulate. Indices and bad values are treated as in [`index`][].

    **Arguments:**

    - `vals`: the values at the points.
    - `idx`: a tuple of `D` integer arrays of identical shape `[M...]`.
    - `grid_size`: the `D` sizes of the grid axes.
    """
    vals = as_array(vals, "`index_adjoint(vals=...)`")
    idx = _as_indices("index_adjoint", idx)
    grid = as_sizes(grid_size, "`index_adjoint(grid_size=...)`", 1)
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
    return scatter(vals, checked_range("index_adjoint", idx, grid, negative=True), grid)


def gather(vals: jax.Array, idx: tuple[jax.Array, ...]) -> jax.Array:
    """[`index`][] without input checks (indices taken modulo the grid sizes)."""
    grid = vals.shape[vals.ndim - len(idx) :]
    batch = vals.shape[: vals.ndim - len(idx)]
    flat = _ravel(idx, grid)
    out = vals.reshape(batch + (math.prod(grid),)).at[..., flat.ravel()]
    return out.get(mode="promise_in_bounds").reshape(batch + flat.shape)


def scatter(vals: jax.Array, idx: tuple[jax.Array, ...], grid: tuple[int, ...]) -> jax.Array:
    """[`index_adjoint`][] without input checks (indices taken modulo the grid sizes)."""
    points = idx[0].shape
    batch = vals.shape[: vals.ndim - len(points)]
    flat = _ravel(idx, grid).ravel()
    out = jnp.zeros(batch + (math.prod(grid),), vals.dtype)
    out = out.at[..., flat].add(vals.reshape(batch + flat.shape), mode="promise_in_bounds")
    return out.reshape(batch + grid)


def checked_range(name: str, idx: tuple, grid: Sequence[int], negative: bool = False) -> tuple:
    """`idx` with each `idx[d]` checked to lie in `[0, N_d - 1]` (`[-N_d, N_d - 1]` with
    `negative`): a ValueError for concrete indices (also a constant inside a traced
    function), an `equinox.error_if` run-time check for traced ones."""
    out = []
    for d, (i, n) in enumerate(zip(idx, grid)):
        lo = -n if negative else 0
        where = f"`{name}`: indices of axis {d} must lie in [{lo}, {n - 1}] (grid {tuple(grid)})"
        if isinstance(i, Tracer):
            i = eqx.error_if(i, (i < lo) | (i > n - 1), f"{where}; got one outside.")
        elif i.size:
            with jax.ensure_compile_time_eval():
                low, high = int(jnp.min(i)), int(jnp.max(i))
            if low < lo or high > n - 1:
                raise ValueError(f"{where}; got values in [{low}, {high}].")
        out.append(i)
    return tuple(out)


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
