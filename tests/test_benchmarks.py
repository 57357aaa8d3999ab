"""The benchmark scripts keep working: `benchmarks/suite.py --quick` runs every case (with
the peers that are installed), the peers' outputs agree with jaxlinops', and `report.py`
renders the JSON (one test, so that the suite runs once however pytest-xdist distributes
the tests); `bench_interop.py --quick` runs. Times are recorded, never asserted (XLA's
compiled memory figures are, where the issue sets a target)."""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def test_quick_suite_runs_agrees_with_peers_and_reports(tmp_path):
    out = tmp_path / "quick.json"
    command = [sys.executable, str(BENCHMARKS / "suite.py"), "--quick", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads(out.read_text())
    assert "| case | size | jaxlinops ms (IQR) |" in done.stdout

    families = {r["family"] for r in record["results"]}
    assert {"NUFFT fwd 2D", "NUFFT adj 3D", "Interp fwd 2D", "ArrayToBlocks 3D",
            "BlocksToArray 3D", "SENSE normal", "Normal Toeplitz", "Normal plain",
            "CG-SENSE"} <= families  # fmt: skip
    for r in record["results"]:
        stats = r["jaxlinops"]
        assert stats["median_ms"] > 0 and stats["p25_ms"] <= stats["p75_ms"]
        assert stats["compile_s"] > 0 and stats["memory_bytes"]["output"] > 0
    assert record["machine"]["peaks"]["copy_GBps"] > 0

    # the peers compute the same thing: NUFFTs to single precision (torchlinops and sigpy
    # use the same kernel), finufft to its tolerance, the rest to rounding
    checked = 0
    for r in record["results"]:
        for peer in ("torchlinops", "sigpy", "finufft"):
            if peer in r:
                bound = 2e-2 if peer == "finufft" else 1e-4
                assert r[peer]["rel_diff_vs_jaxlinops"] < bound, (r["family"], peer)
                checked += 1
    if importlib.util.find_spec("torchlinops") is not None:
        assert checked >= len(record["results"])

    command = [sys.executable, str(BENCHMARKS / "report.py"), str(out),
               "--markdown", str(tmp_path / "r.md")]  # fmt: skip
    if importlib.util.find_spec("matplotlib") is not None:
        command += ["--plot", str(tmp_path / "r.png")]
    subprocess.run(command, check=True, timeout=120)
    assert "GFLOP/s (% FFT peak)" in (tmp_path / "r.md").read_text()


def test_interop_overhead_script_runs():
    pytest.importorskip("torch")
    command = [sys.executable, str(BENCHMARKS / "bench_interop.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| 8 x 32² |" in done.stdout


def test_nufft_peers_script_runs():
    """The peers are extras (jax-finufft is a test extra, nufftax a bench extra): an absent
    one's rows are skipped with a notice, and jaxlinops' rows always print."""
    command = [sys.executable, str(BENCHMARKS / "bench_nufft_peers.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| 2D 256x256, 65536 pts, adj | jaxlinops | defaults: os 1.25, w 4 |" in done.stdout


def test_gridding_variants_script_runs():
    command = [sys.executable, str(BENCHMARKS / "bench_gridding_variants.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| 20x20x20, 2048 pts | flat indices |" in done.stdout


def test_grad_cost_script_runs_and_implicit_memory_is_flat():
    """`bench_grad.py --quick`: the implicit gradient's temporaries (XLA's, known at compile
    time, so not noisy) do not grow from 5 to 25 CG iterations, for either normal."""
    command = [sys.executable, str(BENCHMARKS / "bench_grad.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| Toeplitz | 25 | unrolled grad |" in done.stdout
    for normal in ("Toeplitz", "plain"):
        assert re.search(rf"- {normal}: temporaries .* implicit memory flat: yes", done.stdout)


@pytest.mark.parametrize("script", ["suite.py", "report.py", "bench_memory.py"])
def test_help_shows_the_defaults(script):
    command = [sys.executable, str(BENCHMARKS / script), "--help"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    assert "(default: " in done.stdout


def test_trajectory_gradient_script_runs():
    command = [sys.executable, str(BENCHMARKS / "bench_traj_grad.py"), "--quick"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| 2D 32x32, 1000 pts | jax | grad locs |" in done.stdout
