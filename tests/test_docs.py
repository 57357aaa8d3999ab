"""The documentation runs: the README's Python blocks execute in order (the docs include
them), the docs' own code blocks only include tested files, and the MkDocs site builds with
`--strict` (when the `docs` extra is installed)."""

import importlib.util
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path) -> list[str]:
    return [body for lang, body in FENCE.findall(path.read_text()) if lang == "python"]


def test_readme_python_blocks_run_in_order(capsys):
    """One namespace, as a reader would run them: the example defines `A`, `x`, `k`; the
    solver, interop and sharding blocks use them. Blocks that import torch or torchlinops
    run only where those are installed."""
    namespace: dict = {}
    ran = 0
    for block in python_blocks(ROOT / "README.md"):
        needs = [m for m in ("torch", "torchlinops") if re.search(rf"^import {m}$", block, re.M)]
        if any(importlib.util.find_spec(m) is None for m in needs):
            continue
        for module in needs:  # torchlinops warns about deprecated torch APIs on import
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                importlib.import_module(module)
        exec(compile(block, "README.md", "exec"), namespace)
        ran += 1
    assert ran >= 3
    assert "Chain((Nx, Ny) -> (C, Kx, Ky))" in capsys.readouterr().out
    assert namespace["iters"] > 0 and namespace["k"].shape == (4, 8, 8)


def test_docs_code_blocks_only_include_tested_files():
    """Code in docs/ comes from the README (tested above) or from package modules (tested
    with them), through pymdownx.snippets includes."""
    for page in (ROOT / "docs").glob("*.md"):
        for body in python_blocks(page):
            include = re.fullmatch(r'--8<-- "([^":]+)(?::\w+)?"\n', body)
            assert include, f"{page.name}: a Python block that is not a snippet include"
            assert (ROOT / include[1]).exists(), f"{page.name}: {include[1]} is missing"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="needs the docs extra")
def test_mkdocs_site_builds_strictly(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": ""},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "reference" / "index.html").exists()
