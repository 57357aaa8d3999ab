"""Interpolate and the interpolation kernels against hand values and an explicit numpy loop
over points and grid neighbours."""

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand

import jaxlinops as jl
from jaxlinops.functional._kernels import kaiser_bessel

F = jl.functional
KB_TOL = 1e-6  # the Abramowitz–Stegun I0 used by the kernel vs numpy's np.i0


# ------------------------------------------------------------------ numpy reference
def ref_kernel(x, kernel, beta):
    if abs(x) > 1:
        return 0.0
    if kernel == "spline":
        return 1.0 - abs(x)
    return float(np.i0(beta * math.sqrt(1.0 - x * x)))


def ref_matrix(
    locs,
    grid,
    width,
    kernel="kaiser_bessel",
    norm=1,
    pad_mode="circular",
    beta=1.0,
    half_open=False,
):
    """The interpolation matrix [points, grid entries], one point and one neighbour at a time;
    `half_open` leaves out the neighbours at distance exactly -w/2 (the NUFFT's window)."""
    locs = np.asarray(locs, np.float64).reshape(-1, len(grid))
    widths = np.broadcast_to(np.asarray(width, np.float64), (len(grid),))
    radius = widths / 2
    M = np.zeros((len(locs), math.prod(grid)))
    for p, loc in enumerate(locs):
        ranges = [range(math.floor(c - r) - 1, math.ceil(c + r) + 2) for c, r in zip(loc, radius)]
        for g in itertools.product(*ranges):
            delta = [(gd - c) / r for gd, c, r in zip(g, loc, radius)]
            if any(abs(x) > 1 or (half_open and x == -1) for x in delta):
                continue
            if pad_mode == "zero" and not all(0 <= gd < n for gd, n in zip(g, grid)):
                continue
            if norm == 1:
                w = math.prod(ref_kernel(x, kernel, beta) for x in delta)
            else:
                w = ref_kernel(math.sqrt(sum(x * x for x in delta)), kernel, beta)
            M[p, np.ravel_multi_index(tuple(gd % n for gd, n in zip(g, grid)), grid)] += w
    return M


def random_locs(seed, grid, points):
    rng = np.random.default_rng(seed)
    return rng.uniform(0, np.array(grid) - 1, size=(*points, len(grid)))


def dot(a, b):
    return np.vdot(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------------ kernels
@pytest.mark.parametrize(
    "loc, kernel, want",
    [
        (4.0, "kaiser_bessel", [0, 0, 1.0, 1.1965, 1.2661, 1.1965, 1.0, 0, 0]),
        (4.0, "spline", [0, 0, 0, 0.5, 1, 0.5, 0, 0, 0]),
        (4.3, "spline", [0, 0, 0, 0.35, 0.85, 0.65, 0.15, 0, 0]),
    ],
)
def test_hand_computed_weights_1d(loc, kernel, want):
    locs = np.array([[loc]])
    spread = F.interpolate_adjoint(np.ones(1), locs, (9,), 4.0, kernel)
    np.testing.assert_allclose(spread, want, atol=1e-4)
    gathered = F.interpolate(np.eye(9), locs, 4.0, kernel)  # row i reads unit vector i
    np.testing.assert_allclose(gathered[:, 0], want, atol=1e-4)


@pytest.mark.parametrize("beta", [1.0, 7.0, 14.0])
def test_kaiser_bessel_matches_numpy_i0(beta):
    x = np.linspace(-1.2, 1.2, 49)
    want = [ref_kernel(v, "kaiser_bessel", beta) for v in x]
    np.testing.assert_allclose(kaiser_bessel(jnp.asarray(x), beta), want, rtol=KB_TOL)
    assert float(kaiser_bessel(jnp.asarray(1.0), beta)) == 1.0


def test_kernel_gradient_is_finite_at_the_window_edge():
    """d/dx I0(b sqrt(1 - x^2)) -> -b^2 x / 2 as |x| -> 1 (sqrt alone has an infinite slope
    there); points on grid nodes put neighbours exactly at |x| = 1."""
    beta, h = 3.0, 1e-6
    edge = jax.grad(kaiser_bessel)(jnp.asarray(1.0), beta)
    np.testing.assert_allclose(edge, -(beta**2) / 2, rtol=1e-6)
    inner = jax.grad(kaiser_bessel)(jnp.asarray(0.6), beta)
    fd = kaiser_bessel(jnp.asarray(0.6 + h), beta) - kaiser_bessel(jnp.asarray(0.6 - h), beta)
    np.testing.assert_allclose(inner, fd / (2 * h), rtol=1e-5)
    x = jnp.asarray(np.random.default_rng(4).standard_normal(8))
    on_node = jax.grad(
        lambda loc: jnp.sum(F.interpolate(x, loc[None, None], 4.0, kernel_params={"beta": beta}))
    )(jnp.asarray(3.0))
    assert np.isfinite(on_node)


# ------------------------------------------------------------------ against the loop reference
@pytest.mark.parametrize("pad_mode", ["circular", "zero"])
@pytest.mark.parametrize("norm", [1, 2])
@pytest.mark.parametrize("kernel", ["kaiser_bessel", "spline"])
def test_2d_matches_loop_reference(kernel, norm, pad_mode):
    grid, locs = (10, 8), random_locs(1, (10, 8), (9,))
    M = ref_matrix(locs, grid, 4.0, kernel, norm, pad_mode, beta=2.5)
    params = {"beta": 2.5} if kernel == "kaiser_bessel" else None
    options = dict(kernel=kernel, norm=norm, pad_mode=pad_mode, kernel_params=params)
    x, y = rand(2, (2, *grid)), rand(3, (2, 9))
    got = F.interpolate(x, locs, 4.0, **options)
    np.testing.assert_allclose(got, np.asarray(x).reshape(2, -1) @ M.T, rtol=KB_TOL)
    back = F.interpolate_adjoint(y, locs, grid, 4.0, **options)
    np.testing.assert_allclose(back, (np.asarray(y) @ M).reshape(2, *grid), rtol=KB_TOL)


def test_per_axis_width_and_int_width():
    grid, locs = (10, 8), random_locs(4, (10, 8), (3, 2))
    x = rand(5, grid, jnp.float64)
    got = F.interpolate(x, locs, (3, 5.5), "spline")
    want = ref_matrix(locs, grid, (3.0, 5.5), "spline") @ np.asarray(x).ravel()
    assert_close(got, want.reshape(3, 2), jnp.float64)
    assert_close(F.interpolate(x, locs, 4), F.interpolate(x, locs, 4.0), jnp.float64)


def test_width_equal_to_grid_wraps_twice():
    """tiny2d: width 2 on a 2x2 grid reaches the same grid point from both sides."""
    locs = np.array([[0.0, 0.5]])
    got = F.interpolate_adjoint(np.ones(1), locs, (2, 2), 2.0, "spline")
    assert_close(got, ref_matrix(locs, (2, 2), 2.0, "spline").reshape(2, 2), jnp.float64)


# ------------------------------------------------------------------ adjointness, shapes, dtypes
@pytest.mark.parametrize(
    "batch, grid, points",
    [((2,), (10,), (20,)), ((2, 2), (10, 8), (9,)), ((1, 1), (10, 8, 9), (3, 5))],
    ids=["small1d", "small2d", "small3d"],
)
def test_dot_test(batch, grid, points):
    locs = random_locs(6, grid, points)
    x, y = rand(7, batch + grid), rand(8, batch + points)
    Ax = F.interpolate(x, locs, 4.0, kernel_params={"beta": 7.0})
    AHy = F.interpolate_adjoint(y, locs, grid, 4.0, kernel_params={"beta": 7.0})
    assert Ax.shape == batch + points and AHy.shape == batch + grid
    np.testing.assert_allclose(dot(y, Ax), dot(AHy, x), rtol=1e-12)


def test_batch_axes_match_the_reference():
    grid, locs = (6, 7), random_locs(9, (6, 7), (4, 5))
    x = rand(10, (2, 3, *grid))
    got = F.interpolate(x, locs, 3.0, norm=2)
    want = np.asarray(x).reshape(6, -1) @ ref_matrix(locs, grid, 3.0, norm=2).T
    np.testing.assert_allclose(got, want.reshape(2, 3, 4, 5), rtol=KB_TOL)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.complex64])
def test_dtypes_follow_vals_and_locs(dtype):
    locs = random_locs(11, (8,), (5,)).astype(np.float32)
    x = rand(12, (8,), dtype)
    assert F.interpolate(x, locs).dtype == dtype
    assert F.interpolate_adjoint(rand(13, (5,), dtype), locs, (8,)).dtype == dtype
    assert F.interpolate(x, locs.astype(np.float64)).dtype == np.promote_types(dtype, np.float64)


def test_jit_and_grad_match_the_reference():
    grid, locs = (10, 8), random_locs(14, (10, 8), (9,))
    x, y = rand(15, (2, *grid)), rand(16, (2, 9))
    f = jax.jit(F.interpolate, static_argnames=("width", "kernel", "norm", "pad_mode"))
    M = ref_matrix(locs, grid, 3.0, pad_mode="zero")
    want = np.asarray(x).reshape(2, -1) @ M.T
    np.testing.assert_allclose(f(x, locs, width=3.0, pad_mode="zero"), want, rtol=KB_TOL)
    # d/dx Re<y, A x> = conj(A^H y) for the Wirtinger convention of jax.grad
    g = jax.grad(lambda v: jnp.real(jl.testing.inner(y, F.interpolate(v, locs, 3.0))))(x)
    back = (np.asarray(y) @ ref_matrix(locs, grid, 3.0)).reshape(2, *grid)
    np.testing.assert_allclose(g, np.conj(back), rtol=KB_TOL)


# ------------------------------------------------------------------ the operator
def test_operator_dims_sizes_and_values():
    locs = random_locs(17, (10, 8), (3, 2))
    A = jl.Interpolate(locs, (10, 8), kernel="spline")
    assert A.ishape == ("...", "Nx", "Ny") and A.oshape == ("...", "(1)", "(2)")
    assert (A.size("Nx"), A.size("Ny"), A.size("(1)"), A.size("(2)"), A.size("C")) == (
        10,
        8,
        3,
        2,
        None,
    )
    x, y = rand(18, (4, 10, 8)), rand(19, (4, 3, 2))
    M = ref_matrix(locs, (10, 8), 4.0, "spline")
    assert_close(A(x), (np.asarray(x).reshape(4, -1) @ M.T).reshape(4, 3, 2), jnp.complex128)
    assert_close(A.H(y), (np.asarray(y).reshape(4, -1) @ M).reshape(4, 10, 8), jnp.complex128)
    B = jl.Interpolate(locs, (10, 8), "C", "R K", "X Y", kernel_params={"beta": 3.0})
    assert B.ishape == ("C", "X", "Y") and B.oshape == ("C", "R", "K")
    assert B.kernel_params == (("beta", 3.0),) and B.width == (4.0, 4.0)
    assert B.N.ishape == ("C", "X", "Y") and B.N.oshape == ("C", "X1", "Y1")


def test_operator_built_under_jit():
    locs = random_locs(20, (8,), (5,))

    @jax.jit
    def f(l, x):
        return jl.Interpolate(l, (8,), "C", "K")(x)

    x = rand(21, (2, 8))
    want = np.asarray(x) @ ref_matrix(locs, (8,), 4.0).T
    np.testing.assert_allclose(f(locs, x), want, rtol=KB_TOL)


# ------------------------------------------------------------------ errors
LOCS = np.array([[1.5, 2.0], [3.2, 0.4]])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"kernel": "gauss"}, "`interpolate`: unknown kernel 'gauss'"),
        ({"pad_mode": "reflect"}, "`interpolate`: unknown pad_mode 'reflect'"),
        ({"norm": 3}, "`interpolate`: norm must be 1 or 2; got 3"),
        ({"kernel_params": {"alpha": 1.0}}, r"unknown kernel_params \['alpha'\]"),
        ({"kernel": "spline", "kernel_params": {"beta": 1.0}}, r"kernel_params \['beta'\]"),
        ({"width": 7.0}, r"width \(7.0, 7.0\) must not exceed the grid size \(6, 5\)"),
        ({"width": 0}, "widths must be positive and finite; got 0"),
        ({"width": (2.0, 2.0, 2.0)}, "width must be a number or a tuple of 2 numbers"),
    ],
)
def test_option_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        F.interpolate(np.ones((6, 5)), LOCS, **kwargs)


def test_locs_errors():
    with pytest.raises(ValueError, match="`interpolate`: locs contain NaN or Inf"):
        F.interpolate(np.ones((6, 5)), np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="`interpolate_adjoint`: locs contain NaN or Inf"):
        F.interpolate_adjoint(np.ones(1), np.array([[np.inf]]), (6,))
    with pytest.raises(
        TypeError, match="`interpolate`: locs must be a real array; got dtype complex"
    ):
        F.interpolate(np.ones((6, 5)), LOCS + 0j)
    with pytest.raises(
        ValueError, match=r"locs must have shape \[L..., D\] with D >= 1; got shape \(\)"
    ):
        F.interpolate(np.ones(6), np.float64(1.0))
    with pytest.raises(ValueError, match=r"address 3 grid axes, but `vals` has shape \(6, 5\)"):
        F.interpolate(np.ones((6, 5)), np.ones((2, 3)))


def test_adjoint_shape_errors():
    with pytest.raises(ValueError, match=r"grid_size must give 2 sizes .* got \(6,\)"):
        F.interpolate_adjoint(np.ones(2), LOCS, (6,))
    with pytest.raises(ValueError, match=r"`interpolate_adjoint\(grid_size=...\)` expects .* 5.5"):
        F.interpolate_adjoint(np.ones(2), LOCS, (6, 5.5))
    with pytest.raises(ValueError, match=r"locs batch shape \(2,\); got `vals` of shape \(3,\)"):
        F.interpolate_adjoint(np.ones(3), LOCS, (6, 5))


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (((6,),), {}, r"`Interpolate`: grid_size must give 2 sizes .* got \(6,\)"),
        (((6, 4.5),), {}, r"`Interpolate\(grid_size=...\)` expects integer sizes; got 4.5"),
        (((6, 0),), {}, r"`Interpolate\(grid_size=...\)` expects sizes of at least 1; got 0"),
        (((6, 5),), {"norm": "2"}, r"`Interpolate`: norm must be 1 or 2; got '2'"),
        (((6, 5),), {"kernel_params": {"beta": np.inf}}, r"kernel_params\['beta'\] must be"),
        (((6, 5),), {"grid_shape": "X"}, "`grid_shape` must name 2 dims"),
        (((6, 5),), {"locs_batch_shape": "R K"}, "`locs_batch_shape` must name 1 dims"),
        (((6, 5),), {"locs_batch_shape": "..."}, "'...' may appear only in `batch_shape`"),
        (((6, 5),), {"batch_shape": "K", "locs_batch_shape": "K"}, "must all be distinct"),
        (((6, 5),), {"width": 6.0}, "`Interpolate`: the kernel width"),
        (((6, 5),), {"kernel": "gauss"}, "`Interpolate`: unknown kernel"),
    ],
)
def test_operator_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        jl.Interpolate(LOCS, *args, **kwargs)


def test_operator_nan_locs_and_input_size():
    with pytest.raises(ValueError, match="`Interpolate`: locs contain NaN or Inf"):
        jl.Interpolate(np.array([[np.nan]]), (6,))
    A = jl.Interpolate(LOCS, (6, 5))
    with pytest.raises(ValueError, match="expected dim Nx with size 6"):
        A(np.ones((5, 5)))


def test_zero_padding_rejects_points_outside_the_grid():
    outside = np.array([[1.5, 2.0], [5.5, 0.4]])  # 5.5 > N - 1 = 5 on axis 0
    with pytest.raises(ValueError, match=r"`Interpolate`: with pad_mode='zero' .* axis 0 spans"):
        jl.Interpolate(outside, (6, 5), pad_mode="zero")
    with pytest.raises(ValueError, match=r"axis 1 spans \[-0.5, 2\]"):
        jl.Interpolate(np.array([[1.0, -0.5], [2.0, 2.0]]), (6, 5), pad_mode="zero")
    assert jl.Interpolate(outside, (6, 5)).pad_mode == "circular"  # wraps: any point is fine


def test_functional_zero_padding_rejects_points_outside_the_grid():
    outside = np.array([[6.5, 1.0]])
    with pytest.raises(ValueError, match=r"`interpolate`: with pad_mode='zero' .* axis 0"):
        F.interpolate(np.ones((6, 5)), outside, pad_mode="zero")
    with pytest.raises(ValueError, match=r"`interpolate_adjoint`: with pad_mode='zero'"):
        F.interpolate_adjoint(np.ones(1), outside, (6, 5), pad_mode="zero")


def test_empty_batch_gives_empty_outputs():
    """An empty batch dim: the forward, the adjoint and the normal return empty arrays of
    the right shape, eager and under `jit` (the adjoint's scatter once divided by it)."""
    locs = np.random.default_rng(0).uniform(0, 7, (5, 2))
    A = jl.Interpolate(locs, (8, 8), batch_shape="C", width=3.0)
    x, y = jnp.zeros((0, 8, 8), jnp.complex128), jnp.zeros((0, 5), jnp.complex128)
    for apply, v, shape in ((A, x, (0, 5)), (A.H, y, (0, 8, 8)), (A.N, x, (0, 8, 8))):
        assert apply(v).shape == shape
        assert jax.jit(lambda op, u: op(u))(apply, v).shape == shape
