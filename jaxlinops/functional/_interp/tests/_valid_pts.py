"""Random interpolation points clear of the grid's edges (torchlinops' `get_valid_locs`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import jax.random as jr
import numpy as np

from ...._arrays import Device, as_sizes


def get_valid_locs(
    locs_batch_size: Sequence[int],
    grid_size: Sequence[int],
    ndim: int,
    width: float,
    device: Device | str | None = None,
    centered: bool = False,
    valid: bool = True,
    *,
    key: jax.Array | None = None,
) -> jax.Array:
    r"""Uniform random points `[*locs_batch_size, ndim]` on the grid `grid_size`.

    With `valid=True` coordinate $d$ lies in $[\lceil w/2 \rceil, N_d - 1 - \lceil w/2
    \rceil]$ ($w$ = `width`), so a kernel of that width never reaches past the grid's edge
    (no wrap-around); with `valid=False` in $[0, N_d - 1]$. `centered=True` subtracts
    $N_d / 2$ (frequencies in cycles per field of view, as a NUFFT takes them).

    **Arguments:** torchlinops' (`device`: a `jax.Device`, a platform name such as `"cpu"`
    or `"gpu:1"`, or None for the default device), and `key`: a `jax.random` key; None
    draws from NumPy's global generator (`np.random.seed` makes it repeatable).
    Returns float32, as torchlinops (torch's default dtype), with x64 enabled or not.
    """
    batch = as_sizes(locs_batch_size, "`get_valid_locs(locs_batch_size=...)`")
    grid = as_sizes(grid_size, "`get_valid_locs(grid_size=...)`", 1)
    if len(grid) < ndim:
        raise ValueError(
            f"`get_valid_locs`: grid_size must have at least ndim={ndim} sizes; got {grid}."
        )
    target = _device(device)
    margin = math.ceil(width / 2) if valid else 0
    axes = (1,) * len(batch) + (ndim,)
    sizes = np.asarray(grid[:ndim], dtype=float).reshape(axes)
    lower = np.full(axes, float(margin)) - (sizes / 2 if centered else 0.0)
    span = sizes - 1 - 2 * margin
    shape = (*batch, ndim)
    dtype = jnp.float32
    if key is None:
        unit = jnp.asarray(np.random.random_sample(shape), dtype)
    else:
        unit = jr.uniform(key, shape, dtype)
    locs = unit * jnp.asarray(span, dtype) + jnp.asarray(lower, dtype)
    return jax.device_put(locs, target)


def _device(device: Device | str | None) -> Device | None:
    """`device` as a `jax.Device`: a platform name, optionally with an index (`"gpu:1"`)."""
    if device is None or isinstance(device, Device):
        return device
    platform, _, index = device.partition(":")
    platform = {"cuda": "gpu", "rocm": "gpu"}.get(platform, platform)
    try:
        return jax.devices(platform)[int(index or 0)]
    except (RuntimeError, IndexError, ValueError) as err:
        raise ValueError(
            f"`get_valid_locs(device=...)`: no device {device!r} (devices: {jax.devices()})."
        ) from err
