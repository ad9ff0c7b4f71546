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

from collections import Counter

from ministream.core.aggregates import (
    AggregateFunction,
    add_counts,
    add_groups,
    add_rows,
    identity,
    new_accumulators,
    results,
)
from ministream.core.operator import Operator, rows_by_key, watermark_moved
from ministream.core.physical import KeyedRows
from ministream.errors import PipelineError
from ministream.state.keygroups import key_group_of, subtask_of_key
from ministream.time.lateness import LateRow
from ministream.time.units import format_ts

_NO_KEYS: dict = {}  # a key group with no keys yet (never written to)


class RunningAggregate(Operator):
    """Per key, a running aggregate over every row ever seen: Spark's streaming ``groupBy().agg()``.

    State: ``self.groups[key_group][key] = [accumulator per aggregate]`` (the keyed state table
    ``"aggregate"``), ``self.touched``: ``{key: its accumulator list}``, the keys this batch updated (for update
    mode), in first-touched order, and ``self.changed``: the keys written since the last snapshot, marked for
    incremental checkpoints. The table is copy on write
    (``state/copy_on_write.py``): an accumulator list whose key is not marked yet may be in the last snapshot, so it
    is copied before it changes, which lets a snapshot share every list instead of copying it.

    Copies and marks are paid only while something reads them (``KeyedStateBackend.reads_marks``): a checkpoint
    that counts the table's changes, a changelog, or a store's write-back. Until then (a run that takes no
    checkpoint, or before its first one) no snapshot holds an accumulator list: only a counted checkpoint shares
    them (``KeyedStateBackend.snapshot``, ``changes.take_delta``), and it makes the table tracked, so the
    lists taken after it are copied again. Each list is then changed in place and no key is marked, as the
    deduplication does with its marks (``operators/dedup.py``): the marks would only be cleared at the end of
    the batch (``KeyedStateBackend.forget_untracked_changes``). A restore shares its lists with the snapshot it
    read (:meth:`restore`), so after one the lists are copied on write again, each at its first change, as
    after a checkpoint, rather than all of them at the restore (a list per key at once, with a key's first
    change paying for it instead).
    """

    keyed = True
    event_time: str | None = None
    """The key column that carries event time (:class:`WatermarkedAggregate`), ``None`` here."""

    def __init__(self, key_columns: tuple[str, ...], aggregates: dict[str, AggregateFunction]):
        self.key_columns = key_columns
        self.names = list(aggregates)
        self.functions = list(aggregates.values())
        self.results_are_accumulators = all(function.result is identity for function in self.functions)
        # count("*") alone (every function reads no value): a key's rows matter only by how many there are
        self.counts_rows = bool(self.functions) and all(function.add_count is not None for function in self.functions)

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
        self.restored = False  # whether the lists may be shared with a snapshot this subtask restored
        self.changed = ctx.state.track_changes("aggregate", copy_on_write=True)  # {key: None}
        self.touched = {}  # {key: its accumulator list in state}, in first-touched order
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
                accumulators = self._own_accumulators([key])[0]
                add_rows(accumulators, self.functions, [row])
                self._emit([(key, accumulators)], "its value changed (the continuous model emits every update)")
            return
        if self.event_time is not None:
            pairs = self._drop_late(pairs)
        # A batch at a time: the chunk's rows grouped by key first (one dict operation per row), then each key
        # looked up in state once, and every key's rows folded by one call per aggregate (``add_groups``),
        # instead of a state lookup and a fold call for every row, or a fold call for every key. The result
        # is the same: each key's rows fold in order. The touched keys keep their accumulator lists, which
        # the batch's end reads without looking the keys up again.
        if self.counts_rows:  # only how many rows each key has: counted (in C), no list of rows per key
            counts = Counter(pairs.keys if isinstance(pairs, KeyedRows) else [key for key, _ in pairs])
            owned = self._own_accumulators(counts)
            add_counts(owned, self.functions, list(counts.values()))
            self.touched.update(zip(counts, owned))
            return
        grouped = rows_by_key(pairs)
        owned = self._own_accumulators(grouped)
        add_groups(owned, self.functions, list(grouped.values()))
        self.touched.update(zip(grouped, owned))

    def _own_accumulators(self, keys) -> list[list]:
        """Each key's accumulator list in state (made the first time), in the order of ``keys``: lists this
        subtask may change in place. Copy on write, while something reads the marks (see the class
        docstring): the first change of a key since the last snapshot puts a copy of its list in state (the
        snapshot may hold the old one) and marks the key; until the next snapshot, the key's list is this
        subtask's own. Cost per key: three dict lookups, and at its first change since the snapshot a list
        copy and two dict writes; while nothing reads the marks, the three lookups only, in one list
        comprehension (and two dict writes for a new key)."""
        groups, changed, functions = self.groups, self.changed, self.functions
        copying = self.restored or self.ctx.state.reads_marks("aggregate")  # a snapshot may hold the lists
        if not copying:  # the usual case: one comprehension finds the keys' lists; a new key gets its list after
            get_group = groups.get
            owned = [get_group(key_group_of(key), _NO_KEYS).get(key) for key in keys]
            if None in owned:
                for position, key in enumerate(keys):
                    if owned[position] is None:
                        owned[position] = groups.setdefault(key_group_of(key), {})[key] = new_accumulators(functions)
            return owned
        owned = []
        for key in keys:
            number = key_group_of(key)
            group = groups.get(number)
            if group is None:
                group = groups[number] = {}
            accumulators = group.get(key)
            if accumulators is None:
                accumulators = group[key] = new_accumulators(functions)
                changed[key] = None
            elif key not in changed:  # its first change since the snapshot: a copy of its own
                accumulators = group[key] = list(accumulators)
                changed[key] = None
            owned.append(accumulators)
        return owned

    def on_batch_end(self, batch):
        if not self.key_columns and self.ctx.model != "continuous" and self.ctx.output_mode in ("update", "complete"):
            self._global_row()
        if self.ctx.output_mode == "complete":
            entries = [entry for group in sorted(self.groups) for entry in self.groups[group].items()]
            self._emit(entries, "complete mode emits every key at every batch")
        elif self.ctx.output_mode == "update":
            self._emit(self.touched.items(), "updated in this batch (update mode emits the keys a batch touched)")
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
        self.touched[()] = group[()]

    def _drop_late(self, pairs):
        return pairs

    def restore(self, snapshot, key_groups=None):
        """Load the snapshot's key groups. In memory the backend shares the accumulator lists with ``snapshot``
        (a copy-on-write table), which may be restored again: from here on each list is copied at its first
        change (``self.restored``), never changed in place (a store's values are decoded from it, shared with
        nothing)."""
        super().restore(snapshot, key_groups)
        self.restored = not self.ctx.state.writes_back

    def _emit(self, entries, why: str) -> None:
        """One output row per ``(key, accumulators)`` entry: its key columns, then each aggregate's result.
        The usual shape, one key column and one aggregate whose accumulator is its result (a count, a sum),
        is built as a dict display, a third of the cost of building it from the names."""
        key_columns, names = self.key_columns, self.names
        if self.ctx.tracing:
            rows = []
            for key, accumulators in entries:
                rows.append(self._row(key, accumulators))
                self.ctx.explain("emit", f"key {key!r} emitted: {why}", rows[-1])
        elif self.results_are_accumulators and len(key_columns) == 1 and len(names) == 1:
            column, name = key_columns[0], names[0]
            rows = [{column: key, name: accumulators[0]} for key, accumulators in entries]
        else:
            rows = [self._row(key, accumulators) for key, accumulators in entries]
        self.ctx.emit(rows)

    def _row(self, key, accumulators: list) -> dict:
        """The output row of one key: its key columns, then each aggregate's result."""
        row = key_columns_of(self.key_columns, key)
        if self.results_are_accumulators:  # count, sum, min, max: the accumulator is the result
            row.update(zip(self.names, accumulators))
        else:
            row.update(results(accumulators, self.names, self.functions))
        return row


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
            self._emit(self.touched.items(), "updated in this batch (update mode emits the keys a batch touched)")
        final = [
            (key, accumulators)
            for group in sorted(self.groups)
            for key, accumulators in self.groups[group].items()
            if self._time_of(key) is not None and self._time_of(key) <= watermark
        ]
        if mode == "append":
            self._emit(final, f"{self.event_time} <= watermark {format_ts(watermark)}: final (append emits it once)")
        for key, _ in final:
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
