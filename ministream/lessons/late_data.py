"""Lesson ``late-data``: which rows the watermark drops, which old rows still count, and why, row by row.

A row is *late* for a window when that window's end is at or before the watermark of the **previous** batch:
``end <= WM_{k-1}``. Spark then drops the row from that window, silently; ministream drops it too, and says so:
every late row is a line in the trace with the rule that dropped it, an entry of ``run.late_rows()``, and a
row of the ``late`` side output (a ministream addition; Spark has no side output).

What the default events show (10-second windows, a 5-second delay):

- an old row still counts when its window is still open (``a`` at :02 in batch 1);
- a row that arrives after the watermark has passed its window's end still counts in the batch where that
  watermark is new, because rows are filtered against the previous batch's watermark (``a`` at :09.999);
- the edge is inclusive: with the watermark at :10, a row at :09 (window end :10) is dropped, a row at :10
  (window end :20) counts.

Events: ``ts``, ``key`` (a string), ``value`` (a number). Parameters: ``size``, ``delay``.

>>> run = LESSON.run()
>>> [(late.batch_id, late.row["key"], late.row["ts"] % 60_000) for late in run.late_rows()]
[(3, 'a', 9000), (3, 'b', 4000)]
>>> [len(batch.rows) for batch in run.output("late")]
[0, 0, 0, 2, 0]
"""

from __future__ import annotations

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.window_scripts import random_window_script
from ministream.time.units import format_duration
from ministream.time.windows import Tumbling

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(3, "b", 2), event(7, "a", 3)],
    [event(15, "a", 4), event(2, "a", 5), event(12, "b", 6)],
    [event(9.999, "a", 7)],
    [event(9, "a", 8), event(10, "a", 9), event(4, "b", 10), event(26, "a", 11)],
]


BAD_LINES = [
    '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 1}',
    '{"batch": 0, "ts": "2024-13-01T10:00:03Z", "key": "b", "value": 2}',
    "not json at all",
    '{"batch": 0, "ts": "2024-01-01T10:00:05Z", "value": 3}',
    '{"batch": 0, "ts": "2024-01-01T10:00:06Z", "key": "a", "value": "x"}',
    '{"batch": 1, "ts": "2024-01-01T10:00:15Z", "key": "a", "value": 4}',
]
"""The lines of an events file with four bad ones, one of each kind: a time that is no date, a line that is not
JSON, a missing key, a value that is not a number. ministream sets them aside; Spark's JSON reader reads them
with nulls (``spark/permissive.py``, ``tutorials/your-own-pipeline.md``, "Bad lines")."""


def pipeline(script, params) -> Dataflow:
    """ministream: per key and per tumbling window a count and a sum; the rows too late for their window go
    to the side output ``late``, sunk as ``late``."""
    flow = Dataflow("late-data")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window(
        "per_window", Tumbling(params["size"]), late_rows="late", count=Count(), sum=Sum("value")
    )
    windows.sink("output", CollectingSink())
    windows.side_output("late").sink("late", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the same windowed count and sum; Spark drops the late rows without a trace (its progress
    reports only count them, as ``numRowsDroppedByWatermark``)."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    windows = events.groupBy("key", F.window("ts", format_duration(params["size"]))).agg(
        F.count("*").alias("count"), F.sum("value").alias("sum")
    )
    return windows.select(
        "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count", "sum"
    )


LESSON = Lesson(
    name="late-data",
    title="Late data: the rows a watermark drops, counted and shown, and the old rows that still count",
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
