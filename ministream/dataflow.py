"""The dataflow: a pipeline written as named steps joined by streams, before anything runs.

A :class:`Dataflow` is only a description, the *logical* plan: sources, steps and sinks, and how records
move between them. Running it (``ministream.microbatch`` or ``ministream.continuous``) turns each step into
parallel subtasks joined by channels (``ministream.runtime``), the *physical* plan. The same description
runs in both models; ``ministream.diagram`` draws it.

How records move along an edge:

- ``forward``: subtask *i* sends to subtask *i* of the next step (same parallelism, no reshuffle);
- ``hash``: after ``key_by``, each record goes to the subtask that owns its key's key group;
- ``gather``: every subtask sends to the single subtask of a sink.

>>> from ministream.testing import ScriptedSource, CollectingSink
>>> from ministream.aggregation import Count
>>> flow = Dataflow("clicks")
>>> clicks = flow.source("clicks", ScriptedSource([[{"key": "a", "ts": 0}]]))
>>> counts = clicks.key_by("key").aggregate("count_per_key", count=Count())
>>> counts.sink("output", CollectingSink())
>>> [(step.name, step.kind) for step in flow.steps]
[('clicks', 'source'), ('count_per_key', 'aggregate'), ('output', 'sink')]
"""

from __future__ import annotations

import operator

from typing import Callable

import attrs

from ministream.operators import FilterOperator, FlatMapOperator, MapOperator, Operator, PipelineError


@attrs.define(eq=False)
class Edge:
    """How records travel from ``upstream`` into a step: ``forward``, ``hash`` (by ``key_fn``) or
    ``gather``."""

    upstream: "Step"
    partition: str = "forward"
    key_fn: Callable | None = None
    key_columns: tuple[str, ...] = ()
    output: str | None = None
    """Which output of ``upstream`` the edge carries: ``None`` the main one, a name a side output."""


@attrs.define(eq=False)
class Step:
    """One named step of a dataflow.

    ``make_operator`` builds one operator per subtask. ``parallelism`` is ``"one"`` (sources and sinks),
    ``"keyed"`` (the run's parallelism) or ``"inherit"`` (the same as the first input's step).
    """

    name: str
    kind: str
    make_operator: Callable[[], Operator] | None
    inputs: list[Edge] = attrs.field(factory=list)
    parallelism: str = "inherit"
    source: object = None
    sink: object = None
    options: dict = attrs.field(factory=dict)
    """What the step is, in words and values (for diagrams, traces and pipeline checks)."""


@attrs.define(eq=False)
class Dataflow:
    """A named pipeline of steps. Build it from :meth:`source`, then chain methods of :class:`Stream`."""

    name: str
    steps: list[Step] = attrs.field(factory=list)

    def add(self, step: Step) -> Step:
        """Add a step; step names are unique within a dataflow, because traces and diagrams use them."""
        if any(existing.name == step.name for existing in self.steps):
            raise PipelineError(f"dataflow {self.name!r} already has a step named {step.name!r}")
        self.steps.append(step)
        return step

    def source(self, name: str, source) -> "Stream":
        """A stream of the records ``source`` delivers (a ``ScriptedSource`` in lessons and tests)."""
        return Stream(self, self.add(Step(name, "source", None, parallelism="one", source=source)))

    def step(self, name: str) -> Step:
        """The step called ``name``."""
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"dataflow {self.name!r} has no step named {name!r}")

    @property
    def sources(self) -> list[Step]:
        return [step for step in self.steps if step.kind == "source"]

    @property
    def sinks(self) -> list[Step]:
        return [step for step in self.steps if step.kind == "sink"]


def _key_function(key) -> tuple[Callable, tuple[str, ...]]:
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


@attrs.define(eq=False)
class Stream:
    """The output of one step, to which the next steps are attached (its main output, or the side output
    named ``output``)."""

    flow: Dataflow
    step: Step
    output: str | None = None

    def _then(
        self, name: str, kind: str, make_operator, edge: Edge | None = None, parallelism="inherit", **options
    ) -> "Stream":
        edge = edge or Edge(self.step, output=self.output)
        step = Step(name, kind, make_operator, [edge], parallelism, options=options)
        return Stream(self.flow, self.flow.add(step))

    def side_output(self, name: str) -> "Stream":
        """The rows this step sends to its side output ``name``, as a stream of their own (Flink's
        ``getSideOutput``): e.g. the rows a window step with ``late_rows="late"`` found too late."""
        declared = [n.strip() for n in self.step.options.get("side outputs", "").split(",") if n.strip()]
        if name not in declared:
            have = ", ".join(declared) or "none"
            raise PipelineError(f"step {self.step.name!r} has no side output {name!r}; it has: {have}")
        return Stream(self.flow, self.step, name)

    def map(self, name: str, fn: Callable[[dict], dict]) -> "Stream":
        """Each row becomes ``fn(row)``."""
        return self._then(name, "map", lambda: MapOperator(fn))

    def filter(self, name: str, predicate: Callable[[dict], bool]) -> "Stream":
        """Keep the rows for which ``predicate(row)`` is true."""
        return self._then(name, "filter", lambda: FilterOperator(predicate))

    def flat_map(self, name: str, fn: Callable[[dict], list]) -> "Stream":
        """Each row becomes the rows of ``fn(row)``: none, one or many."""
        return self._then(name, "flat_map", lambda: FlatMapOperator(fn))

    def with_watermark(self, name: str, column: str, delay) -> "Stream":
        """Track event time in ``column`` with a bounded out-of-orderness ``delay`` (``"5 seconds"``):
        Spark's ``withWatermark(column, delay)``."""
        from ministream.times import parse_duration
        from ministream.watermark import WatermarkOperator

        delay_ms = parse_duration(delay)
        if delay_ms < 0:
            raise PipelineError(f"step {name!r}: a watermark delay cannot be negative, got {delay!r}")
        return self._then(name, "watermark", lambda: WatermarkOperator(column, delay_ms), column=column, delay=delay_ms)

    def select(self, name: str, **columns: str) -> "Stream":
        """Keep some columns under new names: ``select("clicks_renamed", click_time="ts")`` is Spark's
        ``select(col("ts").alias("click_time"))``. The step records the columns, so a join knows them."""
        pairs = tuple(columns.items())
        if not pairs:
            raise PipelineError(f"select {name!r} needs at least one column, e.g. click_time='ts'")
        return self._then(
            name,
            "select",
            lambda: MapOperator(lambda row: {new: row[old] for new, old in pairs}),
            columns=", ".join(f"{new}={old}" for new, old in pairs),
        )

    def drop_duplicates(self, name: str, columns, within_watermark: bool = False) -> "Stream":
        """Keep the first row of each combination of ``columns`` (``dedup.py``): Spark's
        ``dropDuplicates(columns)``, or ``dropDuplicatesWithinWatermark(columns)``."""
        from ministream.dedup import build_dedup

        return build_dedup(self, name, columns, within_watermark)

    def key_by(self, key) -> "KeyedStream":
        """Partition the stream by key: a column name, several column names, or a function of the row.

        Not a step of its own: it decides how records reach the next (keyed) step.
        """
        key_fn, key_columns = _key_function(key)
        return KeyedStream(self.flow, self.step, key_fn, key_columns, self.output)

    def sink(self, name: str, sink) -> None:
        """Deliver the stream to ``sink`` (a ``CollectingSink`` in lessons and tests)."""
        from ministream.testing import SinkOperator

        step = Step(
            name,
            "sink",
            lambda: SinkOperator(sink),
            [Edge(self.step, "gather", output=self.output)],
            parallelism="one",
            sink=sink,
        )
        self.flow.add(step)


@attrs.define(eq=False)
class KeyedStream:
    """A stream partitioned by key: what ``key_by`` returns. Keyed steps hang off it."""

    flow: Dataflow
    upstream: Step
    key_fn: Callable
    key_columns: tuple[str, ...]
    output: str | None = None

    def edge(self) -> Edge:
        """The hash edge that carries this stream's records to a keyed step."""
        return Edge(self.upstream, "hash", self.key_fn, self.key_columns, self.output)

    def keyed_step(self, name: str, kind: str, make_operator, **options) -> Stream:
        """Attach a keyed step (one that receives ``(key, row)`` pairs) running at the run's parallelism."""
        step = Step(
            name, kind, make_operator, [self.edge()], "keyed", options={"key": ", ".join(self.key_columns), **options}
        )
        return Stream(self.flow, self.flow.add(step))

    def join(
        self,
        name: str,
        other: "KeyedStream",
        *,
        how: str = "inner",
        between=None,
        key_time: tuple[str, str] | None = None,
    ) -> Stream:
        """A stream-stream join with ``other`` on equal keys (``join.py``): ``how`` is ``inner``,
        ``left_outer``, ``right_outer``, ``full_outer`` or ``left_semi``; ``between`` a ``join.TimeRange``
        on the two sides' event times; ``key_time`` the event-time column of each side that is in the key."""
        from ministream.join import build_join

        return build_join(self, name, other, how, between, key_time)

    def process(self, name: str, processor, *, time_mode: str = "none", output_mode: str | None = None) -> Stream:
        """A keyed process function (``process.py``): ``processor``, a ``process.Processor``, sees each key's
        rows and keeps its own state and timers: Spark's ``groupBy(key).transformWithState(processor, ...,
        timeMode)``. ``time_mode`` is ``"none"``, ``"event_time"`` or ``"processing_time"``."""
        from ministream.process import process_step

        return process_step(self, name, processor, time_mode, output_mode)

    def aggregate(self, name: str, **aggregates) -> Stream:
        """A running aggregate per key: ``aggregate("totals", count=Count(), sum=Sum("value"))``."""
        from ministream.aggregation import RunningAggregate

        if not aggregates:
            raise PipelineError(f"aggregate {name!r} needs at least one aggregate, e.g. count=Count()")
        key_columns = self.key_columns
        return self.keyed_step(
            name,
            "aggregate",
            lambda: RunningAggregate(key_columns, aggregates),
            aggregates=", ".join(f"{n}={f.name}({f.column or '*'})" for n, f in aggregates.items()),
            operator_class=RunningAggregate,
        )

    def window(
        self, name: str, assigner, *, column: str = "ts", allowed_lateness=0, late_rows: str | None = None, **aggregates
    ) -> Stream:
        """An aggregate per key and per event-time window (``window_aggregation.py``):
        ``window("counts", Tumbling("10 seconds"), count=Count())`` is Spark's
        ``groupBy("key", window("ts", "10 seconds")).agg(count("*"))``. The assigner (``windows.Tumbling``,
        ``windows.Sliding``, a session assigner) says which windows a row belongs to and which operator runs
        them; rows come out as ``{key..., window_start, window_end, aggregates...}``. ``late_rows`` names a
        side output for the rows too late for all their windows (``stream.side_output(name)``); continuous model
        only, ``allowed_lateness`` keeps a fired window for late rows."""
        from ministream.window_aggregation import build_window

        return build_window(
            self, name, assigner, column=column, allowed_lateness=allowed_lateness, late_rows=late_rows, **aggregates
        )
