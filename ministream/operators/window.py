"""Windowed aggregation: an aggregate per key and per event-time window, finalized by the watermark.

``key_by("key").window("counts", Tumbling("10 seconds"), count=Count())`` is Spark's
``groupBy("key", window("ts", "10 seconds")).agg(count("*"))``. Each row is added to every window that
contains its event time (``time/windows.py`` says which); the state holds one accumulator per aggregate for each
(key, window); an output row is ``{key columns..., window_start, window_end, aggregates...}``.

**Micro-batch model (Spark).** Batch k runs with two watermarks (``operator.BatchInfo``): ``late_watermark``
= WM_{k-1} and ``watermark`` = WM_k. The rules, each pinned by ``tests/models/test_microbatch.py``:

1. *late rows are dropped per window*: a row is not added to a window whose ``end <= WM_{k-1}``; with sliding
   windows it may still count in its other windows (Spark drops the partial aggregate of that window);
2. *append* emits a window once, in the first batch whose ``end <= WM_k``, then removes it;
3. *update* emits every window the batch touched (late ones excepted) with its full value, then removes the
   windows with ``end <= WM_k`` without emitting them again;
4. *complete* emits every window every batch, never drops a late row, never removes a window;
5. in append and update, a *no-data batch* runs after the script when the new watermark is above the one
   the last batch evicted with (Spark's ``shouldRunAnotherBatch``: it does not look at the state).

**Continuous model (Flink).** The step's watermark rises as ``on_watermark(w)`` calls (``WindowOperator``
with ``EventTimeTrigger``): a window fires once when ``w >= end - 1``, its rows before the watermark goes on;
its state is dropped when ``end - 1 + allowed_lateness <= w``; a row for a window that fired but is still kept
fires it again at once (a *late firing*, emitted as the window's updated row). Lateness is judged per
window: a row is added to those of its windows that are still kept, and is *late* (the side output gets it)
only when all of them are dropped. Flink's ``WindowOperatorTest`` pins these rules
(``tests/conformance/suite_flink_window_operator.py``).

*Processing-time windows* (``window(..., processing_time=True)``, Flink's ``ProcessingTimeTrigger``): a row
goes into the windows of the clock's time when it arrives, whatever its columns say; a window fires, and
is forgotten, when the clock reaches ``end - 1`` (``on_processing_time``); the watermark is only passed on. No
row is late. At the end of the input the clock does not move, so the windows it has not passed stay unfired.

Late rows are never dropped silently: each (row, window) the watermark keeps apart is a trace line with the
rule that dropped it and a :class:`LateRow` in the operator's ``late_rows`` (``Run.late_rows()`` gathers
them); a row that counts in none of its windows also goes to the side output named by ``late_rows="..."``,
when the step has one (``stream.side_output("late")``; Spark has no such thing, Flink has
``sideOutputLateData``).

>>> from ministream.core.aggregates import Count
>>> from ministream.core.operator import BatchInfo, StepContext
>>> from ministream.time.windows import Tumbling
>>> counts = WindowAggregate(("key",), Tumbling(10_000), {"count": Count()})
>>> ctx = StepContext.for_testing(output_mode="append"); counts.open(ctx)
>>> counts.on_batch_start(BatchInfo(0, watermark=0, late_watermark=0))
>>> counts.process([("a", {"key": "a", "ts": 1_000}), ("a", {"key": "a", "ts": 12_000})], 0)
>>> counts.on_batch_end(BatchInfo(0, watermark=0, late_watermark=0)); ctx.emitted   # nothing final yet
[]
>>> counts.on_batch_start(BatchInfo(1, watermark=10_000, late_watermark=0))
>>> counts.on_batch_end(BatchInfo(1, watermark=10_000, late_watermark=0)); ctx.emitted
[{'key': 'a', 'window_start': 0, 'window_end': 10000, 'count': 1}]
"""

from __future__ import annotations

from ministream.core.aggregates import identity, tuple_table_folder
from ministream.core.operator import BatchInfo, Operator, watermark_moved
from ministream.errors import PipelineError
from ministream.operators.aggregate import key_columns_of
from ministream.operators.window_state import WindowsByWindow, WindowsInState
from ministream.time.lateness import LateRow, dropped_flags  # noqa: F401  (dropped_flags: for notebooks)
from ministream.time.units import format_clock, format_duration
from ministream.time.windows import describe_window


class WindowAggregate(Operator):
    """Per key and per window, an aggregate over the rows whose event time the window contains: Spark's
    ``groupBy(key, window(ts, ...)).agg(...)`` and Flink's ``keyBy(key).window(...).aggregate(...)``.

    State: ``self.windows``, one accumulator per aggregate for each (key, window), laid out by window (a
    :class:`~ministream.operators.window_state.WindowsByWindow`: the watermark closes whole windows) and split by key
    group only for a checkpoint; ``self.touched``: the (key, window) pairs this batch added to (update mode);
    ``self.late_rows``: every :class:`LateRow` so far.

    Args:
        key_columns: the names of the key's output columns.
        assigner: which windows a row belongs to (``windows.Tumbling``, ``windows.Sliding``).
        aggregates: ``{output column: AggregateFunction}``.
        column: the event-time column.
        allowed_lateness: continuous model only: how long (ms) a window is kept after it fired.
        late_rows: the name of the side output that receives the rows too late for all their windows.
    """

    keyed = True
    counts_rows = True  # reports the rows it aggregates (core/accounting.py)
    state_layout = WindowsByWindow
    """How the (key, window) accumulators are laid out (``window_state``)."""
    column_has_watermark = True
    """False when no ``with_watermark`` upstream tracks the window's column: then no row is ever late, no
    window is ever final, and append mode is refused (see :class:`WindowAggregateWithoutWatermark`)."""

    def __init__(
        self,
        key_columns: tuple[str, ...],
        assigner,
        aggregates: dict,
        *,
        column: str = "ts",
        allowed_lateness: int = 0,
        late_rows: str | None = None,
        processing_time: bool = False,
    ):
        self.key_columns = key_columns
        self.assigner = assigner
        self.names = list(aggregates)
        self.functions = list(aggregates.values())
        self.column = column
        self.allowed_lateness = allowed_lateness
        self.late_output = late_rows
        self.processing_time = processing_time
        self._fold = tuple_table_folder(self.functions)  # fold(table, key, row): table[key] a new tuple, made once

    @classmethod
    def check_output_mode(cls, step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Refuse append mode when the window's event-time column has no watermark, as Spark does."""
        if output_mode == "append" and not (has_watermark and cls.column_has_watermark):
            raise PipelineError(
                f"step {step_name!r}: append output mode needs a watermark on the window's event-time column. "
                "Append emits a window once, when the watermark passes its end; without a watermark on that "
                "column the moment never comes. Add .with_watermark(name, column, delay) before key_by, or use "
                "output mode 'update' or 'complete'. (Spark 4: 'Invalid streaming output mode: append. This "
                "output mode is not supported for streaming aggregations without watermark on streaming "
                "DataFrames/DataSets'.)"
            )

    def open(self, ctx):
        super().open(ctx)
        if ctx.state.writes_back:  # the state lives in a store: so do the windows (window_state.WindowsInState)
            self.windows = WindowsInState(ctx.state)
        else:
            self.windows = self.state_layout()
            ctx.state.track_changes("windows")  # marked at checkpoints, from what self.windows remembers
        self.touched = {}  # {(key, (start, end)): None}: what this batch added to, in first-touched order
        self.late_rows: list[LateRow] = []
        self.batch = BatchInfo(0)
        self.evicted_with = None  # micro-batch: the watermark the last batch evicted with
        self.watermark = None  # continuous: the step's current watermark

    # -- rows ------------------------------------------------------------------------------------------------

    def process(self, pairs, input_index):
        if self.processing_time:  # continuous only (the planner refuses it elsewhere): the arrival time
            now = self.ctx.clock.now()
            for key, row in pairs:
                self._add_continuous(key, row, now)
        elif self.ctx.model == "continuous":
            for key, row in pairs:
                ts = row.get(self.column)
                if ts is None:
                    self.ctx.drop(f"no event time in column {self.column!r}", row)
                else:
                    self._add_continuous(key, row, ts)
        else:
            self._add_batch(pairs)

    def _add_batch(self, pairs) -> None:
        """Micro-batch: fold each row into the accumulators of its windows that are not late (rule 1).

        Rows mostly come in event-time order, so consecutive rows mostly fall in the same *pane*: the stretch
        of time whose instants all belong to the same windows, between two consecutive window boundaries
        (starts or ends): a whole window when windows tumble. The row's windows, which of them are late, and
        their tables in state are worked out once per pane."""
        column, assign, fold = self.column, self.assigner.assign, self._fold
        slide = self.assigner.slide
        late_watermark = self._late_watermark()
        touched = self.touched if self.ctx.output_mode == "update" else None
        changed = self.windows.changed  # the keys changed since the last checkpoint, once there was one
        pane_start, pane_end = 1, 0  # the pane of the previous row, [start, end): none yet
        not_aggregated = 0  # rows without event time, or late for all their windows
        for key, row in pairs:
            ts = row.get(column)
            if ts is None:
                self.ctx.drop(f"no event time in column {column!r}", row)
                not_aggregated += 1
                continue
            if not pane_start <= ts < pane_end:  # a new pane: its windows, late ones first (start order)
                windows = assign(ts)
                latest_start, earliest_end = windows[-1][0], windows[0][1]
                pane_start = max(latest_start, earliest_end - slide)  # the next boundary back from ts
                pane_end = min(earliest_end, latest_start + slide)  # and the next one on
                late = [] if late_watermark is None else [w for w in windows if w[1] <= late_watermark]
                in_time = windows[len(late) :]
                tables = [self.windows.keys_of(window) for window in in_time]
            if late:
                self._late_for(row, late, in_time, late_watermark)
                not_aggregated += not in_time
            for table in tables:
                fold(table, key, row)
            if changed is not None and tables:
                changed[key] = None
            if touched is not None:
                for window in in_time:
                    touched[(key, window)] = None
        self.ctx.count("aggregated", len(pairs) - not_aggregated)

    def _late_watermark(self) -> int | None:
        """Micro-batch: the watermark rows are late against (WM_{k-1}); None when nothing is ever late."""
        if self.ctx.output_mode == "complete" or not self.column_has_watermark:
            return None  # complete mode keeps every window, so it drops nothing
        return self.batch.late_watermark

    def _late_for(self, row: dict, late: list, in_time: list, late_watermark: int) -> None:
        """Micro-batch: record the row as late for each window of ``late`` (rule 1, per window); a row late
        for all its windows also goes to the side output."""
        for window in late:
            self._late(
                row,
                window,
                late_watermark,
                f"end {format_clock(window[1])} <= watermark {format_clock(late_watermark)} of the previous batch",
            )
        if not in_time and self.late_output is not None:
            self.ctx.emit_side(self.late_output, [row])

    def _late(self, row: dict, window, watermark: int, rule: str) -> None:
        batch_id = None if self.ctx.model == "continuous" else self.batch.batch_id
        self.late_rows.append(LateRow(batch_id, self.ctx.step_name, row, window, watermark, rule))
        where = f"for window {describe_window(*window)}" if window else ""
        self.ctx.explain("late", f"row dropped {where}: {rule}", row)

    # -- micro-batch: the end of a batch ---------------------------------------------------------------------

    def on_batch_start(self, batch):
        self.batch = batch

    def on_batch_end(self, batch):
        watermark = batch.watermark if self.column_has_watermark else None
        mode = self.ctx.output_mode
        if mode == "complete":
            self._emit(self.windows.items(), "complete mode emits every window at every batch")
        elif mode == "update":
            touched = {}  # {window: {key: accumulators}}
            for key, window in self.touched:
                touched.setdefault(window, {})[key] = self.windows.get(key, window)
            self._emit(list(touched.items()), "updated in this batch (update mode emits every window a batch touched)")
            if watermark is not None:
                gone = self.windows.take_final(watermark)
                if self.ctx.tracing:
                    for window, by_key in gone:
                        for key in by_key:
                            self.ctx.explain(
                                "evict",
                                f"window {describe_window(*window)} of key {key!r} removed "
                                f"from state: end <= watermark {format_clock(watermark)}",
                            )
        elif watermark is not None:
            self._emit(
                self.windows.take_final(watermark),
                f"end <= watermark {format_clock(watermark)}: final (append mode emits a window once, then removes it)",
            )
        self.touched = {}
        self.evicted_with = batch.watermark

    def should_run_another_batch(self, watermark):
        """Spark's rule: in append and update mode, run a no-data batch when the new watermark is above the
        one the last batch evicted with, whether or not any window would go."""
        return self.ctx.output_mode in ("append", "update") and watermark_moved(self.batch, watermark)

    def explain_waiting(self, batch, next_watermark):
        """Append mode: each window this batch keeps although its end is within the next batch's watermark (the
        "one batch late" moment: the batch ran with the watermark of the batches before it)."""
        if self.ctx.output_mode != "append" or not self.column_has_watermark or next_watermark is None:
            return
        for (start, end), by_key in self.windows.items():
            if (batch.watermark or 0) < end <= next_watermark:
                for key in by_key:
                    self.ctx.explain(
                        "wait",
                        f"window {describe_window(start, end)} of key {key!r} held back: end {format_clock(end)} > "
                        f"this batch's watermark {format_clock(batch.watermark or 0)}; this batch's rows move the "
                        f"watermark to {format_clock(next_watermark)}, so the next batch emits it",
                    )

    def _make_rows(self, windows: list) -> list[dict]:
        """The output rows of ``[(window, {key: accumulators})]``: the key columns, ``window_start``,
        ``window_end``, then the aggregates (one column at a time, for every row)."""
        if len(self.key_columns) == 1 and len(self.names) == 1:  # the common case, in one go
            column, name, result = self.key_columns[0], self.names[0], self.functions[0].result
            if result is identity:  # the accumulator is the result (count, sum, min, max): no call per row
                return [
                    {column: key, "window_start": start, "window_end": end, name: accumulators[0]}
                    for (start, end), by_key in windows
                    for key, accumulators in by_key.items()
                ]
            return [
                {column: key, "window_start": start, "window_end": end, name: result(accumulators[0])}
                for (start, end), by_key in windows
                for key, accumulators in by_key.items()
            ]
        entries = [(key, window, accumulators) for window, by_key in windows for key, accumulators in by_key.items()]
        if len(self.key_columns) == 1:
            column = self.key_columns[0]
            rows = [{column: key, "window_start": window[0], "window_end": window[1]} for key, window, _ in entries]
        else:
            rows = [
                {**key_columns_of(self.key_columns, key), "window_start": window[0], "window_end": window[1]}
                for key, window, _ in entries
            ]
        for i, (name, function) in enumerate(zip(self.names, self.functions)):
            result = function.result
            for row, (_, _, accumulators) in zip(rows, entries):
                row[name] = result(accumulators[i])
        return rows

    def _emit(self, windows: list, why: str) -> None:
        """Emit the rows of ``[(window, {key: accumulators})]``; the trace says why each one."""
        rows = self._make_rows(windows)
        if self.ctx.tracing:
            emitted = [(key, window) for window, by_key in windows for key in by_key]
            for (key, window), row in zip(emitted, rows):
                self.ctx.explain("emit", f"window {describe_window(*window)} of key {key!r} emitted: {why}", row)
        self.ctx.emit(rows)

    # -- continuous: rows and watermarks one at a time -------------------------------------------------------

    def _add_continuous(self, key, row: dict, ts: int) -> None:
        watermark, lateness = self.watermark, self.allowed_lateness
        added = False
        for window in self.assigner.assign(ts):
            if watermark is not None and window[1] - 1 + lateness <= watermark:
                continue  # Flink's isWindowLate: this window's state is gone
            self._fold(self.windows.keys_of(window), key, row)
            if self.windows.changed is not None:
                self.windows.changed[key] = None
            added = True
            if watermark is not None and window[1] - 1 <= watermark:  # it already fired: fire it again
                self._emit(
                    [(window, {key: self.windows.get(key, window)})],
                    f"late firing: end - 1 <= watermark "
                    f"{format_clock(watermark)}, within the allowed lateness of {format_duration(lateness)}",
                )
        if not added:  # every window of the row is gone; the latest is the one that ends last
            windows = self.assigner.assign(ts)
            rule = (
                f"end - 1 + allowed lateness {format_duration(lateness)} <= watermark "
                f"{format_clock(watermark)}: the window fired and its state is gone"
            )
            self._late(row, windows[-1] if windows else None, watermark, rule)
            if self.late_output is not None:
                self.ctx.emit_side(self.late_output, [row])
        else:
            self.ctx.count("aggregated")

    def on_watermark(self, watermark):
        if self.processing_time:  # the clock fires these windows, not the watermark: pass it on
            self.ctx.emit_watermark(watermark)
            return
        previous, self.watermark = self.watermark, watermark
        due = [
            (window, by_key)
            for window, by_key in self.windows.items()
            if window[1] - 1 <= watermark and (previous is None or window[1] - 1 > previous)
        ]
        due.sort(key=lambda item: item[0][1])  # fire in end order, as Flink's timers fire
        self._emit(due, f"end - 1 <= watermark {format_clock(watermark)}")
        gone = self.windows.take_final(watermark + 1, self.allowed_lateness)  # end - 1 + lateness <= watermark
        if self.ctx.tracing:
            for window, by_key in gone:
                for key in by_key:
                    self.ctx.explain(
                        "evict",
                        f"window {describe_window(*window)} of key {key!r} removed from "
                        "state: end - 1 + allowed lateness <= watermark "
                        f"{format_clock(watermark)}",
                    )
        self.ctx.emit_watermark(watermark)

    def on_processing_time(self, now):
        """Processing-time windows: fire (and forget) every window whose end - 1 the clock has reached, in end
        order. There is no allowed lateness: a row arriving later goes into later windows."""
        if not self.processing_time:
            return
        due = self.windows.take_final(now + 1)  # end <= now + 1: end - 1 <= now
        due.sort(key=lambda item: item[0][1])
        self._emit(due, f"end - 1 <= processing time {format_clock(now)}")

    # -- state -----------------------------------------------------------------------------------------------

    def state_size(self) -> int:
        """How many (key, window) accumulators the step holds."""
        return self.windows.size()

    def snapshot(self):
        """The keyed state table ``"windows"`` by key group (``{key_group: {key: {window: accumulators}}}``),
        made from the working layout at the moment of the checkpoint, plus the watermarks the step went by.

        For an incremental checkpoint (``state/changes.py``) the table holds only the keys whose windows changed
        since the last checkpoint, and those keys are marked: the delta writes them, or writes them as removed
        when they have no window left. In changelog mode every checkpoint marks them (the log records the marked
        keys) and the table is whole: the changelog also materialises every key now and then.
        """
        state = self.ctx.state
        if isinstance(self.windows, WindowsInState):  # the table is the state already
            return {**super().snapshot(), "evicted_with": self.evicted_with, "watermark": self.watermark}
        marks = state.checkpointing is not None and "windows" in state.tracked
        marks = marks and (state.checkpointing == "delta" or state.changelog is not None)  # a delta or a log record
        changed = self.windows.changed_keys() if marks else None
        marked_only = state.reads_only_marked("windows")
        state.tables["windows"] = self.windows.by_key_group(changed if marked_only else None, copy=not state.sharing)
        if marks:
            state.changes["windows"].update(dict.fromkeys(changed))
        shared = "windows" in state.copy_on_write
        state.copy_on_write.add("windows")  # the table was built of copies: the snapshot takes them as they are
        try:
            snapshot = {**super().snapshot(), "evicted_with": self.evicted_with, "watermark": self.watermark}
        finally:
            del state.tables["windows"]
            if not shared:
                state.copy_on_write.discard("windows")
        if state.checkpointing:
            self.windows.count_changes()  # a checkpoint: changes count from here
        return snapshot

    def restore(self, snapshot, key_groups=None):
        super().restore(snapshot, key_groups)
        if not isinstance(self.windows, WindowsInState):
            self.windows = self.state_layout()
            self.windows.load(self.ctx.state.tables.pop("windows", {}))
            self.windows.count_changes()  # a changelog's next record holds the writes since the restore
        self.evicted_with, self.watermark = snapshot.get("evicted_with"), snapshot.get("watermark")


class WindowAggregateWithoutWatermark(WindowAggregate):
    """A windowed aggregate on a column that no ``with_watermark`` tracks: Spark keeps its windows forever,
    drops no row as late and refuses append mode. ``build_window`` picks it (through ``without_watermark``)."""

    column_has_watermark = False


WindowAggregate.without_watermark = WindowAggregateWithoutWatermark
"""The class ``build_window`` uses instead when the window's column has no watermark."""
