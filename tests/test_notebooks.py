"""The notebooks in `notebooks/`: committed without outputs, Colab-ready (each starts with the
install cell, `notebooks/install_cell.py`), and run top to bottom in a Jupyter kernel
(nbclient; skipped without the `notebooks` extra), drawing their figures.

`python tests/test_notebooks.py` copies `notebooks/install_cell.py` into every notebook's
first code cell (after an edit of that file)."""

import json
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
INSTALL_CELL = NOTEBOOK_DIR / "install_cell.py"
NAMES = ["01_basics", "02_mri_reconstruction", "03_multi_device", "04_pytorch_interop",
         "05_custom_operator", "06_learning_sampling", "07_compressed_sensing"]  # fmt: skip
# the notebooks that draw figures, and how many each draws at least
FIGURES = {"01_basics": 3, "02_mri_reconstruction": 4, "05_custom_operator": 3,
           "06_learning_sampling": 4, "07_compressed_sensing": 3}  # fmt: skip


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_the_seven_notebooks_are_there():
    assert [p.stem for p in NOTEBOOKS] == NAMES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stripped_and_starts_with_the_setup_cells(path):
    """No outputs; the install cell first, then one cell that asks JAX for 8 CPU devices
    (before anything starts JAX's backends), the same in every notebook."""
    cells = code_cells(path)
    assert all(not c["outputs"] and c["execution_count"] is None for c in cells)
    devices = "".join(cells[1]["source"])
    assert devices == "".join(code_cells(NOTEBOOKS[0])[1]["source"])  # one setup for all
    assert 'jax.config.update("jax_num_cpu_devices", 8)' in devices


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_first_cell_is_the_install_cell(path):
    if not INSTALL_CELL.exists():
        pytest.skip(f"{INSTALL_CELL} is absent: nothing to compare the first cells with")
    first = "".join(code_cells(path)[0]["source"])
    assert first == INSTALL_CELL.read_text().rstrip("\n"), (
        f"{path.name}'s first code cell differs from notebooks/install_cell.py: run "
        f"`python tests/test_notebooks.py` to copy it into every notebook"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, tmp_path):
    for module in ("nbclient", "nbformat", "ipykernel", "matplotlib"):
        pytest.importorskip(module, reason="the notebooks extra is not installed")
    if "pytorch" in path.stem:
        pytest.importorskip("torch")
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    # files a notebook writes go to tmp_path, its working directory
    NotebookClient(nb, timeout=600, resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [out for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs]
    stderr = [o["text"] for o in outputs if o.output_type == "stream" and o.name == "stderr"]
    assert not [text for text in stderr if "Warning" in text], stderr
    figures = sum("image/png" in o.get("data", {}) for o in outputs)
    assert figures >= FIGURES.get(path.stem, 0), f"{path.stem} drew {figures} figures"


def sync_install_cell() -> None:
    """Make every notebook's first code cell `notebooks/install_cell.py` (nbformat's JSON
    layout: one-space indent, a line per source line)."""
    lines = INSTALL_CELL.read_text().rstrip("\n").split("\n")
    for path in NOTEBOOKS:
        notebook = json.loads(path.read_text())
        first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
        first["source"] = [line + "\n" for line in lines[:-1]] + lines[-1:]
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        print(f"{path.name}: first code cell = {INSTALL_CELL.name}")


if __name__ == "__main__":
    sync_install_cell()
