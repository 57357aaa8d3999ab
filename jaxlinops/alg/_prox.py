r"""Proximal operators of norms and indicators: `L1` (optionally through an orthogonal
transform), `L2Ball`, `Box`, `NonNegative` and `NoOp`.

Each casts its parameters and the step to the precision of the input (strict dtype
promotion), is safe at zero (no NaN value or gradient), and works under `jax.jit`,
`jax.vmap` and `jax.grad`. The separable ones (`L1` without a transform, `Box`,
`NonNegative`, `NoOp`) also take an array of steps broadcastable to `v` (one step per
entry, as PDHG's diagonal preconditioning uses).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import Tracer
from jax.typing import ArrayLike

from .._core import NamedLinop
from ._prox_base import AbstractProx

# an indicator's value accepts points this far outside its set (relative to its size, in
# units of the dtype's eps): a projection is feasible only up to rounding
_SLACK = 16


def real_dtype(x: jax.Array) -> np.dtype:
    """The real dtype of `x`'s precision (float32 for complex64)."""
    return jnp.finfo(x.dtype).dtype


def as_real(a: ArrayLike, x: jax.Array) -> jax.Array:
    """`a` as a real array in `x`'s precision."""
    return jnp.asarray(a).astype(real_dtype(x))


def as_inexact(v: ArrayLike) -> jax.Array:
    """`v` as a JAX array of a floating-point dtype (integers become the default float)."""
    v = jnp.asarray(v)
    return v if jnp.issubdtype(v.dtype, jnp.inexact) else v.astype(float)


def abs_safe(v: jax.Array) -> jax.Array:
    """`|v|` (the modulus of complex entries) with a zero gradient, not NaN, at 0."""
    return sqrt_safe(abs_sq(v))


def abs_sq(v: jax.Array) -> jax.Array:
    """`|v|**2`, real, without a square root."""
    return jnp.real(v) ** 2 + jnp.imag(v) ** 2 if jnp.iscomplexobj(v) else v**2


def sqrt_safe(sq: jax.Array) -> jax.Array:
    """$\\sqrt{sq}$ for `sq` >= 0, with a zero gradient, not NaN, at 0."""
    nonzero = sq > 0
    return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1)), 0)


def broadcast_to(a: jax.Array, x: jax.Array, what: str) -> jax.Array:
    """`a` broadcast to `x`'s shape (rank promotion is explicit), or a clear ValueError."""
    try:
        return jnp.broadcast_to(a, x.shape)
    except ValueError:
        raise ValueError(
            f"{what} has shape {a.shape}, which does not broadcast to the input's shape {x.shape}."
        ) from None


def check_nonnegative(value: ArrayLike, what: str) -> jax.Array:
    """`value` as an array, checked >= 0 (and not NaN) when it is concrete."""
    a = jnp.asarray(value)
    if not jnp.issubdtype(a.dtype, jnp.floating) and not jnp.issubdtype(a.dtype, jnp.integer):
        raise TypeError(f"{what} expects real numbers; got dtype {a.dtype}.")
    if not isinstance(a, Tracer) and not bool(np.all(np.asarray(a) >= 0)):
        raise ValueError(f"{what} expects values >= 0; got {np.asarray(a)!r:.80}.")
    return a


def soft_threshold(v: jax.Array, threshold: jax.Array) -> jax.Array:
    r"""$v \max(0, 1 - \tau / |v|)$ (complex: shrink the modulus, keep the phase), 0 and
    with a zero gradient wherever $|v| \le \tau$ (also at $v = 0$)."""
    mag = abs_safe(v)
    keep = mag > threshold
    scale = 1 - threshold / jnp.where(keep, mag, 1)
    return jnp.where(keep, scale.astype(v.dtype) * v, 0)


def _indicator(feasible: jax.Array, x: jax.Array) -> jax.Array:
    """0 where `feasible`, else $+\\infty$, in `x`'s real precision."""
    return jnp.where(feasible, 0, jnp.inf).astype(real_dtype(x))


class L1(AbstractProx):
    r"""$g(x) = \sum_i \lambda_i |(T x)_i|$: the (weighted) $\ell_1$ norm, of $x$ or of an
    orthogonal transform $T x$ (e.g. wavelet coefficients).

    Without $T$: $\mathrm{prox}_{t g}(v)_i = v_i \max(0, 1 - t \lambda_i / |v_i|)$, the
    soft threshold; for complex entries it shrinks the modulus and keeps the phase.

    With $T$: $\mathrm{prox}_{t g}(v) = v + T^H(\mathrm{soft}_{t\lambda}(T v) - T v)$,
    which equals $T^H \mathrm{soft}_{t\lambda}(T v)$ for a unitary $T$. **Exact only when
    $T T^H = I$** (orthogonal/unitary $T$: an orthonormal wavelet, a unitary FFT). For a
    redundant tight frame ($T^H T = I$ only, e.g. an undecimated wavelet) it is the usual
    approximation, not the prox; $T$ is not checked.

    `conjugate_prox` (no transform): $g^*$ is the indicator of
    $\{|u_i| \le \lambda_i\}$, so its prox clips magnitudes: $u \min(1, \lambda / |u|)$.
    """

    lamda: jax.Array
    transform: NamedLinop | None

    def __init__(self, lamda: ArrayLike, transform: NamedLinop | None = None):
        """**Arguments:**

        - `lamda`: $\\lambda \\ge 0$, a scalar or an array of weights that broadcasts to
          `v` (to $T v$ with a transform).
        - `transform`: an orthogonal NamedLinop $T$ ($T T^H = I$), or None.
        """
        self.lamda = check_nonnegative(lamda, "`L1(lamda=...)`")
        if transform is not None and not isinstance(transform, NamedLinop):
            raise TypeError(
                f"`L1(transform=...)` expects a NamedLinop (it applies T and T.H); got "
                f"{type(transform).__name__}."
            )
        self.transform = transform

    def _threshold(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        lam = broadcast_to(as_real(self.lamda, v), v, "`L1(lamda=...)`")
        return as_real(step, v) * lam

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        v = as_inexact(v)
        if self.transform is None:
            return soft_threshold(v, self._threshold(v, step))
        T = self.transform
        c = T(v).astype(v.dtype)
        return v + T.H(soft_threshold(c, self._threshold(c, step)) - c).astype(v.dtype)

    def value(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        c = x if self.transform is None else self.transform(x)
        return jnp.sum(self._threshold(c, 1.0) * abs_safe(c))

    def conjugate_prox(self, v: jax.Array, sigma: jax.Array | float) -> jax.Array:
        if self.transform is not None:
            return super().conjugate_prox(v, sigma)
        v = as_inexact(v)
        lam = self._threshold(v, 1.0)
        mag = abs_safe(v)
        outside = mag > lam
        scale = lam / jnp.where(outside, mag, 1)
        return jnp.where(outside, scale.astype(v.dtype) * v, v)


class L2Ball(AbstractProx):
    r"""$g(x) = \iota\{\|x - c\| \le r\}$: 0 inside the Euclidean ball of radius $r$
    around $c$ (over every entry), $+\infty$ outside.

    $\mathrm{prox}_{t g}(v) = c + (v - c) \min(1, r / \|v - c\|)$, the projection (any
    step). `value` counts points within rounding of the ball (a relative $16\epsilon$) as
    inside, so that a projection's value is 0. Its conjugate is $g^*(u) = r\|u\| +
    \mathrm{Re}\langle c, u\rangle$.
    """

    radius: jax.Array
    center: jax.Array | None

    def __init__(self, radius: ArrayLike, center: ArrayLike | None = None):
        """**Arguments:** `radius`: $r \\ge 0$, a scalar; `center`: $c$, broadcastable to
        the input (default 0)."""
        self.radius = check_nonnegative(radius, "`L2Ball(radius=...)`")
        if self.radius.ndim != 0:
            raise ValueError(
                f"`L2Ball(radius=...)` expects a scalar; got shape {self.radius.shape}."
            )
        self.center = None if center is None else jnp.asarray(center)

    def _offset(self, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """`(c, x - c)`, `c` broadcast to `x` in its dtype."""
        if self.center is None:
            return jnp.zeros_like(x), x
        c = broadcast_to(self.center.astype(x.dtype), x, "`L2Ball(center=...)`")
        return c, x - c

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        v = as_inexact(v)
        c, d = self._offset(v)
        r = as_real(self.radius, v)
        sq = jnp.sum(abs_sq(d))
        outside = sq > r**2
        scale = r / jnp.sqrt(jnp.where(outside, sq, 1))
        return jnp.where(outside, c + scale.astype(v.dtype) * d, v)

    def value(self, x: jax.Array) -> jax.Array:
        x = as_inexact(x)
        _, d = self._offset(x)
        r = as_real(self.radius, x)
        slack = 1 + _SLACK * jnp.finfo(x.dtype).eps
        return _indicator(jnp.sum(abs_sq(d)) <= (r * slack) ** 2, x)


def _box(v: jax.Array, lower: jax.Array | None, upper: jax.Array | None) -> jax.Array:
    """`Re v` clipped to `[lower, upper]`, in `v`'s dtype (imaginary part 0)."""
    re = jnp.real(v)
    lo = None if lower is None else broadcast_to(as_real(lower, v), re, "`Box(lower=...)`")
    hi = None if upper is None else broadcast_to(as_real(upper, v), re, "`Box(upper=...)`")
    return jnp.clip(re, lo, hi).astype(v.dtype)


def _in_box(x: jax.Array, lower: jax.Array | None, upper: jax.Array | None) -> jax.Array:
    ok = jnp.all(jnp.imag(x) == 0) if jnp.iscomplexobj(x) else jnp.bool_(True)
    re = jnp.real(x)
    if lower is not None:
        ok = ok & jnp.all(re >= broadcast_to(as_real(lower, x), re, "`Box(lower=...)`"))
    if upper is not None:
        ok = ok & jnp.all(re <= broadcast_to(as_real(upper, x), re, "`Box(upper=...)`"))
    return _indicator(ok, x)


class Box(AbstractProx):
    r"""$g(x) = \iota\{x \text{ real},\ l \le x \le u\}$: the indicator of a box.

    $\mathrm{prox}_{t g}(v) = \mathrm{clip}(\mathrm{Re}\, v, l, u)$ (any step). **Complex
    input:** the set holds real vectors only, so the projection clips the real part and
    sets the imaginary part to 0 (the Euclidean projection in $\mathbb{C}^n \cong
    \mathbb{R}^{2n}$); `value` is $+\infty$ for a nonzero imaginary part. (sigpy's and
    pyproximal's box clip complex numbers with `clip`, an ordering that is not a
    projection; to constrain the real part alone, apply `Box` to `x.real`.)
    """

    lower: jax.Array | None
    upper: jax.Array | None

    def __init__(self, lower: ArrayLike | None = None, upper: ArrayLike | None = None):
        """**Arguments:** `lower`, `upper`: $l$ and $u$, real scalars or arrays that
        broadcast to the input; None (default) is unbounded."""
        self.lower = None if lower is None else jnp.asarray(lower)
        self.upper = None if upper is None else jnp.asarray(upper)
        for name, bound in (("lower", self.lower), ("upper", self.upper)):
            if bound is not None and jnp.iscomplexobj(bound):
                raise TypeError(f"`Box({name}=...)` expects real bounds; got dtype {bound.dtype}.")
        concrete = not isinstance(self.lower, Tracer) and not isinstance(self.upper, Tracer)
        if self.lower is not None and self.upper is not None and concrete:
            if not bool(np.all(np.asarray(self.lower) <= np.asarray(self.upper))):
                raise ValueError(
                    f"`Box(lower=..., upper=...)` needs lower <= upper; got {self.lower!r:.60} "
                    f"and {self.upper!r:.60}."
                )

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        return _box(as_inexact(v), self.lower, self.upper)

    def value(self, x: jax.Array) -> jax.Array:
        return _in_box(as_inexact(x), self.lower, self.upper)


class NonNegative(AbstractProx):
    r"""$g(x) = \iota\{x \text{ real},\ x \ge 0\}$: `Box(0, None)`.

    $\mathrm{prox}_{t g}(v) = \max(\mathrm{Re}\, v, 0)$, imaginary part set to 0 (see
    [`Box`][] for complex input).
    """

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        return _box(as_inexact(v), jnp.zeros(()), None)

    def value(self, x: jax.Array) -> jax.Array:
        return _in_box(as_inexact(x), jnp.zeros(()), None)


class NoOp(AbstractProx):
    r"""$g(x) = 0$: $\mathrm{prox}_{t g}(v) = v$ (FISTA without a regulariser is then
    Nesterov's accelerated gradient descent on the least-squares term)."""

    def prox(self, v: jax.Array, step: jax.Array | float) -> jax.Array:
        return as_inexact(v)

    def value(self, x: jax.Array) -> jax.Array:
        return jnp.zeros((), real_dtype(as_inexact(x)))
