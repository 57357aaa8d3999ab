"""Derivatives with respect to the trajectory (`locs`), the density compensation and the
image through `NUFFT` (forward, adjoint, Toeplitz normal; backends jax, pallas, finufft)
and `Interpolate` (both kernels, both norms, both paddings).

References, none of them the code under test:

- central finite differences in float64 along a random direction. The losses are smooth
  in `locs` away from the kernel's window edges (a Kaiser–Bessel window ends with a jump
  of `1 / I0(beta)` of its peak), which random points miss. Step `h = 1e-6` (relative to
  the argument's scale): the rounding error of the difference is ~eps |f| / h ~ 1e-10 of
  the derivative and the truncation error ~h^2 f''' / 6 ~ 1e-11 (a derivative w.r.t. a
  point brings at most a factor 2 pi |n - N // 2| / N <= pi per order), both far below
  the 1e-4 asked for.
- the exact (non-uniform) DFT and its analytic derivative in the points,
  d/dp_{l,d} sum_n x[n] e^{-2 pi i p_l . k / N} = sum_n x[n] (-2 pi i k_d / N_d) e^{...}
  with k = n - N // 2: the NUFFT's gradient approaches it to within the NUFFT's accuracy.
- for the Toeplitz normal, `jax.grad` of a dense exact-DFT normal `E^H W E` built in jnp.
"""

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import rand

import jaxlinops as jl
from jaxlinops.functional._finufft import finufft_available

GRID = (10, 12)
POINTS = 20
H = 1e-6  # finite-difference step, relative (see the module docstring)
ACCURATE = dict(oversamp=2.0, width=6.0)  # relative error ~7e-6 against the exact DFT
# The NUFFT's error e(p) has relative size ~7e-6 at (2, 6); its aliased terms oscillate
# with frequencies up to ~2 os times the image's, so its derivative is ~10 to 50 times
# larger relative to the DFT's derivative: measured 3e-5 to 9e-5 (norm) at random points
# and up to 3.2e-4 at padded-grid nodes (5 seeds; the one-sided derivatives there, and
# points 0.013 off the nodes, err alike). finufft: ~2e-7. The bound leaves a factor 3.
DFT_RTOL = 1e-3
# finufft asked for the table's error at (2, 6), 8.4e-6 (tolerance 2.8e-6): where its
# derivative, the exact transform's to that tolerance, is compared with finite differences
# of its own output, the bound is that error's, not the looser one the operator promises.
FINUFFT_ACCURATE = dict(eps=8.4e-6)
FINUFFT_RTOL = 3e-5  # its derivative is a transform at tolerance ~3e-6
BACKENDS = [
    "jax",
    "pallas",
    pytest.param(
        "finufft",
        marks=pytest.mark.skipif(not finufft_available(), reason="jax-finufft missing"),
    ),
]


@pytest.fixture(autouse=True)
def _quiet_pallas():
    """backend='pallas' off a GPU logs a warning that it runs in the interpreter."""
    logger = logging.getLogger("jaxlinops")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


def random_locs(seed, points=POINTS, grid=GRID):
    """Points in cycles per field of view, spread over a bit more than one period."""
    rng = np.random.default_rng(seed)
    half = np.asarray(grid) / 2
    return jnp.asarray(rng.uniform(-1.2 * half, 1.2 * half, (points, len(grid))))


def directional(loss, args, k, direction, h=H):
    """The central difference of `loss` along `direction` in argument `k`, the step
    relative to the argument's size."""
    step = h * max(float(jnp.max(jnp.abs(args[k]))), 1.0)
    plus, minus = list(args), list(args)
    plus[k], minus[k] = args[k] + step * direction, args[k] - step * direction
    return float((loss(*plus) - loss(*minus)) / (2 * step))


def assert_matches_fd(loss, args, seed, argnums=(0,), rel=1e-4, eager=False):
    """`Re <grad, d>` (JAX's convention for complex arguments) equals the finite difference
    along a random `d` for each argument in `argnums` (both under `jax.jit`, one compilation
    each); with `eager`, the gradient computed op by op agrees with the jitted one."""
    grads = jax.jit(jax.grad(loss, argnums))(*args)
    if eager:
        for g, e in zip(grads, jax.grad(loss, argnums)(*args)):
            # two compilations of the same float64 sums: far below 1e-10 apart
            np.testing.assert_allclose(e, g, rtol=1e-10, atol=1e-10 * float(jnp.max(abs(g))))
    jitted = jax.jit(loss)
    for i, (k, g) in enumerate(zip(argnums, grads)):
        assert bool(jnp.all(jnp.isfinite(g))), k
        d = rand(seed + 100 + i, jnp.shape(args[k]), jnp.result_type(args[k]))
        want = directional(jitted, args, k, d)
        got = float(jnp.sum(jnp.real(g * d)))
        assert abs(got - want) <= rel * abs(want), (k, got, want)


def exact_dft(x, locs):
    """y_l = (prod N)^{-1/2} sum_n x[n] e^{-2 pi i sum_d p_{l,d} (n_d - N_d // 2) / N_d}
    in numpy, and its derivative dy_l / dp_{l,d} `[L, D]`."""
    x, locs = np.asarray(x), np.asarray(locs)
    grid = x.shape
    freqs = np.stack(np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij"), -1)
    freqs = freqs.reshape(-1, len(grid)) / np.asarray(grid)  # [M, D]
    phase = np.exp(-2j * np.pi * locs @ freqs.T)  # [L, M]
    scale = 1 / float(np.sqrt(np.prod(grid)))
    y = phase @ x.ravel() * scale
    dy = np.einsum("lm,md,m->ld", phase, -2j * np.pi * freqs, x.ravel()) * scale
    return y, dy


def dense_dft(locs, grid):
    """The exact DFT matrix `[L, prod N]` in jnp (differentiable in `locs`)."""
    freqs = np.stack(np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij"), -1)
    freqs = jnp.asarray(freqs.reshape(-1, len(grid)) / np.asarray(grid))
    phase = (-2 * np.pi) * (locs @ freqs.T)
    return jnp.exp(1j * phase.astype(jnp.complex128)) / float(np.sqrt(np.prod(grid)))


def nufft(locs, backend, **kwargs):
    settings = FINUFFT_ACCURATE if backend == "finufft" else ACCURATE
    return jl.NUFFT(locs, GRID, "R", backend=backend, **{**settings, **kwargs})


# ----------------------------------------------------------------------------- NUFFT


@pytest.mark.parametrize("backend", BACKENDS)
def test_nufft_locs_gradient_matches_finite_differences(backend):
    locs, x, c = random_locs(0), rand(1, GRID), rand(2, (POINTS,))

    def forward(locs, x):
        return jnp.vdot(c, nufft(locs, backend)(x)).real

    def adjoint(locs, c):
        return jnp.vdot(x, nufft(locs, backend).H(c)).real

    assert_matches_fd(forward, (locs, x), 10, argnums=(0, 1), eager=backend == "jax")
    assert_matches_fd(adjoint, (locs, c), 20, argnums=(0, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_nufft_locs_gradient_approaches_the_exact_dft_derivative(backend):
    """Also for points on padded-grid nodes (Cartesian-like trajectories, oversamp 2: the
    integers and half-integers) and at the wrap-around (+-N/2, a point beyond it)."""
    rng = np.random.default_rng(3)
    nodes = rng.integers(-5, 6, (8, 2)) + rng.integers(0, 2, (8, 2)) / 2
    edges = np.array([[5.0, -6.0], [-5.0, 6.0], [5.0, 6.0], [-7.5, 6.5]])
    locs = jnp.concatenate([random_locs(4), jnp.asarray(nodes), jnp.asarray(edges)])
    x, c = rand(5, GRID), rand(6, (locs.shape[0],))
    _, dy = exact_dft(x, locs)
    want = np.real(np.conj(np.asarray(c))[:, None] * dy)

    def forward(locs):
        return jnp.vdot(c, nufft(locs, backend)(x)).real

    def adjoint(locs):
        return jnp.vdot(x, nufft(locs, backend).H(c)).real

    rtol = FINUFFT_RTOL if backend == "finufft" else DFT_RTOL
    for loss in (forward, adjoint):
        got = np.asarray(jax.grad(loss)(locs))
        assert np.all(np.isfinite(got))
        assert np.linalg.norm(got - want) <= rtol * np.linalg.norm(want)


def test_nufft_locs_jvp_equals_the_gradient():
    """Forward mode (jax backend) agrees with reverse mode, eager and under jit."""
    locs, x, c = random_locs(7), rand(8, GRID), rand(9, (POINTS,))
    d = rand(10, locs.shape, locs.dtype)

    def loss(locs):
        return jnp.vdot(c, nufft(locs, "jax")(x)).real

    want = float(jnp.vdot(jax.grad(loss)(locs), d))
    for fn in (jax.jvp, jax.jit(jax.jvp, static_argnums=0)):
        _, got = fn(loss, (locs,), (d,))
        assert abs(float(got) - want) <= 1e-10 * abs(want)


def test_pallas_has_reverse_mode_only():
    """The Pallas kernels are `custom_vjp`s: reverse mode works (the tests above); forward
    mode through the operator (forward, adjoint, under `jit`) and through the functional
    NUFFT is refused with an error naming the backend. Forward mode of a function that
    jits the operator inside it meets JAX's own error first."""
    locs, x, y = random_locs(7), rand(8, GRID), rand(9, (POINTS,))
    named = r"forward-mode differentiation .* backend='pallas'.* backend='jax'"
    for fn in (lambda p: nufft(p, "pallas")(x), lambda p: nufft(p, "pallas").H(y)):
        with pytest.raises(TypeError, match=r"`NUFFT.*\(x\)`: " + named):
            jax.jvp(fn, (locs,), (locs,))
        with pytest.raises(TypeError, match=named):
            jax.jit(jax.jacfwd(fn))(locs)
    plan = jl.functional.nufft_plan(np.asarray(locs), GRID, backend="pallas")
    with pytest.raises(TypeError, match=r"`nufft`: " + named):
        jax.jvp(lambda v: jl.functional.nufft(v, plan), (x,), (x,))
    with pytest.raises(TypeError, match=r"`nufft_adjoint`: " + named):
        jax.jvp(lambda v: jl.functional.nufft_adjoint(v, plan), (y,), (y,))
    with pytest.raises(TypeError, match="can't apply forward-mode autodiff"):
        jax.jvp(jax.jit(lambda p: nufft(p, "pallas")(x)), (locs,), (locs,))
    jax.jvp(lambda p: nufft(p, "jax")(x), (locs,), (locs,))  # the JAX path has forward mode


@pytest.mark.skipif(not finufft_available(), reason="jax-finufft missing")
def test_finufft_locs_jvp_approaches_the_exact_dft_derivative():
    locs, x = random_locs(11), rand(12, GRID)
    d = np.asarray(rand(13, locs.shape, locs.dtype))
    _, dy = exact_dft(x, locs)
    _, got = jax.jvp(lambda p: nufft(p, "finufft")(x), (locs,), (jnp.asarray(d),))
    want = np.sum(dy * d, axis=1)
    assert np.linalg.norm(np.asarray(got) - want) <= FINUFFT_RTOL * np.linalg.norm(want)


def test_nufft_default_accuracy_gradient_matches_finite_differences():
    """torchlinops' (1.25, 4) kernel and a non-integer width (3.5: the window's last entry
    switches on inside the cell) differentiate as consistently as (2, 6)."""
    locs, x, c = random_locs(14), rand(15, GRID), rand(16, (POINTS,))
    for settings in (dict(oversamp=1.25, width=4.0), dict(oversamp=1.5, width=3.5)):

        def loss(locs, settings=settings):
            return jnp.vdot(c, nufft(locs, "jax", **settings)(x)).real

        assert_matches_fd(loss, (locs,), 17)


def test_nufft_loss_gradient_3d():
    """`||A x - y||^2` on a 3-D grid: gradients w.r.t. the points and the image."""
    grid = (8, 8, 6)
    locs, x, y = random_locs(18, 12, grid), rand(19, grid), rand(20, (12,))

    def loss(locs, x):
        A = jl.NUFFT(locs, grid, "R", backend="jax", **ACCURATE)
        return jnp.sum(jnp.abs(A(x) - y) ** 2)

    assert_matches_fd(loss, (locs, x), 21, argnums=(0, 1))


def test_sampling_mode_locs_gradient_is_zero():
    """Sampling mode rounds the points to grid nodes: piecewise constant in `locs`, so
    its derivative is zero (almost everywhere), and JAX returns exactly that."""
    locs, x, c = random_locs(22), rand(23, GRID), rand(24, (POINTS,))

    def loss(locs):
        A = jl.NUFFT(locs, GRID, "R", mode="sampling")
        return jnp.vdot(c, A(x)).real + jnp.vdot(x, A.H(c)).real

    g = jax.grad(loss)(locs)
    assert g.shape == locs.shape and not np.any(np.asarray(g))
    assert loss(locs + 1e-9) == loss(locs)  # the same nodes: the loss does not move


# ------------------------------------------------------------------- Toeplitz normal


@pytest.mark.parametrize("backend", BACKENDS)
def test_toeplitz_normal_gradients_match_finite_differences(backend):
    """`A.N` and `A.normal(Diagonal(dcf))` built inside the loss: gradients w.r.t. the
    points (through the PSF kernel, an adjoint NUFFT of the weights), the density
    compensation and the image."""
    locs, x, v = random_locs(25), rand(26, GRID), rand(27, GRID)
    dcf = jnp.asarray(np.random.default_rng(28).uniform(0.5, 1.5, POINTS))

    def plain(locs, x):
        return jnp.vdot(v, nufft(locs, backend, toeplitz=True).N(x)).real

    def weighted(locs, dcf, x):
        A = nufft(locs, backend, toeplitz=True)
        return jnp.vdot(v, A.normal(jl.Diagonal(dcf, ("R",)))(x)).real

    assert_matches_fd(plain, (locs, x), 30, argnums=(0, 1))
    assert_matches_fd(weighted, (locs, dcf, x), 40, argnums=(0, 1, 2))


def test_toeplitz_normal_gradient_approaches_the_exact_normal():
    """Against `jax.grad` of the dense exact-DFT normal `E^H diag(w) E`."""
    locs, x, v = random_locs(29), rand(30, GRID), rand(31, GRID)
    dcf = jnp.asarray(np.random.default_rng(32).uniform(0.5, 1.5, POINTS))

    def toeplitz(locs, dcf):
        A = nufft(locs, "jax", toeplitz=True)
        return jnp.vdot(v, A.normal(jl.Diagonal(dcf, ("R",)))(x)).real

    def exact(locs, dcf):
        E = dense_dft(locs, GRID)
        out = E.conj().T @ (dcf.astype(E.dtype) * (E @ x.ravel()))
        return jnp.vdot(v.ravel(), out).real

    for got, want in zip(jax.grad(toeplitz, (0, 1))(locs, dcf), jax.grad(exact, (0, 1))(locs, dcf)):
        # the kernel is an adjoint NUFFT (error ~7e-6) whose derivative errs as above
        assert jnp.linalg.norm(got - want) <= DFT_RTOL * jnp.linalg.norm(want)


# ----------------------------------------------------------------------- Interpolate


@pytest.mark.parametrize("kernel", ["kaiser_bessel", "spline"])
@pytest.mark.parametrize("norm", [1, 2])
@pytest.mark.parametrize("pad_mode", ["circular", "zero"])
def test_interpolate_locs_gradient_matches_finite_differences(kernel, norm, pad_mode):
    """Forward and adjoint in one loss. Zero padding: points inside `[0, N - 1]`;
    circular: any point, some beyond the grid."""
    rng = np.random.default_rng(33)
    grid = (9, 8)
    high = np.asarray(grid) - 1.0
    if pad_mode == "zero":
        locs = rng.uniform(0.1, high - 0.1, (POINTS, 2))
    else:
        locs = rng.uniform(-3.0, high + 3.0, (POINTS, 2))
    locs, x, c = jnp.asarray(locs), rand(34, grid), rand(35, (POINTS,))
    options = dict(width=3.0, kernel=kernel, norm=norm, pad_mode=pad_mode)
    if kernel == "kaiser_bessel":
        options["kernel_params"] = {"beta": 6.0}

    def loss(locs):
        A = jl.Interpolate(locs, grid, **options)
        return jnp.vdot(c, A(x)).real + jnp.vdot(x, A.H(c * c)).real

    assert_matches_fd(loss, (locs,), 36, eager=kernel == "spline" and norm == 1)


def test_interpolate_gradient_on_grid_nodes_is_finite():
    """Points exactly on grid nodes (all axes, then one axis only) and on the grid's last
    node, where the windows' edges and the distance's kink lie: every gradient is finite."""
    grid = (6, 7)
    rng = np.random.default_rng(37)
    nodes = np.stack([rng.integers(0, n, 6) for n in grid], -1).astype(float)
    nodes[1, 1] += 0.3  # on a node along one axis only
    nodes[2] = np.asarray(grid) - 1.0
    locs, x, c = jnp.asarray(nodes), rand(38, grid), rand(39, (6,))
    for options in (
        dict(kernel="kaiser_bessel", norm=1, width=4.0),
        dict(kernel="kaiser_bessel", norm=2, width=3.0),
        dict(kernel="spline", norm=2, width=2.0),
        dict(kernel="spline", norm=1, width=2.0, pad_mode="zero"),
    ):

        def loss(locs, options=options):
            A = jl.Interpolate(locs, grid, **options)
            return jnp.vdot(c, A(x)).real + jnp.vdot(x, A.H(c)).real

        assert bool(jnp.all(jnp.isfinite(jax.jit(jax.grad(loss))(locs)))), options


def test_spline_gradient_on_a_node_is_the_mean_of_the_one_sided_slopes():
    """Linear interpolation is kinked at a node: its gradient there is the mean of the
    left and right slopes along each axis (regression: `abs` has derivative +1 at 0, which
    gave a value outside the two slopes)."""
    grid = (6, 7)
    x = np.asarray(rand(38, grid)).real

    def spline(locs):
        return jl.Interpolate(locs, grid, width=2.0, kernel="spline")(jnp.asarray(x))

    got = jax.jacrev(spline)(jnp.asarray([[2.0, 3.0]]))[0, 0]
    want = [(x[3, 3] - x[1, 3]) / 2, (x[2, 4] - x[2, 2]) / 2]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_interpolate_gradient_wrt_image_and_values():
    """`||A x - y||^2` and `||A^H y - x||^2`: gradients w.r.t. the grid values and the point
    values (linear, so the difference quotient is exact up to rounding)."""
    grid, locs = (8, 9), jnp.asarray(np.random.default_rng(40).uniform(0, 7, (POINTS, 2)))
    x, y = rand(41, grid), rand(42, (POINTS,))
    A = jl.Interpolate(locs, grid, width=3.0)
    assert_matches_fd(lambda x: jnp.sum(jnp.abs(A(x) - y) ** 2), (x,), 43)
    assert_matches_fd(lambda y: jnp.sum(jnp.abs(A.H(y) - x) ** 2), (y,), 44)


@pytest.mark.parametrize("backend", BACKENDS)
def test_trajectory_gradient_of_an_operator_split_over_devices(backend):
    """Points split over 8 devices (`create_batched_linop`, `{"R": 4}`): the gradient
    w.r.t. `locs` of a forward and an adjoint loss equals the unsplit operator's (the
    finufft transforms' values and derivatives must carry the same `shard_map` type)."""
    if backend == "pallas" and jax.default_backend() != "gpu":
        pytest.skip(
            "Pallas's interpreter (the CPU stand-in for the GPU kernels) fails inside "
            "shard_map: its dynamic_slice of a block mixes varying and replicated operands "
            "(scripts/gpu_check.sh runs this test compiled on a GPU)"
        )
    locs = jnp.asarray(np.random.default_rng(3).uniform(-4.0, 4.0, (32, 2)))
    x, y = rand(4, (8, 8), jnp.complex128), rand(5, (32,), jnp.complex128)
    eps = 1e-11 if backend == "finufft" else None  # tiles and the whole agree closely

    def loss(locs, batched):
        A = jl.NUFFT(locs, (8, 8), "R", backend=backend, eps=eps)
        if batched:
            A = jl.create_batched_linop(A, jl.BatchSpec({"R": 4}, device_matrix=jax.devices()))
        return jnp.sum(jnp.abs(A(x)) ** 2) + jnp.sum(jnp.abs(A.H(y)) ** 2)

    want = jax.grad(loss)(locs, False)
    got = jax.jit(jax.grad(loss), static_argnums=1)(locs, True)
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-9 * float(jnp.max(jnp.abs(want))))
