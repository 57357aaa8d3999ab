"""Release metadata: one version, read by the build from jaxlinops/_version.py."""

import importlib.metadata
import tomllib
from pathlib import Path

import jaxlinops as jl

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_installed_metadata_version():
    """`jaxlinops.__version__` is what pip installed (after a bump in jaxlinops/_version.py,
    reinstall: `pip install -e .`)."""
    assert jl.__version__ == importlib.metadata.version("jaxlinops")


def test_pyproject_reads_the_version_from_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "jaxlinops/_version.py"
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == [
        "jaxlinops",
        "interop",
    ]
