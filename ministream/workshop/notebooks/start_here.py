"""Notebook 00, start here: how to start, the path through the course, how the exercises answer.

Its course table is made from the other notebooks' modules (``ministream.workshop.course``), so it follows
them when a notebook is added or reordered.

>>> source = start_here()
>>> source.name, source.lessons
('00-start-here.ipynb', ())
"""

from __future__ import annotations

from ministream.workshop.course import course_table
from ministream.workshop.notebooks.cells import NotebookSource, code, markdown


def start_here() -> NotebookSource:
    """The ``00-start-here`` notebook: how to start, the path through the course, how exercises work."""
    return NotebookSource(
        0,
        "start-here",
        (),
        [
            markdown(f"""# 0. Start here: the ministream workshop

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

JupyterLab opens on `notebooks/`, with the kernel "Python (ministream)". To run every notebook headless, with
the solutions filled in (as CI does): `make workshop-check`.

Installed ministream with pip instead? `ministream workshop copy my-notebooks` writes these notebooks into
`my-notebooks/`; open them with a kernel of the Python that ministream is installed in.
`ministream workshop check` runs them headless.

## The path

{course_table()}

Each notebook opens with what you will be able to do at its end and closes with a recap. The first Spark
comparison in a notebook starts Spark (a few seconds on a quiet laptop, a minute on a busy machine).

## Exercises

Exercise cells are marked *Exercise N.M*: write the function, run its cell, then run the check under it. The
check answers with ✓ and what it compared, or with ✗, the event, batch or row that differs, and **the rule you
missed**. Instructors find the solutions in `ministream/workshop/solutions.py` and the plan, timings and common
misconceptions in `tutorials/instructor-guide.md`."""),
            code("""from ministream.workshop.environment import report

print(report())"""),
            markdown("The course, read from the notebooks' own modules (their lessons, in teaching order):"),
            code("""from ministream.workshop.course import course

for number, step in enumerate(course(), start=1):
    print(number, step.name, "-", ", ".join(step.lessons))"""),
            markdown("""## Recap

- Go through the notebooks in the order of the table; each one builds on the ones before.
- Every exercise has a check that tells you which rule you missed; the solutions are kept apart.
- `make notebooks` opens JupyterLab; `make workshop-check` runs every notebook headless."""),
        ],
    )
