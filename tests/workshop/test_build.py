"""The notebook build (``workshop/build.py``): the exercises go into the notebooks, before the recap, once; the
notebooks the tests execute have them solved; the committed notebooks are the built ones."""

import nbformat
import pytest

from ministream.workshop.build import insert_exercises, stale_notebooks, start_here, with_solutions
from ministream.workshop.course import NOTEBOOKS, START_HERE, course

pytestmark = pytest.mark.notebook


def test_build_is_idempotent_and_puts_exercises_before_the_recap():
    """Building twice gives the same notebook; the exercise cells come right before the recap."""
    notebook = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_markdown_cell("# 2. Windows\n\nYou will be able to"),
            nbformat.v4.new_markdown_cell("## Recap\n- done"),
        ]
    )
    once = insert_exercises(notebook, ["tumbling-window"], number=2)
    assert insert_exercises(once, ["tumbling-window"], number=2) == once
    tags = [cell.metadata.get("tags") for cell in once.cells]
    assert tags.count(["exercise"]) == 3 and tags.count(["check", "raises-exception"]) == 3
    assert once.cells[-1].source.startswith("## Recap") and "Exercise 2.1" in once.cells[2].source


def test_with_solutions_fills_every_exercise_cell():
    """The notebooks the tests execute have every exercise solved and every check expected to pass."""
    built = with_solutions(insert_exercises(nbformat.v4.new_notebook(), ["tumbling-window"], number=2))
    exercise_cells = [cell for cell in built.cells if "exercise" in cell.metadata.get("tags", [])]
    assert [cell.source.split("(")[0] for cell in exercise_cells] == [
        "def window_of",
        "def next_watermark",
        "def pipeline",
    ]
    assert all("raises-exception" not in cell.metadata.get("tags", []) for cell in built.cells)


def test_notebooks_are_built():
    """Every lesson notebook holds its exercises and 00-start-here is current (a lesson author who regenerated
    a notebook removed them: run ``python -m ministream.workshop build``)."""
    assert stale_notebooks() == [], "run `python -m ministream.workshop build`"


def test_start_here_lists_the_course_and_the_two_commands():
    """00-start-here gives the two commands from a fresh clone and every notebook of the course."""
    notebook = nbformat.read(NOTEBOOKS / START_HERE, as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells)
    assert "make -C ministream notebooks" in text and "git clone" in text
    assert all(f"`{step.path.name}`" in text for step in course())
    assert notebook == start_here()
