"""The build: every notebook of the course written from its module, exercises included, and the solutions.

The notebooks are generated, never edited by hand: ``ministream/workshop/notebooks/`` holds one module per
notebook (:func:`course_sources` lists them in file order) and :func:`notebook_text` renders one, with the
exercises of its lessons before its recap. :func:`build` writes them into the repository's ``notebooks/``
(``python -m ministream.workshop build``), :func:`copy_notebooks` into a learner's folder (``ministream
workshop copy DIR``), and :func:`stale_notebooks` names the files of a folder that differ from what their
module generates (the tests require none). The package needs no notebook file at run time: it makes them.

:func:`with_solutions` fills the exercise cells with ``solutions.py``: that is what the tests execute.

>>> import nbformat
>>> [source.name for source in course_sources()][:3]
['00-start-here.ipynb', '01-running-aggregation.ipynb', '02-tumbling-window.ipynb']
>>> notebook = nbformat.reads(notebook_text(course_sources()[2]), as_version=4)
>>> [(cell.cell_type, cell.metadata.get("tags", [])) for cell in notebook.cells[-4:]]
[('markdown', []), ('code', ['exercise']), ('code', ['check', 'raises-exception']), ('markdown', [])]
"""

from __future__ import annotations

import ast
import copy
from importlib import resources
from pathlib import Path

from ministream.workshop.course import LESSON_NOTEBOOKS, course, number_clashes
from ministream.workshop.exercises import EXERCISES, exercises_of
from ministream.workshop.notebooks.cells import NotebookSource, to_notebook
from ministream.workshop.notebooks.start_here import start_here

NOTEBOOK_FILES = "[0-9][0-9]-*.ipynb"
"""The notebooks of a folder that belong to the course: a two-digit number, a dash, a name."""


def course_sources() -> list[NotebookSource]:
    """Every notebook of the course, by number: ``00-start-here``, then the lesson notebooks."""
    return [start_here()] + sorted(LESSON_NOTEBOOKS, key=lambda source: source.number)


def notebook_text(source: NotebookSource) -> str:
    """The notebook file, as ``build`` writes it (nbformat's JSON and a final newline)."""
    import nbformat

    return nbformat.writes(to_notebook(source)) + "\n"


def stale_notebooks(folder: Path) -> list[str]:
    """The notebooks of ``folder`` that are not exactly what their module generates, or are missing, and the
    numbered notebooks that no module generates (nothing is written).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = (Path(folder) / "12-mine.ipynb").write_text("{}")
    ...     stale_notebooks(Path(folder))[:2], stale_notebooks(Path(folder))[-1]
    (['00-start-here.ipynb (missing)', '01-running-aggregation.ipynb (missing)'], '12-mine.ipynb (no module generates it)')
    """
    stale = []
    names = set()
    for source in course_sources():
        names.add(source.name)
        path = folder / source.name
        if not path.exists():
            stale.append(f"{source.name} (missing)")
        elif path.read_text(encoding="utf-8") != notebook_text(source):
            stale.append(f"{source.name} (differs from its module)")
    stale += [
        f"{path.name} (no module generates it)"
        for path in sorted(folder.glob(NOTEBOOK_FILES))
        if path.name not in names
    ]
    return stale


def _write(source: NotebookSource, path: Path) -> bool:
    text = notebook_text(source)
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def build(folder: Path, log=print) -> list[Path]:
    """Write every notebook of the course into ``folder`` from its module; return the ones that changed.

    Problems are logged: a notebook without an opening or a recap, two notebooks with one number, an exercise
    whose lesson no notebook teaches, and a numbered notebook in ``folder`` that no module generates.
    """
    changed = []
    for step in course():
        if not step.opening:
            log(f"{step.name}: no opening 'At the end of this notebook you will be able to ...'")
        if not step.recap:
            log(f"{step.name}: does not close with a '## Recap' cell")
    for clash in number_clashes(LESSON_NOTEBOOKS):
        log(f"two notebooks share the number {clash} (the course orders them by their lessons)")
    placed = {exercise.function for source in LESSON_NOTEBOOKS for exercise in exercises_of(source.lessons)}
    for exercise in EXERCISES:
        if exercise.function not in placed:
            log(f"exercise {exercise.function}: no notebook teaches lesson {exercise.lesson!r} yet")
    for source in course_sources():
        if _write(source, folder / source.name):
            changed.append(folder / source.name)
            log(f"updated {source.name}")
    for problem in stale_notebooks(folder):
        log(f"{problem}: write its module in ministream/workshop/notebooks/, or remove it")
    return changed


def copy_notebooks(folder: Path, force: bool = False, log=print) -> list[Path]:
    """Write the notebooks of the course into ``folder`` (created if need be), for a learner to open them;
    a notebook already there is left alone (it may hold the learner's work) unless ``force``.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     first = copy_notebooks(Path(folder), log=lambda line: None)
    ...     again = copy_notebooks(Path(folder), log=lambda line: None)  # the learner's work is kept
    >>> len(first), again
    (19, [])
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for source in course_sources():
        path = folder / source.name
        if path.exists() and not force:
            log(f"{path}: already there, left alone (--force overwrites it)")
            continue
        path.write_text(notebook_text(source), encoding="utf-8")
        written.append(path)
    log(f"wrote {len(written)} notebooks into {folder}")
    return written


def solution_source(name: str) -> str:
    """The source of the solution called ``name``, read from ``solutions.py`` as it is on disk now.

    (Not ``inspect.getsource``: in a long-running process whose ``solutions`` module was imported before the
    file changed, it would cut the new file at the old line numbers.)

    >>> print(solution_source("window_of").splitlines()[0])
    def window_of(ts, size, offset=0):
    """
    text = resources.files("ministream.workshop").joinpath("solutions.py").read_text(encoding="utf-8")
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
