"""Density compensation (`jaxlinops.mri._dcf`): Pipe–Menon against sigpy, the flatness of
the compensated sampling density, the radial ramp against numpy, and the "auto" choice."""

import logging

import jax
import numpy as np
import pytest

from jaxlinops.mri._dcf import density_compensation, is_radial, pipe_menon_dcf, radial_dcf

N = 64
GRID = (N, N)


def centre_out(spokes=32, samples=32):
    """Half spokes from the centre out at angles 2 pi (i + 1/2) / spokes: `[S, K, 2]`."""
    angles = 2 * np.pi * (np.arange(spokes) + 0.5) / spokes
    r = np.arange(samples)
    return np.stack([r * np.cos(angles)[:, None], r * np.sin(angles)[:, None]], axis=-1)


def radial(spokes=32, samples=64, offset=0.5):
    """Full spokes through the centre at angles pi (i + offset) / spokes: `[S, K, 2]`.
    With `offset=0.5` no coordinate lies within rounding error of an integer (other than
    the exact centre)."""
    angles = np.pi * (np.arange(spokes) + offset) / spokes
    r = np.arange(samples) - samples // 2
    return np.stack([r * np.cos(angles)[:, None], r * np.sin(angles)[:, None]], axis=-1)


def spiral(arms=12, samples=512, turns=8):
    """Archimedean-in-angle spiral arms, centre out to N/2: `[arms, K, 2]`."""
    t = np.linspace(0, 1, samples)
    theta = 2 * np.pi * (np.arange(arms)[:, None] / arms + turns * np.sqrt(t))
    return np.stack([N / 2 * t * np.cos(theta), N / 2 * t * np.sin(theta)], axis=-1)


def max_rel_diff(got, want):
    got, want = np.asarray(got), np.asarray(want)
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


# Same kernel (sigpy's Kaiser–Bessel polynomial), same grid, same iteration: only the order
# of the sums differs, ~1e-16 per operation, and 30 multiplicative updates keep that at
# ~1e-14 (measured). 1e-10 leaves room for other CPUs while catching any kernel, window or
# grid mismatch (a wrong beta or width changes the weights by > 1e-2, a missing edge entry
# of the window by ~1e-3).
SIGPY_RTOL = 1e-10


@pytest.mark.parametrize(
    "locs",
    [radial(), np.round(radial(offset=0.0), 10), spiral(arms=8, samples=256)],
    ids=["radial", "radial-on-axes", "spiral"],
)
def test_pipe_menon_matches_sigpy(locs):
    """The weights equal sigpy's to float64 rounding. `radial-on-axes` has spokes along
    the axes (exact integer coordinates and the centre); its coordinates are rounded to
    1e-10 for both, because cos(pi / 2) = 6e-17 puts points within rounding error of the
    kernel window's edge, where the unnormalised kernel jumps from 1 to 0 (0.2% of its
    peak) and a last-bit difference decides which side they fall on."""
    sigpy_mri = pytest.importorskip("sigpy.mri")
    want = sigpy_mri.pipe_menon_dcf(locs, GRID, show_pbar=False)
    got = pipe_menon_dcf(locs, GRID)
    assert got.shape == locs.shape[:-1] and got.dtype == np.float64
    assert max_rel_diff(got, want) < SIGPY_RTOL


def kernel_integral(beta=8.0, width=4.0):
    """$\\int K(x / (w/2)) dx$ of the Kaiser–Bessel kernel, by the trapezoid rule."""
    x = np.linspace(-1, 1, 200_001)
    return float(np.trapezoid(np.i0(beta * np.sqrt(1 - x * x)), x)) * width / 2


@pytest.mark.parametrize(
    "locs, outer", [(radial(), 17.5), (spiral(), 29.5)], ids=["radial", "spiral"]
)
def test_compensated_density_is_flat(locs, outer):
    """An independent check of the fixed point: the weighted sampling density is uniform.

    At the fixed point $\\sum_m w_m \\sum_g K(g - p_l) K(g - p_m) = 1$; summing over a
    uniform weighted density $\\rho$ gives $\\rho (\\int K)^{2D} = 1$ (the grid sum
    $\\sum_g K(g - p)$ is $\\int K$ up to a small ripple in $p$). So $\\sum w$ over an
    annulus of k-space, divided by its area, must be $(\\int K)^{-4}$ in 2-D, at every
    radius, although the radial trajectory samples the centre 10x more densely than
    radius 16. Annuli run from ring to ring (half-integer radii); the radial one stops
    at 17.5, beyond which 64 half-spokes leave gaps wider than the kernel (the density
    cannot be seen there). 3% covers the kernel's ripple and the discreteness of the
    samples (measured: within 1.5%)."""
    w = np.asarray(pipe_menon_dcf(locs, GRID))
    radius = np.linalg.norm(locs, axis=-1)
    edges = np.arange(1.5, outer + 1, 4.0)
    density = [
        w[(radius >= a) & (radius < b)].sum() / (np.pi * (b * b - a * a))
        for a, b in zip(edges[:-1], edges[1:])
    ]
    expected = kernel_integral() ** -4
    np.testing.assert_allclose(density, expected, rtol=0.03)


@pytest.mark.parametrize(
    "locs, centre",
    [(radial(), 1 / 4), (centre_out(), 1 / 8)],
    ids=["full-spokes", "centre-out"],
)
def test_radial_dcf_is_the_ramp(locs, centre):
    """|k| normalised to mean 1, with each centre sample at `centre` times the first ring's
    weight: its share of the disc of radius dk/2 over a first-ring sample's share of the
    ring [dk/2, 3 dk/2] (area 1/8 of the ring's; full spokes have one centre sample per
    two first-ring ones, centre-out spokes one per one)."""
    r = np.sqrt(locs[..., 0] ** 2 + locs[..., 1] ** 2)
    first = r[r > 1e-9].min()
    want = np.where(r > 1e-9, r, first * centre)
    got = radial_dcf(locs)
    assert got.shape == locs.shape[:-1]
    np.testing.assert_allclose(got, want / want.mean(), rtol=1e-12)


def test_radial_dcf_3d_is_the_squared_radius():
    """A 3-D radial ("koosh ball") trajectory samples with density |k|^-2."""
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(6, 1, 3))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    locs = directions * (np.arange(9) - 4.0)[None, :, None]
    r2 = np.sum(locs**2, axis=-1)
    want = np.where(r2 > 0, r2, 2 / 26)  # the centre: 2 / (3^3 - 1) of the first shell
    np.testing.assert_allclose(radial_dcf(locs), want / want.mean(), rtol=1e-12)


def chosen(caplog, locs, **kwargs):
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        caplog.clear()
        w = density_compensation(locs, GRID, **kwargs)
    (line,) = [r.getMessage() for r in caplog.records if "density_compensation" in r.getMessage()]
    return w, line


def test_auto_picks_the_ramp_for_radial_and_pipe_menon_otherwise(caplog):
    assert is_radial(radial()) and is_radial(centre_out()) and not is_radial(spiral())
    w, line = chosen(caplog, radial())
    assert "-> radial" in line and "32 readouts through the centre" in line
    np.testing.assert_allclose(w, radial_dcf(radial()), rtol=1e-12)
    w, line = chosen(caplog, spiral())
    assert "-> pipe-menon" in line and "leaves the line" in line
    pm = np.asarray(pipe_menon_dcf(spiral(), GRID))
    np.testing.assert_allclose(w, pm / pm.mean(), rtol=1e-12)
    _, line = chosen(caplog, radial(), method="pipe-menon")
    assert "-> pipe-menon" in line


def test_uneven_spacing_is_not_radial():
    locs = radial()
    bent = locs * (1 + 0.01 * np.linspace(-1, 1, 64) ** 2)[None, :, None]  # a bent ramp
    assert not is_radial(bent)
    assert not is_radial(np.random.default_rng(0).uniform(-N / 2, N / 2, (4, 16, 2)))


def test_auto_under_jit_is_pipe_menon(caplog):
    f = jax.jit(lambda locs: density_compensation(locs, GRID))
    with caplog.at_level(logging.INFO, logger="jaxlinops"):
        w = f(radial(spokes=8, samples=16))
    assert any("-> pipe-menon (locs are traced" in r.getMessage() for r in caplog.records)
    pm = np.asarray(pipe_menon_dcf(radial(spokes=8, samples=16), GRID))
    np.testing.assert_allclose(w, pm / pm.mean(), rtol=1e-12)


def test_jit_matches_eager():
    locs = spiral(arms=4, samples=64)
    f = jax.jit(pipe_menon_dcf, static_argnames=("grid_size", "max_iter"))
    eager = pipe_menon_dcf(locs, GRID, max_iter=10)
    np.testing.assert_allclose(f(locs, grid_size=GRID, max_iter=10), eager, rtol=1e-12)


def test_oversampled_grid_keeps_the_density_flat():
    """With a 2x grid (kernel width in its points) the weights change but the weighted
    density stays flat: the ratio of annulus densities is 1."""
    locs = spiral()
    w = np.asarray(pipe_menon_dcf(locs, GRID, oversamp=2.0, width=6.0))
    radius = np.linalg.norm(locs, axis=-1)
    inner, outer = (w[(radius >= a) & (radius < b)].sum() / (b * b - a * a) for a, b in
                    ((2, 10), (18, 26)))  # fmt: skip
    assert abs(inner / outer - 1) < 0.03


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: density_compensation(radial(), GRID, method="ramp"), "`method` must be one"),
        (lambda: density_compensation(spiral(), GRID, method="radial"), "`method='radial'`"),
        (lambda: pipe_menon_dcf(radial(), (N,)), r"pipe_menon_dcf: `grid_size` .* \(D=2\)"),
        (lambda: pipe_menon_dcf(radial(), GRID, max_iter=-1), "pipe_menon_dcf: `max_iter`"),
        (lambda: pipe_menon_dcf(radial(), GRID, oversamp=0.5), "oversamp"),
    ],
)
def test_errors_name_the_function_and_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
