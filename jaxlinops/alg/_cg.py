"""`conjugate_gradients`: (preconditioned) CG in one `lax.while_loop`."""

from __future__ import annotations

from typing import Literal, NamedTuple, overload

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from .._progress import Tracker
from ._adjoint import (
    Adjoint,
    ImplicitAdjoint,
    UnrolledAdjoint,
    check_adjoint,
    constant,
    implicit_solve,
)
from ._common import (
    DimsOrAxes,
    Operator,
    as_count,
    as_flag,
    as_tolerance,
    as_vector,
    check_operator,
    inner,
    max_abs,
    norm,
    resolve_axes,
    result_dtype,
    safe_divide,
    square_output,
    tracker_for,
)

_NAME = "conjugate_gradients"


class CGResult(NamedTuple):
    """What `conjugate_gradients` returns (a pytree, so it leaves `jax.jit` whole).

    - `x`: the solution, shaped like `y`; NaN for a system whose data (`y`, `x0`, or `A`'s
      output) holds NaN or Inf.
    - `num_iters`: iterations run, per system (shape: the batch dims of `y`).
    - `residual_norms`: `(max_num_iters + 1, *batch)`; entry `k` is $\\|y - A x_k\\|$, NaN
      after the system stopped.
    - `converged`: per system, whether $\\|y - A x\\| \\le \\max(\\mathrm{gtol} \\|y\\|,
      \\mathrm{atol})$ (False when the data is not finite).
    - `breakdown`: per system, whether CG stopped early because $\\langle p, A p\\rangle \\le
      0$ (`A` is not positive definite) or $\\langle r, P r\\rangle \\le 0$ (`P` is not);
      `x` is then the last iterate, and `converged` is False.
    """

    x: jax.Array
    num_iters: jax.Array
    residual_norms: jax.Array
    converged: jax.Array
    breakdown: jax.Array


class _CGSettings(eqx.Module):
    """What one solve is compiled for, besides the operators and the arrays.

    - `axes`: the axes of `y` that inner products sum over (the others index systems).
    - `max_num_iters`: the largest number of iterations (static: it sizes the history).
    - `check`: whether systems stop when they meet the tolerances (False:
      `disable_tracking`, every system runs `max_num_iters` iterations).
    - `gtol`, `atol`, `ltol`: the tolerances (Python floats, or traced scalars).
    """

    axes: tuple[int, ...] = eqx.field(static=True)
    max_num_iters: int = eqx.field(static=True)
    check: bool = eqx.field(static=True)
    gtol: float | jax.Array
    atol: float | jax.Array
    ltol: float | jax.Array


class _State(NamedTuple):
    """The iteration, on the scaled system $A (x / s) = y / s$ (see `_init`)."""

    scale: jax.Array  # s, per system
    threshold: jax.Array  # max(gtol ||y||, atol) / s, per system
    k: jax.Array
    x: jax.Array
    r: jax.Array
    p: jax.Array
    rz: jax.Array
    decrease: jax.Array  # the decrease of the loss since x0, per system
    active: jax.Array
    breakdown: jax.Array
    num_iters: jax.Array
    history: jax.Array


@overload
def conjugate_gradients(
    A: Operator,
    y: ArrayLike,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    gtol: float | jax.Array = ...,
    ltol: float | jax.Array = ...,
    disable_tracking: bool = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    P: Operator | None = ...,
    atol: float | jax.Array = ...,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    adjoint: Adjoint = ...,
    return_info: Literal[False] = ...,
) -> jax.Array: ...
@overload
def conjugate_gradients(
    A: Operator,
    y: ArrayLike,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    gtol: float | jax.Array = ...,
    ltol: float | jax.Array = ...,
    disable_tracking: bool = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    P: Operator | None = ...,
    atol: float | jax.Array = ...,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    adjoint: Adjoint = ...,
    return_info: Literal[True],
) -> CGResult: ...
@overload
def conjugate_gradients(
    A: Operator,
    y: ArrayLike,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    gtol: float | jax.Array = ...,
    ltol: float | jax.Array = ...,
    disable_tracking: bool = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    P: Operator | None = ...,
    atol: float | jax.Array = ...,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    adjoint: Adjoint = ...,
    return_info: bool = ...,
) -> jax.Array | CGResult: ...
def conjugate_gradients(
    A: Operator,
    y: ArrayLike,
    x0: ArrayLike | None = None,
    max_num_iters: int = 20,
    gtol: float | jax.Array = 1e-6,
    ltol: float | jax.Array = 0.0,
    disable_tracking: bool = False,
    tqdm_kwargs: dict | None = None,
    *,
    P: Operator | None = None,
    atol: float | jax.Array = 0.0,
    batch_dims: DimsOrAxes = None,
    progress: bool | None = None,
    adjoint: Adjoint = ImplicitAdjoint(),
    return_info: bool = False,
) -> jax.Array | CGResult:
    r"""Solve $A x = y$ for a Hermitian positive (semi)definite $A$ by conjugate gradients,
    optionally preconditioned by a Hermitian positive definite $P \approx A^{-1}$.

    Iteration $k$: $\alpha = \langle r, z\rangle / \langle p, A p\rangle$,
    $x \mathrel{+}= \alpha p$, $r \mathrel{-}= \alpha A p$, $z = P r$,
    $p = z + (\langle r, z\rangle_\text{new} / \langle r, z\rangle) p$: one application of
    $A$ (and of $P$) per iteration. The residual $r = y - A x$ is updated, not recomputed,
    so tracking it costs no extra matvec. A system stops when
    $\|r\| \le \max(\mathrm{gtol}\,\|y\|, \mathrm{atol})$ (`converged`), at a breakdown:
    $\langle p, Ap\rangle \le 0$ or $\langle r, P r\rangle \le 0$ before convergence
    (`breakdown`, and `converged` is False), or, with `ltol > 0`, when its last step
    decreased the quadratic loss $\ell(x) = x^H A x - 2\,\mathrm{Re}\,x^H y$ by at most
    `ltol` times its total decrease since $x_0$ (it stagnates; `converged` still reports
    the residual test). That decrease is $\alpha \langle r, z\rangle$, known without
    another matvec. With no `x0`, a zero `y` gives a zero `x`.

    **Hermitian positive definite `A` only.** CG does not check it (that would cost extra
    applications of `A`): on a non-Hermitian or indefinite `A` it may break down, stall
    or reach `max_num_iters`. Its residual is still $y - A x$, so `converged` stays
    truthful: always check it (`return_info=True`). For such operators use a lineax solver
    (`to_lineax`, `lx.GMRES`) or solve the normal equations $A^H A x = A^H y$.

    Scaling: each system is solved as $A (x / s) = y / s$, $s$ its largest entry of $y$
    and of $y - A x_0$, so norms neither overflow nor underflow (float16 entries of 200,
    float32 entries of 1e19 or 1e-30 solve as any others). NaN or Inf in `y`, `x0` or
    `A`'s output give a NaN `x` with `converged` False, also under `jax.jit`.

    The loop is a `lax.while_loop`: the solver runs inside `jax.jit` and `jax.vmap`, and
    is compiled when called eagerly. Inner products are elementwise sums, so sharded
    operators and vectors (e.g. from `jl.create_batched_linop`) work unchanged.

    **Arguments** (the first eight as in torchlinops, in its order):

    - `A`: a NamedLinop or any linear callable mapping `y`'s shape to itself (typically
      `A.N`, with `y = A.H(b)` for least squares).
    - `y`: the right-hand side.
    - `x0`: the starting point (default zero), shaped like `y`.
    - `max_num_iters`: at most this many iterations (an integer >= 1).
    - `gtol`: the residual tolerance, **relative** to $\|y\|$ (torchlinops': absolute,
      default 1e-3), a real number >= 0.
    - `ltol`: the loss-stagnation tolerance described above, **relative** to the loss
      decrease so far, and sufficient on its own (torchlinops: an absolute change of the
      loss, required together with `gtol`, default 1e-5). Default 0: off.
    - `disable_tracking`: True runs all `max_num_iters` iterations, with no convergence
      test (as torchlinops; a system still stops at a breakdown or a zero residual). The
      residual history is recorded either way, at no cost.
    - `tqdm_kwargs`: keyword arguments for the tqdm bar (e.g. `{"desc": "SENSE"}`).

    Keyword-only (jaxlinops):

    - `P`: a preconditioner, applied to residuals (e.g. `polynomial_preconditioner`).
    - `atol`: an absolute residual tolerance (a real number >= 0).
    - `batch_dims`: dims of `y` (names of `A.ishape`, or axis numbers) that index
      independent systems: inner products sum over the other axes, and each system has its
      own step sizes and stops on its own.
    - `progress`: show a tqdm bar, updated from inside the compiled loop (also under
      `jax.jit` and `jax.vmap`). None (default): `jaxlinops.config.progress`, else only in
      a terminal or notebook. Without tqdm, no bar. The adjoint solve of a gradient shows
      its own bar only with `progress=True`.
    - `adjoint`: how `jax.grad`, `jax.vjp` and `jax.jvp` differentiate the solution,
      w.r.t. `y` and every array inside `A` (coil maps, trajectory, weights, ...):
      `jl.alg.ImplicitAdjoint()` (default) as the exact solution $A^{-1} y$, at the cost of
      one more CG solve (its tolerances and iteration limit settable) and memory that does
      not grow with the iterations; `jl.alg.UnrolledAdjoint()` through the iterations of a
      fixed-length `lax.scan` (exactly `max_num_iters` of them). The record's other fields
      (`num_iters`, `residual_norms`, ...) carry no derivative.
    - `return_info`: return a `CGResult` instead of the solution alone.

    **Returns** the solution `x` (as torchlinops), or with `return_info=True` a
    `CGResult` `(x, num_iters, residual_norms, converged, breakdown)`.
    """
    check_operator(A, _NAME)
    if P is not None:
        check_operator(P, _NAME, "P")
    max_num_iters = as_count(max_num_iters, _NAME, "max_num_iters")
    gtol, atol = as_tolerance(gtol, _NAME, "gtol"), as_tolerance(atol, _NAME, "atol")
    ltol = as_tolerance(ltol, _NAME, "ltol")
    check = not as_flag(disable_tracking, _NAME, "disable_tracking")
    adjoint = check_adjoint(adjoint, _NAME)
    tracker = tracker_for(progress, max_num_iters, "CG", tqdm_kwargs, _NAME)
    y = as_vector(y, _NAME, "y")
    dtypes = [y.dtype, square_output(A, y, _NAME)]
    if x0 is not None:
        x0 = as_vector(x0, _NAME, "x0")
        if x0.shape != y.shape:
            raise ValueError(f"`{_NAME}`: x0 has shape {x0.shape}; y has shape {y.shape}.")
        dtypes.append(x0.dtype)
    if P is not None:
        dtypes.append(square_output(P, y, _NAME, "P"))
    dtype = result_dtype(_NAME, *dtypes)
    batch = resolve_axes(A, y.ndim, batch_dims, _NAME)
    axes = tuple(a for a in range(y.ndim) if a not in batch)
    settings = _CGSettings(axes, max_num_iters, check, gtol, atol, ltol)
    if isinstance(adjoint, UnrolledAdjoint):
        result = _unrolled(A, P, y.astype(dtype), x0, settings, tracker)
    else:
        backward = _adjoint_settings(settings, adjoint)
        desc = f"{(tqdm_kwargs or {}).get('desc', 'CG')} (adjoint)"
        options = {**(tqdm_kwargs or {}), "desc": desc}
        # the adjoint solve's bar only on request: a training loop would drown in bars
        shown = progress is not None and bool(progress)
        bar = tracker_for(shown, backward.max_num_iters, "", options, _NAME)
        result = _implicit(A, P, y.astype(dtype), x0, (settings, backward), (tracker, bar))
    return result if as_flag(return_info, _NAME, "return_info") else result.x


def _apply_in_dtype(op, v: jax.Array) -> jax.Array:
    """`op(v)` in the dtype of `v` (the solve's dtype)."""
    return op(v).astype(v.dtype)


def _init(A, P, y, x0, settings: _CGSettings) -> _State:
    axes = settings.axes
    r = y if x0 is None else y - _apply_in_dtype(A, x0.astype(y.dtype))
    # s: the power of 2 just above the largest entry of y and r, so that scaling is exact
    # (1 for zero or non-finite data, which `_result` turns into NaN)
    # (the scale, the norms and the tolerance test are constants to differentiation: they
    # pick steps, and sqrt's derivative at a zero residual would be infinite)
    _, exponent = jnp.frexp(lax.stop_gradient(jnp.maximum(max_abs(y, axes), max_abs(r, axes))))
    scale = jnp.ldexp(jnp.ones(exponent.shape, jnp.real(y).dtype), exponent)
    s = scale.astype(y.dtype)
    x = jnp.zeros_like(y) if x0 is None else x0.astype(y.dtype) / s
    r = r / s
    z = r if P is None else _apply_in_dtype(P, r)
    rnorm = norm(lax.stop_gradient(r), axes)
    batch_shape = jnp.squeeze(rnorm, axes).shape
    history = jnp.full((settings.max_num_iters + 1, *batch_shape), jnp.nan, rnorm.dtype)
    real = rnorm.dtype
    threshold = jnp.maximum(
        jnp.asarray(settings.gtol, real) * norm(lax.stop_gradient(y / s), axes),
        jnp.asarray(settings.atol, real) / scale,
    )
    return _State(
        scale=scale,
        threshold=threshold,
        k=jnp.zeros((), jnp.int32),
        x=x,
        r=r,
        p=z,
        rz=jnp.real(inner(r, z, axes)),
        decrease=jnp.zeros(rnorm.shape, real),
        active=rnorm > (threshold if settings.check else 0),
        breakdown=jnp.zeros(rnorm.shape, bool),
        num_iters=jnp.zeros(rnorm.shape, jnp.int32),
        history=history.at[0].set(jnp.squeeze(rnorm, axes)),
    )


def _step(A, P, settings: _CGSettings, s: _State) -> _State:
    axes = settings.axes
    Ap = _apply_in_dtype(A, s.p)
    pAp = jnp.real(inner(s.p, Ap, axes))
    # pAp <= 0: A is not positive definite along p, and the step would be wrong; a NaN pAp
    # (non-finite data) steps, so that the NaN reaches x
    step = s.active & ~(pAp <= 0)
    alpha = jnp.where(step, s.rz / jnp.where(step, pAp, 1), 0)
    # the step lowers the loss x^H A x - 2 Re x^H y by alpha <r, z>
    decrease = lax.stop_gradient(alpha * s.rz)
    alpha = alpha.astype(s.x.dtype)
    x = s.x + alpha * s.p
    r = s.r - alpha * Ap
    z = r if P is None else _apply_in_dtype(P, r)
    rz = jnp.real(inner(r, z, axes))
    beta = safe_divide(rz, s.rz).astype(s.x.dtype)
    rnorm = jnp.sqrt(lax.stop_gradient(rz)) if P is None else norm(lax.stop_gradient(r), axes)
    unconverged = rnorm > (s.threshold if settings.check else 0)
    # rz <= 0 with r unconverged: P is not positive definite
    breakdown = s.active & ((pAp <= 0) | (unconverged & (rz <= 0)))
    ltol = jnp.asarray(settings.ltol, decrease.dtype)
    stagnated = settings.check & (decrease <= ltol * (s.decrease + decrease))
    return _State(
        scale=s.scale,
        threshold=s.threshold,
        k=s.k + 1,
        x=x,
        r=r,
        p=z + beta * s.p,
        rz=rz,
        decrease=s.decrease + decrease,
        active=s.active & unconverged & ~breakdown & ~stagnated,
        breakdown=s.breakdown | breakdown,
        num_iters=s.num_iters + s.active.astype(jnp.int32),
        history=s.history.at[s.k + 1].set(jnp.squeeze(jnp.where(s.active, rnorm, jnp.nan), axes)),
    )


def _result(settings: _CGSettings, s: _State) -> CGResult:
    axes = settings.axes
    scale = jnp.squeeze(s.scale, axes)
    # the history row of each system's last iteration
    last = jnp.take_along_axis(s.history, jnp.squeeze(s.num_iters, axes)[None], axis=0)[0]
    # a non-finite residual: the data held NaN or Inf; x gets NaN, not a plausible number
    finite = jnp.isfinite(last)
    converged = finite & (last <= jnp.squeeze(s.threshold, axes))
    x = jnp.where(jnp.expand_dims(finite, axes), s.x * s.scale.astype(s.x.dtype), jnp.nan)
    return CGResult(
        x,
        jnp.squeeze(s.num_iters, axes),
        s.history * scale[None],
        converged,
        jnp.squeeze(s.breakdown, axes),
    )


def _adjoint_settings(settings: _CGSettings, adjoint: ImplicitAdjoint) -> _CGSettings:
    """The settings of the adjoint solve: `adjoint`'s, where it gives them."""
    return _CGSettings(
        settings.axes,
        settings.max_num_iters if adjoint.max_num_iters is None else adjoint.max_num_iters,
        settings.check,
        settings.gtol if adjoint.gtol is None else adjoint.gtol,
        settings.atol if adjoint.atol is None else adjoint.atol,
        settings.ltol,
    )


@eqx.filter_jit
def _implicit(A, P, y, x0, settings: tuple[_CGSettings, _CGSettings], trackers) -> CGResult:
    """The solve, differentiated implicitly (`ImplicitAdjoint`); `settings` and `trackers`
    are the forward solve's and the adjoint solve's. `x0`, `P` and traced tolerances carry
    no derivative (forward-mode tangents are solved from `x0` too)."""
    x0, settings = lax.stop_gradient((x0, settings))
    P = None if P is None else constant(P, y)

    def forward(rhs):
        result = _run(A, P, rhs, x0, settings[0], trackers[0], unrolled=False)
        return result.x, result[1:]

    def backward(rhs):
        result = _run(A, P, rhs, None, settings[1], trackers[1], unrolled=False)
        return result.x, result[1:]

    x, info = implicit_solve(lambda v: _apply_in_dtype(A, v), y, forward, backward)
    return CGResult(x, *info)


@eqx.filter_jit
def _unrolled(A, P, y, x0, settings: _CGSettings, tracker: Tracker | None) -> CGResult:
    """The solve, differentiated through its `max_num_iters` iterations (`UnrolledAdjoint`)."""
    return _run(A, P, y, x0, settings, tracker, unrolled=True)


def _run(A, P, y, x0, settings: _CGSettings, tracker: Tracker | None, unrolled: bool) -> CGResult:
    """The iterations: a `lax.while_loop` that stops when every system has, or (`unrolled`)
    a `lax.scan` of `max_num_iters` steps."""
    site = 0 if tracker is None else tracker.site()  # unused without a tracker

    def step(s: _State) -> _State:
        s = _step(A, P, settings, s)
        if tracker is not None:
            scale = jnp.squeeze(s.scale, settings.axes)
            tracker.step(site, s.k, residual=jnp.nanmax(s.history[s.k] * scale))
        return s

    state = _init(A, P, y, x0, settings)
    if unrolled:
        state, _ = lax.scan(lambda s, _: (step(s), None), state, length=settings.max_num_iters)
    else:
        state = lax.while_loop(
            lambda s: (s.k < settings.max_num_iters) & jnp.any(s.active), step, state
        )
    if tracker is not None:
        tracker.finish(site, state.k)
    return _result(settings, state)
