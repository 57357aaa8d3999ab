"""`power_method` and `singular_value_decomposition` (power method with deflation)."""

from __future__ import annotations

import math
from functools import partial
from typing import Literal, NamedTuple, overload

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from .._core import NamedLinop
from .._dims import ELLIPSIS
from .._progress import Tracker
from ._common import (
    DimsOrAxes,
    Operator,
    as_count,
    as_flag,
    as_tolerance,
    as_vector,
    check_operator,
    inner,
    norm,
    resolve_axes,
    result_dtype,
    safe_divide,
    scaled_norm,
    square_output,
    tracker_for,
)
from ._spectral_grad import eigenvalue_magnitude, frozen, without_derivative


class PowerMethodResult(NamedTuple):
    """What `power_method(..., return_info=True)` returns (a pytree).

    - `v`, `eigenvalue`: as `power_method` returns them.
    - `num_iters`: the iterations run (a scalar: the batch stops together).
    - `eigenvalues`: `(max_iters, *batch)`, entry `k` the estimate after `k + 1`
      iterations; NaN after the run stopped.
    """

    v: jax.Array
    eigenvalue: jax.Array
    num_iters: jax.Array
    eigenvalues: jax.Array


class SVDResult(NamedTuple):
    r"""What `singular_value_decomposition(..., return_info=True)` returns (a pytree).

    - `U`, `S`, `Vh`: as `singular_value_decomposition` returns them.
    - `num_iters`: `(k,)`, the power iterations run for each singular value.
    - `eigenvalues`: `(max_iters, k, *batch)`: the power method's eigenvalue history
      (estimates of $\sigma_i^2$) for each singular value; NaN after it stopped.
    """

    U: jax.Array
    S: jax.Array
    Vh: jax.Array
    num_iters: jax.Array
    eigenvalues: jax.Array


@overload
def power_method(
    A: Operator,
    v_init: ArrayLike,
    max_iters: int = ...,
    eps: float | jax.Array = ...,
    tol: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: Literal[False] = ...,
) -> tuple[jax.Array, jax.Array]: ...
@overload
def power_method(
    A: Operator,
    v_init: ArrayLike,
    max_iters: int = ...,
    eps: float | jax.Array = ...,
    tol: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: Literal[True],
) -> PowerMethodResult: ...
@overload
def power_method(
    A: Operator,
    v_init: ArrayLike,
    max_iters: int = ...,
    eps: float | jax.Array = ...,
    tol: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: bool = ...,
) -> tuple[jax.Array, jax.Array] | PowerMethodResult: ...
def power_method(
    A: Operator,
    v_init: ArrayLike,
    max_iters: int = 50,
    eps: float | jax.Array = 0.0,
    tol: float | jax.Array = 1e-5,
    dim: DimsOrAxes = None,
    tqdm_kwargs: dict | None = None,
    *,
    progress: bool | None = None,
    return_info: bool = False,
) -> tuple[jax.Array, jax.Array] | PowerMethodResult:
    r"""The dominant eigenvector of a square operator and the magnitude of its eigenvalue.

    $v \leftarrow A v / (\|A v\| + \mathrm{eps})$, $\lambda = \|A v\|$, from
    $v_0 = v_\text{init} / (\|v_\text{init}\| + \mathrm{eps})$, until the relative change
    of $\lambda$ is below `tol` (for every batch entry; the first iteration only sets
    $\lambda$) or after `max_iters` iterations, in one `lax.while_loop` (jit-able).
    Norms are taken as $m \|v / m\|$ with $m = \max |v|$, so that large or small entries
    (1e20 in float32) neither overflow nor underflow.

    **Arguments** (as torchlinops, in its order):

    - `A`: a NamedLinop or linear callable mapping `v_init`'s shape to itself.
    - `v_init`: the start vector(s).
    - `max_iters`: an integer >= 1.
    - `eps`: added to the norms that `v` is divided by (a real number >= 0), as
      torchlinops: `v` then has norm $\lambda / (\lambda + \mathrm{eps})$, and $\lambda$
      settles at $|\lambda_1| - \mathrm{eps}$.
    - `tol`: the relative change of $\lambda$ that stops the iteration (a real number
      >= 0; 0 runs all `max_iters` iterations).
    - `dim`: the dims (names of `A.ishape`, or axis numbers) that the norms run over, as
      in torchlinops; the other axes are a batch of independent vectors. Default: all.
    - `tqdm_kwargs`: keyword arguments for the tqdm bar.

    Keyword-only (jaxlinops): `progress` (a tqdm bar, updated from inside the compiled
    loop; None: `jaxlinops.config.progress`, else only in a terminal or notebook) and
    `return_info` (return a `PowerMethodResult` with the eigenvalue history).

    Returns `(v, λ)`: the vector(s), of unit norm when `eps` is 0, and the eigenvalue
    magnitude(s), one per batch entry (a scalar without a batch). A zero `v_init` (with
    `eps` 0) gives NaN, as in torchlinops: it has no direction to iterate; so do NaN or
    Inf in `v_init` or in `A`'s output.

    **Derivatives** (`jax.grad`, `jax.jvp`) w.r.t. the arrays inside `A`: λ has its
    Hellmann–Feynman derivative $d|\mu| = \mathrm{Re}(\bar\mu\, v^H dA\, v) / |\mu|$
    (unit $v$), exact at convergence for a normal `A` (Hermitian, e.g. `A.N`), at the
    cost of one application of `A`'s derivative; the loop itself is not differentiated.
    `v` has a NaN derivative (an eigenvector's is ill-posed: it is defined up to a phase),
    so a loss that uses it gets a NaN gradient.
    """
    name = "power_method"
    check_operator(A, name)
    max_iters = as_count(max_iters, name, "max_iters")
    eps = as_tolerance(eps, name, "eps")
    tol = as_tolerance(tol, name, "tol")
    tracker = tracker_for(progress, max_iters, "Power Method", tqdm_kwargs, name)
    v = as_vector(v_init, name, "v_init")
    v = v.astype(result_dtype(name, v.dtype, square_output(A, v, name)))
    axes = resolve_axes(A, v.ndim, dim, name) or tuple(range(v.ndim))
    result = _power_jit(A, v, axes, _Settings(max_iters, eps, tol), tracker)
    return result if as_flag(return_info, name, "return_info") else (result.v, result.eigenvalue)


class _Settings(eqx.Module):
    """The power method's settings: `max_iters` (static: it sizes the history), `eps`
    and `tol` (Python floats or traced scalars)."""

    max_iters: int = eqx.field(static=True)
    eps: float | jax.Array
    tol: float | jax.Array


class _PowerState(NamedTuple):
    """The power iteration after `k` steps."""

    k: jax.Array  # steps taken
    v: jax.Array  # the vector(s)
    lam: jax.Array  # the eigenvalue magnitude(s), with size-1 `axes`
    change: jax.Array  # the largest relative change of lam in the last step
    history: jax.Array  # lam after each step


def _normalise(v: jax.Array, lam: jax.Array, eps: float | jax.Array) -> jax.Array:
    r"""$v / (\lambda + \mathrm{eps})$, and 0 where that is 0."""
    return safe_divide(v, (lam + jnp.asarray(eps, lam.dtype)).astype(v.dtype))


def _power(A, v, axes, settings: _Settings, tracker: Tracker | None) -> PowerMethodResult:
    site = 0 if tracker is None else tracker.site()  # unused without a tracker

    def step(s: _PowerState) -> _PowerState:
        w = A(s.v).astype(s.v.dtype)
        new = scaled_norm(w, axes)
        change = jnp.max(safe_divide(jnp.abs(new - s.lam), s.lam))
        history = s.history.at[s.k].set(jnp.squeeze(new, axes))
        if tracker is not None:
            tracker.step(site, s.k + 1, rdiff=change)
        return _PowerState(s.k + 1, _normalise(w, new, settings.eps), new, change, history)

    def running(s: _PowerState):
        # the first step only sets λ
        return (s.k < settings.max_iters) & ((s.k < 2) | (s.change >= settings.tol))

    # a zero start (with eps 0) has no direction: 0 / 0 = NaN, as in torchlinops
    v = v / (scaled_norm(v, axes) + jnp.asarray(settings.eps, jnp.real(v).dtype)).astype(v.dtype)
    lam = jnp.zeros(norm(v, axes).shape, jnp.real(v).dtype)
    history = jnp.full((settings.max_iters, *jnp.squeeze(lam, axes).shape), jnp.nan, lam.dtype)
    start = _PowerState(jnp.zeros((), jnp.int32), v, lam, jnp.zeros((), lam.dtype), history)
    end = lax.while_loop(running, step, start)
    if tracker is not None:
        tracker.finish(site, end.k)
    return PowerMethodResult(end.v, jnp.squeeze(end.lam, axes), end.k, end.history)


@eqx.filter_jit
def _power_jit(A, v, axes, settings: _Settings, tracker: Tracker | None) -> PowerMethodResult:
    """`_power`, differentiable: the loop runs on a frozen copy of `A`; the eigenvalue
    gets its Hellmann–Feynman derivative, the vector a NaN one (`_spectral_grad`)."""
    apply, consts = jax.closure_convert(lambda u: A(u).astype(v.dtype), v)
    result = _power(lambda u: apply(u, *frozen(consts)), frozen(v), axes, settings, tracker)
    lam = eigenvalue_magnitude(apply, axes, result.eigenvalue, result.v, *consts)
    return result._replace(v=without_derivative(result.v, *consts), eigenvalue=lam)


@overload
def singular_value_decomposition(
    A: NamedLinop,
    x_init: ArrayLike,
    num_singular_values: int,
    max_iters: int = ...,
    tol: float | jax.Array = ...,
    eps: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: Literal[False] = ...,
) -> tuple[jax.Array, jax.Array, jax.Array]: ...
@overload
def singular_value_decomposition(
    A: NamedLinop,
    x_init: ArrayLike,
    num_singular_values: int,
    max_iters: int = ...,
    tol: float | jax.Array = ...,
    eps: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: Literal[True],
) -> SVDResult: ...
@overload
def singular_value_decomposition(
    A: NamedLinop,
    x_init: ArrayLike,
    num_singular_values: int,
    max_iters: int = ...,
    tol: float | jax.Array = ...,
    eps: float | jax.Array = ...,
    dim: DimsOrAxes = ...,
    tqdm_kwargs: dict | None = ...,
    *,
    progress: bool | None = ...,
    return_info: bool = ...,
) -> tuple[jax.Array, jax.Array, jax.Array] | SVDResult: ...
def singular_value_decomposition(
    A: NamedLinop,
    x_init: ArrayLike,
    num_singular_values: int,
    max_iters: int = 50,
    tol: float | jax.Array = 1e-5,
    eps: float | jax.Array = 0.0,
    dim: DimsOrAxes = None,
    tqdm_kwargs: dict | None = None,
    *,
    progress: bool | None = None,
    return_info: bool = False,
) -> tuple[jax.Array, jax.Array, jax.Array] | SVDResult:
    r"""The leading singular triplets of `A`, by the power method on $A^H A$ with deflation:
    $v_i$ is the dominant eigenvector of $A^H A - \sum_{j<i} \sigma_j^2 v_j v_j^H$ (started
    from `x_init`, orthogonalised against the earlier $v_j$), $\sigma_i = \|A v_i\|$ and
    $u_i = A v_i / (\sigma_i + \mathrm{eps})$.

    The accuracy of each $\sigma_i$ and $v_i$ depends on the gap to the next singular value,
    as for any power method; `max_iters`, `tol` and `eps` apply to each triplet as in
    `power_method` (the defaults, torchlinops', give about 5 digits for well separated
    values: lower `tol` for more).

    **Arguments** (as torchlinops, in its order): `A` (a NamedLinop: it applies `A` and
    `A.H`), `x_init` (laid out by `A.ishape`), `num_singular_values`, `max_iters`, `tol`,
    `eps`; `dim`: the dims of `x_init` (names of `A.ishape` or axis numbers) that the
    vectors run over, the others a batch of independent problems (each batch dim must be a
    named dim of both `A.ishape` and `A.oshape`, as for a `Dense` with a batch dim);
    default all; `tqdm_kwargs`: for the tqdm bar. Keyword-only: `progress` (as in
    `power_method`) and `return_info` (return an `SVDResult` with the eigenvalue history).

    Returns `(U, S, Vh)` like `numpy.linalg.svd`: `U` has shape `(*out, k)`, `S` `(k,)`
    in descending order (`(k, *batch)` with a batch), `Vh` `(k, *in)`.

    **Derivatives** w.r.t. the arrays inside `A`: `S` has the derivative
    $d\sigma_i = \mathrm{Re}\, u_i^H dA\, v_i$ (exact at convergence); the loops are
    not differentiated. `U` and `Vh` have a NaN derivative (see `power_method`).
    """
    name = "singular_value_decomposition"
    if not isinstance(A, NamedLinop):
        raise TypeError(
            f"`{name}` needs a NamedLinop (it applies A and A.H); got {type(A).__name__}."
        )
    num_singular_values = as_count(num_singular_values, name, "num_singular_values")
    max_iters = as_count(max_iters, name, "max_iters")
    tol = as_tolerance(tol, name, "tol")
    eps = as_tolerance(eps, name, "eps")
    tracker = tracker_for(progress, max_iters, "SVD", tqdm_kwargs, name)
    x = as_vector(x_init, name, "x_init")
    axes = resolve_axes(A, x.ndim, dim, name) or tuple(range(x.ndim))
    size = math.prod(x.shape[a] for a in axes)
    if num_singular_values > size:
        raise ValueError(
            f"`{name}`: at most {size} singular values for vectors of shape "
            f"{tuple(x.shape[a] for a in axes)}."
        )
    out = jax.eval_shape(A, x)
    out_axes = _output_axes(A, axes, x.ndim, len(out.shape), name)
    x = x.astype(result_dtype(name, x.dtype, out.dtype))
    result = _svd(
        A, x, num_singular_values, axes, out_axes, _Settings(max_iters, eps, tol), tracker
    )
    if as_flag(return_info, name, "return_info"):
        return result
    return result.U, result.S, result.Vh


def _output_axes(A: NamedLinop, axes: tuple[int, ...], ndim: int, out_ndim: int, name: str):
    """The axes of `A`'s output that the vectors $u_i$ run over: all of them, but the batch
    dims (the input axes outside `axes`), found by name in `A.oshape`."""
    batch = [a for a in range(ndim) if a not in axes]
    if not batch:
        return tuple(range(out_ndim))
    ishape, oshape = tuple(A.ishape), tuple(A.oshape)
    names = [ishape[a] if len(ishape) == ndim else None for a in batch]
    if ELLIPSIS in ishape + oshape or None in names or not set(names) <= set(oshape):
        raise ValueError(
            f"`{name}`: with `dim`, the other (batch) dims of x_init must be named dims of "
            f"both A.ishape {ishape} and A.oshape {oshape} (no '...'); got batch axes {batch}."
        )
    if [oshape.index(n) for n in names] != sorted(oshape.index(n) for n in names):
        raise ValueError(
            f"`{name}`: the batch dims {names} must come in the same order in A.ishape "
            f"{ishape} and A.oshape {oshape}."
        )
    return tuple(i for i, n in enumerate(oshape) if n not in names)


@eqx.filter_jit
def _svd(A, x, k, axes, out_axes, settings: _Settings, tracker: Tracker | None) -> SVDResult:
    # the loops run on a frozen copy of A; sigma = ||A v|| then has the derivative
    # Re u^H dA v at the singular vectors, and U, Vh a NaN one (`_spectral_grad`)
    fixed, consts = frozen(A), jax.tree.leaves(eqx.filter(A, eqx.is_array))
    vs, sigmas, us, iters, histories = [], [], [], [], []
    for _ in range(k):
        start = frozen(x)
        for vj in vs:
            start = start - vj * inner(vj, start, axes)
        deflated = partial(_deflated, fixed, tuple(vs), tuple(frozen(sigmas)), axes)
        v, _, num_iters, history = _power(deflated, start, axes, settings, tracker)
        u = A(v)
        sigma = scaled_norm(u, out_axes)
        vs.append(v)
        sigmas.append(jnp.expand_dims(jnp.squeeze(sigma, out_axes), axes))
        us.append(_normalise(u, sigma, settings.eps))
        iters.append(num_iters)
        histories.append(history)
    S = jnp.stack([jnp.squeeze(s, axes) for s in sigmas])
    return SVDResult(
        without_derivative(jnp.stack(us, axis=-1), *consts),
        S,
        without_derivative(jnp.conj(jnp.stack(vs)), *consts),
        jnp.stack(iters),
        jnp.stack(histories, axis=1),
    )


def _deflated(A, vs, sigmas, axes, v):
    r"""$(A^H A - \sum_j \sigma_j^2 v_j v_j^H) v$."""
    out = A.H(A(v)).astype(v.dtype)
    for vj, sj in zip(vs, sigmas):
        out = out - (sj**2).astype(v.dtype) * vj * inner(vj, v, axes)
    return out
