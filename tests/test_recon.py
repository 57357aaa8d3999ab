"""The reconstruction command, `jaxlinops-recon` / `jl.recon.reconstruct`, from scanner
files to images: with coil maps and density weights estimated from the data it gets
within 10 % of the error of a reconstruction with the true maps (built here directly from
the operators, with the same prewhitening and iterations), for a radial ISMRMRD scan with
correlated coil noise and an undersampled Cartesian fastMRI-style file; it writes what
it says, and refuses what it cannot do with a clear message."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxlinops as jl
from jaxlinops import demo

pytest.importorskip("h5py")
pytest.importorskip("ismrmrd")

ROOT = Path(__file__).resolve().parents[1]
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None
N, COILS, SPOKES, READOUTS, ITERS = 32, 4, 24, 64, 10
NOISE = 1024  # noise-scan samples per coil


def magnitude_error(image: np.ndarray, truth: np.ndarray) -> float:
    """$\\min_c \\|c |x| - t\\| / \\|t\\|$: estimated maps fix the image up to a smooth
    phase (and the phantom is real and non-negative)."""
    m = np.abs(image)
    m = m * np.vdot(m, truth).real / np.vdot(m, m).real
    return float(np.linalg.norm(m - truth) / np.linalg.norm(truth))


def radial_scan():
    """The demo's phantom seen by 4 coils along 24 golden-angle spokes, with correlated
    coil noise (1 % of the k-space RMS) and its noise scan."""
    truth = demo.phantom(N).astype(np.complex64)
    maps = demo.coil_maps(N, COILS)
    locs = demo.radial_trajectory(N, SPOKES, READOUTS)
    kspace = demo.exact_kspace(truth, maps, locs)
    sigma = 0.01 * float(np.sqrt(np.mean(np.abs(kspace) ** 2)))
    noise = demo.coil_noise(np.random.default_rng(0), COILS, kspace[0].size + NOISE, sigma)
    kspace = kspace + noise[:, NOISE:].reshape(kspace.shape)
    return truth, maps, locs, kspace, noise[:, :NOISE]


def whitener(noise: np.ndarray) -> np.ndarray:
    """The inverse Cholesky factor of the sample covariance, in numpy."""
    covariance = noise @ noise.conj().T / noise.shape[1]
    return np.linalg.inv(np.linalg.cholesky(covariance))


def true_maps_radial(truth, maps, locs, kspace, noise) -> float:
    """The reference: CG-SENSE with the true maps on the prewhitened data (whitened maps
    $W S$), ramp density weights, the same NUFFT and iterations."""
    W = whitener(noise)
    radius = np.linalg.norm(locs, axis=-1)
    dcf = np.maximum(radius, radius[radius > 0].min())
    root = jnp.asarray(np.sqrt(dcf / dcf.mean()), jnp.float32)
    F = jl.NUFFT(locs, (N, N), "R K", "Nx Ny", batch_shape="C", toeplitz=True)
    S = jl.Dense(np.einsum("dc,cxy->dxy", W, maps).astype(np.complex64), "C Nx Ny", "Nx Ny",
                 "C Nx Ny")  # fmt: skip
    A = jl.Diagonal(root, "C R K", broadcast_dims="C") @ F @ S
    y = (np.einsum("dc,crk->drk", W, kspace) * np.asarray(root)).astype(np.complex64)
    x = jl.conjugate_gradients(A.N, A.H(jnp.asarray(y)), max_num_iters=ITERS)
    return magnitude_error(np.asarray(x), truth)


def test_command_reconstructs_a_radial_ismrmrd_scan(tmp_path, capsys):
    """`jaxlinops-recon scan.h5 -o recon.nii.gz` on 2 devices: every step reported and
    timed, the split of the normal chosen by the planner, a NIfTI of the complex image
    with the field of view's voxel sizes, a PNG, and the error of the true maps' solve."""
    nibabel = pytest.importorskip("nibabel")
    truth, maps, locs, kspace, noise = radial_scan()
    scan, out = tmp_path / "scan.h5", tmp_path / "out" / "recon.nii.gz"
    jl.io.write_ismrmrd(scan, kspace, locs=locs, noise=noise, matrix=(N, N), fov_mm=(200.0, 200.0))
    args = [str(scan), "-o", str(out), "--devices", "2", "--iters", str(ITERS), "--no-progress"]
    assert jl.recon.main(args) == 0
    said = capsys.readouterr().out
    for step in ("reading scan.h5", "noise prewhitening", "density compensation",
                 "gridding for calibration", "coil maps (espirit)", "CG-SENSE",
                 "writing recon.nii.gz", "total"):  # fmt: skip
        assert re.search(rf"^  {re.escape(step)} +\d+\.\d\d s$", said, re.M), (step, said)
    assert "whitened 4 coils with 1024 noise samples each" in said
    assert re.search(r"split of A\^H A: chosen: .*2 devices", said), said
    if HAVE_MATPLOTLIB:
        assert (tmp_path / "out" / "recon.png").stat().st_size > 1000
    else:  # one line says why there is none
        assert "no PNG: matplotlib is not installed" in said
    nifti = nibabel.load(str(out))
    image = np.asarray(nifti.dataobj)
    assert image.shape == (N, N, 1) and image.dtype == np.complex64
    np.testing.assert_allclose(nifti.header.get_zooms(), (200 / N, 200 / N, 1.0))
    got, want = (
        magnitude_error(image[..., 0], truth),
        true_maps_radial(truth, maps, locs, kspace, noise),
    )
    assert got < 1.1 * want and got < 0.3, (got, want)


def test_estimated_maps_and_weights_in_python(tmp_path):
    """`reconstruct` on the `RawData` of the same scan: ESPIRiT maps agree with the true
    maps up to a phase per pixel (0.98 inside the object, whitened as the data), Walsh
    maps reconstruct as well, and the density weights are the radial ramp."""
    truth, maps, locs, kspace, noise = radial_scan()
    jl.io.write_ismrmrd(tmp_path / "scan.h5", kspace, locs=locs, noise=noise, matrix=(N, N))
    raw = jl.io.read_ismrmrd(tmp_path / "scan.h5")
    one = jax.devices()[:1]
    result = jl.recon.reconstruct(raw, jl.recon.Settings(iters=ITERS, devices=one), say=print)
    whitened = np.einsum("dc,cxy->dxy", whitener(noise), maps)
    inside = np.abs(truth) > 0
    est, whitened = result.maps[0][:, inside], whitened[:, inside]
    agreement = np.abs(np.sum(est.conj() * whitened, 0)) / (
        np.linalg.norm(est, axis=0) * np.linalg.norm(whitened, axis=0)
    )
    assert np.min(agreement) > 0.98
    assert result.dcf is not None
    radius = np.linalg.norm(locs, axis=-1)
    ramp = radius / radius.mean()
    outer = radius > 2  # the centre's floor is a choice; the ramp elsewhere is not
    np.testing.assert_allclose(result.dcf[outer], ramp[outer], rtol=1e-3)
    walsh = jl.recon.reconstruct(
        raw, jl.recon.Settings(maps="walsh", iters=ITERS, devices=one), say=lambda s: None
    )
    reference = true_maps_radial(truth, maps, locs, kspace, noise)
    for image in (result.image[0], walsh.image[0]):
        assert magnitude_error(image, truth) < 1.1 * reference


def cartesian_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """A fastMRI-style file: two slices (the phantom, and the phantom flipped) of centred
    k-space (S, C, Kx, Ky) from 4 coils, every third phase-encoding line and the centre 12
    lines kept (the rest zero), 5 % noise."""
    import h5py

    truth = np.stack([demo.phantom(N), demo.phantom(N)[::-1]]).astype(np.complex64)
    maps = demo.coil_maps(N, COILS)
    images = maps[None] * truth[:, None]
    axes = (-2, -1)
    kspace = np.fft.fftshift(
        np.fft.fft2(np.fft.ifftshift(images, axes=axes), norm="ortho"), axes=axes
    )
    rng = np.random.default_rng(1)
    kspace += 0.05 * np.abs(kspace).std() * (rng.standard_normal(kspace.shape) + 0j)
    lines = np.zeros(N, bool)
    lines[::3] = True
    lines[N // 2 - 6 : N // 2 + 6] = True
    with h5py.File(path, "w") as f:
        f["kspace"] = (kspace * lines).astype(np.complex64)
    return truth, maps


def test_cartesian_fastmri_file_per_slice(tmp_path):
    """Two slices, each within 10 % of the true maps' error (the same masked model
    $M F S$, CG from zero); the calibration region shrinks to the sampled centre."""
    truth, maps = cartesian_file(tmp_path / "knee.h5")
    raw = jl.io.read_fastmri(tmp_path / "knee.h5")
    said = []
    settings = jl.recon.Settings(iters=ITERS, devices=jax.devices()[:1], progress=False)
    result = jl.recon.reconstruct(raw, settings, say=said.append)
    assert "    calibration region: 12 per axis (the data samples 12)" in said
    assert result.image.shape == (2, N, N) and result.dcf is None
    assert raw.mask is not None
    M = jl.Diagonal(jnp.asarray(raw.mask, jnp.float32), "C Kx Ky", broadcast_dims="C")
    A = M @ jl.FFT(2, "C", centered=True) @ jl.Dense(maps, "C Nx Ny", "Nx Ny", "C Nx Ny")
    for s in range(2):
        x = jl.conjugate_gradients(A.N, A.H(jnp.asarray(raw.kspace[s])), max_num_iters=ITERS)
        want = magnitude_error(np.asarray(x), truth[s])
        got = magnitude_error(result.image[s], truth[s])
        assert got < 1.1 * want and got < 0.2, (s, got, want)


def test_output_formats_and_clear_errors(tmp_path, capsys):
    """`.npy` with `--magnitude` writes |x| as float32; a suffix it cannot write, and a
    centre too small for ESPIRiT, are refused naming what to do."""
    truth, _ = cartesian_file(tmp_path / "knee.h5")
    out = tmp_path / "x.npy"
    args = [str(tmp_path / "knee.h5"), "-o", str(out), "--maps", "walsh", "--magnitude",
            "--iters", "3", "--devices", "1", "--no-png", "--no-progress"]  # fmt: skip
    assert jl.recon.main(args) == 0
    image = np.load(out)
    assert image.shape == (2, N, N) and image.dtype == np.float32 and image.min() >= 0
    assert not (tmp_path / "x.png").exists()
    with pytest.raises(SystemExit):
        jl.recon.main([str(tmp_path / "knee.h5"), "-o", str(tmp_path / "x.mat")])
    assert "`-o` must end in one of ('.nii', '.nii.gz', '.npy'); got" in capsys.readouterr().err
    raw = jl.io.read_fastmri(tmp_path / "knee.h5")
    narrow = jl.io.RawData(**{**vars(raw), "mask": raw.mask & (np.arange(N) % 2 == 0)})
    with pytest.raises(ValueError, match=r"samples a centre of only 1 entries per axis; "
                       r"espirit coil maps need at least 12 \(try --maps walsh\)"):  # fmt: skip
        jl.recon.reconstruct(narrow, jl.recon.Settings(devices=jax.devices()[:1]))


def test_the_docs_page_command_runs_as_printed(tmp_path):
    """docs/reconstruct.md: its first Python block writes scan.h5, then its console
    command runs as printed (the installed `jaxlinops-recon` script, in a fresh process
    with JAX's defaults) and writes the image it names."""
    page = (ROOT / "docs" / "reconstruct.md").read_text()
    setup = re.search(r"```python\n(.*?)```", page, re.S)
    command = re.search(r"```console\n\$ (jaxlinops-recon .*?)\n```", page)
    assert setup and command
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env["PATH"]])
    run = dict(cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    made = subprocess.run([sys.executable, "-c", setup[1]], **run)
    assert made.returncode == 0, made.stderr
    done = subprocess.run(command[1].split(), **run)
    assert done.returncode == 0, done.stderr
    assert "Done in" in done.stdout and (tmp_path / "recon.nii.gz").is_file()
    assert (tmp_path / "recon.png").is_file() or not HAVE_MATPLOTLIB


@pytest.fixture(scope="module")
def radial_raw(tmp_path_factory):
    """The radial scan as `RawData`, read back from its ISMRMRD file, and the phantom."""
    truth, maps, locs, kspace, noise = radial_scan()
    path = tmp_path_factory.mktemp("radial") / "scan.h5"
    jl.io.write_ismrmrd(path, kspace, locs=locs, noise=noise, matrix=(N, N))
    return jl.io.read_ismrmrd(path), truth


def quiet_reconstruct(raw, **settings):
    """`reconstruct` with Walsh maps (cheaper than ESPIRiT; the priors are what is tested)."""
    settings = jl.recon.Settings(maps="walsh", **settings)
    return jl.recon.reconstruct(raw, settings, say=lambda s: None)


@pytest.fixture(scope="module")
def cg_error(radial_raw):
    """CG-SENSE's error on the radial scan, with the same maps as the priors' solves."""
    raw, truth = radial_raw
    return magnitude_error(quiet_reconstruct(raw, devices=jax.devices()[:1]).image[0], truth)


@pytest.mark.parametrize("reg", ["l1-wavelet", "tv", "llr"])
def test_priors_split_across_two_devices_equal_the_unsplit_solve(radial_raw, cg_error, reg):
    """`Settings(reg=...)`: the prior's solver runs on the model split by the planner
    across 2 devices and gives the image of the solve on one device; its objective falls;
    and the image is no worse than CG-SENSE's with the same maps (1.05: the priors' default
    weights were tuned on a larger problem)."""
    raw, truth = radial_raw
    split = quiet_reconstruct(raw, reg=reg, devices=jax.devices()[:2])
    one = quiet_reconstruct(raw, reg=reg, devices=jax.devices()[:1])
    assert "2 devices" in split.plan and len(split.lamdas) == 1 and split.lamdas[0] > 0
    scale = np.abs(one.image).max()
    np.testing.assert_allclose(split.image, one.image, atol=1e-4 * scale)
    objective = split.residuals[0]
    assert objective.shape == (jl.recon.Settings(reg=reg).iterations + 1,)
    assert objective[-1] < 0.5 * objective[0]
    got = magnitude_error(split.image[0], truth)
    assert got < 1.05 * cg_error, (got, cg_error)


def test_command_with_a_prior_and_its_errors(tmp_path, radial_raw, capsys):
    """`--reg tv --lamda 0.01 --iters 4`: the step is named after the prior and its solver,
    λ is said; `--lamda` without `--reg`, and a non-positive one, are refused."""
    truth, maps, locs, kspace, noise = radial_scan()
    scan = tmp_path / "scan.h5"
    jl.io.write_ismrmrd(scan, kspace, locs=locs, noise=noise, matrix=(N, N))
    args = [str(scan), "-o", str(tmp_path / "x.npy"), "--devices", "1", "--no-png",
            "--no-progress"]  # fmt: skip
    assert jl.recon.main([*args, "--reg", "tv", "--lamda", "0.01", "--iters", "4"]) == 0
    said = capsys.readouterr().out
    assert re.search(r"^  TV \(ADMM\) +\d+\.\d\d s$", said, re.M), said
    assert re.search(r"λ = [\d.e-]+ \(4 iterations\)", said), said
    for extra, message in [
        (["--lamda", "0.01"], r"`lamda` needs a prior \(`reg`\) and must be > 0"),
        (["--reg", "tv", "--lamda", "0"], r"`lamda` needs a prior .* got lamda=0.0"),
        (["--reg", "tv", "--iters", "0"], r"`iters` must be at least 1; got 0"),
    ]:
        with pytest.raises(SystemExit):
            jl.recon.main([*args, *extra])
        assert re.search(message, capsys.readouterr().err)


def test_patch_nuclear_norm_thresholds_each_block():
    """The LLR prox against singular value thresholding of each block in numpy: 2-D
    (8 × 8 blocks of a 50 × 44 image: 30 blocks, one chunk of 32 padded with zero
    blocks; the 2 rows and 4 columns beyond the last whole block unchanged) and 3-D (each
    8³ block as an 8 × 64 matrix), and its value: λ times the nuclear norms."""
    from jaxlinops.recon._regularise import PatchNuclearNorm

    rng = np.random.default_rng(3)
    lam, step = 0.5, 2.0

    def svt(blocks):
        u, s, vh = np.linalg.svd(blocks, full_matrices=False)
        return (u * np.maximum(s - lam * step, 0)[..., None, :]) @ vh, s.sum()

    x = rng.standard_normal((50, 44)) + 1j * rng.standard_normal((50, 44))
    blocks = x[:48, :40].reshape(6, 8, 5, 8).transpose(0, 2, 1, 3)
    thresholded, norms = svt(blocks)
    want = x.copy()
    want[:48, :40] = thresholded.transpose(0, 2, 1, 3).reshape(48, 40)
    g = PatchNuclearNorm(lam)
    np.testing.assert_allclose(g.prox(x, step), want, atol=1e-10)
    assert float(g.value(x)) == pytest.approx(lam * norms, rel=1e-12)

    v = rng.standard_normal((16, 8, 16))
    blocks = v.reshape(2, 8, 1, 8, 2, 8).transpose(0, 2, 4, 1, 3, 5).reshape(4, 8, 64)
    thresholded, norms = svt(blocks)
    want = thresholded.reshape(2, 1, 2, 8, 8, 8).transpose(0, 3, 1, 4, 2, 5).reshape(v.shape)
    g3 = PatchNuclearNorm(lam, ndim=3)
    np.testing.assert_allclose(g3.prox(v, step), want, atol=1e-10)
    assert float(g3.value(v)) == pytest.approx(lam * norms, rel=1e-12)


@pytest.mark.devices(8)
def test_patch_nuclear_norm_in_a_solve_split_over_devices():
    """FISTA with the LLR prox on an operator split by coils over 8 devices equals the
    unsplit solve. 64 blocks: one batched SVD of them all would be split over the CPU's
    intra-op thread pool, which hangs when the pool's threads run the devices' programs
    (`_regularise.CHUNK`): with chunks of 64 this test hangs on a 2-core machine."""
    from jaxlinops.recon._regularise import PatchNuclearNorm

    rng = np.random.default_rng(4)
    maps = rng.standard_normal((8, 64, 64)) + 1j * rng.standard_normal((8, 64, 64))
    A = jl.FFT(2, "C", norm="ortho") @ jl.Dense(maps / 3, "C Nx Ny", "Nx Ny", "C Nx Ny")
    y = A(demo.phantom(64).astype(np.complex128))
    split = jl.create_batched_linop(A, jl.BatchSpec({"C": 1}, device_matrix=jax.devices()[:8]))
    solve = jax.jit(lambda A, y: jl.alg.fista(A, y, PatchNuclearNorm(0.1), None, 5))
    np.testing.assert_allclose(solve(split, y), solve(A, y), rtol=1e-9, atol=1e-9)


def test_a_prior_on_several_slices_compiles_once(tmp_path, monkeypatch):
    """Two slices, two weights λ (one per slice's data): the regularised solve is traced
    once, λ being an array inside the prox, not a constant of the program."""
    cartesian_file(tmp_path / "knee.h5")
    raw = jl.io.read_fastmri(tmp_path / "knee.h5")
    traced = []
    fista = jl.alg.fista
    monkeypatch.setattr(jl.alg, "fista", lambda *a, **k: traced.append(1) or fista(*a, **k))
    result = quiet_reconstruct(raw, reg="l1-wavelet", iters=3, devices=jax.devices()[:1])
    assert len(result.lamdas) == 2 and result.lamdas[0] != result.lamdas[1]
    assert len(traced) == 1
