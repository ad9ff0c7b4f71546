"""Steps: the plan as data. Each step is a name, its input edges and its *spec*, typed settings that every
consumer of the plan reads.

A :class:`Step` is a node of the plan (``core/plan.py`` builds them; a :class:`Edge` says how rows reach it)
and its spec is one of the classes below. The spec holds what the user asked for, as data: ``WindowSpec(assigner=Tumbling(10 s),
column="ts", aggregates={"count": Count()})``, never as words to be parsed again. Everything that reads a
plan reads these attributes:

- the execution models ask the planner (``operators/planner.py``) for the operator that runs each spec;
- the Spark backend turns each spec into the PySpark that does the same;
- diagrams and traces show :meth:`StepSpec.describe`, the spec in words (words go out, never back in);
- the lineage (``core/lineage.py``) walks the plan to say which event time reaches a step.

What a step's spec does *not* hold is what the plan already says elsewhere: a window step's watermark is
found by the lineage, not copied into its spec, so that there is one answer to "which watermark reaches this
step".

>>> spec = WatermarkSpec(column="ts", delay=5_000)
>>> spec.kind, spec.describe()
('watermark', {'column': 'ts', 'delay': '5 seconds'})
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

import attrs

from ministream.core.aggregates import AggregateFunction
from ministream.time.ranges import TimeRange
from ministream.time.units import format_duration
from ministream.time.windows import WindowAssigner

JoinType = Literal["inner", "left_outer", "right_outer", "full_outer", "left_semi"]
JOIN_TYPES: tuple[JoinType, ...] = ("inner", "left_outer", "right_outer", "full_outer", "left_semi")
"""The stream-stream joins Spark runs (``how`` of ``df.join``), all in append output mode."""

TimeMode = Literal["none", "event_time", "processing_time"]
TIME_MODES: tuple[TimeMode, ...] = ("none", "event_time", "processing_time")
"""The time modes of a keyed process function (Spark's ``TimeMode``)."""


def describe_aggregates(aggregates: dict[str, AggregateFunction]) -> str:
    """Aggregates in words: ``count=count(*), total=sum(value)``.

    >>> from ministream.core.aggregates import Count, Sum
    >>> describe_aggregates({"count": Count(), "total": Sum("value")})
    'count=count(*), total=sum(value)'
    """
    return ", ".join(f"{name}={function.name}({function.column or '*'})" for name, function in aggregates.items())


Partition = Literal["forward", "hash", "gather"]
"""How rows travel along an edge: ``forward`` (subtask *i* to subtask *i*), ``hash`` (each row to the subtask
that owns its key's key group) or ``gather`` (every subtask to the one subtask of a sink)."""

Parallelism = Literal["one", "keyed", "inherit"]
"""How many subtasks a step runs as: ``one`` (sources and sinks), ``keyed`` (the run's parallelism) or
``inherit`` (as many as its first input's step)."""


class StepSpec:
    """What every spec has: a ``kind`` (the step's kind in diagrams and traces) and its settings in words."""

    kind: ClassVar[str] = "step"
    keyed: ClassVar[bool] = False
    """Whether the step runs per key: it receives its rows along hash edges, at the run's parallelism."""

    def describe(self) -> dict[str, str]:
        """The settings in words, for diagrams and traces (never read back)."""
        return {}


@attrs.frozen
class SourceSpec(StepSpec):
    """Where rows come from: a ``ScriptedSource`` in lessons and tests (any object with ``read(batch_id)``,
    ``batch(batch_id)`` and ``len()``)."""

    source: Any
    kind: ClassVar[str] = "source"


@attrs.frozen
class SinkSpec(StepSpec):
    """Where rows go: a ``CollectingSink`` in lessons and tests, or an exactly-once sink."""

    sink: Any
    kind: ClassVar[str] = "sink"


@attrs.frozen
class MapSpec(StepSpec):
    """Each row becomes ``fn(row)``. ``output``, when given, declares the columns ``fn`` returns with their
    Spark types (``(("n", "BIGINT"), ("ts", "TIMESTAMP"))``): what the Spark compiler needs to run ``fn`` as a
    UDF when a sample row cannot tell it."""

    fn: Callable[[dict], dict]
    output: tuple[tuple[str, str], ...] | None = None
    kind: ClassVar[str] = "map"


@attrs.frozen
class FilterSpec(StepSpec):
    """Keep the rows for which ``predicate(row)`` is true. ``columns``, when given, are the only columns the
    predicate reads: a filter right after ``with_watermark`` that does not read the event-time column then
    runs *before* it, as Spark's optimizer pushes it there, so the rows it drops never move the watermark
    (``None``: it may read any column, and stays after the watermark)."""

    predicate: Callable[[dict], bool]
    columns: tuple[str, ...] | None = None
    kind: ClassVar[str] = "filter"

    def describe(self) -> dict[str, str]:
        return {"columns": ", ".join(self.columns)} if self.columns is not None else {}


@attrs.frozen
class RowCondition:
    """A condition on one row, ``fn(row) -> bool``, and the columns it reads (``None``: any of them): a
    join's condition on one side's columns only.

    >>> RowCondition(lambda row: row["value"] > 4, ("value",)).reads("ts")
    False
    """

    fn: Callable[[dict], bool]
    columns: tuple[str, ...] | None = None

    def reads(self, column: str) -> bool:
        """Whether the condition may read ``column``."""
        return self.columns is None or column in self.columns


@attrs.frozen
class FlatMapSpec(StepSpec):
    """Each row becomes the rows of ``fn(row)``: none, one or many. ``output``: the columns of those rows
    with their Spark types, as :class:`MapSpec`'s."""

    fn: Callable[[dict], list]
    output: tuple[tuple[str, str], ...] | None = None
    kind: ClassVar[str] = "flat_map"


@attrs.frozen
class SelectSpec(StepSpec):
    """Keep some columns under new names: ``columns`` is ``((new name, old name), ...)``.

    >>> SelectSpec((("click_time", "ts"), ("ad", "ad"))).describe()
    {'columns': 'click_time=ts, ad=ad'}
    """

    columns: tuple[tuple[str, str], ...]
    kind: ClassVar[str] = "select"

    @property
    def names(self) -> tuple[str, ...]:
        """The output columns, in order."""
        return tuple(new for new, _ in self.columns)

    def describe(self) -> dict[str, str]:
        return {"columns": ", ".join(f"{new}={old}" for new, old in self.columns)}


@attrs.frozen
class UnionSpec(StepSpec):
    """The rows of every input, as they come: Spark's ``a.union(b)``. Spark matches columns by position;
    ministream's rows are dicts, so they are matched by name (Spark's ``unionByName``), and the inputs must
    have the same columns."""

    kind: ClassVar[str] = "union"


@attrs.frozen
class WindowColumnSpec(StepSpec):
    """Each row gets the window it belongs to as two columns, ``start`` and ``end`` (ms): Spark's
    ``select(window(column, ...))``, a window column the query can group or join by. With sliding windows a
    row belongs to several, and becomes one row per window, as in Spark. When a watermark tracks ``column``,
    the window is an event-time column too: a step keyed by it evicts a window once ``end <= watermark``.

    >>> from ministream.time.windows import Tumbling
    >>> WindowColumnSpec(Tumbling(10_000), "ts").describe()
    {'window': 'tumbling 10 seconds', 'column': 'ts', 'columns': 'window_start, window_end'}
    """

    assigner: WindowAssigner
    column: str
    start: str = "window_start"
    end: str = "window_end"
    kind: ClassVar[str] = "window_column"

    def describe(self) -> dict[str, str]:
        return {"window": self.assigner.describe(), "column": self.column, "columns": f"{self.start}, {self.end}"}


@attrs.frozen
class WindowTimeSpec(StepSpec):
    """Each row gets ``column``, the time of its window: ``end - 1`` ms, the last instant inside the half-open
    window ``[start, end)``. Spark's ``window_time(window)``. The column carries the window's event time, so a
    second windowed step can group by it: ``window(window_time(window), "1 hour")`` chains two windowed
    aggregations under one watermark.

    >>> WindowTimeSpec().describe()
    {'column': 'window_time', 'window': 'window_start, window_end'}
    """

    column: str = "window_time"
    start: str = "window_start"
    end: str = "window_end"
    kind: ClassVar[str] = "window_time"

    def describe(self) -> dict[str, str]:
        return {"column": self.column, "window": f"{self.start}, {self.end}"}


@attrs.frozen
class SortSpec(StepSpec):
    """Each batch's rows in order of ``columns`` (``descending`` says, per column, whether the order is
    reversed): Spark's ``orderBy``, which a streaming query allows only after an aggregation in complete
    mode, where each batch is the whole result table.

    >>> SortSpec(("count", "key"), (True, False)).describe()
    {'order': 'count descending, key'}
    """

    columns: tuple[str, ...]
    descending: tuple[bool, ...]
    kind: ClassVar[str] = "sort"

    def describe(self) -> dict[str, str]:
        words = [f"{column} descending" if down else column for column, down in zip(self.columns, self.descending)]
        return {"order": ", ".join(words)}


@attrs.frozen
class WatermarkSpec(StepSpec):
    """Track event time in ``column``, allowing rows to arrive up to ``delay`` ms out of order: Spark's
    ``withWatermark(column, delay)``."""

    column: str
    delay: int
    kind: ClassVar[str] = "watermark"

    def describe(self) -> dict[str, str]:
        return {"column": self.column, "delay": format_duration(self.delay)}


@attrs.frozen
class AggregateSpec(StepSpec):
    """A running aggregate per key over every row seen: Spark's ``groupBy(key_columns).agg(...)``. With
    several inputs it aggregates their union (``a.union(b).groupBy(...)``)."""

    key_columns: tuple[str, ...]
    aggregates: dict[str, AggregateFunction]
    kind: ClassVar[str] = "aggregate"
    keyed: ClassVar[bool] = True

    def describe(self) -> dict[str, str]:
        return {"key": ", ".join(self.key_columns), "aggregates": describe_aggregates(self.aggregates)}


@attrs.frozen
class WindowSpec(StepSpec):
    """An aggregate per key and per event-time window: Spark's ``groupBy(key, window(column, ...)).agg(...)``
    or ``session_window``.

    ``allowed_lateness`` (ms) and ``late_rows`` (the name of a side output for the rows too late for all
    their windows) are Flink's, for the continuous model. So is ``processing_time``: a row's windows are
    those that hold the processing time at which it arrives (``column`` is not read), and they fire when the
    clock passes their end (Flink's ``TumblingProcessingTimeWindows`` and the like).
    """

    key_columns: tuple[str, ...]
    assigner: WindowAssigner
    column: str
    aggregates: dict[str, AggregateFunction]
    allowed_lateness: int = 0
    late_rows: str | None = None
    processing_time: bool = False
    kind: ClassVar[str] = "window_aggregate"
    keyed: ClassVar[bool] = True

    @property
    def side_outputs(self) -> tuple[str, ...]:
        """The names of the step's side outputs."""
        return (self.late_rows,) if self.late_rows else ()

    def describe(self) -> dict[str, str]:
        words = {
            "key": ", ".join(self.key_columns),
            "window": self.assigner.describe(),
            "column": self.column,
            "aggregates": describe_aggregates(self.aggregates),
        }
        if self.allowed_lateness:
            words["allowed lateness"] = format_duration(self.allowed_lateness)
        if self.late_rows:
            words["side outputs"] = self.late_rows
        if self.processing_time:
            words["time"] = "processing time"
        return words


@attrs.frozen
class DedupSpec(StepSpec):
    """Keep the first row of each combination of ``columns``: Spark's ``dropDuplicates(columns)``, or
    ``dropDuplicatesWithinWatermark(columns)`` when ``within_watermark``. No columns (``()``) means all of
    them, the whole row: Spark's ``dropDuplicates()``."""

    columns: tuple[str, ...]
    within_watermark: bool = False
    keyed: ClassVar[bool] = True

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "drop_duplicates_within" if self.within_watermark else "drop_duplicates"

    def describe(self) -> dict[str, str]:
        names = ", ".join(self.columns) if self.columns else "all columns"
        return {"key": names, "columns": names}


@attrs.frozen
class JoinSpec(StepSpec):
    """A stream-stream join on equal keys (input 0 is the left side, input 1 the right): ``how`` is one of
    :data:`JOIN_TYPES`; ``between`` a time range on the two sides' event times; ``key_time`` the event-time
    column of each side that is part of the key (a window).

    The rest of Spark's join condition: ``left_where`` and ``right_where``, conditions on one side's columns
    (``leftValue > 4``); ``where``, a condition on a pair (``where(left_row, right_row)``). ``null_safe``:
    one flag per key position, true where the two key columns are compared with ``<=>`` (a null matches a
    null) rather than ``=`` (a null matches nothing); empty when every position is compared with ``=``.
    ``using``: the key columns have the same names on both sides and appear once in the output,
    as Spark's ``df1.join(df2, ["key"])`` writes them (the left value, the right one for a right outer join,
    the one that is not null for a full outer join)."""

    how: JoinType
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    between: TimeRange | None = None
    key_time: tuple[str, str] | None = None
    left_where: RowCondition | None = None
    right_where: RowCondition | None = None
    where: Callable[[dict, dict], bool] | None = None
    null_safe: tuple[bool, ...] = attrs.field(default=())
    using: bool = False
    kind: ClassVar[str] = "join"
    keyed: ClassVar[bool] = True

    @null_safe.validator
    def _one_flag_per_key(self, attribute, value) -> None:
        if value and len(value) != len(self.left_keys):
            raise ValueError(f"null_safe has {len(value)} flags for {len(self.left_keys)} key columns")

    def null_safe_keys(self) -> tuple[bool, ...]:
        """Per key position, whether it is compared with ``<=>``.

        >>> JoinSpec("inner", ("a", "b"), ("c", "d"), null_safe=(True, False)).null_safe_keys()
        (True, False)
        >>> JoinSpec("inner", ("a", "b"), ("c", "d")).null_safe_keys()
        (False, False)
        """
        return self.null_safe or (False,) * len(self.left_keys)

    def key_equalities(self) -> list[str]:
        """The key condition, one ``left = right`` (or ``left <=> right``) per key position.

        >>> JoinSpec("inner", ("a", "b"), ("c", "d"), null_safe=(True, False)).key_equalities()
        ['a <=> c', 'b = d']
        """
        return [
            f"{left} {'<=>' if safe else '='} {right}"
            for left, right, safe in zip(self.left_keys, self.right_keys, self.null_safe_keys())
        ]

    def describe(self) -> dict[str, str]:
        words = {"how": self.how, "key": " AND ".join(self.key_equalities())}
        if self.between is not None:
            words["between"] = self.between.describe()
        if self.key_time is not None:
            words["key_time"] = " = ".join(self.key_time)
        conditions = [
            f"{side} condition" for side, where in (("left", self.left_where), ("right", self.right_where)) if where
        ]
        if self.where is not None:
            conditions.append("pair condition")
        if conditions:
            words["where"] = ", ".join(conditions)
        if self.using:
            words["using"] = ", ".join(self.left_keys)
        return words


@attrs.frozen
class StaticJoinSpec(StepSpec):
    """Each row of the stream joined with the rows of a fixed table whose ``table_keys`` equal its
    ``stream_keys``: Spark's stream-static join (``stream.join(static_df, ...)``). No state: every row is
    joined as it comes. ``how`` is ``"inner"`` or ``"left_outer"`` (a stream row with no match is kept,
    padded with nulls), the joins Spark allows with the stream on the left. ``changes``: ``(batch id,
    rows)`` pairs, the table as it is from that micro-batch on (Spark reads its static side again in every
    batch, so an updated table is joined in its new version from the next batch on)."""

    table: tuple[dict, ...]
    stream_keys: tuple[str, ...]
    table_keys: tuple[str, ...]
    how: Literal["inner", "left_outer"] = "inner"
    changes: tuple[tuple[int, tuple[dict, ...]], ...] = ()
    kind: ClassVar[str] = "static_join"

    def table_columns(self) -> tuple[str, ...]:
        """Every column of the table, in any of its versions, in the order first seen (the keys among them)."""
        versions = (self.table, *(rows for _, rows in self.changes))
        return tuple(dict.fromkeys(column for rows in versions for row in rows for column in row))

    def describe(self) -> dict[str, str]:
        words = {
            "how": self.how,
            "key": ", ".join(self.stream_keys) + " = " + ", ".join(self.table_keys),
            "table": f"{len(self.table)} rows",
        }
        if self.changes:
            words["changes"] = ", ".join(f"batch {batch_id}: {len(rows)} rows" for batch_id, rows in self.changes)
        return words


@attrs.frozen
class ProcessSpec(StepSpec):
    """A keyed process function: ``processor`` (an ``operators.process.Processor``) sees each key's rows and
    keeps its own state and timers: Spark's ``groupBy(key).transformWithState(processor, ..., timeMode)``."""

    key_columns: tuple[str, ...]
    processor: Any
    time_mode: TimeMode = "none"
    output_mode: Literal["append", "update"] | None = None
    initial_state: tuple[dict, ...] | None = None
    """Rows given to ``handle_initial_state`` before the first batch, each with the key columns (Spark's
    ``initialState``): in the first batch of a query, not after a restart from a checkpoint."""
    event_time_column: str | None = None
    """An output column that the next stateful step takes as its event time (Spark's
    ``eventTimeColumnName``), under the same watermark."""
    output_schema: str | None = None
    """The columns of the rows the processor returns, as a Spark DDL schema (``"key STRING, count BIGINT"``;
    times are ``TIMESTAMP`` columns holding ms): the engine does not need it, Spark does
    (``spark/processor_adapter.py``)."""
    kind: ClassVar[str] = "process"
    keyed: ClassVar[bool] = True

    def describe(self) -> dict[str, str]:
        words = {
            "key": ", ".join(self.key_columns),
            "processor": type(self.processor).__name__,
            "time_mode": self.time_mode,
        }
        if self.output_mode is not None:
            words["output_mode"] = self.output_mode
        if self.initial_state is not None:
            words["initial_state"] = f"{len(self.initial_state)} rows"
        if self.event_time_column is not None:
            words["event_time_column"] = self.event_time_column
        return words


@attrs.frozen
class OperatorSpec(StepSpec):
    """A step that runs an operator of your own: ``make_operator()`` builds one per subtask. The engine runs
    it; the Spark backend cannot, since Spark has no such operator."""

    label: str
    make_operator: Callable[[], Any]
    key_columns: tuple[str, ...] = ()

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.label

    @property
    def keyed(self) -> bool:  # type: ignore[override]
        return bool(self.key_columns)

    def describe(self) -> dict[str, str]:
        return {"key": ", ".join(self.key_columns)} if self.key_columns else {}


@attrs.define(eq=False)
class Edge:
    """How rows travel from ``upstream`` into a step: along the ``partition`` (:data:`Partition`); on a hash
    edge, ``key_fn`` gives each row's key and ``key_columns`` names it; ``output`` is the output of
    ``upstream`` the edge carries (``None``: the main one; a name: a side output)."""

    upstream: Step
    partition: Partition = "forward"
    key_fn: Callable[[dict], Any] | None = None
    key_columns: tuple[str, ...] = ()
    output: str | None = None


@attrs.define(eq=False)
class Step:
    """One named step of a plan: its spec (what it does), its input edges and its parallelism.

    >>> step = Step("wm", WatermarkSpec("ts", 5_000), parallelism="inherit")
    >>> step.kind, step.describe()
    ('watermark', {'column': 'ts', 'delay': '5 seconds'})
    """

    name: str
    spec: StepSpec
    inputs: list[Edge] = attrs.field(factory=list)
    parallelism: Parallelism = "inherit"

    @property
    def kind(self) -> str:
        """The step's kind, as diagrams and traces name it: ``"window_aggregate"``, ``"join"``..."""
        return self.spec.kind

    def describe(self) -> dict[str, str]:
        """The step's settings in words (its spec's :meth:`StepSpec.describe`)."""
        return self.spec.describe()

    @property
    def source(self) -> Any:
        """The source of a source step."""
        if not isinstance(self.spec, SourceSpec):
            raise AttributeError(f"step {self.name!r} is a {self.kind} step, not a source")
        return self.spec.source

    @property
    def sink(self) -> Any:
        """The sink of a sink step."""
        if not isinstance(self.spec, SinkSpec):
            raise AttributeError(f"step {self.name!r} is a {self.kind} step, not a sink")
        return self.spec.sink
