"""Frames: what the compiler knows of one step's output while it writes the twin.

A :class:`Frame` is the variable that holds a step's DataFrame in the generated source, the Spark schema of
its rows, and the columns that carry Spark's event-time metadata (the column a ``withWatermark`` marked, or a
window computed from it). Spark's watermark follows a column, not a stream: a column rebuilt by a Python
function is a new column without that mark, which is why the compiler tracks them.

>>> frame = Frame("events", {"ts": "TIMESTAMP", "key": "STRING"}, ())
>>> frame.with_time("ts").event_time
('ts',)
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

    def with_time(self, *columns: str) -> Frame:
        """The same frame with more event-time columns."""
        return attrs.evolve(self, event_time=tuple(dict.fromkeys((*self.event_time, *columns))))


@attrs.define
class Compilation:
    """The state of one compilation: the writer, the Spark settings gathered so far, the query's output mode
    and every step's frame once written."""

    writer: SourceWriter
    output_mode: str
    conf: dict = attrs.field(factory=dict)
    frames: dict[str, Frame] = attrs.field(factory=dict)
    aggregated: bool = False
    """Whether an aggregation ran before the step being compiled (Spark sorts only after one)."""


StepCompiler = Callable[[Step, list[Frame], Compilation], Frame]
"""What each step family's module provides per spec class: the step, its inputs' frames, the compilation."""
