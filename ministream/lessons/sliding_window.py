"""Lesson ``sliding-window``: per key, a count and an average over 10-second windows that start every 5 seconds.

*Sliding windows* overlap: a window of ``size`` starts every ``slide``, so each event belongs to
``size / slide`` windows (two here) and is counted in each. Window starts are aligned on the epoch, shifted
by an ``offset`` when one is given (Spark's ``startTime``): with ``offset`` 2 seconds the windows start at
:02, :07, :12...

The watermark closes each window separately, by its own end: an old event can still count in its later
window while its earlier window is already closed. In the default events, ``a`` at :08 arrives in the last
batch: too late for ``[:00, :10)``, it still counts in ``[:05, :15)``.

Events: ``ts``, ``key`` (a string), ``value`` (a number). Parameters: ``size``, ``slide``, ``offset``,
``delay``.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["key"], r["window_start"] % 60_000 // 1000, r["count"]) for r in batch.rows))
0 []
1 []
2 [('a', 55, 2), ('b', 55, 2)]
3 [('a', 0, 4), ('b', 0, 2)]
4 [('a', 5, 4)]
"""

from __future__ import annotations

from ministream.core.aggregates import Avg, Count
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.window_scripts import random_window_script
from ministream.time.units import format_duration
from ministream.time.windows import Sliding

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(2, "b", 10), event(3, "a", 3)],
    [event(7, "a", 5), event(4, "b", 2), event(12, "a", 4)],
    [event(9, "a", 6), event(18, "a", 2)],
    [event(22, "b", 1)],
    [event(8, "a", 3)],
]


def pipeline(script, params) -> Dataflow:
    """ministream: a watermark on ``ts``, then per key and per sliding window a count and an average."""
    flow = Dataflow("sliding-window")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window(
        "per_window", Sliding(params["size"], params["slide"], offset=params["offset"]), count=Count(), avg=Avg("value")
    )
    windows.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy(key, window(ts, size, slide, startTime)).agg(count, avg)``."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    window = F.window(
        "ts", format_duration(params["size"]), format_duration(params["slide"]), format_duration(params["offset"])
    )
    windows = events.groupBy("key", window).agg(F.count("*").alias("count"), F.avg("value").alias("avg"))
    return windows.select(
        "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count", "avg"
    )


LESSON = Lesson(
    name="sliding-window",
    title="Sliding windows: overlapping windows with a slide and a start offset; each event counts in several",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("size", 10_000, "the length of each window"),
        Param("slide", 5_000, "how often a new window starts (at most the size)"),
        Param("offset", 0, "shifts every window start away from the epoch (Spark's startTime)", signed=True),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_window_script,
)
