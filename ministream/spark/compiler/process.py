"""Keyed process functions: a process step is Spark's ``groupBy(keys).transformWithState(...)``, run by an
adapter (``spark/processor_adapter.py``) that wraps the very same ``Processor`` class in a Spark
``StatefulProcessor``. The compiler writes the call; the adapter does the rest, the output schema included
(declared on the step or the processor as Spark DDL). The compiler reads the declared columns and their types
(``schema.ddl_schema``), so the steps after a process function compile as after any other step: a filter, a
select, a Python function, or a stateful step on the ``event_time_column`` (Spark's ``eventTimeColumnName``), the
processor's output event time under the query's watermark. A step whose output columns are not declared is
refused, naming the declaration to write.
"""

from __future__ import annotations

from ministream.core.steps import ProcessSpec, Step
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.refusals import refuse
from ministream.spark.compiler.schema import Schema, ddl_schema
from ministream.spark.compiler.writer import literal
from ministream.spark.session import ROCKSDB_STATE_STORE

ADAPTER = "ministream.spark.processor_adapter"


def compile_process(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``processor_twin(frame, spec)``: transformWithState with the step's Processor."""
    spec = step.spec
    assert isinstance(spec, ProcessSpec)
    if len(inputs) > 1:
        raise refuse(step.name, step.kind, "the adapter runs a process function on one input", "union the inputs first")
    declared = spec.output_schema or getattr(spec.processor, "output_schema", None)
    if not declared:
        raise refuse(
            step.name,
            step.kind,
            f"Spark needs the columns of the rows {type(spec.processor).__name__} returns",
            'declare them: process(..., output_schema="key STRING, count BIGINT")',
        )
    (frame,) = inputs
    compilation.conf.update(ROCKSDB_STATE_STORE)  # transformWithState needs the RocksDB state store
    compilation.writer.use(f"from {ADAPTER} import processor_twin")
    name = compilation.writer.name_of(step.name)
    call = f"processor_twin({frame.variable}, steps[{literal(step.name)}].spec, step_name={literal(step.name)})"
    compilation.writer.assign(name, call)
    column = spec.event_time_column
    schema = _declared_columns(step, declared)
    if schema is None:  # a StructType: Spark reads it, the compiler does not
        return Frame(name, {}, (column,) if column else (), opaque=step.name)
    if column is not None and schema.get(column) != "TIMESTAMP":
        raise refuse(
            step.name,
            step.kind,
            f"its event_time_column {column!r} is {schema.get(column, 'not among its columns')} in the declared "
            f"schema {declared!r}: Spark compares an eventTimeColumnName with the watermark as a timestamp, and "
            "reads a number there as microseconds, not ministream's milliseconds",
            f"declare {column!r} as TIMESTAMP (the processor returns it in ms)",
        )
    return Frame(name, schema, (column,) if column else ())


def _declared_columns(step: Step, declared) -> Schema | None:
    """The columns of a process step's output rows, from its declared DDL (``None``: not DDL text)."""
    if not isinstance(declared, str):
        return None
    try:
        return ddl_schema(declared)
    except ValueError as error:
        raise refuse(step.name, step.kind, f"its declared output schema cannot be read: {error}") from None
