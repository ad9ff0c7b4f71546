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
    """Each row becomes ``fn(row)``."""

    fn: Callable[[dict], dict]
    kind: ClassVar[str] = "map"


@attrs.frozen
class FilterSpec(StepSpec):
    """Keep the rows for which ``predicate(row)`` is true."""

    predicate: Callable[[dict], bool]
    kind: ClassVar[str] = "filter"


@attrs.frozen
class FlatMapSpec(StepSpec):
    """Each row becomes the rows of ``fn(row)``: none, one or many."""

    fn: Callable[[dict], list]
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
    their windows) are Flink's, for the continuous model.
    """

    key_columns: tuple[str, ...]
    assigner: WindowAssigner
    column: str
    aggregates: dict[str, AggregateFunction]
    allowed_lateness: int = 0
    late_rows: str | None = None
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
        return words


@attrs.frozen
class DedupSpec(StepSpec):
    """Keep the first row of each combination of ``columns``: Spark's ``dropDuplicates(columns)``, or
    ``dropDuplicatesWithinWatermark(columns)`` when ``within_watermark``."""

    columns: tuple[str, ...]
    within_watermark: bool = False
    keyed: ClassVar[bool] = True

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "drop_duplicates_within" if self.within_watermark else "drop_duplicates"

    def describe(self) -> dict[str, str]:
        return {"key": ", ".join(self.columns), "columns": ", ".join(self.columns)}


@attrs.frozen
class JoinSpec(StepSpec):
    """A stream-stream join on equal keys (input 0 is the left side, input 1 the right): ``how`` is one of
    :data:`JOIN_TYPES`; ``between`` a time range on the two sides' event times; ``key_time`` the event-time
    column of each side that is part of the key (a window)."""

    how: JoinType
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    between: TimeRange | None = None
    key_time: tuple[str, str] | None = None
    kind: ClassVar[str] = "join"
    keyed: ClassVar[bool] = True

    def describe(self) -> dict[str, str]:
        words = {"how": self.how, "key": ", ".join(self.left_keys) + " = " + ", ".join(self.right_keys)}
        if self.between is not None:
            words["between"] = self.between.describe()
        if self.key_time is not None:
            words["key_time"] = " = ".join(self.key_time)
        return words


@attrs.frozen
class ProcessSpec(StepSpec):
    """A keyed process function: ``processor`` (an ``operators.process.Processor``) sees each key's rows and
    keeps its own state and timers: Spark's ``groupBy(key).transformWithState(processor, ..., timeMode)``."""

    key_columns: tuple[str, ...]
    processor: Any
    time_mode: TimeMode = "none"
    output_mode: Literal["append", "update"] | None = None
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
