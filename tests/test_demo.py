"""The main job `python -m jaxlinops.demo` (the README's first command runs it), at a small
size: it reconstructs better than the adjoint, writes a valid PNG, and validates options."""

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


def errors(out: str) -> tuple[float, float]:
    match = re.search(r"reconstruction ([\d.]+), adjoint \(best scaled\) ([\d.]+)", out)
    assert match, out
    return float(match[1]), float(match[2])


def read_png(path: Path) -> np.ndarray:
    """Decode the demo's 8-bit grayscale PNG (filter type 0 on every row)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
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
    png = tmp_path / "recon.png"
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
            "--output",
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
    image = read_png(png)
    assert image.shape == (32, 4 * 32)
    truth = np.abs(demo.phantom(32))
    np.testing.assert_allclose(image[:, :32], np.round(255 * truth / truth.max()), atol=1)


def test_demo_in_process_and_option_errors(tmp_path, capsys):
    """Inside this test session (8 devices already up, x64 on, strict promotion)."""
    assert demo.main([*SMALL, "--devices", "2", "--output", str(tmp_path / "r.png")]) == 0
    out = capsys.readouterr().out
    assert "Devices: 2 × cpu; mesh {'C': 2}" in out
    assert np.allclose(errors(out), SINGLE_PROCESS, atol=2e-3)
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
