"""The plan: a pipeline written as named steps joined by streams, before anything runs.

A :class:`Dataflow` is only a description, the *logical* plan: sources, steps and sinks, and how records
move between them. Each method of :class:`Stream` and :class:`KeyedStream` adds one
:class:`~ministream.core.steps.Step` whose *spec* holds its settings as typed data (``core/steps.py``), after
refusing, with Spark's reason, what Spark would refuse. Running the plan (``models/microbatch.py`` or
``models/continuous.py``) asks the planner (``operators/planner.py``) for the operator of each step and turns
each step into parallel subtasks joined by channels (``core/physical.py``), the *physical* plan. The same
description runs in both models, compiles to PySpark (``spark/``) and is drawn by ``tools/diagram.py``.

How records move along an edge:

- ``forward``: subtask *i* sends to subtask *i* of the next step (same parallelism, no reshuffle);
- ``hash``: after ``key_by``, each record goes to the subtask that owns its key's key group;
- ``gather``: every subtask sends to the single subtask of a sink.

>>> from ministream.core.aggregates import Count
>>> from ministream.core.sinks import CollectingSink
>>> from ministream.core.sources import ScriptedSource
>>> flow = Dataflow("clicks")
>>> clicks = flow.source("clicks", ScriptedSource([[{"key": "a", "ts": 0}]]))
>>> counts = clicks.key_by("key").aggregate("count_per_key", count=Count())
>>> counts.sink("output", CollectingSink())
>>> [(step.name, step.kind) for step in flow.steps]
[('clicks', 'source'), ('count_per_key', 'aggregate'), ('output', 'sink')]
>>> flow.step("count_per_key").spec
AggregateSpec(key_columns=('key',), aggregates={'count': AggregateFunction(...)})
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import attrs

from ministream.core.aggregates import AggregateFunction
from ministream.core.lineage import input_lineage
from ministream.core.steps import (
    JOIN_TYPES,
    TIME_MODES,
    AggregateSpec,
    DedupSpec,
    Edge,
    FilterSpec,
    FlatMapSpec,
    JoinSpec,
    MapSpec,
    OperatorSpec,
    ProcessSpec,
    SelectSpec,
    SinkSpec,
    SourceSpec,
    Step,
    StepSpec,
    WatermarkSpec,
    WindowSpec,
)
from ministream.errors import PipelineError
from ministream.time.ranges import TimeRange
from ministream.time.units import parse_duration
from ministream.time.windows import WindowAssigner


@attrs.define(eq=False)
class Dataflow:
    """A named pipeline of steps. Build it from :meth:`source`, then chain methods of :class:`Stream`.

    >>> from ministream import CollectingSink, ScriptedSource, run_microbatch
    >>> flow = Dataflow("doubled")
    >>> flow.source("numbers", ScriptedSource([[{"n": 1}, {"n": 2}], [{"n": 3}]])).map(
    ...     "double", lambda row: {"n": 2 * row["n"]}).sink("output", CollectingSink())
    >>> [step.name for step in flow.steps]
    ['numbers', 'double', 'output']
    >>> [batch.rows for batch in run_microbatch(flow).output()]
    [[{'n': 2}, {'n': 4}], [{'n': 6}]]
    """

    name: str
    steps: list[Step] = attrs.field(factory=list)

    def add(self, step: Step) -> Step:
        """Add a step; step names are unique within a dataflow, because traces and diagrams use them."""
        if any(existing.name == step.name for existing in self.steps):
            raise PipelineError(f"dataflow {self.name!r} already has a step named {step.name!r}")
        self.steps.append(step)
        return step

    def source(self, name: str, source: Any) -> Stream:
        """A stream of the records ``source`` delivers (a ``ScriptedSource`` in lessons and tests)."""
        return Stream(self, self.add(Step(name, SourceSpec(source), parallelism="one")))

    def step(self, name: str) -> Step:
        """The step called ``name``."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"dataflow {self.name!r} has no step named {name!r}")

    @property
    def sources(self) -> list[Step]:
        """The source steps, in the order they were added."""
        return [step for step in self.steps if isinstance(step.spec, SourceSpec)]

    @property
    def sinks(self) -> list[Step]:
        """The sink steps, in the order they were added."""
        return [step for step in self.steps if isinstance(step.spec, SinkSpec)]


def _key_function(key: Any) -> tuple[Callable[[dict], Any], tuple[str, ...]]:
    """A key selector and the output column names of the key, from a column name, a list of names or a
    function."""
    if isinstance(key, str):
        return operator.itemgetter(key), (key,)  # row[key], as a function
    if isinstance(key, (list, tuple)):
        names = tuple(key)
        return (lambda row: tuple(row[name] for name in names)), names
    if callable(key):
        return key, ("key",)
    raise PipelineError(f"key_by takes a column name, a list of column names or a function, not {key!r}")


def side_outputs(spec: StepSpec) -> tuple[str, ...]:
    """The names of the side outputs a step of this spec has (only a window step with ``late_rows``)."""
    return spec.side_outputs if isinstance(spec, WindowSpec) else ()


@attrs.define(eq=False)
class Stream:
    """The output of one step, to which the next steps are attached (its main output, or the side output
    named ``output``).

    >>> from ministream import CollectingSink, ScriptedSource, run_microbatch
    >>> flow = Dataflow("words")
    >>> lines = flow.source("lines", ScriptedSource([[{"line": "to be"}, {"line": "or not"}]]))
    >>> lines.flat_map("split", lambda row: [{"word": w} for w in row["line"].split()]).filter(
    ...     "long", lambda row: len(row["word"]) > 2).sink("output", CollectingSink())
    >>> run_microbatch(flow).output()[0].rows
    [{'word': 'not'}]
    """

    flow: Dataflow
    step: Step
    output: str | None = None

    def _then(self, name: str, spec: StepSpec) -> Stream:
        step = Step(name, spec, [Edge(self.step, output=self.output)])
        return Stream(self.flow, self.flow.add(step))

    def side_output(self, name: str) -> Stream:
        """The rows this step sends to its side output ``name``, as a stream of their own (Flink's
        ``getSideOutput``): e.g. the rows a window step with ``late_rows="late"`` found too late."""
        declared = side_outputs(self.step.spec)
        if name not in declared:
            have = ", ".join(declared) or "none"
            raise PipelineError(f"step {self.step.name!r} has no side output {name!r}; it has: {have}")
        return Stream(self.flow, self.step, name)

    def map(self, name: str, fn: Callable[[dict], dict]) -> Stream:
        """Each row becomes ``fn(row)``."""
        return self._then(name, MapSpec(fn))

    def filter(self, name: str, predicate: Callable[[dict], bool]) -> Stream:
        """Keep the rows for which ``predicate(row)`` is true."""
        return self._then(name, FilterSpec(predicate))

    def flat_map(self, name: str, fn: Callable[[dict], list]) -> Stream:
        """Each row becomes the rows of ``fn(row)``: none, one or many."""
        return self._then(name, FlatMapSpec(fn))

    def with_watermark(self, name: str, column: str, delay: str | int) -> Stream:
        """Track event time in ``column`` with a bounded out-of-orderness ``delay`` (``"5 seconds"``):
        Spark's ``withWatermark(column, delay)``."""
        delay_ms = parse_duration(delay)
        if delay_ms < 0:
            raise PipelineError(f"step {name!r}: a watermark delay cannot be negative, got {delay!r}")
        return self._then(name, WatermarkSpec(column, delay_ms))

    def select(self, name: str, /, **columns: str) -> Stream:
        """Keep some columns under new names: ``select("clicks_renamed", click_time="ts")`` is Spark's
        ``select(col("ts").alias("click_time"))``. The step records the columns, so a join knows them; a
        column may be called ``name`` too (``select("renamed", name="user")``)."""
        pairs = tuple(columns.items())
        if not pairs:
            raise PipelineError(f"select {name!r} needs at least one column, e.g. click_time='ts'")
        return self._then(name, SelectSpec(pairs))

    def drop_duplicates(self, name: str, columns: str | list[str] | tuple[str, ...], within_watermark: bool = False):
        """Keep the first row of each combination of ``columns`` (``operators/dedup.py``): Spark's
        ``dropDuplicates(columns)``, or ``dropDuplicatesWithinWatermark(columns)``."""
        names = (columns,) if isinstance(columns, str) else tuple(columns)
        if not names:
            raise PipelineError(f"drop_duplicates {name!r}: give the columns that identify a duplicate")
        if within_watermark and input_lineage(self.step).event_time is None:
            raise PipelineError(
                f"drop_duplicates {name!r}: within_watermark needs a watermark, since a key is kept for the "
                "watermark delay after its first row. Add with_watermark(...) before it. (Spark: "
                "'dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without "
                "watermark'.)"
            )
        return self.key_by(list(names)).keyed_step(name, DedupSpec(names, within_watermark))

    def key_by(self, key: Any) -> KeyedStream:
        """Partition the stream by key: a column name, several column names, or a function of the row.

        Not a step of its own: it decides how records reach the next (keyed) step.
        """
        key_fn, key_columns = _key_function(key)
        return KeyedStream(self.flow, self.step, key_fn, key_columns, self.output)

    def sink(self, name: str, sink: Any) -> None:
        """Deliver the stream to ``sink`` (a ``CollectingSink`` in lessons and tests)."""
        edge = Edge(self.step, "gather", output=self.output)
        self.flow.add(Step(name, SinkSpec(sink), [edge], parallelism="one"))


def _must_evict(how: str) -> tuple[bool, bool]:
    """Which sides' rows must leave state for a join to be correct: the side whose unmatched rows are
    emitted (outer) or whose rows are emitted at most once (semi)."""
    return (how in ("left_outer", "full_outer", "left_semi"), how in ("right_outer", "full_outer"))


_SPARK_JOIN_NAMES = {
    "inner": "Inner",
    "left_outer": "LeftOuter",
    "right_outer": "RightOuter",
    "full_outer": "FullOuter",
    "left_semi": "LeftSemi",
}


@attrs.define(eq=False)
class KeyedStream:
    """A stream partitioned by key: what ``key_by`` returns. Keyed steps hang off it.

    >>> from ministream import CollectingSink, Count, ScriptedSource, run_microbatch
    >>> flow = Dataflow("clicks")
    >>> clicks = flow.source("clicks", ScriptedSource([[{"user": "ann"}, {"user": "bob"}, {"user": "ann"}]]))
    >>> per_user = clicks.key_by("user")
    >>> per_user.key_columns
    ('user',)
    >>> per_user.aggregate("count", clicks=Count()).sink("output", CollectingSink())
    >>> sorted(run_microbatch(flow, output_mode="update").output()[0].rows, key=lambda row: row["user"])
    [{'user': 'ann', 'clicks': 2}, {'user': 'bob', 'clicks': 1}]
    """

    flow: Dataflow
    upstream: Step
    key_fn: Callable[[dict], Any]
    key_columns: tuple[str, ...]
    output: str | None = None

    def edge(self) -> Edge:
        """The hash edge that carries this stream's records to a keyed step."""
        return Edge(self.upstream, "hash", self.key_fn, self.key_columns, self.output)

    def keyed_step(self, name: str, spec: StepSpec, others: tuple[KeyedStream, ...] = ()) -> Stream:
        """Attach a keyed step (one that receives ``(key, row)`` pairs) running at the run's parallelism;
        ``others`` are more keyed inputs (a join's right side, a union's other streams)."""
        edges = [self.edge()] + [other.edge() for other in others]
        return Stream(self.flow, self.flow.add(Step(name, spec, edges, "keyed")))

    def operator_step(self, name: str, kind: str, make_operator: Callable[[], Any]) -> Stream:
        """Attach a keyed step that runs an operator of your own: ``make_operator()`` builds one per subtask
        (an ``Operator`` with ``keyed = True``, which receives ``(key, row)`` pairs)."""
        return self.keyed_step(name, OperatorSpec(kind, make_operator, self.key_columns))

    def join(
        self,
        name: str,
        other: KeyedStream,
        *,
        how: str = "inner",
        between: TimeRange | None = None,
        key_time: tuple[str, str] | None = None,
    ) -> Stream:
        """A stream-stream join with ``other`` on equal keys (``operators/stream_join.py``): ``how`` is
        ``inner``, ``left_outer``, ``right_outer``, ``full_outer`` or ``left_semi``; ``between`` a
        ``TimeRange`` on the two sides' event times; ``key_time`` the event-time column of each side that is
        in the key. Refuses, as Spark does, an outer or semi join that could never emit or forget a row.

        >>> from ministream.core.sources import ScriptedSource
        >>> flow = Dataflow("f")
        >>> a = flow.source("a", ScriptedSource([])).with_watermark("wa", "t", 0).key_by("k")
        >>> b = flow.source("b", ScriptedSource([])).with_watermark("wb", "u", 0).key_by("k2")
        >>> a.join("join", b, how="left_semi", between=TimeRange("t", "u", 0, 5)).step.spec.how
        'left_semi'
        """
        if how not in JOIN_TYPES:
            raise PipelineError(f"join {name!r}: how must be one of {', '.join(JOIN_TYPES)}, not {how!r}")
        spec = JoinSpec(how, self.key_columns, other.key_columns, between, key_time)
        sides = (input_lineage(self.upstream), input_lineage(other.upstream))
        names = (sides[0].source, sides[1].source) if sides[0].source != sides[1].source else ("left", "right")
        has_watermark = any(side.event_time is not None for side in sides)
        for side, must in enumerate(_must_evict(how)):
            bounded = between is not None and (between.upper, between.lower)[side] is not None
            other_time = sides[1 - side].watermark_column == (between.right, between.left)[side] if between else False
            if must and not ((key_time is not None and has_watermark) or (bounded and other_time)):
                this, that = names[side], names[1 - side]
                raise PipelineError(
                    f"join {name!r}: a {how} join must know when a {this} row can no longer match, to emit it "
                    f"{'padded with nulls' if how != 'left_semi' else 'at most once'} and forget it. Give "
                    f"{that} a watermark and bound its time from the {this} time (between=TimeRange(...)), or "
                    "put an event-time column in the key. (Spark: 'Stream-stream "
                    f"{_SPARK_JOIN_NAMES[how]} join between two streaming DataFrame/Datasets is not supported "
                    "without a watermark in the join keys, or a watermark on the nullable side and an "
                    "appropriate range condition'.)"
                )
        return self.keyed_step(name, spec, (other,))

    def process(self, name: str, processor: Any, *, time_mode: str = "none", output_mode: str | None = None) -> Stream:
        """A keyed process function (``operators/process.py``): ``processor``, a ``Processor``, sees each
        key's rows and keeps its own state and timers: Spark's ``groupBy(key).transformWithState(processor,
        ..., timeMode)``. ``time_mode`` is ``"none"``, ``"event_time"`` or ``"processing_time"``."""
        if time_mode not in TIME_MODES:
            raise PipelineError(f"step {name!r}: time_mode must be one of {', '.join(TIME_MODES)}, not {time_mode!r}")
        if output_mode not in (None, "append", "update"):
            raise PipelineError(f"step {name!r}: a process step runs in append or update mode, not {output_mode!r}")
        if not callable(getattr(processor, "handle_input_rows", None)) or isinstance(processor, type):
            raise PipelineError(f"step {name!r}: process() takes a Processor instance, got {processor!r}")
        if time_mode == "event_time" and input_lineage(self.upstream).event_time is None:
            raise PipelineError(
                f"step {name!r}: event-time mode needs a watermark: add .with_watermark(...) "
                "before key_by (Spark refuses timeMode=EventTime without a watermark too)"
            )
        spec = ProcessSpec(self.key_columns, processor, time_mode, output_mode)  # type: ignore[arg-type]
        return self.keyed_step(name, spec)

    def aggregate(self, name: str, *others: KeyedStream, **aggregates: AggregateFunction) -> Stream:
        """A running aggregate per key: ``aggregate("totals", count=Count(), sum=Sum("value"))``. Other keyed
        streams given before the aggregates are aggregated together with this one, as Spark's
        ``a.union(b).groupBy(key).agg(...)``."""
        if not aggregates:
            raise PipelineError(f"aggregate {name!r} needs at least one aggregate, e.g. count=Count()")
        return self.keyed_step(name, AggregateSpec(self.key_columns, aggregates), others)

    def window(
        self,
        name: str,
        assigner: WindowAssigner,
        *,
        column: str = "ts",
        allowed_lateness: str | int = 0,
        late_rows: str | None = None,
        **aggregates: AggregateFunction,
    ) -> Stream:
        """An aggregate per key and per event-time window (``operators/window.py``):
        ``window("counts", Tumbling("10 seconds"), count=Count())`` is Spark's
        ``groupBy("key", window("ts", "10 seconds")).agg(count("*"))``. The assigner (``Tumbling``,
        ``Sliding``, ``Session``) says which windows a row belongs to; rows come out as
        ``{key..., window_start, window_end, aggregates...}``. ``late_rows`` names a side output for the rows
        too late for all their windows (``stream.side_output(name)``); continuous model only,
        ``allowed_lateness`` keeps a fired window for late rows."""
        if not aggregates:
            raise PipelineError(f"window {name!r} needs at least one aggregate, e.g. count=Count()")
        lateness = parse_duration(allowed_lateness)
        if lateness < 0:
            raise PipelineError(f"window {name!r}: allowed lateness cannot be negative, got {allowed_lateness!r}")
        spec = WindowSpec(self.key_columns, assigner, column, aggregates, lateness, late_rows)
        return self.keyed_step(name, spec)


def event_time_delays(flow: Dataflow) -> dict[str, int]:
    """``{with_watermark step: delay in ms}`` for every watermark of the flow: what a micro-batch driver
    tracks (``time/watermarks.py``)."""
    return {step.name: step.spec.delay for step in flow.steps if isinstance(step.spec, WatermarkSpec)}
