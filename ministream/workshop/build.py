"""The build step: the exercises inserted into the lesson notebooks, and the start-here notebook written.

``python -m ministream.workshop build`` is idempotent: it removes every cell an earlier build inserted (they
carry ``"workshop"`` in their metadata) and inserts them again, before each notebook's recap, so a lesson's
author can regenerate a notebook and the build puts the exercises back. The cells:

- ``## Exercises`` and, per exercise, its task (Markdown);
- the exercise cell (tag ``exercise``): the function to write, raising ``NotImplementedError``;
- the check cell (tags ``check`` and ``raises-exception``, so that "Run all" goes on past an exercise not
  done yet; the test suite removes that tag when it runs the notebooks with the solutions filled in).

:func:`with_solutions` fills the exercise cells with ``solutions.py``: that is what the tests execute.

>>> notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Recap\\n- windows")])
>>> built = insert_exercises(notebook, ["sliding-window"], number=3)
>>> [(cell.cell_type, cell.metadata.get("tags", [])) for cell in built.cells]
[('markdown', []), ('markdown', []), ('code', ['exercise']), ('code', ['check', 'raises-exception']), ('markdown', [])]
>>> insert_exercises(built, ["sliding-window"], number=3) == built
True
"""

from __future__ import annotations

import ast
import copy
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from ministream.workshop import solutions
from ministream.workshop.course import NOTEBOOKS, RECAP, START_HERE, course, course_table, number_clashes
from ministream.workshop.exercises import EXERCISES, Exercise, exercises_of

HOW_CHECKS_WORK = """\
## Exercises

Write each function in its cell, run the cell, then run the check below it. The check tries your function on
cases aimed at one rule each, then on this lesson's events, and compares with Spark's own answer (computed once
per kernel, so the first check that needs Spark takes a while). When something differs, it says which event,
batch or row, what you answered, what Spark did, and **the rule that was missed**. The checks do not need the
cells above them."""


def _cell(kind: str, source: str, cell_id: str, tags: list[str] | None = None):
    cell = new_markdown_cell(source) if kind == "markdown" else new_code_cell(source)
    cell.id = cell_id
    cell.metadata["workshop"] = True
    if tags:
        cell.metadata["tags"] = tags
    return cell


def exercise_cells(exercise: Exercise, number: str) -> list:
    """The three cells of one exercise: its task, the cell to write in, and the check."""
    name = exercise.function
    return [
        _cell("markdown", f"### Exercise {number}: {exercise.title}\n\n{exercise.task}", f"workshop-{name}-task"),
        _cell("code", exercise.starter.rstrip("\n"), f"workshop-{name}", ["exercise"]),
        _cell("code", exercise.check_code(), f"workshop-{name}-check", ["check", "raises-exception"]),
    ]


def strip_workshop_cells(notebook):
    """A copy of the notebook without the cells the build inserted."""
    notebook = copy.deepcopy(notebook)
    notebook.cells = [cell for cell in notebook.cells if "workshop" not in cell.get("metadata", {})]
    return notebook


def insert_exercises(notebook, lessons, number: int):
    """A copy of ``notebook`` with the exercises of ``lessons`` (numbered ``number.1``, ``number.2``...) before
    its recap, or at its end when it has none; without exercises, only the earlier build's cells removed."""
    notebook = strip_workshop_cells(notebook)
    exercises = exercises_of(lessons)
    if not exercises:
        return notebook
    cells = [_cell("markdown", HOW_CHECKS_WORK, "workshop-exercises")]
    for index, exercise in enumerate(exercises, start=1):
        cells += exercise_cells(exercise, f"{number}.{index}")
    recap = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "markdown" and RECAP.search(cell.source)]
    at = recap[-1] if recap else len(notebook.cells)
    notebook.cells[at:at] = cells
    return notebook


def solution_source(name: str) -> str:
    """The source of the solution called ``name``, read from ``solutions.py`` as it is on disk now.

    (Not ``inspect.getsource``: in a long-running process whose ``solutions`` module was imported before the
    file changed, it would cut the new file at the old line numbers.)

    >>> print(solution_source("window_of").splitlines()[0])
    def window_of(ts, size, offset=0):
    """

    text = Path(solutions.__file__).read_text()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return "\n".join(text.splitlines()[node.lineno - 1 : node.end_lineno])
    raise KeyError(f"ministream/workshop/solutions.py has no function {name!r}")


def with_solutions(notebook):
    """A copy of a built notebook with every exercise cell holding its solution and every check cell
    expected to pass (its ``raises-exception`` tag removed): what the test suite executes."""
    notebook = copy.deepcopy(notebook)
    for cell in notebook.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if "exercise" in tags:
            cell.source = solution_source(cell.id.removeprefix("workshop-"))
        if "check" in tags:
            cell.metadata["tags"] = [tag for tag in tags if tag != "raises-exception"]
    return notebook


def start_here():
    """The ``00-start-here`` notebook: how to start, the path through the course, how exercises work."""
    steps = course()
    cells = [
        new_markdown_cell(f"""# 0. Start here: the ministream workshop

**At the end of this notebook you will be able to** find your way through the course: which notebook teaches
what, in which order, how the exercises check themselves, and how to run everything.

ministream is a small stream-processing engine in pure Python; every concept it teaches is paired with a PySpark
Structured Streaming pipeline (its *twin*) and the two are compared batch for batch, row for row.

## How to start

From a fresh clone, two commands (the first run installs everything: Python packages, a Jupyter kernel,
graphviz; Java 17 must be there):

```
git clone <this repository> ministream
make -C ministream notebooks
```

JupyterLab opens on `notebooks/`. To run every notebook headless, with the solutions filled in (as CI does):
`make workshop-check`.

## The path

{course_table(steps)}

Each notebook opens with what you will be able to do at its end and closes with a recap. The first Spark
comparison in a notebook starts Spark (a few seconds on a quiet laptop, a minute on a busy machine).

## Exercises

Exercise cells are marked *Exercise N.M*: write the function, run its cell, then run the check under it. The
check answers with ✓ and what it compared, or with ✗, the event, batch or row that differs, and **the rule you
missed**. Instructors find the solutions in `ministream/workshop/solutions.py` and the plan, timings and common
misconceptions in `tutorials/instructor-guide.md`."""),
        new_code_cell("""from ministream.workshop.environment import report

print(report())"""),
        new_markdown_cell("The course, read from the notebooks themselves (their lessons, in teaching order):"),
        new_code_cell("""from ministream.workshop.course import course

for number, step in enumerate(course(), start=1):
    print(number, step.path.name, "-", ", ".join(step.lessons))"""),
        new_markdown_cell("""## Recap

- Go through the notebooks in the order of the table; each one builds on the ones before.
- Every exercise has a check that tells you which rule you missed; the solutions are kept apart.
- `make notebooks` opens JupyterLab; `make workshop-check` runs every notebook headless."""),
    ]
    for index, cell in enumerate(cells):
        cell.id = f"start-here-{index}"
    notebook = new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    return notebook


def _write_if_changed(notebook, path: Path) -> bool:
    if path.exists() and nbformat.reads(path.read_text(), as_version=4) == notebook:
        return False
    nbformat.write(notebook, path)
    return True


def stale_notebooks(folder: Path = NOTEBOOKS) -> list[str]:
    """The notebooks a build would change (nothing is written): lesson notebooks whose exercises are missing
    or out of date, and ``00-start-here`` when it is not current."""
    stale = []
    for step in course(folder):
        notebook = nbformat.read(step.path, as_version=4)
        if insert_exercises(notebook, step.lessons, int(step.path.name[:2])) != notebook:
            stale.append(step.path.name)
    start = folder / START_HERE
    if not start.exists() or nbformat.read(start, as_version=4) != start_here():
        stale.append(START_HERE)
    return stale


def busy(path: Path, minutes: int = 15) -> str | None:
    """Why a notebook's author may be at work on it (``None``: not as far as git tells): it has uncommitted
    changes, is not committed yet, or was committed in the last ``minutes``."""
    import subprocess
    import time

    def git(*args):
        done = subprocess.run(["git", *args], cwd=path.parent, capture_output=True, check=False, text=True)
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", path.name)
    if status is None:
        return None  # not a git checkout: nobody else to wait for
    if status.startswith("??"):
        return "not committed yet"
    if status:
        committed = git("show", f"HEAD:./{path.name}")
        ours_only = (
            committed is not None
            and strip_workshop_cells(nbformat.reads(committed, as_version=4)).cells
            == strip_workshop_cells(nbformat.read(path, as_version=4)).cells
        )
        if not ours_only:  # changes other than the workshop's own cells
            return "uncommitted changes"

    def authors_cells(commit):
        text = git("show", f"{commit}:./{path.name}")
        return None if text is None else strip_workshop_cells(nbformat.reads(text, as_version=4)).cells

    for line in (git("log", "-5", "--format=%H %ct", "--", path.name) or "").splitlines():
        commit, when = line.split()
        if authors_cells(commit) == authors_cells(f"{commit}^"):
            continue  # a commit of the workshop's own cells: not the author's work
        if time.time() - int(when) < minutes * 60:
            return f"committed {int((time.time() - int(when)) // 60)} minutes ago"
        return None
    return None


def build(folder: Path = NOTEBOOKS, log=print, wait_for_authors: bool = False) -> list[Path]:
    """Insert the exercises into every lesson notebook of ``folder`` and write ``00-start-here``; return the
    notebooks that changed. Problems (a notebook without an opening or a recap, two notebooks with one number,
    an exercise whose notebook is missing) are logged, not fixed: the notebooks are their authors'. With
    ``wait_for_authors``, a notebook its author may be working on (:func:`busy`) is left alone, and said so."""
    changed = []
    steps = course(folder)
    placed = set()
    for step in steps:
        reason = busy(step.path) if wait_for_authors else None
        if reason:
            log(f"{step.path.name}: left alone, its author may be at work ({reason})")
            placed |= {exercise.function for exercise in exercises_of(step.lessons)}
            continue
        notebook = nbformat.read(step.path, as_version=4)
        built = insert_exercises(notebook, step.lessons, int(step.path.name[:2]))  # exercise 4.1 is in 04-...
        placed |= {exercise.function for exercise in exercises_of(step.lessons)}
        if not step.opening:
            log(f"{step.path.name}: no opening 'At the end of this notebook you will be able to ...'")
        if not step.recap:
            log(f"{step.path.name}: does not close with a '## Recap' cell")
        if _write_if_changed(built, step.path):
            changed.append(step.path)
    for clash in number_clashes(steps):
        log(f"two notebooks share the number {clash} (the course orders them by their lessons)")
    for exercise in EXERCISES:
        if exercise.function not in placed:
            log(f"exercise {exercise.function}: no notebook teaches lesson {exercise.lesson!r} yet")
    if folder == NOTEBOOKS and _write_if_changed(start_here(), folder / START_HERE):
        changed.append(folder / START_HERE)
    for path in changed:
        log(f"updated {path.name}")
    return changed
