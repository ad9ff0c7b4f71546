"""The planner: which operator runs each step of a plan, in each execution model.

A plan (``core/plan.py``) says *what* each step does, as typed settings (``core/steps.py``); it names no
operator. When a run starts, the execution model asks the planner for one operator per subtask of each step.
This is where a spec meets the code that carries it out, and where the lineage (``core/lineage.py``) supplies
what a step's own settings do not say, such as which watermark reaches it. Spark does the same in its
``SparkStrategies`` (``StreamingAggregationStrategy``, ``StreamingJoinStrategy``...), which turn logical nodes
into physical ``...Exec`` operators; the Spark backend (``spark/``) is the same kind of table, from specs to
PySpark.

==================  =============================================  ==========================================
spec                micro-batch (Spark)                            continuous (Flink)
==================  =============================================  ==========================================
``MapSpec``...      ``MapOperator``, ``FilterOperator``...         the same
``WatermarkSpec``   ``WatermarkOperator``                          the same
``AggregateSpec``   ``RunningAggregate``                           the same
``WindowSpec``      ``WindowAggregate`` / ``SessionWindowAggregate`` (``...WithoutWatermark`` when no watermark
                    tracks the window's column)
``JoinSpec``        ``StreamJoin`` (``RemovedOuterJoin`` where     ``ContinuousJoin`` (interval or window join)
                    Spark's optimizer removes the join)
``DedupSpec``       ``Deduplicate``                                the same
``ProcessSpec``     ``ProcessOperator``                            the same
``SinkSpec``        ``SinkOperator``                               the same
==================  =============================================  ==========================================

Two of Spark's optimizer rules change the rows of a streaming query, and the micro-batch planner follows
them, with the whole plan (``flow``) in hand: column pruning, which can leave a join side or a deduplication
without its late-row filter (``core/pruning.py``), and outer join elimination (``core/outer_join_elimination.py``).
:func:`optimizer_notes` says what they change in a step, in words.

>>> from ministream.core.aggregates import Count
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.time.windows import Tumbling
>>> events = Dataflow("f").source("events", ScriptedSource([]))
>>> counts = events.key_by("key").window("counts", Tumbling("10 seconds"), count=Count())
>>> type(operator_for(counts.step, "microbatch")).__name__     # no watermark tracks ts
'WindowAggregateWithoutWatermark'
>>> watermarked = events.with_watermark("wm", "ts", "5 seconds").key_by("key")
>>> type(operator_for(watermarked.window("w", Tumbling("10 seconds"), count=Count()).step, "microbatch")).__name__
'WindowAggregate'
"""

from __future__ import annotations

from typing import Literal

from ministream.core.lineage import (
    distinct_event_times,
    event_time_columns,
    input_lineage,
    output_columns,
    watermarked_columns,
)
from ministream.core.operator import (
    FilterOperator,
    FlatMapOperator,
    MapOperator,
    Operator,
    SortOperator,
    UnionOperator,
)
from ministream.core.outer_join_elimination import kept_side, removed_watermarks
from ministream.core.physical import PhysicalGraph
from ministream.core.plan import Dataflow
from ministream.core.pruning import columns_read_after, join_side_reads
from ministream.core.sinks import SinkOperator
from ministream.core.steps import (
    AggregateSpec,
    DedupSpec,
    FilterSpec,
    FlatMapSpec,
    JoinSpec,
    MapSpec,
    OperatorSpec,
    ProcessSpec,
    SelectSpec,
    SinkSpec,
    SortSpec,
    SourceSpec,
    StaticJoinSpec,
    Step,
    UnionSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
    WindowTimeSpec,
)
from ministream.errors import PipelineError
from ministream.operators.aggregate import RunningAggregate, WatermarkedAggregate
from ministream.operators.dedup import Deduplicate
from ministream.operators.interval_join import ContinuousJoin
from ministream.operators.process import ProcessOperator
from ministream.operators.pushdown import drops_null_keys, moved_below, pushed_below_watermark
from ministream.operators.removed_outer_join import RemovedOuterJoin, reaches_nothing
from ministream.operators.sessions import SessionWindowAggregate, SessionWindowAggregateWithoutWatermark
from ministream.operators.static_join import StaticJoin
from ministream.operators.stream_join import JoinSide, StreamJoin
from ministream.operators.watermark import WatermarkOperator
from ministream.operators.window import WindowAggregate, WindowAggregateWithoutWatermark

Model = Literal["microbatch", "continuous"]


def window_operator_class(step: Step) -> type[WindowAggregate]:
    """The operator of a window step: for its assigner's kind, and whether a watermark tracks its column (else
    no row is ever late, no window ever final, and append mode is refused)."""
    spec = step.spec
    assert isinstance(spec, WindowSpec)
    # the column a with_watermark tracks, or one derived from it that carries its event time (window_time)
    derived = event_time_columns(step.inputs[0].upstream)
    watermarked = spec.column in watermarked_columns(step) or spec.column in derived
    if spec.assigner.kind == "session":
        return SessionWindowAggregate if watermarked else SessionWindowAggregateWithoutWatermark
    return WindowAggregate if watermarked else WindowAggregateWithoutWatermark


def join_sides(step: Step, flow: Dataflow | None = None) -> tuple[JoinSide, JoinSide]:
    """What a join knows of its two inputs (their names, event-time columns and known columns), from the
    lineage; two inputs from one source are called ``left`` and ``right``. With ``flow``, the plan the join
    is in (micro-batch), a side whose event time nothing at or after the join reads drops no late row: Spark
    prunes the column (``core/pruning.py``)."""
    spec = step.spec
    assert isinstance(spec, JoinSpec)
    left, right = (input_lineage(edge.upstream) for edge in step.inputs)
    names = (left.source, right.source) if left.source != right.source else ("left", "right")
    after = None if flow is None else columns_read_after(flow, step)
    sides = []
    for side, (name, edge) in enumerate(zip(names, step.inputs)):
        times = distinct_event_times(event_time_columns(edge.upstream))
        column = times[0].column if times else None
        drops_late = read(column, join_side_reads(spec, side)) or read(column, after)
        sides.append(JoinSide(name, column, output_columns(edge.upstream), drops_late))
    return sides[0], sides[1]


def read(column: str | None, columns: frozenset[str] | None) -> bool:
    """Whether ``column`` is among ``columns`` (``None``: any column may be read)."""
    return columns is None or column in columns


def aggregate_event_time(step: Step) -> str | None:
    """The key column of an aggregate step that carries event time (a window's end when the key holds a
    window column), or ``None``."""
    spec = step.spec
    assert isinstance(spec, AggregateSpec)
    times = event_time_columns(step)
    for column in spec.key_columns:
        time = times.get(column)
        if time is not None and (time.window is None or column == time.column):
            return column
    return None


def window_columns(spec: WindowColumnSpec):
    """The function of a window column step: each row once per window it belongs to, with the window's start
    and end (a row without event time gets no window: nulls).

    >>> from ministream.time.windows import Sliding
    >>> window_columns(WindowColumnSpec(Sliding(10, 5), "ts"))({"ts": 12})
    [{'ts': 12, 'window_start': 5, 'window_end': 15}, {'ts': 12, 'window_start': 10, 'window_end': 20}]
    """
    assign, column, start, end = spec.assigner.assign, spec.column, spec.start, spec.end

    def windows(row: dict) -> list[dict]:
        ts = row.get(column)
        if ts is None:
            return [{**row, start: None, end: None}]
        return [{**row, start: window[0], end: window[1]} for window in assign(ts)]

    return windows


def window_time(spec: WindowTimeSpec):
    """The function of a window time step: each row with the time of its window, ``end - 1`` ms (null for a
    row without a window).

    >>> window_time(WindowTimeSpec())({"window_start": 0, "window_end": 3_600_000})
    {'window_start': 0, 'window_end': 3600000, 'window_time': 3599999}
    """
    column, end = spec.column, spec.end

    def with_time(row: dict) -> dict:
        last = row.get(end)
        return {**row, column: None if last is None else last - 1}

    return with_time


def select_columns(columns: tuple[tuple[str, str], ...]):
    """The function of a ``select`` step: ``{new: row[old], ...}``.

    >>> select_columns((("click_time", "ts"),))({"ts": 5, "ad": "x"})
    {'click_time': 5}
    """
    return lambda row: {new: row[old] for new, old in columns}


def operator_class(step: Step, model: Model = "microbatch") -> type[Operator] | None:
    """The class of the operator that runs ``step`` (``None`` for a source, which has none): what the models
    ask to refuse an output mode before the run starts."""
    spec = step.spec
    if isinstance(spec, SourceSpec):
        return None
    if isinstance(spec, WindowSpec):
        return window_operator_class(step)
    if isinstance(spec, JoinSpec):
        return ContinuousJoin if model == "continuous" else StreamJoin
    if isinstance(spec, AggregateSpec):
        return WatermarkedAggregate if aggregate_event_time(step) is not None else RunningAggregate
    if isinstance(spec, OperatorSpec):
        return type(spec.make_operator())
    classes: dict[type, type[Operator]] = {
        MapSpec: MapOperator,
        SelectSpec: MapOperator,
        FilterSpec: FilterOperator,
        FlatMapSpec: FlatMapOperator,
        WindowColumnSpec: FlatMapOperator,
        WindowTimeSpec: MapOperator,
        UnionSpec: UnionOperator,
        SortSpec: SortOperator,
        StaticJoinSpec: StaticJoin,
        WatermarkSpec: WatermarkOperator,
        DedupSpec: Deduplicate,
        ProcessSpec: ProcessOperator,
        SinkSpec: SinkOperator,
    }
    if type(spec) not in classes:
        raise PipelineError(f"step {step.name!r}: no operator runs a {type(spec).__name__}")
    return classes[type(spec)]


def operator_for(step: Step, model: Model = "microbatch", flow: Dataflow | None = None) -> Operator | None:
    """A new operator for one subtask of ``step`` in ``model`` (``None`` for a source); ``flow``, the plan the
    step is in, tells a watermark step which conditions run before it (:func:`pushed_below_watermark`)."""
    spec = step.spec
    if isinstance(spec, SourceSpec):
        return None
    if isinstance(spec, SinkSpec):
        return SinkOperator(spec.sink)
    if isinstance(spec, MapSpec):
        return MapOperator(spec.fn)
    if isinstance(spec, SelectSpec):
        return MapOperator(select_columns(spec.columns))
    if isinstance(spec, FilterSpec):
        return FilterOperator(spec.predicate)
    if isinstance(spec, FlatMapSpec):
        return FlatMapOperator(spec.fn)
    if isinstance(spec, WindowColumnSpec):
        return FlatMapOperator(window_columns(spec))
    if isinstance(spec, WindowTimeSpec):
        return MapOperator(window_time(spec))
    if isinstance(spec, UnionSpec):
        return UnionOperator()
    if isinstance(spec, SortSpec):
        return SortOperator(spec.columns, spec.descending)
    if isinstance(spec, StaticJoinSpec):
        return StaticJoin(spec.table, spec.stream_keys, spec.table_keys, spec.how, spec.changes)
    if isinstance(spec, WatermarkSpec):
        pushed = pushed_below_watermark(flow, step) if flow is not None else []
        if flow is not None and model == "microbatch" and step.name in removed_watermarks(flow):
            pushed = [reaches_nothing]  # its rows only lead to a join Spark removes: its watermark stays at 0
        return WatermarkOperator(spec.column, spec.delay, pushed)
    if isinstance(spec, AggregateSpec):
        event_time = aggregate_event_time(step)
        if event_time is not None:
            return WatermarkedAggregate(spec.key_columns, spec.aggregates, event_time)
        return RunningAggregate(spec.key_columns, spec.aggregates)
    if isinstance(spec, WindowSpec):
        if spec.processing_time and model != "continuous":
            raise PipelineError(
                f"step {step.name!r}: a processing-time window is Flink's (the continuous model): in a micro-batch "
                "every row of a batch arrives at the batch's time, so Spark has no such window; window by an "
                "event-time column, or run the continuous model"
            )
        return window_operator_class(step)(
            spec.key_columns,
            spec.assigner,
            spec.aggregates,
            column=spec.column,
            allowed_lateness=spec.allowed_lateness,
            late_rows=spec.late_rows,
            processing_time=spec.processing_time,
        )
    if isinstance(spec, JoinSpec):
        left, right = join_sides(step, flow if model == "microbatch" else None)
        kept = kept_side(flow, step) if flow is not None and model == "microbatch" else None
        if kept is not None:  # Spark's optimizer runs the query without this join (core/outer_join_elimination.py)
            return RemovedOuterJoin(kept, (left, right)[1 - kept].name)
        if model == "continuous":
            return ContinuousJoin(spec.how, spec.between, left, right, spec.key_time)
        using = spec.left_keys if spec.using else ()
        return StreamJoin(
            spec.how,
            spec.between,
            left,
            right,
            spec.key_time,
            left_where=spec.left_where,
            right_where=spec.right_where,
            where=spec.where,
            null_safe=spec.null_safe,
            using=using,
            drops_null_keys=None if flow is None else (drops_null_keys(flow, step, 0), drops_null_keys(flow, step, 1)),
        )
    if isinstance(spec, DedupSpec):
        times = distinct_event_times(event_time_columns(step.inputs[0].upstream))
        event_time = times[0] if times else None
        column = None if event_time is None else event_time.column
        within = event_time.delay if spec.within_watermark and event_time is not None else None
        key_has_event_time = column is not None and (not spec.columns or column in spec.columns)
        # Spark prunes an event time that neither the key nor a later step reads (core/pruning.py)
        after = columns_read_after(flow, step) if flow is not None and model == "microbatch" else None
        drops_late = within is not None or key_has_event_time or read(column, after)
        return Deduplicate(spec.columns, column, key_has_event_time, within, drops_late)
    if isinstance(spec, ProcessSpec):
        times = distinct_event_times(event_time_columns(step.inputs[0].upstream))
        column = times[0].column if times else input_lineage(step.inputs[0].upstream).watermark_column
        return ProcessOperator(
            spec.processor,
            spec.time_mode,
            column,
            spec.output_mode,
            spec.initial_state,
            spec.key_columns,
            spec.event_time_column,
        )
    if isinstance(spec, OperatorSpec):
        return spec.make_operator()
    raise PipelineError(f"step {step.name!r}: no operator runs a {type(spec).__name__}")


def optimizer_notes(flow: Dataflow, step: Step) -> list[str]:
    """What Spark's optimizer changes in how ``step`` runs in the micro-batch model, in words (empty: nothing):
    a join it removes (``core/outer_join_elimination.py``), a join side or a deduplication whose event-time
    column it prunes, so that it drops no late row (``core/pruning.py``), a filter it runs below a watermark
    (``operators/pushdown.py``). Diagrams show them.

    >>> from ministream.core.sources import ScriptedSource
    >>> flow = Dataflow("f")
    >>> unique = flow.source("events", ScriptedSource([])).with_watermark("wm", "ts", 0).drop_duplicates("d", "id")
    >>> _ = unique.select("ids", id="id")
    >>> optimizer_notes(flow, flow.step("d"))
    ['no late rows: Spark prunes ts (nothing reads it)']
    """
    if isinstance(step.spec, WatermarkSpec):
        return [
            f"{condition.origin} runs below it (Spark moves it there): only the rows it keeps move this watermark"
            for condition in moved_below(flow, step)
            if condition.origin is not None
        ]
    operator = operator_for(step, "microbatch", flow)
    if isinstance(operator, RemovedOuterJoin):
        return [f"removed by Spark (EliminateOuterJoin): passes on the {('left', 'right')[operator.kept]} rows"]
    if isinstance(operator, StreamJoin):
        return [
            f"no late {side.name} rows: Spark prunes {side.watermark_column} (nothing reads it)"
            for side in operator.sides
            if side.watermark_column is not None and not side.drops_late
        ]
    if isinstance(operator, Deduplicate) and operator.event_time is not None and not operator.drops_late:
        return [f"no late rows: Spark prunes {operator.event_time} (nothing reads it)"]
    return []


def physical_graph(flow: Dataflow, parallelism: int = 1, *, model: Model = "microbatch", **settings) -> PhysicalGraph:
    """The physical graph of a plan, each subtask running the operator the planner picks for its step in
    ``model`` (``settings``: ``output_mode``, ``trace``, ``clock``, ``state_backend``, as ``PhysicalGraph``
    takes them)."""
    return PhysicalGraph(
        flow, parallelism, operator_for=lambda step: operator_for(step, model, flow), model=model, **settings
    )


def check_output_mode(flow: Dataflow, output_mode: str, model: Model = "microbatch") -> None:
    """Refuse, before the run, an output mode that one of the flow's operators cannot give (each operator
    class says why, with Spark's message)."""
    has_watermark = any(isinstance(step.spec, WatermarkSpec) for step in flow.steps)
    for step in flow.steps:
        cls = operator_class(step, model)
        check = getattr(cls, "check_output_mode", None)
        if check is not None:
            check(step.name, output_mode, has_watermark)
