"""Kernel interpolation between a grid and off-grid points ("ungrid") and its adjoint
("grid")."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
from jaxtyping import Float

from ..._arrays import as_array, as_sizes, promote
from .._gridding import gather_windows, neighbourhoods, scatter_windows
from .._kernels import (
    KernelParams,
    KernelSettings,
    Width,
    check_locs,
    check_locs_in_grid,
    kernel_settings,
)


def interpolate(
    vals: jax.Array,
    locs: Float[ArrayLike, "*points ndim"],
    width: Width = 4.0,
    kernel: str = "kaiser_bessel",
    norm: int = 1,
    pad_mode: str = "circular",
    kernel_params: KernelParams | None = None,
) -> jax.Array:
    r"""Interpolate grid values at off-grid points: $y[b, l] = \sum_g w(g - p_l) \, v[b, g]$.

    `vals` has shape `[B..., *grid]`, the grid being its last `D = locs.shape[-1]` axes;
    `locs` has shape `[L..., D]` in grid units (`[0, N - 1]`, 'ij' order); the result has
    shape `[B..., L...]`. With radius $r_d = w_d / 2$, the grid points $g$ with
    $|g_d - p_d| \le r_d$ on every axis contribute with weight
    $\prod_d K((g_d - p_d) / r_d)$ (`norm=1`) or $K(\|(g - p) / r\|_2)$ (`norm=2`).

    **Arguments:**

    - `vals`: the grid values, real or complex.
    - `locs`: the points, a real array `[L..., D]` (finite values): any value with
      `"circular"` padding (reduced modulo the grid size at the precision of a value in
      `[0, N)`), `[0, N - 1]` with `"zero"` padding.
    - `width`: the kernel width in grid points: a number or one per grid axis, at most the
      grid size.
    - `kernel`: `"kaiser_bessel"` ($I_0(\beta \sqrt{1 - x^2})$, unnormalised) or
      `"spline"` ($\max(1 - |x|, 0)$).
    - `norm`: 1 (product of per-axis kernels) or 2 (kernel of the Euclidean distance).
    - `pad_mode`: `"circular"` (grid indices wrap around) or `"zero"` (grid points beyond
      the edges count as zeros; the points themselves must lie in `[0, N - 1]`).
    - `kernel_params`: a mapping (or pairs) of kernel parameters: `{"beta": 1.0}` for
      Kaiser–Bessel.

    **Bad values:** concrete `locs` with NaN or Inf, or outside the grid with
    `pad_mode="zero"`, raise a ValueError. Traced `locs` (under `jit`, `vmap`, `grad`)
    cannot be checked in Python: such a point gets NaN kernel weights, so its output is
    NaN (and in [`interpolate_adjoint`][] NaN reaches every grid entry of its window).
    This costs nothing extra, where a runtime check would need a reduction and a host
    round trip on every call.
    """
    vals = as_array(vals, "`interpolate(vals=...)`")
    locs = as_array(locs, "`interpolate(locs=...)`")
    check_locs("interpolate", locs)
    ndim = locs.shape[-1]
    if vals.ndim < ndim:
        raise ValueError(
            f"`interpolate`: locs of shape {tuple(locs.shape)} address {ndim} grid axes, but "
            f"`vals` has shape {tuple(vals.shape)}."
        )
    grid = vals.shape[vals.ndim - ndim :]
    settings = kernel_settings("interpolate", grid, width, kernel, norm, pad_mode, kernel_params)
    check_locs_in_grid("interpolate", locs, grid, pad_mode)
    return ungrid(vals, locs, settings)


def interpolate_adjoint(
    vals: jax.Array,
    locs: Float[ArrayLike, "*points ndim"],
    grid_size: Sequence[int],
    width: Width = 4.0,
    kernel: str = "kaiser_bessel",
    norm: int = 1,
    pad_mode: str = "circular",
    kernel_params: KernelParams | None = None,
) -> jax.Array:
    r"""The adjoint of [`interpolate`][] ("gridding"): spread point values onto a zero grid,
    $g[b, n] = \sum_l w(n - p_l) \, v[b, l]$.

    `vals` has shape `[B..., L...]` with `[L...] = locs.shape[:-1]`; the result has shape
    `[B..., *grid_size]`. The arguments are those of [`interpolate`][], plus `grid_size`,
    the `D` sizes of the grid; bad values are treated as there.
    """
    vals = as_array(vals, "`interpolate_adjoint(vals=...)`")
    locs = as_array(locs, "`interpolate_adjoint(locs=...)`")
    check_locs("interpolate_adjoint", locs)
    grid = as_sizes(grid_size, "`interpolate_adjoint(grid_size=...)`", 1)
    if len(grid) != locs.shape[-1]:
        raise ValueError(
            f"`interpolate_adjoint`: grid_size must give {locs.shape[-1]} sizes (one per locs "
            f"coordinate, locs shape {tuple(locs.shape)}); got {tuple(grid_size)}."
        )
    points = locs.shape[:-1]
    if vals.ndim < len(points) or vals.shape[vals.ndim - len(points) :] != points:
        raise ValueError(
            f"`interpolate_adjoint`: the last axes of `vals` must be the locs batch shape "
            f"{points}; got `vals` of shape {tuple(vals.shape)}."
        )
    settings = kernel_settings(
        "interpolate_adjoint", grid, width, kernel, norm, pad_mode, kernel_params
    )
    check_locs_in_grid("interpolate_adjoint", locs, grid, pad_mode)
    return grid_points(vals, locs, grid, settings)


@functools.partial(jax.jit, static_argnums=2)
def ungrid(
    vals: jax.Array, locs: jax.Array, settings: KernelSettings, order: jax.Array | None = None
) -> jax.Array:
    """[`interpolate`][] with checked `settings` (no input checks), compiled as one program
    per shape and settings.

    `order` (optional, `[P]` int) is the order in which to visit the `P` flattened points,
    e.g. [`point_order`][]: any permutation gives the same result; one that visits nearby
    points together reads the grid with fewer cache misses.
    """
    ndim = locs.shape[-1]
    grid, batch = vals.shape[vals.ndim - ndim :], vals.shape[: vals.ndim - ndim]
    points = locs.shape[:-1]
    vals, locs = _promoted(vals, locs)
    if order is not None:
        locs = locs[order]
    # the barrier keeps XLA from evaluating the kernel again inside the gather, once per
    # window entry
    nbhd = jax.lax.optimization_barrier(neighbourhoods(locs, grid, settings))
    out = gather_windows(vals.reshape((math.prod(batch),) + grid), nbhd, settings.pad_mode)
    if order is not None:
        out = jnp.zeros_like(out).at[:, order].set(out, unique_indices=True)
    return out.reshape(batch + points)


@functools.partial(jax.jit, static_argnums=(2, 3))
def grid_points(
    vals: jax.Array,
    locs: jax.Array,
    grid_size: tuple[int, ...],
    settings: KernelSettings,
    order: jax.Array | None = None,
) -> jax.Array:
    """[`interpolate_adjoint`][] with checked `settings` (no input checks), compiled as one
    program per shape and settings; `order` as for [`ungrid`][]."""
    points = locs.shape[:-1]
    batch = vals.shape[: vals.ndim - len(points)]
    vals, locs = _promoted(vals, locs)
    flat = vals.reshape((math.prod(batch), math.prod(points)))
    if order is not None:
        locs, flat = locs[order], flat[:, order]
    nbhd = neighbourhoods(locs, grid_size, settings)
    out = scatter_windows(flat, nbhd, grid_size, settings.pad_mode)
    return out.reshape(batch + tuple(grid_size))


def _promoted(vals: jax.Array, locs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`vals` at (at least) floating precision and `locs` flattened to `[P, D]` in the
    matching real dtype."""
    if not jnp.issubdtype(locs.dtype, jnp.floating):
        locs = locs.astype(jnp.result_type(float))
    vals, _ = promote(vals, locs)
    real = jnp.finfo(vals.dtype).dtype
    return vals, locs.reshape((-1, locs.shape[-1])).astype(real)
