r"""Derivatives of what the power method and the SVD return, without differentiating their
loops.

An eigenvalue is differentiated at its eigenvector (Hellmann–Feynman): for $A v = \mu v$,
$d\mu = v^H (dA)\, v / v^H v$ when $A$ is normal (Hermitian, e.g. $A^H A$), so
$d|\mu| = \mathrm{Re}(\bar\mu\, v^H (dA)\, v) / (|\mu|\, v^H v)$: one application of the
derivative of $A$, and none of the iterations. A singular value $\sigma = \|A v\|$ at its
right singular vector likewise has $d\sigma = \mathrm{Re}\, u^H (dA)\, v$.

Eigenvectors and singular vectors have no derivative here: theirs is ill-posed in general
(a vector is determined up to a phase, and its derivative needs the whole spectrum). Their
derivative is NaN, so that a loss using them gets a NaN gradient, never a plausible one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import equinox as eqx
import jax
import jax.numpy as jnp
from jax import lax

from ._common import inner


def frozen(tree):
    """`tree` (an operator) with no derivative w.r.t. its arrays, so that a `while_loop`
    over it can be differentiated around."""
    return jax.tree.map(lambda leaf: lax.stop_gradient(leaf) if eqx.is_array(leaf) else leaf, tree)


@partial(jax.custom_jvp, nondiff_argnums=(0, 1))
def eigenvalue_magnitude(apply: Callable, axes: tuple, lam: jax.Array, v: jax.Array, *consts):
    r"""`lam` ($|\mu|$, computed by the power method for the eigenvector `v` of
    $u \mapsto$ `apply(u, *consts)`), with the Hellmann–Feynman derivative w.r.t. `consts`
    (exact for a normal operator at convergence)."""
    del apply, axes, v, consts
    return lam


@eigenvalue_magnitude.defjvp
def _eigenvalue_magnitude_jvp(apply, axes, primals, tangents):
    lam, v, *consts = primals
    _, _, *dconsts = tangents
    Av, dAv = jax.jvp(lambda *c: apply(v, *c), tuple(consts), tuple(dconsts))
    vv = jnp.real(inner(v, v, axes))
    mu = inner(v, Av, axes) / vv.astype(v.dtype)
    dmu = inner(v, dAv, axes) / vv.astype(v.dtype)
    dlam = jnp.real(jnp.conj(mu) * dmu) / jnp.where(mu == 0, 1, jnp.abs(mu))
    return lam, jnp.squeeze(dlam, axes).astype(lam.dtype)


@jax.custom_jvp
def without_derivative(x: jax.Array, *consts) -> jax.Array:
    """`x`, whose derivative w.r.t. `consts` (the operator's arrays) is NaN."""
    del consts
    return x


@without_derivative.defjvp
def _without_derivative_jvp(primals, tangents):
    x, *consts = primals
    _, *dconsts = tangents
    # NaN times a linear function of the tangents: a NaN derivative wherever x is used (a
    # constant NaN would be dropped by reverse mode as independent of the inputs)
    probe = sum(
        (jnp.sum(jnp.real(t)) for c, t in zip(consts, dconsts) if eqx.is_inexact_array(c)),
        start=jnp.zeros((), jnp.real(x).dtype),
    )
    return x, jnp.full_like(x, jnp.nan) * probe.astype(x.dtype)
