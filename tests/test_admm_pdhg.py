r"""`jl.alg.admm` and `jl.alg.pdhg` on $\min_x \tfrac12 \|A x - y\|^2 + g(G x)$: against a
plain-numpy ADMM run to convergence (exact $x$-solves), scipy's NNLS and sigpy; their
optimality conditions; the Toeplitz normal inside ADMM's CG; derivatives through the
unrolled iterations against finite differences; jit, vmap, `batch_dims` and a coil-split
operator over 4 devices; argument errors.

The proxes are defined here (a complex soft threshold and a box projection), so that these
tests depend on the `AbstractProx` interface only.

Tolerances: the references are converged to residuals below 1e-13; the solvers run
enough iterations (ADMM: 400, exact 10-step CG on 10 unknowns; PDHG: 3000) to reach
~1e-10 on these well-conditioned problems, and the checks ask for 1e-7 on $x$ and 1e-9
on the objective (relative).
"""

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from helpers import rand

import jaxlinops as jl
from jaxlinops.alg import _admm
from jaxlinops.alg._admm import admm
from jaxlinops.alg._pdhg import pdhg
from jaxlinops.alg._prox_base import AbstractProx

LAM = 4.0
SOLVERS: dict[str, Callable[..., Any]] = {
    "admm": lambda *a, **k: admm(*a, rho=5.0, max_num_iters=400, max_cg_iters=10, **k),
    "pdhg": lambda *a, **k: pdhg(*a, max_num_iters=3000, **k),
}


class SoftL1(AbstractProx):
    r"""$g(x) = \lambda \sum_i |x_i|$ (complex modulus): soft thresholding."""

    lam: jax.Array

    def prox(self, v, step):
        mag = jnp.abs(v)
        t = jnp.asarray(step).astype(mag.dtype) * self.lam.astype(mag.dtype)
        return v * (jnp.maximum(mag - t, 0) / jnp.where(mag > 0, mag, 1)).astype(v.dtype)

    def value(self, x):
        mag = jnp.abs(x)
        return self.lam.astype(mag.dtype) * jnp.sum(mag)


class NonNegative(AbstractProx):
    """The indicator of x >= 0 (real x): the projection."""

    def prox(self, v, step):
        return jnp.maximum(v, 0)

    def value(self, x):
        return jnp.where(jnp.all(x >= 0), 0.0, jnp.inf).astype(x.dtype)


def dense(M, shape="M N"):
    """`jl.Dense` of the matrix `M` with dims `"[batch] out in"`."""
    *batch, out, inp = shape.split()
    return jl.Dense(jnp.asarray(M), shape, (*batch, inp), (*batch, out))


def difference_matrix(n):
    """The 1-D forward difference, (n - 1, n)."""
    return np.eye(n, k=1)[:-1] - np.eye(n)[:-1]


def numpy_admm(M, y, D, lam, rho=1.0, iters=50000):
    """Plain-numpy scaled ADMM with exact x-solves, until its residuals are below 1e-14."""
    inverse = np.linalg.inv(M.conj().T @ M + rho * D.T @ D)
    MHy = M.conj().T @ y
    z = u = np.zeros(D.shape[0], complex)
    for _ in range(iters):
        x = inverse @ (MHy + rho * D.T @ (z - u))
        v, z_prev = D @ x + u, z
        mag = np.abs(v)
        z = v * np.maximum(mag - lam / rho, 0) / np.where(mag > 0, mag, 1)
        u = u + D @ x - z
        if max(np.linalg.norm(D @ x - z), rho * np.linalg.norm(D.T @ (z - z_prev))) < 1e-14:
            break
    return x, 0.5 * np.linalg.norm(M @ x - y) ** 2 + lam * np.abs(D @ x).sum()


@pytest.fixture(scope="module")
def problem():
    """Complex A (20 x 10), y; G: identity (lasso) or a 1-D forward difference (TV)."""
    M, y = np.asarray(rand(1, (20, 10))), np.asarray(rand(2, (20,)))
    return M, y


def check_optimality(M, y, D, x, q, lam):
    """0 = A^H (A x - y) + G^H q with |q_i| <= lam, q_i = lam (Gx)_i / |(Gx)_i| off zero."""
    stationarity = M.conj().T @ (M @ x - y) + D.T @ q
    assert np.linalg.norm(stationarity) <= 1e-6 * np.linalg.norm(M.conj().T @ y)
    assert np.all(np.abs(q) <= lam * (1 + 1e-6))
    Dx = D @ x
    on = np.abs(Dx) > 1e-6
    assert on.any() and (~on).any()  # the problem is non-trivial: some zeros, some not
    np.testing.assert_allclose(q[on], lam * Dx[on] / np.abs(Dx[on]), rtol=1e-5)


@pytest.mark.parametrize("solver", sorted(SOLVERS))
@pytest.mark.parametrize("G", ["identity", "difference"])
def test_converges_to_the_numpy_reference_with_optimality(problem, G, solver):
    M, y = problem
    D = np.eye(10) if G == "identity" else difference_matrix(10)
    x_ref, obj_ref = numpy_admm(M, y, D, LAM)
    op = None if G == "identity" else dense(D, "D N")
    result = SOLVERS[solver](dense(M), jnp.asarray(y), SoftL1(jnp.asarray(LAM)), op,
                             return_info=True)  # fmt: skip
    x = np.asarray(result.x)
    np.testing.assert_allclose(x, x_ref, atol=1e-7 * np.abs(x_ref).max())
    assert abs(float(result.objective[-1]) - obj_ref) <= 1e-9 * obj_ref
    assert result.objective.shape == result.primal_residuals.shape == (len(result.objective),)
    assert float(result.primal_residuals[-1]) < 1e-7 and float(result.dual_residuals[-1]) < 1e-7
    # the dual variable: q = rho u (ADMM, rho = 5), q (PDHG)
    q = np.asarray(5 * result.u if solver == "admm" else result.q)
    check_optimality(M, y, D, x, q, LAM)


def test_admm_and_pdhg_agree_on_real_data_with_a_constraint():
    """Non-negative least squares (real data, an indicator g): both equal scipy's NNLS.
    A float32 `x0` with float64 data solves in float64."""
    M, y = np.asarray(rand(3, (20, 10), np.float64)), np.asarray(rand(4, (20,), np.float64))
    want, _ = scipy.optimize.nnls(M, y)
    assert 0 < np.count_nonzero(want) < 10
    x0 = {"admm": np.zeros(10, np.float32), "pdhg": None}
    for name, solver in SOLVERS.items():
        x = solver(dense(M), jnp.asarray(y), NonNegative(), x0=x0[name])
        assert x.dtype == jnp.float64
        np.testing.assert_allclose(x, want, atol=1e-7)


def test_single_precision(problem):
    """complex64 data: the solvers stay in complex64 (strict promotion) and reach the
    reference to single precision; PDHG given `tau` only (sigma from ||K||)."""
    M, y = problem
    x_ref, _ = numpy_admm(M, y, np.eye(10), LAM)
    A, b = dense(M.astype(np.complex64)), jnp.asarray(y, jnp.complex64)
    g = SoftL1(jnp.asarray(LAM, jnp.float32))
    for x in (
        admm(A, b, g, rho=5.0, max_num_iters=300, max_cg_iters=10),
        pdhg(A, b, g, tau=0.005, max_num_iters=1000),
    ):
        assert x.dtype == jnp.complex64
        np.testing.assert_allclose(x, x_ref, atol=1e-4 * np.abs(x_ref).max())


@pytest.mark.parametrize("solver", ["ADMM", "PrimalDualHybridGradient"])
def test_sigpy_reaches_the_same_objective(problem, solver):
    """sigpy's LinearLeastSquares on the TV-like problem: the objective of its solution
    equals ours (1e-3 relative: sigpy's defaults, 500 iterations)."""
    sp = pytest.importorskip("sigpy")
    M, y = problem
    D = difference_matrix(10)
    x = sp.app.LinearLeastSquares(
        sp.linop.MatMul((10, 1), M), y[:, None], proxg=sp.prox.L1Reg((9, 1), LAM),
        G=sp.linop.MatMul((10, 1), D.astype(complex)), solver=solver, max_iter=500,
        show_pbar=False,
    ).run()[:, 0]  # fmt: skip
    sigpy_objective = 0.5 * np.linalg.norm(M @ x - y) ** 2 + LAM * np.abs(D @ x).sum()
    _, ours = numpy_admm(M, y, D, LAM)
    got = SOLVERS["admm"](dense(M), jnp.asarray(y), SoftL1(jnp.asarray(LAM)), dense(D, "D N"),
                          return_info=True).objective[-1]  # fmt: skip
    assert abs(float(got) - ours) <= 1e-9 * ours
    assert abs(sigpy_objective - ours) <= 1e-3 * ours


def test_cg_gets_the_toeplitz_normal(monkeypatch):
    """With a Toeplitz NUFFT, the operator that ADMM hands to CG is `A.N + rho G.N` with
    `A.N` the Toeplitz-embedded normal (no NUFFT inside); the result equals the plain
    NUFFT's to the NUFFT's accuracy. With a progress bar."""
    seen = []

    def spy(A, *args, **kwargs):
        seen.append(A)
        return jl.alg.conjugate_gradients(A, *args, **kwargs)

    monkeypatch.setattr(_admm, "conjugate_gradients", spy)
    grid, locs = (8, 8), rand(10, (40, 2), np.float64) * 3.5
    maps = rand(11, (2, *grid))

    def sense(toeplitz):
        F = jl.NUFFT(locs, grid, "R", batch_shape="C", oversamp=2.0, width=6, toeplitz=toeplitz)
        return F @ jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))

    A = sense(True)
    b = A(rand(12, grid))
    x = admm(A, b, SoftL1(jnp.asarray(0.1)), max_num_iters=20, progress=True)
    normal = seen[0]
    assert type(normal).__name__ == "Add" and "NUFFT" not in repr(normal)
    kinds = [type(op).__name__ for op in normal.linops[0].flatten()]
    assert kinds == ["Dense", "Pad", "FFT", "Diagonal", "Adjoint", "Crop", "Dense"]
    assert jax.tree.structure(normal.linops[0]) == jax.tree.structure(A.N)
    plain = admm(sense(False), b, SoftL1(jnp.asarray(0.1)), max_num_iters=20)
    assert "NUFFT" in repr(seen[-1].linops[0])
    assert float(jnp.linalg.norm(x - plain)) <= 1e-4 * float(jnp.linalg.norm(plain))


def directional(loss, args, k, direction, h=1e-6):
    plus, minus = list(args), list(args)
    plus[k], minus[k] = args[k] + h * direction, args[k] - h * direction
    return (loss(*plus) - loss(*minus)) / (2 * h)


@pytest.mark.parametrize("solver", ["admm", "pdhg", "pdhg-default-steps"])
def test_gradients_through_the_iterations_match_finite_differences(solver):
    """d/dM and d/dy of |x - target|^2, x after a few iterations (unrolled: the derivative
    of the truncated algorithm). With default steps PDHG's sigma, tau depend on M through
    the power method (its eigenvalue's Hellmann-Feynman derivative)."""
    M, y, target = rand(20, (6, 4)), rand(21, (6,)), rand(22, (4,))
    D = jnp.asarray(difference_matrix(4))
    g = SoftL1(jnp.asarray(0.3))
    Mn, Dn = np.asarray(M), np.asarray(D)
    assert 0.015 * np.linalg.norm(Mn.conj().T @ Mn + Dn.T @ Dn, 2) < 1  # sigma tau ||K||^2

    def loss(M, y):
        A, G = dense(M), dense(D, "D N")
        if solver == "admm":
            x = admm(A, y, g, G, rho=0.7, max_num_iters=6, max_cg_iters=3)
        elif solver == "pdhg":
            x = pdhg(A, y, g, G, sigma=1.0, tau=0.015, max_num_iters=15)
        else:
            x = pdhg(A, y, g, G, max_num_iters=15)
        return jnp.sum(jnp.abs(x - target) ** 2)

    grads = jax.grad(loss, (0, 1))(M, y)
    for k, grad in enumerate(grads):
        d = rand(30 + k, grad.shape)
        want = directional(loss, (M, y), k, d)
        got = jnp.sum(jnp.real(grad * d))  # JAX's convention for complex arguments
        assert abs(got - want) <= 1e-5 * abs(want), (k, float(got), float(want))


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_batch_dims_vmap_and_jit_agree(solver):
    """Two systems: `batch_dims="T"` (each with its own CG steps or PDHG steps, and its
    own objective) equals `jax.jit(jax.vmap(...))` over the systems."""
    W, y = rand(40, (2, 20, 10)), rand(41, (2, 20))
    D = difference_matrix(10)
    run = SOLVERS[solver]

    def one(W, y):
        return run(dense(W), y, SoftL1(jnp.asarray(LAM)), dense(D, "D N"), return_info=True)

    mapped = jax.jit(jax.vmap(one))(W, y)
    Dt = np.broadcast_to(D, (2, *D.shape))
    batched = run(dense(W, "T M N"), y, SoftL1(jnp.asarray(LAM)), dense(Dt, "T D N"),
                  batch_dims="T", return_info=True)  # fmt: skip
    n = len(batched.objective)
    assert batched.objective.shape == batched.primal_residuals.shape == (n, 2)
    # PDHG's steps come from power iterations started at different random vectors (one of
    # shape (2, 10), two of shape (10,)), stopped at a relative change of 1e-6: the
    # histories agree to ~1e-6, the converged solutions to 1e-9
    rtol = 1e-9 if solver == "admm" else 1e-5
    for name, got, want in zip(type(batched)._fields, batched, mapped):
        want = want.T if name in ("objective", "primal_residuals", "dual_residuals") else want
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=name)
    np.testing.assert_allclose(batched.x, mapped.x, rtol=1e-9, atol=1e-9)


@pytest.mark.devices(4)
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_coil_split_operator_equals_unsplit(solver):
    """Cartesian SENSE with 4 coils split over 4 devices (`create_batched_linop`), under
    jit: the same solution as the unsplit operator."""
    maps, b = rand(50, (4, 8, 8)), rand(51, (4, 8, 8))
    S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    A = jl.FFT(2, "C", centered=True) @ S
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:4])
    split = jl.create_batched_linop(A, spec)
    if solver == "admm":
        run = lambda A, b: admm(A, b, SoftL1(jnp.asarray(0.5)), max_num_iters=10)
    else:
        run = lambda A, b: pdhg(A, b, SoftL1(jnp.asarray(0.5)), max_num_iters=30)
    want = run(A, b)
    got = jax.jit(run)(split, b)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12 * float(jnp.abs(want).max()))


def test_bad_arguments():
    A, y, g = dense(np.ones((3, 2))), jnp.ones(3), SoftL1(jnp.asarray(1.0))
    for name, solver in (("admm", admm), ("pdhg", pdhg)):
        with pytest.raises(TypeError, match=rf"`{name}`: `prox` must be .*AbstractProx.*got"):
            solver(A, y, lambda v, t: v)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=rf"`{name}`: `A` must be a NamedLinop.*ndarray"):
            solver(np.ones((3, 2)), y, g)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=rf"`{name}`: y must have the shape of .*\(4,\)"):
            solver(A, jnp.ones(4), g)
        with pytest.raises(
            ValueError, match=rf"`{name}`: `x0` must have the shape .*\(2,\).*\(3,\)"
        ):
            solver(A, y, g, x0=jnp.ones(3))
        with pytest.raises(ValueError, match=rf"`{name}`: `A` and `G` must take the same"):
            solver(A, y, g, dense(np.ones((2, 2)), "D K"))
    with pytest.raises(ValueError, match=r"`admm\(rho=...\)` expects a real number > 0; got 0"):
        admm(A, y, g, rho=0.0)
    with pytest.raises(ValueError, match=r"`pdhg\(tau=...\)` expects a real number > 0; got -1"):
        pdhg(A, y, g, sigma=1.0, tau=-1.0)
    with pytest.raises(TypeError, match=r"`pdhg\(sigma=...\)` expects a real number"):
        pdhg(A, y, g, sigma=1j)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`admm\(max_cg_iters=...\)`"):
        admm(A, y, g, max_cg_iters=0)


def numpy_isotropic_tv(M, y, n, lam, rho=1.0, iters=50000):
    """Plain-numpy ADMM for (1/2)|M x - y|^2 + lam sum_p |(Dx)_p|_2 on an n x n image, D the
    periodic forward differences along both axes (two rows per pixel, from np.roll),
    shrinking each pixel's 2-vector of differences as a group; until converged to 1e-14."""
    eye = np.eye(n * n).reshape(n * n, n, n)
    D = np.concatenate(
        [(np.roll(eye, -1, axis=a) - eye).reshape(n * n, -1).T for a in (1, 2)]
    )  # (2 n^2, n^2): direction-major, like FiniteDifference's stacked output
    inverse = np.linalg.inv(M.conj().T @ M + rho * D.T @ D)
    MHy = M.conj().T @ y
    z = u = np.zeros(2 * n * n, complex)
    for _ in range(iters):
        x = inverse @ (MHy + rho * D.T @ (z - u))
        v, z_prev = (D @ x + u).reshape(2, -1), z
        norm = np.sqrt(np.sum(np.abs(v) ** 2, axis=0))
        z = (v * np.maximum(norm - lam / rho, 0) / np.where(norm > 0, norm, 1)).ravel()
        u = u + D @ x - z
        if max(np.linalg.norm(D @ x - z), rho * np.linalg.norm(D.T @ (z - z_prev))) < 1e-14:
            break
    tv = np.sum(np.sqrt(np.sum(np.abs((D @ x).reshape(2, -1)) ** 2, axis=0)))
    return x.reshape(n, n), 0.5 * np.linalg.norm(M @ x - y) ** 2 + lam * tv


@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_isotropic_total_variation_equals_the_numpy_reference(solver):
    """`jl.alg.GroupL1` on `jl.FiniteDifference`'s stacked output (isotropic TV), a complex
    4 x 4 image seen through a random 24 x 16 matrix: ADMM and PDHG reach the solution and
    objective of a numpy ADMM that shrinks each pixel's gradient vector."""
    n, lam = 4, 1.5
    M, y = np.asarray(rand(5, (24, n * n))), np.asarray(rand(6, (24,)))
    x_ref, obj_ref = numpy_isotropic_tv(M, y, n, lam)
    A = jl.Dense(jnp.asarray(M.reshape(24, n, n)), "K Nx Ny", "Nx Ny", "K")
    D = jl.FiniteDifference("Nx Ny")
    result = SOLVERS[solver](A, jnp.asarray(y), jl.alg.GroupL1(lam), D, return_info=True)
    np.testing.assert_allclose(result.x, x_ref, atol=1e-7 * np.abs(x_ref).max())
    assert abs(float(result.objective[-1]) - obj_ref) <= 1e-9 * obj_ref
