"""A schema written as Spark DDL text (``"key STRING, count BIGINT"``), read column by column.

A process step declares the rows its processor returns this way (``output_schema``), and Spark needs it; the
plan reads the column names from it too (an ``event_time_column`` must be one of them), and the Spark compiler
the types. Only the columns are split out: the types stay as written, and Spark checks them.

>>> ddl_schema("key STRING, outputEventTime TIMESTAMP, count INT")
{'key': 'STRING', 'outputEventTime': 'TIMESTAMP', 'count': 'INT'}
>>> ddl({'ts': 'TIMESTAMP', 'key': 'STRING'})
'ts TIMESTAMP, key STRING'
"""

from __future__ import annotations

Schema = dict[str, str]
"""``{column: Spark SQL type}`` in column order: ``{"ts": "TIMESTAMP", "key": "STRING"}``."""


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
