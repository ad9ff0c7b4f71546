"""The ``with_watermark`` step: rows pass through unchanged while it tracks how far their event time has got.

The rules of watermarks (how a watermark is computed from event times, how several combine, how a subtask
makes one from its channels) are in ``time/watermarks.py``; this operator applies them to a stream.
"""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter

from ministream.core.operator import Operator
from ministream.errors import PipelineError
from ministream.time.units import format_duration, format_ts
from ministream.time.watermarks import MAX_WATERMARK


def _latest(rows: list[dict], column: str) -> int | None:
    """The largest event time of ``rows``, ``None`` if none has one: a row whose event time is null (or who has
    no such column) does not count.

    The usual case, where every row has an event time, is one pass in C (``max`` over ``itemgetter``); a row
    without one makes that pass fail (a missing column, or ``None`` compared with a number), and only then are
    the rows walked again, leaving those out.

    >>> _latest([{"ts": 5}, {"ts": 9}], "ts"), _latest([{"ts": 5}, {"ts": None}, {}], "ts"), _latest([], "ts")
    (9, 5, None)
    """
    try:
        return max(map(itemgetter(column), rows), default=None)
    except (KeyError, TypeError):
        return max((time for row in rows if (time := row.get(column)) is not None), default=None)


class KeysNotNull:
    """``key IS NOT NULL`` for a row: none of the key columns is null. Spark's optimizer adds it to a join side
    whose keys are compared with ``=`` and that is not preserved (a null key could never match), and runs it
    below the watermark (``pushdown.pushed_below_watermark``). A column the row lacks is not tested.

    Called on one row it tests that row; :meth:`keeps_all` answers for a whole chunk with one pass in C per
    key column, the usual case (no null key) needing no call per row.

    >>> not_null = KeysNotNull(("ad",))
    >>> not_null({"ad": "a"}), not_null({"ad": None}), not_null({"other": 1})
    (True, False, True)
    >>> not_null.keeps_all([{"ad": "a"}, {"other": 1}]), not_null.keeps_all([{"ad": "a"}, {"ad": None}])
    (True, False)
    """

    __slots__ = ("columns",)

    def __init__(self, columns: tuple[str, ...]):
        self.columns = columns

    def __call__(self, row: dict) -> bool:
        # a missing column reads as its own name, never null
        return all(row.get(column, column) is not None for column in self.columns)

    def keeps_all(self, rows: list[dict]) -> bool:
        """Whether no row of ``rows`` has a null key: ``dict.get(row, column, column)`` mapped over the rows."""
        try:
            return all(None not in map(dict.get, rows, repeat(column), repeat(column)) for column in self.columns)
        except TypeError:  # a row that is not a dict: row by row
            return all(map(self, rows))


class WatermarkOperator(Operator):
    """The ``with_watermark`` step: rows pass through unchanged while it tracks their event time.

    In the micro-batch model it reports the batch's largest event time to the driver. In the continuous
    model it emits a :class:`~ministream.core.physical.Watermark` marker each time ``max - delay - 1`` goes up.

    A row with a null event time does not move the watermark; a row without the column at all is an error
    (Spark refuses a watermark on a column that does not exist). ``pushed`` are the conditions Spark's
    optimizer runs before the watermark (``pushdown.pushed_below_watermark``): a row that fails one is
    dropped further on anyway, and does not move the watermark either.

    >>> from ministream.core.operator import StepContext
    >>> step = WatermarkOperator("ts", 0, pushed=[lambda row: row["value"] > 4])
    >>> ctx = StepContext.for_testing(); step.open(ctx)
    >>> step.process([{"ts": 9, "value": 1}, {"ts": 5, "value": 7}], 0); step.batch_max
    5
    """

    def __init__(self, column: str, delay: int, pushed: list | None = None):
        self.column = column
        self.delay = delay
        self.pushed = list(pushed or ())

    def open(self, ctx):
        super().open(ctx)
        self.batch_max = None  # micro-batch: the largest event time of the running batch
        self.max_seen = None  # continuous: the largest event time so far
        self.emitted = None  # continuous: the last watermark sent downstream

    def process(self, rows, input_index):
        column = self.column
        if rows and isinstance(rows[0], dict) and column not in rows[0]:
            raise PipelineError(
                f"step {self.ctx.step_name!r}: the rows have no column {column!r} to track event time in; "
                f"a row has {', '.join(rows[0]) or 'no columns'}. (Spark: 'Cannot resolve column name "
                f'"{column}"\'.)'
            )
        rows_seen = rows
        for condition in self.pushed:  # each condition pushed below the watermark keeps its rows, in turn
            if not (isinstance(condition, KeysNotNull) and condition.keeps_all(rows_seen)):
                rows_seen = list(filter(condition, rows_seen))
        if self.ctx.model == "microbatch":
            top = _latest(rows_seen, column)
            if top is not None and type(top) not in (int, float):  # event times that are all strings compare
                # without error: fail here, and the engine names the row (core/bad_rows.py)
                raise TypeError(f"an event time is a number of milliseconds, not {top!r}")
            if top is not None:
                self.batch_max = top if self.batch_max is None else max(self.batch_max, top)
            self.ctx.emit(rows)
            return
        pending = []
        for row in rows:
            pending.append(row)
            event_time = row.get(column)
            if self.pushed and not all(condition(row) for condition in self.pushed):
                continue
            if event_time is None or (self.max_seen is not None and event_time <= self.max_seen):
                continue
            self.max_seen = event_time
            watermark = event_time - self.delay - 1
            if self.emitted is None or watermark > self.emitted:
                self.ctx.emit(pending)
                pending = []
                self.emitted = watermark
                if self.ctx.tracing:
                    self.ctx.explain(
                        "watermark",
                        f"emits watermark {format_ts(watermark)}: max event time "
                        f"{format_ts(event_time)} - delay {format_duration(self.delay)} - 1 ms",
                    )
                self.ctx.emit_watermark(watermark)
        self.ctx.emit(pending)

    def on_batch_end(self, batch):
        if self.batch_max is not None:
            self.ctx.report_event_time(self.batch_max)
        self.batch_max = None

    def on_watermark(self, watermark):
        # A watermark step makes its own watermarks and drops its input's, except the end of input (as
        # Flink's TimestampsAndWatermarksOperator does): that one must reach every window downstream.
        if watermark >= MAX_WATERMARK and (self.emitted is None or self.emitted < MAX_WATERMARK):
            self.emitted = MAX_WATERMARK
            self.ctx.emit_watermark(MAX_WATERMARK)

    def snapshot(self):
        return {"max_seen": self.max_seen, "emitted": self.emitted}

    def restore(self, snapshot, key_groups=None):
        self.max_seen, self.emitted = snapshot["max_seen"], snapshot["emitted"]
