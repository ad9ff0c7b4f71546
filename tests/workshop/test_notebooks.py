"""Every notebook runs top to bottom under a real Jupyter kernel, its workshop exercises solved with
``ministream/workshop/solutions.py`` (the workshop material cannot rot, and every exercise is solvable).

The notebooks share one kernel, as a workshop room shares one laptop: each starts with an empty namespace
(``%reset -f``: every name it uses, it must define or import itself), while the kernel keeps its Spark
session, so that 15 notebooks start one JVM, not 15 (about 20 s each: session start and first micro-batch).
``python -m ministream.workshop timings`` still runs each notebook in a fresh kernel, as a learner opens it."""

from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

from ministream.workshop.build import with_solutions

FOLDER = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("[0-9]*.ipynb"))


@pytest.fixture(scope="module")
def kernel():
    """One Python kernel, started in the notebooks' folder, for every notebook of the run."""
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(cwd=str(FOLDER))
    yield manager
    manager.shutdown_kernel(now=True)


def fresh_namespace(notebook):
    """The notebook with a first cell that empties the kernel's namespace (names only: the imported modules,
    and so the Spark session, stay)."""
    reset = nbformat.v4.new_code_cell("%reset -f")
    reset.metadata["tags"] = ["test-only"]
    notebook.cells.insert(0, reset)
    return notebook


@pytest.mark.notebook
@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs(path, kernel):
    """A notebook executes without an error in any cell (its cells assert their own results), and every
    exercise check, given the solution, passes."""
    if not kernel.is_alive():  # an earlier notebook killed it: start again
        kernel.restart_kernel(now=True)
    notebook = fresh_namespace(with_solutions(nbformat.read(path, as_version=4)))
    NotebookClient(notebook, km=kernel, timeout=900, resources={"metadata": {"path": str(FOLDER)}}).execute()
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
