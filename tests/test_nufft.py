"""NUFFT and its functional form against an exact non-uniform DFT written in numpy and the
documented pipeline written in numpy (`nufft_matrix`), numpy FFT/pad/index references for
the sampling mode, and the error paths."""

import math
import re

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import assert_close, rand
from test_interp import ref_matrix

import jaxlinops as jl

F = jl.functional
CASES = {"2d": ((16, 16), 200), "3d": ((8, 8, 8), 150)}
# (oversamp, width) -> the relative L2 error bound against the exact DFT
ACCURACY = {(1.25, 4.0): 1e-2, (2.0, 6.0): 1e-5}


def dft_matrix(locs, grid):
    """The exact centered, orthonormal non-uniform DFT [points, grid entries]:
    exp(-2 pi i sum_d k_d (n_d - N_d // 2) / N_d) / sqrt(prod N)."""
    locs = np.asarray(locs, np.float64).reshape(-1, len(grid))
    axes = np.meshgrid(*[np.arange(n) - n // 2 for n in grid], indexing="ij")
    phase = sum(np.outer(locs[:, d], axes[d].ravel()) / n for d, n in enumerate(grid))
    return np.exp(-2j * np.pi * phase) / np.sqrt(np.prod(grid))


def centered_fft_of_padded(grid, padded):
    """The centered, orthonormal FFT of the image zero-padded about its centre
    (`N // 2 -> Npad // 2`), as a dense matrix [prod Npad, prod N]."""
    widths = [(p // 2 - n // 2, p - n - (p // 2 - n // 2)) for n, p in zip(grid, padded)]
    columns = []
    for e in np.eye(math.prod(grid)):
        image = np.pad(e.reshape(grid), widths)
        columns.append(np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(image), norm="ortho")).ravel())
    return np.stack(columns, axis=1)


def nufft_matrix(locs, grid, oversamp=1.25, width=4.0, mode="interpolate", apodize=None):
    """The documented NUFFT pipeline as a dense matrix [points, prod N]: apodize, centered
    pad to floor(os N), centered orthonormal FFT, Kaiser–Bessel interpolation (numpy's
    I0, the documented beta, the half-open window) at p Npad / N + Npad // 2 (wrapped),
    division by w^D sqrt(prod N / prod Npad); or, in sampling mode, the nearest
    padded-grid point."""
    locs = np.asarray(locs, np.float64).reshape(-1, len(grid))
    padded = tuple(math.floor(oversamp * n) for n in grid)
    fft = centered_fft_of_padded(grid, padded)
    pos = np.mod(locs * np.array(padded) / np.array(grid) + np.array(padded) // 2, padded)
    if mode == "sampling":
        nearest = np.mod(np.round(pos).astype(int), padded)
        return fft[np.ravel_multi_index(tuple(nearest.T), padded)]
    beta = np.pi * np.sqrt((width / oversamp) ** 2 * (oversamp - 0.5) ** 2 - 0.8)
    if apodize is None:
        apodize = np.ones(())
        for n, p in zip(grid, padded):
            a = np.sqrt(beta**2 - (np.pi * width * (np.arange(n) - n // 2) / p) ** 2 + 0j)
            apodize = np.multiply.outer(apodize, np.real(a / np.sinh(a)))
    scale = width ** len(grid) * np.sqrt(math.prod(grid) / math.prod(padded))
    M = ref_matrix(pos, padded, width, "kaiser_bessel", 1, "circular", beta, half_open=True)
    return M @ fft * np.ravel(apodize) / scale


def random_locs(seed, grid, npoints, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-0.5, 0.5, (npoints, len(grid))) * np.array(grid)).astype(dtype)


def rel_err(got, want):
    got, want = np.asarray(got).ravel(), np.asarray(want).ravel()
    return np.linalg.norm(got - want) / np.linalg.norm(want)


BACKENDS = [
    "jax",
    "pallas",
    pytest.param(
        "finufft",
        marks=pytest.mark.skipif(
            not F._finufft.finufft_available(), reason="jax-finufft is not installed"
        ),
    ),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("oswidth", sorted(ACCURACY))
@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_accuracy_against_exact_dft(case, dtype, oswidth, backend):
    """Every backend meets the error the plan promises (`plan.accuracy`, in the repr); the
    JAX kernel (jax, pallas) also the table's measured error of the setting, which the
    promise doubles as a margin (finufft is asked for the promise, with its own kernel)."""
    grid, npoints = CASES[case]
    real = jnp.finfo(dtype).dtype
    locs = random_locs(1, grid, npoints, real)
    plan = F.nufft_plan(locs, grid, *oswidth, backend=backend)
    assert plan.backend == backend
    x, y = rand(2, grid, dtype), rand(3, (npoints,), dtype)
    E = dft_matrix(locs, grid)
    bound = plan.accuracy if backend == "finufft" else ACCURACY[oswidth]
    assert bound <= plan.accuracy
    assert rel_err(F.nufft(x, plan), E @ np.asarray(x).ravel()) <= bound
    assert rel_err(F.nufft_adjoint(y, plan), E.conj().T @ np.asarray(y)) <= bound
    assert F.nufft(x, plan).dtype == dtype and F.nufft_adjoint(y, plan).dtype == dtype


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("eps", [1e-2, 1e-4])
def test_eps_is_met_by_every_backend(eps, backend):
    """`NUFFT(eps=...)`, the operator and its adjoint, against the exact DFT (complex128)."""
    grid = (12, 10)
    locs = random_locs(30, grid, 120)
    A = jl.NUFFT(locs, grid, "K", eps=eps, backend=backend)
    x, y = rand(31, grid, jnp.complex128), rand(32, (120,), jnp.complex128)
    E = dft_matrix(locs, grid)
    assert rel_err(A(x), E @ np.ravel(x)) <= eps
    assert rel_err(A.H(y), E.conj().T @ np.asarray(y)) <= eps
    assert f"backend={backend}" in repr(A)


@pytest.mark.parametrize("platform", ["gpu", "cpu"])
def test_auto_backend_is_jax_whatever_is_installed(monkeypatch, platform):
    """`"auto"` is the JAX path on every platform, with jax-finufft installed or not (CI
    installs it): the one path that keeps the whole contract (torchlinops' kernel, grid
    splits, export); finufft and the Pallas kernels are opt-in."""
    monkeypatch.setattr(jax, "default_backend", lambda: platform)
    locs = random_locs(4, (8, 8), 10)
    A = jl.NUFFT(locs, (8, 8), "K", backend="auto")
    assert A.plan.backend == "jax" and jl.NUFFT(locs, (8, 8), "K").plan.backend == "jax"
    assert "backend=jax" in repr(A)


@pytest.mark.skipif(not F._finufft.finufft_available(), reason="jax-finufft is not installed")
def test_the_single_precision_floor_holds_for_finufft_too():
    """eps=1e-6 in complex64 on a 256 grid is below the floor (about 2.6e-5): refused
    whatever the backend, where finufft would deliver 2e-5 to 3e-5."""
    locs = np.asarray(random_locs(5, (256, 256), 50), np.float32)
    for backend in ("jax", "finufft"):
        with pytest.raises(ValueError, match=r"eps=1e-06 is below what complex64 delivers"):
            jl.NUFFT(locs, (256, 256), "K", eps=1e-6, backend=backend)
    assert jl.NUFFT(locs, (256, 256), "K", eps=1e-4, backend="finufft").plan.backend == "finufft"


def test_plan_contents():
    plan = F.nufft_plan(np.array([[0.0, -8.0], [7.5, 3.0]]), (16, 16))
    assert plan.padded_size == (20, 20) and plan.beta == pytest.approx(6.99666, abs=1e-5)
    assert plan.scale == pytest.approx(16 * np.sqrt(256 / 400))
    np.testing.assert_allclose(plan.locs, [[10.0, 0.0], [19.375, 13.75]])
    n = np.arange(16) - 8
    a = np.sqrt(plan.beta**2 - (np.pi * 4 * n / 20) ** 2)
    np.testing.assert_allclose(plan.apodize, np.outer(a / np.sinh(a), a / np.sinh(a)))
    assert F.nufft_plan(np.zeros((1, 2)), (16, 16), 2.0, 6.0).beta == pytest.approx(13.8551, 1e-5)


def test_linop_matches_functional_and_dft():
    grid, locs = (8, 6), random_locs(4, (8, 6), 12).reshape(3, 4, 2)
    op = jl.NUFFT(locs, grid, "R K", oversamp=2.0, width=6.0)
    assert op.ishape == ("...", "Nx", "Ny") and op.oshape == ("...", "R", "K")
    x = rand(5, (2, 8, 6))
    want = np.asarray(x).reshape(2, -1) @ dft_matrix(locs, grid).T
    assert rel_err(op(x), want.reshape(2, 3, 4)) <= 1e-4
    pipeline = np.asarray(x).reshape(2, -1) @ nufft_matrix(locs, grid, 2.0, 6.0).T
    assert_close(op(x), pipeline.reshape(2, 3, 4), jnp.complex128, factor=1e3)  # np.i0
    assert op.flatten() == [op] and isinstance(op.H, jl.Adjoint)
    assert op.size("Nx") == 8 and op.size("K") == 4 and op.size("C") is None


def test_dot_test_and_normal():
    grid = (6, 7)
    op = jl.NUFFT(random_locs(6, grid, 9), grid, "K", batch_shape="C")
    assert not op.toeplitz and op.toeplitz_oversamp == 2.0
    x, y = rand(7, (2, 6, 7)), rand(8, (2, 9))
    jl.testing.assert_adjoint(op, x, y)
    assert_close(op.N(x), op.H(op(x)), jnp.complex128)
    assert op.N.oshape == ("C", "Nx1", "Ny1")


def test_centre_delta_is_flat_and_shift_is_linear_phase():
    grid, locs = (16, 16), random_locs(9, (16, 16), 50)
    plan = F.nufft_plan(locs, grid)
    delta = np.zeros(grid, np.complex128)
    delta[8, 8] = 1
    assert rel_err(F.nufft(jnp.asarray(delta), plan), np.full(50, 1 / 16)) <= 1e-2
    shifted = np.roll(delta, 1, axis=0)
    want = np.exp(-2j * np.pi * locs[:, 0] / 16) / 16
    assert rel_err(F.nufft(jnp.asarray(shifted), plan), want) <= 1e-2


def test_batch_jit_vmap_and_traced_plan():
    grid, locs = (6, 5), random_locs(10, (6, 5), 7)
    op = jl.NUFFT(locs, grid, "K", batch_shape="C", oversamp=2.0, width=6.0)
    x = rand(11, (3, 6, 5))
    flat = jl.NUFFT(locs, grid, "K", oversamp=2.0, width=6.0)
    per_slice = np.asarray(x).reshape(3, -1) @ dft_matrix(locs, grid).T
    bound = ACCURACY[2.0, 6.0]
    assert rel_err(op(x), per_slice) <= bound
    assert rel_err(jax.jit(lambda A, v: A(v))(op, x), per_slice) <= bound
    assert rel_err(jax.vmap(op)(x[:, None]), per_slice[:, None]) <= bound
    assert rel_err(jax.vmap(flat)(x), per_slice) <= bound
    traced = jax.jit(lambda p, v: F.nufft(v, F.nufft_plan(p, grid, 2.0, 6.0)))(locs, x)
    assert rel_err(traced, per_slice) <= bound


@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.complex128], ids=["c64", "c128"])
@pytest.mark.parametrize("grid", [(8, 9), (8, 9, 7)], ids=["2d", "3d"])
def test_every_axis_parity_against_the_pipeline(grid, dtype):
    """The FFT's ramps on the spectrum's side are signs folded into the kernel weights on
    even axes, and ramps on odd ones: padded sizes (10, 11) and (10, 11, 8) mix both, with
    an odd centre 5 on an even axis (where the forward's constant sign (-1)^c matters) and
    an odd count of even axes in 2-D (where a sign flipped on every even axis shows);
    forward and adjoint against the documented pipeline as a dense matrix."""
    locs = random_locs(40, grid, 30)
    plan = F.nufft_plan(locs.astype(jnp.finfo(dtype).dtype), grid)
    assert plan.padded_size == (10, 11, 8)[: len(grid)]
    M = nufft_matrix(locs, grid)
    x, y = rand(41, grid, dtype), rand(42, (30,), dtype)
    factor = 1e3 if dtype == jnp.complex128 else 10.0  # np.i0 vs the fitted polynomials
    assert_close(F.nufft(x, plan), M @ np.asarray(x).ravel(), dtype, factor)
    adjoint = (M.conj().T @ np.asarray(y)).reshape(grid)
    assert_close(F.nufft_adjoint(y, plan), adjoint, dtype, factor)


def inlined(jaxpr) -> list:
    """The equations of `jaxpr` in order, those of nested calls (`jit`) in their place."""
    eqns = []
    for eqn in jaxpr.eqns:
        inner = eqn.params.get("jaxpr")
        eqns += inlined(getattr(inner, "jaxpr", inner)) if inner is not None else [eqn]
    return eqns


@pytest.mark.parametrize("adjoint", [False, True], ids=["forward", "adjoint"])
def test_no_pass_over_the_padded_grid_for_the_ramps(adjoint):
    """On even padded sizes the spectrum side of the centered FFT costs nothing: the
    forward multiplies nothing of the padded grid's size at all (its image-side ramps act
    before the zero-padding), the adjoint nothing before its inverse FFT (the signs are in
    the kernel weights)."""
    grid = (16, 16)
    plan = F.nufft_plan(random_locs(43, grid, 50), grid)
    padded = plan.padded_size
    fn = F.nufft_adjoint if adjoint else F.nufft
    arg = jnp.ones((50,) if adjoint else grid, jnp.complex128)
    eqns = inlined(jax.make_jaxpr(fn)(arg, plan).jaxpr)
    fft = next(i for i, e in enumerate(eqns) if e.primitive.name == "fft")
    checked = eqns[:fft] if adjoint else eqns
    grid_muls = [
        e for e in checked if e.primitive.name == "mul" and e.outvars[0].aval.shape == padded
    ]
    assert not grid_muls, grid_muls


def test_rename_keeps_the_plan():
    op = jl.rename(jl.NUFFT(random_locs(12, (4, 4), 3), (4, 4), "K"), {"Nx": "X", "K": "T"})
    assert op.ishape == ("...", "X", "Ny") and op.oshape == ("...", "T") and op.size("T") == 3


def test_apodize_weights_override():
    grid, locs = (6, 6), random_locs(13, (6, 6), 5)
    weights = np.linspace(0.5, 2, 36).reshape(grid)
    op = jl.NUFFT(locs, grid, "K", apodize_weights=weights)
    x = rand(14, grid)
    want = nufft_matrix(locs, grid, apodize=weights) @ np.asarray(x).ravel()
    assert_close(op(x), want, jnp.complex128, factor=1e3)  # A&S I0 vs np.i0: 2e-7


def test_sampling_mode_against_numpy():
    grid, locs = (6, 5), random_locs(15, (6, 5), 8)
    op = jl.NUFFT(locs, grid, "K", mode="sampling", oversamp=1.5)
    assert op.mode == "sampling"
    x, y = rand(16, grid), rand(17, (8,))
    padded = np.pad(np.asarray(x), ((1, 2), (1, 1)))  # (9, 7), centre 3 -> 4, 2 -> 3
    k = np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(padded), norm="ortho"))
    idx = np.round(locs * np.array([9, 7]) / np.array(grid) + np.array([4, 3]))
    idx = idx.astype(int) % np.array([9, 7])
    assert_close(op(x), k[idx[:, 0], idx[:, 1]], jnp.complex128)
    jl.testing.assert_adjoint(op, x, y)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(locs=np.array([[0.0, np.nan]])), "NUFFT`: locs contain NaN"),
        (dict(locs=np.zeros((3, 3))), "NUFFT`: locs must have shape .* D = len"),
        (dict(mode="gridded"), "NUFFT`: unknown mode 'gridded'"),
        (dict(width=6.0, grid_size=(4, 4)), "NUFFT`: width=6 must be positive and at most"),
        (dict(oversamp=0.5), r"NUFFT`: oversamp must be a finite number >= 1.0; got 0.5"),
        (
            dict(grid_size=(2, 8)),
            r"NUFFT`: width=4 must be .* at most the padded grid .* "
            r"= \(2, 10\) .* \(grid_size=\(2, 8\), oversamp=1.25\)",
        ),
        (dict(width=1.0), "NUFFT`: width 1.0 and oversamp 1.25 give no real Kaiser"),
        (dict(apodize_weights=np.full((8, 8), np.inf)), "NUFFT`: apodize_weights contain NaN"),
        (dict(apodize_weights=np.ones((8, 7))), "NUFFT`: apodize_weights must be a real array"),
        (dict(apodize_weights=np.ones((8, 8)), mode="sampling"), "NUFFT`: apodize_weights app"),
        (dict(output_shape="R K"), r"NUFFT\(.*`output_shape` must name 1 dims"),
        (dict(input_shape="Nx"), r"NUFFT\(.*`input_shape` must name 2 dims"),
        (dict(input_kshape="... K"), r"NUFFT\(.*'...' may appear only"),
        (dict(output_shape="Nx"), r"NUFFT\(.*must all be distinct"),
    ],
)
def test_errors(kwargs, match):
    args = dict(locs=np.zeros((3, 2)), grid_size=(8, 8), output_shape="K") | kwargs
    with pytest.raises(ValueError, match=match):
        jl.NUFFT(**args)


def test_size_and_number_arguments_are_checked():
    locs = np.zeros((3, 2))
    with pytest.raises(
        ValueError, match=r"`NUFFT\(grid_size=...\)` expects integer sizes; got 8.7"
    ):
        jl.NUFFT(locs, (8.7, 8), "K")
    assert jl.NUFFT(locs, (np.int64(8), 8.0), "K").plan.grid_size == (8, 8)
    with pytest.raises(TypeError, match=r"`NUFFT`: oversamp must be a real number; got 'two'"):
        jl.NUFFT(locs, (8, 8), "K", oversamp="two")
    with pytest.raises(TypeError, match=r"`NUFFT`: width must be a real number; got '4'"):
        jl.NUFFT(locs, (8, 8), "K", width="4")
    with pytest.raises(TypeError, match=r"`NUFFT`: toeplitz_oversamp must be a real number"):
        jl.NUFFT(locs, (8, 8), "K", toeplitz_oversamp="2")
    with pytest.raises(ValueError, match=r"`nufft_plan\(grid_size=...\)` expects integer"):
        F.nufft_plan(locs, (8, 7.5))


def test_functional_errors():
    plan = F.nufft_plan(np.zeros((3, 2)), (8, 8))
    with pytest.raises(ValueError, match="`nufft`: expected the last 2 axes .* \\(8, 8\\)"):
        F.nufft(jnp.zeros((8, 7)), plan)
    with pytest.raises(ValueError, match="`nufft_adjoint`: expected the last 1 axes .* \\(3,\\)"):
        F.nufft_adjoint(jnp.zeros((2,)), plan)
    with pytest.raises(ValueError, match="`nufft_plan`: unknown mode"):
        F.nufft_plan(np.zeros((3, 2)), (8, 8), mode="x")
    with pytest.raises(ValueError, match="`NUFFT` expected dim Nx with size 8"):
        jl.NUFFT(np.zeros((3, 2)), (8, 8), "K")(jnp.zeros((7, 8)))


def test_point_order_sorts_by_cell_and_follows_splits():
    grid, locs = (6, 5), random_locs(18, (6, 5), 9).reshape(3, 3, 2)
    x, y = rand(19, grid), rand(20, (3, 3))
    A = jl.NUFFT(locs, grid, "R K")
    M = nufft_matrix(locs, grid)
    order = np.asarray(A.plan.order)
    cells = np.floor(np.asarray(A.plan.locs).reshape(-1, 2)) @ np.array([A.plan.padded_size[1], 1])
    assert sorted(order) == list(range(9))
    assert np.all(np.diff(cells[order]) >= 0)  # visited cell by cell
    assert_close(A(x), (M @ np.ravel(x)).reshape(3, 3), jnp.complex128)
    assert_close(A.H(y), (M.conj().T @ np.ravel(y)).reshape(grid), jnp.complex128)
    tile = jl.split(A, {"K": slice(1, 3)})  # a new order for the tile's points
    assert tile.plan.order.shape == (6,) and sorted(np.asarray(tile.plan.order)) == list(range(6))
    assert_close(tile(x), (M @ np.ravel(x)).reshape(3, 3)[:, 1:], jnp.complex128)


def test_a_stale_point_order_changes_no_result():
    """The order only speeds the gridding up: points replaced after planning (e.g. by an
    optimiser updating the operator's arrays) give their own exact results."""
    grid = (8, 6)
    A = jl.NUFFT(random_locs(21, grid, 12), grid, "K")
    locs = random_locs(22, grid, 12)
    moved = eqx.tree_at(lambda a: a.plan.locs, A, jl.NUFFT(locs, grid, "K").plan.locs)
    x, y = rand(23, grid), rand(24, (12,))
    M = nufft_matrix(locs, grid)
    assert_close(moved(x), M @ np.ravel(x), jnp.complex128)
    assert_close(moved.H(y), (M.conj().T @ y).reshape(grid), jnp.complex128)


@pytest.mark.parametrize("dtype", [jnp.complex64, jnp.complex128], ids=["c64", "c128"])
def test_points_on_padded_grid_nodes_use_the_half_open_window(dtype):
    """Points exactly on padded-grid nodes (the k-space centre, Cartesian samples), also at
    the grid's seam: the window leaves out the neighbour at distance -w/2, as the
    reference does; the closed window (torchlinops') would add it."""
    grid, padded = (8, 8), (16, 16)  # oversamp 2: the nodes are exact in binary
    nodes = np.array([[8, 8], [0, 0], [15, 3], [2, 14], [8, 0]])  # padded-grid units
    locs = (nodes - 8) / 2  # cycles per FOV: (q - Npad // 2) N / Npad
    x = rand(25, grid, dtype)
    got = F.nufft(x, F.nufft_plan(locs, grid, 2.0, 4.0))
    want = nufft_matrix(locs, grid, 2.0, 4.0) @ np.ravel(x)
    assert_close(got, want, dtype)
    # the far-edge neighbours a closed window would add (weight K(1) = 1 for any beta)
    # are left out: they would change the result by far more than the tolerance
    pos = nodes.astype(float)
    extra = ref_matrix(pos, padded, 4.0) - ref_matrix(pos, padded, 4.0, half_open=True)
    assert np.all(extra.sum(axis=1) > 0)
    assert np.max(np.abs(got - want)) < 1e-3 * np.max(np.abs(want))


@pytest.mark.parametrize(
    "low, high, grid, expected",
    [
        (-np.pi, np.pi, (128, 128), "a trajectory in radians"),
        (-0.5, 0.5, (64, 64, 64), "normalised to \\[-0.5, 0.5\\]"),
        (-2000.0, 2000.0, (128, 128), "physical units"),
        (-64.0, 64.0, (128, 128), None),  # cycles per field of view
        (-3.0, 3.0, (8, 8), None),  # +-3 covers most of a small grid
        (0.0, 0.0, (128, 128), None),  # all points at the centre: a placeholder
    ],
)
def test_points_in_other_units_get_one_warning(caplog, low, high, grid, expected):
    """A trajectory in radians, normalised or physical units is valid (the transform is
    periodic) but almost surely wrong: one warning naming the convention, none for
    points in cycles per field of view, none for traced points."""
    rng = np.random.default_rng(0)
    locs = rng.uniform(low, high, (200, len(grid))).astype(np.float32)
    with caplog.at_level("WARNING", logger="jaxlinops"):
        jl.NUFFT(locs, grid, "K")
        jax.jit(lambda p: jl.NUFFT(p, grid, "K").plan.locs)(locs)
    messages = [r.getMessage() for r in caplog.records if "trajectory" in r.getMessage()]
    if expected is None:
        assert messages == []
    else:
        assert len(messages) == 1 and "cycles per field of view" in messages[0]
        assert re.search(expected, messages[0]) and "`NUFFT`" in messages[0]
