"""One NUFFT contract, whatever is installed: a matrix of backends (`"auto"`, `"jax"`,
`"finufft"`) by operations, with jax-finufft installed (CI installs it) and hidden.

Each backend either does an operation as the default does (the accuracy its `repr`
promises against an exact DFT, a grid split, `jax.export`, forward- and reverse-mode
derivatives, splits by points and batch dims) or refuses it by name. `"auto"` is the JAX
path in both environments, so an operator built with defaults keeps the whole contract."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split, rand

import jaxlinops as jl
from jaxlinops.functional import _finufft as FF

GRID = (12, 10)
POINTS = 30
FINUFFT = pytest.param(
    "finufft",
    marks=pytest.mark.skipif(not FF.finufft_available(), reason="jax-finufft is not installed"),
)
BACKENDS = ["auto", "jax", FINUFFT]


def locs(dtype=np.float64, seed=0) -> np.ndarray:
    half = np.asarray(GRID) / 2
    return np.random.default_rng(seed).uniform(-half, half, (POINTS, 2)).astype(dtype)


def exact(points: np.ndarray) -> np.ndarray:
    """The exact transform as a matrix `[P, prod(GRID)]` (the NUFFT's definition)."""
    n = np.stack(np.meshgrid(*(np.arange(g) - g // 2 for g in GRID), indexing="ij"), -1)
    phase = np.einsum("pd,xyd->pxy", points.astype(np.float64), n / np.asarray(GRID))
    return np.exp(-2j * np.pi * phase).reshape(POINTS, -1) / np.sqrt(np.prod(GRID))


def build(backend, points=None, **options) -> jl.NUFFT:
    points = locs() if points is None else points
    return jl.NUFFT(points, GRID, "K", batch_shape="C", backend=backend, **options)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["single", "double"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_accuracy_as_the_repr_promises(backend, dtype):
    points = locs(dtype)
    A = build(backend, points)
    promised = A.plan.accuracy
    assert f"error<={promised:.2g}" in repr(A)
    cdtype = jnp.complex64 if dtype == np.float32 else jnp.complex128
    x, y = rand(1, (2, *GRID), cdtype), rand(2, (2, POINTS), cdtype)
    E = exact(points)
    want_x = np.asarray(x).reshape(2, -1) @ E.T
    want_y = (np.asarray(y) @ E.conj()).reshape(2, *GRID)
    for got, want in ((A(x), want_x), (A.H(y), want_y)):
        assert np.linalg.norm(np.asarray(got) - want) <= promised * np.linalg.norm(want)


def test_finufft_is_asked_for_the_error_the_jax_path_promises():
    if not FF.finufft_available():
        pytest.skip("jax-finufft is not installed")
    for options in ({}, {"oversamp": 2.0, "width": 6.0}, {"eps": 1e-5}):
        mine, theirs = build("jax", **options), build("finufft", **options)
        assert theirs.plan.accuracy == pytest.approx(options.get("eps", mine.plan.accuracy))


@pytest.mark.parametrize("backend", BACKENDS)
def test_grid_split(backend):
    A = build(backend)
    if A.plan.backend == "finufft":
        with pytest.raises(ValueError, match=r"NUFFT.*backend='finufft'.*backend='jax'"):
            grid_split(A, 2, "Nx")
        return
    B = grid_split(A, 2, "Nx")
    x = rand(3, (2, *GRID))
    assert_close(jax.jit(lambda B, x: B(x))(B, x), A(x), jnp.complex128)


@pytest.mark.parametrize("backend", BACKENDS)
def test_export(backend):
    A = build(backend)
    x = rand(4, (2, *GRID))
    export = jax.export.export(jax.jit(lambda A, x: A(x)))
    if A.plan.backend == "finufft":  # an XLA custom call without compatibility guarantees
        with pytest.raises(ValueError, match="custom call"):
            export(A, x)
        return
    restored = jax.export.deserialize(export(A, x).serialize())
    assert_close(restored.call(A, x), A(x), jnp.complex128)


@pytest.mark.parametrize("backend", BACKENDS)
def test_derivatives_in_both_modes(backend):
    """jvp and vjp w.r.t. the data and the points agree with each other (the adjoint
    identity <v, J u> = <J^T v, u>), and with central differences of the operator's own
    forward for the JAX path (finufft differentiates the exact transform instead)."""
    points, x = jnp.asarray(locs()), rand(5, (2, *GRID))

    def f(p, x):
        return jl.NUFFT(p, GRID, "K", batch_shape="C", backend=backend)(x)

    dp = jnp.asarray(np.random.default_rng(6).standard_normal(points.shape))
    dx, v = rand(7, x.shape), rand(8, (2, POINTS))
    _, tangent = jax.jvp(f, (points, x), (dp, dx))
    # L = Re <v, f(p, x)>: dL = Re <v, tangent> = <gp, dp> + Re sum(gx dx) (JAX's gradient)
    gp, gx = jax.grad(lambda p, x: jnp.vdot(v, f(p, x)).real, argnums=(0, 1))(points, x)
    lhs, rhs = jnp.vdot(v, tangent).real, jnp.sum(gp * dp) + jnp.sum(gx * dx).real
    assert float(abs(lhs - rhs)) <= 1e-9 * float(abs(lhs) + 1)
    if build(backend).plan.backend == "jax":
        h = 1e-6
        fd = (f(points + h * dp, x + h * dx) - f(points - h * dp, x - h * dx)) / (2 * h)
        assert_close(tangent, fd, jnp.complex128, factor=1e4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_splits_by_points_and_batch(backend):
    A = build(backend)
    x, y = rand(9, (2, *GRID)), rand(10, (2, POINTS))
    for tile in ({"K": slice(7, 19)}, {"C": slice(1, 2)}):
        T = A.split(tile)
        k, c = tile.get("K", slice(None)), tile.get("C", slice(None))
        assert_close(T(x[c]), A(x)[c][:, k], jnp.complex128)
        assert_close(T.H(y[c][:, k]), build(backend, locs()[k]).H(y[c][:, k]), jnp.complex128)


def test_without_jax_finufft_the_defaults_are_the_same(monkeypatch):
    """Hidden jax-finufft: `"auto"` still builds the JAX path (the same operator as with
    it installed), and an explicit `backend="finufft"` says how to install it."""
    with_it = build("auto")
    monkeypatch.setitem(sys.modules, "jax_finufft", None)
    FF.finufft_available.cache_clear()
    try:
        without = build("auto")
        assert without.plan.backend == "jax" and repr(without) == repr(with_it)
        x = rand(11, (2, *GRID))
        assert_close(without(x), with_it(x), jnp.complex128)
        with pytest.raises(ImportError, match=r"backend='finufft' needs jax-finufft"):
            build("finufft")
    finally:
        FF.finufft_available.cache_clear()
