"""`power_method` and `singular_value_decomposition` (power method with deflation)."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax
from jax.typing import ArrayLike

from .._core import NamedLinop
from ._common import (
    DimsOrAxes,
    Operator,
    as_count,
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
)


def power_method(
    A: Operator,
    v_init: ArrayLike,
    max_iters: int = 50,
    tol: float | jax.Array = 1e-5,
    dim: DimsOrAxes = None,
) -> tuple[jax.Array, jax.Array]:
    r"""The dominant eigenvector of a square operator and the magnitude of its eigenvalue.

    $v \leftarrow A v / \|A v\|$, $\lambda = \|A v\|$, from $v_0 = v_\text{init} /
    \|v_\text{init}\|$, until the relative change of $\lambda$ is below `tol` (for every
    batch entry) or after `max_iters` iterations, in one `lax.while_loop` (jit-able).
    Norms are taken as $m \|v / m\|$ with $m = \max |v|$, so that large or small entries
    (1e20 in float32) neither overflow nor underflow.

    - `A`: a NamedLinop or linear callable mapping `v_init`'s shape to itself.
    - `max_iters`: an integer >= 1; `tol`: a real number >= 0.
    - `dim`: the dims (names of `A.ishape`, or axis numbers) that the norms run over, as
      in torchlinops; the other axes are a batch of independent vectors. Default: all.

    Returns `(v, λ)`: the unit vector(s) and the eigenvalue magnitude(s), one per batch
    entry (a scalar without a batch). A zero `v_init` returns zeros; NaN or Inf in
    `v_init` or in `A`'s output give NaN.
    """
    name = "power_method"
    check_operator(A, name)
    max_iters = as_count(max_iters, name, "max_iters")
    tol = as_tolerance(tol, name, "tol")
    v = as_vector(v_init, name, "v_init")
    v = v.astype(result_dtype(name, v.dtype, square_output(A, v, name)))
    axes = resolve_axes(A, v.ndim, dim, name) or tuple(range(v.ndim))
    return _power_jit(A, v, axes, max_iters, tol)


class _PowerState(NamedTuple):
    """The power iteration after `k` steps."""

    k: jax.Array  # steps taken
    v: jax.Array  # the unit vector(s)
    lam: jax.Array  # the eigenvalue magnitude(s), with size-1 `axes`
    change: jax.Array  # the largest relative change of lam in the last step


def _power(A, v, axes, max_iters, tol):
    def step(s: _PowerState) -> _PowerState:
        w = A(s.v).astype(s.v.dtype)
        new = scaled_norm(w, axes)
        change = jnp.max(safe_divide(jnp.abs(new - s.lam), s.lam))
        return _PowerState(s.k + 1, safe_divide(w, new.astype(s.v.dtype)), new, change)

    def running(s: _PowerState):
        # the first step only sets λ
        return (s.k < max_iters) & ((s.k < 2) | (s.change >= tol))

    v = safe_divide(v, scaled_norm(v, axes).astype(v.dtype))
    lam = jnp.zeros(norm(v, axes).shape, jnp.real(v).dtype)
    start = _PowerState(jnp.zeros((), jnp.int32), v, lam, jnp.zeros((), lam.dtype))
    end = lax.while_loop(running, step, start)
    return end.v, jnp.squeeze(end.lam, axes)


_power_jit = eqx.filter_jit(_power)


def singular_value_decomposition(
    A: NamedLinop,
    x_init: ArrayLike,
    num_singular_values: int,
    max_iters: int = 100,
    tol: float | jax.Array = 1e-8,
) -> tuple[jax.Array, jax.Array, jax.Array]:
    r"""The leading singular triplets of `A`, by the power method on $A^H A$ with deflation:
    $v_i$ is the dominant eigenvector of $A^H A - \sum_{j<i} \sigma_j^2 v_j v_j^H$ (started
    from `x_init`, orthogonalised against the earlier $v_j$), $\sigma_i = \|A v_i\|$ and
    $u_i = A v_i / \sigma_i$.

    The accuracy of each $\sigma_i$ and $v_i$ depends on the gap to the next singular value,
    as for any power method; `max_iters` and `tol` apply to each triplet.

    Returns `(U, S, Vh)` like `numpy.linalg.svd`: `U` has shape `(*out, k)`, `S` `(k,)`
    in descending order, `Vh` `(k, *in)`, with `x_init` laid out by `A.ishape`.
    """
    name = "singular_value_decomposition"
    if not isinstance(A, NamedLinop):
        raise TypeError(
            f"`{name}` needs a NamedLinop (it applies A and A.H); got {type(A).__name__}."
        )
    num_singular_values = as_count(num_singular_values, name, "num_singular_values")
    max_iters = as_count(max_iters, name, "max_iters")
    tol = as_tolerance(tol, name, "tol")
    x = as_vector(x_init, name, "x_init")
    size = x.size
    if num_singular_values > size:
        raise ValueError(
            f"`{name}`: at most {size} singular values for an input of shape {x.shape}."
        )
    x = x.astype(result_dtype(name, x.dtype, jax.eval_shape(A, x).dtype))
    return _svd(A, x, num_singular_values, max_iters, tol)


@eqx.filter_jit
def _svd(A, x, k, max_iters, tol):
    axes = tuple(range(x.ndim))
    vs, sigmas, us = [], [], []
    for _ in range(k):
        start = x
        for vj in vs:
            start = start - vj * inner(vj, start, axes)
        deflated = partial(_deflated, A, tuple(vs), tuple(sigmas), axes)
        v, _ = _power(deflated, start, axes, max_iters, tol)
        u = A(v)
        sigma = jnp.squeeze(scaled_norm(u, tuple(range(u.ndim))))
        vs.append(v)
        sigmas.append(sigma)
        us.append(safe_divide(u, sigma.astype(u.dtype)))
    return jnp.stack(us, axis=-1), jnp.stack(sigmas), jnp.conj(jnp.stack(vs))


def _deflated(A, vs, sigmas, axes, v):
    r"""$(A^H A - \sum_j \sigma_j^2 v_j v_j^H) v$."""
    out = A.H(A(v)).astype(v.dtype)
    for vj, sj in zip(vs, sigmas):
        out = out - (sj**2).astype(v.dtype) * vj * inner(vj, v, axes)
    return out
