"""Column types per step: what the compiler knows of the rows between two steps, as Spark sees them.

A Spark DataFrame has a schema; ministream's rows are dicts. The compiler follows the columns and their Spark
types from the sources (``ts TIMESTAMP`` then the lesson's fields) through each step, because several steps
need them: a Python function run as a UDF must declare the struct it returns, a union must line up its inputs,
and a column that holds event time is a ``TIMESTAMP`` in Spark but an int of milliseconds in ministream (the
UDF wrappers of ``runtime.py`` convert at the border).

>>> from ministream.core.events import Field
>>> schema = source_schema([Field("key", str), Field("value", float)])
>>> schema
{'ts': 'TIMESTAMP', 'key': 'STRING', 'value': 'DOUBLE'}
>>> ddl(schema)
'ts TIMESTAMP, key STRING, value DOUBLE'
>>> infer_type(3), infer_type("a"), infer_type(None)
('BIGINT', 'STRING', None)
"""

from __future__ import annotations

from ministream.core.ddl import Schema, ddl, ddl_schema
from ministream.core.events import Field

__all__ = ["Schema", "ddl", "ddl_schema", "source_schema"]  # Schema, ddl and ddl_schema are core/ddl.py's

FIELD_TYPES = {str: "STRING", float: "DOUBLE", int: "BIGINT"}
"""A lesson field's kind as a Spark type (the same table as the lessons' source schema)."""

TIMESTAMP = "TIMESTAMP"

SPARK_TYPES = ("STRING", "DOUBLE", "BIGINT", "INT", "BOOLEAN", TIMESTAMP)
"""The types a declaration may name."""

SAMPLE_VALUES = {"STRING": "a", "DOUBLE": 1.0, "BIGINT": 1, "INT": 1, "BOOLEAN": True, TIMESTAMP: 1_704_103_200_000}
"""One value per type: the sample row a Python function is called on to find what it returns."""


def source_schema(fields: list[Field]) -> Schema:
    """The columns of a source: ``ts`` (event time) and the fields."""
    return {"ts": TIMESTAMP, **{field.name: FIELD_TYPES[field.kind] for field in fields}}


def sample_row(schema: Schema) -> dict:
    """A row with one made-up value per column (see :data:`SAMPLE_VALUES`; ``None`` for other types)."""
    return {name: SAMPLE_VALUES.get(kind) for name, kind in schema.items()}


def infer_type(value) -> str | None:
    """The Spark type of a Python value a function returned (``None``: a null says nothing)."""
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    if isinstance(value, str):
        return "STRING"
    return None


def infer_schema(row: dict, times: set[str]) -> tuple[Schema, list[str]]:
    """The schema of a row a function returned for the sample row, and the columns whose type it cannot tell
    (a null, a list...). An int in a column that a later step reads as event time (``times``) is a
    ``TIMESTAMP``: ministream's event times are ints of milliseconds. (Any other int is a ``BIGINT``: an event
    time kept as a plain int collects to the same milliseconds.)

    >>> infer_schema({"ts": 5, "n": 2, "x": None}, {"ts"})
    ({'ts': 'TIMESTAMP', 'n': 'BIGINT'}, ['x'])
    """
    schema: Schema = {}
    unknown = []
    for name, value in row.items():
        kind = infer_type(value)
        if kind == "BIGINT" and name in times:
            kind = TIMESTAMP
        if kind is None:
            unknown.append(name)
        else:
            schema[name] = kind
    return schema, unknown
