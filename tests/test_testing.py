"""`jaxlinops.testing` catches wrong operators, and a user-defined operator works."""

import subprocess
import sys

import jax
import jax.numpy as jnp
import pytest
from helpers import KeyGen, assert_close, rand

import jaxlinops as jl


class Cumsum(jl.NamedLinop):
    r"""$y_n = \sum_{m \le n} w_m x_m$ along the last axis: `(..., N) -> (..., N)`."""

    weight: jax.Array
    conjugate: bool = True  # False gives a wrong adjoint (missing conjugate)

    @property
    def ishape(self):
        return ("...", "N")

    @property
    def oshape(self):
        return ("...", "N")

    def size(self, dim):
        return self.weight.shape[0] if dim == "N" else None

    def apply(self, x):
        return jnp.cumsum(jnp.broadcast_to(self.weight, x.shape) * x, axis=-1)

    def apply_adjoint(self, y):
        w = jnp.conj(self.weight) if self.conjugate else self.weight
        return jnp.broadcast_to(w, y.shape) * jnp.flip(jnp.cumsum(jnp.flip(y, -1), axis=-1), -1)


@pytest.fixture
def data():
    key = KeyGen(3)
    return rand(key(), (5,)), rand(key(), (2, 5)), rand(key(), (2, 5))


def test_user_operator_gets_adjoint_normal_and_composition(data):
    w, x, y = data
    A = Cumsum(w)
    jl.testing.assert_adjoint(A, x, y)
    jl.testing.assert_linear_transpose(A, x, y)
    jl.testing.assert_normal(A, x)
    assert isinstance(A.H, jl.Adjoint) and A.H.H is A
    assert A.N.ishape == ("...", "N") and A.N.oshape == ("...", "N")
    B = jl.Diagonal(w, "...N") @ A
    assert_close(B(x), w[None] * jnp.cumsum(w[None] * x, axis=-1), jnp.complex128)
    with pytest.raises(ValueError, match="expected dim N with size 5"):
        A(jnp.ones(4))


def test_checks_fail_on_a_missing_conjugate(data):
    w, x, y = data
    bad = Cumsum(w, conjugate=False)
    with pytest.raises(AssertionError, match="Adjoint test failed for Cumsum"):
        jl.testing.assert_adjoint(bad, x, y)
    with pytest.raises(AssertionError, match="Linear-transpose test for Cumsum"):
        jl.testing.assert_linear_transpose(bad, x, y)


def test_normal_check_fails_on_a_wrong_normal(data):
    w, x, _ = data

    class WrongNormal(Cumsum):
        def normal(self, inner=None):
            return jl.Identity(self.ishape)

    with pytest.raises(AssertionError, match="Normal test for WrongNormal"):
        jl.testing.assert_normal(WrongNormal(w), x)


def test_importing_jaxlinops_does_not_import_pytest_or_torch():
    code = "import sys, jaxlinops; print('pytest' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_checks_compare_broadcast_dims_as_torchlinops():
    """`SumReduce(...).H` without lengths returns a size-1 axis for the summed dim (it
    broadcasts): the normal and transpose checks accept it, as torch.isclose would."""
    A = jl.SumReduce("A B C", "A B")
    x = jax.random.normal(jax.random.key(0), (5, 2, 3), jnp.float64)
    y = jax.random.normal(jax.random.key(1), (5, 2), jnp.float64)
    assert A.H(y).shape == (5, 2, 1)
    jl.testing.assert_normal(A, x)
    jl.testing.assert_linear_transpose(A, x, y)
