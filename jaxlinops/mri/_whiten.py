r"""Noise prewhitening of multi-coil data.

Receiver noise is correlated across coils, with covariance $\Sigma$ estimated from a
noise-only scan. Multiplying every coil vector of the data by $W = L^{-1}$
($\Sigma = L L^H$, Cholesky) makes the noise white: $\mathrm{Cov}(W n) = I$, so a
least-squares reconstruction of whitened data is the maximum-likelihood one.

- [`noise_covariance`][]: $\Sigma$ from noise samples.
- [`whitening_matrix`][]: $W = L^{-1}$.
- [`noise_whitening`][]: $W$ as an operator along the coil dim.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.linalg import solve_triangular

from .._arrays import as_array, as_inexact, has_nonfinite
from .._core import NamedLinop
from .._dims import ELLIPSIS, DimsLike, as_dims, fmt, next_unused
from ..linops import Dense, Identity


def noise_covariance(noise, *, coil_axis: int = 0) -> jax.Array:
    r"""The noise covariance across coils, $\Sigma = \frac{1}{M} n n^H$.

    $n$ is `noise` as a `[C, M]` matrix: the coil axis first, every other axis flattened
    into the `M` samples (the noise is taken to have zero mean, as receiver noise does,
    so no mean is subtracted, and $1/M$ is the maximum-likelihood estimate; some
    pipelines divide by $M - 1$).

    **Arguments:**

    - `noise`: noise-only samples, real or complex, with a coil axis.
    - `coil_axis`: the axis of `noise` that indexes the coils.

    **Returns:** $\Sigma$, a Hermitian `[C, C]` array in the inexact dtype of `noise`.
    """
    n = _samples("noise_covariance", noise, coil_axis)
    return _covariance(n)


def whitening_matrix(noise, *, coil_axis: int = 0) -> jax.Array:
    r"""The prewhitening matrix $W = L^{-1}$, $\Sigma = L L^H$ the Cholesky factorisation
    of [`noise_covariance`][].

    $W$ is lower triangular and $W \Sigma W^H = I$: whitened noise $W n$ has unit
    variance in every coil ($E|(W n)_c|^2 = 1$, so $1/2$ per real and imaginary part of
    complex noise) and no correlation. ismrmrd-python-tools' `calculate_prewhitening`
    differs by a factor $\sqrt{2 (M - 1) / M}$ (unit variance per real and imaginary
    part, $1/(M-1)$ in $\Sigma$) times its bandwidth `scale_factor`; multiply $W$ by such
    factors where they are wanted.

    **Arguments:**

    - `noise`: noise-only samples with a coil axis, at least as many samples per coil
      (`M`) as coils (`C`): fewer make $\Sigma$ singular.
    - `coil_axis`: the axis of `noise` that indexes the coils.

    **Returns:** $W$, a `[C, C]` array in the inexact dtype of `noise`.

    **Errors:** fewer samples than coils is a ValueError (shapes are known even under
    `jax.jit`). A covariance that is not positive definite for another reason (a dead
    coil, linearly dependent coils) is a ValueError for concrete `noise`; under `jax.jit`
    the factorisation gives NaN, which then fills $W$ and everything it is applied to.
    """
    return _whitening("whitening_matrix", noise, coil_axis)


def noise_whitening(
    noise, *, coil_dim: str = "C", ioshape: DimsLike = None, coil_axis: int = 0
) -> NamedLinop:
    r"""The operator $y_{c, \dots} = \sum_{c'} W_{c c'} x_{c', \dots}$: [`whitening_matrix`][]
    applied along the coil dim, the other dims kept (`ioshape -> ioshape`).

    Built as `Identity(C1 -> C) @ Dense(W, (C1, C), ioshape, C -> C1)`: a matrix product
    onto a fresh dim `C1` (a weight cannot name `C` twice) renamed back to `C`. Adjoint
    ($W^H$), normal ($W^H W = \Sigma^{-1}$), `jax.jit`, `jax.vmap`, gradients and splitting
    along the non-coil dims come with those operators; a split along the coil dim is a
    ValueError (every output coil reads every input coil).

    **Arguments:**

    - `noise`: noise-only samples with a coil axis (see [`whitening_matrix`][]).
    - `coil_dim`: the coil dim of the operator's input and output.
    - `ioshape`: the dims of the data, containing `coil_dim` (default `(coil_dim, "...")`,
      e.g. data `[C, R, K]`).
    - `coil_axis`: the axis of `noise` that indexes the coils.
    """
    ioshape = as_dims(ioshape, (coil_dim, ELLIPSIS))
    if coil_dim not in ioshape:
        raise ValueError(
            f"noise_whitening: `coil_dim` {coil_dim!r} must be one of the dims of "
            f"`ioshape`; got ioshape {fmt(ioshape)}."
        )
    W = _whitening("noise_whitening", noise, coil_axis)
    fresh = next_unused(coil_dim, ioshape)
    mid = tuple(fresh if d == coil_dim else d for d in ioshape)
    return Identity(mid, ioshape) @ Dense(W, (fresh, coil_dim), ioshape, mid)


def _whitening(name: str, noise, coil_axis: int) -> jax.Array:
    """[`whitening_matrix`][], errors naming `name`."""
    W = _inverse_cholesky(_covariance(_samples(name, noise, coil_axis)))
    if has_nonfinite(W):
        raise ValueError(
            f"{name}: the noise covariance of `noise` is not positive definite (a coil "
            f"without noise, or coils that are linear combinations of others), so it has "
            f"no Cholesky factor."
        )
    return W


def _samples(name: str, noise, coil_axis: int) -> jax.Array:
    """`noise` as an inexact `[C, M]` array (coils first), with at least `C` samples."""
    n = as_inexact(as_array(noise, f"`{name}(noise=...)`"))
    if not -n.ndim <= coil_axis < n.ndim:
        raise ValueError(
            f"{name}: `coil_axis` {coil_axis} is not an axis of `noise` (shape {tuple(n.shape)})."
        )
    n = jnp.moveaxis(n, coil_axis, 0).reshape((n.shape[coil_axis], -1))
    coils, samples = n.shape
    if samples < coils:
        raise ValueError(
            f"{name}: `noise` has {samples} samples per coil, fewer than its {coils} coils "
            f"(shape {tuple(jnp.shape(noise))}, coil_axis {coil_axis}): the noise covariance "
            f"would be singular. Use at least {coils} samples (many more for a good estimate)."
        )
    return n


@jax.jit
def _covariance(n: jax.Array) -> jax.Array:
    gram = jnp.matmul(n, jnp.conj(n).T, precision=lax.Precision.HIGHEST)
    return gram / n.shape[1]


@jax.jit
def _inverse_cholesky(sigma: jax.Array) -> jax.Array:
    L = jnp.linalg.cholesky(sigma)
    return solve_triangular(L, jnp.eye(sigma.shape[0], dtype=sigma.dtype), lower=True)
