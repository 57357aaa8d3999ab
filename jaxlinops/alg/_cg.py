"""`conjugate_gradients`: (preconditioned) CG in one `lax.while_loop`."""

from __future__ import annotations

from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ._common import (
    DimsOrAxes,
    Operator,
    as_vector,
    check_operator,
    inner,
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

    - `x`: the solution, shaped like `y`.
    - `num_iters`: iterations run, per system (shape: the batch dims of `y`).
    - `residual_norms`: `(max_num_iters + 1, *batch)`; entry `k` is $\\|y - A x_k\\|$, NaN
      after the system stopped.
    - `converged`: per system, whether $\\|y - A x\\| \\le \\max(\\mathrm{gtol} \\|y\\|,
      \\mathrm{atol})$.
    """

    x: jax.Array
    num_iters: jax.Array
    residual_norms: jax.Array
    converged: jax.Array


class _State(NamedTuple):
    threshold: jax.Array  # max(gtol ||y||, atol), per system
    k: jax.Array
    x: jax.Array
    r: jax.Array
    p: jax.Array
    rz: jax.Array
    active: jax.Array
    num_iters: jax.Array
    history: jax.Array


def conjugate_gradients(
    A: Operator,
    y,
    x0=None,
    P: Operator | None = None,
    max_num_iters: int = 20,
    gtol: float = 1e-6,
    atol: float = 0.0,
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
    $\|r\| \le \max(\mathrm{gtol}\,\|y\|, \mathrm{atol})$, or when $\langle p, Ap\rangle = 0$
    (breakdown: $A$ is singular along $p$). A zero `y` returns `x0` (zero by default).

    The loop is a `lax.while_loop`: the solver runs inside `jax.jit` and is compiled when
    called eagerly. Inner products are elementwise sums, so sharded operators and vectors
    (e.g. from `jl.create_batched_linop`) work unchanged.

    **Arguments:**

    - `A`: a NamedLinop or any linear callable mapping `y`'s shape to itself (typically
      `A.N`, with `y = A.H(b)` for least squares).
    - `y`: the right-hand side.
    - `x0`: the starting point (default zero).
    - `P`: a preconditioner, applied to residuals (e.g. `polynomial_preconditioner`).
    - `max_num_iters`: at most this many iterations (at least 1).
    - `gtol`, `atol`: relative and absolute residual tolerances.
    - `batch_dims`: dims of `y` (names of `A.ishape`, or axis numbers) that index
      independent systems: inner products sum over the other axes, and each system has its
      own step sizes and stops on its own.
    - `progress`: show a progress bar (tqdm if installed, else log lines on the
      `jaxlinops.alg` logger). Runs the iterations from Python; not inside `jax.jit`.

    **Returns** a `CGResult` `(x, num_iters, residual_norms, converged)`.
    """
    check_operator(A, _NAME)
    if P is not None:
        check_operator(P, _NAME, "P")
    if not isinstance(max_num_iters, int) or max_num_iters < 1:
        raise ValueError(
            f"`{_NAME}`: max_num_iters must be an integer >= 1; got {max_num_iters!r}."
        )
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
    settings = (axes, max_num_iters, gtol, atol)
    if progress:
        return _solve_with_progress(A, P, y.astype(dtype), x0, settings)
    return _solve(A, P, y.astype(dtype), x0, settings)


def _apply(op, v: jax.Array) -> jax.Array:
    return op(v).astype(v.dtype)


def _init(A, P, y, x0, settings) -> _State:
    axes, max_num_iters, gtol, atol = settings
    if x0 is None:
        x, r = jnp.zeros_like(y), y
    else:
        x = x0.astype(y.dtype)
        r = y - _apply(A, x)
    z = r if P is None else _apply(P, r)
    rnorm = norm(r, axes)
    batch_shape = jnp.squeeze(rnorm, axes).shape
    history = jnp.full((max_num_iters + 1, *batch_shape), jnp.nan, rnorm.dtype)
    threshold = jnp.maximum(gtol * norm(y, axes), atol)
    return _State(
        threshold=threshold,
        k=jnp.zeros((), jnp.int32),
        x=x,
        r=r,
        p=z,
        rz=jnp.real(inner(r, z, axes)),
        active=rnorm > threshold,
        num_iters=jnp.zeros(rnorm.shape, jnp.int32),
        history=history.at[0].set(jnp.squeeze(rnorm, axes)),
    )


def _step(A, P, settings, s: _State) -> _State:
    axes = settings[0]
    Ap = _apply(A, s.p)
    pAp = jnp.real(inner(s.p, Ap, axes))
    alpha = jnp.where(s.active, safe_divide(s.rz, pAp), 0).astype(s.x.dtype)
    x = s.x + alpha * s.p
    r = s.r - alpha * Ap
    z = r if P is None else _apply(P, r)
    rz = jnp.real(inner(r, z, axes))
    beta = safe_divide(rz, s.rz).astype(s.x.dtype)
    rnorm = jnp.sqrt(rz) if P is None else norm(r, axes)
    return _State(
        threshold=s.threshold,
        k=s.k + 1,
        x=x,
        r=r,
        p=z + beta * s.p,
        rz=rz,
        active=s.active & (rnorm > s.threshold) & (pAp > 0),
        num_iters=s.num_iters + s.active.astype(jnp.int32),
        history=s.history.at[s.k + 1].set(jnp.squeeze(jnp.where(s.active, rnorm, jnp.nan), axes)),
    )


def _result(settings, s: _State) -> CGResult:
    axes = settings[0]
    # the history row of each system's last iteration
    last = jnp.take_along_axis(s.history, jnp.squeeze(s.num_iters, axes)[None], axis=0)[0]
    converged = last <= jnp.squeeze(s.threshold, axes)
    return CGResult(s.x, jnp.squeeze(s.num_iters, axes), s.history, converged)


@eqx.filter_jit
def _solve(A, P, y, x0, settings) -> CGResult:
    max_num_iters = settings[1]
    state = _init(A, P, y, x0, settings)
    state = lax.while_loop(
        lambda s: (s.k < max_num_iters) & jnp.any(s.active),
        lambda s: _step(A, P, settings, s),
        state,
    )
    return _result(settings, state)


def _solve_with_progress(A, P, y, x0, settings) -> CGResult:
    if isinstance(y, jax.core.Tracer):
        raise ValueError(f"`{_NAME}`: progress=True runs from Python; it cannot run inside jit.")
    state = _init_jit(A, P, y, x0, settings)
    bar = progress_bar(settings[1], "CG")
    try:
        while int(state.k) < settings[1] and bool(jnp.any(state.active)):
            state = _step_jit(A, P, settings, state)
            bar.update(1)
            bar.set_postfix(residual=float(jnp.nanmax(state.history[state.k])))
    finally:
        bar.close()
    return _result_jit(settings, state)


_init_jit, _step_jit, _result_jit = (eqx.filter_jit(f) for f in (_init, _step, _result))
