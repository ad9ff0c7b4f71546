"""The compiler: a ministream plan written out as the PySpark Structured Streaming query that does the same.

The plan is typed data (``core/steps.py``), so each step's spec says, attribute by attribute, which Spark
operator runs it: ``with_watermark`` is ``withWatermark``, ``key_by(...).window(...)`` is
``groupBy(keys, window(...)).agg(...)``, a join is a stream-stream join, and so on. :func:`compile_flow` walks
the steps that feed a sink and writes a readable PySpark source, one statement per step, named after the
step and commented with the ministream step it comes from; the twin is that very source, run with ``exec``.
What Spark cannot do is refused with a :class:`CompileError` naming the step, the Spark rule and the rewrite.

One module per concern: ``schema`` (column types per step), ``frames`` (what is known of each step's output),
``writer`` (the source), ``stateless`` (sources, select, map, filter, flat_map, union, window columns, sort,
stream-static joins), ``watermark``, ``aggregate`` (aggregates, windows, sessions), ``joins``, ``dedup``,
``process`` (keyed process functions through ``spark/processor_adapter.py``), ``refusals``, and ``runtime``
(the UDF wrappers the generated code calls).

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum
>>> from ministream.core.events import Field
>>> flow = Dataflow("totals")
>>> events = flow.source("events", ScriptedSource([]))
>>> events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
>>> compiled = compile_flow(flow, {"events": [Field("key", str), Field("value", float)]}, output_mode="update")
>>> print(compiled.source)   # doctest: +ELLIPSIS
# The PySpark twin of the ministream dataflow 'totals', written by ministream.spark.compiler.
...
def twin(inputs):
    # source 'events': ts TIMESTAMP, key STRING, value DOUBLE
    events = inputs["events"]
    # aggregate 'totals': key=key, aggregates=count=count(*), sum=sum(value)
    totals = events.groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))
    # sink 'output': the query's output, in update mode
    return totals
<BLANKLINE>
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ministream.core.events import Field
from ministream.core.lineage import event_time_columns
from ministream.core.plan import Dataflow
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
from ministream.spark.compiler.aggregate import compile_aggregate, compile_window
from ministream.spark.compiler.dedup import compile_dedup
from ministream.spark.compiler.frames import Compilation, Frame, StepCompiler
from ministream.spark.compiler.joins import compile_join
from ministream.spark.compiler.process import compile_process
from ministream.spark.compiler.refusals import CompileError, refuse
from ministream.spark.compiler.schema import Schema, ddl, source_schema
from ministream.spark.compiler.stateless import (
    compile_filter,
    compile_map,
    compile_select,
    compile_sort,
    compile_static_join,
    compile_union,
    compile_window_column,
    compile_window_time,
)
from ministream.spark.compiler.watermark import compile_watermark
from ministream.spark.compiler.writer import SourceWriter, literal

OUTPUT_MODES = ("append", "update", "complete")


@attrs.frozen
class CompiledTwin:
    """A compiled twin: its ``source`` (PySpark that defines ``def twin(inputs):``, exactly the code that
    runs), ``twin`` (a Lesson twin, ``twin(inputs, params)``, built by ``exec`` of the source) and ``conf``
    (the Spark settings the query needs, such as the multiple-watermark policy)."""

    source: str
    twin: Callable[[dict, dict], Any]
    conf: dict
    output_mode: str = "append"


COMPILERS: dict[type, StepCompiler] = {
    SelectSpec: compile_select,
    MapSpec: compile_map,
    FlatMapSpec: compile_map,
    FilterSpec: compile_filter,
    UnionSpec: compile_union,
    WindowColumnSpec: compile_window_column,
    WindowTimeSpec: compile_window_time,
    SortSpec: compile_sort,
    StaticJoinSpec: compile_static_join,
    WatermarkSpec: compile_watermark,
    AggregateSpec: compile_aggregate,
    WindowSpec: compile_window,
    JoinSpec: compile_join,
    DedupSpec: compile_dedup,
    ProcessSpec: compile_process,
}
"""The module that writes each kind of step (``OperatorSpec``, an operator of your own, has none: refused)."""


def _check_event_time(step: Step, inputs: list[Frame], flow: Dataflow) -> None:
    """A stateful step whose event time, as ministream sees it, is a column that has lost Spark's watermark
    mark: rebuilt by a Python function (a UDF's output column is a new column), or a window's bound taken out
    of its struct. Spark would see no watermark there."""
    for edge, frame in zip(step.inputs, inputs):
        keys = edge.key_columns or getattr(step.spec, "columns", ())
        for column in event_time_columns(edge.upstream):
            if column not in frame.lost or column in frame.window_of(keys):  # keyed by the struct instead
                continue
            origin = frame.lost[column]
            if isinstance(flow.step(origin).spec, WindowColumnSpec):
                raise refuse(
                    step.name,
                    step.kind,
                    f"its event time {column!r} is a bound of the window of step {origin!r}: Spark keeps the "
                    "watermark's mark on the window struct, and its start and end taken out as columns carry none, "
                    "so Spark sees no watermark here ('STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION: ... streaming "
                    "aggregations without watermark')",
                    "window the aggregate itself (key_by(...).window(...)), or key by both bounds of the window, "
                    "which the twin then groups, joins or deduplicates by the window struct",
                )
            raise refuse(
                step.name,
                step.kind,
                f"its event time {column!r} was rebuilt by the Python function of step {origin!r}, and Spark's "
                "watermark follows the column withWatermark marked: a UDF's output column carries no mark, so "
                "Spark sees no watermark here",
                f"put with_watermark after {origin!r}, or make {origin!r} a select or a filter",
            )


def _time_columns(step: Step) -> set[str]:
    """The columns a step reads as event time: a watermark's, a window's, a time range's."""
    spec = step.spec
    if isinstance(spec, (WatermarkSpec, WindowSpec, WindowColumnSpec)):
        return {spec.column}
    if isinstance(spec, JoinSpec) and spec.between is not None:
        return {spec.between.left, spec.between.right}
    return set()


def _times_downstream(flow: Dataflow) -> dict[str, set[str]]:
    """For each step, the columns that the steps after it read as event time: a Python function that returns
    an int in such a column returns an event time, in ms, which is a TIMESTAMP in Spark."""
    after: dict[str, set[str]] = {step.name: set() for step in flow.steps}
    for step in reversed(flow.steps):  # a step comes after its inputs in the plan
        for edge in step.inputs:
            after[edge.upstream.name] |= after[step.name] | _time_columns(step)
    return after


def _window_times_downstream(flow: Dataflow) -> set[str]:
    """The steps with a ``with_window_time`` after them: a window step among them keeps Spark's window struct
    beside its bounds, as ``window_time`` reads the struct."""
    before: set[str] = set()
    for step in reversed(flow.steps):  # a step comes after its inputs in the plan
        if step.name in before or isinstance(step.spec, WindowTimeSpec):
            before |= {edge.upstream.name for edge in step.inputs}
    return before


def _feeding(sink: Step) -> list[Step]:
    """The steps whose rows reach ``sink``, each once, upstream before downstream."""
    order: list[Step] = []

    def visit(step: Step) -> None:
        if step in order:
            return
        for edge in step.inputs:
            visit(edge.upstream)
        order.append(step)

    visit(sink)
    return order


def _sink(flow: Dataflow, name: str) -> Step:
    sinks = flow.sinks
    for step in sinks:
        if step.name == name:
            return step
    if len(sinks) == 1:
        return sinks[0]
    have = ", ".join(step.name for step in sinks) or "none"
    raise CompileError(f"dataflow {flow.name!r} has no sink {name!r} to compile the query of; its sinks: {have}")


def _source(
    step: Step, fields: dict[str, list[Field]], flow: Dataflow, compilation: Compilation, schemas: dict[str, Schema]
) -> Frame:
    """A source is one of the twin's inputs: a streaming DataFrame with ``ts`` and the fields."""
    given = {name: source_schema(input_fields) for name, input_fields in fields.items()} | schemas
    if step.name in given:
        input_name = step.name
    elif len(given) == 1 and len(flow.sources) == 1:
        input_name = next(iter(given))
    else:
        have = ", ".join(given) or "none"
        raise CompileError(f"source {step.name!r}: no fields given for it (compile_flow's fields has: {have})")
    schema = dict(given[input_name])
    writer = compilation.writer
    name = writer.name_of(step.name)
    writer.comment(f"source {step.name!r}: {ddl(schema)}")
    writer.assign(name, f"inputs[{literal(input_name)}]")
    return Frame(name, schema)


def _other_sink(sink: Step) -> str:
    """What the twin's header says of a sink it does not compile."""
    for step in _feeding(sink):
        for edge in step.inputs:
            if edge.output is not None:
                return (
                    f"The sink {sink.name!r} reads the side output {edge.output!r} of {edge.upstream.name!r}: Spark has "
                    "no side outputs (it drops late rows and counts them, numRowsDroppedByWatermark), so it is not "
                    "compiled."
                )
    return f"The sink {sink.name!r} is another query, not compiled here."


def _describe(step: Step) -> str:
    words = ", ".join(f"{key}={value}" for key, value in step.describe().items())
    return f"{step.kind} {step.name!r}" + (f": {words}" if words else "")


def compile_flow(
    flow: Dataflow,
    fields: dict[str, list[Field]],
    *,
    output_mode: str = "append",
    sink: str = "output",
    schemas: dict[str, Schema] | None = None,
    watermark_policy: str = "min",
    model: str = "microbatch",
) -> CompiledTwin:
    """Compile the query that feeds ``sink`` (the only sink when the flow has one) into a PySpark twin.

    ``fields``: each input's own columns (``{input name: [Field, ...]}``), after ``ts``; a source step reads
    the input of its own name, or the only input when there is one. ``schemas``: inputs given as whole Spark
    schemas instead (``{input name: {column: Spark type}}``, no ``ts`` added). Raises :class:`CompileError`
    for a step that Spark cannot run.
    """
    if output_mode not in OUTPUT_MODES:
        raise CompileError(f"output mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}")
    if model not in ("microbatch", "continuous"):
        raise CompileError(f"the model is 'microbatch' or 'continuous', not {model!r}")
    if watermark_policy not in ("min", "max"):
        raise CompileError(f"the watermark policy is 'min' or 'max', not {watermark_policy!r}")
    compilation = Compilation(
        SourceWriter(flow.name),
        output_mode,
        times_downstream=_times_downstream(flow),
        window_times_downstream=_window_times_downstream(flow),
    )
    compilation.conf["spark.sql.streaming.multipleWatermarkPolicy"] = watermark_policy
    compilation.writer.note("`steps` holds the plan's steps by name: their Python functions run as UDFs.")
    target = _sink(flow, sink)
    for step in _feeding(target):
        spec = step.spec
        for edge in step.inputs:
            if edge.output is not None:
                raise refuse(
                    step.name,
                    step.kind,
                    f"it reads the side output {edge.output!r} of {edge.upstream.name!r}, and Spark has no side "
                    "outputs: a row too late for its windows is dropped and only counted "
                    "(numRowsDroppedByWatermark in the query's progress)",
                    "compare the late rows with ministream's trace or accounting; in Spark, read the counts",
                )
        if isinstance(spec, SourceSpec):
            compilation.frames[step.name] = _source(step, fields, flow, compilation, schemas or {})
            continue
        inputs = [compilation.frames[edge.upstream.name] for edge in step.inputs]
        if isinstance(spec, SinkSpec):
            compilation.writer.comment(f"sink {step.name!r}: the query's output, in {output_mode} mode")
            frame = inputs[0]
            if frame.windows:  # the carried window structs are not part of the output
                columns = ", ".join(literal(column) for column in frame.schema)
                compilation.writer.assign(frame.variable, f"{frame.variable}.select({columns})")
            compilation.writer.returns(frame.variable)
            break
        opaque = next((frame.opaque for frame in inputs if frame.opaque), None)
        if opaque is not None:
            raise refuse(
                step.name,
                step.kind,
                f"it reads the output of the process function {opaque!r}, whose columns are declared as a "
                "StructType, which the compiler hands to Spark without reading",
                f'declare the columns of {opaque!r} as DDL text (output_schema="key STRING, count BIGINT")',
            )
        compiler = COMPILERS.get(type(spec))
        if compiler is None:
            rule = "Spark has no operator for this kind of step"
            if isinstance(spec, OperatorSpec):
                rule = "it runs an operator of your own, which only ministream's engine can run; Spark has none"
            raise refuse(step.name, step.kind, rule)
        if spec.keyed and model == "continuous":
            raise refuse(
                step.name,
                step.kind,
                "ministream's continuous model is Flink's (a window fires as the watermark passes it, record by "
                "record); Spark's continuous processing runs map-like queries only ('Continuous processing does not "
                "support Aggregate operations')",
                "compile the flow for the micro-batch model (model='microbatch'), where Spark runs it batch by batch",
            )
        if spec.keyed:
            _check_event_time(step, inputs, flow)
        compilation.writer.comment(_describe(step))
        compilation.frames[step.name] = compiler(step, inputs, compilation)
        if isinstance(spec, (AggregateSpec, WindowSpec)):
            compilation.aggregated = True
    for other in flow.sinks:
        if other is not target:
            compilation.writer.note(_other_sink(other))
    source = compilation.writer.source()
    return CompiledTwin(source, _executed(source, flow), dict(compilation.conf), output_mode)


def _executed(source: str, flow: Dataflow) -> Callable[[dict, dict], Any]:
    """The twin as a Lesson's ``twin(inputs, params)``: ``source`` run with ``exec`` (at the first call, so that
    compiling needs no PySpark), with ``steps``, the flow's steps by name, as its global."""
    namespace: dict[str, Any] = {"steps": {step.name: step for step in flow.steps}}

    def twin(inputs: dict, params: dict | None = None):
        if "twin" not in namespace:
            exec(compile(source, f"<twin of {flow.name}>", "exec"), namespace)
        return namespace["twin"](inputs)

    return twin


def compiled_lesson_twin(lesson, params: dict | None = None, script=None) -> CompiledTwin:
    """The compiled twin of a lesson: its pipeline (on ``script``, the default script when ``None``) with
    these parameters, its fields, its output mode and its Spark settings (watermark policy included)."""
    values = lesson.resolve_params(params)
    flow = lesson.pipeline(lesson.default_script if script is None else script, values)
    fields = dict.fromkeys(lesson.inputs, lesson.fields)
    compiled = compile_flow(flow, fields, output_mode=lesson.mode(values), watermark_policy=lesson.policy(values))
    own = lesson.spark_conf(values) if callable(lesson.spark_conf) else lesson.spark_conf
    return attrs.evolve(compiled, conf={**own, **compiled.conf})


__all__ = ["CompileError", "CompiledTwin", "compile_flow", "compiled_lesson_twin"]
