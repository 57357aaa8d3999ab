"""The main job `python -m jaxlinops.demo` (the README's first command runs it), at a small
size: it reconstructs better than the adjoint, writes its figure where `--out` says (with
matplotlib, or the built-in PNG writer without it), and validates options."""

import builtins
import importlib.util
import os
import re
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import jaxlinops
import jaxlinops as jl
from jaxlinops import demo

REPO_ROOT = Path(jaxlinops.__file__).resolve().parent.parent
# the relative errors of reconstruction and adjoint for SMALL (checked against the
# phantom in the tests); the two-process run must reproduce them
SINGLE_PROCESS = (0.267, 0.449)
SMALL = ["--size", "32", "--coils", "4", "--spokes", "16", "--readouts", "64", "--iters", "10"]
MATPLOTLIB_SIZE = (1050, 720)  # (width, height) in pixels: the figure's 10.5 × 7.2 in at 100 dpi
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


def read_png(path: Path) -> np.ndarray:
    """Decode the built-in writer's 8-bit grey-scale PNG (filter type 0 on every row)."""
    data = path.read_bytes()
    width, height, colour = png_header(path)
    assert colour == 0
    idat = data.index(b"IDAT")
    (length,) = struct.unpack(">I", data[idat - 4 : idat])
    raw = np.frombuffer(zlib.decompress(data[idat + 4 : idat + 4 + length]), np.uint8)
    rows = raw.reshape(height, width + 1)
    assert not rows[:, 0].any()
    return rows[:, 1:]


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
    assert png_header(png)[:2] == MATPLOTLIB_SIZE or not HAVE_MATPLOTLIB


def test_demo_in_process_and_option_errors(tmp_path, capsys, monkeypatch):
    """Inside this test session (8 devices already up, x64 on, strict promotion); with no
    `--out`, the figure goes to the current directory; a directory gets `recon.png`."""
    monkeypatch.chdir(tmp_path)
    assert demo.main([*SMALL, "--devices", "2"]) == 0
    out = capsys.readouterr().out
    assert "Devices: 2 × cpu; mesh {'C': 2}" in out
    assert np.allclose(errors(out), SINGLE_PROCESS, atol=2e-3)
    assert png_header(tmp_path / "recon.png")[:2] == MATPLOTLIB_SIZE or not HAVE_MATPLOTLIB
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
    return demo.figure(*small_images(), np.array([2.0, 1.0, 0.1, np.nan]), "a two-line\ntitle")


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


def test_builtin_writer_without_matplotlib(tmp_path, monkeypatch):
    """With matplotlib not importable, `save_figure` writes a grey-scale PNG: each panel
    with its label lines above it, and a grey-ramp colour bar after each kind's panels."""
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.split(".")[0] == "matplotlib":
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    fig = small_figure()
    assert demo.save_figure(fig, tmp_path / "f.png") == "built-in PNG writer"
    image = read_png(tmp_path / "f.png")
    # 16-pixel images drawn 8× (128 pixels), 3 label lines of 14 pixels over them, the
    # 2-line title, a footer line under the colour bars, 8-pixel margins
    line = 14
    assert image.shape[0] == 8 + 2 * line + 8 + 3 * line + 128 + line + 8
    assert image.shape[1] > 5 * 128 + 2 * 8  # five panels and two colour bars
    assert image.min() == 0 and image.max() == 255
    np.testing.assert_array_equal(demo.render(fig), image)


def test_builtin_font():
    """Glyphs against their drawings; unknown characters are refused."""
    one = ["010", "110", "010", "010", "111"]
    want = np.array([[c == "1" for c in row + "0"] for row in one])
    np.testing.assert_array_equal(demo.text_bitmap("1"), np.kron(want, np.ones((2, 2), bool)))
    assert demo.text_bitmap("a").tolist() == demo.text_bitmap("A").tolist()
    assert demo.text_bitmap("ab c").shape == (10, 32)
    for panel in small_figure().panels:  # every label the demo draws has its glyphs
        for line in panel.title.split("\n"):
            demo.text_bitmap(line)
    with pytest.raises(
        ValueError, match=r"`text_bitmap`: the built-in font has no glyph for \['²'\]"
    ):
        demo.text_bitmap("N²")


def test_builtin_writer_draws_each_kind_on_its_shared_range():
    """Constant panels: their grey levels follow the shared ranges (not each panel's own
    maximum), values above a range are clipped to white; text is pure black or white."""
    values = [(0.5, "image"), (1.0, "image"), (2.0, "image"), (0.1, "error"), (0.8, "error")]
    panels = [demo.Panel(f"p{i}", np.full((16, 16), v), kind) for i, (v, kind) in enumerate(values)]
    fig = demo.Figure("t", tuple(panels), {"image": 2.0, "error": 0.4}, np.ones(3))
    levels, counts = np.unique(demo.render(fig), return_counts=True)
    count = dict(zip(levels.tolist(), counts.tolist(), strict=True))
    panel = 128 * 128  # 16 pixels drawn 8× each way
    # 0.5 / 2 and 0.1 / 0.4 of 255 round to 64; 1 / 2 to 128 (the colour bars hold a few)
    assert panel * 2 <= count[64] < panel * 2 + 100
    assert panel <= count[128] < panel + 100
    assert count[255] > 2 * panel  # 2.0 / 2.0 and the clipped 0.8 / 0.4, and the background
