"""One NUFFT contract, whatever is installed: a matrix of backends (`"auto"`, `"jax"`,
`"finufft"`, and `"auto"` where its cost model picks finufft) by operations, with
jax-finufft installed (CI installs it) and hidden.

Each backend either does an operation as the default does (the accuracy its `repr`
promises against an exact DFT, a grid split, `jax.export`, forward- and reverse-mode
derivatives, splits by points and batch dims) or refuses it by name. On these small grids
`"auto"` picks the JAX path; `"auto-finufft"` is `"auto"` with the cost model made to
predict finufft faster (as it does at 3-D 128^3): finufft runs the transforms, and the
JAX path stands in for the operations finufft cannot do, so an operator built with
defaults keeps the whole contract either way."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, grid_split, rand

import jaxlinops as jl
from jaxlinops.functional import _backend_cost, _finufft as FF

GRID = (12, 10)
POINTS = 30
FINUFFT = pytest.param(
    "finufft",
    marks=pytest.mark.skipif(not FF.finufft_available(), reason="jax-finufft is not installed"),
)
AUTO_FINUFFT = pytest.param(
    "auto-finufft",
    marks=pytest.mark.skipif(not FF.finufft_available(), reason="jax-finufft is not installed"),
)


@pytest.fixture(params=["auto", "jax", FINUFFT, AUTO_FINUFFT])
def backend(request, monkeypatch) -> str:
    """The backend asked for; `"auto-finufft"` asks for `"auto"` with finufft predicted
    faster for the whole test."""
    if request.param != "auto-finufft":
        return request.param
    monkeypatch.setitem(_backend_cost.COSTS["cpu"], "finufft", (1e-6, 0.0, 0.0, 0.0))
    return "auto"


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


def test_finufft_is_asked_for_the_error_the_jax_path_promises(backend):
    if build(backend).plan.backend != "finufft":
        pytest.skip("the JAX path")
    for options in ({}, {"oversamp": 2.0, "width": 6.0}, {"eps": 1e-5}):
        mine, theirs = build("jax", **options), build(backend, **options)
        assert theirs.plan.backend == "finufft"
        assert theirs.plan.accuracy == pytest.approx(options.get("eps", mine.plan.accuracy))


def test_grid_split(backend):
    A = build(backend)
    if A.plan.backend == "finufft" and not A.plan.auto:
        with pytest.raises(ValueError, match=r"NUFFT.*backend='finufft'.*backend='jax'"):
            grid_split(A, 2, "Nx")
        return
    B = grid_split(A, 2, "Nx")
    x = rand(3, (2, *GRID))
    # slabs run the JAX path (for finufft chosen by "auto" too)
    assert_close(jax.jit(lambda B, x: B(x))(B, x), build("jax")(x), jnp.complex128)


def test_export(backend):
    A = build(backend)
    x = rand(4, (2, *GRID))
    export = jax.export.export(jax.jit(lambda A, x: A(x)))
    if A.plan.backend == "finufft" and not A.plan.auto:  # a custom call without guarantees
        with pytest.raises(ValueError, match="custom call"):
            export(A, x)
        return
    restored = jax.export.deserialize(export(A, x).serialize())
    # the exported program is the JAX path (for finufft chosen by "auto" too)
    assert_close(restored.call(A, x), build("jax")(x), jnp.complex128)


def test_derivatives_in_both_modes(backend):
    """jvp and vjp w.r.t. the data and the points agree with each other (the adjoint
    identity <v, J u> = <J^T v, u>), and with central differences of the forward that jvp
    returns, for the JAX path: also where `"auto"` chose finufft, whose derivatives with
    respect to the points (and their primal) are the JAX path's. finufft by name
    differentiates the exact transform instead."""
    points, x = jnp.asarray(locs()), rand(5, (2, *GRID))

    def f(p, x, backend=backend):
        return jl.NUFFT(p, GRID, "K", batch_shape="C", backend=backend)(x)

    dp = jnp.asarray(np.random.default_rng(6).standard_normal(points.shape))
    dx, v = rand(7, x.shape), rand(8, (2, POINTS))
    primal, tangent = jax.jvp(f, (points, x), (dp, dx))
    # L = Re <v, f(p, x)>: dL = Re <v, tangent> = <gp, dp> + Re sum(gx dx) (JAX's gradient)
    gp, gx = jax.grad(lambda p, x: jnp.vdot(v, f(p, x)).real, argnums=(0, 1))(points, x)
    lhs, rhs = jnp.vdot(v, tangent).real, jnp.sum(gp * dp) + jnp.sum(gx * dx).real
    assert float(abs(lhs - rhs)) <= 1e-9 * float(abs(lhs) + 1)
    plan = build(backend).plan
    if plan.backend == "jax" or plan.auto:
        assert_close(primal, f(points, x, "jax"), jnp.complex128)
        h = 1e-6
        fd = (f(points + h * dp, x + h * dx, "jax") - f(points - h * dp, x - h * dx, "jax")) / (
            2 * h
        )
        assert_close(tangent, fd, jnp.complex128, factor=1e4)


@pytest.mark.parametrize("dtype", [jnp.complex128, jnp.float64], ids=["complex", "real"])
def test_transposes_dot_test(backend, dtype):
    """sum(y * A x) = sum(A^T y * x) with A^T from JAX's transposition (`jax.vjp`; its real
    part for real `x`, and so the real parts), and the data's gradient equals the JAX
    path's up to the two backends' errors."""
    A = build(backend)
    x, y = rand(12, (2, *GRID), dtype), rand(13, (2, POINTS))
    out, vjp = jax.vjp(lambda x: A(x), x)
    (ty,) = vjp(y)
    assert ty.dtype == x.dtype
    lhs, rhs = jnp.sum(y * out), jnp.sum(ty.astype(y.dtype) * x.astype(y.dtype))
    if dtype == jnp.float64:
        lhs, rhs = lhs.real, rhs.real
    assert float(abs(lhs - rhs)) <= 1e-12 * float(jnp.linalg.norm(y) * jnp.linalg.norm(out))
    (ty_jax,) = jax.vjp(lambda x: build("jax")(x), x)[1](y)
    bound = 2 * A.plan.accuracy * float(jnp.linalg.norm(ty_jax))
    assert float(jnp.linalg.norm(ty - ty_jax)) <= bound


def test_vmap_over_the_data(backend):
    """`vmap` over a batch axis of the data that is not the leading one (the transforms
    receive it as axis 1): each entry as the transform gives it alone (finufft, where
    "auto" chose it, takes the batch)."""
    plan = build(backend).plan
    x, y = rand(18, (*GRID[:1], 3, *GRID[1:])), rand(19, (POINTS, 3))
    got_x = jax.vmap(lambda v: jl.functional.nufft(v, plan), in_axes=1)(x)
    got_y = jax.vmap(lambda v: jl.functional.nufft_adjoint(v, plan), in_axes=1)(y)
    for k in range(3):
        assert_close(got_x[k], jl.functional.nufft(x[:, k], plan), jnp.complex128)
        assert_close(got_y[k], jl.functional.nufft_adjoint(y[:, k], plan), jnp.complex128)


def test_vmap_over_the_points(backend):
    """Operators whose points differ per batch entry (`vmap` over the points): each entry
    as its own operator; by the JAX path where "auto" chose finufft."""
    stack = jnp.stack([jnp.asarray(locs(seed=s)) for s in (0, 1)])
    x = rand(14, (2, *GRID))

    def apply(p, x, backend=backend):
        return jl.NUFFT(p, GRID, "K", backend=backend)(x)

    got = jax.vmap(apply)(stack, x)
    reference = "jax" if build(backend).plan.auto else backend
    for k in range(2):
        assert_close(got[k], apply(stack[k], x[k], reference), jnp.complex128)


def test_splits_by_points_and_batch(backend):
    A = build(backend)
    x, y = rand(9, (2, *GRID)), rand(10, (2, POINTS))
    for tile in ({"K": slice(7, 19)}, {"C": slice(1, 2)}):
        T = A.split(tile)
        k, c = tile.get("K", slice(None)), tile.get("C", slice(None))
        assert_close(T(x[c]), A(x)[c][:, k], jnp.complex128)
        assert_close(T.H(y[c][:, k]), build(backend, locs()[k]).H(y[c][:, k]), jnp.complex128)


def test_without_jax_finufft_the_defaults_are_the_same(monkeypatch):
    """Hidden jax-finufft: `"auto"` builds the JAX path, here the same operator as with it
    installed (on this small grid), and says why; an explicit `backend="finufft"` says how
    to install it."""
    with_it = build("auto")
    monkeypatch.setitem(sys.modules, "jax_finufft", None)
    FF.finufft_available.cache_clear()
    try:
        without = build("auto")
        assert without.plan.backend == with_it.plan.backend == "jax"
        assert "(auto: jax-finufft is not installed)" in repr(without)
        x = rand(11, (2, *GRID))
        assert_close(without(x), with_it(x), jnp.complex128)
        with pytest.raises(ImportError, match=r"backend='finufft' needs jax-finufft"):
            build("finufft")
    finally:
        FF.finufft_available.cache_clear()


@pytest.mark.parametrize("dim", ["C", "K"])
def test_sharded_across_devices(backend, dim):
    """Split along the batch or the point dim over 2 devices (`shard_map`)."""
    A = build(backend)
    spec = jl.BatchSpec({dim: 1 if dim == "C" else 15}, device_matrix=jax.devices()[:2])
    B = jl.create_batched_linop(A, spec)
    x, y = rand(15, (2, *GRID)), rand(16, (2, POINTS))
    assert_close(jax.jit(lambda B, x: B(x))(B, x), A(x), jnp.complex128)
    assert_close(jax.jit(lambda B, y: B.H(y))(B, y), A.H(y), jnp.complex128)


def test_toeplitz_normal(backend):
    """`A.N` by its Toeplitz kernel (on finufft chosen by "auto", the kernel's backend is
    chosen again for the embedded grid) is `A^H A` within the errors the two promise."""
    A = build(backend, toeplitz=True)
    x = rand(17, (2, *GRID))
    want = A.H(A(x))
    error = float(jnp.linalg.norm(A.N(x) - want) / jnp.linalg.norm(want))
    assert error <= 2 * A.plan.accuracy
