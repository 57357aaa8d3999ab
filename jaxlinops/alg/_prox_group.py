r"""`GroupL1`: the mixed $\ell_{2,1}$ norm, a sum of Euclidean norms of groups of entries
(isotropic total variation on `FiniteDifference`'s output, joint sparsity across coils or
contrasts).
"""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from ._prox import abs_sq, as_inexact, as_real, check_nonnegative, sqrt_safe
from ._prox_base import AbstractProx


class GroupL1(AbstractProx):
    r"""$g(x) = \sum_p \lambda_p \|x_{:, p}\|_2$: the $\ell_{2,1}$ norm, with a group
    $x_{:, p}$ for each index $p$ of the axes other than `axes` (the group runs along
    `axes`). With `FiniteDifference`'s output ($D x$ stacked along axis 0) and
    `axes=0` (the default), $g(D x)$ is **isotropic** total variation:
    $\sum_p \lambda_p \big(\sum_d |(D_d x)_p|^2\big)^{1/2}$.

    $\mathrm{prox}_{t g}(v)_{:, p} = v_{:, p} \max(0, 1 - t \lambda_p / \|v_{:, p}\|)$,
    the group soft threshold (complex entries count by modulus). `conjugate_prox`:
    $g^*$ is the indicator of $\{\|u_{:, p}\| \le \lambda_p\}$, so its prox projects
    each group onto its ball, $u_{:, p} \min(1, \lambda_p / \|u_{:, p}\|)$ (sigpy's
    `thresh.l2_proj(lamda, u, axes)`).

    A group of one entry is the plain $\ell_1$ norm: `GroupL1(lamda, axes=())` is `L1`.
    """

    lamda: jax.Array
    axes: tuple[int, ...] = eqx.field(static=True)

    def __init__(self, lamda: ArrayLike, axes: int | tuple[int, ...] = 0):
        """**Arguments:**

        - `lamda`: $\\lambda \\ge 0$, a scalar, or weights that broadcast to the input
          with `axes` removed (one per group).
        - `axes`: the array axes along which a group runs (an int or a tuple; negative
          axes count from the end). Default 0: the leading axis, where
          `FiniteDifference` stacks its differences.
        """
        self.lamda = check_nonnegative(lamda, "`GroupL1(lamda=...)`")
        axes = (axes,) if isinstance(axes, int) else tuple(axes)
        if not all(isinstance(a, int) for a in axes) or len(set(axes)) != len(axes):
            raise TypeError(f"`GroupL1(axes=...)` expects distinct ints; got {axes!r}.")
        self.axes = axes

    def _norms(self, v: jax.Array) -> jax.Array:
        """$\\|v_{:, p}\\|$ per group, with the group axes kept (size 1)."""
        axes = self._normalized(v)
        return sqrt_safe(jnp.sum(abs_sq(v), axis=axes, keepdims=True))

    def _normalized(self, v: jax.Array) -> tuple[int, ...]:
        """`axes` as non-negative axis numbers of `v`, or a clear ValueError."""
        for a in self.axes:
            if not -v.ndim <= a < v.ndim:
                raise ValueError(
                    f"`GroupL1(axes={self.axes})` names axis {a}, but the input has "
                    f"{v.ndim} axes (shape {v.shape})."
                )
        return tuple(a % v.ndim for a in self.axes)

    def _weights(self, norms: jax.Array, v: jax.Array) -> jax.Array:
        """$\\lambda$ laid out like `norms` (the group axes of size 1)."""
        lam = as_real(self.lamda, v)
        if lam.ndim:
            axes = self._normalized(v)
            groups = tuple(n for i, n in enumerate(v.shape) if i not in axes)
            try:
                lam = jnp.expand_dims(jnp.broadcast_to(lam, groups), axes)
            except ValueError:
                raise ValueError(
                    f"`GroupL1(lamda=...)` has shape {lam.shape}, which does not broadcast "
                    f"to the groups' shape {groups} (the input {v.shape} without axes "
                    f"{axes})."
                ) from None
        return jnp.broadcast_to(lam, norms.shape)

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        v = as_inexact(v)
        norms = self._norms(v)
        threshold = as_real(step, v) * self._weights(norms, v)
        keep = norms > threshold
        scale = 1 - threshold / jnp.where(keep, norms, 1)
        return jnp.where(keep, scale.astype(v.dtype) * v, 0)

    def value(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        norms = self._norms(x)
        return jnp.sum(self._weights(norms, x) * norms)

    def conjugate_prox(self, v: jax.Array, sigma: jax.Array | float) -> jax.Array:
        v = as_inexact(v)
        norms = self._norms(v)
        lam = self._weights(norms, v)
        outside = norms > lam
        scale = lam / jnp.where(outside, norms, 1)
        return jnp.where(outside, scale.astype(v.dtype) * v, v)
