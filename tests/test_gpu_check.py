"""`scripts/gpu_check.sh --cpu`, the GPU check's dry run, executes end to end on a CPU: the
GPU test subset collects (every listed file exists and imports) and its GPU tests run
(and skip), and the benchmark produces the table and the JSON for every case family, the
rows' outputs agreeing with the exact DFT (NUFFT) and with torchlinops where it is
installed. Times are recorded, never asserted."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_dry_run_executes_the_whole_check(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable}
    command = ["bash", str(ROOT / "scripts" / "gpu_check.sh"), "--cpu", "--out", str(tmp_path),
               "--wheels", str(tmp_path / "none")]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "no wheels in" in done.stdout
    assert "tests collected" in done.stdout  # the subset's collection summary

    record = json.loads((tmp_path / "gpu_check.json").read_text())
    assert record["tests"]["failed"] == record["tests"]["errors"] == 0
    assert record["tests"]["skipped"] > 0  # tests/test_gpu.py skips off a GPU
    table = (tmp_path / "gpu_check.md").read_text()
    assert "| case | implementation |" in table and table in done.stdout
    rows = record["rows"]
    cases = {r["case"].split(" ")[0] for r in rows}
    assert cases == {"NUFFT", "Interp", "ArrayToBlocks", "BlocksToArray", "CG-SENSE"}
    for backend in ("jax", "pallas"):
        nufft = [r for r in rows if r["impl"] == f"jaxlinops {backend}" and "NUFFT" in r["case"]]
        assert len(nufft) == 4
        assert all(r["error"] < 2e-2 for r in nufft)  # the width-4 kernel's error: ~1e-2
    for r in rows:
        assert r["timing"]["median_ms"] > 0 and r["copy_fraction"] > 0
    if importlib.util.find_spec("torchlinops") is not None:
        against = [r for r in rows if "x_torchlinops" in r]
        assert len(against) == len([r for r in rows if r["impl"] != "torchlinops"])
        for r in against:
            if not r["case"].startswith("NUFFT"):  # the relative difference from torchlinops
                assert r["error"] < 1e-4, (r["case"], r["impl"])
