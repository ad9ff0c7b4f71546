"""Fault injection: crashes that happen exactly where a script says, so that recovery can be tested.

A real engine fails at random moments; a learner and a test need the failure at a chosen one, every time.
ministream injects a :class:`SimulatedCrash`, an exception that stands for "the process died here":

- a **source** can be told to crash after delivering some records: ``ScriptedSource(batches, crash_after=5)``,
  or a :class:`Crash` entry where the script should fail (bytewax's ``TestingSource.ABORT``). A source
  crashes once: the run that recovers reads past the crash point, as a restarted job would;
- a **sink** can be told to crash in the middle of writing a micro-batch (``exactly_once.SinkCrash``), after writing
  part of it, which is how Spark's ``foreachBatch`` fails in the tutorial.

``crash_at(flow, n)`` picks the source that holds the script's row n (counted batch by batch) and makes it
crash there: that is ``ministream run LESSON --crash-at N``.

When a run crashes, everything it held in memory is gone: operators, channels, the scheduler. What survives
is what lives outside the process: the checkpoint storage and what the sinks already made visible. That is
why a recovering run (``recovery.run_with_recovery``) builds a new physical graph from the same dataflow and
restores it from the last complete checkpoint.

>>> from ministream.core.sources import ScriptedSource
>>> source = ScriptedSource([[{"n": 1}, {"n": 2}, Crash(), {"n": 3}]])
>>> source.crash_after, source.batch(0)
(2, [{'n': 1}, {'n': 2}, {'n': 3}])
>>> source.read(0)
Traceback (most recent call last):
...
ministream.core.faults.SimulatedCrash: source crashed after delivering 2 of its records (crash_after=2)
>>> len(source.read(0))   # a source crashes once: the recovering run reads on
3
"""

from __future__ import annotations

import attrs

from ministream.errors import PipelineError


class SimulatedCrash(RuntimeError):
    """The process died here (an injected failure): its memory is lost; the checkpoint storage and what the
    sinks made visible survive.

    >>> raise SimulatedCrash("the sink crashed while writing batch 3")
    Traceback (most recent call last):
    ...
    ministream.core.faults.SimulatedCrash: the sink crashed while writing batch 3"""


@attrs.frozen
class Crash:
    """A script entry where the source crashes, the first time it gets there (bytewax's ``TestingSource.ABORT``).

    It is not a row: ``ScriptedSource`` removes it from the script and remembers how many rows come before it.

    >>> script = [[{"n": 1}], [Crash(), {"n": 2}]]
    """


def rows_before_crash(batches: list) -> tuple[list, int | None]:
    """The script without its :class:`Crash` entries, and how many rows come before the first one
    (``None`` when there is none). Other entries (``clock.ClockStep``) stay, and are not counted as rows;
    a ``None`` batch (nothing arrived before that trigger) stays ``None``.

    >>> rows_before_crash([[{"n": 1}], [{"n": 2}, Crash(), {"n": 3}]])
    ([[{'n': 1}], [{'n': 2}, {'n': 3}]], 2)
    """
    clean: list[list | None] = []
    crash_after, count = None, 0
    for batch in batches:
        if batch is None:  # a trigger firing with nothing new (core/triggers.py): no rows, no crash
            clean.append(None)
            continue
        rows = []
        for entry in batch:
            if isinstance(entry, Crash):
                crash_after = count if crash_after is None else crash_after
            else:
                rows.append(entry)
                count += isinstance(entry, dict)  # rows count; clock steps (continuous model) do not
        clean.append(rows)
    return clean, crash_after


def total_rows(flow) -> int:
    """How many rows the flow's sources deliver, all together.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> flow = Dataflow("clicks")
    >>> web = flow.source("web", ScriptedSource([[{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}], [{"n": 5}, {"n": 6}]]))
    >>> mobile = flow.source("mobile", ScriptedSource([[{"n": 7}]]))
    >>> total_rows(flow)   # 6 web rows and 1 mobile row
    7"""
    return sum(len(step.source.batch(k)) for step in flow.sources for k in range(len(step.source)))


def crash_at(flow, rows: int) -> tuple[str, int]:
    """Make the run crash after ``rows`` rows of the script, counted batch by batch (in each batch, the
    sources in the order the flow declares them): the source that holds the next row crashes when asked for
    it. Returns ``(source, its crash_after)``.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> flow = Dataflow("clicks")
    >>> web = flow.source("web", ScriptedSource([[{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}], [{"n": 5}, {"n": 6}]]))
    >>> mobile = flow.source("mobile", ScriptedSource([[{"n": 7}]]))
    >>> crash_at(flow, 6)   # batch 0: web's 4 rows, mobile's 1; batch 1: web crashes after its 5th
    ('web', 5)"""

    total = total_rows(flow)
    if not 0 <= rows < total:
        raise PipelineError(
            f"--crash-at {rows}: the script has {total} rows, so a crash can come after 0 to {total - 1} of them"
        )
    seen, length = 0, max(len(step.source) for step in flow.sources)
    before = {step.name: 0 for step in flow.sources}
    for k in range(length):
        for step in flow.sources:
            count = len(step.source.batch(k))
            if seen + count > rows:
                step.source.crash_after, step.source.crashed = before[step.name] + rows - seen, False
                return step.name, step.source.crash_after
            seen += count
            before[step.name] += count
    raise AssertionError("unreachable: rows < total")
