r"""How a solver's result is differentiated: `ImplicitAdjoint` (the default) or
`UnrolledAdjoint`, and `implicit_solve`, the implicit derivative of a linear solve.

For $x = A_\theta^{-1} y$, differentiating $A_\theta x = y$ gives
$\dot x = A_\theta^{-1} (\dot y - \dot A_\theta x)$: the derivative needs one more solve
with the same operator, not the iterations that produced $x$. In reverse mode, for a
cotangent $\bar x$: solve $A^H \lambda = \bar x$, then $\bar y = \lambda$ and
$\bar\theta = -\left(\partial_\theta (A_\theta x)\right)^H \lambda$, one vector-Jacobian
product of $\theta \mapsto A_\theta x$. Memory does not grow with the iteration count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ._common import as_count, as_tolerance


class ImplicitAdjoint(eqx.Module):
    r"""Differentiate a solve as if it were exact, $x = A^{-1} y$ (implicit function
    theorem): the derivative w.r.t. the right-hand side and every array inside $A$ costs one
    more solve, with the same solver, of the adjoint system $A^H \lambda = \bar x$ (reverse
    mode) or of $A \dot x = \dot y - \dot A x$ (forward mode), plus one application of the
    derivative of $A$. Memory does not grow with the iteration count. The derivative is that
    of the exact solution: accurate when the solve converged; $x_0$ and the preconditioner
    have no derivative (they change the iterations, not the solution).

    - `gtol`, `atol`, `max_num_iters`: the adjoint solve's tolerances and iteration limit
      (None: the forward solve's). The adjoint solve starts at zero.
    """

    gtol: float | jax.Array | None = None
    atol: float | jax.Array | None = None
    max_num_iters: int | None = eqx.field(static=True, default=None)


class UnrolledAdjoint(eqx.Module):
    """Differentiate the iterations themselves: the solver runs exactly `max_num_iters`
    iterations in a `lax.scan` (a system that met its tolerance stops moving, at the same
    cost), and reverse mode stores every iterate, so memory grows with the iteration count.
    The derivative is that of the truncated solver: what an unrolled network trained with a
    fixed number of iterations needs."""


Adjoint = ImplicitAdjoint | UnrolledAdjoint


def check_adjoint(adjoint: object, name: str) -> Adjoint:
    """`adjoint`, checked: an `ImplicitAdjoint` with valid tolerances, or an
    `UnrolledAdjoint`."""
    if isinstance(adjoint, UnrolledAdjoint):
        return adjoint
    if not isinstance(adjoint, ImplicitAdjoint):
        raise TypeError(
            f"`{name}(adjoint=...)` expects jl.alg.ImplicitAdjoint(...) or "
            f"jl.alg.UnrolledAdjoint(); got {type(adjoint).__name__}."
        )
    tol = {
        arg: None if value is None else as_tolerance(value, name, f"adjoint.{arg}")
        for arg, value in (("gtol", adjoint.gtol), ("atol", adjoint.atol))
    }
    count = adjoint.max_num_iters
    count = None if count is None else as_count(count, name, "adjoint.max_num_iters")
    return ImplicitAdjoint(tol["gtol"], tol["atol"], count)


Solve = Callable[[jax.Array], tuple[jax.Array, Any]]


def implicit_solve(
    apply: Callable[[jax.Array], jax.Array], y: jax.Array, forward: Solve, backward: Solve
) -> tuple[jax.Array, Any]:
    r"""`forward(y)` = `(x, aux)` with $x \approx A^{-1} y$, differentiated implicitly
    (`ImplicitAdjoint`) through `jax.lax.custom_linear_solve`.

    - `apply`: $v \mapsto A v$ for a Hermitian $A$ (its arrays, including those a closure
      holds, are what $A$'s derivative is taken w.r.t.).
    - `forward(rhs)`: the solve; it also solves for forward-mode tangents. What it holds
      besides $A$ (a start, a preconditioner, traced tolerances) must carry no derivative
      (see `constant`). `aux` carries none either.
    - `backward(rhs)`: the solve of the adjoint system (the same $A$), for reverse mode.

    A complex $A$ is solved through its real view $(\mathrm{Re}\,v, \mathrm{Im}\,v)$: a
    Hermitian $A$ is a real symmetric map there, so the adjoint solve is `backward` itself
    (JAX's transposition is the real transpose).
    """
    real, cplx = _real_view(y.dtype)

    def solver(run: Solve):
        def solve(_, rhs):
            x, aux = run(cplx(rhs))
            return real(x), aux

        return solve

    x, aux = lax.custom_linear_solve(
        lambda v: real(apply(cplx(v))),
        real(y),
        solver(forward),
        solver(backward),
        symmetric=True,
        has_aux=True,
    )
    return cplx(x), aux


def constant(f: Callable[[jax.Array], jax.Array], example: jax.Array) -> Callable:
    """`f` with no derivative w.r.t. the arrays it holds (a Module's leaves or a closure's
    traced values): `jax.closure_convert` lifts them out, `lax.stop_gradient` cuts them."""
    # (a fresh function: closure_convert caches on `f`, and a Module holding tracers does
    # not hash)
    converted, consts = jax.closure_convert(lambda v: f(v), example)
    consts = [lax.stop_gradient(c) for c in consts]
    return lambda v: converted(v, *consts)


def _real_view(dtype) -> tuple[Callable, Callable]:
    """The maps between `dtype` vectors and their real view: `(re, im)` pairs for a complex
    dtype, the vector itself for a real one."""
    if not jnp.issubdtype(dtype, jnp.complexfloating):
        return (lambda v: v), (lambda v: v)
    return (lambda v: (jnp.real(v), jnp.imag(v))), (lambda v: lax.complex(*v))
