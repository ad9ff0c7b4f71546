"""Lesson ``outer-join``: the impressions nobody clicked, and why their null-padded rows wait.

A left outer join of impressions with clicks emits, besides the matched pairs, every impression that was
never clicked, with nulls for the click columns. But "never clicked" is only known once no click can come
any more: when the impression leaves the join state, that is when its time is at or before the left state
watermark ``WM - within - 1 ms``. So the null-padded row appears batches after the impression, in the batch
whose watermark evicts it (often a no-data batch at the end), and never earlier.

``how`` switches to ``right_outer`` (clicks without an impression), ``full_outer`` (both) or ``left_semi``
(each clicked impression once, with no click columns).

``window`` adds a 10-second window per ad over the joined rows' impression time: ``count`` counts them,
``max`` keeps the latest impression time. Under ``max`` alone the join can change nothing in the result, and
Spark's optimizer runs the query without it (``core/outer_join_elimination.py``): the clicks then move no
watermark, and under the ``min`` ``policy`` no window ever closes; under ``max`` the impressions' watermark
closes them, each impression's window without waiting for the join.

>>> from ministream.time.units import format_clock
>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["impression_ad"], format_clock(r["impression_time"]),
...                                   r["click_ad"]) for r in batch.rows))
0 [('a', '10:00:01', 'a')]
1 [('c', '10:00:12', 'c')]
2 []
3 [('e', '10:00:45', 'e')]
4 [('b', '10:00:02', None)]
5 []

Impressions d and f are still waiting when the script ends: a stream has no end that would flush them.
"""

from __future__ import annotations

from ministream.core.aggregates import Count, Max
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param
from ministream.lessons.stream_join import ad, random_script
from ministream.operators.stream_join import TimeRange
from ministream.time.windows import Tumbling

DEFAULT_SCRIPT = {
    "impressions": [[ad(1, "a"), ad(2, "b")], [ad(12, "c")], [ad(30, "d")], [ad(45, "e")], [ad(60, "f")]],
    "clicks": [[ad(5, "a")], [ad(20, "c")], [ad(33, "x")], [ad(47, "e")], [ad(62, "g")]],
}
"""Impressions b, d and f are never clicked; clicks x and g have no impression."""


def pipeline(script, params) -> Dataflow:
    """ministream: the stream-join pipeline with ``how`` set to an outer (or semi) join."""
    flow = Dataflow("outer-join")
    impressions = (
        flow.source("impressions", ScriptedSource(script["impressions"]))
        .select("impression_columns", impression_ad="ad_id", impression_time="ts")
        .with_watermark("impressions_watermark", "impression_time", params["delay"])
    )
    clicks = (
        flow.source("clicks", ScriptedSource(script["clicks"]))
        .select("click_columns", click_ad="ad_id", click_time="ts")
        .with_watermark("clicks_watermark", "click_time", params["delay"])
    )
    joined = impressions.key_by("impression_ad").join(
        "join",
        clicks.key_by("click_ad"),
        how=params["how"],
        between=TimeRange("impression_time", "click_time", lower=0, upper=params["within"]),
    )
    if params["window"] == "none":
        joined.sink("output", CollectingSink())
        return flow
    aggregate = {"count": {"impressions": Count()}, "max": {"latest_time": Max("impression_time")}}[params["window"]]
    per_minute = joined.key_by("impression_ad").window(
        "per_minute", Tumbling("10 seconds"), column="impression_time", **aggregate
    )
    per_minute.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the same join with ``how`` = ``left_outer``, ``right_outer``, ``full_outer`` or
    ``left_semi``."""
    from pyspark.sql import functions as F

    impressions = (
        inputs["impressions"]
        .select(F.col("ad_id").alias("impression_ad"), F.col("ts").alias("impression_time"))
        .withWatermark("impression_time", f"{params['delay']} milliseconds")
    )
    clicks = (
        inputs["clicks"]
        .select(F.col("ad_id").alias("click_ad"), F.col("ts").alias("click_time"))
        .withWatermark("click_time", f"{params['delay']} milliseconds")
    )
    joined = impressions.join(
        clicks,
        F.expr(f"""
        impression_ad = click_ad AND
        click_time >= impression_time AND
        click_time <= impression_time + INTERVAL {params["within"]} MILLISECONDS"""),
        params["how"],
    )
    if params["window"] == "none":
        return joined
    aggregate = {"count": F.count("*").alias("impressions"), "max": F.max("impression_time").alias("latest_time")}
    per_minute = joined.groupBy("impression_ad", F.window("impression_time", "10 seconds")).agg(
        aggregate[params["window"]]
    )
    return per_minute.select(
        "impression_ad",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        {"count": "impressions", "max": "latest_time"}[params["window"]],
    )


LESSON = Lesson(
    name="outer-join",
    title="Outer joins: unmatched rows appear, padded with nulls, only when the watermark evicts them",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("ad_id", str)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "how",
            "left_outer",
            "left_outer, right_outer, full_outer or left_semi",
            kind="choice",
            choices=("left_outer", "right_outer", "full_outer", "left_semi"),
        ),
        Param("within", 20_000, "a click matches an impression shown at most this long before it"),
        Param("delay", 10_000, "watermark delay of both inputs"),
        Param(
            "window",
            "none",
            "none, count or max: a 10-second window per ad over the joined rows (max alone: Spark removes the join)",
            kind="choice",
            choices=("none", "count", "max"),
        ),
        Param("policy", "min", "the watermark policy: min or max", kind="choice", choices=("min", "max")),
    ],
    watermark_policy=lambda params: params["policy"],
    inputs=("impressions", "clicks"),
    output_mode="append",
    random_script=random_script,
    doc=__doc__,
)
