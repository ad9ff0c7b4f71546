"""Lesson ``output-modes``: the same windows in Spark's three output modes, and what each one emits when.

The windows are tumbling, per key, with a count and a user-defined aggregate, ``spread`` (the largest value
minus the smallest). What changes is only *when* a window's row is emitted and what happens to its state:

- **append**: once, in the first batch whose watermark is at or past the window's end; then the window is
  removed. Nothing is emitted before the window is final, so results come late but never change.
- **update**: every batch, the windows that batch changed, with their full value; a window is removed, without
  another row, once the watermark passes its end.
- **complete**: every batch, every window ever seen; nothing is removed and no row is ever late: a row
  arriving long after its window is still counted.

Events: ``ts``, ``key`` (a string), ``value`` (a number). Parameters: ``mode``, ``size``, ``delay``.

>>> for mode in ("append", "update", "complete"):
...     print(mode, [len(batch.rows) for batch in LESSON.run(params={"mode": mode}).output()])
append [0, 0, 2, 0, 0, 2]
update [2, 3, 3, 1, 1, 0]
complete [2, 4, 5, 5, 6]
"""

from __future__ import annotations

from ministream.core.aggregates import AggregateFunction, Count, Custom
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.window_scripts import random_window_script
from ministream.time.units import format_duration
from ministream.time.windows import Tumbling

DEFAULT_SCRIPT = [
    [event(1, "a", 2), event(2, "b", 5), event(4, "a", 6)],
    [event(8, "a", 1), event(16, "a", 4), event(11, "b", 3)],
    [event(9, "a", 9), event(17, "b", 2), event(22, "a", 3)],
    [event(3, "a", 7), event(14, "b", 1)],
    [event(30, "a", 1)],
]


def spread(column: str) -> AggregateFunction:
    """A user-defined aggregate: the largest value of ``column`` minus the smallest, from a ``(min, max)``
    accumulator (Spark computes the same with ``max(col) - min(col)``)."""
    return Custom(
        column,
        create=lambda: None,
        add=lambda acc, v: (v, v) if acc is None else (min(acc[0], v), max(acc[1], v)),
        result=lambda acc: None if acc is None else acc[1] - acc[0],
    )


def pipeline(script, params) -> Dataflow:
    """ministream: per key and per tumbling window a count and the spread of ``value``."""
    flow = Dataflow("output-modes")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window("per_window", Tumbling(params["size"]), count=Count(), spread=spread("value"))
    windows.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the same windowed aggregate; the output mode is the query's (``writeStream.outputMode``)."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    windows = events.groupBy("key", F.window("ts", format_duration(params["size"]))).agg(
        F.count("*").alias("count"), (F.max("value") - F.min("value")).alias("spread")
    )
    return windows.select(
        "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count", "spread"
    )


LESSON = Lesson(
    name="output-modes",
    title="Output modes: the same windows in append, update and complete mode",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "mode",
            "update",
            "output mode: append, update or complete",
            kind="choice",
            choices=("append", "update", "complete"),
        ),
        Param("size", 10_000, "the length of each window"),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
    ],
    output_mode=lambda params: params["mode"],
    doc=__doc__,
    random_script=random_window_script,
)
