"""The helpers a compiled twin calls: a ministream step's Python function wrapped as a Spark UDF.

ministream's functions take and return rows as dicts whose event times are ints of milliseconds; Spark gives
a UDF a ``Row`` whose ``TIMESTAMP`` columns are ``datetime`` values and expects a tuple (a struct) back. Each
wrapper converts at that border, in both directions, and checks that a returned row has the declared columns:
a row with another column is an error naming the step and the row, never silently cut.

>>> to_ms(_dt.datetime(2024, 1, 1, 10, 0, 5, 250_000, tzinfo=_dt.timezone.utc))
1704103205250
>>> from_ms(1704103205250)
datetime.datetime(2024, 1, 1, 10, 0, 5, 250000, tzinfo=datetime.timezone.utc)
"""

from __future__ import annotations

import datetime as _dt

from ministream.spark.compiler.schema import TIMESTAMP, Schema, ddl


def to_ms(value: _dt.datetime) -> int:
    """A Spark timestamp as ministream's int of milliseconds. A naive datetime is in the Python worker's
    local zone (how PySpark hands timestamps to a UDF), so ``timestamp()`` reads it back exactly."""
    whole = value.replace(microsecond=0).timestamp()
    return int(whole) * 1000 + value.microsecond // 1000


def from_ms(ms: int) -> _dt.datetime:
    """ministream's milliseconds as a UTC datetime for Spark."""
    return _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=ms)


def to_row(values, schema: Schema) -> dict:
    """A Spark row (or struct) of these columns as a ministream row."""
    row = values.asDict() if hasattr(values, "asDict") else dict(values)
    return {
        name: (to_ms(row[name]) if kind == TIMESTAMP and row[name] is not None else row[name])
        for name, kind in schema.items()
    }


def from_row(step: str, row: dict, schema: Schema) -> tuple:
    """A ministream row as a Spark struct of the declared columns (missing columns are null)."""
    if not isinstance(row, dict):
        raise TypeError(f"step {step!r}: the function returned {row!r}, not a row (a dict)")
    extra = [name for name in row if name not in schema]
    if extra:
        raise ValueError(
            f"step {step!r}: the row {row!r} has columns {extra} that the step's output ({ddl(schema)}) does not "
            "declare"
        )
    return tuple(
        from_ms(row.get(name)) if kind == TIMESTAMP and row.get(name) is not None else row.get(name)
        for name, kind in schema.items()
    )


def _udf(function, return_type: str):
    from pyspark.sql import functions as F

    return F.udf(function, return_type)


def map_rows(step: str, fn, before: Schema, after: Schema):
    """``map``: a UDF from a struct of ``before`` to a struct of ``after`` (select ``"out.*"`` after it)."""
    return _udf(lambda values: from_row(step, fn(to_row(values, before)), after), f"struct<{_struct(after)}>")


def flat_map_rows(step: str, fn, before: Schema, after: Schema):
    """``flat_map``: a UDF from a struct of ``before`` to an array of structs of ``after`` (``inline`` it)."""

    def rows(values):
        return [from_row(step, row, after) for row in fn(to_row(values, before))]

    return _udf(rows, f"array<struct<{_struct(after)}>>")


def row_value(fn, columns: Schema, return_type: str):
    """A value computed from a row (the key of ``key_by(function)``): a UDF of a struct of the columns."""
    return _udf(lambda values: fn(to_row(values, columns)), return_type)


def row_predicate(fn, columns: Schema):
    """``filter`` or a one-sided join condition: a boolean UDF of a struct of the columns it reads."""
    return _udf(lambda values: bool(fn(to_row(values, columns))), "boolean")


def pair_predicate(fn, left: Schema, right: Schema):
    """A join condition on a pair of rows: a boolean UDF of the left struct and the right struct."""
    return _udf(lambda one, other: bool(fn(to_row(one, left), to_row(other, right))), "boolean")


def fold_values(function, result_type: str, schema: Schema | None = None):
    """A custom aggregate's last step: a UDF that folds the list ``collect_list`` kept with the function's
    ``create``, ``add`` and ``result``: values of a column, or, for a whole-row aggregate, rows of ``schema``
    kept as structs."""

    def fold(values):
        accumulator = function.create()
        for value in values:
            accumulator = function.add(accumulator, value if schema is None else to_row(value, schema))
        return function.result(accumulator)

    return _udf(fold, result_type)


def session_gap(assigner, schema: Schema):
    """A per-row session gap (``Session(lambda row: ...)``) as a UDF giving Spark's gap text
    (``"5000 milliseconds"``), or null where the function gives none (Spark then drops the row, as ministream
    does)."""

    def gap(*values):
        ms = assigner.gap_of(to_row(dict(zip(schema, values)), schema))
        return None if ms is None or ms <= 0 else f"{ms} milliseconds"

    return _udf(gap, "string")


def static_table(spark, rows: tuple[dict, ...], schema: Schema):
    """A stream-static join's fixed table as a (static) DataFrame of these columns."""
    return spark.createDataFrame([from_row("table", row, schema) for row in rows], ddl(schema))


def _struct(schema: Schema) -> str:
    return ", ".join(f"{name}: {kind}" for name, kind in schema.items())


__all__ = [
    "flat_map_rows",
    "fold_values",
    "map_rows",
    "pair_predicate",
    "row_predicate",
    "row_value",
    "session_gap",
    "static_table",
]
