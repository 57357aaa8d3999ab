r"""`admm`: $\min_x \tfrac12 \|A x - y\|^2 + g(G x)$ by the scaled form of ADMM, its
$x$-update solved by a few warm-started CG iterations on $A^H A + \rho\, G^H G$."""

from __future__ import annotations

from typing import Literal, NamedTuple, overload

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from .._core import NamedLinop
from .._progress import Tracker
from ._adjoint import UnrolledAdjoint
from ._cg import conjugate_gradients
from ._common import DimsOrAxes, as_count, as_flag, as_positive, tracker_for
from ._prox_base import AbstractProx, batched_prox
from ._prox_solvers_common import (
    Spaces,
    apply,
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

_NAME = "admm"


class ADMMResult(NamedTuple):
    r"""What `admm(..., return_info=True)` returns (a pytree).

    - `x`: the solution, laid out by `A.ishape`.
    - `z`, `u`: the split variable $z \approx G x$ and the scaled dual variable $u$ of
      the last iteration (to continue from them).
    - `objective`: `(max_num_iters, *batch)`, entry `k` the objective
      $\tfrac12 \|A x - y\|^2 + g(G x)$ of each system after iteration `k + 1`
      ($+\infty$ for an indicator $g$ while $G x$ is still outside its set).
    - `primal_residuals`: `(max_num_iters, *batch)`, $\|G x - z\|$ per system.
    - `dual_residuals`: `(max_num_iters, *batch)`, $\rho\, \|G^H (z - z_\text{prev})\|$
      per system.
    """

    x: jax.Array
    z: jax.Array
    u: jax.Array
    objective: jax.Array
    primal_residuals: jax.Array
    dual_residuals: jax.Array


class _ADMMSettings(eqx.Module):
    """What one run is compiled for: the `Spaces`, the iteration counts, and whether the
    objective is recorded (`return_info`; it costs one application of `A` per iteration)."""

    spaces: Spaces
    max_num_iters: int = eqx.field(static=True)
    max_cg_iters: int = eqx.field(static=True)
    record: bool = eqx.field(static=True)


class _ADMMState(NamedTuple):
    x: jax.Array
    z: jax.Array
    u: jax.Array


@overload
def admm(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = ...,
    x0: ArrayLike | None = ...,
    rho: float | jax.Array = ...,
    max_num_iters: int = ...,
    max_cg_iters: int = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[False] = ...,
) -> jax.Array: ...
@overload
def admm(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = ...,
    x0: ArrayLike | None = ...,
    rho: float | jax.Array = ...,
    max_num_iters: int = ...,
    max_cg_iters: int = ...,
    *,
    batch_dims: DimsOrAxes = ...,
    progress: bool | None = ...,
    tqdm_kwargs: dict | None = ...,
    return_info: Literal[True],
) -> ADMMResult: ...
def admm(
    A: NamedLinop,
    y: ArrayLike,
    prox: AbstractProx,
    G: NamedLinop | None = None,
    x0: ArrayLike | None = None,
    rho: float | jax.Array = 1.0,
    max_num_iters: int = 50,
    max_cg_iters: int = 5,
    *,
    batch_dims: DimsOrAxes = None,
    progress: bool | None = None,
    tqdm_kwargs: dict | None = None,
    return_info: bool = False,
) -> jax.Array | ADMMResult:
    r"""Solve $\min_x \tfrac12 \|A x - y\|^2 + g(G x)$ by ADMM (scaled form) on the split
    $z = G x$, from $x_0$, $z = G x_0$, $u = 0$:

    $$x \leftarrow (A^H A + \rho\, G^H G)^{-1} \big(A^H y + \rho\, G^H (z - u)\big), \quad
    z_\text{prev} = z, \quad z \leftarrow \mathrm{prox}_{g/\rho}(G x + u), \quad
    u \leftarrow u + G x - z .$$

    The $x$-update runs `max_cg_iters` iterations of `conjugate_gradients`, warm started
    at the previous $x$ (sigpy's `ADMM` does the same), on the operator
    `A.N + rho * G.N`: the operators' own normals, so a NUFFT with `toeplitz=True` keeps
    its Toeplitz-embedded normal (no NUFFT inside the loop) and a `Dense` its Gram matrix.
    The residuals (Boyd et al. 2011, §3.3) are $r = G x - z$ and
    $s = \rho\, G^H (z - z_\text{prev})$; both tend to 0 at a solution.

    The iterations are one `lax.scan` of exactly `max_num_iters` steps (the inner CG a
    `lax.scan` of `max_cg_iters`), so `jax.grad` differentiates through the unrolled
    algorithm, w.r.t. `y`, `rho` and every array inside `A`, `G` and `prox` (what a
    reconstruction network trained end to end needs). It runs inside `jax.jit` and
    `jax.vmap`, on real and complex data, and on sharded operators and vectors (e.g.
    from `jl.create_batched_linop`) unchanged.

    **Arguments:**

    - `A`: the forward model, a NamedLinop.
    - `y`: the data, laid out by `A.oshape`.
    - `prox`: $g$, a `jl.alg.AbstractProx` (its `prox` is called with the step
      $1/\rho$).
    - `G`: the operator inside $g$, a NamedLinop on `A`'s input (default: identity).
    - `x0`: the starting point (default zero), shaped like `A.H(y)`.
    - `rho`: the penalty $\rho > 0$ (a number, or a traced scalar under `jax.jit`).
      Any $\rho$ converges, at a speed that depends on it (small: $z$ and $u$ move
      slowly; large: $x$ is held near $G^{-1} z$); the residual histories show which.
    - `max_num_iters`, `max_cg_iters`: the ADMM and inner CG iteration counts (>= 1;
      static).

    Keyword-only:

    - `batch_dims`: dims of $x$ (names of `A.ishape`, or axis numbers) that index
      independent systems, named alike in `A.oshape` and `G.oshape`: each system gets
      its own CG steps, residuals and objective, and `prox` acts on each system's array
      on its own (mapped over the batch dims, as `batched_prox` does).
    - `progress`: a tqdm bar that follows the iterations, also under `jax.jit` (None:
      `jaxlinops.config.progress`, else only in a terminal or notebook);
      `tqdm_kwargs` for it.
    - `return_info`: return an `ADMMResult` with the histories (recording the objective
      costs one more application of `A` per iteration).

    **Returns** $x$, or with `return_info=True` an `ADMMResult`.
    """
    A = check_linop(A, _NAME, "A")
    G = identity_like(A) if G is None else check_linop(G, _NAME, "G")
    prox = check_prox(prox, _NAME)
    rho = as_positive(rho, _NAME, "rho")
    max_num_iters = as_count(max_num_iters, _NAME, "max_num_iters")
    max_cg_iters = as_count(max_cg_iters, _NAME, "max_cg_iters")
    record = as_flag(return_info, _NAME, "return_info")
    tracker = tracker_for(progress, max_num_iters, "ADMM", tqdm_kwargs, _NAME)
    y, x0, spaces = setup(A, G, y, x0, batch_dims, _NAME)
    settings = _ADMMSettings(spaces, max_num_iters, max_cg_iters, record)
    return _run(A, G, prox, y, x0, real_scalar(rho, y.dtype), settings, tracker)


@eqx.filter_jit
def _run(A, G, prox, y, x0, rho, settings: _ADMMSettings, tracker: Tracker | None):
    dtype, spaces = y.dtype, settings.spaces
    x = jnp.zeros(jax.eval_shape(A.H, y).shape, dtype) if x0 is None else x0
    z = apply(G, x, dtype)
    AHy, normal = apply(A.H, y, dtype), normal_sum(A, G, rho, _NAME)

    def step(s: _ADMMState):
        rhs = AHy + rho.astype(dtype) * apply(G.H, s.z - s.u, dtype)
        x = _cg(normal, rhs, s.x, settings)
        Gx = apply(G, x, dtype)
        z = batched_prox(prox, Gx + s.u, 1 / rho, spaces.batch("z")).astype(dtype)
        record = {
            "primal": system_norms(Gx - z, spaces.z),
            "dual": rho * system_norms(apply(G.H, z - s.z, dtype), spaces.x),
        }
        if settings.record:
            record["objective"] = objective(apply(A, x, dtype) - y, prox, Gx, spaces)
        return _ADMMState(x, z, s.u + Gx - z), record

    state, history = iterate(
        step, _ADMMState(x, z, jnp.zeros_like(z)), settings.max_num_iters, tracker
    )
    if not settings.record:
        return state.x
    x, z, u = state
    return ADMMResult(x, z, u, history["objective"], history["primal"], history["dual"])


def _cg(normal: NamedLinop, rhs: jax.Array, x: jax.Array, settings: _ADMMSettings) -> jax.Array:
    r"""The $x$-update: `max_cg_iters` CG iterations from `x`, differentiated through."""
    return conjugate_gradients(
        normal,
        rhs,
        x,
        max_num_iters=settings.max_cg_iters,
        disable_tracking=True,
        batch_dims=settings.spaces.batch("x"),
        progress=False,
        adjoint=UnrolledAdjoint(),
    )
