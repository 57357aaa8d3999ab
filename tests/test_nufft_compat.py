"""torchlinops' NUFFT-family helpers at its module paths (`linops.nufft.{toeplitz,utils}`,
`functional._interp.{kernels,tests._valid_pts}`), `NUFFT.beta`/`apodize_weights`/`options`,
`FastSamplingNUFFT`'s centering phase, and boolean data through the sampling adjoints;
each against torchlinops itself, sigpy, numpy or an explicit formula."""

import functools

import jax.numpy as jnp
import jax.random as jr
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops.functional._interp import kernels
from jaxlinops.functional._interp.tests._valid_pts import get_valid_locs
from jaxlinops.linops.nufft import toeplitz, utils

torch = pytest.importorskip("torch")
tl = pytest.importorskip("torchlinops")


def test_module_paths():
    assert toeplitz.toeplitz_psf is jl.toeplitz_psf
    assert utils.fftshift_locs is jl.fftshift_locs
    assert utils.ifftshift_locs is jl.ifftshift_locs


@pytest.mark.parametrize("width, oversamp", [(4.0, 1.25), (6.0, 2.0)])
def test_beta_and_apodize_weights_as_sigpy(width, oversamp):
    sp = pytest.importorskip("sigpy")
    grid = (12, 8, 16)  # oversamp * N integral: sigpy rounds up, torchlinops down
    padded = tuple(int(oversamp * n) for n in grid)
    beta = jl.NUFFT.beta(width, oversamp)
    expected = np.pi * (((width / oversamp) * (oversamp - 0.5)) ** 2 - 0.8) ** 0.5
    assert beta == pytest.approx(expected, rel=1e-14)
    apod = jl.NUFFT.apodize_weights(grid, padded, width, beta)
    reference = sp.fourier._apodize(np.ones(grid), 3, oversamp, width, beta)
    np.testing.assert_allclose(apod, reference, rtol=1e-12)


def test_beta_not_real_raises():
    with pytest.raises(ValueError, match="`NUFFT.beta`: width 1.0 and oversamp 1.25"):
        jl.NUFFT.beta(1.0, 1.25)


def test_options():
    locs = np.zeros((5, 2))
    A = jl.NUFFT(locs, (8, 8), "K", oversamp=1.5, width=3.0)
    assert A.options == {"oversamp": 1.5, "width": 3.0, "toeplitz": False, "toeplitz_oversamp": 2.0}
    B = jl.FastSamplingNUFFT(locs, (8, 8), "K", phase_placement="grid")
    assert B.options["phase_placement"] == "grid"


def test_prep_locs_unrecognized_mode():
    with pytest.raises(ValueError, match="Unrecognized padding mode 'edge'"):
        jl.NUFFT.prep_locs(np.zeros((3, 1)), (4,), (5,), "edge")


@pytest.mark.parametrize("padded", [(8, 10, 12), (7, 5, 9), (6, 7, 8)])
def test_fold_centering_is_the_centered_fft(padded):
    """plain FFT at `ifftshift_locs(k)` times the phase is the centered FFT at `k`."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(padded) + 1j * rng.standard_normal(padded)
    centered = np.fft.fftshift(np.fft.fftn(np.fft.ifftshift(x), norm="ortho"))
    plain = np.fft.fftn(x, norm="ortho")
    k = np.stack([rng.integers(0, n, 40) for n in padded], -1)
    m = np.asarray(jl.ifftshift_locs(k, padded))
    phase = np.asarray(jl.FastSamplingNUFFT.fold_centering(k, padded, dtype=jnp.complex128))
    assert jl.FastSamplingNUFFT.fold_centering(k, padded).dtype == jnp.complex64
    np.testing.assert_allclose(plain[tuple(m.T)] * phase, centered[tuple(k.T)], atol=1e-12)
    np.testing.assert_allclose(np.abs(phase), 1.0, rtol=1e-14)


def test_resolve_phase_placement_as_torchlinops():
    ours, theirs = jl.FastSamplingNUFFT, tl.FastSamplingNUFFT
    for args in [("auto", 15, (20, 20, 30)), ("auto", 1000, (8, 8, 8)), ("auto", 512, (8, 8, 8))]:
        assert ours.resolve_phase_placement(*args) == theirs.resolve_phase_placement(*args)
    with pytest.raises(ValueError, match="phase_placement must be one of"):
        ours.resolve_phase_placement("bogus", 15, (4,))


def test_kernels_as_torchlinops():
    x = np.linspace(-1, 1, 51)
    theirs = tl.functional._interp.kernels
    ref = theirs.kaiser_bessel_torch.__wrapped__(torch.from_numpy(x), beta=2.0).numpy()
    np.testing.assert_allclose(kernels.kaiser_bessel_torch(jnp.asarray(x), 2.0), ref, rtol=1e-12)
    np.testing.assert_allclose(
        kernels.spline_torch(jnp.asarray(2 * x)), np.maximum(1 - 2 * np.abs(x), 0)
    )
    fn = kernels.get_kernel_fn("kaiser_bessel", {"beta": 3.0})
    np.testing.assert_allclose(fn(jnp.asarray(x)), kernels.kaiser_bessel(jnp.asarray(x), 3.0))
    assert kernels._apply_default_kernel_params("kaiser_bessel", {}) == {"beta": 1.0}
    with pytest.raises(ValueError, match="`get_kernel_fn`: unrecognized kernel 'box'"):
        kernels.get_kernel_fn("box", {})


@pytest.mark.parametrize("norm", [1, 2])
@pytest.mark.parametrize("padding", ["zero", "circular"])
def test_weights_torch_as_torchlinops(norm, padding):
    rng = np.random.default_rng(1)
    locs = rng.uniform(-1, 9, (6, 2))
    grid_locs = np.floor(locs)[:, None, :] + rng.integers(-2, 3, (6, 4, 2))
    size, radius = np.array([8, 8]), 1.5
    theirs = tl.functional._interp.kernels
    kb_t = functools.partial(theirs.kaiser_bessel_torch.__wrapped__, beta=2.0)
    ref = theirs.weights_torch(
        *(torch.from_numpy(a) for a in (locs, grid_locs)),
        torch.tensor(radius),
        norm,
        kb_t,
        torch.from_numpy(size),
        padding,
    )
    kb = functools.partial(kernels.kaiser_bessel_torch, beta=2.0)
    args = (jnp.asarray(locs), jnp.asarray(grid_locs), radius, norm, kb, jnp.asarray(size))
    ours = kernels.weights_torch(*args, padding)
    inside = np.asarray(ours[2])  # torchlinops' kernel is NaN (set to 0) outside [-1, 1]
    np.testing.assert_allclose(np.where(inside, ours[0], 0), np.where(inside, ref[0].numpy(), 0))
    np.testing.assert_array_equal(ours[1], ref[1].numpy())
    np.testing.assert_array_equal(ours[2], ref[2].numpy())
    with pytest.raises(ValueError, match="`weights_torch`: unexpected norm 3"):
        kernels.weights_torch(*args[:3], 3, kb, args[5], padding)


@pytest.mark.parametrize("valid, centered", [(True, False), (False, True)])
def test_get_valid_locs_ranges(valid, centered):
    grid = (10, 8, 9)
    locs = np.asarray(get_valid_locs((300,), grid, 3, 4.0, "cpu", centered, valid, key=jr.key(0)))
    assert locs.shape == (300, 3) and locs.dtype == np.float32  # torch's default dtype
    low = np.full(3, 2.0 if valid else 0.0)
    high = np.array(grid) - 1 - low
    shift = np.array(grid) / 2 if centered else 0.0
    assert np.all(locs >= low - shift) and np.all(locs <= high - shift)


def test_get_valid_locs_bad_device():
    with pytest.raises(ValueError, match="`get_valid_locs\\(device=...\\)`: no device 'tpu:9'"):
        get_valid_locs((3,), (8,), 1, 2.0, "tpu:9")


def test_bool_sampling_adjoint_as_torchlinops():
    """Booleans scatter-add by logical or, as torch's `index_put_(accumulate=True)`."""
    idx, v = np.array([1, 1, 2, 3]), np.array([True, True, False, True])
    A = jl.Sampling((idx,), input_size=(5,), output_shape="K")
    B = tl.Sampling((torch.from_numpy(idx),), input_size=(5,), output_shape=("K",))
    np.testing.assert_array_equal(A.H(v), B.H(torch.from_numpy(v)).numpy())
    assert A.H(v).dtype == jnp.bool_
    out = jl.functional.index_adjoint(jnp.asarray(v), (jnp.asarray(idx),), (5,))
    np.testing.assert_array_equal(out, A.H(v))


def test_bool_sampling_nufft_adjoint():
    """A sampling NUFFT's adjoint of booleans is that of the same points as 0/1."""
    locs = np.array([[0.5], [1.0], [-2.0]])
    A = jl.NUFFT(locs, (4,), "K", mode="sampling")
    v = np.array([True, False, True])
    np.testing.assert_allclose(A.H(v), A.H(v.astype(np.complex128)), atol=1e-12)


def test_grid_size_is_the_image_grid_as_torchlinops():
    locs = np.random.default_rng(0).uniform(-4, 4, (6, 2)).astype(np.float32)
    mine = jl.NUFFT(locs, (8, 10), "K")
    theirs = tl.NUFFT(torch.from_numpy(locs), (8, 10), output_shape=("K",))
    assert mine.grid_size == tuple(theirs.grid_size) == (8, 10)
