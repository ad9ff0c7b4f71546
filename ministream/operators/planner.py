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
``JoinSpec``        ``StreamJoin``                                 ``ContinuousJoin`` (interval or window join)
``DedupSpec``       ``Deduplicate``                                the same
``ProcessSpec``     ``ProcessOperator``                            the same
``SinkSpec``        ``SinkOperator``                               the same
==================  =============================================  ==========================================

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

from ministream.core.lineage import input_lineage, watermarked_columns
from ministream.core.operator import FilterOperator, FlatMapOperator, MapOperator, Operator
from ministream.core.physical import PhysicalGraph
from ministream.core.plan import Dataflow
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
    SourceSpec,
    Step,
    WatermarkSpec,
    WindowSpec,
)
from ministream.errors import PipelineError
from ministream.operators.aggregate import RunningAggregate
from ministream.operators.dedup import Deduplicate
from ministream.operators.interval_join import ContinuousJoin
from ministream.operators.process import ProcessOperator
from ministream.operators.sessions import SessionWindowAggregate, SessionWindowAggregateWithoutWatermark
from ministream.operators.stream_join import JoinSide, StreamJoin
from ministream.operators.watermark import WatermarkOperator
from ministream.operators.window import WindowAggregate, WindowAggregateWithoutWatermark

Model = Literal["microbatch", "continuous"]


def window_operator_class(step: Step) -> type[WindowAggregate]:
    """The operator of a window step: for its assigner's kind, and whether a watermark tracks its column (else
    no row is ever late, no window ever final, and append mode is refused)."""
    spec = step.spec
    assert isinstance(spec, WindowSpec)
    watermarked = spec.column in watermarked_columns(step)
    if spec.assigner.kind == "session":
        return SessionWindowAggregate if watermarked else SessionWindowAggregateWithoutWatermark
    return WindowAggregate if watermarked else WindowAggregateWithoutWatermark


def join_sides(step: Step) -> tuple[JoinSide, JoinSide]:
    """What a join knows of its two inputs (their names, watermarked columns and declared columns), from the
    lineage; two inputs from one source are called ``left`` and ``right``."""
    left, right = (input_lineage(edge.upstream) for edge in step.inputs)
    names = (left.source, right.source) if left.source != right.source else ("left", "right")
    return (
        JoinSide(names[0], left.watermark_column, left.columns),
        JoinSide(names[1], right.watermark_column, right.columns),
    )


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
    if isinstance(spec, OperatorSpec):
        return type(spec.make_operator())
    classes: dict[type, type[Operator]] = {
        MapSpec: MapOperator,
        SelectSpec: MapOperator,
        FilterSpec: FilterOperator,
        FlatMapSpec: FlatMapOperator,
        WatermarkSpec: WatermarkOperator,
        AggregateSpec: RunningAggregate,
        DedupSpec: Deduplicate,
        ProcessSpec: ProcessOperator,
        SinkSpec: SinkOperator,
    }
    if type(spec) not in classes:
        raise PipelineError(f"step {step.name!r}: no operator runs a {type(spec).__name__}")
    return classes[type(spec)]


def operator_for(step: Step, model: Model = "microbatch") -> Operator | None:
    """A new operator for one subtask of ``step`` in ``model`` (``None`` for a source)."""
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
    if isinstance(spec, WatermarkSpec):
        return WatermarkOperator(spec.column, spec.delay)
    if isinstance(spec, AggregateSpec):
        return RunningAggregate(spec.key_columns, spec.aggregates)
    if isinstance(spec, WindowSpec):
        return window_operator_class(step)(
            spec.key_columns,
            spec.assigner,
            spec.aggregates,
            column=spec.column,
            allowed_lateness=spec.allowed_lateness,
            late_rows=spec.late_rows,
        )
    if isinstance(spec, JoinSpec):
        left, right = join_sides(step)
        join_class = ContinuousJoin if model == "continuous" else StreamJoin
        return join_class(spec.how, spec.between, left, right, spec.key_time)
    if isinstance(spec, DedupSpec):
        event_time = input_lineage(step.inputs[0].upstream).event_time
        column = None if event_time is None else event_time.column
        within = event_time.delay if spec.within_watermark and event_time is not None else None
        return Deduplicate(spec.columns, column, column in spec.columns, within)
    if isinstance(spec, ProcessSpec):
        column = input_lineage(step.inputs[0].upstream).watermark_column
        return ProcessOperator(spec.processor, spec.time_mode, column, spec.output_mode)
    if isinstance(spec, OperatorSpec):
        return spec.make_operator()
    raise PipelineError(f"step {step.name!r}: no operator runs a {type(spec).__name__}")


def physical_graph(flow: Dataflow, parallelism: int = 1, *, model: Model = "microbatch", **settings) -> PhysicalGraph:
    """The physical graph of a plan, each subtask running the operator the planner picks for its step in
    ``model`` (``settings``: ``output_mode``, ``trace``, ``clock``, ``state_backend``, as ``PhysicalGraph``
    takes them)."""
    return PhysicalGraph(
        flow, parallelism, operator_for=lambda step: operator_for(step, model), model=model, **settings
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
