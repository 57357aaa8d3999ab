"""The main job `python -m jaxlinops.demo` (the README's first command runs it), at a small
size: it reconstructs better than the adjoint, writes its scan as an ISMRMRD file and
reconstructs it with estimated coil maps and density weights nearly as well as with the
true ones, with `--reg` also reconstructs with a prior better than CG-SENSE, writes its
figure where `--out` says (or says why not, without matplotlib), and validates options."""

import importlib.util
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import jaxlinops
import jaxlinops as jl
from jaxlinops import demo

REPO_ROOT = Path(jaxlinops.__file__).resolve().parent.parent
# the relative errors of reconstruction and adjoint for SMALL (checked against the
# phantom in the tests); the two-process run must reproduce them
SINGLE_PROCESS = (0.222, 0.371)
SMALL = ["--size", "32", "--coils", "4", "--spokes", "24", "--readouts", "64", "--iters", "10"]
# (width, height) in pixels of the figure (100 dpi): 7.2 in high, 3.5 in per column (truth,
# adjoint, CG-SENSE, and the reconstruction from the scanner file when there is one)
MATPLOTLIB_SIZE = {3: (1050, 720), 4: (1400, 720)}
HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def errors(out: str) -> tuple[float, float]:
    match = re.search(r"reconstruction ([\d.]+), adjoint \(best scaled\) ([\d.]+)", out)
    assert match, out
    return float(match[1]), float(match[2])


def png_header(path: Path) -> tuple[int, int, int]:
    """A PNG's width, height and colour type (0: grey, 2: RGB, 6: RGBA)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height, _, colour = struct.unpack(">IIBB", data[16:26])
    return width, height, colour


def test_demo_runs_as_two_processes(tmp_path):
    """Fresh interpreters (JAX defaults: 32-bit, standard promotion), launched as two
    processes joined by jax.distributed with 2 simulated CPU devices each: the multi-host
    path. The result equals the single-process one (same seed, same error)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    png = tmp_path / "figure.png"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "jaxlinops.demo",
            *SMALL,
            "--devices",
            "4",
            "--processes",
            "2",
            "--out",
            str(png),
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "Devices: 4 × cpu in 2 processes; mesh {'C': 4}" in result.stdout
    recon, adjoint = errors(result.stdout)
    assert recon < 0.35 and recon < 0.7 * adjoint
    assert np.allclose((recon, adjoint), SINGLE_PROCESS, atol=2e-3)
    assert result.stdout.count("Relative error") == 1  # only process 0 reports
    assert png_header(png)[:2] == MATPLOTLIB_SIZE[3] or not HAVE_MATPLOTLIB
    assert "scanner-file path runs in one process: skipped" in result.stdout


def test_demo_in_process_and_option_errors(tmp_path, capsys, monkeypatch):
    """Inside this test session (8 devices already up, x64 on, strict promotion); with no
    `--out`, the figure goes to the current directory; a directory gets `recon.png`."""
    monkeypatch.chdir(tmp_path)
    assert demo.main([*SMALL, "--devices", "2"]) == 0
    out = capsys.readouterr().out
    assert "Devices: 2 × cpu; mesh {'C': 2}" in out
    assert np.allclose(errors(out), SINGLE_PROCESS, atol=2e-3)
    assert png_header(tmp_path / "recon.png")[:2] == MATPLOTLIB_SIZE[4] or not HAVE_MATPLOTLIB
    # the scanner-file path: the scan in an ISMRMRD file, reconstructed from it with
    # estimated maps and weights to the true maps' error, give or take
    assert (tmp_path / "scan.h5").is_file()
    match = re.search(r"estimated maps and weights: ([\d.]+)", out)
    assert match and float(match[1]) < SINGLE_PROCESS[0] * 1.25, out
    assert f"to {tmp_path / 'recon.png'}" in out
    assert demo.output_path(Path("new/dir")) == Path("new/dir/recon.png")
    assert (tmp_path / "new" / "dir").is_dir()
    assert demo.output_path(Path("other/fig.PNG")) == Path("other/fig.PNG")
    for args, message in (
        (["--devices", "99"], r"--devices 99: only 8 cpu device\(s\) are available"),
        (["--size", "31"], r"--size must be an even number >= 8; got 31"),
        (["--iters", "0"], r"--iters must be at least 1; got 0"),
        (["--processes", "3"], r"--devices 8 cannot be divided among 3 processes"),
    ):
        with pytest.raises(SystemExit):
            demo.main(args)
        assert re.search(message, capsys.readouterr().err)


def test_demo_regularised_and_its_option_errors(tmp_path, capsys):
    """`--reg tv` in this session on 2 devices: ADMM on the coil-split operator reports its
    error and PSNR next to CG-SENSE's, both beaten; the figure gets a fourth column. The
    regulariser's options are checked."""
    png = tmp_path / "tv.png"
    args = [*SMALL, "--devices", "2", "--no-scan", "--reg", "tv", "--out", str(png)]
    assert demo.main(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"Regularised, TV, ADMM \(20 × 5 CG iterations, λ = [\d.e-]+\)", out), out
    match = re.search(
        r"against the phantom: TV, ADMM ([\d.]+) \(([\d.]+) dB PSNR\), "
        r"CG-SENSE ([\d.]+) \(([\d.]+) dB\)",
        out,
    )
    assert match, out
    tv, tv_psnr, cg, cg_psnr = map(float, match.groups())
    assert cg == pytest.approx(SINGLE_PROCESS[0], abs=2e-3)
    assert tv < 0.5 * cg and tv_psnr > cg_psnr + 5  # 0.046 (39 dB) against 0.222 (25 dB)
    assert png_header(png)[:2] == MATPLOTLIB_SIZE[4] or not HAVE_MATPLOTLIB
    for argv, message in (
        (["--reg", "l2"], r"argument --reg: invalid choice: 'l2'"),
        (["--lamda", "0.1"], r"--lamda needs --reg \(l1-wavelet, tv or llr\)"),
        (["--reg", "tv", "--reg-iters", "0"], r"--reg-iters must be at least 1; got 0"),
        (["--reg", "tv", "--lamda", "-1"], r"--lamda must be > 0; got -1.0"),
    ):
        with pytest.raises(SystemExit):
            demo.main(argv)
        assert re.search(message, capsys.readouterr().err)


def test_simulation_matches_a_direct_dft_and_the_nufft():
    """The separable exact DFT equals the direct sum over pixels; the demo's NUFFT
    (oversampling 2, width 6) matches it to its documented ~1e-5."""
    n = 16
    image, maps = demo.phantom(n), demo.coil_maps(n, 3)
    locs = demo.radial_trajectory(n, 5, 12)
    got = demo.exact_kspace(image, maps, locs)
    pixels = np.stack(np.meshgrid(np.arange(n), np.arange(n), indexing="ij"), -1) - n // 2
    phase = np.exp(
        -2j * np.pi * locs.reshape(-1, 2).astype(np.float64) @ pixels.reshape(-1, 2).T / n
    )
    want = (maps * image).reshape(3, -1) @ phase.T / n
    np.testing.assert_allclose(got.reshape(3, -1), want, atol=1e-5 * np.abs(want).max())
    F = jl.NUFFT(locs, (n, n), "S R", batch_shape="C", oversamp=2.0, width=6.0)
    nufft = np.asarray(F((maps * image).astype(np.complex64)))
    assert np.linalg.norm(nufft - got) < 1e-4 * np.linalg.norm(got)
    assert np.allclose(np.sum(np.abs(maps) ** 2, axis=0), 1, atol=1e-6)


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        demo.parse_args(["--help"])
    out = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for default in ("image size N (N × N) (default: 128)", "CG iterations (default: 20)",
                    "or a .png file (default: .)", "noise seed (default: 0)"):  # fmt: skip
        assert default in out


def small_images() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A 16 × 16 phantom and two perturbed copies of it: "adjoint" and "reconstruction"."""
    rng = np.random.default_rng(1)
    truth = demo.phantom(16).astype(np.complex64)
    adjoint = 0.8 * truth + 0.3 * rng.standard_normal(truth.shape)
    recon = 1.2 * truth + 0.05 * rng.standard_normal(truth.shape)
    return truth, adjoint, recon


def small_figure() -> demo.Figure:
    truth, adjoint, recon = small_images()
    images = {"adjoint, best scaled": adjoint, "CG-SENSE": recon}
    return demo.figure(truth, images, np.array([2.0, 1.0, 0.1, np.nan]), "a two-line\ntitle")


def test_figure_shares_one_scale_for_images_and_one_for_errors():
    """Both error maps use one range, ERROR_GAIN times finer than the one range of the
    three images (the largest magnitude among them: none is clipped); the titles carry the
    relative error and PSNR, recomputed here from their definitions."""
    truth, adjoint, recon = small_images()
    fig = small_figure()
    assert [p.kind for p in fig.panels] == ["image"] * 3 + ["error"] * 2
    top = max(np.abs(truth).max(), np.abs(adjoint).max(), np.abs(recon).max())
    assert top == pytest.approx(1.2 * 1.02, rel=0.1)  # the reconstruction's peak, not 1
    assert fig.ranges == pytest.approx({"image": top, "error": top / 5})
    np.testing.assert_allclose(fig.panels[4].magnitude, np.abs(recon - truth))
    np.testing.assert_allclose(fig.residuals[:3], [1.0, 0.5, 0.05])
    for panel, image in zip(fig.panels[1:3], (adjoint, recon), strict=True):
        rmse = np.sqrt(np.mean(np.abs(image - truth) ** 2))
        relative = np.sqrt(np.sum(np.abs(image - truth) ** 2) / np.sum(np.abs(truth) ** 2))
        psnr = 10 * np.log10(np.max(np.abs(truth)) ** 2 / rmse**2)
        assert f"rel. error {relative:.3f}\nPSNR {psnr:.1f} dB" in panel.title
    assert fig.panels[1].title.startswith("adjoint") and "CG-SENSE" in fig.panels[2].title
    assert fig.panels[3].title == "|adjoint - truth|"


def test_figure_draws_the_objective_relative_to_the_start():
    truth, adjoint, recon = small_images()
    images = {"CG-SENSE": recon, "TV, ADMM": adjoint}
    fig = demo.figure(truth, images, np.ones(3), "t", ("ADMM", np.array([4.0, 2.0, 1.0])))
    assert fig.objective is not None and fig.objective[0] == "ADMM"
    np.testing.assert_allclose(fig.objective[1], [1.0, 0.5, 0.25])
    assert fig.panels[4].title == "|TV - truth|"
    assert small_figure().objective is None


def test_no_figure_without_matplotlib(tmp_path, monkeypatch):
    """With matplotlib not importable, `save_figure` draws nothing and says so in a line
    naming the extra that installs it."""
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import raises ImportError
    said = []
    assert not demo.save_figure(small_figure(), tmp_path / "f.png", said.append)
    assert said == ["No figure: matplotlib is not installed (pip install 'jaxlinops[demo]')."]
    assert not (tmp_path / "f.png").exists()


def test_coil_noise_has_the_documented_covariance():
    r"""The covariance of many samples against the formula: $\sigma^2 (R + 0.1 I) / 1.1$, $R$
    one on the diagonal and 0.3 between neighbouring coils (tolerance: about 4 standard
    errors, $\sigma^2 / \sqrt{N}$ each)."""
    noise = demo.coil_noise(np.random.default_rng(0), 4, 200_000, 2.0)
    covariance = noise @ noise.conj().T / noise.shape[1]
    offsets = np.abs(np.subtract.outer(np.arange(4), np.arange(4)))
    want = 4.0 * (np.where(offsets == 0, 1.1, np.where(offsets == 1, 0.3, 0.0))) / 1.1
    np.testing.assert_allclose(covariance, want, atol=0.04)
