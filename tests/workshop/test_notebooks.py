"""Every notebook runs top to bottom under a real Jupyter kernel, its workshop exercises solved with
``ministream/workshop/solutions.py`` (the workshop material cannot rot, and every exercise is solvable), and
shows what a learner should see: every plot as an image, no red stderr box, no error, no Java stack.

The notebooks share one kernel, as a workshop room shares one laptop: each starts with an empty namespace
(``%reset -f``: every name it uses, it must define or import itself), while the kernel keeps its Spark
session, so that 15 notebooks start one JVM, not 15 (about 20 s each: session start and first micro-batch).
``python -m ministream.workshop timings`` still runs each notebook in a fresh kernel, as a learner opens it.
No notebook imports pyplot, so the kernel never sets up pyplot's inline backend: a plot shows as an image only
if the figure draws itself (``tools/plots.py``), as in a fresh kernel."""

import base64
import re
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from nbclient import NotebookClient

from ministream.tools.plots import ink
from ministream.workshop.build import course_sources, with_solutions
from ministream.workshop.exercises import exercises_of
from ministream.workshop.notebooks.cells import KERNEL_NAME, exercise_cells, to_notebook

FOLDER = Path(__file__).resolve().parents[2] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("[0-9]*.ipynb"))

PLOT_CALL = re.compile(r"\b\w+_plot\(")
"""A cell that draws: it calls one of ``tools/plots.py``'s ``..._plot`` functions."""

JAVA_STACK = re.compile(r"^\s*at [\w$.]+\([\w$.]*(?::\d+)?\)|Py4JJavaError|Exception in thread|^\tat ", re.M)
"""A line of a Java stack trace (``at org.apache.spark...(File.java:12)``), or py4j's wrapper of one."""

SHOWN_NOT_DRAWN = re.compile(r"<(\w*Figure) size|<matplotlib\.")
"""What Jupyter prints for a matplotlib object it cannot draw as an image."""


def outputs(cell) -> list:
    return cell.get("outputs", []) if cell.cell_type == "code" else []


def text_of(output) -> str:
    """What an output shows as text: a stream's text, a result's plain text, an error's traceback."""
    if output.output_type == "stream":
        return output.text
    if output.output_type == "error":
        return "\n".join(output.traceback)
    return output.get("data", {}).get("text/plain", "")


def what_a_learner_should_not_see(notebook, allowed_errors: set[str] = frozenset()) -> list[str]:
    """Problems in an executed notebook, one line each: a plot cell without a drawn image, a figure shown as
    text, a stderr box, an error output (but in the cells of ``allowed_errors``), a Java stack trace."""
    problems = []
    for cell in notebook.cells:
        shown = outputs(cell)
        where = f"cell {cell.get('id')}"
        if cell.cell_type == "code" and PLOT_CALL.search(cell.source):
            pictures = [base64.b64decode(o.data["image/png"]) for o in shown if "image/png" in o.get("data", {})]
            if not pictures:
                problems.append(f"{where} draws a plot but shows no image")
            problems += [f"{where}: its image is blank" for png in pictures if ink(png) < 0.01]
        for output in shown:
            text = text_of(output)
            if output.output_type == "stream" and output.name == "stderr":
                problems.append(f"{where} writes to stderr (a red box): {text[:200]!r}")
            if output.output_type == "error" and cell.get("id") not in allowed_errors:
                problems.append(f"{where} fails: {output.ename}: {output.evalue[:200]}")
            if SHOWN_NOT_DRAWN.search(text) and "image/png" not in output.get("data", {}):
                problems.append(f"{where} shows a figure as text, not as an image: {text[:80]!r}")
            if JAVA_STACK.search(text):
                problems.append(f"{where} shows a Java stack trace: {JAVA_STACK.search(text).group(0)!r}")
    return problems


@pytest.fixture(scope="module")
def kernel():
    """One kernel of the kind the notebooks ask for ("Python (ministream)", registered by ``make setup``),
    started in the notebooks' folder, for every notebook of the run."""
    manager = KernelManager(kernel_name=KERNEL_NAME)
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


def execute(notebook, kernel):
    if not kernel.is_alive():  # an earlier notebook killed it: start again
        kernel.restart_kernel(now=True)
    notebook = fresh_namespace(notebook)
    NotebookClient(notebook, km=kernel, timeout=900, resources={"metadata": {"path": str(FOLDER)}}).execute()
    return notebook


@pytest.mark.notebook
@pytest.mark.spark
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs(path, kernel):
    """A notebook executes without an error in any cell (its cells assert their own results), every exercise
    check, given the solution, passes, and it shows nothing a learner should not see: every cell that draws
    shows a drawn image, and no cell writes to stderr or shows a Java stack."""
    notebook = execute(with_solutions(nbformat.read(path, as_version=4)), kernel)
    assert [output for cell in notebook.cells for output in outputs(cell)], "the notebook produced no output at all"
    assert what_a_learner_should_not_see(notebook) == []
    checks = [cell for cell in notebook.cells if "check" in cell.metadata.get("tags", [])]
    for cell in checks:
        shown = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
        assert shown.startswith("✓"), f"check cell {cell.id}: {shown!r}"


@pytest.mark.notebook
@pytest.mark.spark
def test_unsolved_exercises_answer_in_one_line(kernel):
    """Before the learner writes anything, every exercise's check answers with one line that says what to do
    (an error output, the only one a learner meets in a notebook run with "Run all"), and nothing else shows."""
    sources = [source for source in course_sources() if exercises_of(source.lessons)]
    cells = [
        cell for source in sources for exercise in exercises_of(source.lessons) for cell in exercise_cells(exercise, "")
    ]
    notebook = to_notebook(sources[0])
    notebook.cells = [nbformat.v4.new_code_cell(cell.source, id=cell.id) for cell in cells if cell.kind == "code"]
    checks = [cell.id for cell in cells if "check" in cell.tags]
    for cell in notebook.cells:
        if cell.id in checks:
            cell.metadata["tags"] = ["raises-exception"]
    notebook = execute(notebook, kernel)
    assert what_a_learner_should_not_see(notebook, allowed_errors=set(checks)) == []
    for cell in notebook.cells:
        if cell.id in checks:
            [error] = cell.outputs
            assert error.output_type == "error" and len(error.traceback) == 1, cell.id
            assert error.traceback[0].startswith("✗ ") and "not written yet" in error.traceback[0], cell.id


def test_notebooks_exist():
    """There are notebooks, numbered in teaching order, after the start-here notebook."""
    assert NOTEBOOKS[0].name == "00-start-here.ipynb" and NOTEBOOKS[1].name.startswith("01-")


@pytest.mark.notebook
def test_a_figure_matplotlib_draws_alone_is_caught(kernel):
    """A cell that shows a bare matplotlib figure, a figure written to stderr or a Java stack is reported:
    in this kernel, as in a learner's fresh one, a bare figure shows as text."""
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "from matplotlib.figure import Figure\nfigure = Figure()\nfigure.add_subplot()\nfigure", id="bare"
            ),
            nbformat.v4.new_code_cell(
                "import sys\nprint('\\tat org.apache.spark.Foo.bar(Foo.scala:1)', file=sys.stderr)", id="stack"
            ),
        ]
    )
    problems = what_a_learner_should_not_see(execute(notebook, kernel))
    assert [problem.split(":")[0] for problem in problems] == [
        "cell bare shows a figure as text, not as an image",
        "cell stack writes to stderr (a red box)",
        "cell stack shows a Java stack trace",
    ]
