"""The cells of the workshop's notebooks, as data, and the Jupyter notebook they make.

A notebook of the course is a :class:`NotebookSource`: its number, its name, the lessons it teaches, and its
cells (:func:`markdown` and :func:`code`), written by the lesson's author in one module of this package. The
build adds the exercises of its lessons before its recap (:func:`with_exercises`: per exercise, the task, the
cell the learner writes in and the check), puts the :data:`PROGRESS` cell first in a lesson notebook (so that
Spark's start and a planned crash show as plain lines) and renders it with nbformat (:func:`to_notebook`),
with the metadata every notebook of the course carries: the kernel ``make setup`` registers, "Python
(ministream)". Plots come from ``ministream.tools.plots``, whose figures show as images in any notebook: no
cell draws with matplotlib itself.

Every cell has a fixed id (the notebook's slug and the cell's place, or the exercise's function), so that the
same source always gives the same file.

>>> source = NotebookSource(2, "windows", ("sliding-window",),
...                         (markdown("# 2. Windows"), code("print(1)"), markdown("## Recap\\n- done")))
>>> source.name
'02-windows.ipynb'
>>> [(cell.id, cell.tags) for cell in with_exercises(source)]  # doctest: +NORMALIZE_WHITESPACE
[('windows-0', ()), ('windows-progress', ()), ('windows-1', ()), ('workshop-exercises', ()),
 ('workshop-windows_of-task', ()),
 ('workshop-windows_of', ('exercise',)), ('workshop-windows_of-check', ('check', 'raises-exception')),
 ('windows-2', ())]
"""

from __future__ import annotations

import re

import attrs

from ministream.workshop.exercises import Exercise, exercises_of

KERNEL_NAME = "ministream"
"""The Jupyter kernel the notebooks ask for: ``make setup`` registers it for the project's ``.venv``
(``python -m ipykernel install --sys-prefix --name ministream --display-name "Python (ministream)"``)."""

KERNELSPEC = {"display_name": "Python (ministream)", "language": "python", "name": KERNEL_NAME}
"""The ``kernelspec`` in every notebook's metadata."""

RECAP = re.compile(r"^#+\s*Recap", re.M)
"""A notebook's closing cell: a ``## Recap`` heading."""

HOW_CHECKS_WORK = """\
## Exercises

Write each function in its cell, run the cell, then run the check below it. The check tries your function on
cases aimed at one rule each, then on this lesson's events, and compares with Spark's own answer (computed once
per kernel, so the first check that needs Spark takes a while). When something differs, it says which event,
batch or row, what you answered, what Spark did, and **the rule that was missed**. The checks do not need the
cells above them."""


PROGRESS = """\
from ministream.workshop.progress import show_progress

show_progress()  # long work says what it does under its cell: "starting Spark (about 10 s)"..."""
"""The first code cell of every lesson notebook: Spark's start and a planned crash shown as one plain line
each (``ministream.workshop.progress``), instead of nothing or a red box."""


@attrs.frozen
class Cell:
    """One cell of a notebook: Markdown or code, its text, its Jupyter tags, and its id.

    >>> code("x = 1\\n")
    Cell(kind='code', source='x = 1', tags=(), id=None)

    Args:
        kind: ``"markdown"`` or ``"code"``.
        source: the cell's text, without blank lines around it.
        tags: Jupyter tags (``exercise``, ``check``, ``raises-exception``).
        id: the cell's id in the notebook; ``None`` for an author's cell, which is numbered by its place.
    """

    kind: str
    source: str
    tags: tuple[str, ...] = ()
    id: str | None = None


def markdown(text: str) -> Cell:
    """A Markdown cell.

    >>> markdown('''
    ... ## Recap
    ... ''').source
    '## Recap'
    """
    return Cell("markdown", text.strip())


def code(text: str) -> Cell:
    """A code cell.

    >>> code("print(1)").kind
    'code'
    """
    return Cell("code", text.strip())


@attrs.frozen
class NotebookSource:
    """What a notebook of the course is made of: its number, slug, the lessons it teaches, and its cells.

    >>> NotebookSource(14, "microbatch-vs-continuous", ("microbatch-vs-continuous",), ()).name
    '14-microbatch-vs-continuous.ipynb'

    Args:
        number: the notebook's number: the first part of its file name and of its exercises' numbers (4.1).
        slug: the rest of its file name.
        lessons: the lessons its code runs (``get_lesson("...")``), in order: they place it in the course
            and choose its exercises.
        cells: its cells as its author wrote them, exercises left out.
    """

    number: int
    slug: str
    lessons: tuple[str, ...]
    cells: tuple[Cell, ...] = attrs.field(converter=tuple)

    @property
    def name(self) -> str:
        """The notebook's file name."""
        return f"{self.number:02d}-{self.slug}.ipynb"


def exercise_cells(exercise: Exercise, number: str) -> list[Cell]:
    """The three cells of one exercise: its task, the cell to write in (tag ``exercise``), and the check
    (tags ``check`` and ``raises-exception``, so that "Run all" goes on past an exercise not done yet).

    >>> from ministream.workshop.exercises import exercise_named
    >>> [cell.id for cell in exercise_cells(exercise_named("forget"), "10.1")]
    ['workshop-forget-task', 'workshop-forget', 'workshop-forget-check']
    """
    name = exercise.function
    return [
        Cell("markdown", f"### Exercise {number}: {exercise.title}\n\n{exercise.task}", id=f"workshop-{name}-task"),
        Cell("code", exercise.starter.rstrip("\n"), ("exercise",), f"workshop-{name}"),
        Cell("code", exercise.check_code(), ("check", "raises-exception"), f"workshop-{name}-check"),
    ]


def with_exercises(source: NotebookSource) -> list[Cell]:
    """Every cell of the notebook, numbered, with the exercises of its lessons (numbered ``4.1``, ``4.2``...)
    before its recap, or at its end when it has none, and, in a lesson notebook, the :data:`PROGRESS` cell
    after its opening."""
    cells = [attrs.evolve(cell, id=f"{source.slug}-{index}") for index, cell in enumerate(source.cells)]
    if source.lessons:
        cells.insert(1, Cell("code", PROGRESS, id=f"{source.slug}-progress"))
    exercises = exercises_of(source.lessons)
    if not exercises:
        return cells
    inserted = [Cell("markdown", HOW_CHECKS_WORK, id="workshop-exercises")]
    for index, exercise in enumerate(exercises, start=1):
        inserted += exercise_cells(exercise, f"{source.number}.{index}")
    recaps = [i for i, cell in enumerate(cells) if cell.kind == "markdown" and RECAP.search(cell.source)]
    at = recaps[-1] if recaps else len(cells)
    return cells[:at] + inserted + cells[at:]


def to_notebook(source: NotebookSource):
    """The notebook as nbformat writes it: every cell, exercises included, and the kernel it asks for.

    >>> notebook = to_notebook(NotebookSource(1, "one", (), (markdown("# 1. One"),)))
    >>> notebook.metadata.kernelspec.display_name, notebook.cells[0].id
    ('Python (ministream)', 'one-0')
    """
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    cells = []
    for cell in with_exercises(source):
        new_cell = new_markdown_cell if cell.kind == "markdown" else new_code_cell
        node = new_cell(cell.source, id=cell.id)
        if cell.tags:
            node.metadata["tags"] = list(cell.tags)
        cells.append(node)
    return new_notebook(cells=cells, metadata={"kernelspec": dict(KERNELSPEC)})


# -- cells that several lesson notebooks share ------------------------------------------------------------------


def lesson_events(lesson: str) -> Cell:
    """The cell that loads a single-input lesson and prints its events, batch by batch.

    >>> print(lesson_events("late-data").source.splitlines()[5])
    lesson = get_lesson("late-data")
    """
    return code(f"""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

lesson = get_lesson("{lesson}")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [format_row(row) for row in batch])""")


def lesson_diagram(params: str = "") -> Cell:
    """The cell that draws the lesson's dataflow (``params``: the ``resolve_params`` argument, as code).

    >>> print(lesson_diagram('{"mode": "update"}').source.splitlines()[3])
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params({"mode": "update"}))
    """
    return code(f"""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params({params}))
graphviz.Source(to_dot(flow))""")


def event_time_plot(title: str) -> Cell:
    """The cell that plots a run's events against their arrival order, with the watermark each one is
    judged against and the rows dropped as late (after a cell that made ``run``).

    >>> print(event_time_plot("late rows").source.splitlines()[-1])
                   title='late rows')
    """
    return code(f"""from ministream.time.lateness import dropped_flags
from ministream.tools.plots import event_time_plot, watermarks_at_arrival

params = lesson.resolve_params()
watermarks = watermarks_at_arrival(lesson.default_script, params["delay"], model="microbatch")
dropped = dropped_flags(lesson.default_script, run.late_rows())  # what the window step dropped as late
event_time_plot(lesson.default_script, watermarks, late=dropped,
               title={title!r})""")
