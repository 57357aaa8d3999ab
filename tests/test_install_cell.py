"""The notebooks' install cell (notebooks/install_cell.py): a no-op where jaxlinops is
importable, and the order of its sources, its CUDA extra and its failure message, with a
fake pip so nothing is installed."""

import importlib.util
import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CELL = ROOT / "notebooks" / "install_cell.py"


def load_cell():
    spec = importlib.util.spec_from_file_location("install_cell", CELL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakePip:
    """Records the commands; pip fails for requirements containing any of `failing`."""

    def __init__(self, *failing, smi=""):
        self.failing, self.smi, self.calls = failing, smi, []

    def __call__(self, cmd, **kwargs):
        self.calls.append(cmd)
        if cmd == ["nvidia-smi"]:
            return subprocess.CompletedProcess(cmd, 0, self.smi, "")
        failed = any(f in cmd[-1] for f in self.failing)
        return subprocess.CompletedProcess(cmd, int(failed), "", "ERROR: no such package")

    @property
    def installs(self):
        return [c[-1] for c in self.calls if c[1:4] == ["-m", "pip", "install"]]


@pytest.fixture
def cell(monkeypatch, tmp_path):
    """The cell's functions, run from an empty directory with jaxlinops not importable."""
    module = load_cell()
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "jaxlinops" else real(name)
    )
    monkeypatch.chdir(tmp_path)
    return module


def test_noop_when_jaxlinops_is_importable(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise AssertionError(f"the install cell ran {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    runpy.run_path(str(CELL), run_name="__main__")  # as in a notebook
    assert capsys.readouterr().out == "jaxlinops is already importable: nothing to install.\n"


def test_sources_in_order_without_a_local_wheel(cell):
    pip = FakePip("jaxlinops[notebooks]")  # the index (and the git URL) fail
    with pytest.raises(RuntimeError, match="JAXLINOPS_WHEEL"):
        cell.ensure_jaxlinops(run=pip, environ={}, modules={})
    assert pip.installs == ["jaxlinops[notebooks]", f"jaxlinops[notebooks] @ {cell.GIT_URL}"]


def test_the_index_is_used_when_it_works(cell, capsys):
    pip = FakePip()
    assert cell.ensure_jaxlinops(run=pip, environ={}, modules={}) == "the package index"
    assert pip.installs == ["jaxlinops[notebooks]"]
    assert "Installed jaxlinops from the package index." in capsys.readouterr().out


@pytest.mark.parametrize("newest", [0, 1, 2])
def test_newest_local_wheel_first(cell, tmp_path, newest):
    """Whichever wheel is the newest by modification time (not by name or listing order)."""
    dist = tmp_path / "dist"
    dist.mkdir()
    wheels = [dist / f"jaxlinops-0.{v}.0-py3-none-any.whl" for v in (1, 2, 3)]
    for i, wheel in enumerate(wheels):
        wheel.write_bytes(b"")
        when = 3 if i == newest else 1 + i / 2
        os.utime(wheel, (when, when))
    pip = FakePip(wheels[newest].name)  # it fails: the index is next, not an older wheel
    assert cell.ensure_jaxlinops(run=pip, environ={}, modules={}) == "the package index"
    assert pip.installs == [f"{wheels[newest].resolve()}[notebooks]", "jaxlinops[notebooks]"]


def test_explicit_wheel_is_the_only_source(cell, tmp_path):
    wheel = tmp_path / "jaxlinops-0.1.0-py3-none-any.whl"
    pip = FakePip(str(wheel))
    with pytest.raises(RuntimeError, match="Could not install jaxlinops"):
        cell.ensure_jaxlinops(run=pip, environ={"JAXLINOPS_WHEEL": str(wheel)}, modules={})
    assert pip.installs == [f"{wheel}[notebooks]"]


@pytest.mark.parametrize(
    "smi, extra",
    [
        ("| NVIDIA-SMI 550.54  Driver Version: 550.54  CUDA Version: 12.4 |", "cuda12"),
        ("| NVIDIA-SMI 580.65  Driver Version: 580.65  CUDA Version: 13.0 |", "cuda13"),
    ],
)
def test_colab_gpu_gets_the_cuda_extra(cell, monkeypatch, smi, extra):
    monkeypatch.setattr(cell.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    pip = FakePip(smi=smi)
    colab = {"google.colab": object()}
    cell.ensure_jaxlinops(run=pip, environ={}, modules=colab)
    assert pip.installs == [f"jaxlinops[notebooks,{extra}]"]
    pip = FakePip(smi=smi)  # not Colab: the user's own environment decides
    cell.ensure_jaxlinops(run=pip, environ={}, modules={})
    assert pip.installs == ["jaxlinops[notebooks]"]


def test_colab_cpu_runtime_gets_no_cuda_extra(cell, monkeypatch):
    monkeypatch.setattr(cell.shutil, "which", lambda name: None)
    pip = FakePip()
    cell.ensure_jaxlinops(run=pip, environ={"COLAB_RELEASE_TAG": "x"}, modules={})
    assert pip.installs == ["jaxlinops[notebooks]"]


def test_restart_notice_when_jax_was_imported(cell, capsys):
    cell.ensure_jaxlinops(run=FakePip(), environ={}, modules={"jax": sys.modules["jax"]})
    assert "restart the kernel" in capsys.readouterr().out


def test_every_notebook_starts_with_the_cell():
    """The notebooks carry this file's code verbatim as their first code cell."""
    code = CELL.read_text().rstrip("\n")
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        first = next(c for c in cells if c["cell_type"] == "code")
        assert "".join(first["source"]).rstrip("\n") == code, path.name
