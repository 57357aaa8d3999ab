r"""The kernel of a NUFFT's Toeplitz-embedded normal $A^H W A$.

For the NUFFT $A$ (points $p_l$, image grid $N$) and point weights $w$,
$(A^H \mathrm{diag}(w) A x)[m] = \sum_n h[m - n]\, x[n]$ with
$h[d] = (\prod N)^{-1} \sum_l w_l\, e^{2\pi i \sum_j p_{l,j} d_j / N_j}$: a linear
convolution, exact as a circular one on a grid $M \ge 2N - 1$. So
$A^H W A = \mathrm{Crop}\; F^H\, \mathrm{diag}(K)\, F\; \mathrm{Pad}_M$ with centered
orthonormal FFTs $F$ and $K$ the unnormalised centered DFT of $h$.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp

from ._fft import centered_fftn
from ._index import scatter
from ._nufft import NUFFTPlan, make_plan, nufft_adjoint_unchecked, per_frame


def embedded_size(plan: NUFFTPlan, oversamp: float) -> tuple[int, ...]:
    """The grid $M$ the normal convolves on: $\\lfloor \\mathrm{oversamp} \\cdot N \\rfloor$,
    or the plan's padded grid in sampling mode (where the normal is exact on it)."""
    if plan.mode == "sampling":
        return plan.padded_size
    return tuple(int(oversamp * n) for n in plan.grid_size)


def check_embedding(name: str, plan: NUFFTPlan, oversamp: float) -> None:
    """Raise unless the embedded grid holds every lag of the convolution: $M \\ge 2N - 1$."""
    size = embedded_size(plan, oversamp)
    if plan.mode == "interpolate" and any(m < 2 * n - 1 for m, n in zip(size, plan.grid_size)):
        raise ValueError(
            f"`{name}`: toeplitz_oversamp={oversamp} embeds the image grid {plan.grid_size} "
            f"in {size}, but a Toeplitz normal needs at least 2N - 1 points per axis (use "
            f"toeplitz_oversamp >= 2)."
        )


def embedded_locs(plan: NUFFTPlan, size: tuple[int, ...]) -> jax.Array:
    """The plan's points (padded-grid units) in cycles per field of view of the embedded
    grid `size`, where the kernel's adjoint NUFFT spreads them."""
    lead = (1,) * (plan.locs.ndim - 1) + (len(size),)
    npad = jnp.asarray(plan.padded_size, plan.locs.dtype).reshape(lead)
    ratio = jnp.asarray(size, plan.locs.dtype).reshape(lead) / npad
    return (plan.locs - npad // 2) * ratio


@functools.partial(jax.jit, static_argnums=2)
def toeplitz_kernel(weights: jax.Array, plan: NUFFTPlan, oversamp: float) -> jax.Array:
    r"""The kernel $K$ `[B..., *M]` for point weights `[B..., L...]` (one kernel per leading
    index), `M = embedded_size(plan, oversamp)`. For a plan with frames (`locs`
    `[F..., L..., D]`), the weights are `[B..., F..., L...]` and the kernel
    `[B..., F..., *M]`: one per frame, from that frame's points.

    Interpolate mode: $h$ is the adjoint NUFFT of $w$ on the grid $M$ (the points rescaled
    to it, the plan's oversampling and width), times $\sqrt{\prod M} / \prod N$; then
    $K = \sqrt{\prod M}\, F h$. The result carries the NUFFT's own approximation error.
    Sampling mode: $A = S F\, \mathrm{Pad}$, so $K = S^H w$, the weights summed onto the
    padded grid, and the normal is exact.
    """
    ndim = len(plan.grid_size)
    if plan.frames:
        points = plan.locs.ndim - 1 - plan.frames
        return per_frame(lambda w, p: toeplitz_kernel(w, p, oversamp), weights, points, plan)
    if plan.mode == "sampling":
        return scatter(weights, tuple(jnp.moveaxis(plan.locs, -1, 0)), plan.padded_size)
    size = embedded_size(plan, oversamp)
    # the operator's backend; finufft chosen by "auto" is chosen (or not) again for the
    # embedded grid, finufft asked for by name keeps its tolerance
    rechosen = plan.backend == "finufft" and plan.auto is not None
    settings = (plan.oversamp, plan.width, "interpolate", None, None)
    backend = "auto" if rechosen else plan.backend
    embedded = make_plan("NUFFT.normal", embedded_locs(plan, size), size, *settings, backend)
    if not rechosen:
        embedded = dataclasses.replace(embedded, eps=plan.eps)
    h = nufft_adjoint_unchecked(weights, embedded)
    return centered_fftn(h, ndim) * (math.prod(size) / math.prod(plan.grid_size))
