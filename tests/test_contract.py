"""Properties every registered operator must have, for float32, complex64 and complex128.

Each check compares against an independent reference: inner products for the adjoint,
`jax.linear_transpose`, `A.H(A(x))` for the normal, eager results for jit and vmap, a dense
matrix built column by column for gradients, and finite differences for weight gradients.
"""

import equinox as eqx
import factories  # noqa: F401  (registers the operators)
import jax
import jax.numpy as jnp
import jax.test_util
import numpy as np
import pytest
from helpers import DTYPES, OPERATOR_FACTORIES, KeyGen, assert_close, dense_matrix, rand

import jaxlinops as jl

names = sorted(OPERATOR_FACTORIES)
params = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: jnp.dtype(d).name)
ops = pytest.mark.parametrize("name", names)


def build(name, dtype, seed=0):
    getkey = KeyGen(seed)
    op, xshape = OPERATOR_FACTORIES[name](getkey, dtype)
    x = rand(getkey(), xshape, dtype)
    yshape = jax.eval_shape(op, x).shape
    y = rand(getkey(), yshape, dtype)
    return op, x, y


@ops
@params
def test_adjoint(name, dtype):
    op, x, y = build(name, dtype)
    jl.testing.assert_adjoint(op, x, y)


@ops
@params
def test_linear_transpose(name, dtype):
    op, x, y = build(name, dtype)
    jl.testing.assert_linear_transpose(op, x, y)


@ops
@params
def test_adjoint_of_adjoint(name, dtype):
    op, x, _ = build(name, dtype)
    assert eqx.tree_equal(op.H.H, op)
    assert_close(op.H.H(x), op(x), dtype)
    assert op.H.ishape == op.oshape and op.H.oshape == op.ishape


@ops
@params
def test_normal(name, dtype):
    op, x, _ = build(name, dtype)
    jl.testing.assert_normal(op, x)
    assert op.N.ishape == op.ishape
    assert len(op.N.oshape) == len(op.ishape)


@ops
@params
def test_jit_matches_eager(name, dtype):
    op, x, y = build(name, dtype)
    assert_close(jax.jit(lambda A, v: A(v))(op, x), op(x), dtype)
    assert_close(jax.jit(lambda A, v: A.H(v))(op, y), op.H(y), dtype)
    assert_close(eqx.filter_jit(lambda A, v: A.N(v))(op, x), op.N(x), dtype)


@ops
@params
def test_vmap_over_extra_axis(name, dtype):
    op, x, _ = build(name, dtype)
    xs = jnp.stack([x, 2 * x, -x])
    want = jnp.stack([op(v) for v in xs])
    assert_close(jax.vmap(op)(xs), want, dtype)


@ops
@params
def test_grad_wrt_input_matches_dense_matrix(name, dtype):
    op, x, y = build(name, dtype)
    M = dense_matrix(op, x.shape, dtype)
    c = np.asarray(y).ravel()

    def f(v):
        return jnp.real(jnp.vdot(y, op(v)))

    g = np.asarray(jax.grad(f)(x)).ravel()
    # f(x) = Re(c^H M x). JAX returns df/dRe(x) - i df/dIm(x) = conj(M^H c) for complex x
    want = np.conj(M.conj().T @ c)
    if not jnp.issubdtype(dtype, jnp.complexfloating):
        want = want.real
    assert_close(g, want, dtype)


@ops
def test_grad_wrt_operator_arrays(name):
    op, x, y = build(name, jnp.complex128)
    params, static = eqx.partition(op, eqx.is_inexact_array)
    if not jax.tree_util.tree_leaves(params):
        pytest.skip("operator has no floating-point arrays")

    def f(p):
        return jnp.real(jnp.vdot(y, eqx.combine(p, static)(x)))

    jax.test_util.check_grads(jax.jit(f), (params,), order=1, modes=("rev",))


@ops
def test_no_retrace_on_new_values(name):
    op, x, _ = build(name, jnp.complex128)
    op2, x2, _ = build(name, jnp.complex128, seed=1)
    traces = []

    @jax.jit
    def f(A, v):
        traces.append(1)
        return A.N(v) + A.H(A(v))

    f(op, x)
    f(op2, x2)
    assert len(traces) == 1


@ops
def test_inputs_not_mutated(name):
    op, x, y = build(name, jnp.complex128)
    xn, yn = np.array(x), np.array(y)
    xc, yc = xn.copy(), yn.copy()
    op(xn), op.H(yn), op.N(xn)
    np.testing.assert_array_equal(xn, xc)
    np.testing.assert_array_equal(yn, yc)
