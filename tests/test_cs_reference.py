r"""Regularised SENSE reconstruction against sigpy's apps: `L1WaveletRecon` and
`TotalVariationRecon` run to convergence on a small Cartesian multi-coil problem, and
jaxlinops' `fista` and `pdhg` on the same objective, reach the same objective value
(evaluated by one numpy function on both solutions; the issue's target: 1e-3 relative).

The problem matches sigpy's exactly: `Sense(maps, weights=mask)` is $\sqrt{w}\, F S$ (the
centred orthonormal FFT) and the apps weight the data by $\sqrt{w}$, so with a 0/1 mask
the objective is $\tfrac12 \|M F S x - y\|^2 + \lambda R(x)$, with

- $R(x) = \|W x\|_1$ in `L1WaveletRecon` (its default solver: the accelerated gradient
  method, FISTA). sigpy's wavelet pads with zeros (PyWavelets' `mode="zero"`): a redundant
  frame, $W^H W = I$ but $W W^H \ne I$, for which its prox $W^H \mathrm{soft}(W v)$ is not
  the prox of $\|W x\|_1$, so it solves no problem jaxlinops can state (`jl.Wavelet` is
  the orthogonal, periodized transform). sigpy's wavelet module is run with PyWavelets'
  periodization here, the app otherwise as shipped.
- $R(x) = \|D x\|_1$ in `TotalVariationRecon`: sigpy's `FiniteDifference` (periodic
  backward differences, stacked) under `L1Reg`, soft thresholding entry by entry, so
  anisotropic TV (its default solver: PDHG). `jl.FiniteDifference` differences forwards:
  a circular shift of sigpy's, the same norm.
"""

import numpy as np
import pytest
import pywt

import jaxlinops as jl
from jaxlinops.demo import coil_maps, phantom

N, COILS, LAMBDA = 32, 4, 0.02


@pytest.fixture(scope="module")
def problem():
    """`(maps, mask, y)`: 4 coil maps, a variable-density random mask (about 37% of
    k-space, the centre 9 x 9 fully sampled) and masked k-space with 1% noise; float64."""
    rng = np.random.default_rng(0)
    maps = coil_maps(N, COILS).astype(np.complex128)
    k = np.abs(np.arange(N) - N // 2)
    centre = np.maximum(k[:, None], k[None, :]) <= 4
    mask = ((rng.uniform(size=(N, N)) < 0.35) | centre).astype(np.float64)
    clean = centred_fft(maps * phantom(N))
    noise = rng.standard_normal((2, *clean.shape)) * 1e-2 * np.abs(clean).max() / np.sqrt(2)
    return maps, mask, mask * (clean + noise[0] + 1j * noise[1])


def centred_fft(x: np.ndarray) -> np.ndarray:
    axes = (-2, -1)
    return np.fft.fftshift(np.fft.fft2(np.fft.ifftshift(x, axes=axes), norm="ortho"), axes=axes)


def objective(x, maps, mask, y, kind: str) -> float:
    r"""$\tfrac12 \|M F S x - y\|^2 + \lambda R(x)$: $R$ the orthogonal db4 wavelet's
    $\ell_1$ norm (PyWavelets' default levels) or anisotropic periodic TV; numpy alone."""
    x = np.asarray(x)
    data = 0.5 * np.sum(np.abs(mask * centred_fft(maps * x) - y) ** 2)
    if kind == "wavelet":
        coefficients = pywt.wavedecn(x, "db4", mode="periodization")
        regulariser = np.abs(pywt.coeffs_to_array(coefficients)[0]).sum()
    else:
        regulariser = sum(np.abs(np.roll(x, 1, axis) - x).sum() for axis in (0, 1))
    return float(data + LAMBDA * regulariser)


def sense(maps, mask) -> jl.NamedLinop:
    """$A = M F S$, `(Nx, Ny) -> (C, Kx, Ky)`."""
    S = jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    F = jl.FFT(2, "C", ("Nx Ny", "Kx Ky"), centered=True)
    return jl.Diagonal(mask, "C Kx Ky", broadcast_dims="C") @ F @ S


class _Periodization:
    """PyWavelets with `mode="periodization"` where sigpy's wavelet module asks for
    `mode="zero"`: sigpy's `Wavelet` becomes the orthogonal transform."""

    def __getattr__(self, name: str):
        return getattr(pywt, name)

    @staticmethod
    def wavedecn(data, wavelet, mode, **kwargs):
        return pywt.wavedecn(data, wavelet, mode="periodization", **kwargs)

    @staticmethod
    def waverecn(coeffs, wavelet, mode, **kwargs):
        return pywt.waverecn(coeffs, wavelet, mode="periodization", **kwargs)


def test_sigpys_own_wavelet_is_a_redundant_frame():
    """Why the wavelet test swaps sigpy's boundary: its shipped `Wavelet` has more
    coefficients than pixels and is not unitary ($W W^H \\ne I$)."""
    sp = pytest.importorskip("sigpy")
    W = sp.linop.Wavelet((N, N), wave_name="db4")
    assert W.oshape != [N, N]
    c = np.random.default_rng(1).standard_normal(W.oshape)
    assert np.abs(W(W.H(c)) - c).max() > 0.1


def test_l1_wavelet_matches_sigpy(problem, monkeypatch):
    """`L1WaveletRecon` (sigpy's FISTA, its own step) and `fista` with `L1(lamda,
    Wavelet)` (the default step), 300 iterations each: both converged (FISTA is at
    rounding by then on this problem), the same objective."""
    sp = pytest.importorskip("sigpy")
    import sigpy.mri.app
    import sigpy.wavelet

    maps, mask, y = problem
    monkeypatch.setattr(sigpy.wavelet, "pywt", _Periodization())
    assert sp.linop.Wavelet((N, N), wave_name="db4").oshape == [N, N]
    app = sigpy.mri.app.L1WaveletRecon(y, maps, LAMBDA, weights=mask, max_iter=300, show_pbar=False)
    theirs = objective(app.run(), maps, mask, y, "wavelet")
    prox = jl.alg.L1(LAMBDA, jl.Wavelet("Nx Ny", wavelet="db4"))
    x = jl.alg.fista(sense(maps, mask), y, prox, max_num_iters=300, progress=False)
    ours = objective(x, maps, mask, y, "wavelet")
    assert abs(ours - theirs) <= 1e-3 * theirs, (ours, theirs)


def test_total_variation_matches_sigpy(problem):
    """`TotalVariationRecon` (sigpy's PDHG, its own steps) and `pdhg` with `G =
    FiniteDifference` and `L1(lamda)` (the default steps), 1000 iterations each: the same
    objective. (Had sigpy's TV been isotropic, its solution would be worse in this
    anisotropic objective than ours.)"""
    pytest.importorskip("sigpy")
    import sigpy.mri.app

    maps, mask, y = problem
    app = sigpy.mri.app.TotalVariationRecon(
        y, maps, LAMBDA, weights=mask, max_iter=1000, show_pbar=False
    )
    theirs = objective(app.run(), maps, mask, y, "tv")
    D = jl.FiniteDifference("Nx Ny")
    x = jl.alg.pdhg(
        sense(maps, mask), y, jl.alg.L1(LAMBDA), G=D, max_num_iters=1000, progress=False
    )
    ours = objective(x, maps, mask, y, "tv")
    assert abs(ours - theirs) <= 1e-3 * theirs, (ours, theirs)
