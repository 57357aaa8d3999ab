"""The runnable example `python -m jaxlinops.demo` (the README's first command runs it)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import jaxlinops
from jaxlinops import demo

REPO_ROOT = Path(jaxlinops.__file__).resolve().parent.parent


def test_demo_main_in_process(capsys):
    # Runs under this test session's settings: x64 enabled, strict dtype promotion.
    assert demo.main(["--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "adjoint test passed" in out
    assert "Chain((Nx, Ny) -> (C, Kx, Ky))" in out
    assert "FFT((C, Nx, Ny) -> (C, Kx, Ky))" in out
    assert "Chain((Nx, Ny) -> (Nx1, Ny1))" in out  # the normal renames its output dims
    assert "all checks passed" in out


def test_demo_module_runs_with_default_jax_settings():
    # A fresh interpreter has JAX's defaults: 32-bit types, standard promotion.
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    result = subprocess.run(
        [sys.executable, "-m", "jaxlinops.demo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "adjoint test passed" in result.stdout
    assert "complex64" in result.stdout


def test_demo_rejects_unknown_arguments(capsys):
    with pytest.raises(SystemExit) as info:
        demo.main(["--no-such-flag"])
    assert info.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def test_demo_fails_loudly_when_a_check_fails(monkeypatch, capsys):
    monkeypatch.setattr(demo, "numpy_forward", lambda maps, mask, x: 2 * (mask * maps * x))
    with pytest.raises(AssertionError, match=r"A\(x\) vs numpy: relative difference .* exceeds"):
        demo.main([])
    capsys.readouterr()
