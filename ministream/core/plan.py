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
from collections.abc import Callable, Collection
from typing import Any, Literal

import attrs

from ministream.core.aggregates import AggregateFunction
from ministream.core.ddl import ddl_schema
from ministream.core.lineage import (
    EventTime,
    distinct_event_times,
    event_time_columns,
    input_lineage,
    output_columns,
)
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
    RowCondition,
    SelectSpec,
    SinkSpec,
    SortSpec,
    SourceSpec,
    StaticJoinSpec,
    Step,
    StepSpec,
    UnionSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
    WindowTimeSpec,
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
        if not names:  # no column: one key, (), for every row (a global aggregate)
            return (lambda row: ()), names
        # one column: its value is the key, as with a name; several: the tuple of their values
        return operator.itemgetter(*names), names
    if callable(key):
        return key, ("key",)
    raise PipelineError(f"key_by takes a column name, a list of column names or a function, not {key!r}")


def _declared(output: dict[str, str] | None) -> tuple[tuple[str, str], ...] | None:
    """A declaration of output columns as the spec keeps it: ``((column, Spark type), ...)``."""
    return None if output is None else tuple((column, kind.upper()) for column, kind in output.items())


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

    def map(self, name: str, fn: Callable[[dict], dict], *, output: dict[str, str] | None = None) -> Stream:
        """Each row becomes ``fn(row)``. ``output``: the columns ``fn`` returns and their Spark types
        (``{"n": "BIGINT", "ts": "TIMESTAMP"}``), for the Spark compiler when it cannot infer them."""
        return self._then(name, MapSpec(fn, _declared(output)))

    def filter(self, name: str, predicate: Callable[[dict], bool], *, columns: Any = None) -> Stream:
        """Keep the rows for which ``predicate(row)`` is true. ``columns``: the columns the predicate reads;
        a filter right after ``with_watermark`` that does not read its event-time column runs before it, as
        Spark's optimizer moves it there: the rows it drops never move the watermark."""
        names = (columns,) if isinstance(columns, str) else None if columns is None else tuple(columns)
        return self._then(name, FilterSpec(predicate, names))

    def flat_map(self, name: str, fn: Callable[[dict], list], *, output: dict[str, str] | None = None) -> Stream:
        """Each row becomes the rows of ``fn(row)``: none, one or many (``output``: as :meth:`map`'s)."""
        return self._then(name, FlatMapSpec(fn, _declared(output)))

    def with_watermark(self, name: str, column: str, delay: str | int) -> Stream:
        """Track event time in ``column`` with a bounded out-of-orderness ``delay`` (``"5 seconds"``, an ANSI
        interval such as ``"INTERVAL '1 2:3:4' DAY TO SECOND"``, or ms): Spark's ``withWatermark(column,
        delay)``. Refused, as Spark refuses them: a negative delay (months count 31 days in the sign, so
        ``"1 month -40 days"`` is negative), a column the rows do not have, and a second watermark on a
        stream that already has one (Spark 3.5: 'Redefining watermark is disallowed')."""
        delay_ms = parse_duration(delay)
        if delay_ms < 0:
            raise PipelineError(
                f"step {name!r}: a watermark delay cannot be negative, got {delay!r} (Spark: 'delay threshold "
                f"({delay}) should not be negative.')"
            )
        columns = output_columns(self.step)
        if columns is not None and column not in columns:
            raise PipelineError(
                f"step {name!r}: the rows have no column {column!r} to track event time in; they have "
                f"{', '.join(columns)}. (Spark: 'Cannot resolve column name \"{column}\"'.)"
            )
        tracked = distinct_event_times(event_time_columns(self.step))
        if tracked:
            raise PipelineError(
                f"step {name!r}: the stream already has a watermark, on {tracked[0].column!r} (step "
                f"{tracked[0].step!r}): one stream has one event time, so a second watermark would say "
                "another thing about the same rows. (Spark: 'Redefining watermark is disallowed. You can set "
                "the config 'spark.sql.streaming.statefulOperator.allowMultiple' to 'false' to restore the "
                "previous behavior.')"
            )
        return self._then(name, WatermarkSpec(column, delay_ms))

    def with_window(
        self,
        name: str,
        assigner: WindowAssigner,
        *,
        column: str = "ts",
        start: str = "window_start",
        end: str = "window_end",
    ) -> Stream:
        """Add the window each row belongs to as two columns, ``start`` and ``end``: Spark's
        ``select(window(column, "10 seconds"))``, a window the query can then group or join by (a row in
        several sliding windows becomes one row per window). The window keeps the column's watermark: a step
        keyed by it evicts (and drops late rows) once the window's end is at or before the watermark."""
        if assigner.kind == "session":
            raise PipelineError(
                f"step {name!r}: a session window depends on the other rows of its key, so it can only be "
                "made by a window step (key_by(...).window(...)), not as a column of each row. (Spark: "
                "session_window is supported only in groupBy.)"
            )
        return self._then(name, WindowColumnSpec(assigner, column, start, end))

    def with_window_time(
        self, name: str, column: str = "window_time", *, start: str = "window_start", end: str = "window_end"
    ) -> Stream:
        """Add ``column``, the time of each row's window (``end - 1`` ms): Spark's ``window_time(window)``. It
        keeps the window's watermark, so a second windowed step can group by it, as Spark's
        ``groupBy(window(window_time("window"), "1 hour"))`` chains two aggregations: the rows the first emits
        when the watermark passes their window reach the second in the same batch, under the same watermark."""
        times = event_time_columns(self.step)
        if end not in times or times[end].window is None:
            raise PipelineError(
                f"step {name!r}: {end!r} is not the end of a window under a watermark; window_time needs the "
                "window of a windowed aggregate or of with_window, with a watermark on its event time. (Spark: "
                "'window_time function requires a window column produced by window or session_window'.)"
            )
        return self._then(name, WindowTimeSpec(column, start, end))

    def sort(self, name: str, *columns: str, descending: bool | tuple[bool, ...] = False) -> Stream:
        """Each batch's rows in the order of ``columns`` (``descending``: one flag, or one per column): Spark's
        ``orderBy``. A stream has no end to sort, so Spark allows it only after an aggregation in complete
        mode, where each batch is the whole result table; the run refuses it elsewhere."""
        if not columns:
            raise PipelineError(f"sort {name!r}: give the columns to sort by")
        flags = (descending,) * len(columns) if isinstance(descending, bool) else tuple(descending)
        if len(flags) != len(columns):
            raise PipelineError(f"sort {name!r}: give one descending flag per column")
        edge = Edge(self.step, "gather", output=self.output)
        return Stream(self.flow, self.flow.add(Step(name, SortSpec(tuple(columns), flags), [edge], parallelism="one")))

    def union(self, name: str, *others: Stream) -> Stream:
        """The rows of this stream and of ``others``, as they come: Spark's ``a.union(b)`` (ministream's rows are
        dicts, so columns are matched by name). Every watermark of every input still counts for the query's
        watermark; the event-time columns of the result are those of the first input."""
        if not others:
            raise PipelineError(f"union {name!r} needs at least one other stream")
        edges = [Edge(stream.step, "gather", output=stream.output) for stream in (self, *others)]
        return Stream(self.flow, self.flow.add(Step(name, UnionSpec(), edges, parallelism="one")))

    def join_static(
        self,
        name: str,
        table: list[dict],
        *,
        on: str | list[str] | tuple[str, ...] | dict[str, str],
        how: Literal["inner", "left_outer"] = "inner",
        changes: dict[int, list[dict]] | None = None,
    ) -> Stream:
        """Join each row with the rows of a fixed ``table`` (a list of dicts) on equal keys: Spark's
        stream-static join, ``stream.join(static_df, on, how)``. ``on`` is a column (or columns) both have,
        which then appears once, or ``{stream column: table column}``. ``how`` is ``"inner"`` or
        ``"left_outer"`` (a row without a match is kept, padded with nulls). Nothing is kept in state.
        ``changes``: ``{batch id: rows}``, the table as it is from that micro-batch on (a table updated
        between batches; rows joined before keep the old version's columns)."""
        if how not in ("inner", "left_outer"):
            raise PipelineError(
                f"join_static {name!r}: how must be 'inner' or 'left_outer' with the stream on the left, not "
                f"{how!r}. (Spark refuses the outer joins that would wait for the end of the stream: "
                "'RightOuter join with a streaming DataFrame/Dataset on the left and a static DataFrame/"
                "DataSet on the right not supported'.)"
            )
        pairs = (
            tuple(on.items()) if isinstance(on, dict) else tuple((c, c) for c in ((on,) if isinstance(on, str) else on))
        )
        if not pairs:
            raise PipelineError(f"join_static {name!r}: give the columns to join on")
        versions = tuple(
            (int(batch_id), tuple(dict(row) for row in rows)) for batch_id, rows in sorted((changes or {}).items())
        )
        if any(batch_id < 0 for batch_id, _ in versions):
            raise PipelineError(f"join_static {name!r}: a change of the table starts at a batch id from 0 up")
        spec = StaticJoinSpec(
            tuple(dict(row) for row in table), tuple(a for a, _ in pairs), tuple(b for _, b in pairs), how, versions
        )
        return self._then(name, spec)

    def aggregate(self, name: str, **aggregates: AggregateFunction) -> Stream:
        """A global aggregate, over every row with no key: Spark's ``df.agg(count("*"))``. One row comes out,
        the aggregates only, at every batch in update as in complete mode, even one that brought no rows
        (before the first row: a count of 0, the other aggregates null)."""
        return self.key_by([]).aggregate(name, **aggregates)

    def window(self, name: str, assigner: WindowAssigner, **settings: Any) -> Stream:
        """A windowed aggregate with no key, only the window: Spark's ``groupBy(window(...)).agg(...)`` (the
        settings are :meth:`KeyedStream.window`'s). Session windows need a key, as in Spark."""
        return self.key_by([]).window(name, assigner, **settings)

    def select(self, name: str, /, **columns: str) -> Stream:
        """Keep some columns under new names: ``select("clicks_renamed", click_time="ts")`` is Spark's
        ``select(col("ts").alias("click_time"))``. The step records the columns, so a join knows them; a
        column may be called ``name`` too (``select("renamed", name="user")``)."""
        pairs = tuple(columns.items())
        if not pairs:
            raise PipelineError(f"select {name!r} needs at least one column, e.g. click_time='ts'")
        return self._then(name, SelectSpec(pairs))

    def drop_duplicates(
        self, name: str, columns: str | list[str] | tuple[str, ...] | None = None, within_watermark: bool = False
    ):
        """Keep the first row of each combination of ``columns`` (``operators/dedup.py``): Spark's
        ``dropDuplicates(columns)``, or ``dropDuplicatesWithinWatermark(columns)``; without ``columns``, of
        each whole row (``dropDuplicates()``: a row is a duplicate when every column is equal)."""
        names = () if columns is None else (columns,) if isinstance(columns, str) else tuple(columns)
        if columns is not None and not names:
            raise PipelineError(
                f"drop_duplicates {name!r}: give the columns that identify a duplicate, or none for the whole row"
            )
        times = distinct_event_times(event_time_columns(self.step))
        if within_watermark and not times:
            raise PipelineError(
                f"drop_duplicates {name!r}: within_watermark needs a watermark, since a key is kept for the "
                "watermark delay after its first row. Add with_watermark(...) before it. (Spark: "
                "'dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without "
                "watermark'.)"
            )
        _at_most_one_event_time(name, times)
        keyed = self.key_by(list(names) if names else whole_row)
        return keyed.keyed_step(name, DedupSpec(names, within_watermark))

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


def whole_row(row: dict) -> tuple:
    """The key of a whole row (``drop_duplicates`` with no columns): its columns and values, in column order,
    lists and dicts made hashable.

    >>> whole_row({"b": [1, 2], "a": "x"})
    (('a', 'x'), ('b', (1, 2)))
    """
    return tuple(sorted((column, _hashable(value)) for column, value in row.items()))


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def _check_aggregates(step: str, aggregates: dict) -> None:
    """Refuse a step with no aggregate, or with something else where an aggregate goes (``n="count"``).

    >>> _check_aggregates("aggregate 'totals'", {"n": "count"})
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: aggregate 'totals': n='count' is not an aggregate: give Count(), Sum(column), Min(column), Max(column), Avg(column) or Custom(...)
    """
    if not aggregates:
        raise PipelineError(f"{step} needs at least one aggregate, e.g. count=Count()")
    for column, function in aggregates.items():
        if not isinstance(function, AggregateFunction):
            raise PipelineError(
                f"{step}: {column}={function!r} is not an aggregate: give Count(), Sum(column), Min(column), "
                "Max(column), Avg(column) or Custom(...)"
            )


def _at_most_one_event_time(name: str, times: list[EventTime]) -> None:
    """Refuse a stateful step whose input carries several event times (a join's output has both sides'):
    it would not know which one its watermark is about."""
    if len(times) > 1:
        columns = ", ".join(time.column for time in times)
        raise PipelineError(
            f"step {name!r}: its rows carry more than one event time ({columns}), so it cannot tell which one "
            "the watermark is about. Keep one (select the columns you need before this step). (Spark: 'More "
            "than one event time columns are available. Please ensure there is at most one event time column "
            "per stream.')"
        )


def _condition(where) -> RowCondition | None:
    """A one-sided join condition as a ``RowCondition`` (a bare function may read any column)."""
    if where is None or isinstance(where, RowCondition):
        return where
    if not callable(where):
        raise PipelineError(f"a join condition is a function of the row (or a RowCondition), not {where!r}")
    return RowCondition(where)


def _null_safe_keys(
    name: str, null_safe: bool | Collection[str], left: tuple[str, ...], right: tuple[str, ...]
) -> tuple[bool, ...]:
    """``null_safe`` as one flag per key position: all, none, or those whose left or right column is named.

    >>> _null_safe_keys("j", ["k1"], ("k1", "w"), ("r1", "rw")), _null_safe_keys("j", True, ("k",), ("r",))
    ((True, False), (True,))
    """
    if isinstance(null_safe, bool):
        return (null_safe,) * len(left)
    if isinstance(null_safe, str):
        null_safe = [null_safe]
    unknown = [column for column in null_safe if column not in left and column not in right]
    if unknown:
        raise PipelineError(
            f"join {name!r}: null_safe names {', '.join(map(repr, unknown))}, which is not a key column "
            f"(the keys are {', '.join(left)} and {', '.join(right)})"
        )
    return tuple(lc in null_safe or rc in null_safe for lc, rc in zip(left, right))


def _key_time(
    left: tuple[str, ...], right: tuple[str, ...], times: list[dict], null_safe: tuple[bool, ...] = ()
) -> tuple[str, str] | None:
    """The key columns that carry event time (Spark: a join key with watermark metadata, on either side):
    the first key position whose left or right column is an event-time column, or the end of a window,
    and that is compared with ``=`` (a ``<=>`` key is no column once Spark's optimizer rewrites it, so its
    watermark is not seen: ``StreamingJoinHelper.isWatermarkInJoinKeys``)."""
    for position, (left_column, right_column) in enumerate(zip(left, right)):
        if null_safe and null_safe[position]:
            continue
        for side, column in ((0, left_column), (1, right_column)):
            time = times[side].get(column)
            if time is not None and (time.window is None or column == time.window[1]):
                return left_column, right_column
    return None


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
        left_where: Callable[[dict], bool] | RowCondition | None = None,
        right_where: Callable[[dict], bool] | RowCondition | None = None,
        where: Callable[[dict, dict], bool] | None = None,
        null_safe: bool | Collection[str] = False,
        using: bool = False,
    ) -> Stream:
        """A stream-stream join with ``other`` on equal keys (``operators/stream_join.py``): ``how`` is
        ``inner``, ``left_outer``, ``right_outer``, ``full_outer`` or ``left_semi``; ``between`` a
        ``TimeRange`` on the two sides' event times; ``key_time`` the event-time column of each side that is
        in the key (found by itself when a key column carries event time, such as a window from
        ``with_window``).

        The rest of the condition: ``left_where`` / ``right_where`` test one side's row (a function, or a
        ``RowCondition`` that also names the columns it reads), ``where`` a pair of rows. ``null_safe=True``
        compares the keys with Spark's ``<=>`` (null matches null; with ``=`` a null key matches nothing);
        ``null_safe=["key1"]`` only the key columns named (of either side), the others with ``=``. A key
        compared with ``<=>`` does not carry the watermark into the join (Spark: its ``<=>`` keys are no longer
        columns once the optimizer rewrites them to ``coalesce(key, default)`` and ``isnull(key)``), so an
        event-time key must be compared with ``=`` for the join to evict by it.
        ``using``: both sides have the key columns under the same names, and the output has them once, as
        Spark's ``df1.join(df2, ["key"])``. Refuses, as Spark does, a join without equal keys and an outer or
        semi join that could never emit or forget a row.

        >>> from ministream.core.sources import ScriptedSource
        >>> flow = Dataflow("f")
        >>> a = flow.source("a", ScriptedSource([])).with_watermark("wa", "t", 0).key_by("k")
        >>> b = flow.source("b", ScriptedSource([])).with_watermark("wb", "u", 0).key_by("k2")
        >>> a.join("join", b, how="left_semi", between=TimeRange("t", "u", 0, 5)).step.spec.how
        'left_semi'
        """
        if how not in JOIN_TYPES:
            raise PipelineError(f"join {name!r}: how must be one of {', '.join(JOIN_TYPES)}, not {how!r}")
        if not self.key_columns or not other.key_columns:
            raise PipelineError(
                f"join {name!r}: a stream-stream join needs equal keys on both sides (key_by(...) a column of "
                "each): without them every row would wait for every row of the other side, forever. (Spark: "
                "'Stream-stream join without equality predicate is not supported'.)"
            )
        if len(self.key_columns) != len(other.key_columns):
            raise PipelineError(f"join {name!r}: both sides need as many key columns")
        if using and self.key_columns != other.key_columns:
            raise PipelineError(
                f"join {name!r}: using=True joins on columns of the same name on both sides; the keys are "
                f"{', '.join(self.key_columns)} and {', '.join(other.key_columns)}"
            )
        sides = (input_lineage(self.upstream), input_lineage(other.upstream))
        names = (sides[0].source, sides[1].source) if sides[0].source != sides[1].source else ("left", "right")
        times = [event_time_columns(side.upstream) for side in (self, other)]
        for side_name, side_times in zip(names, times):
            _at_most_one_event_time(f"{name}' ({side_name} side)", distinct_event_times(side_times))
        safe = _null_safe_keys(name, null_safe, self.key_columns, other.key_columns)
        if key_time is None:
            key_time = _key_time(self.key_columns, other.key_columns, times, safe)
        elif key_time in [pair for pair, flag in zip(zip(self.key_columns, other.key_columns), safe) if flag]:
            raise PipelineError(
                f"join {name!r}: key_time {key_time[0]} = {key_time[1]} is compared with <=> (null_safe), and a "
                "key compared with <=> carries no watermark into the join (in Spark it becomes coalesce(...) "
                "and isnull(...), no longer a column): compare it with = (leave it out of null_safe)"
            )
        spec = JoinSpec(
            how,
            self.key_columns,
            other.key_columns,
            between,
            key_time,
            _condition(left_where),
            _condition(right_where),
            where,
            safe if any(safe) else (),
            using,
        )
        watermarked = [side.event_time is not None or bool(side_times) for side, side_times in zip(sides, times)]
        has_watermark = any(watermarked)
        for side, must in enumerate(_must_evict(how)):
            bounded = between is not None and (between.upper, between.lower)[side] is not None
            other_columns = {time.column for time in times[1 - side].values()}
            other_time = (between.right, between.left)[side] in other_columns if between else False
            if must and not ((key_time is not None and has_watermark) or (bounded and other_time)):
                this, that = names[side], names[1 - side]
                hidden = None if key_time is not None else _key_time(self.key_columns, other.key_columns, times)
                because = (
                    f" (the key {hidden[0]} carries event time, but null_safe compares it with <=>, which hides "
                    "the watermark: compare it with =)"
                    if hidden is not None
                    else ""
                )
                raise PipelineError(
                    f"join {name!r}: a {how} join must know when a {this} row can no longer match, to emit it "
                    f"{'padded with nulls' if how != 'left_semi' else 'at most once'} and forget it. Give "
                    f"{that} a watermark and bound its time from the {this} time (between=TimeRange(...)), or "
                    f"put an event-time column in the key{because}. (Spark: 'Stream-stream "
                    f"{_SPARK_JOIN_NAMES[how]} join between two streaming DataFrame/Datasets is not supported "
                    "without a watermark in the join keys, or a watermark on the nullable side and an "
                    "appropriate range condition'.)"
                )
        return self.keyed_step(name, spec, (other,))

    def process(
        self,
        name: str,
        processor: Any,
        *others: KeyedStream,
        time_mode: str = "none",
        output_mode: str | None = None,
        initial_state: list[dict] | None = None,
        event_time_column: str | None = None,
        output_schema: str | None = None,
    ) -> Stream:
        """A keyed process function (``operators/process.py``): ``processor``, a ``Processor``, sees each
        key's rows and keeps its own state and timers: Spark's ``groupBy(key).transformWithState(processor,
        ..., timeMode)``. ``time_mode`` is ``"none"``, ``"event_time"`` or ``"processing_time"``.

        Other keyed streams given after the processor are processed together with this one (Spark's
        ``a.union(b).groupByKey(...).transformWithState(...)``). ``initial_state``: rows (with the key
        columns) that the processor's ``handle_initial_state`` sees before the query's first batch (Spark's
        ``initialState``). ``event_time_column``: an output column that the next stateful step takes as its
        event time (Spark's ``eventTimeColumnName``). ``output_schema``: the columns of the rows the processor
        returns, as a Spark DDL schema; the engine does not need it, running the processor in Spark does
        (``spark/processor_adapter.py``)."""
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
        if initial_state is not None and not callable(getattr(processor, "handle_initial_state", None)):
            raise PipelineError(f"step {name!r}: an initial state needs a processor with handle_initial_state")
        if event_time_column is not None and time_mode != "event_time":
            raise PipelineError(
                f"step {name!r}: event_time_column names an output event time, which needs a watermark: use "
                "time_mode='event_time'"
            )
        declared = output_schema if output_schema is not None else getattr(processor, "output_schema", None)
        if event_time_column is not None and declared is not None:
            columns = list(ddl_schema(declared))
            if event_time_column not in columns:
                raise PipelineError(
                    f"step {name!r}: event_time_column {event_time_column!r} is not a column of the processor's "
                    f"output ({', '.join(columns)}) (Spark: UNRESOLVED_COLUMN.WITH_SUGGESTION, the query does not "
                    "start)"
                )
        if time_mode == "event_time":
            _at_most_one_event_time(name, distinct_event_times(event_time_columns(self.upstream)))
        initial = None if initial_state is None else tuple(dict(row) for row in initial_state)
        spec = ProcessSpec(
            self.key_columns,
            processor,
            time_mode,
            output_mode,  # type: ignore[arg-type]
            initial,
            event_time_column,
            output_schema,
        )
        return self.keyed_step(name, spec, others)

    def aggregate(self, name: str, *others: KeyedStream, **aggregates: AggregateFunction) -> Stream:
        """A running aggregate per key: ``aggregate("totals", count=Count(), sum=Sum("value"))``. Other keyed
        streams given before the aggregates are aggregated together with this one, as Spark's
        ``a.union(b).groupBy(key).agg(...)``."""
        _check_aggregates(f"aggregate {name!r}", aggregates)
        for stream in (self, *others):
            keys = event_time_columns(stream.upstream)
            _at_most_one_event_time(name, distinct_event_times({c: keys[c] for c in self.key_columns if c in keys}))
        return self.keyed_step(name, AggregateSpec(self.key_columns, aggregates), others)

    def window(
        self,
        name: str,
        assigner: WindowAssigner,
        *,
        column: str = "ts",
        allowed_lateness: str | int = 0,
        late_rows: str | None = None,
        processing_time: bool = False,
        **aggregates: AggregateFunction,
    ) -> Stream:
        """An aggregate per key and per event-time window (``operators/window.py``):
        ``window("counts", Tumbling("10 seconds"), count=Count())`` is Spark's
        ``groupBy("key", window("ts", "10 seconds")).agg(count("*"))``. The assigner (``Tumbling``,
        ``Sliding``, ``Session``) says which windows a row belongs to; rows come out as
        ``{key..., window_start, window_end, aggregates...}``. ``late_rows`` names a side output for the rows
        too late for all their windows (``stream.side_output(name)``); continuous model only,
        ``allowed_lateness`` keeps a fired window for late rows, and ``processing_time=True`` puts each row in
        the windows of the processing time at which it arrives, which fire as the clock passes their end
        (Flink's processing-time windows; no row is ever late)."""
        _check_aggregates(f"window {name!r}", aggregates)
        lateness = parse_duration(allowed_lateness)
        if lateness < 0:
            raise PipelineError(f"window {name!r}: allowed lateness cannot be negative, got {allowed_lateness!r}")
        if processing_time and (lateness or late_rows):
            raise PipelineError(
                f"window {name!r}: a processing-time window has no late rows (a row goes into the windows of the "
                "time it arrives), so no allowed lateness and no late_rows"
            )
        spec = WindowSpec(self.key_columns, assigner, column, aggregates, lateness, late_rows, processing_time)
        return self.keyed_step(name, spec)


def event_time_delays(flow: Dataflow) -> dict[str, int]:
    """``{with_watermark step: delay in ms}`` for every watermark of the flow: what a micro-batch driver
    tracks (``time/watermarks.py``)."""
    return {step.name: step.spec.delay for step in flow.steps if isinstance(step.spec, WatermarkSpec)}
