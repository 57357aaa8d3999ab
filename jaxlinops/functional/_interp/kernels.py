"""The interpolation kernels under torchlinops' names (`torchlinops.functional._interp.
kernels`): the kernels, the kernel for a name and its parameters, and the weights of
points against grid neighbours."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp

from .._kernels import KERNELS, kaiser_bessel, spline

__all__ = [
    "get_kernel_fn",
    "kaiser_bessel",
    "kaiser_bessel_torch",
    "spline",
    "spline_torch",
    "weights_torch",
]

kaiser_bessel_torch = kaiser_bessel
"""torchlinops' name of [`kaiser_bessel`][] (`kaiser_bessel_torch(x, beta)`); the values
on $[-1, 1]$ are torchlinops', and 0 outside (torchlinops returns NaN there)."""

spline_torch = spline
"""torchlinops' name of [`spline`][], $\\max(1 - |x|, 0)$."""

_DEFAULT_PARAMS: dict[str, dict[str, float]] = {"kaiser_bessel": {"beta": 1.0}, "spline": {}}


def _apply_default_kernel_params(kernel: str, kernel_params: dict) -> dict:
    """`kernel_params` with the kernel's defaults filled in (`beta=1.0` for
    `"kaiser_bessel"`), updated in place and returned, as torchlinops does; a ValueError
    for an unknown kernel."""
    _check_kernel("_apply_default_kernel_params", kernel)
    for name, value in _DEFAULT_PARAMS[kernel].items():
        kernel_params.setdefault(name, value)
    return kernel_params


def get_kernel_fn(kernel: str, kernel_params: Mapping[str, float]) -> Callable:
    """The kernel function on $[-1, 1]$ named `kernel` (`"kaiser_bessel"`, with
    `kernel_params["beta"]`, default 1.0, or `"spline"`); a ValueError for another name."""
    _check_kernel("get_kernel_fn", kernel)
    if kernel == "spline":
        return spline
    return functools.partial(kaiser_bessel, beta=kernel_params.get("beta", 1.0))


def weights_torch(
    locs: jax.Array,
    grid_locs: jax.Array,
    radius: jax.Array | float,
    norm: int,
    kernel_fn: Callable,
    grid_size: jax.Array,
    padding: str,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    r"""torchlinops' kernel weights of points `locs` `[P, D]` against their grid
    neighbours `grid_locs` `[P, G, D]`: `(weights [P, G], grid indices [P, G, D], mask
    [P, G])`.

    With $\delta = (p - g) / r$: `norm=2` gives $k(\|\delta\|_2)$ with mask
    $\|\delta\|_2 \le r$, `norm=1` gives $\prod_d k(\delta_d)$ with mask
    $|\delta_d| \le r$ for all $d$ (torchlinops compares the normalised distance with
    $r$); any other norm is a ValueError. Non-finite weights become 0. With
    `padding="zero"` the mask also drops neighbours outside $[0, N_d)$; the indices are
    always wrapped into the grid, $g \bmod N$, as integers.
    """
    locs, grid_locs = jnp.asarray(locs), jnp.asarray(grid_locs)
    dtype = jnp.promote_types(locs.dtype, grid_locs.dtype)
    locs, grid_locs = locs.astype(dtype), grid_locs.astype(dtype)
    grid_size = jnp.asarray(grid_size).astype(dtype).reshape((1,) * (grid_locs.ndim - 1) + (-1,))
    dlocs = (jnp.expand_dims(locs, -2) - grid_locs) / radius
    if norm == 2:
        dist = jnp.linalg.norm(dlocs, axis=-1)
        weights, mask = kernel_fn(dist), dist <= radius
    elif norm == 1:
        weights = jnp.prod(kernel_fn(dlocs), axis=-1)
        mask = jnp.all(jnp.abs(dlocs) <= radius, axis=-1)
    else:
        raise ValueError(f"`weights_torch`: unexpected norm {norm!r}; expected 1 or 2.")
    weights = jnp.where(jnp.isfinite(weights), weights, 0.0)
    if padding == "zero":
        mask = mask & jnp.all((grid_locs >= 0) & (grid_locs < grid_size), axis=-1)
    indices = jnp.remainder(grid_locs, grid_size).astype(jnp.result_type(int))
    return weights, indices, mask


def _check_kernel(name: str, kernel: str) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"`{name}`: unrecognized kernel {kernel!r}; expected one of {KERNELS}.")
