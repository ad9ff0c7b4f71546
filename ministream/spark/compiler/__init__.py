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

>>> from ministream.core.events import Field
>>> from ministream.lessons import get_lesson
>>> lesson = get_lesson("running-aggregation")
>>> compiled = compile_flow(lesson.pipeline(lesson.default_script, {}), {"events": lesson.fields}, output_mode="update")
>>> print(compiled.source)   # doctest: +ELLIPSIS
# The PySpark twin of the ministream dataflow 'running-aggregation', written by ministream.spark.compiler.
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
from ministream.core.plan import Dataflow
from ministream.core.steps import (
    AggregateSpec,
    SinkSpec,
    SourceSpec,
    Step,
    WatermarkSpec,
    WindowSpec,
)
from ministream.spark.compiler.aggregate import compile_aggregate, compile_window
from ministream.spark.compiler.frames import Compilation, Frame, StepCompiler
from ministream.spark.compiler.refusals import CompileError, refuse
from ministream.spark.compiler.schema import ddl, source_schema
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


def _compilers() -> dict[type, StepCompiler]:
    return {
        WatermarkSpec: compile_watermark,
        AggregateSpec: compile_aggregate,
        WindowSpec: compile_window,
    }


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


def _source(step: Step, fields: dict[str, list[Field]], flow: Dataflow, compilation: Compilation) -> Frame:
    """A source is one of the twin's inputs: a streaming DataFrame with ``ts`` and the fields."""
    if step.name in fields:
        input_name = step.name
    elif len(fields) == 1 and len(flow.sources) == 1:
        input_name = next(iter(fields))
    else:
        have = ", ".join(fields) or "none"
        raise CompileError(f"source {step.name!r}: no fields given for it (compile_flow's fields has: {have})")
    schema = source_schema(fields[input_name])
    writer = compilation.writer
    name = writer.name_of(step.name)
    writer.comment(f"source {step.name!r}: {ddl(schema)}")
    writer.assign(name, f"inputs[{literal(input_name)}]")
    return Frame(name, schema)


def _describe(step: Step) -> str:
    words = ", ".join(f"{key}={value}" for key, value in step.describe().items())
    return f"{step.kind} {step.name!r}" + (f": {words}" if words else "")


def compile_flow(flow: Dataflow, fields: dict[str, list[Field]], *, output_mode: str = "append", sink: str = "output") -> CompiledTwin:
    """Compile the query that feeds ``sink`` (the only sink when the flow has one) into a PySpark twin.

    ``fields``: each input's own columns (``{input name: [Field, ...]}``), after ``ts``; a source step reads
    the input of its own name, or the only input when there is one. Raises :class:`CompileError` for a step
    that Spark cannot run.
    """
    if output_mode not in OUTPUT_MODES:
        raise CompileError(f"output mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}")
    compilation = Compilation(SourceWriter(flow.name), output_mode)
    compilation.writer.note("`steps` holds the plan's steps by name: their Python functions run as UDFs.")
    compilers = _compilers()
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
            compilation.frames[step.name] = _source(step, fields, flow, compilation)
            continue
        inputs = [compilation.frames[edge.upstream.name] for edge in step.inputs]
        if isinstance(spec, SinkSpec):
            compilation.writer.comment(f"sink {step.name!r}: the query's output, in {output_mode} mode")
            compilation.writer.returns(inputs[0].variable)
            break
        compiler = compilers.get(type(spec))
        if compiler is None:
            raise refuse(step.name, step.kind, "the compiler has no Spark operator for this kind of step")
        compilation.writer.comment(_describe(step))
        compilation.frames[step.name] = compiler(step, inputs, compilation)
    for other in flow.sinks:
        if other is not target:
            compilation.writer.note(f"the sink {other.name!r} is another query, not compiled here")
    source = compilation.writer.source()
    namespace: dict[str, Any] = {"steps": {step.name: step for step in flow.steps}}
    exec(compile(source, f"<twin of {flow.name}>", "exec"), namespace)
    run = namespace["twin"]
    return CompiledTwin(source, lambda inputs, params=None: run(inputs), dict(compilation.conf), output_mode)


def compiled_lesson_twin(lesson, params: dict | None = None, script=None) -> CompiledTwin:
    """The compiled twin of a lesson: its pipeline (on ``script``, the default script when ``None``) with
    these parameters, its fields, its output mode and its Spark settings (watermark policy included)."""
    values = lesson.resolve_params(params)
    flow = lesson.pipeline(lesson.default_script if script is None else script, values)
    fields = {name: lesson.fields for name in lesson.inputs}
    compiled = compile_flow(flow, fields, output_mode=lesson.mode(values))
    own = lesson.spark_conf(values) if callable(lesson.spark_conf) else lesson.spark_conf
    conf = {"spark.sql.streaming.multipleWatermarkPolicy": lesson.policy(values), **own, **compiled.conf}
    return attrs.evolve(compiled, conf=conf)


__all__ = ["CompileError", "CompiledTwin", "compile_flow", "compiled_lesson_twin"]
