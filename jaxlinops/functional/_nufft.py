"""The non-uniform FFT (NUFFT): apodize, zero-pad, centered FFT, Kaiser–Bessel interpolation."""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Callable, Sequence

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import ArrayLike
from jaxtyping import Float

from .. import config
from .._arrays import as_array, as_sizes, has_nonfinite, promote, right_align
from .._reverse_mode import forward_mode_error
from ._accuracy import predicted_error, settings_for_eps
from ._backend_cost import cheapest, features
from ._backend_switch import Pair, switched
from ._fft import centered_fftn
from ._finufft import (
    INSTALL,
    finufft_adjoint_unchecked,
    finufft_available,
    finufft_forward_unchecked,
)
from ._gridding import frame_map, point_order
from ._index import gather, scatter
from ._kernels import as_number, check_locs, warn_on_units
from ._nufft_gridding import interp_points, spread_points
from ._pad import _check_trailing, center_crop, center_pad

MODES = ("interpolate", "sampling")
BACKENDS = ("auto", "jax", "pallas", "finufft")
DEFAULT_SETTINGS = (1.25, 4.0)  # torchlinops' (oversamp, width)
FINUFFT_MARGIN = 3.0  # finufft's error reaches 2.5 times its tolerance (measured, 6 seeds)
logger = logging.getLogger("jaxlinops")


class NUFFTPlan(eqx.Module):
    """What [`nufft`][] and [`nufft_adjoint`][] need, computed once by [`nufft_plan`][].

    `locs` are the points in padded-grid units (`[0, Npad)`, floats for
    `mode="interpolate"`, rounded integers for `mode="sampling"`); `apodize` is the real
    apodization over the image grid and `order` `[prod(L...)]` visits the points sorted by
    padded-grid cell (`_gridding.point_order`), both None in sampling mode and with the
    finufft backend. The sizes, oversampling factor, kernel width, Kaiser–Bessel β, mode,
    backend (`"jax"`, `"pallas"` or `"finufft"`, resolved from `"auto"` when the plan is
    made) and finufft's tolerance `eps` (None for the other backends) are static.

    `auto` (static): why `"auto"` chose the backend (`_backend_cost`), None for a backend
    asked for by name. A plan on finufft chosen by `"auto"` also holds `apodize` and
    `order`: the JAX path stands in for what finufft cannot do (grid splits, `jax.export`,
    derivatives with respect to the points, `vmap` over them; `_backend_switch`).

    `frames` (static, default 0) leading axes of `locs` are frames: `locs` is
    `[F..., L..., D]` and frame `f` of the data is transformed at the points `locs[f]`
    alone (`order` is `[F..., prod(L...)]`, sorted per frame). The transforms take
    `[B..., F..., *grid_size] <-> [B..., F..., L...]`.
    """

    locs: jax.Array
    apodize: jax.Array | None
    order: jax.Array | None
    grid_size: tuple[int, ...] = eqx.field(static=True)
    padded_size: tuple[int, ...] = eqx.field(static=True)
    oversamp: float = eqx.field(static=True)
    width: float = eqx.field(static=True)
    beta: float = eqx.field(static=True)
    mode: str = eqx.field(static=True)
    backend: str = eqx.field(static=True)
    eps: float | None = eqx.field(static=True)
    frames: int = eqx.field(static=True, default=0)
    auto: str | None = eqx.field(static=True, default=None)

    @property
    def accuracy(self) -> float | None:
        """The relative error against the exact transform that the plan promises: the
        `eps` finufft was asked to meet (its tolerance times `FINUFFT_MARGIN`), else the
        error predicted for `(oversamp, width)` on the grid in the points' precision
        (`_accuracy.predicted_error`); None in sampling mode (no approximation: the
        points are moved to the nearest padded-grid node)."""
        if self.mode == "sampling":
            return None
        if self.eps is not None:
            return self.eps * FINUFFT_MARGIN
        dtype = jnp.complex64 if self.locs.dtype == jnp.float32 else jnp.complex128
        return predicted_error(self.oversamp, self.width, self.grid_size, dtype)

    @property
    def scale(self) -> float:
        """$w^D \\sqrt{\\prod N / \\prod N_{pad}}$; the interpolated output is divided by it."""
        ratio = math.prod(self.grid_size) / math.prod(self.padded_size)
        return self.width ** len(self.grid_size) * math.sqrt(ratio)


def nufft_plan(
    locs: Float[ArrayLike, "*points ndim"],
    grid_size: Sequence[int],
    oversamp: float = 1.25,
    width: float = 4.0,
    mode: str = "interpolate",
    apodize_weights: ArrayLike | None = None,
    eps: float | None = None,
    backend: str | None = None,
) -> NUFFTPlan:
    r"""Prepare a NUFFT on the image grid `grid_size` at the points `locs`.

    **Arguments:**

    - `locs`: a real array `[L..., D]` of frequencies in cycles per field of view,
      $[-N/2, N/2]$ per axis ('ij' order, `D = len(grid_size)`). Any finite value is
      valid: the transform is $N$-periodic in each coordinate, and the plan reduces the
      coordinates modulo $N$ by a float remainder, which loses no precision the value
      holds (a float32 frequency of magnitude 1e9 is a whole number, and is used as that
      number).
    - `grid_size`: the `D` image sizes $N$ (integers; integral floats are accepted).
    - `oversamp`: the padded grid is $N_{pad} = \lfloor \mathrm{oversamp} \cdot N \rfloor$
      per axis (a number, at least 1).
    - `width`: the Kaiser–Bessel kernel width in padded-grid points (at most $N_{pad}$);
      $\beta = \pi \sqrt{(w / \mathrm{os})^2 (\mathrm{os} - 1/2)^2 - 0.8}$. The kernel
      covers distances in $(-w/2, w/2]$, a window of $\lceil w \rceil$ grid points per
      axis (torchlinops also adds the far edge, $[-w/2, w/2]$, which differs only for
      points exactly on a padded-grid node, by about the method's own error).
    - `mode`: `"interpolate"` (Kaiser–Bessel gridding) or `"sampling"` (nearest padded-grid
      point, no apodization or scaling).
    - `apodize_weights`: real weights of shape `grid_size` replacing the default
      apodization (interpolate mode only).
    - `eps`: the relative error wanted: `oversamp` and `width` (which must then keep their
      defaults) are chosen from a measured table (`_accuracy.settings_for_eps`), the
      cheapest for the grid, the number of points and the precision of `locs`; and it is
      finufft's tolerance with `backend="finufft"`.
    - `backend`: how the interpolate mode grids: `"jax"` (XLA's gather and scatter),
      `"pallas"` (Pallas kernels; on CUDA GPUs, and in interpret mode, for testing,
      elsewhere), `"finufft"` (the whole transform by jax-finufft, `pip install
      'jaxlinops[finufft]'`, to the error `eps`, or without `eps` to the error the JAX
      path promises for `(oversamp, width)`: `NUFFTPlan.accuracy`), or `"auto"`: the
      JAX path, or on a CPU jax-finufft where the cost model `_backend_cost` predicts it
      faster for these points and grid (3-D grids of about 96^3 and more), with the JAX
      path standing in for what finufft cannot do (`NUFFTPlan.auto` says why; Pallas is
      opt-in). None: `jaxlinops.config.nufft_backend` (default `"auto"`). All compute
      the same transform; they differ by the approximation error (finufft's kernel is its
      own; it is asked for `eps / FINUFFT_MARGIN`, as its error can exceed its
      tolerance).

    **Bad values:** concrete `locs` with NaN or Inf raise a ValueError. Traced `locs`
    (under `jit`, `vmap`, `grad`) cannot be checked in Python. In interpolate mode such a
    point gets NaN kernel weights, so its output is NaN and the adjoint spreads NaN onto
    the grid (no extra cost). In sampling mode the points are integer indices, which
    cannot hold NaN: the plan checks them with `equinox.error_if` (one reduction when the
    plan is made), which raises an error at run time.
    """
    return make_plan(
        "nufft_plan", locs, grid_size, oversamp, width, mode, apodize_weights, eps, backend
    )


def nufft(
    x: jax.Array, locs: ArrayLike | NUFFTPlan, oversamp: float = 1.25, width: float = 4.0
) -> jax.Array:
    r"""The NUFFT $y_l \approx (\prod N)^{-1/2} \sum_n x[n]\, e^{-2\pi i \sum_d p_{l,d}
    (n_d - N_d // 2) / N_d}$ of `x` `[B..., *grid_size]` at the points: `[B..., L...]`.

    Interpolate mode computes `x * apodize -> center pad -> centered orthonormal FFT ->
    Kaiser–Bessel interpolation -> / scale`.

    **Arguments** (torchlinops' names and order):

    - `x`: the image; its last `D` axes are the grid (`grid_size = x.shape[-D:]`).
    - `locs`: the points `[L..., D]` (as for [`nufft_plan`][]), or a plan from
      [`nufft_plan`][] (which fixes `oversamp` and `width`, so these must keep their
      defaults); reuse a plan to apply one transform many times.
    - `oversamp`, `width`: as for [`nufft_plan`][].
    """
    x = as_array(x, "`nufft(x=...)`")
    if isinstance(locs, NUFFTPlan):
        plan = _given_plan("nufft", locs, oversamp, width)
    else:
        ndim = _point_ndim("nufft", locs)
        grid = x.shape[max(x.ndim - ndim, 0) :]
        plan = make_plan("nufft", locs, grid, oversamp, width, "interpolate", None)
    _check_trailing("nufft", x, plan.locs.shape[: plan.frames] + plan.grid_size)
    return _forward_mode_named("nufft", nufft_unchecked, x, plan)


def nufft_adjoint(
    x: jax.Array,
    locs: ArrayLike | NUFFTPlan,
    grid_size: Sequence[int] | None = None,
    oversamp: float = 1.25,
    width: float = 4.0,
) -> jax.Array:
    """The adjoint of [`nufft`][]: `[B..., L...] -> [B..., *grid_size]`, the steps of
    [`nufft`][] reversed and conjugated.

    **Arguments** (torchlinops' names and order): `x`, the values at the points; `locs`,
    the points or a plan (as for [`nufft`][]); `grid_size`, the `D` image sizes (needed
    with points; with a plan, None or the plan's own); `oversamp`, `width` as for
    [`nufft`][].
    """
    x = as_array(x, "`nufft_adjoint(x=...)`")
    if isinstance(locs, NUFFTPlan):
        plan = _given_plan("nufft_adjoint", locs, oversamp, width)
        if grid_size is not None and tuple(grid_size) != plan.grid_size:
            raise ValueError(
                f"`nufft_adjoint(grid_size=...)`: the plan is for the grid {plan.grid_size}; "
                f"got {tuple(grid_size)}."
            )
    elif grid_size is None:
        raise TypeError("`nufft_adjoint`: `grid_size` is needed when `locs` are points.")
    else:
        plan = make_plan("nufft_adjoint", locs, grid_size, oversamp, width, "interpolate", None)
    _check_trailing("nufft_adjoint", x, plan.locs.shape[:-1])
    return _forward_mode_named("nufft_adjoint", nufft_adjoint_unchecked, x, plan)


def _forward_mode_named(name: str, fn: Callable, x: jax.Array, plan: NUFFTPlan) -> jax.Array:
    """`fn(x, plan)`, with JAX's refusal of forward mode through the Pallas kernels raised
    again naming the backend (`_reverse_mode.forward_mode_error`)."""
    try:
        return fn(x, plan)
    except TypeError as error:
        named = forward_mode_error(f"`{name}`", plan, error)
        if named is None:
            raise
        raise named from error


def _given_plan(name: str, plan: NUFFTPlan, oversamp: float, width: float) -> NUFFTPlan:
    """`plan`, refusing an `oversamp` or `width` other than the defaults (the plan fixes
    them)."""
    if (oversamp, width) != DEFAULT_SETTINGS:
        raise ValueError(
            f"`{name}`: a plan fixes `oversamp` and `width` ({plan.oversamp}, {plan.width}); "
            f"got oversamp={oversamp!r}, width={width!r} as well. Build the plan with them."
        )
    return plan


def _point_ndim(name: str, locs: ArrayLike) -> int:
    """`D`, the last axis length of the points `locs` (checked fully by `make_plan`)."""
    shape = getattr(locs, "shape", None)
    if shape is None:
        shape = np.shape(locs)
    if len(shape) < 1:
        raise ValueError(f"`{name}(locs=...)`: expected points of shape [L..., D]; got a scalar.")
    return int(shape[-1])


@jax.jit
def nufft_unchecked(x: jax.Array, plan: NUFFTPlan) -> jax.Array:
    """[`nufft`][] without input checks, compiled once per shape and plan settings."""
    ndim = len(plan.grid_size)
    if plan.frames:
        return per_frame(nufft_unchecked, x, ndim, plan)
    if plan.backend == "finufft":
        if plan.auto:
            return switched(x, plan, FORWARD, ADJOINT)
        return _finufft_forward(x, plan)
    if plan.mode == "sampling":
        k = centered_fftn(center_pad(x, plan.grid_size, plan.padded_size), ndim)
        return gather(k, tuple(jnp.moveaxis(plan.locs, -1, 0)))
    # the FFT's signs on the spectrum's side are in the kernel weights (`signs=True`)
    x = _apodized(x, plan)
    k = centered_fftn(x, ndim, spectrum_signs=True, pad_to=plan.padded_size)
    return ungrid_plan(k, plan, signs=True) / plan.scale


@jax.jit
def nufft_adjoint_unchecked(y: jax.Array, plan: NUFFTPlan) -> jax.Array:
    """[`nufft_adjoint`][] without input checks, compiled once per shape and plan settings."""
    ndim = len(plan.grid_size)
    if plan.frames:
        return per_frame(nufft_adjoint_unchecked, y, plan.locs.ndim - 1 - plan.frames, plan)
    if plan.backend == "finufft":
        if plan.auto:
            return switched(y, plan, ADJOINT, FORWARD)
        return _finufft_adjoint(y, plan)
    if plan.mode == "sampling":
        k = scatter(y, tuple(jnp.moveaxis(plan.locs, -1, 0)), plan.padded_size)
        return center_crop(centered_fftn(k, ndim, inverse=True), plan.padded_size, plan.grid_size)
    k = grid_plan(y / plan.scale, plan, signs=True)  # as in `nufft_unchecked`
    x = centered_fftn(k, ndim, inverse=True, spectrum_signs=True)
    return _apodized(center_crop(x, plan.padded_size, plan.grid_size), plan)


def jax_plan(plan: NUFFTPlan) -> NUFFTPlan:
    """A plan that `"auto"` put on finufft, on the JAX path (it holds what that reads)."""
    return dataclasses.replace(plan, backend="jax", eps=None, auto=None)


def _finufft_forward(x: jax.Array, plan: NUFFTPlan) -> jax.Array:
    return finufft_forward_unchecked(x, _cycles(plan), plan.grid_size, plan.eps)


def _finufft_adjoint(y: jax.Array, plan: NUFFTPlan) -> jax.Array:
    return finufft_adjoint_unchecked(y, _cycles(plan), plan.grid_size, plan.eps)


def _jax_forward(x: jax.Array, plan: NUFFTPlan) -> jax.Array:
    return nufft_unchecked(x, jax_plan(plan))


def _jax_adjoint(y: jax.Array, plan: NUFFTPlan) -> jax.Array:
    return nufft_adjoint_unchecked(y, jax_plan(plan))


FORWARD = Pair(_finufft_forward, _jax_forward, "NUFFT on finufft (auto)")
ADJOINT = Pair(_finufft_adjoint, _jax_adjoint, "NUFFT adjoint on finufft (auto)")


def per_frame(fn: Callable, vals: jax.Array, trailing: int, plan: NUFFTPlan) -> jax.Array:
    """`fn(v, p)` for each frame of a plan with frames: `v` the frame of `vals`
    `[B..., F..., T...]` (`trailing` axes `T...`), `p` the plan of its points (no frames);
    the results are stacked to `[B..., F..., U...]` (see [`frame_map`][])."""

    def one(v: jax.Array, locs: jax.Array, order: jax.Array | None) -> jax.Array:
        return fn(v, dataclasses.replace(plan, locs=locs, order=order, frames=0))

    return frame_map(one, vals, trailing, plan.frames, plan.locs, plan.order)


def _apodized(x: jax.Array, plan: NUFFTPlan) -> jax.Array:
    """`x` `[B..., *grid_size]` times the apodization of an interpolate-mode plan."""
    assert plan.apodize is not None, "an interpolate-mode plan has apodization weights"
    x, apodize = promote(x, right_align(plan.apodize, x.ndim))
    return x * apodize


def make_plan(
    name: str,
    locs: ArrayLike,
    grid_size: Sequence[int],
    oversamp: float,
    width: float,
    mode: str,
    apodize_weights: ArrayLike | None,
    eps: float | None = None,
    backend: str | None = None,
    frames: int = 0,
) -> NUFFTPlan:
    """[`nufft_plan`][] with errors naming `name`; the first `frames` axes of `locs` are
    frames (see [`NUFFTPlan`][])."""
    locs = as_array(locs, f"`{name}(locs=...)`")
    check_locs(name, locs)
    grid = as_sizes(grid_size, f"`{name}(grid_size=...)`", 1)
    if locs.shape[-1] != len(grid):
        raise ValueError(
            f"`{name}`: locs must have shape [L..., D] with D = len(grid_size) = {len(grid)}; "
            f"got locs of shape {tuple(locs.shape)} and grid_size {tuple(grid_size)}."
        )
    if mode not in MODES:
        raise ValueError(f"`{name}`: unknown mode {mode!r}; expected one of {MODES}.")
    warn_on_units(name, locs, grid)
    if frames > locs.ndim - 1:
        raise ValueError(
            f"`{name}`: {frames} per-frame dims need as many leading axes of locs before "
            f"the points' axis D; got locs of shape {tuple(locs.shape)}."
        )
    backend = config.nufft_backend if backend is None else backend
    backend = _resolve_backend(name, backend, mode)
    if eps is not None:
        if (oversamp, width) != DEFAULT_SETTINGS:
            raise ValueError(
                f"`{name}`: give either eps or (oversamp, width); got eps={eps!r}, "
                f"oversamp={oversamp!r}, width={width!r}."
            )
        if mode == "sampling":
            raise ValueError(f"`{name}`: eps applies only to mode='interpolate'.")
        eps = as_number(name, "eps", eps, 0.0)
        if not 0 < eps < 1:
            raise ValueError(f"`{name}`: eps must be in (0, 1); got eps={eps!r}.")
        # the precision's floor holds for every backend; finufft chooses its own kernel
        dtype = jnp.complex128 if locs.dtype == jnp.float64 else jnp.complex64
        settings = settings_for_eps(name, eps, grid, dtype, math.prod(locs.shape[:-1]))
        if backend != "finufft":
            oversamp, width = settings
    oversamp = as_number(name, "oversamp", oversamp, 1.0)
    width = as_number(name, "width", width, 0.0)
    padded = tuple(int(n * oversamp) for n in grid)
    if width <= 0 or any(width > n for n in padded):
        raise ValueError(
            f"`{name}`: width={width:g} must be positive and at most the padded grid "
            f"floor(oversamp * grid_size) = {padded} on every axis (grid_size={grid}, "
            f"oversamp={oversamp:g}); use a smaller width, a larger oversamp or a larger grid."
        )
    beta = kaiser_bessel_beta(name, width, oversamp)
    auto = None
    if backend == "auto":
        backend, auto = _auto_backend(name, locs, padded, width, frames, apodize_weights)
    if mode == "sampling" and apodize_weights is not None:
        raise ValueError(f"`{name}`: apodize_weights apply only to mode='interpolate'.")
    if not jnp.issubdtype(locs.dtype, jnp.floating):
        locs = locs.astype(jnp.result_type(float))
    prepped = _prep_locs(locs, grid, padded, mode)
    apodize = order = None
    if mode == "sampling":
        if isinstance(locs, Tracer):
            bad = ~jnp.all(jnp.isfinite(locs))
            prepped = eqx.error_if(prepped, bad, f"`{name}`: locs contain NaN or Inf values.")
    elif backend == "finufft" and apodize_weights is not None:
        raise ValueError(f"`{name}`: apodize_weights do not apply to backend='finufft'.")
    else:
        if backend == "finufft":  # asked for the error the JAX path promises, or for eps
            single = prepped.dtype == jnp.float32
            dtype = "complex64" if single else "complex128"
            eps = (eps or predicted_error(oversamp, width, grid, dtype)) / FINUFFT_MARGIN
        if backend != "finufft" or auto:  # what the JAX path reads
            apodize = _apodize_weights(name, apodize_weights, grid, padded, width, beta, locs.dtype)
            order = point_order(prepped, padded, frames)
    return NUFFTPlan(
        locs=prepped,
        apodize=apodize,
        order=order,
        grid_size=grid,
        padded_size=padded,
        oversamp=oversamp,
        width=width,
        beta=beta,
        mode=mode,
        backend=backend,
        eps=eps if backend == "finufft" else None,
        frames=frames,
        auto=auto,
    )


def _resolve_backend(name: str, backend: str, mode: str) -> str:
    """`backend` checked (`"auto"` is resolved by [`_auto_backend`][] once the plan's
    settings are known); sampling mode has no gridding, and always runs in JAX. The Pallas
    kernels (reverse-mode derivatives only; 1.2-1.4x faster on an H200) are opt-in; off a
    GPU they run in Pallas' interpreter (for tests): a warning on the `jaxlinops` logger
    says so."""
    if backend not in BACKENDS:
        raise ValueError(f"`{name}`: unknown backend {backend!r}; expected one of {BACKENDS}.")
    if backend == "finufft" and not finufft_available():
        raise ImportError(f"`{name}`: backend='finufft' needs jax-finufft: {INSTALL}.")
    if mode == "sampling":
        if backend not in ("auto", "jax"):
            raise ValueError(f"`{name}`: mode='sampling' runs in JAX; got backend={backend!r}.")
        return "jax"
    platform = jax.default_backend()
    if backend == "pallas" and platform != "gpu":
        logger.warning("`%s`: backend='pallas' on %s runs in Pallas' interpreter", name, platform)
    return backend


def _auto_backend(
    name: str, locs: jax.Array, padded: tuple, width: float, frames: int, weights
) -> tuple[str, str]:
    """The backend `"auto"` picks for an interpolate-mode plan, and why (logged at DEBUG):
    the JAX path, or on a CPU jax-finufft where the cost model (`_backend_cost`) predicts
    it faster for these points and grid. finufft is a candidate only where the JAX path can
    stand in for it (`_backend_switch`): one set of points (no frames), the default
    apodization, at most 3 dimensions."""
    platform = jax.default_backend()
    blockers = (
        (platform != "cpu", f"runs on CPUs only here (on {platform}, pallas is opt-in)"),
        (not finufft_available(), "is not installed"),
        (frames, "cannot take per-frame points"),
        (weights is not None, "cannot take apodize_weights"),
        (len(padded) > 3, "cannot take more than 3 dims"),
    )
    blocker = next((what for blocked, what in blockers if blocked), None)
    if blocker:
        backend, reason = "jax", f"auto: jax-finufft {blocker}"
    else:
        points = math.prod(locs.shape[:-1])
        itemsize = 16 if locs.dtype == jnp.float64 else 8
        feats = features(padded, width, points, itemsize)
        backend, reason = cheapest(platform, "jax", "finufft", feats)
    logger.debug("`%s`: backend=%s (%s)", name, backend, reason)
    return backend, reason


def _cycles(plan: NUFFTPlan) -> jax.Array:
    """The plan's points in cycles per field of view (from padded-grid units)."""
    ndim = len(plan.grid_size)
    n = jnp.asarray(plan.grid_size, plan.locs.dtype).reshape((1,) * (plan.locs.ndim - 1) + (ndim,))
    npad = jnp.asarray(plan.padded_size, plan.locs.dtype).reshape(n.shape)
    return (plan.locs - npad // 2) * (n / npad)


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _prep_locs(locs: jax.Array, grid: tuple, padded: tuple, mode: str) -> jax.Array:
    """Cycles per field of view -> padded-grid units in `[0, Npad)`, `N_pad // 2` being the
    origin; rounded to integer grid points in sampling mode. The frequencies are first
    reduced modulo `N` (exactly, before any rounding), so a large one keeps its
    precision."""
    shape = (1,) * (locs.ndim - 1) + (len(grid),)
    n, npad = np.array(grid, float), np.array(padded, float)
    npad_ = jnp.asarray(npad.reshape(shape), locs.dtype)
    reduced = jnp.remainder(locs, jnp.asarray(n.reshape(shape), locs.dtype))
    prepped = reduced * jnp.asarray((npad / n).reshape(shape), locs.dtype) + npad_ // 2
    if mode == "sampling":
        return jnp.remainder(jnp.round(prepped), npad_).astype(jnp.int32)
    return jnp.remainder(prepped, npad_)


def kaiser_bessel_beta(name: str, width: float, oversamp: float) -> float:
    """$\\pi \\sqrt{(w/\\mathrm{os})^2 (\\mathrm{os} - 1/2)^2 - 0.8}$, a ValueError naming
    `name` where the root is not real."""
    square = (width / oversamp) ** 2 * (oversamp - 0.5) ** 2 - 0.8
    if square <= 0:
        raise ValueError(
            f"`{name}`: width {width} and oversamp {oversamp} give no real Kaiser–Bessel "
            f"beta ((w / os)^2 (os - 1/2)^2 - 0.8 = {square:.3g} must be positive): use "
            f"width > {math.sqrt(0.8) * oversamp / (oversamp - 0.5):.4g} at this oversamp."
        )
    return math.pi * math.sqrt(square)


def default_apodization(grid, padded, width: float, beta: float) -> np.ndarray:
    """The default apodization: the inverse Fourier transform of the kernel on the image
    grid, $\\prod_d a_d / \\sinh(a_d)$ with
    $a_d = \\sqrt{\\beta^2 - (\\pi w (n_d - N_d // 2) / N_{pad,d})^2}$ (float64)."""
    weights = np.ones(grid)
    for d, (n, npad) in enumerate(zip(grid, padded)):
        k = np.arange(n) - n // 2
        a = np.sqrt((beta**2 - (np.pi * width * k / npad) ** 2).astype(complex))
        ratio = np.real(np.where(a == 0, 1.0, a / np.sinh(np.where(a == 0, 1.0, a))))
        weights = weights * ratio.reshape((n,) + (1,) * (len(grid) - d - 1))
    return weights


def _apodize_weights(name, weights, grid, padded, width, beta, dtype) -> jax.Array:
    """The given weights (checked) or [`default_apodization`][] in `dtype`."""
    if weights is None:
        return jnp.asarray(default_apodization(grid, padded, width, beta).astype(dtype))
    weights = as_array(weights, f"`{name}(apodize_weights=...)`")
    if tuple(weights.shape) != grid or jnp.iscomplexobj(weights):
        raise ValueError(
            f"`{name}`: apodize_weights must be a real array of shape grid_size {grid}; got "
            f"shape {tuple(weights.shape)} and dtype {weights.dtype}."
        )
    if has_nonfinite(weights):
        raise ValueError(f"`{name}`: apodize_weights contain NaN or Inf values.")
    return weights


def ungrid_plan(k: jax.Array, plan: NUFFTPlan, signs: bool = False) -> jax.Array:
    """The padded spectrum `k` `[B..., *padded]` interpolated at the plan's points (not
    divided by the scale); `signs`: times $(-1)^g$ at grid index $g$ of each even axis
    (`_nufft_gridding.nufft_windows`)."""
    assert plan.order is not None, "an interpolate-mode plan has a point order"
    ndim = len(plan.grid_size)
    batch, points = k.shape[: k.ndim - ndim], plan.locs.shape[:-1]
    flat, locs = _flat(k.reshape((-1,) + plan.padded_size), plan.locs)
    kernel = "pallas" if plan.backend == "pallas" else "xla"
    out = interp_points(flat, locs, plan.order, plan.width, plan.beta, kernel, signs)
    return out.reshape(batch + points)


def grid_plan(y: jax.Array, plan: NUFFTPlan, signs: bool = False) -> jax.Array:
    """The point values `y` `[B..., L...]` spread onto the padded grid (not divided by
    the scale): the adjoint of [`ungrid_plan`][] (with the same `signs`)."""
    assert plan.order is not None, "an interpolate-mode plan has a point order"
    points = plan.locs.shape[:-1]
    batch = y.shape[: y.ndim - len(points)]
    flat, locs = _flat(y.reshape((-1, math.prod(points))), plan.locs)
    kernel = "pallas" if plan.backend == "pallas" else "xla"
    out = spread_points(
        flat, locs, plan.order, plan.padded_size, plan.width, plan.beta, kernel, signs
    )
    return out.reshape(batch + plan.padded_size)


def _flat(vals: jax.Array, locs: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`vals` at (at least) floating precision and `locs` as `[P, D]` in its real dtype."""
    vals, _ = promote(vals, locs)
    return vals, locs.reshape((-1, locs.shape[-1])).astype(jnp.finfo(vals.dtype).dtype)
