"""Deduplication: ``drop_duplicates(columns)`` is Spark's ``dropDuplicates(columns)``, and with
``within_watermark`` ``dropDuplicatesWithinWatermark(columns)``; no columns means the whole row. (The plan
already refuses ``within_watermark`` without a watermark, as Spark does.)

>>> from ministream.core.steps import DedupSpec, Step
>>> from ministream.spark.compiler.frames import Compilation, Frame
>>> from ministream.spark.compiler.writer import SourceWriter
>>> compilation = Compilation(SourceWriter("f"), "append")
>>> _ = compile_dedup(Step("unique", DedupSpec(("event_id",))), [Frame("events", {"event_id": "STRING"})], compilation)
>>> compilation.writer.body[-1]
'    unique = events.dropDuplicates(["event_id"])'
"""

from __future__ import annotations

from ministream.core.steps import DedupSpec, Step
from ministream.spark.compiler.frames import Compilation, Frame
from ministream.spark.compiler.writer import literal


def compile_dedup(step: Step, inputs: list[Frame], compilation: Compilation) -> Frame:
    """``dropDuplicates`` or ``dropDuplicatesWithinWatermark``."""
    spec = step.spec
    assert isinstance(spec, DedupSpec)
    (frame,) = inputs
    method = "dropDuplicatesWithinWatermark" if spec.within_watermark else "dropDuplicates"
    name = compilation.writer.name_of(step.name)
    if spec.columns:
        columns = literal(frame.structs_for(spec.columns))
    else:  # the whole row: its schema's columns (a carried window struct repeats two of them)
        columns = literal(list(frame.schema)) if frame.windows else ""
    compilation.writer.assign(name, f"{frame.variable}.{method}({columns})")
    return frame.renamed(name)
