"""Every notebook runs top to bottom under a real Jupyter kernel (the workshop material cannot rot)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9]*.ipynb"))


@pytest.mark.notebook
@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs(path):
    """A notebook executes without an error in any cell (its cells assert their own results)."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert outputs, "the notebook produced no output at all"
    assert not [o for o in outputs if o.get("output_type") == "error"]


def test_notebooks_exist():
    """There is at least one notebook, numbered in teaching order."""
    assert NOTEBOOKS and NOTEBOOKS[0].name.startswith("01-")
