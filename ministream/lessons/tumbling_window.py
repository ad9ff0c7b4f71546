"""Lesson ``tumbling-window``: a count, a sum and a maximum per key and per 10-second window, emitted once,
when the watermark says the window is complete.

A *tumbling window* cuts event time into back-to-back intervals ``[start, end)`` aligned on the epoch; each
event falls in exactly one. A *watermark* (the largest event time seen minus a delay) tells the engine how far
event time has surely got: a window whose end is at or before the watermark can get no more rows, so in
**append** mode it is emitted once and its state removed. That is why results look one batch late: batch k's
watermark comes from the rows of the batches before it.

Events: ``ts``, ``key`` (a string), ``value`` (a number). Parameters: ``size`` of the windows, ``delay`` of the
watermark.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["key"], r["window_start"] % 60_000, r["count"]) for r in batch.rows))
0 []
1 []
2 []
3 [('a', 0, 2), ('a', 10000, 2), ('b', 0, 2)]
4 [('a', 20000, 1)]
"""

from __future__ import annotations

from ministream.core.aggregates import Count, Max, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.window_scripts import random_window_script
from ministream.time.units import format_duration
from ministream.time.windows import Tumbling

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(2, "b", 10), event(3, "a", 3)],
    [event(12, "a", 5), event(4, "b", 2)],
    [event(25, "a", 7), event(11, "a", 4)],
    [event(40, "b", 1)],
]


def pipeline(script, params) -> Dataflow:
    """ministream: a watermark on ``ts``, then per key and per tumbling window a count, a sum and a max."""
    flow = Dataflow("tumbling-window")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window(
        "per_window", Tumbling(params["size"]), count=Count(), sum=Sum("value"), max=Max("value")
    )
    windows.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``withWatermark``, then ``groupBy(key, window(ts, size)).agg(...)``, window bounds as columns."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    windows = events.groupBy("key", F.window("ts", format_duration(params["size"]))).agg(
        F.count("*").alias("count"), F.sum("value").alias("sum"), F.max("value").alias("max")
    )
    return windows.select(
        "key",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "count",
        "sum",
        "max",
    )


LESSON = Lesson(
    name="tumbling-window",
    title="Tumbling windows: a count, a sum and a max per key and per window, emitted once the watermark passes",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("size", 10_000, "the length of each window"),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_window_script,
)
