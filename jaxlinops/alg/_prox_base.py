r"""`AbstractProx`: a closed convex function $g$ that the proximal solvers (FISTA, ADMM,
PDHG) use through its proximal operator.

$$\mathrm{prox}_{t g}(v) = \mathrm{argmin}_z\; g(z) + \tfrac{1}{2t} \|z - v\|^2 ,$$

with $\|\cdot\|$ the Euclidean norm over every entry (real and imaginary parts of complex
entries alike). A prox is an equinox Module: its arrays (weights, bounds) are leaves, so a
solver that takes one stays jit-able and differentiable w.r.t. them, and its settings are
static.

`batched_prox` and `batched_value` apply a prox to a batch of independent systems (the
solvers' `batch_dims`): $g$ acts on each system's array alone, with one step and one value
per system.
"""

from __future__ import annotations

import abc
from collections.abc import Callable

import equinox as eqx
import jax
import jax.numpy as jnp


class AbstractProx(eqx.Module):
    r"""A closed convex function $g$: its value, and its proximal operator.

    A subclass implements `prox(v, step)` and `value(x)`. `conjugate_prox` follows by the
    Moreau identity, $\mathrm{prox}_{\sigma g^*}(v) = v - \sigma\,
    \mathrm{prox}_{g / \sigma}(v / \sigma)$ (what PDHG needs); a subclass may override it
    where a direct form is cheaper or more accurate.

    `step` is a real scalar > 0 (a Python float or a JAX scalar, traced or not) of any
    precision: a prox casts it to the precision of `v`, so that a float64 step works on
    complex64 data under strict dtype promotion.
    """

    @abc.abstractmethod
    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        r"""$\mathrm{prox}_{t g}(v)$ for the step $t$ = `step` > 0, shaped like `v`."""

    @abc.abstractmethod
    def value(self, x: jax.Array) -> jax.Array:
        r"""$g(x)$, a real scalar (0 or $+\infty$ for an indicator)."""

    def __call__(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        """`prox(v, step)`."""
        return self.prox(v, step)

    def conjugate_prox(self, v: jax.Array, sigma: jax.Array | float) -> jax.Array:
        r"""$\mathrm{prox}_{\sigma g^*}(v) = v - \sigma\, \mathrm{prox}_{g/\sigma}(v/\sigma)$."""
        s = jnp.asarray(sigma).astype(jnp.finfo(v.dtype).dtype)
        sv = s.astype(v.dtype)
        return v - sv * self.prox(v / sv, 1 / s)


def batched_prox(
    g: AbstractProx, v: jax.Array, step: jax.Array | float, axes: tuple[int, ...]
) -> jax.Array:
    r"""$\mathrm{prox}_{t_b g}(v_b)$ for each system $b$: `v`'s `axes` (increasing) index
    independent systems, and `g` sees one system's array (`v` without those axes; its
    weights, blocks and transforms are laid out for that array). `step` is a scalar or an
    array of the batch shape (`v`'s shape on `axes`), one step per system."""
    if not axes:
        return g.prox(v, step)
    step = jnp.broadcast_to(jnp.asarray(step), tuple(v.shape[a] for a in axes))
    front = range(len(axes))
    out = _vmapped(g.prox, len(axes))(jnp.moveaxis(v, axes, front), step)
    return jnp.moveaxis(out, front, axes)


def batched_value(g: AbstractProx, x: jax.Array, axes: tuple[int, ...]) -> jax.Array:
    """$g(x_b)$ for each system $b$ (`x`'s `axes`, increasing, index the systems): an
    array of the batch shape; a scalar without `axes`."""
    if not axes:
        return g.value(x)
    return _vmapped(g.value, len(axes))(jnp.moveaxis(x, axes, range(len(axes))))


def _vmapped(fn: Callable, depth: int) -> Callable:
    """`fn` mapped over the leading `depth` axes of all its arguments."""
    for _ in range(depth):
        fn = jax.vmap(fn)
    return fn
