"""Timings: how long each notebook of the course takes to execute, measured, for the instructor's guide.

Each notebook runs with its exercises solved (``build.with_solutions``) in a fresh Jupyter kernel, so its time
includes starting Python, starting Spark and every Spark query the notebook and its checks run: what a learner
who clicks "Run all" waits. The machine's load average is recorded before and after, because on a shared
machine it can double the times. ``python -m ministream.workshop timings``, run from the repository's root,
writes the table into ``tutorials/instructor-guide.md`` between ``<!-- timings -->`` and ``<!-- /timings -->``.

>>> print(timings_table([Timing("01-running-aggregation.ipynb", 41.5, (3.1, 2.0, 1.5), (3.9, 2.2, 1.6))],
...                     when="2024-01-01 10:00 UTC"))
Measured 2024-01-01 10:00 UTC on 2 cores, each notebook in a fresh kernel with its exercises solved (Spark start included).
<BLANKLINE>
| notebook | time to run | load average before / after |
| --- | --- | --- |
| `01-running-aggregation.ipynb` | 42 s | 3.1 / 3.9 |
| total | 42 s (0.7 min) | |
"""

from __future__ import annotations

import copy
import os
import re
import time
import uuid
from pathlib import Path

import attrs

from ministream.workshop.build import with_solutions

GUIDE = Path("tutorials") / "instructor-guide.md"
"""The instructor's guide, from the repository's root (the guide is the repository's, not the package's)."""

TABLE = re.compile(r"(<!-- timings -->\n)(?P<body>.*?)(<!-- /timings -->)", re.S)


@attrs.frozen
class Timing:
    """One notebook's execution: its name, the wall-clock seconds, and the 1/5/15-minute load averages
    before and after."""

    notebook: str
    seconds: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    error: str | None = None
    """Why the notebook did not run to its end (``None``: it did)."""


def execute(notebook, folder: Path, solutions: bool = True, timeout: int = 1800, kernel: str = "python3"):
    """Run a notebook top to bottom in a fresh kernel started in ``folder`` (with the solutions filled in) and
    return it, executed.

    The kernel is ``python3``, the Python that runs this function, whichever kernel the notebook asks for: a
    check runs the ministream it was started from. It talks to this process over local sockets (``ipc``), which
    need no network port (and so the kernel prints no warning about unencrypted TCP on the terminal). A cell
    that raises stops the run with nbclient's ``CellExecutionError``, which names the cell.
    """
    from jupyter_client import KernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from nbclient import NotebookClient

    notebook = with_solutions(notebook) if solutions else copy.deepcopy(notebook)
    Path(jupyter_runtime_dir()).mkdir(parents=True, exist_ok=True)
    # the sockets' path is absolute: the kernel runs in another folder than this process
    sockets = Path(jupyter_runtime_dir()) / f"ministream-{uuid.uuid4().hex[:12]}-ipc"
    manager = KernelManager(kernel_name=kernel, transport="ipc", ip=str(sockets))
    try:
        NotebookClient(notebook, km=manager, timeout=timeout, resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        if manager.has_kernel:
            manager.shutdown_kernel(now=True)
    return notebook


def time_notebook(name: str, notebook, folder: Path) -> Timing:
    """Execute one notebook (solutions filled in) in ``folder`` and measure it; a failure is recorded, not
    raised."""
    before = os.getloadavg()
    start = time.perf_counter()
    error = None
    try:
        execute(notebook, folder)
    except Exception as failure:  # the table says which notebook failed, and the others are still measured
        error = last_line(failure)
    return Timing(name, time.perf_counter() - start, before, os.getloadavg(), error)


def last_line(failure: Exception) -> str:
    """The last line of an error's message (nbclient ends with the exception of the cell that failed).

    >>> last_line(ValueError("Traceback...\\n\\nZeroDivisionError: division by zero\\n"))
    'ZeroDivisionError: division by zero'
    """
    lines = [line for line in str(failure).strip().splitlines() if line.strip()]
    return lines[-1] if lines else type(failure).__name__


def timings_table(timings: list[Timing], when: str) -> str:
    """The Markdown table of the guide, with when it was measured."""
    cores = os.cpu_count()
    lines = [
        (
            f"Measured {when} on {cores} cores, each notebook in a fresh kernel with its exercises solved (Spark "
            "start included)."
        ),
        "",
        "| notebook | time to run | load average before / after |",
        "| --- | --- | --- |",
    ]
    for timing in timings:
        failed = f" (FAILED: {timing.error})" if timing.error else ""
        lines.append(
            f"| `{timing.notebook}` | {timing.seconds:.0f} s{failed} | {timing.load_before[0]:.1f} / "
            f"{timing.load_after[0]:.1f} |"
        )
    total = sum(timing.seconds for timing in timings)
    lines.append(f"| total | {total:.0f} s ({total / 60:.1f} min) | |")
    return "\n".join(lines)


def write_table(table: str, guide: Path = GUIDE) -> None:
    """Replace the table between the guide's ``<!-- timings -->`` markers."""
    text = guide.read_text()
    if not TABLE.search(text):
        raise ValueError(f"{guide} has no <!-- timings --> ... <!-- /timings --> block to fill")
    guide.write_text(TABLE.sub(lambda m: m.group(1) + table + "\n" + m.group(3), text))


def measure(notebooks: list, folder: Path, log=print) -> list[Timing]:
    """Time each notebook in turn, ``(name, notebook)`` pairs run in ``folder`` (a failure is reported in the
    table)."""
    timings = []
    for name, notebook in notebooks:
        timing = time_notebook(name, notebook, folder)
        log(
            f"{timing.notebook}: {timing.seconds:.0f} s (load {timing.load_before[0]:.1f} -> "
            f"{timing.load_after[0]:.1f}){' FAILED: ' + timing.error if timing.error else ''}",
            flush=True,
        )
        timings.append(timing)
    return timings
