"""Operators: the logic of a step, one instance per subtask, fed a chunk of records at a time.

An operator receives records in chunks (a list per message) rather than one call per record: the engine then
spends its time on the records, not on passing messages, and a learner still reads a plain loop.

Three stateless operators are built here: :class:`MapOperator`, :class:`FilterOperator` and
:class:`FlatMapOperator`. ``map`` and ``filter`` are the two everyone knows; both are special cases of
``flat_map`` (one record in, zero or more out), the primitive, and are written out separately only because
they are faster that way. Stateful operators (aggregation, windows, joins, processors) live in modules named
after their concept and subclass :class:`Operator` too.

The hooks an operator may implement, and when the engine calls them:

==============================  =====================================================================
``open(ctx)``                   once, before any record; ``ctx`` is the :class:`StepContext`
``process(records, input)``     for each chunk of records that arrives (``input`` numbers the inputs)
``on_batch_start(batch)``       micro-batch model: before batch ``batch.batch_id`` delivers records
``on_batch_end(batch)``         micro-batch model: when every input has finished the batch
``should_run_another_batch``    micro-batch model: would a no-data batch with this watermark evict?
``on_watermark(watermark)``     continuous model: the step's watermark went up
``on_processing_time(now)``     the processing-time clock (``ctx.clock``) moved to ``now``
``snapshot()`` / ``restore()``  checkpoints: the operator's state as plain data, and back
==============================  =====================================================================

An operator also says what became of the rows it did not pass on, so that a run can account for every row
(``core/accounting.py``): ``ctx.drop(reason)`` for a row dropped on purpose (filtered out, a duplicate),
``ctx.count(outcome)`` for a row kept in another way (aggregated, stored in state); late rows go to the
operator's ``late_rows`` list (``time/lateness.py``).

>>> double = MapOperator(lambda row: {**row, "value": row["value"] * 2})
>>> ctx = StepContext.for_testing(); double.open(ctx)
>>> double.process([{"value": 1}, {"value": 5}], 0)
>>> ctx.emitted
[{'value': 2}, {'value': 10}]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

import attrs

from ministream.core.trace import Trace
from ministream.state.keyed import KeyedStateBackend
from ministream.time.clock import ManualClock


@attrs.frozen
class BatchInfo:
    """What a micro-batch knows before it starts: its id, its two watermarks and its processing time.

    ``late_watermark`` is the previous batch's watermark: rows at or before it are late in this batch.
    ``watermark`` is this batch's own: state at or before it is evicted (and append output emitted) at the end
    of this batch. Both are ``None`` when the pipeline has no watermark. ``processing_time`` is the batch
    timestamp (Spark's ``batchTimestampMs``): what the processing-time clock read when the batch started,
    ``None`` when the run was given no batch timestamps. ``has_data`` is false for a *no-data batch* (one that
    reads nothing, run so that a new watermark can emit and evict: ``core/triggers.py``); ``position`` is the
    script position (trigger firing) that ran the batch, and ``end`` the position its reading stops before
    (a ``Trigger.once()`` batch reads several positions at once).
    """

    batch_id: int
    watermark: int | None = None
    late_watermark: int | None = None
    has_data: bool = True
    processing_time: int | None = None
    position: int | None = None
    end: int | None = None


def watermark_moved(last: BatchInfo | None, watermark: int | None) -> bool:
    """Spark's usual reason for a no-data batch (``shouldRunAnotherBatch``): the new watermark is above the one
    the step's last batch *of this run* evicted with. Before a run's first batch there is no last batch, so
    a restarted query runs no no-data batch until it has run a batch (Spark asks its last execution, and a
    restarted query has none).

    >>> watermark_moved(BatchInfo(3, watermark=5_000), 9_000), watermark_moved(BatchInfo(3, watermark=5_000), 5_000)
    (True, False)
    >>> watermark_moved(None, 9_000), watermark_moved(BatchInfo(0), 9_000)
    (False, False)
    """
    return last is not None and watermark is not None and last.watermark is not None and watermark > last.watermark


def rows_by_key(pairs: Iterable[tuple]) -> defaultdict:
    """The rows of a chunk of ``(key, row)`` pairs grouped by key: ``{key: [row, ...]}``, keys in the order
    they first appear, each key's rows in arrival order. Cost: one dict operation per row.

    A keyed operator that works a batch at a time groups its chunk first, then looks each key up in its state
    once, rather than once per row: with 1,000 keys in a chunk of 10,000 rows, a tenth of the lookups.

    >>> dict(rows_by_key([("a", {"n": 1}), ("b", {"n": 2}), ("a", {"n": 3})]))
    {'a': [{'n': 1}, {'n': 3}], 'b': [{'n': 2}]}
    """
    grouped: defaultdict = defaultdict(list)  # {key: [row, ...]}: a key's list is made the first time it is used
    for key, row in pairs:
        grouped[key].append(row)
    return grouped


def _unconnected(*args) -> None:
    """What a context not connected to a graph does when asked to send something."""
    raise RuntimeError("this StepContext is not connected to a graph: try an operator with StepContext.for_testing()")


def _ignore(*args) -> None:
    """A callback that does nothing."""


@attrs.define
class StepContext:
    """What a subtask gives its operator: where to send records, the keyed state, the trace and the run's
    settings."""

    step_name: str
    subtask: int = 0
    parallelism: int = 1
    emit: Callable[[list], None] = attrs.field(default=_unconnected)
    """Send rows to the step's main output."""
    state: KeyedStateBackend | None = None
    output_mode: str = "append"
    model: str = "microbatch"
    trace: Trace | None = None
    report_event_time: Callable[[int], None] = attrs.field(default=_unconnected)
    """Micro-batch model: tell the driver the largest event time a ``with_watermark`` step saw in the batch."""
    emit_watermark: Callable[[int], None] = attrs.field(default=_unconnected)
    """Continuous model: send a watermark downstream."""
    clock: ManualClock | None = None
    emit_side: Callable[[str, list], None] = attrs.field(default=_unconnected)
    """Send rows to the side output with this name (``Stream.side_output``), not to the main output."""
    emitted: list = attrs.field(factory=list)
    outcomes: dict = attrs.field(factory=dict)
    """``{outcome: rows}``: what the operator reported of the rows it received (:meth:`count`, :meth:`drop`),
    for the run's accounting (``core/accounting.py``)."""

    @classmethod
    def for_testing(cls, step_name: str = "step", **settings) -> StepContext:
        """A context whose ``emit`` collects into ``ctx.emitted``: for trying an operator on its own."""
        ctx = cls(step_name, state=KeyedStateBackend(), **settings)
        ctx.emit = ctx.emitted.extend
        if ctx.report_event_time is _unconnected:
            ctx.report_event_time = _ignore
        if ctx.emit_watermark is _unconnected:
            ctx.emit_watermark = lambda watermark: ctx.emitted.append(("watermark", watermark))
        if ctx.emit_side is _unconnected:
            ctx.emit_side = lambda name, rows: ctx.emitted.append((name, rows))
        return ctx

    @property
    def tracing(self) -> bool:
        """Whether a trace is being recorded (operators skip building trace text otherwise)."""
        return self.trace is not None

    def explain(self, kind: str, text: str, row: dict | None = None) -> None:
        """Record one line in the trace: what happened to a row or a piece of state, and why.

        A ``"drop"`` line is a row dropped on purpose: it is counted, as :meth:`drop` counts it, under its text
        (without a leading ``"row dropped: "``), whether a trace is kept or not.
        """
        if kind == "drop":
            self.drop(text.removeprefix("row dropped: "), row, text=text)
        elif self.trace is not None:
            self.trace.record(self.step_name, self.subtask, kind, text, row)

    def count(self, outcome: str, rows: int = 1) -> None:
        """Report what became of ``rows`` of the rows this step received: ``"aggregated"``, ``"stored in
        state"``... (``core/accounting.py`` adds the reports of every subtask up).

        >>> ctx = StepContext.for_testing()
        >>> ctx.count("stored in state", 2); ctx.count("stored in state"); ctx.outcomes
        {'stored in state': 3}
        """
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + rows

    def drop(self, reason: str, row: dict | None = None, *, rows: int = 1, text: str | None = None) -> None:
        """Report rows dropped on purpose (not late: a filter said no, a duplicate, no event time), counted as
        ``"dropped: <reason>"``; with a trace, ``row`` gets a ``drop`` line (``text``, or ``row dropped:
        <reason>``). ``reason`` is short and the same for every such row, so that the rows add up under it.

        >>> ctx = StepContext.for_testing()
        >>> ctx.drop("duplicate", {"id": "e1"}); ctx.drop("filtered out", rows=2); ctx.outcomes
        {'dropped: duplicate': 1, 'dropped: filtered out': 2}
        """
        self.count(f"dropped: {reason}", rows)
        if self.trace is not None and (row is not None or text is not None):
            self.trace.record(self.step_name, self.subtask, "drop", text or f"row dropped: {reason}", row)


class Operator:
    """Base class of every operator: the default hooks do nothing and forward nothing."""

    keyed = False
    """Keyed operators receive ``(key, row)`` pairs, routed by key group; others receive plain rows."""

    counts_rows = False
    """Whether the operator reports, with ``ctx.count``, every row it keeps (aggregated, stored...); the
    accounting (``core/accounting.py``) takes the rows out of an operator that passes rows on (a map, a filter),
    and derives the kept rows of any other operator that does not count them as the rows neither late nor
    dropped."""

    def open(self, ctx: StepContext) -> None:
        self.ctx = ctx

    def process(self, records: Iterable, input_index: int) -> None:
        raise NotImplementedError

    def on_batch_start(self, batch: BatchInfo) -> None:
        pass

    def on_batch_end(self, batch: BatchInfo) -> None:
        pass

    def held_rows(self) -> dict[int, list]:
        """The running batch's rows that the operator holds to work on when the batch ends, by input number
        (a join's rows meet the other side then): if ``on_batch_end`` fails on a row it cannot read, the engine
        looks for that row among these (``core/bad_rows.py``). Most operators work on each row as it arrives."""
        return {}

    def should_run_another_batch(self, watermark: int | None) -> bool:
        return False

    def output_watermark(self, input_watermark: int) -> int | None:
        """Micro-batch model: the watermark this step passes on to the stateful steps after it, given its own
        input watermark (Spark's ``produceOutputWatermark``): no row it emits has an event time at or before
        it. By default the input watermark itself: an aggregation emits a window only once the watermark has
        passed its end, so what it emits is never behind its input. ``None``: its rows carry no event time."""
        return input_watermark

    def explain_waiting(self, batch: BatchInfo, next_watermark: int | None) -> None:
        """Micro-batch, when the run is traced: after ``batch``, say what the step holds back that the next
        batch's watermark (``next_watermark``, from this batch's rows) lets out: why a result looks one batch
        late. By default there is nothing to say."""

    def on_watermark(self, watermark: int) -> None:
        """Continuous model: by default a step passes its watermark on downstream."""
        self.ctx.emit_watermark(watermark)

    def on_processing_time(self, now: int) -> None:
        """The processing-time clock moved to ``now``: fire the processing-time timers that are due."""

    def state_size(self) -> int:
        """How many entries of state this operator holds (for the trace and the benchmarks)."""
        return self.ctx.state.size() if self.ctx.state is not None else 0

    def snapshot(self) -> dict:
        """The operator's state as plain data: keyed state by key group, plus anything else it keeps."""
        return {"keyed": self.ctx.state.snapshot()} if self.ctx.state is not None else {}

    def restore(self, snapshot: dict, key_groups: Iterable[int] | None = None) -> None:
        """Load the part of ``snapshot`` that belongs to this subtask's key groups."""
        if self.ctx.state is not None and "keyed" in snapshot:
            self.ctx.state.restore(snapshot["keyed"], key_groups)


class FlatMapOperator(Operator):
    """Each record becomes zero or more records: the primitive of the stateless operators.

    >>> split = FlatMapOperator(lambda row: [{"word": w} for w in row["line"].split()])
    >>> ctx = StepContext.for_testing(); split.open(ctx)
    >>> split.process([{"line": "to be"}, {"line": ""}], 0); ctx.emitted
    [{'word': 'to'}, {'word': 'be'}]
    """

    counts_rows = True

    def __init__(self, fn: Callable[[dict], Iterable[dict]]):
        self.fn = fn

    def process(self, records, input_index):
        fn, out, none = self.fn, [], 0
        for record in records:
            produced = list(fn(record))
            out += produced
            none += not produced
        if none:
            self.ctx.drop("flat_map returned no rows", rows=none)
        self.ctx.count("turned into rows", len(records) - none)
        self.ctx.emit(out)


class MapOperator(Operator):
    """Each record becomes exactly one record: ``flat_map`` with a one-element result."""

    def __init__(self, fn: Callable[[dict], dict]):
        self.fn = fn

    def process(self, records, input_index):
        self.ctx.emit(list(map(self.fn, records)))


class FilterOperator(Operator):
    """Keep the records for which ``predicate`` is true: ``flat_map`` with a zero- or one-element result.

    >>> big = FilterOperator(lambda row: row["value"] > 2)
    >>> ctx = StepContext.for_testing(); big.open(ctx)
    >>> big.process([{"value": 1}, {"value": 3}], 0); ctx.emitted
    [{'value': 3}]
    """

    def __init__(self, predicate: Callable[[dict], bool]):
        self.predicate = predicate

    def process(self, records, input_index):
        kept = list(filter(self.predicate, records))
        if len(kept) < len(records):
            self.ctx.drop("filtered out", rows=len(records) - len(kept))
        self.ctx.emit(kept)


class UnionOperator(Operator):
    """The rows of every input, passed on as they come (a ``union`` step).

    >>> union = UnionOperator()
    >>> ctx = StepContext.for_testing(); union.open(ctx)
    >>> union.process([{"n": 1}], 0); union.process([{"n": 2}], 1); ctx.emitted
    [{'n': 1}, {'n': 2}]
    """

    def process(self, records, input_index):
        self.ctx.emit(list(records))


def _nulls_first(column: str) -> Callable[[dict], tuple]:
    """A sort key on ``column`` that puts nulls first (last when the sort is reversed), as Spark orders."""
    return lambda row: (row.get(column) is not None, row.get(column))


class SortOperator(Operator):
    """A batch's rows, held until the batch ends, then emitted in order (a ``sort`` step). Nulls come first,
    as in Spark's ascending order (and last when descending).

    >>> order = SortOperator(("count", "key"), (True, False))
    >>> ctx = StepContext.for_testing(); order.open(ctx)
    >>> order.process([{"key": "b", "count": 1}, {"key": "a", "count": 2}, {"key": "c", "count": 2}], 0)
    >>> order.on_batch_end(None); [row["key"] for row in ctx.emitted]
    ['a', 'c', 'b']
    """

    def __init__(self, columns: tuple[str, ...], descending: tuple[bool, ...]):
        self.columns = columns
        self.descending = descending

    def open(self, ctx):
        super().open(ctx)
        self.rows: list[dict] = []

    def process(self, records, input_index):
        self.rows.extend(records)

    def on_batch_end(self, batch):
        rows, self.rows = self.rows, []
        for column, down in reversed(list(zip(self.columns, self.descending))):  # stable: last key first
            rows.sort(key=_nulls_first(column), reverse=down)
        self.ctx.emit(rows)
