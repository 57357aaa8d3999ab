"""Checks for operators, usable without pytest: dot tests, normals, linear transposes.

Use them to test your own operators:

```python
x = jax.random.normal(jax.random.key(0), (5,), jnp.complex128)
y = jax.random.normal(jax.random.key(1), (3,), jnp.complex128)
jl.testing.assert_adjoint(A, x, y)
```
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from ._arrays import promote
from ._core import NamedLinop

__all__ = [
    "assert_adjoint",
    "assert_linear_transpose",
    "assert_normal",
    "default_rtol",
    "inner",
]


def default_rtol(dtype: DTypeLike) -> float:
    """A relative tolerance for results computed in `dtype` (single vs double precision)."""
    return 1e-4 if jnp.finfo(dtype).bits <= 32 or np.dtype(dtype) == np.complex64 else 1e-10


def inner(a: ArrayLike, b: ArrayLike) -> jax.Array:
    r"""$\langle a, b \rangle = \sum \bar a \, b$ over all entries."""
    a, b = promote(a, b)
    return jnp.sum(jnp.conj(a) * b)


def _check_close(what: str, got, want, rtol: float, atol: float) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shapes differ, {got.shape} vs {want.shape}.")
    err = float(np.max(np.abs(got - want), initial=0.0))
    scale = float(np.max(np.abs(want), initial=0.0))
    if not err <= atol + rtol * scale:
        raise AssertionError(
            f"{what}: max abs difference {err:.3e} exceeds atol {atol:.1e} + rtol {rtol:.1e} "
            f"x max |reference| {scale:.3e}."
        )


def _tol(rtol, *arrays) -> float:
    if rtol is not None:
        return rtol
    return max(default_rtol(jnp.asarray(a).dtype) for a in arrays)


def assert_adjoint(
    A: NamedLinop, x: ArrayLike, y: ArrayLike, rtol: float | None = None, atol: float = 0.0
) -> None:
    r"""Dot test: $\langle y, A x \rangle = \langle A^H y, x \rangle$.

    `x` is laid out by `A.ishape`, `y` by `A.oshape`. The tolerance is relative to
    $\|y\|\,\|A x\| + \|A^H y\|\,\|x\|$, the scale of each inner product's terms.
    """
    Ax, AHy = A(x), A.H(y)
    lhs, rhs = inner(y, Ax), inner(AHy, x)
    norms = lambda a: float(jnp.linalg.norm(jnp.ravel(a)))  # noqa: E731
    scale = norms(y) * norms(Ax) + norms(AHy) * norms(x)
    tol = atol + _tol(rtol, x, y, Ax) * scale
    if not abs(complex(lhs) - complex(rhs)) <= tol:
        raise AssertionError(
            f"Adjoint test failed for {A.name}: <y, A x> = {complex(lhs):.10g} but "
            f"<A^H y, x> = {complex(rhs):.10g} (difference {abs(complex(lhs - rhs)):.3e}, "
            f"allowed {tol:.3e})."
        )


def assert_normal(
    A: NamedLinop, x: ArrayLike, rtol: float | None = None, atol: float = 0.0
) -> None:
    r"""$A^N x = A^H (A x)$, elementwise."""
    want = A.H(A(x))
    _check_close(f"Normal test for {A.name}", A.N(x), want, _tol(rtol, x, want), atol)


def assert_linear_transpose(
    A: NamedLinop, x: ArrayLike, y: ArrayLike, rtol: float | None = None, atol: float = 0.0
) -> None:
    r"""`A.H(y)` equals $\overline{A^T \bar y}$ with $A^T$ from `jax.linear_transpose`.

    This catches a hand-written adjoint that forgets a complex conjugate, which the dot
    test with real inputs cannot see.
    """
    x = jnp.asarray(x)
    want = jnp.conj(_transpose(A, x, jnp.conj(jnp.asarray(y)).astype(A(x).dtype)))
    got = A.H(y)
    if not jnp.iscomplexobj(x):  # the transpose of a real-to-complex map is Re(A^H y)
        got = jnp.real(got)
    _check_close(f"Linear-transpose test for {A.name}", got, want, _tol(rtol, x, y), atol)


@jax.jit
def _transpose(A: NamedLinop, x: jax.Array, v: jax.Array) -> jax.Array:
    """$A^T v$ by `jax.linear_transpose` (`x` gives the input's shape and dtype), compiled
    as one program."""
    (out,) = jax.linear_transpose(A, x)(v)
    return out
