"""Coil sensitivity maps: `espirit_maps` against sigpy's `EspiritCalib` and the true maps,
`walsh_maps` against the true maps; batching, jit, 3-D, dtypes and bad input.

The data: a two-disk (or two-ball) object times smooth coil maps (Gaussians centred
outside the field of view with a linear phase each, unit root-sum-of-squares), the
centred orthonormal FFT, plus complex Gaussian noise of standard deviation 0.01 (the
object is about 1, each coil's map about $C^{-1/2}$: a per-coil SNR of about 35).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxlinops.mri._espirit import espirit_maps
from jaxlinops.mri._walsh import walsh_maps

NOISE = 0.01


def true_maps(grid, coils):
    """`(coils, *grid)`: Gaussians of width 1 centred at radius 1.5 around the field of view
    ($[-1, 1]$ per axis), each with a linear phase of up to $\\pi/2$ across it."""
    r = np.stack(np.meshgrid(*[np.linspace(-1, 1, n) for n in grid], indexing="ij"))
    maps = []
    for k in range(coils):
        a = 2 * np.pi * k / coils
        direction = np.array([np.cos(a), np.sin(a), (-1) ** k / 2][: len(grid)])
        distance = np.sum((r - 1.5 * direction.reshape(-1, *[1] * len(grid))) ** 2, axis=0)
        phase = np.pi / 2 * np.tensordot(direction, r, axes=1) + a
        maps.append(np.exp(-distance / 2 + 1j * phase))
    maps = np.stack(maps)
    return maps / np.sqrt(np.sum(np.abs(maps) ** 2, axis=0))


def phantom(grid):
    """A disk (ball) of radius 0.8 and value 1 holding one of radius 0.3 and value 0.5."""
    r = np.stack(np.meshgrid(*[np.linspace(-1, 1, n) for n in grid], indexing="ij"))
    inner = np.sum((r - 0.3 * np.eye(len(grid))[0].reshape(-1, *[1] * len(grid))) ** 2, axis=0)
    return (np.sum(r**2, axis=0) <= 0.64) * (1 - 0.5 * (inner <= 0.09))


def data(grid, coils, dtype, seed=0):
    """Coil images with noise, their centred k-space, the true maps and the object."""
    rng = np.random.default_rng(seed)
    maps, image = true_maps(grid, coils), phantom(grid)
    noise = NOISE * (rng.standard_normal(maps.shape) + 1j * rng.standard_normal(maps.shape))
    images = (image * maps + noise / np.sqrt(2)).astype(dtype)
    axes = tuple(range(1, len(grid) + 1))
    centred = np.fft.ifftshift(images, axes=axes)
    kspace = np.fft.fftshift(np.fft.fftn(centred, axes=axes, norm="ortho"), axes=axes)
    return images, kspace.astype(dtype), maps, image > 0


def agreement(a, b):
    """Per pixel $|\\langle a, b \\rangle| / (\\|a\\| \\|b\\|)$ over the coil axis 0: 1 when
    the coil vectors are parallel, whatever their phases."""
    a, b = np.asarray(a), np.asarray(b)
    norms = np.linalg.norm(a, axis=0) * np.linalg.norm(b, axis=0)
    return np.abs(np.sum(a * np.conj(b), axis=0)) / np.where(norms > 0, norms, 1)


def interior(mask, margin=2):
    """`mask` without the pixels within `margin` of its edge."""
    inside = mask.copy()
    for axis in range(mask.ndim):
        for shift in range(-margin, margin + 1):
            inside &= np.roll(mask, shift, axis=axis)
    return inside


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_espirit_matches_sigpy(dtype):
    """The same algorithm as sigpy's: the same maps where both keep them (up to rounding,
    accumulated over 100 power iterations), the same cropped pixels except where sigpy's
    eigenvalue is within rounding of `crop`."""
    mr = pytest.importorskip("sigpy.mri")
    _, kspace, _, inside = data((64, 64), 8, dtype)
    args = dict(calib_width=24, kernel_width=6, thresh=0.02, crop=0.95, max_iter=100)
    ours = np.asarray(espirit_maps(kspace, **args))
    theirs, eig = mr.app.EspiritCalib(kspace, **args, show_pbar=False, output_eigenvalue=True).run()
    eps = np.finfo(dtype).eps
    kept, kept_ours = np.any(theirs != 0, axis=0), np.any(ours != 0, axis=0)
    assert np.all((kept == kept_ours) | (np.abs(eig - 0.95) < 1e3 * eps))
    assert kept[inside].all()  # the object is inside the maps' support
    assert agreement(ours, theirs)[inside].min() >= 0.99
    both = kept & kept_ours
    np.testing.assert_allclose(ours[:, both], theirs[:, both], rtol=0, atol=1e3 * eps)


def test_espirit_true_maps():
    """The maps are smooth (their k-space extent is about one sample, far inside the
    6-wide kernels), so ESPIRiT recovers them up to the noise, averaged over the
    calibration region: a deficit of about 1e-4 here; 0.999 leaves a factor 10, well
    below what a wrong kernel orientation or phase convention gives (< 0.9)."""
    _, kspace, truth, inside = data((64, 64), 8, np.complex128)
    maps = espirit_maps(kspace)
    assert agreement(maps, truth)[inside].min() >= 0.999
    norms = np.linalg.norm(np.asarray(maps), axis=0)
    np.testing.assert_allclose(norms[inside], 1, atol=1e-12)
    assert np.all(np.asarray(maps)[0].real >= 0)
    np.testing.assert_allclose(np.asarray(maps)[0].imag, 0, atol=1e-12)


def test_walsh_true_maps():
    """Walsh's eigenvector over a 5 x 5 window: biased by the maps' variation over the
    window (about 0.15 of the field of view's half-width: a deficit near 1e-3 at most)
    and by the noise (1 / (SNR * 5) per coil, a deficit near 1e-5); 0.99 inside the object
    away from its edges, where the window also holds background, and 0.95 at the edges."""
    images, _, truth, inside = data((64, 64), 8, np.complex128)
    maps = np.asarray(walsh_maps(images, smoothing=5))
    assert agreement(maps, truth)[interior(inside)].min() >= 0.99
    assert agreement(maps, truth)[inside].min() >= 0.95
    np.testing.assert_allclose(np.linalg.norm(maps, axis=0), 1, atol=1e-12)
    assert np.all(maps[0].real >= 0)
    np.testing.assert_allclose(maps[0].imag, 0, atol=1e-12)


def test_batched_and_jit():
    """A leading slice axis gives the per-slice results; `jax.jit` gives the eager ones."""
    stack = [data((32, 32), 4, np.complex128, seed=s) for s in (1, 2)]
    kspace, images = np.stack([s[1] for s in stack]), np.stack([s[0] for s in stack])
    args = dict(calib_width=16, kernel_width=4, max_iter=30)
    batched = espirit_maps(kspace, **args)
    for k in range(2):
        np.testing.assert_allclose(batched[k], espirit_maps(kspace[k], **args), atol=1e-10)
        np.testing.assert_allclose(walsh_maps(images)[k], walsh_maps(images[k]), atol=1e-12)
    static = ("calib_width", "kernel_width", "max_iter", "ndim")
    jitted = jax.jit(espirit_maps, static_argnames=static)(kspace, thresh=0.02, crop=0.95, **args)
    np.testing.assert_allclose(jitted, batched, atol=1e-10)
    walsh_jit = jax.jit(walsh_maps, static_argnames=("smoothing", "ndim", "max_iter"))
    np.testing.assert_allclose(walsh_jit(images, smoothing=3), walsh_maps(images, smoothing=3))


@pytest.mark.devices(2)
def test_slices_sharded_across_devices():
    """Slices sharded over two devices: each device computes its slice's maps (the output
    stays sharded) and they equal the one-device results."""
    stack = [data((32, 32), 4, np.complex64, seed=s) for s in (1, 2)]
    kspace, images = np.stack([s[1] for s in stack]), np.stack([s[0] for s in stack])
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:2]), ("S",))
    slices = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("S"))
    args = dict(calib_width=16, kernel_width=4, max_iter=30)
    for estimate, x in ((lambda k: espirit_maps(k, **args), kspace), (walsh_maps, images)):
        sharded = estimate(jax.device_put(x, slices))
        assert sharded.sharding.is_equivalent_to(slices, sharded.ndim)
        np.testing.assert_allclose(sharded, estimate(x), atol=1e-5)


def test_3d():
    """A 20^3 grid, 4 coils: ESPIRiT as sigpy's, both methods close to the true maps.

    The 12-wide calibration of so coarse a grid limits ESPIRiT itself (sigpy's too): a
    deficit of 1e-3 at the object's edge without noise, 1.4e-3 with it; hence 0.995 here
    (at 32^3 with a 16-wide calibration it is 2e-4)."""
    mr = pytest.importorskip("sigpy.mri")
    images, kspace, truth, inside = data((20, 20, 20), 4, np.complex128)
    args = dict(calib_width=12, kernel_width=4, thresh=0.02, crop=0.95, max_iter=30)
    ours = espirit_maps(kspace, **args, ndim=3)
    theirs = mr.app.EspiritCalib(kspace, **args, show_pbar=False).run()
    np.testing.assert_allclose(ours, theirs, atol=1e-10)
    assert agreement(ours, truth)[inside].min() >= 0.995
    walsh = walsh_maps(images, smoothing=3, ndim=3)
    assert agreement(walsh, truth)[interior(inside, 1)].min() >= 0.99


def test_complex64():
    images, kspace, _, _ = data((32, 32), 4, np.complex64)
    assert espirit_maps(kspace, calib_width=16, kernel_width=4).dtype == jnp.complex64
    assert walsh_maps(images).dtype == jnp.complex64


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ndim=3), r"espirit_maps: `kspace` must have shape \(\.\.\., C, \*grid\).*ndim=3"),
        (dict(ndim=0), r"espirit_maps: `kspace` must have shape.*ndim=0"),
        (dict(calib_width=40), r"espirit_maps: `calib_width` must be .* 32 .*got calib_width=40"),
        (dict(kernel_width=8, calib_width=6), r"`kernel_width` must be .*got kernel_width=8"),
        (dict(max_iter=0), r"espirit_maps: `max_iter` must be at least 1; got max_iter=0"),
    ],
)
def test_espirit_bad_input(kwargs, match):
    kspace = np.zeros((4, 32, 32), np.complex64)
    with pytest.raises(ValueError, match=match):
        espirit_maps(kspace, **kwargs)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(ndim=3), r"walsh_maps: `coil_images` must have shape .*ndim=3"),
        (dict(smoothing=0), r"walsh_maps: `smoothing` must be at least 1; got smoothing=0"),
        (dict(max_iter=0), r"walsh_maps: `max_iter` must be at least 1; got max_iter=0"),
    ],
)
def test_walsh_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        walsh_maps(np.zeros((4, 32, 32), np.complex64), **kwargs)


def test_real_input():
    with pytest.raises(TypeError, match=r"espirit_maps: `kspace` must be complex.*float32"):
        espirit_maps(np.zeros((4, 32, 32), np.float32))
    with pytest.raises(TypeError, match=r"walsh_maps: `coil_images` must be complex.*float64"):
        walsh_maps(np.zeros((4, 32, 32)))
