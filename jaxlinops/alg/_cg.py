"""`conjugate_gradients`: (preconditioned) CG in one `lax.while_loop`."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.core import Tracer
from jax.typing import ArrayLike

from ._common import (
    DimsOrAxes,
    Operator,
    as_count,
    as_tolerance,
    as_vector,
    check_operator,
    inner,
    max_abs,
    norm,
    progress_bar,
    resolve_axes,
    result_dtype,
    safe_divide,
    square_output,
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
    - `gtol`: the relative residual tolerance (a Python float, or a traced scalar).
    - `atol`: the absolute residual tolerance (a Python float, or a traced scalar).
    """

    axes: tuple[int, ...] = eqx.field(static=True)
    max_num_iters: int = eqx.field(static=True)
    gtol: float | jax.Array
    atol: float | jax.Array


class _State(NamedTuple):
    """The iteration, on the scaled system $A (x / s) = y / s$ (see `_init`)."""

    scale: jax.Array  # s, per system
    threshold: jax.Array  # max(gtol ||y||, atol) / s, per system
    k: jax.Array
    x: jax.Array
    r: jax.Array
    p: jax.Array
    rz: jax.Array
    active: jax.Array
    breakdown: jax.Array
    num_iters: jax.Array
    history: jax.Array


def conjugate_gradients(
    A: Operator,
    y: ArrayLike,
    x0: ArrayLike | None = None,
    P: Operator | None = None,
    max_num_iters: int = 20,
    gtol: float | jax.Array = 1e-6,
    atol: float | jax.Array = 0.0,
    batch_dims: DimsOrAxes = None,
    progress: bool = False,
) -> CGResult:
    r"""Solve $A x = y$ for a Hermitian positive (semi)definite $A$ by conjugate gradients,
    optionally preconditioned by a Hermitian positive definite $P \approx A^{-1}$.

    Iteration $k$: $\alpha = \langle r, z\rangle / \langle p, A p\rangle$,
    $x \mathrel{+}= \alpha p$, $r \mathrel{-}= \alpha A p$, $z = P r$,
    $p = z + (\langle r, z\rangle_\text{new} / \langle r, z\rangle) p$: one application of
    $A$ (and of $P$) per iteration. The residual $r = y - A x$ is updated, not recomputed,
    so tracking it costs no extra matvec. A system stops when
    $\|r\| \le \max(\mathrm{gtol}\,\|y\|, \mathrm{atol})$ (`converged`), or at a breakdown:
    $\langle p, Ap\rangle \le 0$ or $\langle r, P r\rangle \le 0$ before convergence
    (`breakdown`, and `converged` is False). With no `x0`, a zero `y` gives a zero `x`.

    **Hermitian positive definite `A` only.** CG does not check it (that would cost extra
    applications of `A`): on a non-Hermitian or indefinite `A` it may break down, stall
    or reach `max_num_iters`. Its residual is still $y - A x$, so `converged` stays
    truthful: always check it (and `breakdown`). For such operators use a lineax solver
    (`to_lineax`, `lx.GMRES`) or solve the normal equations $A^H A x = A^H y$.

    Scaling: each system is solved as $A (x / s) = y / s$, $s$ its largest entry of $y$
    and of $y - A x_0$, so norms neither overflow nor underflow (float16 entries of 200,
    float32 entries of 1e19 or 1e-30 solve as any others). NaN or Inf in `y`, `x0` or
    `A`'s output give a NaN `x` with `converged` False, also under `jax.jit`.

    The loop is a `lax.while_loop`: the solver runs inside `jax.jit` and is compiled when
    called eagerly. Inner products are elementwise sums, so sharded operators and vectors
    (e.g. from `jl.create_batched_linop`) work unchanged.

    **Arguments:**

    - `A`: a NamedLinop or any linear callable mapping `y`'s shape to itself (typically
      `A.N`, with `y = A.H(b)` for least squares).
    - `y`: the right-hand side.
    - `x0`: the starting point (default zero), shaped like `y`.
    - `P`: a preconditioner, applied to residuals (e.g. `polynomial_preconditioner`).
    - `max_num_iters`: at most this many iterations (an integer >= 1).
    - `gtol`, `atol`: relative and absolute residual tolerances (real numbers >= 0).
    - `batch_dims`: dims of `y` (names of `A.ishape`, or axis numbers) that index
      independent systems: inner products sum over the other axes, and each system has its
      own step sizes and stops on its own.
    - `progress`: show a progress bar (tqdm if installed, else log lines on the
      `jaxlinops.alg` logger). Runs the iterations from Python; not inside `jax.jit`.

    **Returns** a `CGResult` `(x, num_iters, residual_norms, converged, breakdown)`.
    """
    check_operator(A, _NAME)
    if P is not None:
        check_operator(P, _NAME, "P")
    max_num_iters = as_count(max_num_iters, _NAME, "max_num_iters")
    gtol, atol = as_tolerance(gtol, _NAME, "gtol"), as_tolerance(atol, _NAME, "atol")
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
    settings = _CGSettings(axes, max_num_iters, gtol, atol)
    if progress:
        return _solve_with_progress(A, P, y.astype(dtype), x0, settings)
    return _solve(A, P, y.astype(dtype), x0, settings)


def _apply_in_dtype(op, v: jax.Array) -> jax.Array:
    """`op(v)` in the dtype of `v` (the solve's dtype)."""
    return op(v).astype(v.dtype)


def _init(A, P, y, x0, settings: _CGSettings) -> _State:
    axes = settings.axes
    r = y if x0 is None else y - _apply_in_dtype(A, x0.astype(y.dtype))
    # s: the power of 2 just above the largest entry of y and r, so that scaling is exact
    # (1 for zero or non-finite data, which `_result` turns into NaN)
    _, exponent = jnp.frexp(jnp.maximum(max_abs(y, axes), max_abs(r, axes)))
    scale = jnp.ldexp(jnp.ones(exponent.shape, jnp.real(y).dtype), exponent)
    s = scale.astype(y.dtype)
    x = jnp.zeros_like(y) if x0 is None else x0.astype(y.dtype) / s
    r = r / s
    z = r if P is None else _apply_in_dtype(P, r)
    rnorm = norm(r, axes)
    batch_shape = jnp.squeeze(rnorm, axes).shape
    history = jnp.full((settings.max_num_iters + 1, *batch_shape), jnp.nan, rnorm.dtype)
    real = rnorm.dtype
    threshold = jnp.maximum(
        jnp.asarray(settings.gtol, real) * norm(y / s, axes),
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
        active=rnorm > threshold,
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
    alpha = jnp.where(step, s.rz / jnp.where(step, pAp, 1), 0).astype(s.x.dtype)
    x = s.x + alpha * s.p
    r = s.r - alpha * Ap
    z = r if P is None else _apply_in_dtype(P, r)
    rz = jnp.real(inner(r, z, axes))
    beta = safe_divide(rz, s.rz).astype(s.x.dtype)
    rnorm = jnp.sqrt(rz) if P is None else norm(r, axes)
    unconverged = rnorm > s.threshold
    # rz <= 0 with r unconverged: P is not positive definite
    breakdown = s.active & ((pAp <= 0) | (unconverged & (rz <= 0)))
    return _State(
        scale=s.scale,
        threshold=s.threshold,
        k=s.k + 1,
        x=x,
        r=r,
        p=z + beta * s.p,
        rz=rz,
        active=s.active & unconverged & ~breakdown,
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


@eqx.filter_jit
def _solve(A, P, y, x0, settings: _CGSettings) -> CGResult:
    state = _init(A, P, y, x0, settings)
    state = lax.while_loop(
        lambda s: (s.k < settings.max_num_iters) & jnp.any(s.active),
        lambda s: _step(A, P, settings, s),
        state,
    )
    return _result(settings, state)


def _solve_with_progress(A, P, y, x0, settings: _CGSettings) -> CGResult:
    if isinstance(y, Tracer):
        raise ValueError(f"`{_NAME}`: progress=True runs from Python; it cannot run inside jit.")
    state = _init_jit(A, P, y, x0, settings)
    bar = progress_bar(settings.max_num_iters, "CG")
    try:
        while int(state.k) < settings.max_num_iters and bool(jnp.any(state.active)):
            state = _step_jit(A, P, settings, state)
            bar.update(1)
            scale = jnp.squeeze(state.scale, settings.axes)
            bar.set_postfix(residual=float(jnp.nanmax(state.history[state.k] * scale)))
    finally:
        bar.close()
    return _result_jit(settings, state)


_init_jit = eqx.filter_jit(_init)
_step_jit = eqx.filter_jit(_step)
_result_jit = eqx.filter_jit(_result)
