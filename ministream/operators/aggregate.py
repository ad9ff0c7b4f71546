"""The running aggregate: per key, a count, sum, min, max or average over every row seen so far.

``stream.key_by("key").aggregate("totals", count=Count(), sum=Sum("value"))`` is Spark's streaming
``groupBy("key").agg(count("*"), sum("value"))``. The aggregate functions themselves (what a row adds to an
accumulator) are in ``core/aggregates.py``; this operator keeps one accumulator list per key in keyed state
and emits the keys a batch touched (update mode) or every key (complete mode).

When results are emitted depends on the model and, in micro-batch, on Spark's output mode:

- **update**: at the end of each batch, every key that the batch touched, with its full current value;
- **complete**: at the end of each batch, every key there is;
- **a global aggregate** (no key: ``df.agg(...)``) has its one row in every batch, in update mode as in
  complete mode, even a batch that brought it no rows: Spark aggregates no groups into one row whatever the
  input, and before the first row that row is the aggregates of nothing (a count of 0, the others null);
- **append**: refused: an aggregate without a watermark never knows that a key is final (windowed
  aggregates, which can be final, are in ``operators/window.py``);
- **continuous model**: after every record, the record's key with its new value (a changelog).

**A key with an event time** (``groupBy(eventTime)``, where a watermark tracks ``eventTime``, or a window
column from ``with_window``: :class:`WatermarkedAggregate`) can be final, as a window can: in append and
update mode a row whose key's event time is at or before the previous batch's watermark is late (dropped),
and a key whose event time is at or before the batch's watermark is evicted at its end: append emits it
then, once; update emits it when a batch touches it and evicts it silently. Complete mode drops nothing and
evicts nothing. In append and update mode a no-data batch runs when the watermark moved (Spark asks it of
every aggregation in a query with a watermark).

>>> from ministream.core.aggregates import Count, Sum
>>> from ministream.core.operator import StepContext
>>> totals = RunningAggregate(("key",), {"count": Count(), "sum": Sum("value")})
>>> ctx = StepContext.for_testing(output_mode="update"); totals.open(ctx)
>>> totals.process([("a", {"key": "a", "value": 2}), ("a", {"key": "a", "value": 3})], 0)
>>> totals.on_batch_end(None); ctx.emitted
[{'key': 'a', 'count': 2, 'sum': 5}]
"""

from __future__ import annotations

from ministream.core.aggregates import AggregateFunction, add_rows, identity, new_accumulators, results
from ministream.core.operator import Operator, rows_by_key, watermark_moved
from ministream.errors import PipelineError
from ministream.state.keygroups import key_group_of, subtask_of_key
from ministream.time.lateness import LateRow
from ministream.time.units import format_ts


class RunningAggregate(Operator):
    """Per key, a running aggregate over every row ever seen: Spark's streaming ``groupBy().agg()``.

    State: ``self.groups[key_group][key] = [accumulator per aggregate]`` (the keyed state table
    ``"aggregate"``), ``self.touched``: the keys this batch updated (for update mode), and ``self.changed``:
    the keys written since the last snapshot, marked for incremental checkpoints. The table is copy on write
    (``state/copy_on_write.py``): an accumulator list whose key is not marked yet may be in the last snapshot, so it
    is copied before it changes, which lets a snapshot share every list instead of copying it.
    """

    keyed = True
    event_time: str | None = None
    """The key column that carries event time (:class:`WatermarkedAggregate`), ``None`` here."""

    def __init__(self, key_columns: tuple[str, ...], aggregates: dict[str, AggregateFunction]):
        self.key_columns = key_columns
        self.names = list(aggregates)
        self.functions = list(aggregates.values())
        self.results_are_accumulators = all(function.result is identity for function in self.functions)

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Refuse append mode, as Spark does: an aggregate without a watermark never knows a key is final."""
        if output_mode == "append":
            raise PipelineError(
                f"step {step_name!r}: append output mode cannot be used with an aggregation without a "
                "watermark. Append emits a group once, when no later row can change it, and without an "
                "event-time window and a watermark that moment never comes. Use output mode 'update' or "
                "'complete'. (Spark 4.3 refuses it too: 'Invalid streaming output mode: append. This output "
                "mode is not supported for streaming aggregations without watermark on streaming "
                "DataFrames/DataSets.')"
            )

    def open(self, ctx):
        super().open(ctx)
        self.groups = ctx.state.table("aggregate")  # {key_group: {key: [accumulator, ...]}}
        self.changed = ctx.state.track_changes("aggregate", copy_on_write=True)  # {key: None}
        self.touched = {}  # {key: None}, in first-touched order
        self.batch = None  # micro-batch: the batch running, then the last one this run ran
        self.late_rows: list[LateRow] = []

    def on_batch_start(self, batch):
        self.batch = batch

    def should_run_another_batch(self, watermark):
        """Spark's rule for every aggregation: in append and update mode, a no-data batch when the watermark
        moved."""
        return self.ctx.output_mode in ("append", "update") and watermark_moved(self.batch, watermark)

    def process(self, pairs, input_index):
        if self.ctx.model == "continuous":  # a changelog: after every record, its key's new value
            for key, row in pairs:
                self._fold(key, [row])
                self._emit([key], "its value changed (the continuous model emits every update)")
            return
        if self.event_time is not None:
            pairs = self._drop_late(pairs)
        # A batch at a time: the chunk's rows grouped by key first (one dict operation per row), then each key
        # looked up in state once and its rows folded with one call per aggregate (``add_rows``), instead of a
        # state lookup and a fold call for every row. The result is the same: each key's rows fold in order.
        touched = self.touched
        for key, rows in rows_by_key(pairs).items():
            self._fold(key, rows)
            touched[key] = None

    def _fold(self, key, rows: list[dict]) -> None:
        """Fold a key's rows into its accumulators (made the first time). Copy on write: the first change of a
        key since the last snapshot folds into a copy of its list, which the snapshot may hold."""
        group = self.groups.get(key_group_of(key))
        if group is None:
            group = self.groups[key_group_of(key)] = {}
        if key not in self.changed:
            accumulators = group.get(key)
            group[key] = new_accumulators(self.functions) if accumulators is None else list(accumulators)
            self.changed[key] = None  # from now on, its list is this subtask's own: fold into it in place
        add_rows(group[key], self.functions, rows)

    def on_batch_end(self, batch):
        if not self.key_columns and self.ctx.model != "continuous" and self.ctx.output_mode in ("update", "complete"):
            self._global_row()
        if self.ctx.output_mode == "complete":
            keys = [key for group in sorted(self.groups) for key in self.groups[group]]
            self._emit(keys, "complete mode emits every key at every batch")
        elif self.ctx.output_mode == "update":
            self._emit(list(self.touched), "updated in this batch (update mode emits the keys a batch touched)")
        self.touched = {}

    def _global_row(self) -> None:
        """A global aggregate (no key) has its one row in every batch, as Spark's aggregation of no groups
        gives a row even for no input: before the first row, the aggregates of nothing (count 0, the others
        null); and update mode emits it at every batch, as complete mode does. Only the subtask that owns the
        key ``()`` keeps it."""
        if subtask_of_key((), self.ctx.parallelism) != self.ctx.subtask:
            return
        group = self.groups.setdefault(key_group_of(()), {})
        if () not in group:
            group[()] = new_accumulators(self.functions)
            self.changed[()] = None
        self.touched[()] = None

    def _drop_late(self, pairs):
        return pairs

    def _emit(self, keys: list, why: str) -> None:
        """One output row per key: its key columns, then each aggregate's result."""
        groups, names, functions, tracing = self.groups, self.names, self.functions, self.ctx.tracing
        rows = []
        for key in keys:
            row = key_columns_of(self.key_columns, key)
            accumulators = groups[key_group_of(key)][key]
            if self.results_are_accumulators:  # count, sum, min, max: the accumulator is the result
                row.update(zip(names, accumulators))
            else:
                row.update(results(accumulators, names, functions))
            rows.append(row)
            if tracing:
                self.ctx.explain("emit", f"key {key!r} emitted: {why}", row)
        self.ctx.emit(rows)


class WatermarkedAggregate(RunningAggregate):
    """A running aggregate whose key holds an event time a watermark tracks (``groupBy(eventTime)``, or a
    window column): late rows are dropped and final keys evicted, so append mode is allowed (see the module
    docstring). ``event_time`` is that key column (a window's end column for a window).

    >>> from ministream.core.aggregates import Count
    >>> from ministream.core.operator import BatchInfo, StepContext
    >>> counts = WatermarkedAggregate(("ts",), {"count": Count()}, event_time="ts")
    >>> ctx = StepContext.for_testing(output_mode="append"); counts.open(ctx)
    >>> counts.on_batch_start(BatchInfo(0, watermark=10_000, late_watermark=0))
    >>> counts.process([(5_000, {"ts": 5_000}), (5_000, {"ts": 5_000}), (12_000, {"ts": 12_000})], 0)
    >>> counts.on_batch_end(BatchInfo(0, watermark=10_000, late_watermark=0)); ctx.emitted
    [{'ts': 5000, 'count': 2}]
    """

    def __init__(self, key_columns: tuple[str, ...], aggregates: dict[str, AggregateFunction], event_time: str):
        super().__init__(key_columns, aggregates)
        self.event_time = event_time
        self.position = key_columns.index(event_time)

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Every output mode: the key's event time says when a key is final."""

    def _time_of(self, key):
        return key if len(self.key_columns) == 1 else key[self.position]

    def _drop_late(self, pairs):
        late_watermark = self.batch.late_watermark if self.batch is not None else None
        if late_watermark is None or self.ctx.output_mode == "complete":
            return pairs
        kept = []
        for key, row in pairs:
            time = self._time_of(key)
            if time is not None and time <= late_watermark:
                rule = (
                    f"row dropped: {self.event_time} {format_ts(time)} <= watermark {format_ts(late_watermark)} "
                    "of the previous batch"
                )
                self.late_rows.append(LateRow(self.batch.batch_id, self.ctx.step_name, row, None, late_watermark, rule))
                self.ctx.explain("late", rule, row)
            else:
                kept.append((key, row))
        return kept

    def on_batch_end(self, batch):
        mode, watermark = self.ctx.output_mode, batch.watermark
        if mode == "complete" or watermark is None:
            super().on_batch_end(batch)
            return
        if mode == "update":
            self._emit(list(self.touched), "updated in this batch (update mode emits the keys a batch touched)")
        final = [
            key
            for group in sorted(self.groups)
            for key in self.groups[group]
            if self._time_of(key) is not None and self._time_of(key) <= watermark
        ]
        if mode == "append":
            self._emit(final, f"{self.event_time} <= watermark {format_ts(watermark)}: final (append emits it once)")
        for key in final:
            group = self.groups[key_group_of(key)]
            del group[key]
            if not group:
                del self.groups[key_group_of(key)]
            self.changed[key] = None
            if self.ctx.tracing:
                self.ctx.explain("evict", f"key {key!r} removed from state: {self.event_time} <= watermark")
        self.touched = {}


def key_columns_of(key_columns: tuple[str, ...], key) -> dict:
    """The group-by columns of an output row: a single key, or a tuple spread over several columns."""
    if len(key_columns) == 1:
        return {key_columns[0]: key}
    return dict(zip(key_columns, key))
