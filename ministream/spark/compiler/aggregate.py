"""Aggregations: ``aggregate`` is ``groupBy(keys).agg(...)``; a window step is ``groupBy(keys, window(...))``
or ``groupBy(keys, session_window(...))``, its window bounds then taken out of Spark's struct as the columns
``window_start`` and ``window_end``, as ministream's rows carry them (and the struct itself beside them when a
``with_window_time`` comes later, as Spark's ``window_time`` reads the struct).

Each aggregate function of ``core/aggregates.py`` has its Spark function: ``Count()`` is ``count("*")``,
``Count(c)`` ``count(c)``, ``Sum``, ``Min``, ``Max``, ``Avg`` are ``sum``, ``min``, ``max``, ``avg``. A
``Custom`` aggregate is Python, and Spark refuses a Python aggregate function in a streaming aggregation
('Streaming aggregation doesn't support group aggregate pandas UDF'): it compiles to ``collect_list(column)``,
which Spark keeps in state, and a UDF that folds the list with the aggregate's ``create``, ``add`` and
``result`` when the row is emitted. ``collect_list`` skips nulls, as ministream's aggregates do; it does not
promise an order, so a custom aggregate must not depend on the order of its values (neither does ministream's
merge of partial aggregates).

>>> from ministream.core.aggregates import Count, Sum
>>> aggregate_columns("totals", {"n": Count(), "total": Sum("value")}, {"value": "DOUBLE"})[0]
['F.count("*").alias("n")', 'F.sum("value").alias("total")']
"""

from __future__ import annotations

import operator

from ministream.core.aggregates import AggregateFunction
from ministream.core.steps import AggregateSpec, Step, WindowSpec
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.refusals import refuse
from ministream.spark.compiler.schema import TIMESTAMP, Schema, infer_type, sample_row
from ministream.spark.compiler.writer import literal
from ministream.time.units import format_duration

BUILT_IN = {"count": "count", "sum": "sum", "min": "min", "max": "max", "avg": "avg"}
"""ministream's aggregate names and Spark's function for each."""


def _result_type(step: str, name: str, function: AggregateFunction, schema: Schema) -> str:
    """The Spark type of one aggregate's result."""
    column_type = schema.get(function.column) if function.column else None
    if function.name == "count":
        return "BIGINT"
    if function.name == "avg":
        return "DOUBLE"
    if function.name in ("sum", "min", "max"):
        if function.name == "sum" and column_type in ("INT", "BIGINT"):
            return "BIGINT"
        return column_type or "DOUBLE"
    sample = sample_row(schema) if function.column is None else sample_row(schema).get(function.column)
    try:
        kind = infer_type(function.result(function.add(function.create(), sample)))
    except Exception as error:  # the user's function on a made-up value: any error means "cannot tell"
        kind, why = None, f"it raised {type(error).__name__} on a sample value"
    else:
        why = "its result on a sample value is not a string, a number or a bool"
    if kind is None:
        raise refuse(
            step,
            "aggregate",
            f"the custom aggregate {name!r} runs as a Python UDF, which must declare its result type, and {why}",
            "make the result a str, float, int or bool",
        )
    return kind


def aggregate_columns(
    step: str, aggregates: dict[str, AggregateFunction], schema: Schema
) -> tuple[list[str], list[str], Schema]:
    """The ``agg(...)`` arguments, the ``select`` that finishes custom aggregates (empty when there are none),
    and the types of the results."""
    columns, finish, types = [], [], {}
    for name, function in aggregates.items():
        types[name] = _result_type(step, name, function, schema)
        if function.name in BUILT_IN:
            argument = literal(function.column or "*")
            columns.append(f"F.{BUILT_IN[function.name]}({argument}).alias({literal(name)})")
            finish.append(literal(name))
            continue
        values = (
            f"F.struct({', '.join(literal(c) for c in schema)})"
            if function.column is None
            else literal(function.column)
        )
        columns.append(f"F.collect_list({values}).alias({literal(name)})")
        rows = "" if function.column is not None else f", {literal(schema)}"
        fold = f"fold_values(steps[{literal(step)}].spec.aggregates[{literal(name)}], {literal(types[name])}{rows})"
        finish.append(f"{fold}({literal(name)}).alias({literal(name)})")
    if all(function.name in BUILT_IN for function in aggregates.values()):
        finish = []
    return columns, finish, types


def grouped(step: Step, inputs: list[Frame], compilation: Compilation) -> tuple[Frame, tuple[str, ...]]:
    """The frame to group and the key columns: the union of the inputs when there are several (Spark's
    ``a.union(b).groupBy(...)``), and the key computed by a ``key_by(function)`` as a column ``key``."""
    writer = compilation.writer
    frame = inputs[0]
    if len(inputs) > 1:
        union = writer.name_of(f"{step.name}_inputs")
        others = "".join(f".unionByName({other.variable})" for other in inputs[1:])
        writer.comment(f"the inputs of {step.name!r}, together: Spark's union (by column name)")
        writer.assign(union, f"{frame.variable}{others}")
        frame = Frame(union, frame.schema, tuple(c for c in frame.event_time if all(c in i.event_time for i in inputs)))
    edge = step.inputs[0]
    keys = edge.key_columns
    if all(k in frame.schema for k in keys) and (len(keys) != 1 or isinstance(edge.key_fn, operator.itemgetter)):
        return frame, keys
    if len(step.inputs) > 1:
        raise refuse(step.name, step.kind, "a key from a Python function on several inputs", "key_by columns")
    # key_by(function): the key is the function's value, a column "key" computed by a UDF
    try:
        kind = infer_type(edge.key_fn(sample_row(frame.schema)))
    except Exception:  # the user's function on a made-up row: any error means "cannot tell"
        kind = None
    if kind is None:
        raise refuse(
            step.name,
            step.kind,
            "its key comes from a Python function (key_by(function)), which runs as a UDF that must declare its "
            "type, and the function's value on a sample row is not a string, a number or a bool",
            "compute the key as a column with map(..., output=...) and key_by that column",
        )
    name = writer.name_of(f"{step.name}_key")
    columns = dict(frame.schema.items())
    udf = f"row_value(steps[{literal(step.name)}].inputs[0].key_fn, {literal(columns)}, {literal(kind)})"
    struct = f"F.struct({', '.join(literal(c) for c in columns)})"
    writer.comment(f"the key of {step.name!r}, from key_by(function): a column 'key'")
    writer.assign(name, f'{frame.variable}.withColumn("key", {udf}({struct}))')
    return Frame(name, frame.schema | {"key": kind}, frame.event_time, frame.lost), ("key",)


def compile_aggregate(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``groupBy(keys).agg(...)``."""
    spec = step.spec
    assert isinstance(spec, AggregateSpec)
    frame, keys = grouped(step, inputs, compilation)
    columns, finish, types = aggregate_columns(step.name, spec.aggregates, frame.schema)
    writer = compilation.writer
    name = writer.name_of(step.name)
    fields = frame.window_of(keys)  # keyed by a window's two bounds: grouped by its struct, which has the mark
    group = ", ".join(literal(k) for k in frame.structs_for(keys))
    writer.assign(name, f"{frame.variable}.groupBy({group}).agg({', '.join(columns)})")
    if finish or fields:
        selected = [f"F.col({literal(fields[k])}).alias({literal(k)})" if k in fields else literal(k) for k in keys]
        results = finish or [literal(n) for n in spec.aggregates]
        writer.assign(name, f"{name}.select({', '.join([*selected, *results])})")
    schema = {k: frame.schema[k] for k in keys} | types
    lost = {k: frame.lost[k] for k in keys if k in frame.lost}
    return Frame(name, schema, tuple(k for k in keys if k in frame.event_time), lost)


def compile_window(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``groupBy(keys, window(column, size, slide, startTime))`` or ``session_window(column, gap)``, then the
    window's bounds as two columns."""
    spec = step.spec
    assert isinstance(spec, WindowSpec)
    if spec.allowed_lateness:
        raise refuse(
            step.name,
            step.kind,
            "Spark has no allowed lateness: a window is emitted once, when the watermark passes its end, and a "
            "later row is dropped (allowed lateness is Flink's, the continuous model)",
            "drop allowed_lateness, or raise the watermark delay by as much (the window is then emitted later)",
        )
    if spec.processing_time:
        raise refuse(
            step.name,
            step.kind,
            "Spark has no processing-time window: every row of a micro-batch arrives at the batch's time "
            "(processing-time windows are Flink's, the continuous model)",
            "window by an event-time column (current_timestamp() as a column is not deterministic)",
        )
    frame, keys = grouped(step, inputs, compilation)
    if frame.schema.get(spec.column) != TIMESTAMP:
        raise refuse(
            step.name,
            step.kind,
            f"Spark's window() needs a TIMESTAMP column and {spec.column!r} is {frame.schema.get(spec.column) or 'missing'}",
            f"declare {spec.column!r} as TIMESTAMP in the step that makes it",
        )
    writer = compilation.writer
    assigner = spec.assigner
    column = literal(spec.column)
    if assigner.kind == "session":
        struct = "session_window"
        gap = assigner.gap
        if callable(gap):
            gap_text = f"session_gap(steps[{literal(step.name)}].spec.assigner, {literal(frame.schema)})"
            window = f"F.session_window({column}, {gap_text}({', '.join(literal(c) for c in frame.schema)}))"
        else:
            window = f"F.session_window({column}, {literal(format_duration(gap))})"
    else:
        struct = "window"
        arguments = [column, literal(format_duration(assigner.size))]
        if assigner.slide != assigner.size or assigner.offset:
            arguments.append(literal(format_duration(assigner.slide)))
        if assigner.offset:
            arguments.append(literal(format_duration(assigner.offset)))
        window = f"F.window({', '.join(arguments)})"
    columns, finish, types = aggregate_columns(step.name, spec.aggregates, frame.schema)
    name = writer.name_of(step.name)
    group = ", ".join([*(literal(k) for k in keys), window])
    writer.assign(name, f"{frame.variable}.groupBy({group}).agg({', '.join(columns)})")
    bounds = [
        f'F.col({literal(struct + ".start")}).alias("window_start")',
        f'F.col({literal(struct + ".end")}).alias("window_end")',
    ]
    results = finish or [literal(n) for n in spec.aggregates]
    windows = {}
    if step.name in compilation.window_times_downstream:  # window_time reads the struct: it stays beside
        carried = "_window_window_start_window_end"
        results.append(f"F.col({literal(struct)}).alias({literal(carried)})")
        windows[carried] = ("window_start", "window_end")
    writer.assign(name, f"{name}.select({', '.join([*(literal(k) for k in keys), *bounds, *results])})")
    schema = {k: frame.schema[k] for k in keys} | {"window_start": TIMESTAMP, "window_end": TIMESTAMP} | types
    return Frame(name, schema, ("window_end",) if spec.column in frame.event_time else (), windows=windows)
