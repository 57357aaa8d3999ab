"""`jl.alg`: CG, power method, SVD and polynomial preconditioners against numpy
(`linalg.solve`, `lstsq`, `svd`, exact polynomial integrals), under jit, batched and
sharded; the lineax wrapper when lineax is installed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

alg = jl.alg


def hermitian(seed, n, eigs, dtype=np.complex128):
    """A Hermitian matrix with eigenvalues `eigs` and random eigenvectors."""
    q, _ = np.linalg.qr(np.asarray(rand(seed, (n, n), dtype)))
    return (q * eigs) @ q.conj().T


def square(matrix):
    """`matrix` as a Dense operator N -> M (same size, renamed output as in `A.N`)."""
    return jl.Dense(matrix, "M N", "N", "M")


def test_cg_solves_a_hermitian_system_under_jit():
    H = hermitian(0, 20, np.geomspace(1, 100, 20))
    y = np.asarray(rand(1, (20,)))
    want = np.linalg.solve(H, y)
    solve = jax.jit(lambda A, y: alg.conjugate_gradients(A, y, max_num_iters=100, gtol=1e-12))
    result = solve(square(H), y)
    # gtol bounds the residual; the error is at most cond(H) = 100 times larger
    np.testing.assert_allclose(result.x, want, rtol=1e-9)
    assert result.converged and 0 < result.num_iters <= 100
    history = np.asarray(result.residual_norms)
    k = int(result.num_iters)
    np.testing.assert_allclose(history[0], np.linalg.norm(y))
    np.testing.assert_allclose(history[k], np.linalg.norm(y - H @ result.x), rtol=1e-3)
    assert history[k] <= 1e-12 * np.linalg.norm(y) and np.isnan(history[k + 1 :]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128])
def test_cg_least_squares(dtype):
    B = jl.Dense(rand(2, (30, 10), dtype), "M N", "N", "M")
    b = rand(3, (30,), dtype)
    result = alg.conjugate_gradients(B.N, B.H(b), max_num_iters=50, gtol=1e-12)
    want = np.linalg.lstsq(np.asarray(B.weight), np.asarray(b), rcond=None)[0]
    assert result.x.dtype == dtype
    np.testing.assert_allclose(result.x, want, rtol=jl.testing.default_rtol(dtype) * 10)


def test_cg_zero_rhs_and_breakdown_give_no_nan():
    A = square(hermitian(0, 6, np.arange(1.0, 7.0)))
    result = alg.conjugate_gradients(A, np.zeros(6, np.complex128))
    assert not np.asarray(result.x).any() and result.num_iters == 0 and result.converged
    # a singular A with y in its range: CG stops at the breakdown, without NaN
    singular = square(hermitian(1, 6, np.array([0.0, 0.0, 1.0, 2.0, 3.0, 4.0])))
    y = singular(rand(2, (6,)))
    result = alg.conjugate_gradients(singular, y, max_num_iters=30, gtol=1e-10)
    assert np.isfinite(result.x).all()
    np.testing.assert_allclose(singular(result.x), y, atol=1e-8)


def test_preconditioners_need_fewer_iterations():
    n = 40
    rng = np.random.default_rng(4)
    d = np.geomspace(1e-3, 1.0, n)
    E = 1e-4 * rng.standard_normal((n, n))
    H = np.diag(d) + (E + E.T) / 2  # diagonally dominant, condition ~1e3
    A, y = square(H), rng.standard_normal(n)
    plain = alg.conjugate_gradients(A, y, max_num_iters=200, gtol=1e-8)
    jacobi = alg.conjugate_gradients(
        A, y, P=jl.Diagonal(1 / np.diag(H), "M"), max_num_iters=200, gtol=1e-8
    )
    # a Chebyshev polynomial in A (eigenvalues within [5e-4, 1.01]), degree 6
    eigs = np.linalg.eigvalsh(H)
    P = alg.polynomial_preconditioner(A, 6, "l_inf", 0.5 * eigs[0], 1.01 * eigs[-1])
    poly = alg.conjugate_gradients(A, y, P=P, max_num_iters=200, gtol=1e-8)
    for result in (plain, jacobi, poly):
        assert result.converged
        np.testing.assert_allclose(result.x, np.linalg.solve(H, y), rtol=1e-5)
    assert 3 * jacobi.num_iters < plain.num_iters and poly.num_iters < plain.num_iters


def test_cg_batched_systems_converge_separately():
    """Two independent systems along `T`: one is the identity (one iteration), the other
    ill-conditioned; each gets its own step sizes and stopping iteration."""
    W = np.stack([np.eye(8), hermitian(5, 8, np.geomspace(1, 50, 8))])
    A = jl.Dense(W, "T M N", "T N", "T M")
    y = np.asarray(rand(6, (2, 8)))
    result = alg.conjugate_gradients(A, y, max_num_iters=50, gtol=1e-12, batch_dims="T")
    assert result.num_iters.shape == (2,) and result.residual_norms.shape == (51, 2)
    assert result.num_iters[0] == 1 and result.num_iters[1] > 4
    assert result.converged.all()
    for t in range(2):
        np.testing.assert_allclose(result.x[t], np.linalg.solve(W[t], y[t]), rtol=1e-9)


def test_cg_on_a_sharded_operator_equals_single_device():
    maps = jl.Dense(rand(7, (8, 6, 6)), "C Nx Ny", "Nx Ny", "C Nx Ny")
    A = jl.FFT(2, batch_shape="C", centered=True) @ maps
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()))
    b = rand(8, (8, 6, 6))
    single = alg.conjugate_gradients(A.N, A.H(b), max_num_iters=15)
    sharded = jax.jit(lambda B, b: alg.conjugate_gradients(B.N, B.H(b), max_num_iters=15))(B, b)
    assert sharded.num_iters == single.num_iters
    np.testing.assert_allclose(sharded.x, single.x, rtol=1e-10)
    np.testing.assert_allclose(sharded.residual_norms, single.residual_norms, rtol=1e-9)


def test_cg_progress_matches():
    A, y = square(hermitian(0, 10, np.geomspace(1, 10, 10))), rand(1, (10,))
    want = alg.conjugate_gradients(A, y, max_num_iters=30)
    got = alg.conjugate_gradients(A, y, max_num_iters=30, progress=True)
    assert got.num_iters == want.num_iters
    np.testing.assert_allclose(got.x, want.x, rtol=1e-12)


def test_power_method_batched_and_jitted():
    w = np.array([[1.0, -5.0, 2.0, 0.5], [3.0, 1.0, -0.5, 2.0], [0.1, 0.2, 0.3, 0.4]])
    D = jl.Diagonal(w, "B N")
    v, lam = jax.jit(lambda D, v: alg.power_method(D, v, max_iters=500, tol=1e-12, dim="N"))(
        D, rand(0, (3, 4), jnp.float64) + 1.0
    )
    np.testing.assert_allclose(lam, np.abs(w).max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.abs(v), np.abs(w) == np.abs(w).max(axis=1)[:, None], atol=1e-3)
    # of a Hermitian matrix, unbatched
    H = hermitian(1, 12, np.linspace(-3, 2, 12))
    _, lam = alg.power_method(square(H), rand(2, (12,)), max_iters=2000, tol=1e-13)
    np.testing.assert_allclose(lam, 3.0, rtol=1e-6)


def test_svd_matches_numpy():
    rng = np.random.default_rng(3)
    s = np.array([8.0, 4.0, 2.0, 1.0, 0.5, 0.25])
    u, _ = np.linalg.qr(rng.standard_normal((9, 6)) + 1j * rng.standard_normal((9, 6)))
    v, _ = np.linalg.qr(rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6)))
    M = (u * s) @ v.conj().T
    A = jl.Dense(M, "M N", "N", "M")
    svd = jax.jit(lambda A, x: alg.singular_value_decomposition(A, x, 3, 500, 1e-14))
    U, S, Vh = map(np.asarray, svd(A, rand(4, (6,))))
    Un, Sn, Vhn = np.linalg.svd(M)
    # gaps of 2x: the power method converges as 4^-k; float64 rounding limits it
    np.testing.assert_allclose(S, Sn[:3], rtol=1e-10)
    np.testing.assert_allclose(np.abs(np.sum(np.conj(U) * Un[:, :3], axis=0)), 1, rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(Vh * np.conj(Vhn[:3]), axis=1)), 1, rtol=1e-8)
    np.testing.assert_allclose((U * S) @ Vh, (Un[:, :3] * Sn[:3]) @ Vhn[:3], atol=1e-8)


@pytest.mark.parametrize("degree", [1, 3, 6])
def test_polynomial_coefficients(degree):
    lo, hi = 0.05, 1.0
    x = np.linspace(lo, hi, 2001)
    # l_inf: the Chebyshev optimum equioscillates at 1 / T_{d+1}((u + l) / (u - l))
    c = alg.polynomial_coefficients(degree, "l_inf", lo, hi)
    bound = 1 / np.cosh((degree + 1) * np.arccosh((hi + lo) / (hi - lo)))
    np.testing.assert_allclose(np.abs(1 - x * np.polyval(c[::-1], x)).max(), bound, rtol=1e-3)
    # l_2: the residual 1 - x p(x) is orthogonal to x^(j+1), j <= d (exact integrals)
    c = alg.polynomial_coefficients(degree, "l_2", lo, hi)
    r = np.polynomial.Polynomial([1.0]) - np.polynomial.Polynomial([0.0, *c])
    for j in range(degree + 1):
        moment = (r * np.polynomial.Polynomial([0.0] * (j + 1) + [1.0])).integ()
        assert abs(moment(hi) - moment(lo)) < 1e-12
    # ifista: 1 - x p(x) = (1 - x)^(d + 1)
    c = alg.polynomial_coefficients(degree, "ifista")
    np.testing.assert_allclose(1 - x * np.polyval(c[::-1], x), (1 - x) ** (degree + 1), atol=1e-12)


def test_polynomial_preconditioner_is_the_matrix_polynomial():
    H = hermitian(0, 8, np.linspace(0.1, 1.0, 8))
    T = square(H)
    P = alg.polynomial_preconditioner(T, 3, "l_2", 0.1, 1.0)
    c = alg.polynomial_coefficients(3, "l_2", 0.1, 1.0)
    dense = sum(ck * np.linalg.matrix_power(H, k) for k, ck in enumerate(c))
    x = rand(1, (8,))
    assert (P.ishape, P.oshape) == (("N",), ("N",))
    np.testing.assert_allclose(P(x), dense @ np.asarray(x), rtol=1e-12)
    assert isinstance(alg.polynomial_preconditioner(T, -1), jl.Identity)


def test_lineax_solvers_run_on_operators():
    lx = pytest.importorskip("lineax")
    H = hermitian(0, 12, np.geomspace(1, 10, 12), np.float64)
    y = rand(1, (12,), jnp.float64)
    op = alg.to_lineax(square(H), y, tags=lx.positive_semidefinite_tag)
    solution = lx.linear_solve(op, y, lx.CG(rtol=1e-12, atol=1e-12, max_steps=200))
    np.testing.assert_allclose(solution.value, np.linalg.solve(H, y), rtol=1e-9)
    G = np.asarray(rand(2, (12, 12), jnp.float64)) + 5 * np.eye(12)  # not symmetric
    op = alg.to_lineax(square(G), jax.ShapeDtypeStruct((12,), jnp.float64))
    solution = jax.jit(lambda op, y: lx.linear_solve(op, y, lx.GMRES(rtol=1e-12, atol=1e-12)))(
        op, y
    )
    np.testing.assert_allclose(solution.value, np.linalg.solve(G, y), rtol=1e-8)


def test_bad_input():
    A = jl.Dense(rand(0, (3, 4)), "M N", "N", "M")
    with pytest.raises(
        ValueError, match=r"`A` must map its input shape to itself; it maps \(4,\) to \(3,\)"
    ):
        alg.conjugate_gradients(A, rand(1, (4,)))
    with pytest.raises(ValueError, match=r"`Dense` expected dim 'N' of size 4"):
        alg.conjugate_gradients(A.N, rand(1, (5,)))
    with pytest.raises(ValueError, match=r"max_num_iters must be an integer >= 1; got 0"):
        alg.conjugate_gradients(A.N, rand(1, (4,)), max_num_iters=0)
    with pytest.raises(ValueError, match=r"x0 has shape \(3,\); y has shape \(4,\)"):
        alg.conjugate_gradients(A.N, rand(1, (4,)), x0=rand(2, (3,)))
    with pytest.raises(ValueError, match=r"dim 'T' is not in the operator's ishape"):
        alg.conjugate_gradients(A.N, rand(1, (4,)), batch_dims="T")
    with pytest.raises(TypeError, match=r"dim 'N' is a name, but the operator is a plain callable"):
        alg.conjugate_gradients(lambda v: v, rand(1, (4,)), batch_dims="N")
    with pytest.raises(TypeError, match=r"`A` must be a NamedLinop or a callable; got ndarray"):
        alg.conjugate_gradients(np.eye(4), rand(1, (4,)))
    with pytest.raises(ValueError, match=r"progress=True runs from Python"):
        jax.jit(lambda y: alg.conjugate_gradients(A.N, y, progress=True))(rand(1, (4,)))
    with pytest.raises(ValueError, match=r"`power_method`: `A` must map its input shape to itself"):
        alg.power_method(A, rand(1, (4,)))
    with pytest.raises(ValueError, match=r"at most 4 singular values"):
        alg.singular_value_decomposition(A, rand(1, (4,)), 5)
    with pytest.raises(ValueError, match=r"degree must be an integer >= 0; got 1.5"):
        alg.polynomial_coefficients(1.5)
    with pytest.raises(ValueError, match=r"norm must be one of .* got 'l_1'"):
        alg.polynomial_preconditioner(A.N, 2, "l_1")
    with pytest.raises(
        ValueError, match=r"degree-1 ifista polynomial is not positive on \[0.0, 2.0\]"
    ):
        alg.polynomial_coefficients(1, "ifista", 0.0, 2.0)  # p(x) = 2 - x


def test_cg_and_power_method_on_an_explicit_mesh():
    """Vectors sharded over an Explicit mesh (where `vdot` raises a sharding error): the
    solvers' inner products still work, and agree with the unsharded run."""
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    d = np.linspace(1.0, 10.0, 16)
    y = rand(1, (16,), jnp.float64)
    want = alg.conjugate_gradients(lambda v: d * v, y, max_num_iters=40)
    with jax.set_mesh(mesh):
        ds, ys = (jax.device_put(a, jax.P("x")) for a in (jnp.asarray(d), y))
        got = alg.conjugate_gradients(lambda v: ds * v, ys, max_num_iters=40)
        _, lam = alg.power_method(lambda v: ds * v, ys, max_iters=500, tol=1e-12)
    assert got.num_iters == want.num_iters
    np.testing.assert_allclose(got.x, want.x, rtol=1e-12)
    np.testing.assert_allclose(lam, 10.0, rtol=1e-6)
