"""Derivatives of `jl.alg.conjugate_gradients` (implicit and unrolled) w.r.t. the data, the
coil maps, a regularisation weight, the density compensation and the trajectory, against
central finite differences in float64 and a dense `jnp.linalg.solve` reference.

Tolerances: the solves run to a residual of 1e-12 on problems with condition numbers
below ~100, so a solve's error is below ~1e-10 relative and its finite difference with a
step of 1e-6 (relative) below ~1e-4 ... in the worst case; typically far less. Central
differences of a smooth float64 loss at that step err by ~1e-10 (rounding, eps / h) plus
~1e-12 (truncation, h^2). The checks ask for 1e-4, the issue's bound.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl

alg = jl.alg
TIGHT = dict(max_num_iters=200, gtol=1e-12)
GRID = (8, 8)


def directional(loss, args, k, direction, h=1e-6):
    """The central finite difference of `loss` along `direction` in argument `k`, the step
    `h` relative to the argument's size."""
    step = h * max(float(jnp.max(jnp.abs(args[k]))), 1.0)
    plus, minus = list(args), list(args)
    plus[k], minus[k] = args[k] + step * direction, args[k] - step * direction
    return (loss(*plus) - loss(*minus)) / (2 * step)


def random_direction(seed, like):
    return rand(seed, jnp.shape(like), jnp.result_type(like))


def assert_gradient_matches_fd(loss, args, seed, rel=1e-4, argnums=None):
    """For each differentiable argument: Re <grad, d> (JAX's convention for a complex
    argument: the gradient is the conjugate Wirtinger derivative, doubled) equals the
    finite difference along a random `d`."""
    argnums = tuple(range(len(args))) if argnums is None else argnums
    grads = jax.grad(loss, argnums)(*args)
    for i, (k, g) in enumerate(zip(argnums, grads)):
        d = random_direction(seed + i, args[k])
        want = directional(loss, args, k, d)
        got = jnp.sum(jnp.real(g * d))
        assert abs(got - want) <= rel * abs(want), (k, float(got), float(want))


def sense(maps, reg):
    """Cartesian SENSE: A = FFT @ maps, the normal operator A^H A + reg I."""
    S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    A = jl.FFT(2, "C", centered=True) @ S
    return A, A.N + reg * jl.Identity(("Nx", "Ny"), A.N.oshape)


def nufft_sense(locs, maps, toeplitz):
    S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
    F = jl.NUFFT(locs, GRID, "R", batch_shape="C", oversamp=2.0, width=6, toeplitz=toeplitz)
    return F @ S


def cartesian_loss(maps, b, reg, target, **kwargs):
    A, N = sense(maps, reg)
    x = alg.conjugate_gradients(N, A.H(b), **TIGHT, **kwargs)
    return jnp.sum(jnp.abs(x - target) ** 2)


@pytest.fixture(scope="module")
def cartesian():
    maps = rand(1, (3, *GRID), jnp.complex128)
    b = rand(2, (3, *GRID), jnp.complex128)
    return maps, b, jnp.float64(0.5), rand(3, GRID, jnp.complex128)


@pytest.mark.parametrize("adjoint", [alg.ImplicitAdjoint(), alg.UnrolledAdjoint()])
def test_cg_gradient_wrt_data_maps_and_weight_matches_fd(cartesian, adjoint):
    maps, b, reg, target = cartesian

    def loss(maps, b, reg):
        return cartesian_loss(maps, b, reg, target, adjoint=adjoint)

    assert_gradient_matches_fd(loss, (maps, b, reg), seed=10)


def test_cg_gradient_equals_the_dense_solve_gradient(cartesian):
    """The reference differentiates `jnp.linalg.solve` of the dense normal matrix, built
    column by column from the operator (no CG anywhere); jit and eager agree."""
    maps, b, reg, target = cartesian

    def dense_loss(maps, b, reg):
        A, N = sense(maps, reg)
        n = int(np.prod(GRID))
        columns = jax.vmap(lambda e: N(e.reshape(GRID)).ravel())(jnp.eye(n, dtype=maps.dtype))
        x = jnp.linalg.solve(columns.T, A.H(b).ravel()).reshape(GRID)
        return jnp.sum(jnp.abs(x - target) ** 2)

    def loss(maps, b, reg):
        return cartesian_loss(maps, b, reg, target)

    want = jax.grad(dense_loss, (0, 1, 2))(maps, b, reg)
    eager = jax.grad(loss, (0, 1, 2))(maps, b, reg)
    jitted = jax.jit(jax.grad(loss, (0, 1, 2)))(maps, b, reg)
    for w, e, j in zip(want, eager, jitted):
        np.testing.assert_allclose(e, w, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(w))))
        np.testing.assert_allclose(j, e, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(w))))


def test_cg_forward_mode_matches_fd(cartesian):
    maps, b, reg, target = cartesian
    d = random_direction(20, maps)

    def loss(maps):
        return cartesian_loss(maps, b, reg, target)

    _, got = jax.jvp(loss, (maps,), (d,))
    want = directional(lambda m: loss(m), (maps,), 0, d)
    assert abs(got - want) <= 1e-4 * abs(want)


@pytest.mark.parametrize("toeplitz", [False, True])
def test_cg_gradient_wrt_trajectory_maps_and_dcf_matches_fd(toeplitz):
    """Non-Cartesian SENSE with density compensation: x solves (A^H D A + reg I) x =
    A^H D b. With `toeplitz=True` the normal is the embedded convolution, whose kernel is
    itself a function of the trajectory and of the dcf."""
    locs = rand(30, (24, 2), jnp.float64) * 3.5
    maps = rand(31, (2, *GRID), jnp.complex128)
    dcf = 1.0 + jnp.abs(rand(32, (24,), jnp.float64))
    b = rand(33, (2, 24), jnp.complex128)
    target = rand(34, GRID, jnp.complex128)

    def loss(locs, maps, dcf):
        A = nufft_sense(locs, maps, toeplitz)
        D = jl.Diagonal(dcf, ("...", "R"))
        N = A.normal(D) + 0.5 * jl.Identity(("Nx", "Ny"), A.N.oshape)
        x = alg.conjugate_gradients(N, A.H(D(b)), **TIGHT)
        return jnp.sum(jnp.abs(x - target) ** 2)

    if toeplitz:  # the fast path: no NUFFT inside the normal
        A = nufft_sense(locs, maps, True)
        assert "NUFFT" not in repr(A.normal(jl.Diagonal(dcf, ("...", "R"))))
    assert_gradient_matches_fd(loss, (locs, maps, dcf), seed=40)


def test_unrolled_gradient_is_that_of_the_truncated_solver(cartesian):
    """Three iterations, far from converged: the unrolled derivative is the truncated
    solver's (finite differences of the same truncated solver), and the implicit one, the
    exact solution's, differs from it."""
    maps, b, reg, target = cartesian
    few = dict(max_num_iters=3, disable_tracking=True)

    def loss(maps, adjoint):
        A, N = sense(maps, reg)
        x = alg.conjugate_gradients(N, A.H(b), **few, adjoint=adjoint)
        return jnp.sum(jnp.abs(x - target) ** 2)

    d = random_direction(50, maps)
    want = directional(lambda m: loss(m, alg.UnrolledAdjoint()), (maps,), 0, d)
    unrolled = jnp.sum(jnp.real(jax.grad(loss)(maps, alg.UnrolledAdjoint()) * d))
    implicit = jnp.sum(jnp.real(jax.grad(loss)(maps, alg.ImplicitAdjoint()) * d))
    assert abs(unrolled - want) <= 1e-4 * abs(want)
    assert abs(implicit - want) > 1e-2 * abs(want)


def test_adjoint_solve_settings_are_used(cartesian):
    """A one-iteration adjoint solve gives a rough gradient; the default, an accurate one."""
    maps, b, reg, target = cartesian

    def grad(adjoint):
        return jax.grad(cartesian_loss, 1)(maps, b, reg, target, adjoint=adjoint)

    exact, rough = grad(alg.ImplicitAdjoint()), grad(alg.ImplicitAdjoint(max_num_iters=1))
    tight = grad(alg.ImplicitAdjoint(gtol=1e-13, max_num_iters=300))
    scale = float(jnp.max(jnp.abs(exact)))
    assert float(jnp.max(jnp.abs(rough - exact))) > 1e-3 * scale
    assert float(jnp.max(jnp.abs(tight - exact))) < 1e-8 * scale


def test_start_and_preconditioner_carry_no_derivative(cartesian):
    """The exact solution depends on neither x0 nor P (implicit mode)."""
    maps, b, reg, target = cartesian
    A, N = sense(maps, reg)

    def loss(x0, p):
        P = jl.Diagonal(p, ("Nx", "Ny"))
        x = alg.conjugate_gradients(N, A.H(b), x0, **TIGHT, P=P)
        return jnp.sum(jnp.abs(x - target) ** 2)

    g_x0, g_p = jax.grad(loss, (0, 1))(rand(60, GRID, jnp.complex128), jnp.full(GRID, 0.7))
    assert not jnp.any(g_x0) and not jnp.any(g_p)


def test_gradient_of_batched_systems_and_vmap():
    """`batch_dims`: each system's solution depends only on its own data, and the gradient
    of a batch equals the gradients of its systems solved alone; `vmap` of the gradient
    over the weight equals a loop."""
    W = jnp.asarray(np.stack([np.diag(np.linspace(1, 3, 6)), np.diag(np.linspace(2, 9, 6))]))
    y = rand(70, (2, 6), jnp.float64)

    def loss(W, y, batch_dims):
        A = jl.Dense(W, "T M N", "T N", "T M")
        return jnp.sum(alg.conjugate_gradients(A, y, **TIGHT, batch_dims=batch_dims) ** 2)

    batched = jax.grad(loss)(W, y, "T")
    for t in range(2):
        alone = jax.grad(lambda w: loss(w, y[t : t + 1], None))(W[t : t + 1])
        np.testing.assert_allclose(batched[t], alone[0], rtol=1e-9, atol=1e-12)
    # d/dw_n of sum (y_n / w_n)^2 = -2 y_n^2 / w_n^3, on the diagonal
    want = -2 * y**2 / jnp.diagonal(W, axis1=1, axis2=2) ** 3
    np.testing.assert_allclose(jnp.diagonal(batched, axis1=1, axis2=2), want, rtol=1e-9)

    def weighted(reg):
        A = jl.Dense(W[1], "M N", "N", "M")
        N = A + reg * jl.Identity("N", "M")
        return jnp.sum(alg.conjugate_gradients(N, y[1], **TIGHT) ** 2)

    regs = jnp.asarray([0.1, 1.0, 4.0])
    np.testing.assert_allclose(
        jax.jit(jax.vmap(jax.grad(weighted)))(regs),
        [jax.grad(weighted)(r) for r in regs],
        rtol=1e-9,
    )


def test_gradient_through_a_sharded_operator_equals_one_device(cartesian):
    """`create_batched_linop` over 8 devices (coils sharded): same gradient w.r.t. the
    maps and the data as the unsplit operator, under jit."""
    maps = rand(80, (8, *GRID), jnp.complex128)
    b = rand(81, (8, *GRID), jnp.complex128)
    target = cartesian[3]
    spec = jl.BatchSpec({"C": 1}, device_matrix=jax.devices())

    def loss(maps, b, batched):
        A, _ = sense(maps, 0.5)
        A = jl.create_batched_linop(A, spec) if batched else A
        N = A.N + 0.5 * jl.Identity(("Nx", "Ny"), A.N.oshape)
        x = alg.conjugate_gradients(N, A.H(b), **TIGHT)
        return jnp.sum(jnp.abs(x - target) ** 2)

    want = jax.grad(loss, (0, 1))(maps, b, False)
    got = jax.jit(jax.grad(loss, (0, 1)), static_argnums=2)(maps, b, True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(w))))


@pytest.mark.parametrize("backend, toeplitz", [("jax", True), ("finufft", False)])
def test_trajectory_gradient_through_a_sharded_solve_equals_one_device(backend, toeplitz):
    """Points split over 8 devices: the gradient w.r.t. the trajectory through CG equals
    the unsplit operator's, under jit; with the Toeplitz normal (one PSF per tile), and
    with the plain normal on finufft (tolerance 1e-11, so that tiles and the whole agree),
    whose derivative inside `shard_map` must have the value's type."""
    if backend == "finufft":
        pytest.importorskip("jax_finufft")
    locs = rand(85, (32, 2), jnp.float64) * 3.5
    maps = rand(86, (2, *GRID), jnp.complex128)
    b = rand(87, (2, 32), jnp.complex128)
    spec = jl.BatchSpec({"R": 4}, device_matrix=jax.devices())

    def loss(locs, batched):
        S = jl.Dense(maps, ("C", "Nx", "Ny"), ("Nx", "Ny"), ("C", "Nx", "Ny"))
        eps = 1e-11 if backend == "finufft" else None
        F = jl.NUFFT(locs, GRID, "R", batch_shape="C", toeplitz=toeplitz, backend=backend, eps=eps)
        A = F @ S
        A = jl.create_batched_linop(A, spec) if batched else A
        N = A.N + 0.5 * jl.Identity(("Nx", "Ny"), A.N.oshape)
        return jnp.sum(jnp.abs(alg.conjugate_gradients(N, A.H(b), **TIGHT)) ** 2)

    want = jax.grad(loss)(locs, False)
    got = jax.jit(jax.grad(loss), static_argnums=1)(locs, True)
    np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9 * float(jnp.max(jnp.abs(want))))


def test_non_finite_data_gives_nan_gradients(cartesian):
    """NaN in the data: the solution is NaN, and so is the gradient (not a plausible
    number)."""
    maps, b, reg, target = cartesian
    grads = jax.grad(cartesian_loss, (0, 1))(maps, b.at[0, 1, 2].set(jnp.nan), reg, target)
    assert all(bool(jnp.all(jnp.isnan(g))) for g in grads)


def test_bad_adjoint_arguments():
    A = jl.Diagonal(jnp.ones(3), "N")
    with pytest.raises(TypeError, match=r"conjugate_gradients\(adjoint=...\).*ImplicitAdjoint"):
        alg.conjugate_gradients(A, jnp.ones(3), adjoint="implicit")
    with pytest.raises(ValueError, match=r"adjoint.gtol.*>= 0"):
        alg.conjugate_gradients(A, jnp.ones(3), adjoint=alg.ImplicitAdjoint(gtol=-1.0))
    with pytest.raises(ValueError, match=r"adjoint.max_num_iters"):
        alg.conjugate_gradients(A, jnp.ones(3), adjoint=alg.ImplicitAdjoint(max_num_iters=0))


@pytest.mark.parametrize("preconditioned", [False, True])
@pytest.mark.parametrize("adjoint", [alg.ImplicitAdjoint(), alg.UnrolledAdjoint()])
def test_gradient_after_exact_convergence_and_of_the_record(preconditioned, adjoint):
    """A scaled identity converges in one step to a zero residual; the unrolled loop runs
    on (frozen) for its other iterations, and the gradient is still the exact one,
    d/dw sum (y / w)^2 = -2 sum y^2 / w^3, not NaN (the norms of a zero residual have an
    infinite derivative). The record's residual norms carry no derivative (documented):
    adding them to the loss changes nothing."""
    y = rand(90, (5,), jnp.float64)
    P = jl.Diagonal(jnp.full(5, 0.5), "N") if preconditioned else None

    def loss(w):
        result = alg.conjugate_gradients(
            jl.Diagonal(w * jnp.ones(5), "N"), y, max_num_iters=4, P=P, adjoint=adjoint,
            return_info=True,
        )  # fmt: skip
        return jnp.sum(result.x**2) + jnp.nansum(result.residual_norms)

    np.testing.assert_allclose(jax.grad(loss)(2.0), -2 * jnp.sum(y**2) / 8, rtol=1e-12)


def test_power_method_and_svd_values_are_differentiable():
    """The eigenvalue of A^H A and the singular values have their derivatives (JAX's
    `jnp.linalg.svd` as the reference, in reverse and forward mode); the vectors' derivative
    is NaN (ill-posed: a phase), never a plausible number."""
    M = rand(100, (6, 5), jnp.complex128)
    v0 = jnp.ones(5, jnp.complex128)
    tight = dict(max_iters=800, tol=1e-15)

    def op(M):
        return jl.Dense(M, "M N", "N", "M")

    def top(M):
        return alg.power_method(op(M).N, v0, **tight)[1]

    def second(M):
        return alg.singular_value_decomposition(op(M), v0, 2, **tight)[1][1]

    def svals(M):
        return jnp.linalg.svd(M, compute_uv=False)

    d = random_direction(101, M)
    for got, want in (
        (jax.grad(top)(M), jax.grad(lambda M: svals(M)[0] ** 2)(M)),
        (jax.grad(second)(M), jax.grad(lambda M: svals(M)[1])(M)),
        (jax.jvp(top, (M,), (d,))[1], jax.jvp(lambda M: svals(M)[0] ** 2, (M,), (d,))[1]),
    ):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)
    vector = jax.grad(lambda M: jnp.abs(alg.power_method(op(M).N, v0, **tight)[0][0]))(M)
    U = jax.grad(lambda M: jnp.abs(alg.singular_value_decomposition(op(M), v0, 1)[0][0, 0]))(M)
    assert jnp.all(jnp.isnan(vector)) and jnp.all(jnp.isnan(U))
