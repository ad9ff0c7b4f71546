"""Progress in the workshop: what long work says while it runs, as plain lines and bars a learner can read.

Spark takes about ten seconds to start, and a checkpoint lesson crashes a query on purpose. The package says so
on its ``ministream`` loggers (``starting Spark (about 10 s)``, ``Spark's query stopped in batch 3 as planned:
foreachBatch raised after 1 of 3 rows``); :func:`show_progress` shows those lines as the output of the cell
that runs the work, plain text like a ``print`` (not a red stderr box). Every lesson notebook calls it in its
first code cell. :func:`progress_bar` is a bar for work done in steps (the scripts of a fuzz run, the notebooks
of ``ministream workshop check``): a widget in a notebook, a line of text in a terminal (``tqdm.auto``), with
each step's own line written above it.

>>> import logging
>>> show_progress()
>>> logging.getLogger("ministream.spark").info("starting Spark (about 10 s)")
starting Spark (about 10 s)
>>> show_progress(False)
>>> with progress_bar(2, "scripts", disable=True) as step:
...     step("script 0 agrees"); step("script 1 agrees")
script 0 agrees
script 1 agrees
"""

from __future__ import annotations

import contextlib
import sys


class CurrentStdout:
    """A text stream that writes to whatever ``sys.stdout`` is when it writes: in a notebook, the output of
    the cell being run (ipykernel, doctest and ``contextlib.redirect_stdout`` all replace ``sys.stdout``).

    >>> CurrentStdout().write("shown\\n")
    shown
    6
    """

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


def show_progress(shown: bool = True) -> None:
    """Show what the ``ministream`` loggers say while work goes on (Spark starting, a planned crash in one
    line) as plain lines on the standard output of the moment: in a notebook, under the cell that runs the
    work. Spark's own logging stays quiet (``ministream/spark/log4j2.properties``).

    Args:
        shown: ``False`` stops the lines.
    """
    from ministream.spark.session import report_progress

    report_progress(CurrentStdout() if shown else None)


class Steps:
    """What :func:`progress_bar` yields: call it with a finished step's line (written above the bar, and the bar
    moves on by one); :meth:`doing` names the step under way on the bar."""

    def __init__(self, bar, out) -> None:
        self.bar, self.out = bar, out

    def __call__(self, line: str) -> None:
        self.bar.write(line, file=self.out)
        self.bar.update(1)

    def doing(self, what: str) -> None:
        self.bar.set_description(what)


@contextlib.contextmanager
def progress_bar(total: int, what: str, unit: str = "step", out=None, disable: bool = False):
    """A progress bar of ``total`` steps labelled ``what`` (``tqdm.auto``: a widget in a notebook, a line of
    text on stderr in a terminal); yields a :class:`Steps`: ``step(line)`` writes a finished step's line above
    the bar and moves the bar on by one, ``step.doing(text)`` names the step under way.

    >>> with progress_bar(1, "fuzz", disable=True) as step:
    ...     step.doing("script 0")
    ...     step("session-window script 0: agrees")
    session-window script 0: agrees

    Args:
        total: how many steps.
        what: the bar's label.
        unit: what a step is, for the rate (``script``, ``notebook``).
        out: where the steps' lines go (the standard output of the moment by default).
        disable: no bar at all, only the lines (for a log, or a doctest).
    """
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=what, unit=unit, disable=disable) as bar:
        yield Steps(bar, out if out is not None else CurrentStdout())
