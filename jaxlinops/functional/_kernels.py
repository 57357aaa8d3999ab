"""Interpolation kernels on $[-1, 1]$, their settings (`KernelSettings`), and the option
checks shared by the interpolators."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer

from .._arrays import has_nonfinite

logger = logging.getLogger("jaxlinops")

Width = float | Sequence[float]  # a kernel width in grid points, or one per grid axis
KernelParams = Mapping[str, float] | Sequence[tuple[str, float]]  # e.g. {"beta": 1.0}

KERNELS = ("kaiser_bessel", "spline")
PAD_MODES = ("circular", "zero")
_KERNEL_PARAMS = {"kaiser_bessel": {"beta": 1.0}, "spline": {}}

# Abramowitz & Stegun 9.8.1 and 9.8.2 (p. 378), as in torchlinops and sigpy.
_I0_SMALL = (1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813)
_I0_LARGE = (
    0.39894228,
    0.01328592,
    0.00225319,
    -0.00157565,
    0.00916281,
    -0.02057706,
    0.02635537,
    -0.01647633,
    0.00392377,
)


def _polyval(coeffs: Sequence[float], t: jax.Array) -> jax.Array:
    out = jnp.full_like(t, coeffs[-1])
    for c in coeffs[-2::-1]:
        out = out * t + c
    return out


def _i0_of_square(z: jax.Array) -> jax.Array:
    r"""$I_0(\sqrt{z})$ for $z \ge 0$ by the Abramowitz–Stegun polynomials (relative
    error < 2e-7), split at $\sqrt{z} = 3.75$ as in torchlinops. The small branch is a
    polynomial in $z$, so the function and its gradient stay finite at $z = 0$ (the edge
    of the Kaiser–Bessel window)."""
    small = z < 3.75**2
    x_large = jnp.sqrt(jnp.where(small, 3.75**2, z))  # keeps the unused branch finite
    large = jnp.exp(x_large) / jnp.sqrt(x_large) * _polyval(_I0_LARGE, 3.75 / x_large)
    return jnp.where(small, _polyval(_I0_SMALL, z / 3.75**2), large)


def kaiser_bessel(x: jax.Array, beta: float = 1.0) -> jax.Array:
    r"""The (unnormalised) Kaiser–Bessel kernel $I_0(\beta \sqrt{1 - x^2})$ for $|x| \le 1$,
    0 outside: it equals $I_0(\beta)$ at 0 and 1 at $|x| = 1$. Evaluated through
    $\beta^2 (1 - x^2)$, so its gradient is finite at $|x| = 1$ (points on grid nodes)."""
    inside = jnp.abs(x) <= 1
    s = jnp.where(inside, 1 - x * x, 0.0)
    return jnp.where(inside, _i0_of_square(beta * beta * s), 0.0)


def spline(x: jax.Array) -> jax.Array:
    """The linear (triangle) kernel $\\max(1 - |x|, 0)$. Its kinks (a point on a grid node)
    get the mean of the one-sided derivatives: $|x|$ is written `max(x, -x)`, whose
    derivative JAX splits evenly at the tie $x = 0$ (`abs` takes +1 there), as it does for
    the outer `max` at $|x| = 1$."""
    return jnp.maximum(1 - jnp.maximum(x, -x), 0.0)


@dataclasses.dataclass(frozen=True)
class KernelSettings:
    """The static settings of a kernel interpolation, checked by [`kernel_settings`][].
    Hashable, so the compiled kernels take it as one static `jax.jit` argument.

    - `width`: the kernel width in grid points, one float per grid axis.
    - `kernel`: the kernel's name, one of `KERNELS`.
    - `norm`: 1 (product of per-axis kernels) or 2 (kernel of the Euclidean distance).
    - `pad_mode`: how the grid continues past its edges, one of `PAD_MODES`.
    - `kernel_params`: the kernel's parameters as sorted `(name, value)` pairs.
    """

    width: tuple[float, ...]
    kernel: str
    norm: int
    pad_mode: str
    kernel_params: tuple[tuple[str, float], ...]

    def kernel_fn(self) -> Callable:
        """The kernel function on $[-1, 1]$ with these parameters."""
        if self.kernel == "spline":
            return spline
        beta = dict(self.kernel_params)["beta"]
        return lambda x: kaiser_bessel(x, beta)


def kernel_settings(
    name: str,
    grid: Sequence[int],
    width: Width,
    kernel: str,
    norm: int,
    pad_mode: str,
    kernel_params: KernelParams | None,
) -> KernelSettings:
    """The checked [`KernelSettings`][] for a grid of sizes `grid` (errors name `name`):
    `width` by [`check_width`][], the others by [`check_options`][]."""
    width = check_width(name, width, grid)
    norm, kernel_params = check_options(name, kernel, norm, pad_mode, kernel_params)
    return KernelSettings(width, kernel, norm, pad_mode, kernel_params)


def as_number(name: str, arg: str, value: object, minimum: float) -> float:
    """`value` as a finite Python float of at least `minimum`: a TypeError for a non-number
    (a string, a bool, an array), a ValueError for a value out of range."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(
            f"`{name}`: {arg} must be a real number; got {value!r} ({type(value).__name__})."
        )
    if not (np.isfinite(value) and value >= minimum):
        raise ValueError(f"`{name}`: {arg} must be a finite number >= {minimum}; got {value!r}.")
    return float(value)


def check_options(
    name: str, kernel: str, norm: int, pad_mode: str, kernel_params: KernelParams | None
) -> tuple[int, tuple[tuple[str, float], ...]]:
    """Validate the kernel options; return `(norm, kernel_params)` normalised to an int and a
    sorted tuple of `(name, float)` pairs with the defaults filled in."""
    if kernel not in KERNELS:
        raise ValueError(f"`{name}`: unknown kernel {kernel!r}; expected one of {KERNELS}.")
    if pad_mode not in PAD_MODES:
        raise ValueError(f"`{name}`: unknown pad_mode {pad_mode!r}; expected one of {PAD_MODES}.")
    if isinstance(norm, (bool, np.bool_, str)) or norm not in (1, 2):
        raise ValueError(f"`{name}`: norm must be 1 or 2; got {norm!r}.")
    given = dict(kernel_params or ())
    unknown = sorted(set(given) - set(_KERNEL_PARAMS[kernel]))
    if unknown:
        raise ValueError(
            f"`{name}`: unknown kernel_params {unknown} for kernel {kernel!r}; expected keys "
            f"among {sorted(_KERNEL_PARAMS[kernel])}."
        )
    params = {**_KERNEL_PARAMS[kernel], **given}
    params = {k: as_number(name, f"kernel_params[{k!r}]", v, 0.0) for k, v in params.items()}
    return int(norm), tuple(sorted(params.items()))


def check_width(name: str, width: Width, grid: Sequence[int]) -> tuple[float, ...]:
    """Validate `width` (a number or one per grid axis) against the grid; return a tuple of
    floats, one per axis."""
    ndim = len(grid)
    if isinstance(width, Sequence) and not isinstance(width, str):
        widths = tuple(width)
    else:
        widths = (width,) * ndim
    if len(widths) != ndim:
        raise ValueError(
            f"`{name}`: width must be a number or a tuple of {ndim} numbers (one per grid "
            f"axis); got {width!r}."
        )
    widths = tuple(as_number(name, "width", w, 0.0) for w in widths)
    if any(w <= 0 for w in widths):
        raise ValueError(f"`{name}`: widths must be positive and finite; got {width!r}.")
    if any(w > n for w, n in zip(widths, grid)):
        raise ValueError(
            f"`{name}`: the kernel width {widths} must not exceed the grid size {tuple(grid)}."
        )
    return widths


def check_locs(name: str, locs: jax.Array) -> None:
    """Raise unless `locs` is a real array `[L..., D]`, with finite values when they are
    known (a concrete array, also inside a traced function; traced values are not checked
    here: the kernels turn non-finite points into NaN)."""
    if locs.ndim < 1 or locs.shape[-1] < 1:
        raise ValueError(
            f"`{name}`: locs must have shape [L..., D] with D >= 1; got shape {tuple(locs.shape)}."
        )
    real = jnp.issubdtype(locs.dtype, jnp.floating) or jnp.issubdtype(locs.dtype, jnp.integer)
    if not real:
        raise TypeError(f"`{name}`: locs must be a real array; got dtype {locs.dtype}.")
    if has_nonfinite(locs):  # a constant array is checked even under jit
        raise ValueError(f"`{name}`: locs contain NaN or Inf values.")


@jax.jit
def _extent(locs: jax.Array) -> tuple[jax.Array, jax.Array]:
    flat = locs.reshape((-1, locs.shape[-1]))
    return jnp.min(flat, axis=0), jnp.max(flat, axis=0)


# Points within +-pi (radians) or +-0.5 (normalised) that use at most this fraction of a
# grid's [-N/2, N/2] are taken for a trajectory in another library's units; points beyond
# FAR_OUT times N/2 (two periods) for one in physical units.
SMALL_SPAN, FAR_OUT = 0.25, 4.0


def warn_on_units(name: str, locs: jax.Array, grid: Sequence[int]) -> None:
    """Log a warning on the `jaxlinops` logger when concrete NUFFT points look like a
    trajectory in other units than cycles per field of view, `[-N/2, N/2]` per axis: all
    within `[-pi, pi]` (radians) or `[-0.5, 0.5]` (normalised) while that covers at most
    `SMALL_SPAN` of the grid's range (not all zero: a placeholder), or reaching beyond
    `FAR_OUT` times `N/2` (physical units, e.g. 1/m). Valid points are any finite values
    (the transform is N-periodic), so this is a warning, not an error; traced points are
    not looked at."""
    if isinstance(locs, Tracer) or locs.size == 0:
        return
    with jax.ensure_compile_time_eval():
        lo, hi = (np.asarray(v, float) for v in _extent(locs))
    reach = np.maximum(np.abs(lo), np.abs(hi))
    half = np.asarray(grid, float)[: reach.size] / 2
    span = float(np.max(reach / half))
    if 0 < float(np.max(reach)) <= np.pi * (1 + 1e-6) and span <= SMALL_SPAN:
        unit = "normalised to [-0.5, 0.5]" if np.max(reach) <= 0.5 else "in radians"
        logger.warning(
            "`%s`: the points lie within +-%.3g, %.1f%% of [-N/2, N/2] on grid %s: a "
            "trajectory %s? jaxlinops takes cycles per field of view, [-N/2, N/2] per "
            "axis: multiply radians by N / (2 pi), normalised points by N.",
            name, float(np.max(reach)), 100 * span, tuple(grid), unit,
        )  # fmt: skip
    elif span > FAR_OUT:
        logger.warning(
            "`%s`: the points reach %.3g, %.3g times N/2 on grid %s: a trajectory in "
            "physical units (1/m, rad/m)? jaxlinops takes cycles per field of view, "
            "[-N/2, N/2] per axis (k times the field of view).",
            name, float(np.max(reach)), span, tuple(grid),
        )  # fmt: skip


def check_locs_in_grid(name: str, locs: jax.Array, grid: Sequence[int], pad_mode: str) -> None:
    """With `pad_mode="zero"`, raise unless every point lies in the grid, `[0, N - 1]` per
    axis (values are checked only when concrete; the kernels turn traced points outside the
    grid into NaN); circular padding accepts any point."""
    if pad_mode != "zero" or isinstance(locs, Tracer) or locs.size == 0:
        return
    with jax.ensure_compile_time_eval():
        lo, hi = (np.asarray(v) for v in _extent(locs))
    for d, n in enumerate(grid):
        if lo[d] < 0 or hi[d] > n - 1:
            raise ValueError(
                f"`{name}`: with pad_mode='zero' the points must lie in [0, N - 1] on every "
                f"axis (grid {tuple(grid)}); locs axis {d} spans [{lo[d]:g}, {hi[d]:g}]."
            )
