"""`fista` (jaxlinops.alg._fista): LASSO against coordinate descent in numpy and against
sigpy's `LinearLeastSquares`, the LASSO optimality conditions, the objective record, the
automatic step, batched systems, `jax.jit`/`jax.vmap`, derivatives by unrolling against
finite differences, and an operator split over 4 devices."""

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops.alg._fista import FISTAResult, fista
from jaxlinops.alg._prox import L1, NoOp
from jaxlinops.alg._prox_llr import NuclearNormBlocks


def dense(M) -> jl.Dense:
    return jl.Dense(jnp.asarray(M), ("M", "N"), ("N",), ("M",))


def lasso_objective(M, y, lam, x):
    return 0.5 * np.sum(np.abs(M @ x - y) ** 2) + lam * np.sum(np.abs(x))


def coordinate_descent(M, y, lam, sweeps=3000):
    """The LASSO solution by cyclic coordinate descent (exact minimisation over one entry
    at a time: a complex soft threshold), in numpy."""
    x = np.zeros(M.shape[1], M.dtype)
    r = y - M @ x
    norms = np.sum(np.abs(M) ** 2, axis=0)
    for _ in range(sweeps):
        for j in range(M.shape[1]):
            c = np.vdot(M[:, j], r) + norms[j] * x[j]
            new = c * max(0.0, 1 - lam / abs(c)) / norms[j] if abs(c) > 0 else 0 * c
            r = r - M[:, j] * (new - x[j])
            x[j] = new
    return x


@pytest.fixture(scope="module")
def underdetermined():
    """A 20 x 30 real LASSO with lambda = 0.5."""
    return np.asarray(rand(1, (20, 30), jnp.float64)), np.asarray(rand(2, (20,), jnp.float64)), 0.5


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.complex128])
def test_lasso_matches_coordinate_descent(dtype):
    """A tall (strongly convex) LASSO: FISTA's solution and objective equal the numpy
    coordinate-descent solution's, and the record's last entry is F(x)."""
    M, y, lam = np.asarray(rand(3, (40, 20), dtype)), np.asarray(rand(4, (40,), dtype)), 2.0
    want = coordinate_descent(M, y, lam, sweeps=300)
    result = fista(dense(M), jnp.asarray(y), L1(lam), max_num_iters=400, return_info=True)
    assert isinstance(result, FISTAResult) and result.x.dtype == jnp.dtype(dtype)
    np.testing.assert_allclose(result.x, want, atol=1e-8 * np.max(np.abs(want)))
    best = lasso_objective(M, y, lam, want)
    assert float(result.objective[-1]) == pytest.approx(best, rel=1e-12)
    assert float(result.objective[-1]) == pytest.approx(
        lasso_objective(M, y, lam, np.asarray(result.x)), rel=1e-12
    )
    assert result.objective.shape == (401,) and int(result.num_iters) == 400
    assert float(result.objective[0]) == pytest.approx(0.5 * np.sum(np.abs(y) ** 2))


def test_lasso_optimality_conditions(underdetermined):
    r"""At the solution of an underdetermined LASSO, $-A^H(Ax - y) \in \lambda \partial
    \|x\|_1$: equal to $\lambda\,\mathrm{sign}(x_i)$ on the support, at most $\lambda$ in
    magnitude off it; the support is sparse."""
    M, y, lam = underdetermined
    x = np.asarray(fista(dense(M), jnp.asarray(y), L1(lam), max_num_iters=3000))
    grad = M.T @ (M @ x - y)
    support = x != 0
    assert 0 < support.sum() < 20
    np.testing.assert_allclose(-grad[support], lam * np.sign(x[support]), atol=1e-7)
    assert np.all(np.abs(grad[~support]) <= lam + 1e-7)
    want = coordinate_descent(M, y, lam)
    assert lasso_objective(M, y, lam, x) == pytest.approx(lasso_objective(M, y, lam, want), 1e-10)


def test_objective_matches_sigpy(underdetermined):
    """sigpy's `LinearLeastSquares(A, y, proxg=L1Reg)` (its accelerated gradient method)
    reaches the same objective (within 1e-3 relative, as both converge)."""
    sp = pytest.importorskip("sigpy")
    M, y, lam = underdetermined
    # in complex arithmetic: sigpy's soft threshold returns complex once its numba kernel
    # has met complex data in the process (another test's), and cannot copy that into a
    # real iterate; the real problem's solution is the same
    A = sp.linop.MatMul((30, 1), M.astype(np.complex128))
    app = sp.app.LinearLeastSquares(
        A, y[:, None].astype(np.complex128), proxg=sp.prox.L1Reg((30, 1), lam),
        max_iter=1000, show_pbar=False,
    )  # fmt: skip
    theirs = lasso_objective(M, y, lam, np.real(app.run()[:, 0]))
    ours = fista(dense(M), jnp.asarray(y), L1(lam), max_num_iters=1000, return_info=True)
    assert float(ours.objective[-1]) == pytest.approx(theirs, rel=1e-3)
    assert float(ours.objective[-1]) <= theirs * (1 + 1e-9)


def test_default_step_and_explicit_step(underdetermined):
    """The automatic step is 1 / (1.1 L), L = ||A||^2, to the power method's accuracy; an
    explicit step is used as given; the objective ends below where it started."""
    M, y, lam = underdetermined
    L = float(np.linalg.norm(M, 2) ** 2)
    result = fista(dense(M), jnp.asarray(y), L1(lam), max_num_iters=5, return_info=True)
    assert float(result.step) == pytest.approx(1 / (1.1 * L), rel=1e-3)
    assert float(result.step) < 1 / L
    fixed = fista(dense(M), jnp.asarray(y), L1(lam), None, 5, 0.5 / L, return_info=True)
    assert float(fixed.step) == pytest.approx(0.5 / L)
    assert float(fixed.objective[-1]) < float(fixed.objective[0])


def test_plain_callable_operator(underdetermined):
    """A linear function with `x0`: its adjoint from `jax.linear_transpose`; the same
    iterates as the NamedLinop."""
    M, y, lam = underdetermined
    Mj = jnp.asarray(M)
    want = fista(dense(M), jnp.asarray(y), L1(lam), max_num_iters=50, step=0.01)
    got = fista(lambda x: Mj @ x, jnp.asarray(y), L1(lam), jnp.zeros(30), 50, 0.01)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    with pytest.raises(TypeError, match="pass `x0`"):
        fista(lambda x: Mj @ x, jnp.asarray(y), L1(lam))


def test_single_precision_and_mixed_dtypes():
    """Real float32 data, a complex64 operator and a float64 weight (strict promotion):
    the iterate is complex64, the objective float32."""
    M = rand(13, (12, 8), jnp.complex64)
    y = rand(14, (12,), jnp.float32)
    result = fista(dense(M), y, L1(jnp.float64(0.1)), max_num_iters=20, return_info=True)
    assert result.x.dtype == jnp.complex64 and result.objective.dtype == jnp.float32
    assert float(result.objective[-1]) < float(result.objective[0])


def test_identity_operator_gives_the_prox():
    """With A = I and step 1, every iterate is prox_g(y) (LLR on a (frames, Nx, Ny) array)."""
    y = rand(5, (3, 4, 4), jnp.complex128)
    g = NuclearNormBlocks(0.7, (2, 2))
    got = fista(jl.Identity(("T", "Nx", "Ny")), y, g, max_num_iters=3, step=1.0)
    np.testing.assert_allclose(got, g(y, 1.0), atol=1e-12)


def test_batched_systems_and_vmap():
    """`batch_dims`: each system of a batched Dense gets its own step, objective and
    solution, as if solved alone; `jax.vmap` over the data and `jax.jit` agree."""
    M, y = rand(6, (3, 12, 8), jnp.float64), rand(7, (3, 12), jnp.float64)
    M = M * jnp.array([1.0, 2.0, 0.5])[:, None, None]
    A = jl.Dense(M, ("B", "M", "N"), ("B", "N"), ("B", "M"))
    steps = 1 / (1.1 * jnp.linalg.norm(M, 2, axis=(1, 2)) ** 2)

    run = jax.jit(lambda A, y: fista(A, y, L1(0.3), None, 60, batch_dims="B", return_info=True))
    result = run(A, y)
    np.testing.assert_allclose(result.step, steps, rtol=1e-3)
    assert result.objective.shape == (61, 3)
    for b in range(3):
        alone = fista(dense(M[b]), y[b], L1(0.3), None, 60, result.step[b], return_info=True)
        np.testing.assert_allclose(result.x[b], alone.x, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(result.objective[:, b], alone.objective, rtol=1e-10)
    same = fista(A, y, L1(0.3), None, 60, result.step, batch_dims=0)
    np.testing.assert_allclose(same, result.x, rtol=1e-12, atol=1e-14)
    data = jnp.stack([y[0], 2 * y[0]])
    mapped = jax.vmap(lambda d: fista(dense(M[0]), d, L1(0.3), None, 60, 0.01))(data)
    np.testing.assert_allclose(mapped[1], fista(dense(M[0]), data[1], L1(0.3), None, 60, 0.01))


def directional(loss, args, k, direction, h=1e-6):
    plus, minus = list(args), list(args)
    plus[k], minus[k] = args[k] + h * direction, args[k] - h * direction
    return (loss(*plus) - loss(*minus)) / (2 * h)


def test_gradient_wrt_data_and_operator_matches_fd():
    """Reverse mode through the unrolled iterations, w.r.t. `y` and the (complex) matrix
    inside `A`: Re <grad, d> equals central finite differences along random d."""
    M, y = rand(8, (15, 10), jnp.complex128), rand(9, (15,), jnp.complex128)
    target = rand(10, (10,), jnp.complex128)

    def loss(M, y):
        x = fista(dense(M), y, L1(0.5), None, 40, 0.02)
        return jnp.sum(jnp.abs(x - target) ** 2)

    args = (M, y)
    grads = jax.jit(jax.grad(loss, (0, 1)))(*args)
    for k, g in enumerate(grads):
        d = rand(20 + k, args[k].shape, jnp.complex128)
        want = directional(jax.jit(loss), args, k, d)
        got = jnp.sum(jnp.real(g * d))
        assert abs(got - want) <= 1e-6 * abs(want), (k, float(got), float(want))


@pytest.mark.devices(4)
def test_operator_split_over_four_devices():
    """Coil SENSE split one coil per device (`create_batched_linop`) under `jax.jit`: the
    same solution, and the same gradient w.r.t. the data, as the unsplit operator."""
    maps, b = rand(11, (4, 6, 6), jnp.complex128), rand(12, (4, 6, 6), jnp.complex128)
    S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    A = jl.FFT(2, "C", norm="ortho") @ S
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:4])
    split = jl.create_batched_linop(A, spec)

    def loss(A, b):
        x = fista(A, b, L1(0.2), None, 20, 0.05)
        return jnp.sum(jnp.abs(x) ** 2), x

    (want, x_want), g_want = jax.value_and_grad(loss, 1, has_aux=True)(A, b)
    (got, x_got), g_got = jax.jit(jax.value_and_grad(loss, 1, has_aux=True))(split, b)
    np.testing.assert_allclose(x_got, x_want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g_got, g_want, rtol=1e-10, atol=1e-12)
    auto = jax.jit(lambda A, b: fista(A, b, L1(0.2), None, 5, return_info=True).step)
    assert float(auto(split, b)) == pytest.approx(float(auto(A, b)), rel=1e-10)


def test_bad_arguments(underdetermined):
    M, y, lam = underdetermined
    A, y = dense(M), jnp.asarray(y)
    with pytest.raises(TypeError, match=r"`fista\(prox=...\)` expects a jl.alg prox"):
        fista(A, y, lambda v, t: v)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`fista\(step=...\)` expects a step > 0"):
        fista(A, y, L1(lam), step=0.0)
    with pytest.raises(ValueError, match="but y has shape"):
        fista(A, jnp.ones(7), L1(lam), x0=jnp.zeros(30))
    with pytest.raises(ValueError, match="max_num_iters"):
        fista(A, y, NoOp(), max_num_iters=0)
    with pytest.raises(TypeError, match="expects a real number or array"):
        fista(A, y, L1(lam), step=1j)  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="batch shape"):
        fista(A, y, L1(lam), step=jnp.ones(3))


def loop_primitives(fn, *args) -> set[str]:
    """The primitives inside the `lax.scan` of `fn`'s program (nested jaxprs included)."""
    found: set[str] = set()

    def walk(jaxpr, inside):
        for eqn in jaxpr.eqns:
            if inside:
                found.add(eqn.primitive.name)
            for sub in jax.extend.core.jaxprs_in_params(eqn.params):
                walk(sub, inside or eqn.primitive.name == "scan")

    walk(jax.make_jaxpr(fn)(*args).jaxpr, False)
    return found


@pytest.mark.parametrize("toeplitz", [True, False])
def test_the_loop_runs_the_operators_own_normal(toeplitz):
    """With a NUFFT SENSE model built with `toeplitz=True`, the iterations apply its
    Toeplitz normal (FFTs, no scatter-add of gridding inside the loop, with the history
    recorded or not); without, its gridding. The two solves agree to the NUFFT's accuracy."""
    rng = np.random.default_rng(0)
    n, coils = 12, 3
    locs = rng.uniform(-n / 2, n / 2, (150, 2))
    maps = rand(40, (coils, n, n))
    F = jl.NUFFT(locs, (n, n), "K", batch_shape="C", toeplitz=toeplitz, oversamp=2.0,
                 width=6.0)  # fmt: skip
    A = F @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    y = A(rand(41, (n, n)))
    for record in (False, True):
        run = lambda A, y: fista(A, y, L1(0.05), None, 4, 1e-3, return_info=record)  # noqa: E731
        inside = loop_primitives(run, A, y)
        assert "fft" in inside
        assert ("scatter-add" in inside) != toeplitz, sorted(inside)
    x = fista(A, y, L1(0.05), None, 30, 1e-3)
    if toeplitz:
        exact = jl.NUFFT(locs, (n, n), "K", batch_shape="C", oversamp=2.0, width=6.0)
        B = exact @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
        want = fista(B, y, L1(0.05), None, 30, 1e-3)
        np.testing.assert_allclose(x, want, atol=1e-4 * np.abs(want).max())
