"""The course: the lesson notebooks in teaching order, what each one teaches, and whether it is complete.

The notebooks in ``notebooks/`` are written by each lesson's author (some by a build script). The course reads
them rather than listing them by hand: a notebook's lessons are the ``get_lesson("...")`` calls in its code,
and its place in the course is the place of its first lesson in ``ministream.lessons.LESSON_MODULES`` (the
teaching order), then its file number. Every notebook must open with what the learner will be able to do at
its end and close with a recap: :func:`course` says which do.

>>> from pathlib import Path
>>> steps = course(NOTEBOOKS)
>>> steps[0].path.name, steps[0].lessons
('01-running-aggregation.ipynb', ('running-aggregation',))
>>> all(step.opening and step.recap for step in steps)
True
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs
import nbformat

from ministream.lessons import LESSON_MODULES, all_lessons
from ministream.workshop.exercises import exercises_of

NOTEBOOKS = Path(__file__).resolve().parent.parent.parent / "notebooks"
"""The notebooks folder of the repository."""

START_HERE = "00-start-here.ipynb"
LESSON_CALL = re.compile(r"""get_lesson\(\s*["']([a-z0-9-]+)["']\s*\)""")
OPENING = re.compile(r"will be able to", re.I)
RECAP = re.compile(r"^#+\s*Recap", re.M)


@attrs.frozen
class Step:
    """One notebook of the course: its file, title, lessons, and the opening sentence and recap it has."""

    path: Path
    title: str
    lessons: tuple[str, ...]
    opening: str | None
    recap: bool


def _own_cells(notebook) -> list:
    """The notebook's cells without the ones the workshop build inserted."""
    return [cell for cell in notebook.cells if "workshop" not in cell.get("metadata", {})]


def read_step(path: Path) -> Step:
    """What a notebook teaches and whether it opens and closes as a course notebook must."""
    notebook = nbformat.read(path, as_version=4)
    cells = _own_cells(notebook)
    texts = [cell.source for cell in cells if cell.cell_type == "markdown"]
    title = next(
        (line.lstrip("# ").strip() for text in texts for line in text.splitlines() if line.startswith("# ")), path.stem
    )
    lessons = tuple(
        dict.fromkeys(name for cell in cells if cell.cell_type == "code" for name in LESSON_CALL.findall(cell.source))
    )
    first = texts[0] if texts and cells and cells[0].cell_type == "markdown" else ""
    opening = next((paragraph.strip() for paragraph in first.split("\n\n") if OPENING.search(paragraph)), None)
    recap = bool(texts) and bool(RECAP.search(texts[-1]))
    return Step(path, title, lessons, opening, recap)


def _teaching_index(lessons: tuple[str, ...]) -> int:

    order = {lesson.name: i for i, lesson in enumerate(all_lessons())}
    return min((order[name] for name in lessons if name in order), default=len(LESSON_MODULES))


def course(folder: Path = NOTEBOOKS) -> list[Step]:
    """The lesson notebooks of ``folder`` in teaching order (``00-start-here`` left out)."""
    steps = [read_step(path) for path in sorted(folder.glob("[0-9][0-9]-*.ipynb")) if path.name != START_HERE]
    return sorted(steps, key=lambda step: (_teaching_index(step.lessons), step.path.name))


def number_clashes(steps: list[Step]) -> list[str]:
    """File numbers that two notebooks share (the course still orders them by their lessons).

    >>> number_clashes([Step(Path("11-a.ipynb"), "", (), None, True), Step(Path("11-b.ipynb"), "", (), None, True)])
    ['11: 11-a.ipynb, 11-b.ipynb']
    """
    by_number: dict[str, list[str]] = {}
    for step in steps:
        by_number.setdefault(step.path.name[:2], []).append(step.path.name)
    return [f"{number}: {', '.join(names)}" for number, names in sorted(by_number.items()) if len(names) > 1]


def course_table(steps: list[Step] | None = None) -> str:
    """The course as a Markdown table: order, notebook, what the learner will be able to do, exercises.

    >>> print(course_table()[:130])
    | # | notebook | at the end you will be able to | exercises |
    | --- | --- | --- | --- |
    | 1 | `01-running-aggregation.ipynb`...
    """

    steps = course() if steps is None else steps
    rows = ["| # | notebook | at the end you will be able to | exercises |", "| --- | --- | --- | --- |"]
    for number, step in enumerate(steps, start=1):
        goal = (step.opening or step.title).replace("\n", " ")
        goal = re.sub(r"^\*\*At the end of this notebook you will be able to\*\*\s*", "", goal)
        names = ", ".join(f"`{exercise.function}`" for exercise in exercises_of(step.lessons)) or "-"
        rows.append(f"| {number} | `{step.path.name}` | {goal} | {names} |")
    return "\n".join(rows)
