"""SimpleLinop: given and derived adjoints against numpy references, sizes, normals, errors."""

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from factories.conv_simple import (
    MATRIX,
    cumsum,
    cumsum_normal,
    difference,
    matmul,
    reverse_cumsum,
)
from helpers import assert_close

import jaxlinops as jl

RNG = np.random.default_rng(0)


def crandn(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def test_given_functions_are_called():
    A = jl.SimpleLinop(cumsum, reverse_cumsum, ishape="...N")
    x, y = crandn(2, 5), crandn(2, 5)
    assert_close(A(x), np.cumsum(x, axis=-1), jnp.complex128)
    assert_close(A.H(y), np.cumsum(y[:, ::-1], axis=-1)[:, ::-1], jnp.complex128)
    assert A.H.ishape == A.oshape and eqx.tree_equal(A.H.H, A)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex128])
def test_derived_adjoint_matches_conjugate_transpose(dtype):
    A = jl.SimpleLinop(matmul, ishape="...N", oshape="...M", sizes={"N": 4})
    y = crandn(2, 3) if dtype == jnp.complex128 else RNG.standard_normal((2, 3))
    y = jnp.asarray(y.astype(dtype))
    got = A.H(y)
    assert got.shape == (2, 4) and got.dtype == dtype
    assert_close(got, np.asarray(y) @ MATRIX.conj(), dtype)
    assert_close(jax.jit(lambda B, v: B.H(v))(A, y), got, dtype)


def complex_cumsum(x):
    return (1 - 2j) * jnp.cumsum(x, axis=-1)


def test_derived_adjoint_conjugates_complex_coefficients():
    """The factories' functions have real coefficients, where transpose = adjoint."""
    A = jl.SimpleLinop(complex_cumsum, ishape="...N")
    y = crandn(2, 5)
    want = (1 + 2j) * np.cumsum(y[:, ::-1], axis=-1)[:, ::-1]
    assert_close(A.H(y), want, jnp.complex128)
    assert_close(A.apply_adjoint(jnp.asarray(y)), want, jnp.complex128)


def test_derived_adjoint_takes_shared_dims_from_the_output():
    A = jl.SimpleLinop(cumsum, ishape="BN")
    y = crandn(3, 7)
    assert_close(A.H(y), np.cumsum(y[:, ::-1].conj(), axis=-1)[:, ::-1].conj(), jnp.complex128)


def test_derived_adjoint_of_a_shape_changing_function():
    A = jl.SimpleLinop(difference, ishape="...N", oshape="...M", sizes={"N": 6})
    D = np.diff(np.eye(6), axis=0)  # (5, 6): x -> x[1:] - x[:-1]
    y = crandn(2, 5)
    assert_close(A.H(y), y @ D.conj(), jnp.complex128)
    assert A.size("N") == 6 and A.size("M") is None


def test_given_normal_is_used():
    A = jl.SimpleLinop(cumsum, reverse_cumsum, cumsum_normal, "...N", sizes={"N": 5})
    N = A.N
    assert isinstance(N, jl.SimpleLinop) and N._forward_fn is cumsum_normal
    assert N.ishape == ("...", "N") and N.oshape == ("...", "N")
    x = crandn(2, 5)
    assert_close(N(x), A.H(A(x)), jnp.complex128)
    assert N.size("N") == 5


def test_given_normal_renames_like_the_default():
    A = jl.SimpleLinop(matmul, ishape="N", oshape="M", sizes={"N": 4})
    B = jl.SimpleLinop(matmul, normal=cumsum_normal, ishape="N", oshape="M", sizes={"N": 4})
    assert B.N.oshape == A.N.oshape == ("N1",)
    assert B.N.size("N1") == 4


def test_default_normal():
    A = jl.SimpleLinop(difference, ishape="N", oshape="M", sizes={"N": 6})
    x = crandn(6)
    assert_close(A.N(x), A.H(A(x)), jnp.complex128)


def test_missing_size_needs_sizes_or_adjoint():
    match = (
        r"`SimpleLinop\(\(N\) -> \(M\)\)` cannot derive its adjoint: the sizes of input dims "
        r"\['N'\] are unknown .* Pass `sizes=\{dim: size\}` or `adjoint=...`"
    )
    with pytest.raises(ValueError, match=match):
        jl.SimpleLinop(matmul, ishape="N", oshape="M")
    jl.SimpleLinop(matmul, reverse_cumsum, ishape="N", oshape="M")  # a given adjoint is fine


def test_batch_axes_only_in_the_input_need_an_adjoint():
    with pytest.raises(ValueError, match=r"input has '...' batch axes but the output does not"):
        jl.SimpleLinop(cumsum, ishape="...N", oshape="N")


@pytest.mark.parametrize("arg", ["forward", "adjoint", "normal"])
def test_functions_must_be_callable(arg):
    kwargs = dict(forward=cumsum, adjoint=reverse_cumsum)
    kwargs[arg] = "cumsum"
    with pytest.raises(TypeError, match=rf"`SimpleLinop\({arg}=...\)` expects a function; got"):
        jl.SimpleLinop(**kwargs)
