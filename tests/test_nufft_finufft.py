"""The finufft backend's kernels (`jaxlinops.functional._finufft`) against the exact
non-uniform DFT: values against `dft_matrix` (numpy), derivatives against the exact
transform written in jax in float64; the adjoint by a dot test; jit, vmap, batch and point
shapes, dtypes, non-finite points and argument errors."""

import math
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("jax_finufft")

from helpers import rand  # noqa: E402
from test_nufft import dft_matrix  # noqa: E402

from jaxlinops.functional import _finufft as FF  # noqa: E402

# even and odd sizes on every axis (finufft's modes for odd N are -(N-1)/2 .. (N-1)/2)
GRIDS = [(7,), (16,), (6, 5), (5, 4, 3)]
DTYPES = [jnp.complex64, jnp.complex128]
NPOINTS = 60


def tolerance(dtype, eps: float) -> float:
    """The relative l2 error bound: finufft's `eps` is a relative l2 target, and its errors
    here were at most 2.5 eps (values) and 1.6 eps (gradients) over 6 seeds; below 1e3
    machine epsilons the rounding of single-precision inputs and outputs dominates."""
    return max(10 * eps, 1e3 * float(jnp.finfo(dtype).eps))


def real_of(dtype):
    return jnp.finfo(dtype).dtype


def points(seed: int, grid, shape=(NPOINTS,), dtype=np.float64) -> np.ndarray:
    """Points `[*shape, D]` uniform in [-N/2, N/2), the first four replaced by the edges
    +-N/2 and by values outside the range (the transform is N-periodic), one of them
    about 2^20 N + N/4, whose angle 2 pi p / N float32 cannot hold to better than 0.5."""
    rng = np.random.default_rng(seed)
    n = np.array(grid, np.float64)
    locs = rng.uniform(-0.5, 0.5, (math.prod(shape), len(grid))) * n
    locs[:4] = [n / 2, -n / 2, locs[4] + 3 * n, (2**20 + 0.25) * n]
    return locs.reshape((*shape, len(grid))).astype(dtype)


def rel_err(got, want) -> float:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def exact(data, locs, grid, adjoint: bool):
    """The exact transform in jax (differentiable in `data` and `locs` `[M, D]`): forward
    `[*grid] -> [M]`, adjoint `[M] -> [*grid]`."""
    axes = np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij")
    freqs = jnp.asarray(np.stack([a.ravel() / n for a, n in zip(axes, grid)], axis=1))
    phase = (locs @ freqs.T).astype(jnp.complex128)
    matrix = jnp.exp(-2j * jnp.pi * phase) / math.sqrt(math.prod(grid))
    return (data @ matrix.conj()).reshape(grid) if adjoint else matrix @ data.ravel()


# --------------------------------------------------------------------------- values
@pytest.mark.parametrize("eps", [1e-2, 1e-6])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("grid", GRIDS, ids=str)
def test_forward_matches_exact_dft(grid, dtype, eps):
    locs = points(0, grid, dtype=real_of(dtype))
    x = rand(1, grid, dtype)
    y = FF.finufft_forward(x, locs, grid, eps)
    assert y.dtype == dtype
    want = dft_matrix(locs, grid) @ np.ravel(x)
    assert rel_err(y, want) <= tolerance(dtype, eps)


@pytest.mark.parametrize("eps", [1e-2, 1e-6])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("grid", GRIDS, ids=str)
def test_adjoint_matches_exact_dft(grid, dtype, eps):
    locs = points(2, grid, dtype=real_of(dtype))
    y = rand(3, (NPOINTS,), dtype)
    x = FF.finufft_adjoint(y, locs, grid, eps)
    assert x.dtype == dtype
    want = (dft_matrix(locs, grid).conj().T @ np.asarray(y)).reshape(grid)
    assert rel_err(x, want) <= tolerance(dtype, eps)


@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("grid", GRIDS, ids=str)
def test_dot_test(grid, dtype):
    """<A x, y> = <x, A^H y>. finufft's type 1 and type 2 at the same eps are exact
    adjoints (interpolation is the transpose of spreading), so at eps 1e-2 this holds far
    below eps: to rounding, relative to |A x| |y|."""
    locs = points(4, grid, dtype=real_of(dtype))
    x, y = rand(5, grid, dtype), rand(6, (NPOINTS,), dtype)
    ax = np.asarray(FF.finufft_forward(x, locs, grid, 1e-2))
    ahy = np.asarray(FF.finufft_adjoint(y, locs, grid, 1e-2))
    gap = abs(np.vdot(y, ax) - np.vdot(ahy, x))
    assert gap <= 1e3 * float(jnp.finfo(dtype).eps) * np.linalg.norm(ax) * np.linalg.norm(y)


def test_batch_and_point_shapes():
    """x `[B1, B2, *grid]`, locs `[L1, L2, D]` -> `[B1, B2, L1, L2]` and back."""
    grid, eps, dtype = (6, 5), 1e-6, jnp.complex128
    locs = points(7, grid, shape=(4, 3))
    matrix = dft_matrix(locs, grid)
    x = rand(8, (2, 3, *grid), dtype)
    y = FF.finufft_forward(x, locs, grid, eps)
    want = (np.asarray(x).reshape(6, -1) @ matrix.T).reshape(2, 3, 4, 3)
    assert rel_err(y, want) <= tolerance(dtype, eps)
    z = rand(9, (2, 3, 4, 3), dtype)
    x = FF.finufft_adjoint(z, locs, grid, eps)
    want = (np.asarray(z).reshape(6, -1) @ matrix.conj()).reshape(2, 3, *grid)
    assert rel_err(x, want) <= tolerance(dtype, eps)


def test_input_dtypes():
    """Real data is promoted to the complex type of its precision; locs are cast to the
    data's precision (float32 points with complex128 data keep complex128 accuracy)."""
    grid, dtype = (6, 5), jnp.complex128
    locs64 = points(10, grid)
    x = rand(11, grid, jnp.float32)
    y = FF.finufft_forward(x, locs64, grid, 1e-6)
    assert y.dtype == jnp.complex64
    assert rel_err(y, dft_matrix(locs64, grid) @ np.ravel(x)) <= tolerance(jnp.complex64, 1e-6)
    locs32 = points(10, grid, dtype=np.float32)
    z = rand(12, (NPOINTS,), jnp.float64)
    x = FF.finufft_adjoint(z, locs32, grid, 1e-9)
    assert x.dtype == dtype
    want = dft_matrix(locs32, grid).conj().T @ np.asarray(z)
    assert rel_err(x, want.reshape(grid)) <= tolerance(dtype, 1e-9)


# --------------------------------------------------------------------------- transformations
@pytest.mark.parametrize("adjoint", [False, True], ids=["fwd", "adj"])
def test_jit_and_vmap(adjoint):
    """Under jit with the points as an argument, and vmap over the data, over the points
    and over both: each slice against the exact DFT."""
    grid, eps, dtype = (6, 5), 1e-6, jnp.complex128
    fn = FF.finufft_adjoint if adjoint else FF.finufft_forward
    call = lambda d, p: fn(d, p, grid, eps)
    shape = (NPOINTS,) if adjoint else grid
    data = rand(13, (3, *shape), dtype)
    locs = np.stack([points(14 + i, grid) for i in range(3)])

    def want(d, p):
        matrix = dft_matrix(p, grid)
        return (matrix.conj().T @ d).reshape(grid) if adjoint else matrix @ np.ravel(d)

    got = jax.jit(call)(data[0], locs[0])
    assert rel_err(got, want(data[0], locs[0])) <= tolerance(dtype, eps)
    for in_axes in [(0, None), (None, 0), (0, 0)]:
        args = [a if axis == 0 else a[0] for a, axis in zip((data, locs), in_axes)]
        got = jax.jit(jax.vmap(call, in_axes=in_axes))(*args)
        for i in range(3):
            d, p = (a[i] if axis == 0 else a for a, axis in zip(args, in_axes))
            assert rel_err(got[i], want(d, p)) <= tolerance(dtype, eps), in_axes


@pytest.mark.parametrize("adjoint", [False, True], ids=["fwd", "adj"])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
@pytest.mark.parametrize("grid", [(7,), (6, 5), (5, 4, 3)], ids=str)
def test_derivatives_against_exact(grid, dtype, adjoint):
    """Reverse mode (grad w.r.t. the data and the points, under jit) and forward mode (jvp
    in both) against the exact transform differentiated by jax in float64."""
    eps = 1e-6
    fn = FF.finufft_adjoint if adjoint else FF.finufft_forward
    locs = points(15, grid, dtype=real_of(dtype))
    data = rand(16, (NPOINTS,) if adjoint else grid, dtype)
    target = rand(17, grid if adjoint else (NPOINTS,), jnp.complex128)

    def loss(f, d, p):
        return jnp.sum(jnp.abs(f(d, p) - target.astype(d.dtype)) ** 2)

    ours = lambda d, p: fn(d, p, grid, eps)
    ref = lambda d, p: exact(d, p, grid, adjoint)
    exact_args = (data.astype(jnp.complex128), jnp.asarray(locs, jnp.float64))
    want = jax.grad(lambda d, p: loss(ref, d, p), argnums=(0, 1))(*exact_args)
    got = jax.jit(jax.grad(lambda d, p: loss(ours, d, p), argnums=(0, 1)))(data, locs)
    for g, w, what in zip(got, want, ("data", "locs")):
        assert g.dtype == (dtype if what == "data" else real_of(dtype))
        assert rel_err(g, w) <= tolerance(dtype, eps), what
    tangents = (rand(18, data.shape, dtype), rand(19, locs.shape, real_of(dtype)))
    got = jax.jvp(ours, (data, jnp.asarray(locs)), tangents)[1]
    exact_tangents = tuple(t.astype(a.dtype) for t, a in zip(tangents, exact_args))
    assert rel_err(got, jax.jvp(ref, exact_args, exact_tangents)[1]) <= tolerance(dtype, eps)


def test_grad_through_vmap_over_points():
    """grad of a loss summed over a vmap over the points (jax-finufft's batching rule
    composed with the derivative rules)."""
    grid, eps = (6, 5), 1e-6
    locs = np.stack([points(20 + i, grid) for i in range(2)])
    x = rand(22, grid, jnp.complex128)

    def loss(transform, x, locs):
        return jnp.sum(jnp.abs(jax.vmap(lambda p: transform(x, p))(locs)) ** 2)

    got = jax.grad(loss, argnums=(1, 2))(lambda d, p: FF.finufft_forward(d, p, grid, eps), x, locs)
    want = jax.grad(loss, argnums=(1, 2))(lambda d, p: exact(d, p, grid, False), x, locs)
    for g, w in zip(got, want):
        assert rel_err(g, w) <= tolerance(jnp.complex128, eps)


# --------------------------------------------------------------------------- bad values
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("dtype", DTYPES, ids=["c64", "c128"])
def test_nonfinite_traced_points_give_nan(dtype, bad):
    """A traced non-finite point: NaN at that point (forward), NaN everywhere (adjoint),
    finite elsewhere. finufft alone returns a finite wrong value for a NaN point in some
    cases, and crashes when every point is NaN (1D, float64): both checked here."""
    grid = (8,)
    locs = points(23, grid, dtype=real_of(dtype))
    locs[[5, 9], 0] = bad
    x, y = rand(24, grid, dtype), rand(25, (NPOINTS,), dtype)
    out = jax.jit(lambda p: FF.finufft_forward(x, p, grid, 1e-6))(locs)
    assert np.array_equal(np.flatnonzero(np.isnan(out)), [5, 9])
    assert np.isnan(jax.jit(lambda p: FF.finufft_adjoint(y, p, grid, 1e-6))(locs)).all()
    every = np.full_like(locs, bad)
    assert np.isnan(jax.jit(lambda p: FF.finufft_forward(x, p, grid, 1e-6))(every)).all()
    assert np.isnan(jax.jit(lambda p: FF.finufft_adjoint(y, p, grid, 1e-6))(every)).all()


X, LOCS = np.ones((6, 5), np.complex64), np.zeros((3, 2), np.float32)
BAD_CALLS = {
    "nan locs": (lambda: FF.finufft_forward(X, np.full((3, 2), np.nan), (6, 5), 1e-6),
                 ValueError, r"finufft_forward.*locs contain NaN"),
    "complex locs": (lambda: FF.finufft_adjoint(X[0, :3], LOCS + 0j, (6, 5), 1e-6),
                     TypeError, r"finufft_adjoint.*locs must be a real"),
    "locs D": (lambda: FF.finufft_forward(X, LOCS[:, :1], (6, 5), 1e-6),
               ValueError, r"finufft_forward.*D = len\(grid_size\)"),
    "4D": (lambda: FF.finufft_forward(np.ones((2,) * 4), np.zeros((3, 4)), (2,) * 4, 1e-6),
           ValueError, r"finufft_forward.*1 to 3 dimensions"),
    "grid size": (lambda: FF.finufft_forward(X, LOCS, (6, 4.5), 1e-6),
                  ValueError, r"finufft_forward\(grid_size=...\).*integral"),
    "x shape": (lambda: FF.finufft_forward(X, LOCS, (5, 6), 1e-6),
                ValueError, r"finufft_forward.*sizes \(5, 6\)"),
    "y shape": (lambda: FF.finufft_adjoint(X[0, :4], LOCS, (6, 5), 1e-6),
                ValueError, r"finufft_adjoint.*sizes \(3,\)"),
    "eps zero": (lambda: FF.finufft_forward(X, LOCS, (6, 5), 0.0),
                 ValueError, r"finufft_forward.*eps must be positive"),
    "eps negative": (lambda: FF.finufft_adjoint(X[0, :3], LOCS, (6, 5), -1e-3),
                     ValueError, r"finufft_adjoint.*eps"),
    "eps string": (lambda: FF.finufft_forward(X, LOCS, (6, 5), "1e-6"),
                   TypeError, r"finufft_forward.*eps must be a real number"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_bad_arguments(case):
    call, exc, match = BAD_CALLS[case]
    with pytest.raises(exc, match=match):
        call()


def test_without_jax_finufft(monkeypatch):
    """Without jax-finufft, `finufft_available()` is False and a transform raises an
    ImportError that says how to install it."""
    monkeypatch.setitem(sys.modules, "jax_finufft", None)  # `import jax_finufft` now fails
    FF.finufft_available.cache_clear()
    try:
        assert not FF.finufft_available()
        with pytest.raises(ImportError, match=r"finufft_forward.*jaxlinops\[finufft\]"):
            FF.finufft_forward(X, LOCS, (6, 5), 1e-6)
    finally:
        FF.finufft_available.cache_clear()
    monkeypatch.undo()
    assert FF.finufft_available()
