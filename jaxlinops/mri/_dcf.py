r"""Density compensation weights for non-Cartesian k-space trajectories.

A trajectory samples k-space unevenly (a radial one densely at the centre), so the plain
adjoint NUFFT of its data weights each region of k-space by its sampling density. Weights
$w_l$ (one per point, a `[L...]` array for `locs` `[L..., D]`) undo that:
$A^H (w \odot y)$ approximates the inverse transform.

- [`pipe_menon_dcf`][]: the Pipe–Menon fixed-point iteration, for any trajectory.
- [`radial_dcf`][]: the analytic ramp of a radial trajectory.
- [`density_compensation`][]: one of the two, chosen from the trajectory.

`locs` follow jaxlinops' NUFFT convention: frequencies in cycles per field of view,
`[-N/2, N/2]` on each axis (sigpy's `coord` convention too).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer

from .._arrays import as_array, as_sizes
from ..functional._kernels import as_number, check_locs, check_width, warn_on_units
from ..linops._interp import Interpolate

logger = logging.getLogger("jaxlinops")

METHODS = ("auto", "pipe-menon", "radial")
# A readout counts as radial when its points lie on a line through the centre, evenly
# spaced, to within this fraction of the trajectory's sample spacing.
RADIAL_RTOL = 1e-3


def pipe_menon_dcf(
    locs,
    grid_size: Sequence[int],
    *,
    max_iter: int = 30,
    oversamp: float = 1.0,
    width: float | Sequence[float] = 4.0,
    beta: float = 8.0,
) -> jax.Array:
    r"""Pipe–Menon density compensation: $w \leftarrow w / |P P^H w|$ from $w = 1$.

    $P$ interpolates a grid at the points with the unnormalised Kaiser–Bessel kernel
    $K(x) = I_0(\beta \sqrt{1 - x^2})$ per axis ([`jaxlinops.Interpolate`][], circular
    grid) and $P^H$ spreads the points onto the grid, so $(P P^H w)_l =
    \sum_m w_m \sum_g K(g - p_l) K(g - p_m)$ is the kernel-smoothed sampling density at
    point $l$; at the fixed point $P P^H w = 1$.

    The defaults are sigpy's (`sigpy.mri.pipe_menon_dcf`: the grid of the image, width 4,
    $\beta = 8$, 30 iterations, no normalisation), and so are the weights: they agree
    with sigpy's to rounding (about 1e-13 relative in float64). sigpy's unused `n`
    (kernel samples) has no counterpart: the kernel is evaluated exactly. With
    `oversamp` > 1 the grid has $\lceil s N \rceil$ points per axis and the points are
    scaled to it (sigpy has no such option); `width` is in points of that grid.

    **Arguments:**

    - `locs`: the points, a real array `[L..., D]` in cycles per field of view,
      `[-N/2, N/2]` per axis.
    - `grid_size`: the image size `N`, one entry per axis of `locs` (D of them).
    - `max_iter`: the number of iterations (static: one compiled loop per value).
    - `oversamp`: the grid's oversampling factor (at least 1).
    - `width`: the kernel width in grid points, a number or one per axis.
    - `beta`: the Kaiser–Bessel parameter.

    **Returns:** the weights, a real array `[L...]` in the floating dtype of `locs`.

    Traced `locs` (under `jax.jit`) work as concrete ones; NaN or Inf points give NaN
    weights there (concrete ones raise a ValueError).
    """
    locs, grid = _checked_locs("pipe_menon_dcf", locs, grid_size)
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(
            f"pipe_menon_dcf: `max_iter` must be a non-negative integer; got {max_iter!r}."
        )
    oversamp = as_number("pipe_menon_dcf", "oversamp", oversamp, 1.0)
    padded = tuple(math.ceil(oversamp * n) for n in grid)
    widths = check_width("pipe_menon_dcf", width, padded)
    beta = as_number("pipe_menon_dcf", "beta", beta, 0.0)
    warn_on_units("pipe_menon_dcf", locs, grid)
    return _pipe_menon(locs, grid, padded, int(max_iter), widths, beta)


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4, 5))
def _pipe_menon(
    locs: jax.Array,
    grid: tuple[int, ...],
    padded: tuple[int, ...],
    max_iter: int,
    width: tuple[float, ...],
    beta: float,
) -> jax.Array:
    """The iteration on checked arguments: `locs` moved to grid units of the padded grid
    (centre at index `G // 2`), one `lax.fori_loop`."""
    lead = (1,) * (locs.ndim - 1)
    scale = jnp.asarray([g / n for g, n in zip(padded, grid)], locs.dtype).reshape(lead + (-1,))
    shift = jnp.asarray([g // 2 for g in padded], locs.dtype).reshape(lead + (-1,))
    P = Interpolate(locs * scale + shift, padded, width=width, kernel_params={"beta": beta})

    def step(_, w):
        return w / jnp.abs(P(P.H(w)))

    return lax.fori_loop(0, max_iter, step, jnp.ones(locs.shape[:-1], locs.dtype))


def radial_dcf(locs) -> jax.Array:
    r"""The analytic density compensation of a radial trajectory: $|k|^{D-1}$, mean 1.

    Readouts through the centre at evenly spread angles sample k-space with density
    $\propto |k|^{1-D}$, so the weights are the ramp $|k|$ in 2-D ($|k|^2$ for a 3-D
    "koosh ball", 1 on a line). The centre is not given 0: its samples share the ball of
    radius $\Delta k / 2$ ($\Delta k$ the smallest non-zero radius, the first ring), as
    the first ring's samples share the shell $[\Delta k / 2, 3 \Delta k / 2]$, so a centre
    sample gets $\frac{n_1}{n_0 (3^D - 1)}$ times a first-ring sample's weight ($n_0$, $n_1$
    the numbers of centre and first-ring samples): $1/4$ for full spokes in 2-D ($n_1 = 2
    n_0$), $1/8$ for centre-out ones. torchlinops' tutorial uses $|k| + 10^{-6}$ instead;
    both are normalised to mean 1.

    **Arguments:**

    - `locs`: the points, a real array `[L..., D]` (any units: the weights are relative).

    **Returns:** the weights, a real array `[L...]`. The trajectory is not checked for
    being radial: [`density_compensation`][] does that.
    """
    locs, _ = _checked_locs("radial_dcf", locs)
    return _radial(locs)


@jax.jit
def _radial(locs: jax.Array) -> jax.Array:
    ndim = locs.shape[-1]
    radius = jnp.sqrt(jnp.sum(locs * locs, axis=-1))
    centre = radius <= RADIAL_RTOL * jnp.max(radius, initial=0.0)
    first = jnp.min(jnp.where(centre, jnp.inf, radius), initial=jnp.inf)
    on_first = jnp.abs(radius - first) <= RADIAL_RTOL * first
    share = jnp.sum(on_first) / jnp.maximum(jnp.sum(centre), 1)  # ring samples per centre one
    floor = first ** (ndim - 1) * share.astype(locs.dtype) / (3**ndim - 1)
    w = jnp.where(centre, jnp.where(jnp.isfinite(first), floor, 1.0), radius ** (ndim - 1))
    return w / jnp.mean(w)


def density_compensation(
    locs,
    grid_size: Sequence[int],
    *,
    method: str = "auto",
    max_iter: int = 30,
    oversamp: float = 1.0,
    width: float | Sequence[float] = 4.0,
    beta: float = 8.0,
) -> jax.Array:
    r"""Density compensation weights for `locs`, normalised to mean 1.

    `method="auto"` takes [`radial_dcf`][] when the trajectory is radial (see
    [`is_radial`][]; checked on concrete `locs` only: traced ones always get Pipe–Menon)
    and [`pipe_menon_dcf`][] otherwise; `"pipe-menon"` and `"radial"` force one. The
    choice and its reason are logged at INFO level on the `jaxlinops` logger. Unlike
    [`pipe_menon_dcf`][], the weights are divided by their mean, so the scale does not
    depend on the method.

    **Arguments:**

    - `locs`: the points, a real array `[L..., D]` in cycles per field of view
      (`[-N/2, N/2]`); `L...` ends with the samples of a readout (`[R..., K, D]`).
    - `grid_size`: the image size `N`, one entry per axis of `locs`.
    - `method`: `"auto"`, `"pipe-menon"` or `"radial"`. `"radial"` on concrete `locs`
      that are not radial is a ValueError.
    - `max_iter`, `oversamp`, `width`, `beta`: passed to [`pipe_menon_dcf`][].

    **Returns:** the weights, a real array `[L...]` with mean 1.
    """
    if method not in METHODS:
        raise ValueError(
            f"density_compensation: `method` must be one of {METHODS}; got {method!r}."
        )
    locs, _ = _checked_locs("density_compensation", locs, grid_size)
    use_radial, reason = _choice(method, locs)
    chosen = "radial" if use_radial else "pipe-menon"
    logger.info("density_compensation: method=%r -> %s (%s).", method, chosen, reason)
    if use_radial:
        return _radial(locs)
    w = pipe_menon_dcf(
        locs, grid_size, max_iter=max_iter, oversamp=oversamp, width=width, beta=beta
    )
    return w / jnp.mean(w)


def is_radial(locs) -> bool:
    """Whether concrete `locs` `[R..., K, D]` form a radial trajectory: every readout (the
    `K` points of each `R...` index) lies on a line through the centre with evenly spaced
    samples, all readouts with the same spacing, to within `RADIAL_RTOL` of the spacing.
    False for traced `locs`, whose values are unknown."""
    return _radial_decision(as_array(locs, "`is_radial(locs=...)`"))[0]


def _choice(method: str, locs: jax.Array) -> tuple[bool, str]:
    """Whether `method` on `locs` means the radial ramp, and why, in words."""
    if method == "pipe-menon":
        return False, "requested"
    radial, reason = _radial_decision(locs)
    if method == "radial" and not radial and not isinstance(locs, Tracer):
        raise ValueError(
            f"density_compensation: `method='radial'` needs a radial trajectory, but {reason}."
        )
    return radial or method == "radial", reason


def _radial_decision(locs: jax.Array) -> tuple[bool, str]:
    """Whether `locs` are radial (see [`is_radial`][]), and why, in words."""
    if isinstance(locs, Tracer):
        return False, "locs are traced, so their shape in k-space is unknown"
    samples = locs.shape[-2] if locs.ndim > 1 else 1
    k = np.asarray(locs, np.float64).reshape((-1, samples, locs.shape[-1]))  # [R, K, D]
    if samples < 2:
        return False, f"readouts of {samples} sample cannot show an even spacing"
    far = np.argmax(np.linalg.norm(k, axis=-1), axis=1)  # the point furthest out
    direction = np.take_along_axis(k, far[:, None, None], axis=1)
    direction /= np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-300)
    along = np.sum(k * direction, axis=-1)  # [R, K]
    off_line = np.max(np.linalg.norm(k - along[..., None] * direction, axis=-1))
    steps = np.abs(np.diff(along, axis=1))
    spacing = float(np.median(steps))
    tol = RADIAL_RTOL * spacing
    if spacing == 0:
        return False, "the readouts' samples do not move"
    if off_line > tol:
        return False, f"a readout leaves the line through the centre by {off_line:.3g}"
    if np.ptp(steps) > tol:
        return False, f"sample spacings range over [{steps.min():.3g}, {steps.max():.3g}]"
    return True, f"{len(k)} readouts through the centre, spacing {spacing:.3g}"


def _checked_locs(
    name: str, locs, grid_size: Sequence[int] | None = None
) -> tuple[jax.Array, tuple[int, ...]]:
    """`locs` as a checked real floating array `[L..., D]`, and `grid_size` as `D` sizes
    (empty when not given)."""
    locs = as_array(locs, f"`{name}(locs=...)`")
    check_locs(name, locs)
    grid = () if grid_size is None else as_sizes(grid_size, f"`{name}(grid_size=...)`", 1)
    if grid_size is not None and len(grid) != locs.shape[-1]:
        raise ValueError(
            f"{name}: `grid_size` must have one entry per axis of `locs` "
            f"(D={locs.shape[-1]}); got {grid}."
        )
    if not jnp.issubdtype(locs.dtype, jnp.floating):
        locs = locs.astype(jnp.result_type(float))
    return locs, grid
