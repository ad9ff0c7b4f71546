"""Every notebook runs top to bottom under a real Jupyter kernel, its workshop exercises solved with
``ministream/workshop/solutions.py`` (the workshop material cannot rot, and every exercise is solvable)."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from ministream.workshop.build import with_solutions

NOTEBOOKS = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9]*.ipynb"))


@pytest.mark.notebook
@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs(path):
    """A notebook executes without an error in any cell (its cells assert their own results), and every
    exercise check, given the solution, passes."""
    notebook = with_solutions(nbformat.read(path, as_version=4))
    NotebookClient(notebook, timeout=900, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])]
    assert outputs, "the notebook produced no output at all"
    assert not [o for o in outputs if o.get("output_type") == "error"]
    checks = [cell for cell in notebook.cells if "check" in cell.metadata.get("tags", [])]
    for cell in checks:
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert shown.startswith("✓"), f"check cell {cell.id}: {shown!r}"


def test_notebooks_exist():
    """There are notebooks, numbered in teaching order, after the start-here notebook."""
    assert NOTEBOOKS[0].name == "00-start-here.ipynb" and NOTEBOOKS[1].name.startswith("01-")
