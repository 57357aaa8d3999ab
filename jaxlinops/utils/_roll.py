"""torchlinops' module `utils._roll`: `roll`, `fftshift` and `ifftshift` on JAX arrays.

torchlinops fuses the copies of a multi-axis roll for speed; XLA fuses `jnp.roll` itself,
so these are `jnp.roll` and `jnp.fft.fftshift` with torch's argument conventions.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._arrays import as_array

__all__ = ["fftshift", "ifftshift", "roll"]


def roll(
    x: ArrayLike, shifts: int | Sequence[int] = (), dims: int | Sequence[int] = ()
) -> jax.Array:
    """`x` shifted cyclically by `shifts[i]` along axis `dims[i]`, as `torch.roll` with
    `dims` given: `roll(x, (1, -2), (0, 1))`. An empty `dims` returns `x`; a rolled axis of
    size 0 gives an empty array."""
    x = as_array(x, "`roll(x=...)`")
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if len(shifts) != len(dims):
        raise ValueError(
            f"`roll`: `shifts` and `dims` need the same length; got shifts {shifts} and "
            f"dims {dims}."
        )
    return jnp.roll(x, shifts, dims) if dims else x


def fftshift(x: ArrayLike, dim: int | Sequence[int] | None = None) -> jax.Array:
    """Move the zero-frequency entry to the centre of each axis in `dim` (all axes for
    None), as `torch.fft.fftshift`: a roll by `n // 2` along an axis of size `n`."""
    return _shift(x, dim, inverse=False)


def ifftshift(x: ArrayLike, dim: int | Sequence[int] | None = None) -> jax.Array:
    """The inverse of [`fftshift`][]: a roll by `(n + 1) // 2` along each axis in `dim`."""
    return _shift(x, dim, inverse=True)


def _shift(x: ArrayLike, dim: int | Sequence[int] | None, inverse: bool) -> jax.Array:
    x = as_array(x, f"`{'ifftshift' if inverse else 'fftshift'}(x=...)`")
    dims = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    return roll(x, tuple((x.shape[d] + inverse) // 2 for d in dims), dims)
