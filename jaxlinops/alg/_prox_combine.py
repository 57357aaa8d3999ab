r"""Combinations of proxes that keep a closed-form prox: `Scaled` ($a g$) and
`SeparableSum` ($\sum_i g_i(x_i)$ over disjoint parts of $x$).

A sum $g_1(x) + g_2(x)$ of functions of the *same* variables has no closed-form prox in
general ($\mathrm{prox}_{g_1 + g_2} \ne \mathrm{prox}_{g_1} \circ \mathrm{prox}_{g_2}$):
split it with ADMM or PDHG instead (one prox per term).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from ._prox import as_real, check_nonnegative
from ._prox_base import AbstractProx


class Scaled(AbstractProx):
    r"""$h(x) = a\, g(x)$ for a scale $a \ge 0$:
    $\mathrm{prox}_{t h}(v) = \mathrm{prox}_{(a t) g}(v)$."""

    g: AbstractProx
    scale: jax.Array

    def __init__(self, prox: AbstractProx, scale: ArrayLike):
        """**Arguments:** `prox`: $g$; `scale`: $a \\ge 0$, a real scalar."""
        if not isinstance(prox, AbstractProx):
            raise TypeError(
                f"`Scaled(prox=...)` expects an AbstractProx; got {type(prox).__name__}."
            )
        self.g = prox
        self.scale = check_nonnegative(scale, "`Scaled(scale=...)`")
        if self.scale.ndim != 0:
            raise ValueError(f"`Scaled(scale=...)` expects a scalar; got shape {self.scale.shape}.")

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        v = jnp.asarray(v)
        return self.g.prox(v, as_real(self.scale, v) * as_real(step, v))

    def value(self, x: jax.Array) -> jax.Array:
        x = jnp.asarray(x)
        value = self.g.value(x)
        # a * inf stays inf for a > 0; an indicator scaled by 0 is still an indicator
        return jnp.where(jnp.isinf(value), value, as_real(self.scale, value) * value)


class SeparableSum(AbstractProx):
    r"""$g(x) = \sum_i g_i(x_i)$ for disjoint parts $x_i$ of $x$: the prox acts part by
    part, $\mathrm{prox}_{t g}(v)_i = \mathrm{prox}_{t g_i}(v_i)$ (exact: the parts do not
    interact).

    The parts are either the entries of a tuple (`axis=None`: `v` is a tuple or list of
    arrays, one per prox, e.g. the dual variables of a `Stack` of operators) or slices of
    one array along `axis`: index `i` (the axis dropped) with `sizes=None`, else
    consecutive slices of `sizes[i]` entries (the axis kept, as `jnp.concatenate` makes).
    """

    proxes: tuple[AbstractProx, ...]
    axis: int | None = eqx.field(static=True)
    sizes: tuple[int, ...] | None = eqx.field(static=True)

    def __init__(
        self,
        proxes: Sequence[AbstractProx],
        axis: int | None = None,
        sizes: Sequence[int] | None = None,
    ):
        """**Arguments:** `proxes`: the $g_i$; `axis`: None (tuple input) or the axis that
        the parts lie along; `sizes`: with `axis`, the parts' lengths (default 1 each)."""
        self.proxes = tuple(proxes)
        if not self.proxes or not all(isinstance(p, AbstractProx) for p in self.proxes):
            raise TypeError(
                f"`SeparableSum(proxes=...)` expects a non-empty sequence of AbstractProx; "
                f"got {proxes!r:.80}."
            )
        if sizes is not None and axis is None:
            raise ValueError("`SeparableSum(sizes=...)` needs an `axis` to split along.")
        if sizes is not None and len(sizes) != len(self.proxes):
            raise ValueError(f"`SeparableSum`: {len(self.proxes)} proxes but {len(sizes)} `sizes`.")
        self.axis = None if axis is None else int(axis)
        self.sizes = None if sizes is None else tuple(int(s) for s in sizes)

    def _parts(self, v: Any) -> list[jax.Array]:
        n = len(self.proxes)
        if self.axis is None:
            if not isinstance(v, (tuple, list)) or len(v) != n:
                raise TypeError(
                    f"`SeparableSum` (no `axis`) expects a tuple of {n} arrays; got "
                    f"{type(v).__name__} of length {len(v) if isinstance(v, (tuple, list)) else 1}."
                )
            return [jnp.asarray(p) for p in v]
        v = jnp.asarray(v)
        length = n if self.sizes is None else sum(self.sizes)
        if v.shape[self.axis] != length:
            raise ValueError(
                f"`SeparableSum(axis={self.axis})` expects {length} entries along the axis; "
                f"got shape {v.shape}."
            )
        if self.sizes is None:
            return [jnp.take(v, i, self.axis) for i in range(n)]
        return jnp.split(v, np.cumsum(self.sizes)[:-1].tolist(), self.axis)

    def _join(self, parts: list[jax.Array]) -> Any:
        if self.axis is None:
            return tuple(parts)
        if self.sizes is None:
            return jnp.stack(parts, self.axis)
        return jnp.concatenate(parts, self.axis)

    def prox(self, v: Any, step: jax.Array | float) -> Any:
        parts = self._parts(v)
        return self._join([g.prox(p, step) for g, p in zip(self.proxes, parts)])

    def value(self, x: Any) -> jax.Array:
        values = [g.value(p) for g, p in zip(self.proxes, self._parts(x))]
        dtype = np.result_type(*(v.dtype for v in values))
        return sum((v.astype(dtype) for v in values), jnp.zeros((), dtype))

    def conjugate_prox(self, v: Any, sigma: jax.Array | float) -> Any:
        r"""Part by part: the conjugate of a separable sum is the sum of the conjugates."""
        parts = self._parts(v)
        return self._join([g.conjugate_prox(p, sigma) for g, p in zip(self.proxes, parts)])
