"""Stream-stream joins: a join step is Spark's ``left.join(right, condition, how)`` between two streams.

The condition is written as Spark SQL, as a person writes it: the equal keys (``=``, or ``<=>`` with
``null_safe``), then the time range (``click_time >= impression_time AND click_time <= impression_time +
interval 1 minute``), from which Spark solves how long each side's rows stay in state. With ``using`` the
key columns have the same names on both sides: the sides are aliased ``L`` and ``R`` and the output keeps each
key once (the left's, the right's in a right outer join, ``coalesce`` of both in a full outer join), as
``join(other, ["key"], how)`` writes them.

The rest of the condition is Python:

- a one-sided condition (``left_where``/``right_where``) on the side that is *not* preserved by an outer join
  runs as a filter on that side before the join: Spark's optimizer pushes it there too, and the result is the
  same;
- on a preserved side it is a boolean UDF column in the join's ON clause: Spark evaluates a UDF that reads one
  side only (measured: it runs), and a row that fails it comes out padded with nulls;
- a condition on the pair (``where``) is a UDF that reads both sides, which Spark refuses in the ON clause of
  an outer or semi join ('UNSUPPORTED_FEATURE.PYTHON_UDF_IN_ON_CLAUSE'); in an inner join it is a filter after
  the join (what Spark turns it into itself).

>>> from ministream.time.ranges import TimeRange
>>> range_condition(TimeRange("imp", "click", lower=0, upper=60_000), "", "")
'click >= imp AND click <= imp + interval 1 minute'
"""

from __future__ import annotations

from ministream.core.steps import JoinSpec, RowCondition, Step
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.refusals import refuse
from ministream.spark.compiler.writer import literal
from ministream.time.ranges import TimeRange
from ministream.time.units import format_duration

SPARK_HOW = {
    "inner": "inner",
    "left_outer": "left_outer",
    "right_outer": "right_outer",
    "full_outer": "full_outer",
    "left_semi": "left_semi",
}


def _shifted(column: str, ms: int) -> str:
    if ms == 0:
        return column
    sign = "+" if ms > 0 else "-"
    return f"{column} {sign} interval {format_duration(abs(ms))}"


def range_condition(between: TimeRange, left: str, right: str) -> str:
    """A time range as Spark SQL; ``left`` and ``right`` prefix each side's column (``"L."``, or ``""``)."""
    parts = []
    left_time, right_time = f"{left}{between.left}", f"{right}{between.right}"
    if between.lower is not None:
        parts.append(f"{right_time} {'>=' if between.lower_inclusive else '>'} {_shifted(left_time, between.lower)}")
    if between.upper is not None:
        parts.append(f"{right_time} {'<=' if between.upper_inclusive else '<'} {_shifted(left_time, between.upper)}")
    return " AND ".join(parts)


def _preserved(how: str, side: int) -> bool:
    return how == "full_outer" or how == ("left_outer", "right_outer")[side]


def _condition_column(step: Step, side: int, condition: RowCondition, frame: Frame, prefix: str) -> str:
    """A one-sided condition as a boolean UDF column of that side's columns, for the join's ON clause."""
    columns = frame.schema if condition.columns is None else {c: frame.schema[c] for c in condition.columns}
    where = ("left_where", "right_where")[side]
    udf = f"row_predicate(steps[{literal(step.name)}].spec.{where}.fn, {literal(columns)})"
    return f"{udf}(F.struct({', '.join(f'F.col({literal(prefix + c)})' for c in columns)}))"


def _pushed_filter(step: Step, side: int, condition: RowCondition, frame: Frame, compilation: Compilation) -> Frame:
    """A one-sided condition as a filter on that side before the join."""
    columns = frame.schema if condition.columns is None else {c: frame.schema[c] for c in condition.columns}
    where = ("left_where", "right_where")[side]
    name = compilation.writer.name_of(f"{step.name}_{('left', 'right')[side]}")
    compilation.writer.comment(f"{where} of {step.name!r}, on the side no outer join keeps: a filter before the join")
    struct = f"F.struct({', '.join(literal(c) for c in columns)})"
    udf = f"row_predicate(steps[{literal(step.name)}].spec.{where}.fn, {literal(columns)})"
    compilation.writer.assign(name, f"{frame.variable}.filter({udf}({struct}))")
    return Frame(name, frame.schema, frame.event_time, frame.lost)


def compile_join(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``left.join(right, F.expr(condition), how)``, then the output columns."""
    spec = step.spec
    assert isinstance(spec, JoinSpec)
    for edge, keys in zip(step.inputs, (spec.left_keys, spec.right_keys)):
        if edge.key_columns != keys:
            raise refuse(step.name, step.kind, "a join key comes from a Python function; Spark joins on columns")
    left, right = inputs
    # keyed by a window's two bounds on each side: joined on the window structs, which carry the watermark
    fields = (left.window_of(spec.left_keys), right.window_of(spec.right_keys))
    # the sides are aliased L and R when a column name is on both: USING keys, or the window structs
    aliased = spec.using or any(lk in fields[0] and rk in fields[1] for lk, rk in zip(spec.left_keys, spec.right_keys))
    prefix = ("L.", "R.") if aliased else ("", "")
    in_clause = []  # one-sided conditions on a side an outer join keeps: UDF columns in the ON clause
    for side, condition in enumerate((spec.left_where, spec.right_where)):
        if condition is None:
            continue
        frame = (left, right)[side]
        if _preserved(spec.how, side):
            in_clause.append(_condition_column(step, side, condition, frame, prefix[side]))
            continue
        frame = _pushed_filter(step, side, condition, frame, compilation)
        left, right = (frame, right) if side == 0 else (left, frame)
    if spec.where is not None and spec.how != "inner":
        raise refuse(
            step.name,
            step.kind,
            f"a condition on the pair is a Python function, which a {spec.how} join would have to evaluate in its "
            "ON clause, and Spark refuses a Python UDF there ('UNSUPPORTED_FEATURE.PYTHON_UDF_IN_ON_CLAUSE')",
            "use an inner join, or a time range (between=TimeRange(...)) for conditions on the two times",
        )
    parts = []
    for lk, rk, safe in zip(spec.left_keys, spec.right_keys, spec.null_safe_keys()):
        if lk in fields[0] and rk in fields[1]:
            lk, rk = fields[0][lk].split(".")[0], fields[1][rk].split(".")[0]
        part = f"{prefix[0]}{lk}{' <=> ' if safe else ' = '}{prefix[1]}{rk}"
        if part not in parts:
            parts.append(part)
    if spec.between is not None:
        parts.append(range_condition(spec.between, *prefix))
    writer = compilation.writer
    name = writer.name_of(step.name)
    sides = (
        (f'{left.variable}.alias("L")', f'{right.variable}.alias("R")') if aliased else (left.variable, right.variable)
    )
    condition = literal(" AND ".join(parts))
    condition = " & ".join([f"F.expr({condition})", *in_clause])
    writer.assign(name, f"{sides[0]}.join({sides[1]}, {condition}, {literal(SPARK_HOW[spec.how])})")
    if spec.where is not None:
        left_struct = ", ".join(f"F.col({literal(prefix[0] + c)})" for c in left.schema)
        right_struct = ", ".join(f"F.col({literal(prefix[1] + c)})" for c in right.schema)
        udf = f"pair_predicate(steps[{literal(step.name)}].spec.where, {literal(left.schema)}, {literal(right.schema)})"
        writer.comment("the condition on the pair: a filter after the inner join (the same rows)")
        writer.assign(name, f"{name}.filter({udf}(F.struct({left_struct}), F.struct({right_struct})))")
    if spec.how == "left_semi":
        if left.windows:  # the carried window structs end here
            writer.assign(name, f"{name}.select({', '.join(literal(c) for c in left.schema)})")
        return Frame(name, dict(left.schema), left.event_time, left.lost)
    schema = dict(left.schema) | {c: k for c, k in right.schema.items() if not (spec.using and c in spec.right_keys)}
    if spec.using:
        columns = []
        for column in left.schema:
            if column not in spec.left_keys:
                columns.append(literal(f"L.{column}"))
            elif spec.how == "right_outer":
                columns.append(f"F.col({literal('R.' + column)}).alias({literal(column)})")
            elif spec.how == "full_outer":
                columns.append(f'F.coalesce("L.{column}", "R.{column}").alias({literal(column)})')
            else:
                columns.append(literal(f"L.{column}"))
        columns += [literal(f"R.{c}") for c in right.schema if c not in spec.right_keys]
        writer.assign(name, f"{name}.select({', '.join(columns)})")
    elif left.windows or right.windows:  # the carried window structs end here
        writer.assign(name, f"{name}.select({', '.join(literal(c) for c in schema)})")
    event_time = tuple(dict.fromkeys((*left.event_time, *right.event_time)))
    return Frame(name, schema, event_time, left.lost | right.lost)
