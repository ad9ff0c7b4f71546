"""Late rows: the rows a watermark keeps out of the state, kept so that none is dropped silently.

Every stateful step that drops a row because the watermark has passed it (a window step, a join, a
deduplication, a process function) keeps a :class:`LateRow` in its operator's ``late_rows`` list: the batch,
the step, the row, the window it was late for (when there is one), the watermark and the rule, in words.
``Run.late_rows(step)`` gathers them from every subtask, oldest batch first; the trace has one ``late`` line
per entry and counts them per batch.

Spark drops late rows without a word (its progress reports only count them, per partial aggregate, as
``numRowsDroppedByWatermark``); Flink can send them to a side output. ministream does both: the lists here,
and the ``late_rows="..."`` side output of a window step.

>>> late = LateRow(2, "per_window", {"key": "a", "ts": 4_000}, (0, 5_000), 5_000,
...                "end 00:00:05 <= watermark 00:00:05 of the previous batch")
>>> dropped_flags([[{"key": "a", "ts": 6_000}], [], [{"key": "a", "ts": 4_000}]], [late])
[False, True]
"""

from __future__ import annotations

import attrs


@attrs.frozen
class LateRow:
    """A row the watermark kept out of a step's state: when, at which step, for which window (``None`` when the
    step has no windows), against which watermark, and the rule, in words.

    ``batch_id`` is ``None`` in the continuous model, which has no batches. ``query`` names the query that
    dropped the row by its first sink, when the dataflow ran as several queries (``core/queries.py``): a step
    that feeds two of them runs in each, under each query's own watermark, and may drop a row in one and keep
    it in the other (``Run.late_rows`` fills it in).

    >>> late = LateRow(3, "per_window", {"key": "a", "ts": 9_000}, (0, 10_000), 10_000,
    ...                "end 00:00:10 <= watermark 00:00:10 of the previous batch")
    >>> late.batch_id, late.window
    (3, (0, 10000))
    """

    batch_id: int | None
    step: str
    row: dict
    window: tuple[int, int] | None
    watermark: int
    rule: str
    query: str | None = None


def dropped_flags(script, late_rows: list[LateRow]) -> list[bool]:
    """For each row of a script, in arrival order, whether a window step dropped it from one of its windows
    (the ``late`` marks of ``plots.event_time_plot``). Rows are matched by batch and by value.

    >>> script = [[{"ts": 1}], [{"ts": 9}, {"ts": 2}]]
    >>> dropped_flags(script, [LateRow(1, "w", {"ts": 2}, (0, 5), 5, "end <= watermark")])
    [False, False, True]
    """
    counts: dict[tuple, int] = {}  # {(batch_id, repr(row), window): how many times}
    for late in late_rows:
        place = (late.batch_id, repr(late.row), late.window)
        counts[place] = counts.get(place, 0) + 1
    pending: dict[
        tuple, int
    ] = {}  # {(batch_id, repr(row)): how many rows to flag}: a row late for two windows is one row
    for (batch_id, row, _), count in counts.items():
        pending[(batch_id, row)] = max(count, pending.get((batch_id, row), 0))
    flags = []
    for batch_id, batch in enumerate(script):
        for row in batch:
            left = pending.get((batch_id, repr(row)), 0)
            flags.append(left > 0)
            pending[(batch_id, repr(row))] = left - 1
    return flags
