"""Frames: what the compiler knows of one step's output while it writes the twin.

A :class:`Frame` is the variable that holds a step's DataFrame in the generated source, the Spark schema of
its rows, and the columns that carry Spark's event-time metadata (the column a ``withWatermark`` marked, or a
window computed from it). Spark's watermark follows a column, not a stream: a column rebuilt by a Python
function is a new column without that mark, which is why the compiler tracks them.

>>> frame = Frame("windowed", {"key": "STRING", "start": "TIMESTAMP", "end": "TIMESTAMP"}, ("start", "end"),
...               windows={"_window_start_end": ("start", "end")})
>>> frame.structs_for(["key", "start", "end"]), frame.columns()
(['key', '_window_start_end'], ['key', 'start', 'end', '_window_start_end'])
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.core.steps import Step
from ministream.spark.compiler.schema import Schema
from ministream.spark.compiler.writer import SourceWriter


@attrs.frozen
class Frame:
    """One step's output in the twin: its ``variable``, its ``schema``, its ``event_time`` columns, and the
    columns that ministream still takes as event time but that a Python function rebuilt in Spark, each with
    the step that did (``lost``)."""

    variable: str
    schema: Schema
    event_time: tuple[str, ...] = ()
    lost: dict[str, str] = attrs.field(factory=dict)
    opaque: str | None = None
    """The process step whose output this is, when its columns are declared as a StructType, which only Spark
    reads (``process.py``)."""
    windows: dict[str, tuple[str, str]] = attrs.field(factory=dict)
    """Window structs the DataFrame carries besides the schema's columns: ``{struct column: (start column, end
    column)}``. Spark's watermark mark stays on the struct made by ``window()``, not on its bounds taken out
    as columns, so a step keyed by both bounds groups, joins or deduplicates by the struct instead."""

    def renamed(self, variable: str) -> Frame:
        """The same rows under another variable (a step that keeps every column: filter, dedup, sort)."""
        return attrs.evolve(self, variable=variable)

    def window_of(self, keys) -> dict[str, str]:
        """The window structs whose two bounds are both among ``keys``: ``{struct: ...}`` mapping each bound
        column to the struct's field (``{"window_start": "_window_start_end.start", ...}``)."""
        fields = {}
        for struct, (start, end) in self.windows.items():
            if start in keys and end in keys:
                fields |= {start: f"{struct}.start", end: f"{struct}.end"}
        return fields

    def structs_for(self, keys) -> list[str]:
        """``keys`` with the bounds of a carried window replaced by its struct (once), in order."""
        out: list[str] = []
        bounds = {bound: struct for struct, pair in self.windows.items() for bound in pair if set(pair) <= set(keys)}
        for key in keys:
            column = bounds.get(key, key)
            if column not in out:
                out.append(column)
        return out

    def columns(self) -> list[str]:
        """Every column of the DataFrame: the schema's, then the carried window structs."""
        return [*self.schema, *self.windows]


@attrs.define
class Compilation:
    """The state of one compilation: the writer, the Spark settings gathered so far, the query's output mode
    and every step's frame once written."""

    writer: SourceWriter
    output_mode: str
    conf: dict = attrs.field(factory=dict)
    frames: dict[str, Frame] = attrs.field(factory=dict)
    times_downstream: dict[str, set[str]] = attrs.field(factory=dict)
    """For each step, the columns later steps read as event time (see ``__init__._times_downstream``)."""
    window_times_downstream: set[str] = attrs.field(factory=set)
    """The steps a ``with_window_time`` comes after (see ``__init__._window_times_downstream``)."""
    aggregated: bool = False
    """Whether an aggregation ran before the step being compiled (Spark sorts only after one)."""


StepCompiler = Callable[[Step, list[Frame], Compilation], Frame]
"""What each step family's module provides per spec class: the step, its inputs' frames, the compilation."""
