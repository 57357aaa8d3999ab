r"""`fista`: proximal gradient descent with Nesterov momentum (Beck & Teboulle, 2009) for
$\min_x \tfrac12 \|A x - y\|^2 + g(x)$, in one `lax.scan`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple, overload

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import Tracer
from jax.typing import ArrayLike

from .._core import NamedLinop
from .._progress import Tracker
from ._common import (
    DimsOrAxes,
    Operator,
    as_count,
    as_flag,
    as_vector,
    check_operator,
    resolve_axes,
    result_dtype,
    tracker_for,
)
from ._power import power_method
from ._prox import NoOp
from ._prox_base import AbstractProx, batched_prox, batched_value

_NAME = "fista"
# the automatic step: 1 / (SAFETY * L), L from POWER_ITERS power iterations on A^H A
POWER_ITERS = 30
SAFETY = 1.1


class FISTAResult(NamedTuple):
    r"""What `fista(..., return_info=True)` returns (a pytree).

    - `x`: the last iterate $x_K$, shaped like `x0` (like `A.H(y)` without one).
    - `objective`: `(max_num_iters + 1, *batch)`: entry `k` is
      $F(x_k) = \tfrac12\|A x_k - y\|^2 + g(x_k)$, entry 0 at the start (FISTA is not
      monotone: entries may rise now and then).
    - `num_iters`: the iterations run (always `max_num_iters`).
    - `step`: the step $t$ used, per system (shape: the batch).
    """

    x: jax.Array
    objective: jax.Array
    num_iters: jax.Array
    step: jax.Array


class _Problem(eqx.Module):
    """The static layout of one solve: `x_axes` (increasing) and `y_axes` (paired with
    them) index independent systems; `x_shape`, `dtype` of the iterate; `num_iters`."""

    x_axes: tuple[int, ...] = eqx.field(static=True)
    y_axes: tuple[int, ...] = eqx.field(static=True)
    x_shape: tuple[int, ...] = eqx.field(static=True)
    dtype: np.dtype = eqx.field(static=True)
    num_iters: int = eqx.field(static=True)


class _FISTAState(NamedTuple):
    k: jax.Array
    x: jax.Array  # x_k
    Kx: jax.Array  # K x_k: A x_k, or A^H A x_k (see `_run`)
    x_old: jax.Array  # x_{k-1}
    Kx_old: jax.Array  # K x_{k-1}


@overload
def fista(
    A: Operator,
    y: ArrayLike,
    prox: AbstractProx | None = ...,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    step: float | jax.Array | None = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[False] = ...,
) -> jax.Array: ...
@overload
def fista(
    A: Operator,
    y: ArrayLike,
    prox: AbstractProx | None = ...,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    step: float | jax.Array | None = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[True],
) -> FISTAResult: ...
@overload
def fista(
    A: Operator,
    y: ArrayLike,
    prox: AbstractProx | None = ...,
    x0: ArrayLike | None = ...,
    max_num_iters: int = ...,
    step: float | jax.Array | None = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: bool = ...,
) -> jax.Array | FISTAResult: ...
def fista(
    A: Operator,
    y: ArrayLike,
    prox: AbstractProx | None = None,
    x0: ArrayLike | None = None,
    max_num_iters: int = 100,
    step: float | jax.Array | None = None,
    *,
    batch_dims: DimsOrAxes = None,
    progress: bool | None = None,
    tqdm_kwargs: dict | None = None,
    return_info: bool = False,
) -> jax.Array | FISTAResult:
    r"""Minimise $F(x) = \tfrac12 \|A x - y\|^2 + g(x)$ by FISTA, for a linear $A$ and a
    closed convex $g$ given by its prox.

    From $z_1 = x_0$, $t_1 = 1$, iteration $k$ (Beck & Teboulle, 2009):
    $x_k = \mathrm{prox}_{\tau g}(z_k - \tau A^H(A z_k - y))$,
    $t_{k+1} = (1 + \sqrt{1 + 4 t_k^2}) / 2$,
    $z_{k+1} = x_k + \frac{t_k - 1}{t_{k+1}} (x_k - x_{k-1})$. One application of the
    normal `A.N` per iteration for a NamedLinop (its own normal: a NUFFT with
    `toeplitz=True` keeps its Toeplitz embedding, no gridding in the loop):
    $A^H (A z - y) = A^H A z - A^H y$, with $A^H A z_{k+1}$ from $A^H A x_k$ and
    $A^H A x_{k-1}$ by linearity; the objective (recorded in `FISTAResult.objective`)
    follows as $F(x_k) = \tfrac12 (\mathrm{Re}\langle x_k, A^H A x_k - 2 A^H y\rangle +
    \|y\|^2) + g(x_k)$, its data term to about $\epsilon \|y\|^2$. A linear callable
    takes one application of $A$ and one of $A^H$ per iteration instead, with
    $F(x_k)$ from $A x_k$. $F(x_k) - F^* = O(1 / k^2)$ for a step $\tau \le 1 / L$,
    $L = \|A\|^2$; FISTA is not monotone.

    **Step:** with `step=None`, $\tau = 1 / (1.1\, \hat L)$, $\hat L$ the estimate of
    $\|A^H A\|$ from 30 power iterations (`power_method`, from a fixed random start). The
    power method approaches $L$ from below; the factor 1.1 covers what 30 iterations miss
    on typical spectra. Pass `step` ($\le 1/L$) to skip the estimate or when it is known.

    Runs exactly `max_num_iters` iterations in one `lax.scan`: under `jax.jit` and
    `jax.vmap`, on complex data, with operators split across devices (e.g. from
    `jl.create_batched_linop`), and differentiable by unrolling (`jax.grad` w.r.t. `y`,
    `x0`, `step`, the arrays inside `A` and `prox`; reverse mode stores every iterate).
    The automatic step is a constant to differentiation (the derivative is that of the
    truncated solver at that step).

    **Arguments:**

    - `A`: a NamedLinop (applied with `A` and `A.H`), or a linear callable (its adjoint
      comes from `jax.linear_transpose`; then `x0` is required: it gives the input shape).
    - `y`: the data, shaped like `A`'s output.
    - `prox`: $g$, a `jl.alg` prox (`L1`, `NuclearNormBlocks`, ...); None: $g = 0$.
    - `x0`: the start (default zero, shaped like `A.H(y)`).
    - `max_num_iters`: the number of iterations (an integer >= 1; static).
    - `step`: $\tau > 0$: a real scalar or an array of the batch shape; None: see above.

    Keyword-only:

    - `batch_dims`: dims (names in both `A.ishape` and `A.oshape`, or axis numbers, the
      same in `x` and `y`) that index independent systems: each has its own step and
      objective, and `prox` acts on each system's array alone (its weights and blocks are
      laid out without these axes).
    - `progress`, `tqdm_kwargs`: a tqdm bar (as in `conjugate_gradients`).
    - `return_info`: return a `FISTAResult` instead of `x` alone.
    """
    check_operator(A, _NAME)
    prox = _check_prox(prox)
    num_iters = as_count(max_num_iters, _NAME, "max_num_iters")
    tracker = tracker_for(progress, num_iters, "FISTA", tqdm_kwargs, _NAME)
    y = as_vector(y, _NAME, "y")
    x0 = None if x0 is None else as_vector(x0, _NAME, "x0")
    problem = _layout(A, y, x0, batch_dims, num_iters)
    if step is None:
        step = _default_step(A, problem)
    else:
        step = _check_step(step, problem)
    record = as_flag(return_info, _NAME, "return_info")
    result = _run(A, prox, y.astype(problem.dtype), x0, step, problem, tracker, record)
    return result if record else result.x


def _check_prox(prox: object) -> AbstractProx:
    if prox is None:
        return NoOp()
    if not isinstance(prox, AbstractProx):
        raise TypeError(
            f"`{_NAME}(prox=...)` expects a jl.alg prox (an AbstractProx, e.g. "
            f"`jl.alg.L1(0.1)`) or None; got {type(prox).__name__}."
        )
    return prox


def _layout(
    A: Operator, y: jax.Array, x0: jax.Array | None, batch_dims: DimsOrAxes, num_iters: int
) -> _Problem:
    """The problem's shapes, dtype and batch axes, checked against `A`."""
    if x0 is not None:
        x = x0
    elif isinstance(A, NamedLinop):
        x = jax.eval_shape(A.H, y)
    else:
        raise TypeError(
            f"`{_NAME}`: `A` is a plain callable, so its input shape is unknown; pass `x0` "
            f"(or a NamedLinop)."
        )
    out = jax.eval_shape(A, jax.ShapeDtypeStruct(x.shape, x.dtype))
    if not isinstance(out, jax.ShapeDtypeStruct) or out.shape != y.shape:
        got = getattr(out, "shape", type(out).__name__)
        raise ValueError(
            f"`{_NAME}`: `A` maps x of shape {x.shape} to {got}, but y has shape {y.shape}."
        )
    dtype = result_dtype(_NAME, y.dtype, x.dtype, out.dtype)
    x_axes, y_axes = _batch_axes(A, len(x.shape), y.ndim, batch_dims)
    for a, b in zip(x_axes, y_axes):
        if x.shape[a] != y.shape[b]:
            raise ValueError(
                f"`{_NAME}(batch_dims={batch_dims!r})`: axis {a} of x has size {x.shape[a]} "
                f"but axis {b} of y has size {y.shape[b]}."
            )
    return _Problem(x_axes, y_axes, tuple(x.shape), dtype, num_iters)


def _batch_axes(A: Operator, x_ndim: int, y_ndim: int, dims: DimsOrAxes):
    """The batch axes of x (increasing) and the axes of y paired with them: a name is
    looked up in `A.ishape` and `A.oshape`, an axis number is the same in both."""
    if dims is None:
        return (), ()
    dims = list(dims) if isinstance(dims, Sequence) and not isinstance(dims, str) else [dims]
    out_op = A.H if isinstance(A, NamedLinop) else A
    pairs = sorted(
        (resolve_axes(A, x_ndim, d, _NAME)[0], resolve_axes(out_op, y_ndim, d, _NAME)[0])
        for d in dims
    )
    if len({a for a, _ in pairs}) != len(pairs):
        raise ValueError(f"`{_NAME}(batch_dims={dims!r})` names an axis twice.")
    return tuple(a for a, _ in pairs), tuple(b for _, b in pairs)


def _batch_shape(problem: _Problem) -> tuple[int, ...]:
    return tuple(problem.x_shape[a] for a in problem.x_axes)


def _check_step(step: object, problem: _Problem) -> jax.Array:
    """`step` as a real array of the batch shape; checked > 0 when concrete."""
    what = f"`{_NAME}(step=...)`"
    kinds = (int, float, np.ndarray, np.generic, jax.Array)
    if not isinstance(step, kinds) or isinstance(step, (bool, np.bool_)) or jnp.iscomplexobj(step):
        raise TypeError(f"{what} expects a real number or array; got {step!r:.60}.")
    try:
        t = jnp.broadcast_to(jnp.asarray(step), _batch_shape(problem))
    except ValueError:
        raise ValueError(
            f"{what} expects a scalar or an array of the batch shape {_batch_shape(problem)}; "
            f"got shape {np.shape(step)}."
        ) from None
    if not isinstance(t, Tracer) and not bool(np.all(np.asarray(t) > 0)):
        raise ValueError(f"{what} expects a step > 0; got {step!r:.60}.")
    return t.astype(jnp.finfo(problem.dtype).dtype)


def _default_step(A: Operator, problem: _Problem) -> jax.Array:
    r"""$1 / (1.1 \hat L)$ per system, $\hat L$ from the power method on $A^H A$; 1 where
    $\hat L = 0$ (a zero operator). A constant to differentiation."""
    v0 = jax.random.normal(jax.random.key(0), problem.x_shape, problem.dtype)
    if isinstance(A, NamedLinop):
        normal = A.N  # a Module: the power method's compilation is cached across calls
    else:
        forward, adjoint = _operators(A, v0)
        normal = lambda v: adjoint(forward(v))
    dims = tuple(a for a in range(len(problem.x_shape)) if a not in problem.x_axes)
    _, lam = power_method(normal, v0, POWER_ITERS, tol=0.0, dim=dims, progress=False)
    lam = lax.stop_gradient(lam)
    return jnp.where(lam > 0, 1 / (SAFETY * jnp.where(lam > 0, lam, 1)), 1).astype(lam.dtype)


def _operators(A: Operator, x: jax.Array):
    """$v \\mapsto A v$ and $r \\mapsto A^H r$, both in the iterate's dtype."""
    if isinstance(A, NamedLinop):
        return (lambda v: A(v).astype(x.dtype)), (lambda r: A.H(r).astype(x.dtype))
    out = jax.eval_shape(A, x)
    transpose = jax.linear_transpose(A, x)

    def adjoint(r: jax.Array) -> jax.Array:
        (t,) = transpose(jnp.conj(r).astype(out.dtype))
        return jnp.conj(t).astype(x.dtype)

    return (lambda v: A(v).astype(x.dtype)), adjoint


def _normal_objective(Nx, x, b, yy, prox: AbstractProx, problem: _Problem) -> jax.Array:
    r"""$F(x) = \tfrac12 (\mathrm{Re}\langle x, A^H A x - 2 A^H y\rangle + \|y\|^2) +
    g(x)$ per system, from $A^H A x$ (`Nx`), $b = A^H y$ and `yy` $= \|y\|^2$ (the data
    term to about $\epsilon \|y\|^2$: a difference of larger terms)."""
    inner = jnp.real(jnp.conj(x) * (Nx - 2 * b))
    data = (_system_sums(inner, problem.x_axes) + yy) / 2
    return data + batched_value(prox, x, problem.x_axes).astype(data.dtype)


def _objective(Ax, y, x, prox, problem: _Problem) -> jax.Array:
    r"""$\tfrac12 \|A x - y\|^2 + g(x)$ per system."""
    data = _system_sums(jnp.real((Ax - y) * jnp.conj(Ax - y)), problem.y_axes) / 2
    return data + batched_value(prox, x, problem.x_axes).astype(data.dtype)


@eqx.filter_jit
def _run(
    A, prox, y, x0, step, problem: _Problem, tracker: Tracker | None, record: bool
) -> FISTAResult:
    r"""The iterations, on $K x$ for $K = A^H A$ (`A.N` of a NamedLinop: the gradient
    $K z - A^H y$, $F(x)$ by `_normal_objective`) or $K = A$ (a callable: the gradient
    $A^H (K z - y)$, $F(x)$ from $A x$). The objective (an extra $g(x)$ per iteration: a
    transform for `L1(transform=...)`) only when it is returned (`record`) or shown
    (`tracker`), else zeros."""
    x = jnp.zeros(problem.x_shape, problem.dtype) if x0 is None else x0.astype(problem.dtype)
    if isinstance(A, NamedLinop):
        normal, b = A.N, A.H(y).astype(x.dtype)
        K = lambda v: normal(v).astype(x.dtype)  # noqa: E731
        gradient = lambda Kz: Kz - b  # noqa: E731
        yy = _system_sums(jnp.real(jnp.conj(y) * y), problem.y_axes)
        objective = lambda Nx, x: _normal_objective(Nx, x, b, yy, prox, problem)  # noqa: E731
    else:
        K, adjoint = _operators(A, x)
        gradient = lambda Kz: adjoint(Kz - y)  # noqa: E731
        objective = lambda Kx, x: _objective(Kx, y, x, prox, problem)  # noqa: E731
    Kx = K(x) if x0 is not None else jnp.zeros(jax.eval_shape(K, x).shape, x.dtype)
    rest = tuple(a for a in range(x.ndim) if a not in problem.x_axes)
    tau = jnp.expand_dims(step, rest).astype(problem.dtype)
    site = 0 if tracker is None else tracker.site()

    def body(s: _FISTAState, beta: jax.Array) -> tuple[_FISTAState, jax.Array]:
        c = beta.astype(problem.dtype)
        z, Kz = s.x + c * (s.x - s.x_old), s.Kx + c * (s.Kx - s.Kx_old)
        new = batched_prox(prox, z - tau * gradient(Kz), step, problem.x_axes)
        Knew = K(new)
        if record or tracker is not None:
            value = objective(Knew, new)
        else:
            value = jnp.zeros(_batch_shape(problem), jnp.finfo(problem.dtype).dtype)
        if tracker is not None:
            tracker.step(site, s.k + 1, objective=jnp.max(value))
        return _FISTAState(s.k + 1, new, Knew, s.x, s.Kx), value

    start = _FISTAState(jnp.zeros((), jnp.int32), x, Kx, x, Kx)
    betas = jnp.asarray(_momentum(problem.num_iters), jnp.finfo(problem.dtype).dtype)
    end, history = lax.scan(body, start, betas)
    if tracker is not None:
        tracker.finish(site, end.k)
    if record:
        history = jnp.concatenate([objective(Kx, x)[None], history])
    return FISTAResult(end.x, history, jnp.asarray(problem.num_iters), step)


def _system_sums(v: jax.Array, batch_axes: tuple[int, ...]) -> jax.Array:
    """`v` summed over every axis but `batch_axes`: one value per system, the batch axes
    in the order given."""
    k = len(batch_axes)
    return jnp.sum(jnp.moveaxis(v, batch_axes, range(k)), axis=tuple(range(k, v.ndim)))


def _momentum(n: int) -> np.ndarray:
    r"""The momentum weights $(t_{k-1} - 1) / t_k$ of iterations $k = 1..n$: $t_0 = 0$
    (so that $t_1 = 1$ and the first two weights are 0, as in Beck & Teboulle)."""
    t, betas = 0.0, []
    for _ in range(n):
        t_next = (1 + np.sqrt(1 + 4 * t**2)) / 2
        betas.append((t - 1) / t_next)
        t = t_next
    betas[0] = 0.0  # x_0 - x_{-1} = 0 anyway
    return np.array(betas)
