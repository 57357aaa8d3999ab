"""The notebooks in `notebooks/`: committed without outputs, Colab-ready, and run top to
bottom in a Jupyter kernel (nbclient; skipped without the `notebooks` extra)."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
NAMES = ["01_basics", "02_mri_reconstruction", "03_multi_device", "04_pytorch_interop",
         "05_custom_operator"]  # fmt: skip


def code_cells(path: Path) -> list[dict]:
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_the_five_notebooks_are_there():
    assert [p.stem for p in NOTEBOOKS] == NAMES


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stripped_and_starts_with_the_setup_cell(path):
    cells = code_cells(path)
    assert all(not c["outputs"] and c["execution_count"] is None for c in cells)
    setup = "".join(cells[0]["source"])
    assert setup == "".join(code_cells(NOTEBOOKS[0])[0]["source"])  # one setup for all
    assert '"google.colab" in sys.modules' in setup
    assert 'jax.config.update("jax_num_cpu_devices", 8)' in setup


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
    stderr = [
        out["text"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if out.output_type == "stream" and out.name == "stderr"
    ]
    assert not [text for text in stderr if "Warning" in text], stderr
