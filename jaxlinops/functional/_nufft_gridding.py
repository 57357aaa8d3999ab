r"""The NUFFT's gridding: Kaiser–Bessel interpolation between the padded spectrum and the
points, built for speed.

Three things make it fast, each measured on 2 CPU cores (3-D, 160^3 padded grid, 262,144
points, width 4):

- **Sorted points.** The plan sorts the points by grid cell once (`order`, an integer
  pytree leaf that follows `jit`, `vmap` and `split`), so consecutive points read and write
  neighbouring windows and the grid stays in cache. The order never changes a result, only
  the speed, so a stale one (points updated after the plan was made) is still correct.
- **A half-open window.** The kernel covers distances in $(-w/2, w/2]$ per axis, so
  $\lceil w \rceil$ grid points hold it: 4^3 = 64 window entries in 3-D at width 4 instead
  of the 5^3 = 125 of a closed window. torchlinops also adds the far edge; the two differ
  only for points exactly on a padded-grid node, by about the NUFFT's own error.
- **A polynomial kernel.** Along each axis the $L = \lceil w \rceil$ window weights of a
  point depend only on the fractional part $u = (q - w/2) - \lfloor q - w/2 \rfloor$ of
  its coordinate $q$: entry $l$ is $K((l + 1 - u - w/2) / (w/2))$ with
  $K(x) = I_0(\beta \sqrt{1 - x^2})$. Each entry is a polynomial in $u$ fitted once per
  `(w, β)` to the exact Bessel function (`numpy.i0`), to 1e-12 of $K(0)$ in double
  precision (1e-9 in single), and evaluated by Horner's rule: about 0.6 ms for all points where the
  Abramowitz–Stegun $I_0$ takes 4 ms. So the weights are computed on every call from the
  points themselves: the operator reads its points and nothing derived from them, and
  derivatives with respect to the points are plain automatic differentiation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ._gridding import Neighbourhoods, gather_windows, scatter_windows
from ._pallas_gridding import pallas_grid, pallas_ungrid

KERNELS = ("xla", "pallas")  # XLA's gather and scatter, or the Pallas (Triton) kernels

_MAX_DEGREE = 30


@functools.lru_cache(maxsize=64)
def kernel_polynomials(
    width: float, beta: float, tol: float = 1e-12
) -> tuple[np.ndarray, np.ndarray]:
    """The coefficients `[degree + 1, L]` (highest power first) of the window weights as
    polynomials in $t = 2u - 1 \\in [-1, 1)$, of the lowest degree whose error is at most
    `tol` times $K(0)$, and the smallest `u` `[L]` at which each entry lies inside the
    kernel (nonzero only for the last entry of a non-integer width)."""
    radius, size = width / 2, math.ceil(width)
    lows = np.maximum(0.0, np.arange(size) + 1 - width)
    grid = np.linspace(0.0, 1.0, 2001)
    for degree in range(4, _MAX_DEGREE + 1):
        nodes = 0.5 - 0.5 * np.cos(np.pi * (np.arange(degree + 1) + 0.5) / (degree + 1))
        coeffs = []
        for entry, low in enumerate(lows):
            u = low + (1 - low) * nodes  # Chebyshev nodes on the entry's support
            cheb = np.polynomial.chebyshev.Chebyshev.fit(
                2 * u - 1, _kaiser_bessel(entry, u, radius, beta), degree, domain=[-1, 1]
            )
            coef = cheb.convert(kind=np.polynomial.Polynomial).coef  # may drop zero terms
            coeffs.append(np.pad(coef, (0, degree + 1 - len(coef)))[::-1])
        coeffs = np.stack(coeffs, axis=1)
        inside = grid[:, None] >= lows[None]
        exact = _kaiser_bessel(np.arange(size)[None], grid[:, None], radius, beta)
        fitted = np.polynomial.polynomial.polyval(2 * grid - 1, coeffs[::-1]).T
        error = np.max(np.abs(np.where(inside, fitted, 0.0) - np.where(inside, exact, 0.0)))
        if error <= tol * np.i0(beta):
            return coeffs, lows
    raise AssertionError(f"no polynomial fit of degree <= {_MAX_DEGREE} (w={width}, β={beta})")


def _kaiser_bessel(entry, u, radius: float, beta: float) -> np.ndarray:
    """$I_0(\\beta \\sqrt{1 - x^2})$ at $x = (l + 1 - u - r) / r$ (0 outside $|x| \\le 1$)."""
    x = (entry + 1 - u - radius) / radius
    inside = np.abs(x) <= 1
    return np.where(inside, np.i0(beta * np.sqrt(np.where(inside, 1 - x * x, 0.0))), 0.0)


def nufft_windows(
    locs: jax.Array, padded: Sequence[int], width: float, beta: float, signs: bool = False
) -> Neighbourhoods:
    """The windows of the points `locs` `[P, D]` (padded-grid units, in `[0, N_pad)`): origins
    `[P, D]` on the periodic grid and the `D` weight factors `[P, L]`. A point with a
    non-finite coordinate gets origin 0 and NaN weights (so NaN results). Evaluated as
    `[L, D, P]`, the points innermost, so that XLA vectorises over them.

    `signs`: on every axis of even length the weight of grid index $g$ is multiplied by
    $(-1)^g$, the centered FFT's ramp on the spectrum's side (`centered_fftn(...,
    spectrum_signs=True)`), which then costs no pass over the grid."""
    coeffs, lows = kernel_polynomials(width, beta, _fit_tol(locs.dtype))
    shifted = locs.T - width / 2  # [D, P]
    first = jnp.floor(shifted)
    u = (shifted - first)[None]  # [1, D, P]
    t = 2 * u - 1
    values = jnp.zeros((coeffs.shape[1],) + shifted.shape, locs.dtype)
    for row in coeffs:
        values = values * t + jnp.asarray(row, locs.dtype)[:, None, None]
    if np.any(lows > 0):
        values = jnp.where(u >= jnp.asarray(lows, locs.dtype)[:, None, None], values, 0.0)
    bad = ~jnp.isfinite(shifted)
    values = jnp.where(bad[None], jnp.nan, values)
    sizes = jnp.asarray(padded, jnp.int32)[:, None]
    starts = jnp.remainder(jnp.where(bad, 0, first + 1).astype(jnp.int32), sizes)
    even = np.array([n % 2 == 0 for n in padded])
    if signs and even.any():  # (-1)^(start + l), start + l taken modulo an even size
        lags = jnp.arange(len(coeffs[0]), dtype=jnp.int32)[:, None, None]
        odd = (starts[None] + lags) % 2 == 1
        values = jnp.where(odd & jnp.asarray(even)[None, :, None], -values, values)
    return Neighbourhoods(starts.T, tuple(values[:, d].T for d in range(locs.shape[1])))


def _fit_tol(dtype) -> float:
    """The polynomials' largest error relative to K(0): far below the rounding of `dtype`."""
    return 1e-12 if jnp.finfo(dtype).bits == 64 else 1e-9


def interp_points(
    k: jax.Array,
    locs: jax.Array,
    order: jax.Array,
    width: float,
    beta: float,
    kernel: str = "xla",
    signs: bool = False,
) -> jax.Array:
    """The padded spectrum `k` `[B, *padded]` interpolated at the points `locs` `[P, D]`,
    visited in `order` `[P]`: `[B, P]`. `kernel` is one of `KERNELS` (Pallas runs in
    interpret mode off GPU); `signs` as for [`nufft_windows`][]."""
    # the barrier keeps XLA from fusing the polynomials into the gather, where they would be
    # evaluated again for every window entry (measured 1.8x slower in 2-D)
    nbhd = lax.optimization_barrier(nufft_windows(locs[order], k.shape[1:], width, beta, signs))
    if kernel == "pallas":
        out = _on_gpu_or_interpreted(pallas_ungrid, k, nbhd.starts, jnp.stack(nbhd.weights, 1))
    else:
        out = _unless_wrapped(nbhd, k.shape[1:], lambda mode: gather_windows(k, nbhd, mode))
    # a scatter, not a gather by the inverse order: XLA would fuse the windows into that
    # gather and read them in the unsorted order (measured 4x slower at 262,144 points)
    return jnp.zeros_like(out).at[:, order].set(out, unique_indices=True)


def spread_points(
    y: jax.Array,
    locs: jax.Array,
    order: jax.Array,
    padded: tuple[int, ...],
    width: float,
    beta: float,
    kernel: str = "xla",
    signs: bool = False,
) -> jax.Array:
    """The adjoint of [`interp_points`][]: `y` `[B, P]` spread onto a zero grid `[B, *padded]`."""
    # the barrier keeps the polynomials out of the scatter's loop over chunks (1.6x in 3-D)
    nbhd = lax.optimization_barrier(nufft_windows(locs[order], padded, width, beta, signs))
    vals = y[:, order]
    if kernel == "pallas":
        weights = jnp.stack(nbhd.weights, 1)
        spread = functools.partial(pallas_grid, grid_size=padded)
        return _on_gpu_or_interpreted(spread, vals, nbhd.starts, weights)
    return _unless_wrapped(nbhd, padded, lambda mode: scatter_windows(vals, nbhd, padded, mode))


def _on_gpu_or_interpreted(fn: Callable, *args) -> jax.Array:
    """`fn(*args)` compiled for CUDA GPUs; in Pallas' interpret mode on other platforms."""
    return lax.platform_dependent(
        *args,
        cuda=functools.partial(fn, interpret=False),
        default=functools.partial(fn, interpret=True),
    )


def _unless_wrapped(nbhd: Neighbourhoods, padded: Sequence[int], fn: Callable) -> jax.Array:
    """`fn("circular")`, or `fn("inside")` (no padded copy of the grid) when no window
    crosses the end of the periodic grid; decided at run time, as the points may be
    traced."""
    size = nbhd.weights[0].shape[1]
    wraps = jnp.any(nbhd.starts + size > jnp.asarray(padded, jnp.int32)[None])
    return lax.cond(wraps, lambda: fn("circular"), lambda: fn("inside"))
