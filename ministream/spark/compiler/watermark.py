"""The watermark step: ``with_watermark(column, delay)`` is Spark's ``withWatermark(column, delay)``.

Spark marks the column with the delay; every stateful operator downstream reads the watermark from that mark.
The watermark policy for several watermarked inputs (``min`` or ``max``) is a query setting,
``spark.sql.streaming.multipleWatermarkPolicy``, which the compiler returns in the twin's ``conf``.

>>> from ministream.core.steps import Step, WatermarkSpec
>>> from ministream.spark.compiler.frames import Compilation, Frame
>>> from ministream.spark.compiler.writer import SourceWriter
>>> compilation = Compilation(SourceWriter("f"), "append")
>>> step = Step("late_by_5s", WatermarkSpec("ts", 5_000))
>>> compile_watermark(step, [Frame("events", {"ts": "TIMESTAMP"})], compilation).event_time
('ts',)
>>> compilation.writer.body[-1]
'    late_by_5s = events.withWatermark("ts", "5 seconds")'
"""

from __future__ import annotations

from ministream.core.steps import Step, WatermarkSpec
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.refusals import refuse
from ministream.spark.compiler.schema import TIMESTAMP
from ministream.spark.compiler.writer import literal
from ministream.time.units import format_duration


def compile_watermark(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``withWatermark``: the column must be a ``TIMESTAMP`` in Spark (an int column is refused there)."""
    spec = step.spec
    assert isinstance(spec, WatermarkSpec)
    (frame,) = inputs
    kind = frame.schema.get(spec.column)
    if kind != TIMESTAMP:
        raise refuse(
            step.name,
            step.kind,
            f"Spark's withWatermark needs a TIMESTAMP column and {spec.column!r} is {kind or 'missing'} "
            "('EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE')",
            f"declare {spec.column!r} as TIMESTAMP in the step that makes it",
        )
    name = compilation.writer.name_of(step.name)
    delay = literal(format_duration(spec.delay))
    compilation.writer.assign(name, f"{frame.variable}.withWatermark({literal(spec.column)}, {delay})")
    return Frame(name, dict(frame.schema), (spec.column,))
