r"""ESPIRiT coil sensitivity maps from the fully sampled centre of Cartesian k-space.

The steps (Uecker et al., MRM 71:990, 2014; the behaviour of sigpy's `EspiritCalib`):

1. the calibration region: the centred `calib_width`$^d$ block of k-space;
2. its block (Hankel) matrix $A$, one row per `kernel_width`$^d$ window (stride 1), the
   window's samples of every coil in a row;
3. the SVD $A = U S V^H$; the kernels are the rows $v_k$ of $V^H$ with
   $s_k > \text{thresh} \cdot s_\max$;
4. each kernel, zero-padded to the grid and inverse-FFT'd, gives image-domain kernels
   $a_k(p) \in \mathbb{C}^C$ and the per-pixel matrix
   $G(p) = w^{-d} \sum_k a_k(p)\, a_k(p)^H$ ($w$ the kernel width);
5. per pixel, 100 power iterations (`max_iter`) from the all-ones vector: the map is the
   last iterate, the eigenvalue the norm of the last product; the map's phase is taken
   relative to the first coil, and it is zeroed where the eigenvalue is $\le$ `crop`.

$G$ is never formed on the whole grid: it is a trigonometric polynomial of degree
$w - 1$ in each axis, $G(p) = \sum_{|\delta| < w} c(\delta)\, e^{2\pi i\, \delta \cdot
(p - N/2) / N}$, whose coefficients $c$ are the kernels' summed autocorrelations (a small
FFT of size $2w - 1$). Each tile of about 1024 pixels evaluates $G$ from $c$ (separable
DFT matrices) and runs its power iterations while the tile's $G$ sits in the cache.
"""

from __future__ import annotations

import functools as ft
import itertools as it

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array
from jax.typing import ArrayLike

# pixels per tile: fastest on a 2-core CPU (256: 1.3x, 16384: 2.7x slower), where 32 coils'
# C x C x 1024 complex64 (8 MiB) stay in the last-level cache
_TILE_PIXELS = 1024


def espirit_maps(
    kspace: ArrayLike,
    *,
    calib_width: int = 24,
    kernel_width: int = 6,
    thresh: float = 0.02,
    crop: float = 0.95,
    max_iter: int = 100,
    ndim: int = 2,
) -> Array:
    r"""ESPIRiT sensitivity maps, `(..., C, *grid) -> (..., C, *grid)`, as sigpy's
    `sigpy.mri.app.EspiritCalib(kspace, calib_width, thresh, kernel_width, crop,
    max_iter).run()` computes them (one set of maps), in JAX.

    **Arguments:**

    - `kspace`: Cartesian multi-coil k-space, `(..., C, *grid)` with `ndim` grid axes,
      centred (DC at index `N // 2` of each grid axis), complex64 or complex128. Leading
      axes are a batch (e.g. slices), mapped with `jax.vmap`.
    - `calib_width`: width of the centred calibration block, at most each grid size.
    - `kernel_width`: width of the kernel window, at most `calib_width`.
    - `thresh`: kernels are the right singular vectors with singular value
      $> \text{thresh} \cdot s_\max$ (all are kept with a mask: shapes never depend on data).
    - `crop`: maps are zeroed where the eigenvalue is $\le$ `crop`.
    - `max_iter`: the number of power iterations per pixel.
    - `ndim`: the number of grid axes (2 or 3 for MRI; any $\ge 1$ works).

    **Returns:** the maps, of `kspace`'s shape and dtype; each pixel's coil vector has unit
    norm (or is zero where cropped) and a real non-negative first coil.

    Jit-compiled inside (the integer arguments are static, `thresh` and `crop` may be
    traced), so it also works under `jax.jit` and `jax.vmap`. The batch axes shard
    naturally. So do the pixels: after the calibration (an SVD of a matrix of
    `(calib_width - kernel_width + 1)`$^d$ rows, the same for every pixel), each pixel's
    $G(p)$ and eigenvector depend on that pixel alone (elementwise across pixels).
    """
    kspace = jnp.asarray(kspace)
    _check(kspace, calib_width, kernel_width, max_iter, ndim)
    return _espirit_batched(
        kspace, thresh, crop, calib_width=calib_width, kernel_width=kernel_width,
        max_iter=max_iter, ndim=ndim,
    )  # fmt: skip


def _check(kspace: Array, calib_width: int, kernel_width: int, max_iter: int, ndim: int) -> None:
    """Raise a `TypeError` for real `kspace`, a `ValueError` naming the argument for a bad
    shape or width."""
    if not jnp.iscomplexobj(kspace):
        raise TypeError(
            f"espirit_maps: `kspace` must be complex (complex64 or complex128); got dtype "
            f"{kspace.dtype}."
        )
    shape = kspace.shape
    if not isinstance(ndim, int) or ndim < 1 or len(shape) < ndim + 1:
        raise ValueError(
            f"espirit_maps: `kspace` must have shape (..., C, *grid) with `ndim` grid axes, "
            f"`ndim` >= 1; got kspace.shape={shape}, ndim={ndim!r}."
        )
    grid = shape[-ndim:]
    if not 1 <= calib_width <= min(grid):
        raise ValueError(
            f"espirit_maps: `calib_width` must be between 1 and the smallest grid size "
            f"{min(grid)} (grid {grid}); got calib_width={calib_width}."
        )
    if not 1 <= kernel_width <= calib_width:
        raise ValueError(
            f"espirit_maps: `kernel_width` must be between 1 and calib_width={calib_width}; "
            f"got kernel_width={kernel_width}."
        )
    if max_iter < 1:
        raise ValueError(f"espirit_maps: `max_iter` must be at least 1; got max_iter={max_iter}.")


@ft.partial(jax.jit, static_argnames=("calib_width", "kernel_width", "max_iter", "ndim"))
def _espirit_batched(kspace, thresh, crop, *, calib_width, kernel_width, max_iter, ndim):
    """`_espirit` vmapped over the leading axes before `(C, *grid)`."""
    fn = ft.partial(_espirit, calib_width=calib_width, kernel_width=kernel_width, max_iter=max_iter)
    for _ in range(kspace.ndim - ndim - 1):
        fn = jax.vmap(fn, in_axes=(0, None, None))
    return fn(kspace, thresh, crop)


def _espirit(kspace, thresh, crop, *, calib_width, kernel_width, max_iter):
    """One `(C, *grid)` k-space to its `(C, *grid)` maps."""
    real = jnp.finfo(kspace.dtype).dtype
    grid = kspace.shape[1:]
    centre = tuple(
        slice(n // 2 - calib_width // 2, n // 2 - calib_width // 2 + calib_width) for n in grid
    )
    kernels = _kernels(kspace[(slice(None), *centre)], kernel_width, jnp.asarray(thresh, real))
    coeffs = _gram_coefficients(kernels)
    tile = (min(n, round(_TILE_PIXELS ** (1 / len(grid)))) for n in grid)
    dfts = [_dft_matrix(n, t, kernel_width, kspace.dtype) for n, t in zip(grid, tile)]
    maps = _maps_on_tiles(coeffs, dfts, max_iter, jnp.asarray(crop, real))
    return maps[(slice(None), *(slice(n) for n in grid))]


def _kernels(calib: Array, width: int, thresh: Array) -> Array:
    r"""The kernels `(R, C, *[width] * d)` of the calibration block `calib` `(C, *[cw] * d)`:
    the rows of $V^H$ in the SVD of the block matrix, those with $s_k \le \text{thresh}
    \cdot s_\max$ zeroed ($R$ = the matrix's rank bound, a static shape)."""
    coils, d = calib.shape[0], calib.ndim - 1
    blocks = calib.shape[1] - width + 1
    # window b, offset u along axis a: sample b + u; the index arrays broadcast to
    # (*[blocks] * d, *[width] * d)
    index = [
        (np.arange(blocks)[:, None] + np.arange(width)).reshape(
            [blocks if i == a else 1 for i in range(d)] + [width if i == a else 1 for i in range(d)]
        )
        for a in range(d)
    ]
    windows = jnp.moveaxis(calib[(slice(None), *index)], 0, d)  # (*blocks, C, *width)
    _, s, vh = jnp.linalg.svd(windows.reshape(blocks**d, coils * width**d), full_matrices=False)
    keep = (s > thresh * s[0]).astype(vh.dtype)
    return (keep[:, None] * vh).reshape(-1, coils, *[width] * d)


def _gram_coefficients(kernels: Array) -> Array:
    r"""$c(\delta)$, `(*[2w - 1] * d, C, C)`, $\delta_a = -(w - 1), \dots, w - 1$: the
    coefficients of $G(p)^T = \sum_\delta c(\delta)\, e^{2\pi i \delta \cdot q / N}$,
    $q = p - N/2$, with $G(p) = w^{-d} \sum_k a_k(p)\, a_k(p)^H$.

    With $\hat v_k$ the kernels' DFTs of size $L = 2w - 1$ (no wrap-around),
    $P_{ij}(t) = \sum_k \hat v_{ki}(t)\, \overline{\hat v_{kj}(t)}$ and
    $c_{ji}(\delta) = w^{-d}\, \mathrm{IDFT}(P_{ij})(\delta \bmod L)$.
    """
    coils, width = kernels.shape[1], kernels.shape[-1]
    d, size = kernels.ndim - 2, 2 * width - 1
    axes = tuple(range(-d, 0))
    spectra = jnp.fft.fftn(kernels, s=(size,) * d, axes=axes).reshape(*kernels.shape[:2], -1)
    products = jnp.einsum("kit,kjt->tji", spectra, jnp.conj(spectra))
    coeffs = jnp.fft.ifftn(products.reshape(*(size,) * d, coils, coils), axes=tuple(range(d)))
    order = np.arange(-(width - 1), width) % size  # delta = -(w - 1) ... w - 1
    for a in range(d):
        coeffs = jnp.take(coeffs, order, axis=a)
    return coeffs / width**d


def _dft_matrix(n: int, tile: int, width: int, dtype) -> Array:
    r"""$E[p, \delta] = e^{2\pi i\, \delta (p - n/2) / n}$ for $p$ up to a whole number of
    tiles (the rows past `n` are cropped later), `(tiles, tile, 2 * width - 1)`."""
    tiles = -(-n // tile)
    p = np.arange(tiles * tile) - n // 2
    turns = np.mod(np.outer(p, np.arange(-(width - 1), width)), n) / n  # exact, then scaled
    return jnp.asarray(np.exp(2j * np.pi * turns), dtype).reshape(tiles, tile, -1)


def _maps_on_tiles(coeffs: Array, dfts: list[Array], max_iter: int, crop: Array) -> Array:
    """The maps `(C, *[tiles * tile per axis])`: `_tile_maps` mapped over the tiles."""
    counts = [e.shape[0] for e in dfts]
    tile = [e.shape[1] for e in dfts]
    index = np.indices(counts).reshape(len(counts), -1)
    xs = [e[i] for e, i in zip(dfts, index)]  # each (tiles, tile_a, 2w - 1)
    maps = jax.lax.map(lambda es: _tile_maps(coeffs, es, max_iter, crop), xs)
    d, coils = len(counts), coeffs.shape[-1]
    maps = maps.reshape(*counts, coils, *tile)
    order = (d, *it.chain.from_iterable((a, d + 1 + a) for a in range(d)))
    return maps.transpose(order).reshape(coils, *(c * t for c, t in zip(counts, tile)))


def _tile_maps(coeffs: Array, dfts: list[Array], max_iter: int, crop: Array) -> Array:
    """One tile's maps `(C, T)`: its $G^T$ `(C, C, T)` from the coefficients, then the
    power method, the first coil's phase removed and the crop."""
    gram_t = coeffs
    for e in dfts:  # contract the leading delta axis, the tile's axis goes last
        gram_t = jnp.tensordot(gram_t, e, axes=(0, 1))
    gram_t = gram_t.reshape(*gram_t.shape[:2], -1)
    vectors, eig = _power_method(gram_t, jnp.ones(gram_t.shape[1:], gram_t.dtype), max_iter)
    return jnp.where(eig > crop, _relative_phase(vectors), jnp.zeros((), vectors.dtype))


def _power_method(gram_t: Array, start: Array, max_iter: int) -> tuple[Array, Array]:
    r"""`max_iter` power iterations per pixel from `start`: $y = G x$,
    $\lambda = \|y\|$, $x = y / \lambda$ (a zero $y$ stays zero).

    **Arguments:**

    - `gram_t`: the transposed matrices, `(C, C, T)`: `gram_t[j, i, p]` $= G_{ij}(p)$.
    - `start`: the first iterates `(C, T)`.
    - `max_iter`: the number of iterations ($\ge 1$).

    **Returns:** the last iterates `(C, T)` and the last norms $\lambda$ `(1, T)`.
    """
    real = jnp.finfo(gram_t.dtype).dtype

    def step(_, state):
        x, _ = state
        # an unrolled sum over j: one fused, pixel-vectorised loop (faster on CPU than a
        # batched matrix-vector product or a reduction over an axis)
        y = ft.reduce(jnp.add, (gram_t[j] * x[j : j + 1] for j in range(len(x))))
        norm = jnp.sqrt(jnp.sum(y.real**2 + y.imag**2, axis=0, keepdims=True))
        return y / jnp.where(norm > 0, norm, jnp.ones((), real)).astype(y.dtype), norm

    return jax.lax.fori_loop(0, max_iter, step, (start, jnp.zeros((1, *start.shape[1:]), real)))


def _relative_phase(maps: Array) -> Array:
    r"""`maps` `(C, ...)` times $\bar m_0 / |m_0|$: the first coil's phase removed (where
    $m_0 \ne 0$)."""
    first = maps[:1]
    magnitude = jnp.abs(first)
    safe = jnp.where(magnitude > 0, magnitude, jnp.ones((), magnitude.dtype))
    return maps * jnp.conj(jnp.where(magnitude > 0, first / safe.astype(first.dtype), 1))
