"""Stateless steps: each row on its own, no state kept between batches.

- ``select`` is ``select(col(old).alias(new), ...)``: a renamed event-time column keeps Spark's watermark mark.
- ``map``, ``flat_map`` and ``filter`` run the step's own Python function as a UDF (``runtime.py``): a map
  returns a struct (``select("row.*")``), a flat map an array of structs (``inline``), a filter a boolean. A
  UDF must declare what it returns, so the output columns of a map are declared on the step
  (``map(..., output={"n": "BIGINT"})``) or inferred by calling the function on a sample row; where neither
  tells a type, the compiler refuses and names the step. A column a UDF returns is a new column: it has no
  watermark mark, even if it has the event time's name (see :func:`lost_event_time`).
- ``union`` is ``unionByName`` (an input whose event time a Python function returned as an int of ms gets it
  back as a ``TIMESTAMP`` with ``timestamp_millis`` when another input has one); ``with_window`` is ``window(...)`` in a ``select`` (a row of sliding windows
  becomes one row per window), its bounds as two columns; ``with_window_time`` is ``window_time(struct)``; ``sort`` is ``orderBy``, which Spark allows only in
  complete mode; a stream-static join joins a DataFrame made from the fixed table (a table that changes between batches:
  the versioned batch source of ``spark/table.py``).

>>> from ministream.core.steps import SelectSpec, Step
>>> from ministream.spark.compiler.frames import Compilation, Frame
>>> from ministream.spark.compiler.writer import SourceWriter
>>> compilation = Compilation(SourceWriter("f"), "append")
>>> frame = compile_select(Step("renamed", SelectSpec((("click_time", "ts"),))), [Frame("clicks", {"ts": "TIMESTAMP"}, ("ts",))], compilation)
>>> frame.schema, frame.event_time
({'click_time': 'TIMESTAMP'}, ('click_time',))
>>> compilation.writer.body[-1]
'    renamed = clicks.select(F.col("ts").alias("click_time"))'
"""

from __future__ import annotations

import attrs

from ministream.core.steps import (
    FilterSpec,
    FlatMapSpec,
    MapSpec,
    SelectSpec,
    SortSpec,
    StaticJoinSpec,
    Step,
    UnionSpec,
    WindowColumnSpec,
    WindowTimeSpec,
)
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.refusals import refuse
from ministream.spark.compiler.schema import (
    SPARK_TYPES,
    TIMESTAMP,
    Schema,
    ddl,
    infer_schema,
    infer_type,
    sample_row,
)
from ministream.spark.compiler.writer import literal
from ministream.time.units import format_duration


def _struct(schema: Schema | tuple[str, ...]) -> str:
    return f"F.struct({', '.join(literal(column) for column in schema)})"


def _spec_ref(step: Step) -> str:
    return f"steps[{literal(step.name)}].spec"


def compile_select(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``select(col(old).alias(new), ...)`` (a column kept under its own name is written as its name)."""
    spec = step.spec
    assert isinstance(spec, SelectSpec)
    (frame,) = inputs
    missing = [old for _, old in spec.columns if old not in frame.schema]
    if missing:
        raise refuse(
            step.name,
            step.kind,
            f"the rows have no column {missing[0]!r} (they have {', '.join(frame.schema)}): Spark's "
            "'UNRESOLVED_COLUMN'",
            "select a column the rows have",
        )
    columns = [
        literal(new) if new == old else f"F.col({literal(old)}).alias({literal(new)})" for new, old in spec.columns
    ]
    names = {old: new for new, old in spec.columns}
    windows = {}  # a window struct stays while both its bounds are selected, under their new names
    for struct, (start, end) in frame.windows.items():
        if start in names and end in names:
            windows[struct] = (names[start], names[end])
            columns.append(literal(struct))
    name = compilation.writer.name_of(step.name)
    compilation.writer.assign(name, f"{frame.variable}.select({', '.join(columns)})")
    schema = {new: frame.schema[old] for new, old in spec.columns}
    event_time = tuple(new for new, old in spec.columns if old in frame.event_time)
    lost = {new: frame.lost[old] for new, old in spec.columns if old in frame.lost}
    return Frame(name, schema, event_time, lost, windows=windows)


def _declared(step: Step, output) -> Schema:
    schema = dict(output)
    wrong = {column: kind for column, kind in schema.items() if kind not in SPARK_TYPES}
    if wrong:
        raise refuse(step.name, step.kind, f"declared types {wrong} are not among {', '.join(SPARK_TYPES)}")
    return schema


def _inferred(step: Step, fn, before: Schema, many: bool, times: set[str]) -> Schema:
    """The output columns of a map (or flat map) found by calling it on a sample row; an int in a column that
    a later step reads as event time (``times``) is a ``TIMESTAMP``: ministream's event times are ints of
    milliseconds."""
    declare = f'declare them: {step.kind}({step.name!r}, fn, output={{"column": "BIGINT", ...}})'
    try:
        result = fn(sample_row(before))
        row = (next(iter(result)) if result else None) if many else result
    except Exception as error:  # the user's function on a made-up row: any error means "cannot tell"
        raise refuse(
            step.name,
            step.kind,
            f"a Python UDF must declare the columns it returns, and the function raised {type(error).__name__} "
            "on a sample row, so they cannot be inferred",
            declare,
        ) from None
    if not isinstance(row, dict):
        raise refuse(
            step.name,
            step.kind,
            "a Python UDF must declare the columns it returns, and on a sample row the function returned "
            f"{'no row' if row is None else repr(row)}, so they cannot be inferred",
            declare,
        )
    schema, unknown = infer_schema(row, times)
    if unknown:
        raise refuse(
            step.name,
            step.kind,
            f"a Python UDF must declare the type of each column it returns, and the sample row gives no type for "
            f"{', '.join(unknown)}",
            declare,
        )
    return schema


def compile_map(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """A map or flat map: the function as a UDF over a struct of every column."""
    spec = step.spec
    assert isinstance(spec, (MapSpec, FlatMapSpec))
    (frame,) = inputs
    many = isinstance(spec, FlatMapSpec)
    output = getattr(spec, "output", None)
    times = compilation.times_downstream.get(step.name, set())
    after = _declared(step, output) if output else _inferred(step, spec.fn, frame.schema, many, times)
    writer = compilation.writer
    name = writer.name_of(step.name)
    helper = "flat_map_rows" if many else "map_rows"
    udf = f"{helper}({literal(step.name)}, {_spec_ref(step)}.fn, {literal(frame.schema)}, {literal(after)})"
    if many:
        writer.assign(name, f"{frame.variable}.select(F.inline({udf}({_struct(frame.schema)})))")
    else:
        writer.assign(name, f'{frame.variable}.select({udf}({_struct(frame.schema)}).alias("row")).select("row.*")')
    lost = {column: step.name for column in frame.event_time if column in after} | {
        column: origin for column, origin in frame.lost.items() if column in after
    }
    return Frame(name, after, (), lost)


def compile_filter(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``filter(udf(struct(columns)))``: the predicate sees only the columns it declares it reads, so that
    Spark's optimizer, as ministream's planner, can run it before the watermark when it does not read the
    event time."""
    spec = step.spec
    assert isinstance(spec, FilterSpec)
    (frame,) = inputs
    columns = frame.schema if spec.columns is None else {c: frame.schema[c] for c in spec.columns if c in frame.schema}
    name = compilation.writer.name_of(step.name)
    predicate = f"row_predicate({_spec_ref(step)}.predicate, {literal(columns)})"
    compilation.writer.assign(name, f"{frame.variable}.filter({predicate}({_struct(columns)}))")
    return frame.renamed(name)


def _as_timestamps(step: Step, frame: Frame, inputs: list[Frame], compilation: Compilation) -> Frame:
    """An input of a union whose event time is a plain int (ms: a Python function returned it) where another
    input has a TIMESTAMP column: ``timestamp_millis`` makes it one, the same instant."""
    ints = [
        column
        for column, kind in frame.schema.items()
        if kind == "BIGINT" and any(other.schema.get(column) == TIMESTAMP for other in inputs)
    ]
    if not ints:
        return frame
    name = compilation.writer.name_of(f"{step.name}_{frame.variable}")
    columns = [
        f"F.timestamp_millis({literal(c)}).alias({literal(c)})" if c in ints else literal(c) for c in frame.columns()
    ]
    compilation.writer.comment(
        f"{', '.join(ints)} of {frame.variable}: milliseconds, as a TIMESTAMP like the other inputs'"
    )
    compilation.writer.assign(name, f"{frame.variable}.select({', '.join(columns)})")
    return attrs.evolve(frame, variable=name, schema=frame.schema | dict.fromkeys(ints, TIMESTAMP))


def compile_union(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``unionByName``: ministream matches columns by name, so the inputs must have the same columns (and, in
    Spark, the same types)."""
    assert isinstance(step.spec, UnionSpec)
    inputs = [_as_timestamps(step, frame, inputs, compilation) for frame in inputs]
    first = inputs[0]
    for other in inputs[1:]:
        if set(other.schema) != set(first.schema) or any(other.schema[c] != first.schema[c] for c in first.schema):
            raise refuse(
                step.name,
                step.kind,
                f"Spark's unionByName needs the same columns of the same types, and {first.schema} differs from "
                f"{other.schema} ('NUM_COLUMNS_MISMATCH' / 'INCOMPATIBLE_COLUMN_TYPE')",
                "select (or map to) the same columns on every input first",
            )
    name = compilation.writer.name_of(step.name)
    if any(frame.windows != first.windows for frame in inputs):  # carried window structs only if all carry them
        variables = [f"{frame.variable}.select({', '.join(literal(c) for c in first.schema)})" for frame in inputs]
        windows = {}
    else:
        variables, windows = [frame.variable for frame in inputs], first.windows
    compilation.writer.assign(name, variables[0] + "".join(f".unionByName({v})" for v in variables[1:]))
    return Frame(name, first.schema, first.event_time, first.lost, windows=windows)


def compile_window_column(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``select(*, window(column, ...))``, then the window's start and end as two columns."""
    spec = step.spec
    assert isinstance(spec, WindowColumnSpec)
    (frame,) = inputs
    if frame.schema.get(spec.column) != TIMESTAMP:
        raise refuse(
            step.name,
            step.kind,
            f"Spark's window() needs a TIMESTAMP column and {spec.column!r} is "
            f"{frame.schema.get(spec.column) or 'missing'}",
            f"declare {spec.column!r} as TIMESTAMP in the step that makes it",
        )
    assigner = spec.assigner
    arguments = [literal(spec.column), literal(format_duration(assigner.size))]
    if assigner.slide != assigner.size or assigner.offset:
        arguments.append(literal(format_duration(assigner.slide)))
    if assigner.offset:
        arguments.append(literal(format_duration(assigner.offset)))
    kept = [literal(c) for c in frame.columns() if c not in (spec.start, spec.end)]
    struct = f"_window_{spec.start}_{spec.end}"
    name = compilation.writer.name_of(step.name)
    window = f"F.window({', '.join(arguments)})"
    bounds = [
        f"F.col({literal(struct + '.start')}).alias({literal(spec.start)})",
        f"F.col({literal(struct + '.end')}).alias({literal(spec.end)})",
    ]
    compilation.writer.comment(
        f"the window struct {struct!r} stays beside its bounds: Spark's watermark mark is on the struct, so a step "
        "keyed by both bounds groups, joins or deduplicates by it"
    )
    compilation.writer.assign(name, f"{frame.variable}.select({', '.join(kept)}, {window}.alias({literal(struct)}))")
    compilation.writer.assign(name, f"{name}.select({', '.join([*kept, literal(struct), *bounds])})")
    schema = {c: k for c, k in frame.schema.items() if c not in (spec.start, spec.end)} | {
        spec.start: TIMESTAMP,
        spec.end: TIMESTAMP,
    }
    # the bounds as columns carry no mark (measured: an aggregation by them alone is one without a watermark)
    lost = {c: origin for c, origin in frame.lost.items() if c not in (spec.start, spec.end)}
    if spec.column in frame.event_time or spec.column in frame.lost:
        lost |= {spec.start: step.name, spec.end: step.name}
    windows = {other: pair for other, pair in frame.windows.items() if not set(pair) & {spec.start, spec.end}}
    return Frame(name, schema, frame.event_time, lost, windows=windows | {struct: (spec.start, spec.end)})


def compile_window_time(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``withColumn(column, window_time(struct))``: Spark's ``window_time`` reads the window struct that
    ``window()`` (or ``session_window()``) made, which the twin carries beside its two bounds; its column keeps
    the struct's watermark mark, so a second windowed step can group by it."""
    spec = step.spec
    assert isinstance(spec, WindowTimeSpec)
    (frame,) = inputs
    struct = next((s for s, pair in frame.windows.items() if pair == (spec.start, spec.end)), None)
    if struct is None:
        raise refuse(
            step.name,
            step.kind,
            f"Spark's window_time reads the window struct made by window() or session_window(), and "
            f"{spec.start!r}, {spec.end!r} are not the bounds of one the rows still carry (a struct rebuilt from "
            "them: 'The input is not a correct window column: window_time(...)')",
            "put with_window_time right after the window step, or after selects and filters only",
        )
    name = compilation.writer.name_of(step.name)
    compilation.writer.assign(
        name, f"{frame.variable}.withColumn({literal(spec.column)}, F.window_time({literal(struct)}))"
    )
    marked = spec.end in frame.event_time or spec.end in frame.lost  # the struct has the mark its bounds lost
    event_time = (*frame.event_time, spec.column) if marked else frame.event_time
    return attrs.evolve(frame, variable=name, schema=frame.schema | {spec.column: TIMESTAMP}, event_time=event_time)


def compile_sort(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``orderBy``: Spark sorts a streaming result only after an aggregation, in complete mode."""
    spec = step.spec
    assert isinstance(spec, SortSpec)
    (frame,) = inputs
    if compilation.output_mode != "complete" or not compilation.aggregated:
        raise refuse(
            step.name,
            step.kind,
            "Spark sorts a stream only after an aggregation in complete mode, where each batch is the whole "
            "result table ('Sorting is not supported on streaming DataFrames/Datasets, unless it is on aggregated "
            "DataFrame/Dataset in Complete output mode')",
            "sort after an aggregate, in complete mode, or sort each batch where it is read",
        )
    order = [
        f"F.col({literal(c)}).desc()" if down else f"F.col({literal(c)})"
        for c, down in zip(spec.columns, spec.descending)
    ]
    name = compilation.writer.name_of(step.name)
    compilation.writer.assign(name, f"{frame.variable}.orderBy({', '.join(order)})")
    return frame.renamed(name)


def compile_static_join(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """A stream-static join: the fixed table as a DataFrame, joined on equal keys; a key of the same name on
    both sides appears once (Spark's ``join(table, ["k"], how)``). A table with ``changes`` is the batch source
    of ``spark/table.py``, which Spark reads again in every micro-batch and which gives the version in force
    at the batch being run."""
    spec = step.spec
    assert isinstance(spec, StaticJoinSpec)
    (frame,) = inputs
    versions = {0: spec.table, **dict(spec.changes)}
    every_row = [row for rows in versions.values() for row in rows]
    table_schema: Schema = {}
    for row in every_row:
        for column, value in row.items():
            kind = frame.schema.get(dict(zip(spec.table_keys, spec.stream_keys)).get(column, ""))
            kind = kind or infer_type(value)
            if kind is not None:
                table_schema.setdefault(column, kind)
    columns = list(dict.fromkeys(c for row in every_row for c in row))
    missing = [c for c in columns if c not in table_schema]
    if missing:
        raise refuse(
            step.name,
            step.kind,
            f"the static table's columns {missing} hold only nulls, so Spark cannot be given their type",
            "give each column of the table at least one value",
        )
    table_schema = {c: table_schema[c] for c in columns}
    writer = compilation.writer
    table = writer.name_of(f"{step.name}_table")
    # the table is the side Spark builds its hash table from, so that the stream's rows come out in the order
    # they came (left to itself, Spark would broadcast the stream's batch, whose size it knows, against a table
    # with no size estimate, and emit the rows in the table's order: tutorials/spark-facts.md): a fixed table
    # is broadcast, as an enrichment table is; a changing one is hashed after a shuffle, since a broadcast
    # would be built before run_query sets the batch clock it reads, and join an older version
    if spec.changes:  # a table that changes between batches: each batch reads the version in force then
        writer.use("from ministream.spark.table import versioned_table")
        changes = f"{{0: {_spec_ref(step)}.table, **dict({_spec_ref(step)}.changes)}}"
        schema = literal(ddl(table_schema))
        writer.assign(
            table, f"versioned_table({frame.variable}.sparkSession, {schema}, {changes}).hint('shuffle_hash')"
        )
    else:
        writer.assign(
            table,
            f"F.broadcast(static_table({frame.variable}.sparkSession, {_spec_ref(step)}.table, "
            f"{literal(table_schema)}))",
        )
    name = writer.name_of(step.name)
    same = [s for s, t in zip(spec.stream_keys, spec.table_keys) if s == t]
    if len(same) == len(spec.stream_keys):
        writer.assign(name, f"{frame.variable}.join({table}, {literal(list(spec.stream_keys))}, {literal(spec.how)})")
    else:  # keys of the same name appear once, as ministream writes them: the table's copy is dropped
        condition = " & ".join(
            f"({frame.variable}[{literal(s)}] == {table}[{literal(t)}])"
            for s, t in zip(spec.stream_keys, spec.table_keys)
        )
        drops = "".join(f".drop({table}[{literal(c)}])" for c in same)
        writer.assign(name, f"{frame.variable}.join({table}, {condition}, {literal(spec.how)}){drops}")
    schema = dict(frame.schema) | {c: k for c, k in table_schema.items() if c not in frame.schema}
    return attrs.evolve(frame, variable=name, schema=schema)
