"""`jl.alg`: CG, power method, SVD and polynomial preconditioners against numpy
(`linalg.solve`, `lstsq`, `svd`, Krylov-subspace projections, exact polynomial integrals),
under jit, batched and sharded; the lineax wrapper when lineax is installed.

The checks are what the mathematics promises, with tolerances from the dtype and the
condition number, never machine-precision agreement of two rounding orders (XLA's kernels
differ between CPUs). `ALG_TEST_SEED=<n>` shifts every random seed, to try other data.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

alg = jl.alg
SEED = int(os.environ.get("ALG_TEST_SEED", "0"))
EPS64 = np.finfo(np.float64).eps


def cg(*args, **kwargs):
    """`conjugate_gradients` returning its whole record (`CGResult`)."""
    return alg.conjugate_gradients(*args, return_info=True, **kwargs)


def xla_compiles_float16() -> bool:
    """False where XLA cannot compile float16 arithmetic: CPUs without F16C, and
    `XLA_FLAGS=--xla_cpu_max_isa=SSE4_2`."""
    try:
        jax.jit(lambda x: x * x)(jnp.ones(2, jnp.float16))
    except jax.errors.JaxRuntimeError:
        return False
    return True


def hermitian(seed, n, eigs, dtype=np.complex128):
    """A Hermitian matrix with eigenvalues `eigs` and random eigenvectors."""
    q, _ = np.linalg.qr(np.asarray(rand(SEED + seed, (n, n), dtype)))
    return (q * eigs) @ q.conj().T


def square(matrix):
    """`matrix` as a Dense operator N -> M (same size, renamed output as in `A.N`)."""
    return jl.Dense(matrix, "M N", "N", "M")


def assert_solves(H, y, x, rel_residual):
    r"""`x` solves $H x = y$ (H invertible): its true residual is at most `rel_residual`
    $\|y\|$, and its distance to numpy's solution at most what that residual allows,
    $\|x - x^*\| \le \|H^{-1}\| \|y - H x\|$, plus numpy's own rounding."""
    H, y, x = (np.asarray(a, np.complex128) for a in (H, y, x))
    residual = np.linalg.norm(y - H @ x)
    assert residual <= rel_residual * np.linalg.norm(y), (residual, np.linalg.norm(y))
    want = np.linalg.solve(H, y)
    sigma = np.linalg.svd(H, compute_uv=False)
    slack = 100 * EPS64 * sigma[0] / sigma[-1] * np.linalg.norm(want)
    assert np.linalg.norm(x - want) <= 1.01 * residual / sigma[-1] + slack


def krylov_iterate(H, y, x0, k):
    r"""The CG iterate $x_k$ from the definition: $x_0 + V c$, $V$ an orthonormal basis of
    the Krylov space $\{r_0, H r_0, \dots, H^{k-1} r_0\}$, $c$ minimising the $H$-norm of
    the error, $(V^H H V) c = V^H r_0$."""
    r0 = y - H @ x0
    V, _ = np.linalg.qr(np.stack([np.linalg.matrix_power(H, j) @ r0 for j in range(k)], 1))
    return x0 + V @ np.linalg.solve(V.conj().T @ H @ V, V.conj().T @ r0)


def test_cg_solves_a_hermitian_system_under_jit():
    H = hermitian(0, 20, np.geomspace(1, 100, 20))
    y = np.asarray(rand(SEED + 1, (20,)))
    gtol = 1e-10
    solve = jax.jit(lambda A, y: cg(A, y, max_num_iters=100, gtol=gtol))
    result = solve(square(H), y)
    assert result.converged and not result.breakdown and 0 < result.num_iters < 100
    # the updated residual drifts from y - Hx by about k eps cond(H) ||y|| ~ 1e-12 ||y||
    assert_solves(H, y, result.x, 2 * gtol)
    history, k = np.asarray(result.residual_norms), int(result.num_iters)
    np.testing.assert_allclose(history[0], np.linalg.norm(y), rtol=1e-10)
    assert history[k] <= gtol * np.linalg.norm(y) < history[k - 1]
    assert np.isnan(history[k + 1 :]).all()


@pytest.mark.parametrize("warm", [False, True])
def test_cg_iterates_are_the_krylov_projections(warm):
    """After k < n steps, x_k minimises the H-norm error over x0 + the Krylov space of r0
    (a numpy projection, not CG); the run has not converged, and says so. k = 3 keeps the
    projected system well conditioned, so the two agree far above rounding."""
    H = hermitian(2, 12, np.geomspace(1, 100, 12))
    y = np.asarray(rand(SEED + 3, (12,)))
    x0 = np.asarray(rand(SEED + 4, (12,))) if warm else np.zeros(12, complex)
    result = cg(square(H), y, x0=x0 if warm else None, max_num_iters=3)
    assert result.num_iters == 3 and not result.converged and not result.breakdown
    for k in range(4):
        xk = krylov_iterate(H, y, x0, k) if k else x0
        np.testing.assert_allclose(result.residual_norms[k], np.linalg.norm(y - H @ xk), 1e-8)
    want = krylov_iterate(H, y, x0, 3)
    assert np.linalg.norm(result.x - want) <= 1e-8 * np.linalg.norm(want)


def test_cg_warm_start_at_the_solution_runs_no_iteration():
    H = hermitian(5, 10, np.geomspace(1, 10, 10))
    y = np.asarray(rand(SEED + 6, (10,)))
    x0 = np.linalg.solve(H, y)  # its residual, ~1e-15 ||y||, is far below gtol
    result = cg(square(H), y, x0=x0, gtol=1e-8)
    assert result.num_iters == 0 and result.converged
    np.testing.assert_array_equal(result.x, x0)


def test_cg_absolute_tolerance():
    """gtol=0: only atol can stop CG, at the first residual below it."""
    H = hermitian(7, 16, np.geomspace(1, 100, 16))
    y = 1e3 * np.asarray(rand(SEED + 8, (16,)))
    atol = 1e-4  # 1e-7 of ||y||: far above the residual's rounding drift
    result = cg(square(H), y, max_num_iters=100, gtol=0.0, atol=atol)
    assert result.converged and result.num_iters < 100
    k = int(result.num_iters)
    assert result.residual_norms[k] <= atol < result.residual_norms[k - 1]
    assert np.linalg.norm(y - H @ np.asarray(result.x)) <= 1.01 * atol
    # without atol, nothing stops it
    assert not cg(square(H), y, max_num_iters=k, gtol=0.0).converged


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.complex128])
def test_cg_least_squares(dtype):
    B = np.asarray(rand(SEED + 2, (30, 10), dtype))
    b = rand(SEED + 3, (30,), dtype)
    op = jl.Dense(B, "M N", "N", "M")
    single = np.finfo(dtype).bits <= 32 or dtype == np.complex64
    gtol = 1e-5 if single else 1e-12
    result = cg(op.N, op.H(b), max_num_iters=50, gtol=gtol)
    assert result.x.dtype == dtype and result.converged
    # against the float64 normal equations (numpy's lstsq solves them), allowing the
    # rounding of B^H b and of the CG updates in `dtype`: ~ 100 eps cond(B^H B)
    B64 = B.astype(np.complex128)
    H, y = B64.conj().T @ B64, B64.conj().T @ np.asarray(b, np.complex128)
    eps = np.finfo(dtype).eps
    assert_solves(H, y, result.x, 2 * gtol + 100 * eps * np.linalg.cond(H))
    want = np.linalg.lstsq(B, np.asarray(b), rcond=None)[0]
    assert_solves(H, H @ want, result.x, 2 * gtol + 100 * eps * np.linalg.cond(H))


def test_cg_zero_rhs_and_singular_operators_give_no_nan():
    A = square(hermitian(0, 6, np.arange(1.0, 7.0)))
    result = cg(A, np.zeros(6, np.complex128))
    assert not np.asarray(result.x).any() and result.num_iters == 0 and result.converged
    # a singular A with y in its range: CG converges (y has no null-space component)
    H = hermitian(1, 6, np.array([0.0, 0.0, 1.0, 2.0, 3.0, 4.0]))
    y = H @ np.asarray(rand(SEED + 2, (6,)))
    result = cg(square(H), y, max_num_iters=30, gtol=1e-10)
    assert np.isfinite(result.x).all() and result.converged and not result.breakdown
    assert np.linalg.norm(y - H @ np.asarray(result.x)) <= 2e-10 * np.linalg.norm(y)


def test_cg_breaks_down_on_indefinite_and_non_hermitian_operators():
    """<p, Ap> <= 0: CG reports a breakdown and no convergence, and takes no step."""
    eigs = np.array([-1.0, 1.0, 2.0, 3.0])
    H = hermitian(3, 4, eigs)
    q = np.linalg.eigh(H)[1]
    y = q @ np.array([3.0, 1.0, 1.0, 1.0])  # y^H H y = -9 + 1 + 2 + 3 < 0
    result = jax.jit(cg)(square(H), y)
    assert result.breakdown and not result.converged and result.num_iters == 1
    np.testing.assert_array_equal(result.x, 0)
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # p^T R p = 0 for every real p
    result = cg(square(rotation), np.array([1.0, 2.0]))
    assert result.breakdown and not result.converged
    # a preconditioner that is not positive definite: <r, P r> < 0
    P = jl.Scalar(-1.0, "M")
    result = cg(square(hermitian(4, 4, eigs + 2)), y, P=P)
    assert result.breakdown and not result.converged


def test_cg_convergence_report_is_truthful_on_a_non_hermitian_operator():
    """CG assumes a Hermitian A; on another it need not converge, but `converged` is still
    the residual y - Ax (which CG updates exactly, whatever A is) against the tolerance."""
    rng = np.random.default_rng(SEED + 9)
    K = rng.standard_normal((10, 10))
    G = 3 * np.eye(10) + (K - K.T)  # p^T G p = 3 |p|^2 > 0: no breakdown
    y = rng.standard_normal(10)
    for iters in (5, 200):
        result = cg(square(G), y, max_num_iters=iters, gtol=1e-6)
        residual = np.linalg.norm(y - G @ np.asarray(result.x)) / np.linalg.norm(y)
        assert not result.breakdown
        assert bool(result.converged) == (residual <= 1e-6), residual


@pytest.mark.parametrize(
    "dtype, size, gtol",
    [
        pytest.param(
            np.float16,  # ||y||^2 = 8 * 200^2 overflows float16
            200.0,
            1e-2,
            marks=pytest.mark.skipif(not xla_compiles_float16(), reason="no float16 in XLA"),
        ),
        (jnp.bfloat16, 1e19, 3e-2),  # and 8e38 overflows float32 and bfloat16
        (np.float32, 1e19, 1e-5),
        (np.complex64, 1e19, 1e-5),
        (np.float32, 1e-30, 1e-5),  # ||y||^2 = 1e-60 underflows to zero
    ],
)
def test_cg_scales_large_and_small_data(dtype, size, gtol):
    d = np.linspace(1.0, 2.0, 8)  # condition 2
    y = size * rand(SEED + 10, (8,), dtype)
    A = jl.Diagonal(jnp.asarray(d, dtype), "N")
    result = jax.jit(cg)(A, y, gtol=gtol)
    assert result.converged and result.num_iters > 0
    x, y = (np.asarray(a.astype(jnp.complex128)) for a in (result.x, y))
    # cond 2: error <= 2 (gtol + rounding of the updates, a few eps of the dtype)
    eps = float(jnp.finfo(dtype).eps)
    assert np.linalg.norm(x - y / d) <= 2 * (gtol + 10 * eps) * np.linalg.norm(y / d)
    np.testing.assert_allclose(result.residual_norms[0], np.linalg.norm(y), rtol=10 * eps)


@pytest.mark.parametrize("bad", ["y_inf", "y_nan", "x0_nan", "operator_nan"])
def test_cg_non_finite_data_gives_nan_and_no_convergence(bad):
    """Two systems along T; the bad value sits in the first. Under jit, so no Python check
    can run: the first system's x is NaN and unconverged, the second solves normally."""
    d = np.tile(np.linspace(1.0, 2.0, 6), (2, 1))
    y, x0 = np.ones((2, 6)), np.zeros((2, 6))
    if bad == "operator_nan":
        d[0, 2] = np.nan
    else:
        {"y_inf": y, "y_nan": y, "x0_nan": x0}[bad][0, 2] = np.inf if bad == "y_inf" else np.nan

    def solve(d, y, x0, batch_dims=None):
        return cg(lambda v: d * v, y, x0=x0, batch_dims=batch_dims)

    solve = jax.jit(solve, static_argnums=3)
    result = solve(d, y, x0, 0)
    assert np.isnan(result.x[0]).all() and not result.converged[0]
    assert result.converged[1]
    np.testing.assert_allclose(result.x[1], 1 / d[1], rtol=1e-5)  # gtol 1e-6, condition 2
    # alone, where no other system keeps the loop running
    result = solve(d[0], y[0], x0[0])
    assert np.isnan(result.x).all() and not result.converged


def test_preconditioners_need_fewer_iterations():
    n = 40
    rng = np.random.default_rng(SEED + 4)
    d = np.geomspace(1e-3, 1.0, n)
    E = 1e-4 * rng.standard_normal((n, n))
    H = np.diag(d) + (E + E.T) / 2  # diagonally dominant, condition ~1e3
    A, y = square(H), rng.standard_normal(n)
    gtol = 1e-8
    plain = cg(A, y, max_num_iters=200, gtol=gtol)
    jacobi = cg(A, y, P=jl.Diagonal(1 / np.diag(H), "M"), max_num_iters=200, gtol=gtol)
    # a Chebyshev polynomial in A (eigenvalues within [5e-4, 1.01]), degree 6
    eigs = np.linalg.eigvalsh(H)
    P = alg.polynomial_preconditioner(A, 6, "l_inf", 0.5 * eigs[0], 1.01 * eigs[-1])
    poly = cg(A, y, P=P, max_num_iters=200, gtol=gtol)
    for result in (plain, jacobi, poly):
        assert result.converged and not result.breakdown
        # drift of the updated residual: ~ k eps cond ||y|| ~ 1e-11 ||y||
        assert_solves(H, y, result.x, 2 * gtol)
    assert 3 * jacobi.num_iters < plain.num_iters and poly.num_iters < plain.num_iters


def test_cg_batched_systems_converge_separately():
    """Two independent systems along `T`: one is the identity (one iteration), the other
    ill-conditioned; each gets its own step sizes and stopping iteration."""
    W = np.stack([np.eye(8), hermitian(5, 8, np.geomspace(1, 50, 8))])
    A = jl.Dense(W, "T M N", "T N", "T M")
    y = np.asarray(rand(SEED + 6, (2, 8)))
    result = cg(A, y, max_num_iters=50, gtol=1e-10, batch_dims="T")
    assert result.num_iters.shape == (2,) and result.residual_norms.shape == (51, 2)
    # the identity: one step of length 1; 8 distinct eigenvalues need more than 4 steps
    assert result.num_iters[0] == 1 and result.num_iters[1] > 4
    assert result.converged.all() and not result.breakdown.any()
    for t in range(2):
        assert_solves(W[t], y[t], result.x[t], 2e-10)


def test_cg_on_a_sharded_operator_solves_as_on_one_device():
    """A = FFT @ maps with a unitary FFT, so A.N is diag(sum_c |maps_c|^2): the solution
    of A.N x = y is y / that, with or without sharding over `C`."""
    maps = rand(SEED + 7, (8, 6, 6))
    A = jl.FFT(2, batch_shape="C", centered=True) @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    B = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()))
    y = A.H(rand(SEED + 8, (8, 6, 6)))
    H = np.diag(np.sum(np.abs(maps) ** 2, axis=0).ravel())
    single = cg(A.N, y, max_num_iters=60, gtol=1e-10)
    solve = jax.jit(lambda B, y: cg(B.N, y, max_num_iters=60, gtol=1e-10))
    sharded = solve(B, y)
    for result in (single, sharded):
        assert result.converged
        assert_solves(H, np.ravel(y), np.ravel(result.x), 2e-10)
    np.testing.assert_allclose(sharded.residual_norms[0], np.linalg.norm(y), rtol=1e-10)


def test_power_method_batched_and_jitted():
    w = np.array([[1.0, -5.0, 2.0, 0.5], [3.0, 1.0, -0.5, 2.0], [0.1, 0.2, 0.3, 0.4]])
    D = jl.Diagonal(w, "B N")
    v, lam = jax.jit(lambda D, v: alg.power_method(D, v, max_iters=500, tol=1e-12, dim="N"))(
        D, rand(SEED, (3, 4), jnp.float64) + 1.0
    )
    # |λ| - ||A v|| shrinks by (λ2/λ1)^2 <= 0.56 per step, so it stops within ~1e-12
    np.testing.assert_allclose(lam, np.abs(w).max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(np.abs(v), np.abs(w) == np.abs(w).max(axis=1)[:, None], atol=1e-3)
    # of a Hermitian matrix, unbatched
    H = hermitian(1, 12, np.linspace(-3, 2, 12))
    _, lam = alg.power_method(square(H), rand(SEED + 2, (12,)), max_iters=2000, tol=1e-13)
    np.testing.assert_allclose(lam, 3.0, rtol=1e-6)


@pytest.mark.parametrize("size", [1e20, 1e-25])
def test_power_method_normalises_large_and_small_vectors(size):
    """Entries of 1e20 (1e-25) square to Inf (0) in float32: in the start vector, and in
    A v for an operator of that scale."""
    d = jnp.asarray(np.linspace(1.0, 2.0, 8), jnp.float32)
    v0 = (size * (np.abs(np.asarray(rand(SEED + 3, (8,), np.float64))) + 1)).astype(np.float32)
    # ratio 1.86/2 per step: after 300 steps the start's scale is long forgotten
    for scale in (1.0, size):
        v, lam = alg.power_method(lambda v: scale * d * v, v0, max_iters=300, tol=0.0)
        np.testing.assert_allclose(lam, 2.0 * scale, rtol=1e-5)
        np.testing.assert_allclose(np.abs(v), np.eye(8)[-1], atol=1e-4)


def test_power_method_and_svd_propagate_non_finite_start_vectors():
    v0 = np.ones(6)
    v0[1] = np.inf
    _, lam = jax.jit(lambda v: alg.power_method(lambda u: 2.0 * u, v))(v0)
    assert np.isnan(lam)
    # a zero start has no direction: NaN as in torchlinops, never the eigenvalue 0; in a
    # batch, only its own entry
    v, lam = alg.power_method(lambda u: 2.0 * u, np.stack([np.zeros(6), np.ones(6)]), dim=1)
    assert np.isnan(lam[0]) and np.isnan(v[0]).all()
    np.testing.assert_allclose(lam[1], 2.0, rtol=1e-12)
    A = jl.Dense(np.asarray(rand(SEED, (5, 6))), "M N", "N", "M")
    U, S, Vh = jax.jit(lambda A, x: alg.singular_value_decomposition(A, x, 2))(A, v0 + 0j)
    assert np.isnan(S).all()


def test_svd_matches_numpy():
    rng = np.random.default_rng(SEED + 3)
    s = np.array([8.0, 4.0, 2.0, 1.0, 0.5, 0.25])
    u, _ = np.linalg.qr(rng.standard_normal((9, 6)) + 1j * rng.standard_normal((9, 6)))
    v, _ = np.linalg.qr(rng.standard_normal((6, 6)) + 1j * rng.standard_normal((6, 6)))
    M = (u * s) @ v.conj().T
    A = jl.Dense(M, "M N", "N", "M")
    # gaps of 2x: the power method on A^H A converges as 4^-k per step, so 200 steps
    # (tol=0: no early stop) reach float64 rounding, ~1e-15; the tolerances are 1e4 above
    svd = jax.jit(lambda A, x: alg.singular_value_decomposition(A, x, 3, 200, 0.0))
    U, S, Vh = map(np.asarray, svd(A, rand(SEED + 4, (6,))))
    Un, Sn, Vhn = np.linalg.svd(M)
    np.testing.assert_allclose(S, Sn[:3], rtol=1e-11)
    np.testing.assert_allclose(np.abs(np.sum(np.conj(U) * Un[:, :3], axis=0)), 1, rtol=1e-11)
    np.testing.assert_allclose(np.abs(np.sum(Vh * np.conj(Vhn[:3]), axis=1)), 1, rtol=1e-11)
    np.testing.assert_allclose((U * S) @ Vh, (Un[:, :3] * Sn[:3]) @ Vhn[:3], atol=1e-10)


def test_svd_stops_at_its_tolerance():
    """tol bounds the relative change of σ²; with a 4x eigenvalue ratio the change is ~15x
    the remaining error, so σ is within tol of numpy's."""
    M = np.diag([8.0, 4.0, 2.0, 1.0])
    A = jl.Dense(M, "M N", "N", "M")
    _, S, _ = alg.singular_value_decomposition(A, np.ones(4), 2, max_iters=500, tol=1e-6)
    np.testing.assert_allclose(S, [8.0, 4.0], rtol=1e-6)
    assert abs(S[0] - 8.0) > 1e-14  # it did stop early (exactly converged would be 0)


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
        # the integrand's terms are up to |c| ~ 1e3 in size: rounding ~1e3 eps
        assert abs(moment(hi) - moment(lo)) < 1e-10
    # ifista: 1 - x p(x) = (1 - x)^(d + 1)
    c = alg.polynomial_coefficients(degree, "ifista")
    np.testing.assert_allclose(1 - x * np.polyval(c[::-1], x), (1 - x) ** (degree + 1), atol=1e-12)


def test_polynomial_preconditioner_is_the_matrix_polynomial():
    H = hermitian(0, 8, np.linspace(0.1, 1.0, 8))
    T = square(H)
    P = alg.polynomial_preconditioner(T, 3, "l_2", 0.1, 1.0)
    c = alg.polynomial_coefficients(3, "l_2", 0.1, 1.0)
    dense = sum(ck * np.linalg.matrix_power(H, k) for k, ck in enumerate(c))
    x = np.asarray(rand(SEED + 1, (8,)))
    assert (P.ishape, P.oshape) == (("N",), ("N",))
    # Horner form vs a sum of powers: rounding ~ eps sum |c_k| ~ 1e-14 of the scale
    want = dense @ x
    assert np.linalg.norm(P(x) - want) <= 1e-11 * np.linalg.norm(want)
    assert isinstance(alg.polynomial_preconditioner(T, -1), jl.Identity)


def test_lineax_solvers_run_on_operators():
    lx = pytest.importorskip("lineax")
    H = hermitian(0, 12, np.geomspace(1, 10, 12), np.float64)
    y = rand(SEED + 1, (12,), jnp.float64)
    op = alg.to_lineax(square(H), y, tags=lx.positive_semidefinite_tag)
    solution = lx.linear_solve(op, y, lx.CG(rtol=1e-12, atol=1e-12, max_steps=200))
    assert_solves(H, y, solution.value, 1e-10)
    G = np.asarray(rand(SEED + 2, (12, 12), jnp.float64)) + 5 * np.eye(12)  # not symmetric
    op = alg.to_lineax(square(G), jax.ShapeDtypeStruct((12,), jnp.float64))
    solution = jax.jit(lambda op, y: lx.linear_solve(op, y, lx.GMRES(rtol=1e-12, atol=1e-12)))(
        op, y
    )
    assert_solves(G, y, solution.value, 1e-10)


def test_bad_input():
    """A few representative messages; tests/bad_inputs/solvers.py has the full catalogue."""
    A = jl.Dense(rand(0, (3, 4)), "M N", "N", "M")
    with pytest.raises(ValueError, match=r"`A` must be square .* maps \(N\) to \(M\)"):
        cg(A, rand(1, (4,)))
    with pytest.raises(ValueError, match=r"`A` must be square"):  # not "expected dim N"
        cg(A, rand(1, (3,)))
    with pytest.raises(ValueError, match=r"`Dense` expected dim N with size 4"):
        cg(A.N, rand(1, (5,)))
    with pytest.raises(ValueError, match=r"max_num_iters=...\)` expects sizes of at least 1"):
        cg(A.N, rand(1, (4,)), max_num_iters=0)
    with pytest.raises(ValueError, match=r"x0 has shape \(3,\); y has shape \(4,\)"):
        cg(A.N, rand(1, (4,)), x0=rand(2, (3,)))
    with pytest.raises(ValueError, match=r"gtol=...\)` expects a tolerance >= 0; got -1"):
        cg(A.N, rand(1, (4,)), gtol=-1)
    with pytest.raises(ValueError, match=r"`power_method`: `A` must be square"):
        alg.power_method(A, rand(1, (4,)))
    with pytest.raises(ValueError, match=r"at most 4 singular values"):
        alg.singular_value_decomposition(A, rand(1, (4,)), 5)
    with pytest.raises(
        ValueError, match=r"degree-1 ifista polynomial is not positive on \[0.0, 2.0\]"
    ):
        alg.polynomial_coefficients(1, "ifista", 0.0, 2.0)  # p(x) = 2 - x


@pytest.mark.devices(8)
def test_cg_and_power_method_on_an_explicit_mesh():
    """Vectors sharded over an Explicit mesh (where `vdot` raises a sharding error): the
    solvers' inner products still work, and solve the problem."""
    mesh = jax.make_mesh((8,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    d = np.linspace(1.0, 10.0, 16)
    y = rand(SEED + 1, (16,), jnp.float64)
    with jax.set_mesh(mesh):
        ds, ys = (jax.device_put(a, jax.P("x")) for a in (jnp.asarray(d), y))
        got = cg(lambda v: ds * v, ys, max_num_iters=40, gtol=1e-10)
        _, lam = alg.power_method(lambda v: ds * v, ys, max_iters=500, tol=1e-12)
    assert got.converged
    assert_solves(np.diag(d), y, got.x, 2e-10)
    # ||A v|| approaches 10 as (9.4/10)^(2k); stopping at change 1e-12 leaves ~1e-11
    np.testing.assert_allclose(lam, 10.0, rtol=1e-6)


# torchlinops compatibility: signatures, positional call forms, return values, aliases

SOLVERS = ["conjugate_gradients", "power_method", "singular_value_decomposition",
           "polynomial_preconditioner"]  # fmt: skip


@pytest.mark.parametrize("name", SOLVERS)
def test_solver_signatures_bind_as_torchlinops(name):
    """torchlinops' parameters come first, with its names, order and kinds; jaxlinops'
    own parameters are keyword-only."""
    import inspect

    tl_alg = pytest.importorskip("torchlinops.alg")
    theirs = list(inspect.signature(getattr(tl_alg, name)).parameters.values())
    ours = list(inspect.signature(getattr(alg, name)).parameters.values())
    assert [(p.name, p.kind) for p in ours[: len(theirs)]] == [(p.name, p.kind) for p in theirs]
    assert all(p.kind is p.KEYWORD_ONLY for p in ours[len(theirs) :])


def test_torchlinops_module_aliases():
    """`alg.pcg`, `alg.poly`, `alg.powermethod`, `alg.svd` are modules, as in
    torchlinops, exporting jaxlinops' own functions under torchlinops' `__all__`."""
    import types

    tl_alg = pytest.importorskip("torchlinops.alg")
    for module in ("pcg", "poly", "powermethod", "svd"):
        ours, theirs = getattr(alg, module), getattr(tl_alg, module)
        assert isinstance(ours, types.ModuleType) and isinstance(theirs, types.ModuleType)
        assert ours.__all__ == theirs.__all__
        for name in ours.__all__:
            assert getattr(ours, name) is getattr(alg, name)


def dense_of(op, n, dtype=np.float64):
    """The matrix of `op` on vectors of length n, built column by column."""
    return np.stack([np.asarray(op(np.eye(n, dtype=dtype)[j])) for j in range(n)], axis=1)


def test_torchlinops_positional_calls_against_numpy():
    """Every torchlinops parameter passed positionally, in its order; the results against
    numpy on the operator's matrix (built column by column)."""
    B = jl.Dense(np.asarray(rand(SEED + 20, (9, 6), np.float64)), "M N", "N", "M")
    A = B.N + jl.Identity(B.N.ishape, B.N.oshape)  # eigenvalues >= 1: condition ~10
    H = dense_of(A, 6)
    y = np.asarray(rand(SEED + 21, (6,), np.float64))
    x = alg.conjugate_gradients(A, y, None, 50, 1e-12, 0.0, False, {"desc": "CG"})
    assert isinstance(x, jax.Array) and x.shape == (6,)
    assert_solves(H, y, x, 2e-12)
    # power method: (v, eigenvalue); gaps of the random matrix are ~10%: tol 1e-13 leaves
    # an eigenvalue error far below 1e-8
    v, lam = alg.power_method(A, np.ones(6), 2000, 0.0, 1e-13, None, None)
    w, V = np.linalg.eigh(H)
    np.testing.assert_allclose(lam, w[-1], rtol=1e-8)
    np.testing.assert_allclose(abs(np.vdot(v, V[:, -1])), 1.0, rtol=1e-6)
    # SVD: (U, S, Vh) of B
    U, S, Vh = alg.singular_value_decomposition(B, np.ones(6), 2, 2000, 1e-14, 0.0, None, None)
    Un, Sn, Vhn = np.linalg.svd(dense_of(B, 6))
    assert (U.shape, S.shape, Vh.shape) == ((9, 2), (2,), (2, 6))
    np.testing.assert_allclose(S, Sn[:2], rtol=1e-8)
    np.testing.assert_allclose(np.abs(np.sum(Vh * Vhn[:2], axis=1)), 1.0, rtol=1e-6)
    np.testing.assert_allclose(np.abs(np.sum(U * Un[:, :2], axis=0)), 1.0, rtol=1e-6)
    # polynomial preconditioner: (T, degree, norm, lower_eig, upper_eig)
    P = alg.polynomial_preconditioner(A, 2, "l_inf", 0.5, 1.01 * w[-1])
    c = alg.polynomial_coefficients(2, "l_inf", 0.5, 1.01 * w[-1])
    np.testing.assert_allclose(dense_of(P, 6), c[0] * np.eye(6) + c[1] * H + c[2] * H @ H)


def test_power_method_eps_divides_by_the_norm_plus_eps():
    """v <- A v / (||A v|| + eps), as torchlinops: v keeps the direction of the plain
    iteration, with norm λ / (λ + eps), so that λ = ||A v|| settles at |λ_1| - eps."""
    d = np.array([3.0, 1.0, 0.5, 0.25])
    v0 = np.ones(4)
    v, lam = alg.power_method(lambda v: d * v, v0, 40, 0.5, 0.0)
    v_plain, lam_plain = alg.power_method(lambda v: d * v, v0, 40, 0.0, 0.0)
    np.testing.assert_allclose(np.linalg.norm(v), lam / (lam + 0.5), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(v) / np.linalg.norm(v), v_plain, rtol=1e-12)
    # after 40 steps (1/3)^80 of the other components is left
    np.testing.assert_allclose([lam, lam_plain], [2.5, 3.0], rtol=1e-12)


def test_power_method_dim_as_an_axis_number_and_the_record():
    w = np.array([[1.0, -5.0, 2.0, 0.5], [3.0, 1.0, -0.5, 2.0], [0.1, 0.2, 0.3, 0.4]])
    info = alg.power_method(lambda v: w * v, np.ones((3, 4)), 400, 0.0, 1e-12, 1,
                            return_info=True)  # fmt: skip
    assert isinstance(info, alg.PowerMethodResult) and info.eigenvalue.shape == (3,)
    np.testing.assert_allclose(info.eigenvalue, np.abs(w).max(axis=1), rtol=1e-6)
    k = int(info.num_iters)
    assert info.eigenvalues.shape == (400, 3) and 2 < k < 400
    np.testing.assert_array_equal(info.eigenvalues[k - 1], info.eigenvalue)
    assert np.isnan(info.eigenvalues[k:]).all() and np.isfinite(info.eigenvalues[:k]).all()


def test_batched_svd_with_dim():
    """`dim` names the vectors' dims; a batch dim of A (here B) gives independent SVDs
    (torchlinops 0.8.3 raises a shape error on this call)."""
    W = np.asarray(rand(SEED + 22, (3, 5, 4), np.float64))
    A = jl.Dense(W, "B M N", "B N", "B M")
    info = alg.singular_value_decomposition(A, np.ones((3, 4)), 2, 3000, 1e-14, dim="N",
                                            return_info=True)  # fmt: skip
    U, S, Vh = info[:3]
    assert (U.shape, S.shape, Vh.shape) == ((3, 5, 2), (2, 3), (2, 3, 4))
    assert info.num_iters.shape == (2,) and info.eigenvalues.shape == (3000, 2, 3)
    for b in range(3):
        Un, Sn, Vhn = np.linalg.svd(W[b])
        np.testing.assert_allclose(S[:, b], Sn[:2], rtol=1e-8)
        low_rank = (np.asarray(U[b]) * np.asarray(S[:, b])) @ np.asarray(Vh[:, b])
        np.testing.assert_allclose(low_rank, (Un[:, :2] * Sn[:2]) @ Vhn[:2], atol=1e-6)


def test_cg_ltol_stops_where_the_loss_stagnates():
    """ltol: CG also stops after the first step that lowers the loss x^H H x - 2 Re x^H y
    by at most ltol times its decrease since x0; the losses here are numpy's, of the
    Krylov iterates. `converged` still reports the residual test (not met)."""
    H = hermitian(8, 12, np.geomspace(1, 100, 12))
    y = np.asarray(rand(SEED + 23, (12,)))
    loss = [0.0] + [
        np.real(np.vdot(x, H @ x) - 2 * np.vdot(x, y))
        for x in (krylov_iterate(H, y, np.zeros(12, complex), k) for k in range(1, 12))
    ]
    ratios = [(loss[k - 1] - loss[k]) / (loss[0] - loss[k]) for k in range(1, 12)]
    # ltol: the geometric midpoint of the widest gap between the ratios, so that it is
    # far from every ratio (not within rounding of one): the stop is well defined
    r = np.sort(ratios)
    gap = np.argmax(np.log(r[1:] / r[:-1]))
    ltol = float(np.sqrt(r[gap] * r[gap + 1]))
    want = 1 + next(k for k, r in enumerate(ratios) if r <= ltol)
    assert min(abs(np.log(np.array(ratios) / ltol))) > 0.1
    result = cg(square(H), y, None, 50, 1e-14, ltol)
    assert int(result.num_iters) == want and not result.converged
    assert want < int(cg(square(H), y, None, 50, 1e-14).num_iters)


def test_cg_disable_tracking_runs_every_iteration():
    """disable_tracking=True (torchlinops: no convergence check) runs max_num_iters steps
    although gtol is met sooner; the history and the report stay truthful."""
    d = np.linspace(1.0, 2.0, 6)
    y = np.ones(6)
    early = cg(lambda v: d * v, y, None, 5, 1e-2)
    assert int(early.num_iters) < 5
    full = cg(lambda v: d * v, y, None, 5, 1e-2, 0.0, True)
    assert int(full.num_iters) == 5 and full.converged
    assert np.isfinite(full.residual_norms).all()
    assert full.residual_norms[5] <= early.residual_norms[int(early.num_iters)]


def test_solvers_agree_with_torchlinops():
    """The same problems through torchlinops (float64 tensors). Both stop on their own
    rules: run CG until both are far below the compared tolerance, and the power method
    and SVD with tol=0 (all iterations, the same recurrence)."""
    torch = pytest.importorskip("torch")
    tl = pytest.importorskip("torchlinops")
    quiet = {"disable": True}
    rng = np.random.default_rng(SEED + 24)
    M = rng.standard_normal((9, 6))
    H = M.T @ M + np.eye(6)
    y = rng.standard_normal(6)
    ours = alg.conjugate_gradients(square(H), y, None, 30, 1e-13)
    tH = torch.from_numpy(H)
    theirs = tl.alg.conjugate_gradients(lambda v: tH @ v, torch.from_numpy(y), None, 30,
                                        1e-11, 1e-20, tqdm_kwargs=quiet)  # fmt: skip
    # both residuals <= 1e-11 ||y||-ish; cond(H) < 1e3: solutions within 1e-8
    np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-8)
    v0 = np.ones(6)
    v, lam = alg.power_method(square(H), v0, 60, 0.1, 0.0)
    tv, tlam = tl.alg.power_method(lambda v: tH @ v, torch.from_numpy(v0), 60, 0.1, 0.0,
                                   tqdm_kwargs=quiet)  # fmt: skip
    np.testing.assert_allclose(lam, tlam.numpy(), rtol=1e-10)
    np.testing.assert_allclose(v, tv.numpy(), rtol=1e-8, atol=1e-10)
    tB = tl.Dense(torch.from_numpy(M), ("M", "N"), ("N",), ("M",))
    U, S, Vh = alg.singular_value_decomposition(jl.Dense(M, "M N", "N", "M"), v0, 2, 500, 0.0)
    tU, tS, tVh = tl.alg.singular_value_decomposition(tB, torch.from_numpy(v0), 2, 500, 0.0,
                                                      tqdm_kwargs=quiet)  # fmt: skip
    np.testing.assert_allclose(S, tS.numpy(), rtol=1e-8)
    U, S, Vh = map(np.asarray, (U, S, Vh))
    np.testing.assert_allclose((U * S) @ Vh, (tU.numpy() * tS.numpy()) @ tVh.numpy(), atol=1e-8)


def test_real_data_with_a_complex_operator_under_strict_promotion():
    """The tests run with strict dtype promotion: float32 data and a complex64 operator
    still solve (in complex64), against numpy."""
    W = np.asarray(rand(SEED + 40, (5, 5), np.complex64)) + 4 * np.eye(5, dtype=np.complex64)
    A = jl.Dense(W, "M N", "N", "M")
    y = np.arange(1, 6, dtype=np.float32)
    x = alg.conjugate_gradients(A.N, y, max_num_iters=20)
    assert x.dtype == np.complex64
    want = np.linalg.solve(W.conj().T @ W, y.astype(np.complex128))
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-4, atol=1e-5)
