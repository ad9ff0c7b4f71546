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

from ministream.core.events import Field

Schema = dict[str, str]
"""``{column: Spark SQL type}`` in column order: ``{"ts": "TIMESTAMP", "key": "STRING"}``."""

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


def ddl(schema: Schema) -> str:
    """The schema as Spark's DDL text (``"ts TIMESTAMP, key STRING"``), what ``StructType.fromDDL`` and UDF return
    types accept."""
    return ", ".join(f"{name} {kind}" for name, kind in schema.items())


def ddl_schema(text: str) -> Schema:
    """A schema declared as Spark DDL text (a process step's ``output_schema``, an input's), column by column.

    The columns are split at the commas outside ``<...>`` and ``(...)``, so a nested type stays whole; each is a
    name (back-quoted or not) and its type, in upper case (a nested type as written: its fields' names are
    names). Only the columns are read: the types go back to Spark as they are, which checks them. A column that
    is not ``name type`` is a ``ValueError``.

    >>> ddl_schema("key STRING, pair STRUCT<a: INT, b: INT>, `n` bigint, price DECIMAL(10, 2)")
    {'key': 'STRING', 'pair': 'STRUCT<a: INT, b: INT>', 'n': 'BIGINT', 'price': 'DECIMAL(10, 2)'}
    """
    schema: Schema = {}
    depth, start = 0, 0
    for at, char in enumerate(text + ","):
        if char in "<(":
            depth += 1
        elif char in ">)":
            depth -= 1
        elif char == "," and depth == 0:
            column = text[start:at].strip()
            start = at + 1
            if column.startswith("`"):
                name, _, kind = column[1:].partition("`")
            else:
                name, _, kind = column.partition(" ")
            if not name or not kind.strip():
                raise ValueError(f"{column!r} in the schema {text!r} is not a column and its type ('key STRING')")
            kind = kind.strip()
            schema[name] = kind if "<" in kind else kind.upper()
    return schema


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
