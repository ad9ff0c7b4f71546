"""Session windows: a window per burst of activity of a key, closed by a gap of inactivity.

Each event opens a session ``[ts, ts + gap)``. Two sessions of the same key *merge* when they overlap or
touch: sorted by start, the next one merges into the current one when ``next.start <= current.end``. So an
event exactly ``gap`` after the last one still joins its session, and a session ends ``gap`` after its last
event: ``end = max(ts_i + gap)``. Unlike tumbling and sliding windows (``time/windows.py``), a session's bounds
depend on the other events of its key, so they are known only once the watermark says no event can still
extend or bridge it. The session arithmetic (:class:`~ministream.time.windows.Session`, ``merge_sessions``)
is in ``time/windows.py``; this module is the operator that keeps, merges and emits sessions.

The gap is fixed (``Session("10 seconds")``) or a function of the row (``Session(lambda row: ...)``, Spark's
``session_window(ts, when(...))``); a row whose gap is zero, negative or missing opens no session and is
dropped, as Spark drops it, but never silently: it is a trace line and a :class:`DroppedRow`.

**Micro-batch model (Spark's ``SessionWindowStateStoreRestoreExec``, ``MergingSessionsExec`` and
``SessionWindowStateStoreSaveExec``).** Batch k runs with WM_{k-1} (late rows) and WM_k (eviction):

1. *late rows*: a row is late when its own session ends at or before the previous batch's watermark,
   ``ts + gap <= WM_{k-1}``; Spark filters each row before merging, so a late row is dropped even when it
   would have touched a session that is still open, and an old row whose session ends after WM_{k-1} counts;
2. *merging*: the batch's rows merge with each other and with the key's stored sessions, across batches: one
   row can bridge two stored sessions into one;
3. *append* emits a session once, in the first batch whose ``end <= WM_k``, then removes it; a row that comes
   after that opens a new session, which may overlap the one already emitted;
4. *complete* emits every session every batch and removes none, but still drops late rows (rule 1): unlike a
   plain or windowed aggregation, a session window filters late rows in every output mode;
5. *update* is refused, and so is a session window with no other grouping key (Spark's messages below);
6. a *no-data batch* runs in append mode when the watermark went up (as for every windowed aggregation).

**Continuous model (Flink's ``WindowOperator`` with a ``MergingWindowSet``).** A row's session is merged
first; the row is late when the *merged* session ``end - 1 + allowed_lateness <= watermark``; a session fires
when the watermark reaches ``end - 1`` and is dropped at ``end - 1 + allowed_lateness``; a row that merges
into a session that has already fired fires it again at once (a late firing), with its new bounds.

>>> from ministream.core.aggregates import Count
>>> from ministream.core.operator import BatchInfo, StepContext
>>> from ministream.time.windows import Session
>>> sessions = SessionWindowAggregate(("key",), Session("10 seconds"), {"count": Count()})
>>> ctx = StepContext.for_testing(output_mode="append"); sessions.open(ctx)
>>> sessions.on_batch_start(BatchInfo(0, watermark=0, late_watermark=0))
>>> sessions.process([("a", {"key": "a", "ts": 1_000}), ("a", {"key": "a", "ts": 11_000})], 0)
>>> sessions.on_batch_end(BatchInfo(0, watermark=0, late_watermark=0)); ctx.emitted
[]
>>> sessions.on_batch_start(BatchInfo(1, watermark=21_000, late_watermark=0))
>>> sessions.on_batch_end(BatchInfo(1, watermark=21_000, late_watermark=0)); ctx.emitted
[{'key': 'a', 'window_start': 1000, 'window_end': 21000, 'count': 2}]
"""

from __future__ import annotations

import attrs

from ministream.core.aggregates import identity, new_accumulators, row_folder
from ministream.errors import PipelineError
from ministream.operators.window import WindowAggregate
from ministream.operators.window_state import WindowsByKey
from ministream.time.units import format_clock, format_duration
from ministream.time.windows import describe_window

SPARK_UPDATE_MODE_ERROR = (
    "Invalid streaming output mode: update. This output mode is not supported for "
    "session window streaming aggregations on streaming DataFrames/DataSets."
)
SPARK_NO_KEY_ERROR = "Global aggregation with session window in streaming query is not supported."


@attrs.frozen
class DroppedRow:
    """A row that opened no session because its gap was zero, negative or missing (Spark filters such rows
    out before aggregating). ``batch_id`` is ``None`` in the continuous model."""

    batch_id: int | None
    step: str
    row: dict
    gap: object
    rule: str


class SessionWindowAggregate(WindowAggregate):
    """Per key, an aggregate per session: Spark's ``groupBy(key, session_window(ts, gap)).agg(...)`` and
    Flink's ``keyBy(key).window(EventTimeSessionWindows.withGap(gap)).aggregate(...)``.

    It is a :class:`~ministream.operators.window.WindowAggregate` whose windows are not assigned but merged:
    emitting, evicting, firing, the no-data batch rule and the state table are the same; what differs is how a
    row finds its window (here: merge ``[ts, ts + gap)`` with the sessions it touches) and which rows are late.

    State: ``self.windows``, the accumulators of each (key, session), laid out by key (a
    :class:`~ministream.operators.window_state.WindowsByKey`: a row looks for the sessions of its key), where the
    sessions of one key never overlap or touch; ``self.late_rows`` and
    ``self.dropped_rows``: the rows the watermark or a non-positive gap kept out.

    Args: those of :class:`~ministream.operators.window.WindowAggregate`; ``assigner`` is a :class:`Session`.
    """

    state_layout = WindowsByKey
    counts_rows = True  # each row that is neither late nor dropped is "aggregated" (core/accounting.py)

    def __init__(self, key_columns, assigner, aggregates, **settings):
        if not key_columns:
            raise PipelineError(
                "a session window needs a key to group by besides the session: sessions are per key "
                f"(user, device...). Use key_by(column) before window(). (Spark: '{SPARK_NO_KEY_ERROR}')"
            )
        cannot_merge = [name for name, function in aggregates.items() if function.merge is None]
        if cannot_merge:
            raise PipelineError(
                f"aggregate {cannot_merge[0]!r} has no merge function: when two sessions merge, their "
                "accumulators are merged, so a session window needs Custom(..., merge=...)"
            )
        super().__init__(key_columns, assigner, aggregates, **settings)
        self._fold_row = row_folder(self.functions)  # fold(accumulators, row) -> a new tuple, made once
        # the accumulators of a session that has no row yet, as a tuple; one aggregate: its create, called directly
        functions = self.functions
        if len(functions) == 1:
            create = functions[0].create
            self._new_accumulators = lambda: (create(),)
        else:
            self._new_accumulators = lambda: tuple([function.create() for function in functions])

    @classmethod
    def check_output_mode(cls, step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Refuse update mode, as Spark does, then what every windowed aggregation refuses."""
        if output_mode == "update":
            raise PipelineError(
                f"step {step_name!r}: a session window cannot run in update output mode. A session's bounds "
                "change as it merges, so an updated row would replace a row with other bounds that is no "
                "longer there. Use 'append' (each session once, when the watermark passes its end) or "
                f"'complete'. (Spark: '{SPARK_UPDATE_MODE_ERROR}')"
            )
        super().check_output_mode(step_name, output_mode, has_watermark)

    def open(self, ctx):
        super().open(ctx)
        self.dropped_rows: list[DroppedRow] = []

    # -- how a row finds its session -------------------------------------------------------------------------

    def _session_of(self, row: dict, ts: int) -> tuple[int, int] | None:
        """The row's own session ``[ts, ts + gap)``, or ``None`` (and the row dropped) for a gap <= 0."""
        gap = self.assigner.gap_of(row)
        if gap is not None and gap > 0:
            return ts, ts + gap
        self._drop_gapless(row, gap)
        return None

    def _drop_gapless(self, row: dict, gap) -> None:
        """Record a row whose gap is zero, negative or missing: it opens no session."""
        shown = "missing (null in Spark)" if gap is None else f"{format_duration(gap)}, not longer than zero"
        rule = f"its session gap is {shown}: the row opens no session (Spark filters such rows out)"
        batch_id = None if self.ctx.model == "continuous" else self.batch.batch_id
        self.dropped_rows.append(DroppedRow(batch_id, self.ctx.step_name, row, gap, rule))
        self.ctx.drop("no session gap longer than zero", row, text=f"row dropped: {rule}")

    def _touching(self, key, window) -> list[tuple[int, int]]:
        """The key's stored sessions that ``window`` overlaps or touches."""
        return self.windows.touching(key, window)

    def _merge(self, key, window, touching: list, row: dict) -> tuple[tuple[int, int], tuple]:
        """Replace ``touching`` sessions by one that spans them and ``window``, with ``row`` folded in after
        the accumulators of the sessions it replaced are merged; return it and its accumulators."""
        merged = (min([window[0]] + [s[0] for s in touching]), max([window[1]] + [s[1] for s in touching]))
        accumulators = new_accumulators(self.functions)
        for session in touching:
            for i, (function, other) in enumerate(zip(self.functions, self.windows.pop(key, session))):
                accumulators[i] = function.merge(accumulators[i], other)
        folded = self._fold_row(tuple(accumulators), row)
        self.windows.put(key, merged, folded)
        if touching and self.ctx.tracing:
            joined = ", ".join(describe_window(*s) for s in sorted(touching))
            self.ctx.explain(
                "merge",
                f"session {describe_window(*window)} of key {key!r} merged with {joined} "
                f"into {describe_window(*merged)}",
            )
        return merged, folded

    def _late_watermark(self) -> int | None:
        """Micro-batch: rows are late against WM_{k-1} in every output mode, complete included (rule 4)."""
        return self.batch.late_watermark if self.column_has_watermark else None

    def _add_batch(self, pairs) -> None:
        """Micro-batch: a row's session depends on the key's other sessions, so rows are merged one at a time.

        A row late for its own session is dropped (rule 1); otherwise its session ``[ts, ts + gap)`` is stored
        as a new session when it touches none of the key's sessions (``WindowsByKey.put_new``: mostly an
        append after the key's last one), or merged with those it touches (a binary search in the key's
        sorted sessions, ``WindowsByKey.touching``); then the row is folded in."""
        column, windows, fold, empty = self.column, self.windows, self._fold_row, self._new_accumulators
        gap_of = self.assigner.gap_of
        fixed_gap = None if callable(self.assigner.gap) else self.assigner.gap  # no call per row for a fixed gap
        late_watermark = self._late_watermark()
        if late_watermark is None:
            late_watermark = float("-inf")  # nothing is late
        aggregated = 0
        for key, row in pairs:
            ts = row.get(column)
            if ts is None:
                self.ctx.explain("drop", f"row dropped: no event time in column {column!r}", row)
                continue
            gap = fixed_gap or gap_of(row)
            if gap is None or gap <= 0:
                self._drop_gapless(row, gap)
                continue
            end = ts + gap
            if end <= late_watermark:  # rule 1: the row's own session
                self._late_row(row, (ts, end), late_watermark)
                continue
            if not windows.put_new(key, ts, end, fold(empty(), row)):  # it touches a session of the key: merge
                self._merge(key, (ts, end), windows.touching(key, (ts, end)), row)
            aggregated += 1
        self.ctx.count("aggregated", aggregated)

    def _late_row(self, row: dict, window, late_watermark: int) -> None:
        self._late(
            row,
            window,
            late_watermark,
            f"its session ends at {format_clock(window[1])} (ts + gap), at or before the watermark "
            f"{format_clock(late_watermark)} of the previous batch",
        )
        if self.late_output is not None:
            self.ctx.emit_side(self.late_output, [row])

    # -- micro-batch: the end of a batch ---------------------------------------------------------------------

    def on_batch_end(self, batch):
        """Complete mode emits every session (rule 4); append mode emits the sessions with ``end <= WM_k`` and
        removes them (rule 3): ``WindowsByKey.take_closed`` takes them off the front of their keys' lists."""
        if self.ctx.output_mode == "complete":
            self._emit_sessions(self.windows.sessions_by_key(), "complete mode emits every window at every batch")
        elif self.column_has_watermark:
            watermark = batch.watermark
            self._emit_sessions(
                self.windows.take_closed(watermark),
                f"end <= watermark {format_clock(watermark)}: final (append mode emits a window once, then removes it)",
            )
        self.evicted_with = batch.watermark

    def _emit_sessions(self, by_key: list, why: str) -> None:
        """Emit the rows of ``[(key, [(start, end, accumulators), ...])]``: one row per session."""
        if len(self.key_columns) == 1 and len(self.names) == 1 and not self.ctx.tracing:  # the common case
            column, name, result = self.key_columns[0], self.names[0], self.functions[0].result
            self.ctx.emit(
                [
                    {
                        column: key,
                        "window_start": start,
                        "window_end": end,
                        name: accumulators[0] if result is identity else result(accumulators[0]),
                    }
                    for key, sessions in by_key
                    for start, end, accumulators in sessions
                ]
            )
            return
        windows = [
            ((start, end), {key: accumulators}) for key, sessions in by_key for start, end, accumulators in sessions
        ]
        self._emit(windows, why)  # the window step's rows, and a trace line for each

    # -- continuous ------------------------------------------------------------------------------------------

    def _add_continuous(self, key, row: dict, ts: int) -> None:
        window = self._session_of(row, ts)
        if window is None:
            return
        watermark, lateness = self.watermark, self.allowed_lateness
        touching = self._touching(key, window)
        end = max([window[1]] + [s[1] for s in touching])
        if watermark is not None and end - 1 + lateness <= watermark:  # Flink: the merged window is late
            self._late(
                row,
                window,
                watermark,
                f"its session ends at {format_clock(end)} and end - 1 + allowed lateness "
                f"{format_duration(lateness)} <= watermark {format_clock(watermark)}",
            )
            if self.late_output is not None:
                self.ctx.emit_side(self.late_output, [row])
            return
        session, accumulators = self._merge(key, window, touching, row)
        self.ctx.count("aggregated")
        if watermark is not None and session[1] - 1 <= watermark:  # it had fired: fire it again
            self._emit(
                [(session, {key: accumulators})],
                f"late firing: end - 1 <= watermark "
                f"{format_clock(watermark)}, within the allowed lateness of {format_duration(lateness)}",
            )


class SessionWindowAggregateWithoutWatermark(SessionWindowAggregate):
    """A session window on a column that no ``with_watermark`` tracks: no row is late, no session is ever
    final, and append mode is refused."""

    column_has_watermark = False


SessionWindowAggregate.without_watermark = SessionWindowAggregateWithoutWatermark
"""The class ``window.build_window`` uses instead when the session's column has no watermark."""
