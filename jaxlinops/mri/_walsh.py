r"""Walsh (adaptive combine) coil sensitivity maps from coil images.

Walsh, Gmitro and Marcellin, MRM 43:682 (2000): per pixel $p$, the coil covariance over a
box window $W(p)$ of width `smoothing` along each grid axis,

$$R(p) = \sum_{p' \in W(p)} x(p')\, x(p')^H \in \mathbb{C}^{C \times C},$$

and its dominant eigenvector is the map at $p$: unit root-sum-of-squares, its phase taken
relative to the first coil. The eigenvector comes from a few power iterations (as in
Inati et al.'s fast method, ISMRM 2014), started here at the window's summed coil vector
$\sum_{p' \in W(p)} x(p')$, which inside the object, where $R(p)$ is nearly rank one,
is already close to it. No calibration, SVD or FFT: cheaper than `espirit_maps`,
less accurate near the object's edges and in noise.
"""

from __future__ import annotations

import functools as ft
import math

import jax
import jax.numpy as jnp
from jax import Array
from jax.typing import ArrayLike

from ._espirit import _power_method, _relative_phase

_TILE_PIXELS = 1024  # pixels per block of the power iterations (see `_espirit`)


def walsh_maps(
    coil_images: ArrayLike, *, smoothing: int = 5, ndim: int = 2, max_iter: int = 10
) -> Array:
    r"""Walsh sensitivity maps, `(..., C, *grid) -> (..., C, *grid)`.

    **Arguments:**

    - `coil_images`: complex coil images `(..., C, *grid)` with `ndim` grid axes; leading
      axes are a batch (e.g. slices), mapped with `jax.vmap`.
    - `smoothing`: the width of the box window, in pixels along each grid axis (centred;
      zero outside the grid).
    - `ndim`: the number of grid axes.
    - `max_iter`: power iterations per pixel.

    **Returns:** the maps, of `coil_images`' shape and dtype: unit norm over the coils
    (zero where the window holds no signal), a real non-negative first coil.

    Jit-compiled inside (the integer arguments are static). The batch axes shard
    naturally, and so do the pixels: each needs only its window's neighbours (a halo of
    `smoothing // 2`), its eigenvector depends on that pixel's $R(p)$ alone.
    """
    coil_images = jnp.asarray(coil_images)
    _check(coil_images, smoothing, ndim, max_iter)
    return _walsh_batched(coil_images, smoothing=smoothing, ndim=ndim, max_iter=max_iter)


def _check(coil_images: Array, smoothing: int, ndim: int, max_iter: int) -> None:
    """Raise a `TypeError` for real images, a `ValueError` naming the bad argument."""
    if not jnp.iscomplexobj(coil_images):
        raise TypeError(
            f"walsh_maps: `coil_images` must be complex (complex64 or complex128); got dtype "
            f"{coil_images.dtype}."
        )
    if not isinstance(ndim, int) or ndim < 1 or coil_images.ndim < ndim + 1:
        raise ValueError(
            f"walsh_maps: `coil_images` must have shape (..., C, *grid) with `ndim` grid axes, "
            f"`ndim` >= 1; got coil_images.shape={coil_images.shape}, ndim={ndim!r}."
        )
    if smoothing < 1:
        raise ValueError(f"walsh_maps: `smoothing` must be at least 1; got smoothing={smoothing}.")
    if max_iter < 1:
        raise ValueError(f"walsh_maps: `max_iter` must be at least 1; got max_iter={max_iter}.")


@ft.partial(jax.jit, static_argnames=("smoothing", "ndim", "max_iter"))
def _walsh_batched(coil_images, *, smoothing, ndim, max_iter):
    """`_walsh` vmapped over the leading axes before `(C, *grid)`."""
    fn = ft.partial(_walsh, smoothing=smoothing, max_iter=max_iter)
    for _ in range(coil_images.ndim - ndim - 1):
        fn = jax.vmap(fn)
    return fn(coil_images)


def _walsh(images: Array, *, smoothing: int, max_iter: int) -> Array:
    """One `(C, *grid)` stack of coil images to its maps."""
    coils, grid = images.shape[0], images.shape[1:]
    axes = tuple(range(1, images.ndim))
    # gram_t[j, i] = R_ij = sum over the window of x_i conj(x_j), as `_power_method` takes it
    gram_t = _box_sum(
        images[None] * jnp.conj(images[:, None]), smoothing, tuple(a + 1 for a in axes)
    )
    start = _box_sum(images, smoothing, axes)
    tiles = (_tiles(gram_t, len(grid)), _tiles(start, len(grid)))
    vectors, _ = jax.lax.map(lambda gs: _power_method(gs[0], gs[1], max_iter), tiles)
    vectors = jnp.moveaxis(vectors, 0, 1).reshape(coils, -1)[:, : math.prod(grid)]
    return _relative_phase(vectors.reshape(coils, *grid))


def _tiles(a: Array, grid_ndim: int) -> Array:
    """`(*lead, *grid)` to `(tiles, *lead, _TILE_PIXELS)`: the flattened grid, zero-padded
    to whole tiles."""
    lead = a.shape[: a.ndim - grid_ndim]
    flat = a.reshape(math.prod(lead), -1)
    tiles = -(-flat.shape[1] // _TILE_PIXELS)
    flat = jnp.pad(flat, [(0, 0), (0, tiles * _TILE_PIXELS - flat.shape[1])])
    return jnp.moveaxis(flat.reshape(-1, tiles, _TILE_PIXELS), 1, 0).reshape(tiles, *lead, -1)


def _box_sum(a: Array, width: int, axes: tuple[int, ...]) -> Array:
    """The sum of `a` over a centred box `width` wide along each of `axes` (zero outside)."""
    for axis in axes:
        n = a.shape[axis]
        widths = [(0, 0)] * a.ndim
        widths[axis] = (width // 2, width - 1 - width // 2)
        padded = jnp.pad(a, widths)
        shifted = [jax.lax.slice_in_dim(padded, k, k + n, axis=axis) for k in range(width)]
        a = ft.reduce(jnp.add, shifted)
    return a
