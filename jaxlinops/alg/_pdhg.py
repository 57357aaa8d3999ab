r"""`pdhg`: $\min_x \tfrac12 \|A x - y\|^2 + g(G x)$ by the primal-dual hybrid gradient
method of Chambolle and Pock on the stacked operator $K = [A; G]$."""

from __future__ import annotations

from typing import Literal, NamedTuple, overload

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._core import NamedLinop
from .._progress import Tracker
from ._common import DimsOrAxes, as_count, as_flag, as_positive, tracker_for
from ._power import power_method
from ._prox_base import AbstractProx
from ._prox_solvers_common import (
    Spaces,
    apply,
    batched_conjugate_prox,
    check_linop,
    check_prox,
    identity_like,
    iterate,
    normal_sum,
    objective,
    real_scalar,
    setup,
    system_norms,
)

_NAME = "pdhg"
# default steps: sigma tau ||K||^2 = SAFETY = 0.81 < 1 for the power method's estimate of
# ||K||^2, so < 1 for the true norm while the estimate (which approaches it from below) is
# above 81% of it (||K|| above 90%)
SAFETY = 0.81
_POWER_ITERS, _POWER_TOL = 100, 1e-6


class PDHGResult(NamedTuple):
    r"""What `pdhg(..., return_info=True)` returns (a pytree).

    - `x`: the solution, laid out by `A.ishape`.
    - `p`, `q`: the dual variables of the data term (in the space of $y$) and of $g$ (in
      the space of $G x$); at a solution $p = A x - y$, $q \in \partial g(G x)$.
    - `objective`: `(max_num_iters, *batch)`, entry `k` the objective
      $\tfrac12 \|A x - y\|^2 + g(G x)$ of each system after iteration `k + 1`.
    - `primal_residuals`: `(max_num_iters, *batch)`, $\|A^H p + G^H q\|$ per system (the
      optimality condition $0 \in A^H (A x - y) + G^H \partial g(G x)$; Goldstein et
      al.'s primal residual, here the problem has no other term in $x$).
    - `dual_residuals`: `(max_num_iters, *batch)`, $\|(w_\text{prev} - w) / \sigma -
      K (x_\text{prev} - x)\|$ per system, $w = (p, q)$ (Goldstein et al.'s dual
      residual).
    - `sigma`, `tau`: the step sizes used, per system (shape: the batch dims).
    """

    x: jax.Array
    p: jax.Array
    q: jax.Array
    objective: jax.Array
    primal_residuals: jax.Array
    dual_residuals: jax.Array
    sigma: jax.Array
    tau: jax.Array


class _PDHGSettings(eqx.Module):
    """The `Spaces`, the iteration count, and whether to record the objective."""

    spaces: Spaces
    max_num_iters: int = eqx.field(static=True)
    record: bool = eqx.field(static=True)


class _PDHGState(NamedTuple):
    x: jax.Array
    Ax: jax.Array  # A x and G x, kept: K x̄ = 2 K x - K x_prev needs no extra matvec
    Gx: jax.Array
    p: jax.Array
    q: jax.Array
    KHw: jax.Array  # A^H p + G^H q


@overload
def pdhg(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = ...,
    x0: ArrayLike | None = ...,
    sigma: float | jax.Array | None = ...,
    tau: float | jax.Array | None = ...,
    max_num_iters: int = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[False] = ...,
) -> jax.Array: ...
@overload
def pdhg(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = ...,
    x0: ArrayLike | None = ...,
    sigma: float | jax.Array | None = ...,
    tau: float | jax.Array | None = ...,
    max_num_iters: int = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[True],
) -> PDHGResult: ...
def pdhg(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = None,
    x0: ArrayLike | None = None,
    sigma: float | jax.Array | None = None,
    tau: float | jax.Array | None = None,
    max_num_iters: int = 100,
    *,
    batch_dims: DimsOrAxes = None,
    progress: bool | None = None,
    tqdm_kwargs: dict | None = None,
    return_info: bool = False,
) -> jax.Array | PDHGResult:
    r"""Solve $\min_x \tfrac12 \|A x - y\|^2 + g(G x)$ by the primal-dual hybrid gradient
    method (Chambolle & Pock 2011), as $\min_x F(K x)$ with $K = [A; G]$ and
    $F(v, w) = \tfrac12 \|v - y\|^2 + g(w)$, from $x_0$ and zero duals $p, q$:

    $$x \leftarrow x - \tau (A^H p + G^H q), \quad \bar x = 2 x - x_\text{prev}, \quad
    p \leftarrow \frac{p + \sigma (A \bar x - y)}{1 + \sigma}, \quad
    q \leftarrow \mathrm{prox}_{\sigma g^*}(q + \sigma G \bar x) .$$

    The data term's conjugate has the closed-form prox above; $g^*$'s is
    `prox.conjugate_prox` (by default Moreau's identity on `prox.prox`). One application
    of `A`, `A.H`, `G` and `G.H` per iteration ($A \bar x$ is $2 A x - A x_\text{prev}$).

    **Step sizes:** PDHG converges for $\sigma \tau \|K\|^2 < 1$,
    $\|K\|^2 = \|A^H A + G^H G\|$, here estimated by `power_method` on `A.N + G.N`
    (100 iterations at most; per system with `batch_dims`). Not given, $\sigma = 1$ (as
    sigpy: the data term's conjugate is 1-strongly convex, and its prox shrinks by
    $1/(1 + \sigma)$) and $\tau = 0.81 / (\sigma \|K\|^2)$; with only $\tau$ given,
    $\sigma = 0.81 / (\tau \|K\|^2)$. The safety factor 0.81 covers the power method's
    estimate of $\|K\|^2$, which approaches it from below, while it is within 19% of it.
    Both given: used as they are, with no power method (then $\sigma \tau \|K\|^2 < 1$
    is the caller's to ensure). A larger $\sigma$ weighs the dual steps more; scaling
    `A` and `y` so that $\|A\| \approx 1$ keeps the default balanced.
    Derivatives flow through the estimated steps (the power method's eigenvalue has its
    Hellmann–Feynman derivative).

    The iterations are one `lax.scan` of exactly `max_num_iters` steps, so `jax.grad`
    differentiates through the unrolled algorithm (w.r.t. `y`, the steps and every array
    inside `A`, `G` and `prox`). It runs inside `jax.jit` and `jax.vmap`, on real and
    complex data, and on sharded operators and vectors unchanged.

    **Arguments:** `A`, `y`, `prox`, `G`, `x0` as in `admm` (`prox.conjugate_prox` is
    called with the step $\sigma$); `sigma`, `tau`: the dual and primal steps (> 0,
    numbers or traced scalars; None: from $\|K\|$ as above); `max_num_iters` (>= 1,
    static). Keyword-only: `batch_dims`, `progress`, `tqdm_kwargs`, `return_info` as in
    `admm` (each system's default steps come from its own $\|K\|$).

    **Returns** $x$, or with `return_info=True` a `PDHGResult`.
    """
    A = check_linop(A, _NAME, "A")
    G = identity_like(A) if G is None else check_linop(G, _NAME, "G")
    prox = check_prox(prox, _NAME)
    steps = [_as_step(sigma, "sigma"), _as_step(tau, "tau")]
    max_num_iters = as_count(max_num_iters, _NAME, "max_num_iters")
    record = as_flag(return_info, _NAME, "return_info")
    tracker = tracker_for(progress, max_num_iters, "PDHG", tqdm_kwargs, _NAME)
    y, x0, spaces = setup(A, G, y, x0, batch_dims, _NAME)
    steps = tuple(None if v is None else real_scalar(v, y.dtype) for v in steps)
    return _run(A, G, prox, y, x0, steps, _PDHGSettings(spaces, max_num_iters, record), tracker)


def _as_step(value: float | jax.Array | None, arg: str) -> float | jax.Array | None:
    return None if value is None else as_positive(value, _NAME, arg)


def _steps(A, G, x: jax.Array, steps, spaces: Spaces) -> tuple[jax.Array, jax.Array]:
    r"""$(\sigma, \tau)$ per system (shaped like the batch): the given ones, the missing
    ones from $\|K\|^2$ (see `pdhg`)."""
    batch = tuple(x.shape[a] for a in spaces.batch("x"))
    sigma, tau = (None if v is None else jnp.broadcast_to(v, batch) for v in steps)
    if sigma is not None and tau is not None:
        return sigma, tau
    start = jax.random.normal(jax.random.key(0), x.shape, x.dtype)
    normal = normal_sum(A, G, 1.0, _NAME)
    _, norm2 = power_method(
        normal, start, _POWER_ITERS, tol=_POWER_TOL, dim=spaces.x, progress=False
    )
    norm2 = norm2.astype(jnp.finfo(x.dtype).dtype)  # ||K||^2 of each system
    if sigma is None and tau is None:
        sigma = jnp.ones_like(norm2)
    if sigma is None:
        assert tau is not None
        return SAFETY / (tau * norm2), tau
    return sigma, SAFETY / (sigma * norm2)


@eqx.filter_jit
def _run(A, G, prox, y, x0, steps, settings: _PDHGSettings, tracker: Tracker | None):
    dtype, spaces = y.dtype, settings.spaces
    x = jnp.zeros(jax.eval_shape(A.H, y).shape, dtype) if x0 is None else x0
    sigma, tau = _steps(A, G, x, steps, spaces)
    sy, sz = (spaces.expand(sigma, space).astype(dtype) for space in "yz")
    t = spaces.expand(tau, "x").astype(dtype)

    def step(old: _PDHGState):
        x = old.x - t * old.KHw
        Ax, Gx = apply(A, x, dtype), apply(G, x, dtype)
        p = (old.p + sy * (2 * Ax - old.Ax - y)) / (1 + sy)
        q = batched_conjugate_prox(prox, old.q + sz * (2 * Gx - old.Gx), sigma, spaces.batch("z"))
        q = q.astype(dtype)
        KHw = apply(A.H, p, dtype) + apply(G.H, q, dtype)
        dp = (old.p - p) / sy - (old.Ax - Ax)
        dq = (old.q - q) / sz - (old.Gx - Gx)
        record = {
            "primal": system_norms(KHw, spaces.x),
            "dual": jnp.hypot(system_norms(dp, spaces.y), system_norms(dq, spaces.z)),
        }
        if settings.record:
            record["objective"] = objective(Ax - y, prox, Gx, spaces)
        return _PDHGState(x, Ax, Gx, p, q, KHw), record

    Ax, Gx = apply(A, x, dtype), apply(G, x, dtype)
    start = _PDHGState(x, Ax, Gx, jnp.zeros_like(Ax), jnp.zeros_like(Gx), jnp.zeros_like(x))
    state, history = iterate(step, start, settings.max_num_iters, tracker)
    if not settings.record:
        return state.x
    h = history
    return PDHGResult(state.x, state.p, state.q, h["objective"], h["primal"], h["dual"], sigma, tau)
