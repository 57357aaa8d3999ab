"""Checks for operators, usable without pytest: dot tests, normals, linear transposes.

Use them to test your own operators:

```python
x = jax.random.normal(jax.random.key(0), (5,), jnp.complex128)
y = jax.random.normal(jax.random.key(1), (3,), jnp.complex128)
jl.testing.assert_adjoint(A, x, y)
```

or subclass `BaseNamedLinopTests` (torchlinops' pytest suite for an operator).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike, DTypeLike

from ._arrays import promote
from ._core import Coupling, NamedLinop

__all__ = [
    "BaseNamedLinopTests",
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


def _host_inner(a: np.ndarray, b: np.ndarray) -> complex:
    """`inner` in numpy, as the checks below compute it: results come to the host to be
    compared anyway, and a JAX reduction would compile a program per shape and dtype."""
    return complex(np.sum(np.conj(a) * b))


def _norm(a: np.ndarray) -> float:
    return float(np.linalg.norm(a.ravel()))


def _check_close(what: str, got, want, rtol: float, atol: float) -> None:
    """Raise unless `got` is close to `want`. A size-1 axis of either matches any size of
    the other (a broadcast dim, as `SumReduce(...).H` returns without lengths, compared as
    torchlinops' `torch.isclose` does); the number of axes must agree."""
    got, want = np.asarray(got), np.asarray(want)
    sizes = zip(got.shape, want.shape)
    if got.ndim != want.ndim or any(a != b and 1 not in (a, b) for a, b in sizes):
        raise AssertionError(f"{what}: shapes differ, {got.shape} vs {want.shape}.")
    shape = np.broadcast_shapes(got.shape, want.shape)
    got, want = np.broadcast_to(got, shape), np.broadcast_to(want, shape)
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
    return max(default_rtol(jnp.result_type(a)) for a in arrays)


def assert_adjoint(
    A: NamedLinop, x: ArrayLike, y: ArrayLike, rtol: float | None = None, atol: float = 0.0
) -> None:
    r"""Dot test: $\langle y, A x \rangle = \langle A^H y, x \rangle$.

    `x` is laid out by `A.ishape`, `y` by `A.oshape`. The tolerance is relative to
    $\|y\|\,\|A x\| + \|A^H y\|\,\|x\|$, the scale of each inner product's terms.
    """
    Ax, AHy = A(x), A.H(y)
    x, y, Ax, AHy = (np.asarray(a) for a in (x, y, Ax, AHy))
    lhs, rhs = _host_inner(y, Ax), _host_inner(AHy, x)
    scale = _norm(y) * _norm(Ax) + _norm(AHy) * _norm(x)
    tol = atol + _tol(rtol, x, y, Ax) * scale
    if not abs(lhs - rhs) <= tol:
        raise AssertionError(
            f"Adjoint test failed for {A.name}: <y, A x> = {lhs:.10g} but "
            f"<A^H y, x> = {rhs:.10g} (difference {abs(lhs - rhs):.3e}, allowed {tol:.3e})."
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
    want = _conj_transpose(A, x, y)
    got = np.asarray(A.H(y))
    if not np.iscomplexobj(x):  # the transpose of a real-to-complex map is Re(A^H y)
        got = np.real(got)
    _check_close(f"Linear-transpose test for {A.name}", got, want, _tol(rtol, x, y), atol)


@jax.jit
def _conj_transpose(A: NamedLinop, x: jax.Array, y: jax.Array) -> jax.Array:
    r"""$\overline{A^T \bar y}$ by `jax.linear_transpose` (`x` gives the input's shape and
    dtype), compiled as one program."""
    v = jnp.conj(y).astype(A(x).dtype)  # A(x) leaves only its dtype: XLA drops it
    (out,) = jax.linear_transpose(A, x)(v)
    return jnp.conj(out)


class BaseNamedLinopTests:
    """The checks every operator should pass, as a pytest test class (torchlinops'
    `testing.BaseNamedLinopTests`):

    ```python
    class TestMyOp(jl.testing.BaseNamedLinopTests):
        @pytest.fixture
        def linop_input_output(self):
            return A, x, y  # the operator, an input (A.ishape), an output (A.oshape)
    ```

    `equality_check = "exact"` compares with [`default_rtol`][] of the data's dtype
    (XLA's results are not bitwise reproducible); `"approx"` uses `isclose_kwargs`
    (`rtol`, `atol`). Inputs cannot be mutated (JAX arrays are immutable) and gradients
    are checked by `test_linear_transpose` (`jax.linear_transpose`), which stand in for
    torchlinops' `test_input_mutation` and `test_backprop`.
    """

    equality_check: str = "exact"
    isclose_kwargs: dict = {}  # noqa: RUF012 - torchlinops' class attribute, read only

    def _tolerances(self) -> dict:
        if self.equality_check == "exact":
            return {}
        if self.equality_check == "approx":
            return {k: v for k, v in self.isclose_kwargs.items() if k in ("rtol", "atol")}
        raise ValueError(
            f"`BaseNamedLinopTests.equality_check` must be 'exact' or 'approx'; got "
            f"{self.equality_check!r}."
        )

    def test_adjoint(self, linop_input_output):
        A, x, y = linop_input_output
        assert_adjoint(A, x, y, **self._tolerances())
        assert A.H.ishape == A.oshape and A.H.oshape == A.ishape

    def test_normal(self, linop_input_output):
        A, x, _ = linop_input_output
        assert_normal(A, x, **self._tolerances())

    def test_adjoint_level2(self, linop_input_output):
        A, x, y = linop_input_output
        assert_adjoint(A.H, y, x, **self._tolerances())
        assert_normal(A.H, y, **self._tolerances())

    def test_normal_level2(self, linop_input_output):
        A, x, _ = linop_input_output
        assert_adjoint(A.N, x, x, **self._tolerances())
        assert_normal(A.N, x, **self._tolerances())

    def test_linear_transpose(self, linop_input_output):
        A, x, y = linop_input_output
        assert_linear_transpose(A, x, y, **self._tolerances())

    def test_split(self, linop_input_output):
        """A tile along each dim is an operator, or a ValueError for a dim the operator
        mixes or resizes (torchlinops' rule); along a dim it declares uncoupled
        (`Coupling.NONE`), the tile must exist."""
        A, _, _ = linop_input_output
        for dim in set(A.ishape + A.oshape) - {"..."}:
            try:
                tile = A.split({dim: slice(0, 1)})
            except ValueError:
                assert A.coupling(dim) != Coupling.NONE, f"{A.name} declares {dim!r} uncoupled"
                continue
            assert isinstance(tile, NamedLinop)

    def test_size(self, linop_input_output):
        A, _, _ = linop_input_output
        for dim in A.dims:
            size = A.size(dim)
            assert size is None or isinstance(size, int)

    def test_adj_fn(self, linop_input_output):
        A, _, y = linop_input_output
        _check_close("adj_fn", A.adj_fn(A, y), A.H(y), **self._closeness(y))

    def test_normal_fn(self, linop_input_output):
        A, x, _ = linop_input_output
        _check_close("normal_fn", A.normal_fn(A, x), A.N(x), **self._closeness(x))

    def _closeness(self, x: ArrayLike) -> dict:
        tol = self._tolerances()
        return {"rtol": _tol(tol.get("rtol"), x), "atol": tol.get("atol", 0.0)}
