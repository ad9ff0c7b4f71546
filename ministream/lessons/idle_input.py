"""Lesson ``idle-input``: an input without data holds the join's watermark at 0 (policy ``min``), and what
policy ``max`` does instead.

A query with two watermarked inputs has one watermark, combined from both (Spark's
``spark.sql.streaming.multipleWatermarkPolicy``). With ``min``, the default, an input that has not produced a
row yet counts as 0: here the clicks are idle for three batches, so the watermark stays at 1970, nothing
leaves the join state and no null-padded row can appear, however far the impressions go. That is the most
reported watermark surprise ("my outer join emits nothing!").

With ``max`` the watermark follows the impressions alone: state is evicted on time, but the clicks, which
were slower, are now judged against the impressions' watermark: click ``a`` arrives late and is dropped, and
impression ``a`` comes out padded with nulls although it was clicked. ``min`` waits for the slowest input
and is correct; ``max`` does not wait and loses data.

>>> from ministream.time.units import format_clock
>>> for policy in ("min", "max"):
...     print(policy, [format_clock(batch.watermark) for batch in LESSON.run(params={"policy": policy}).output()])
min ['00:00:00', '00:00:00', '00:00:00', '00:00:00', '10:00:06', '10:00:35']
max ['00:00:00', '09:59:52', '10:00:05', '10:00:20', '10:00:35', '10:00:40']
"""

from __future__ import annotations

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param
from ministream.lessons.stream_join import ad
from ministream.lessons.stream_join import random_script as random_ads
from ministream.operators.stream_join import TimeRange

DEFAULT_SCRIPT = {
    "impressions": [[ad(1, "a"), ad(2, "b")], [ad(15, "c")], [ad(30, "d")], [ad(45, "e")], []],
    "clicks": [[], [], [], [ad(4, "a"), ad(16, "c")], [ad(50, "e")]],
}
"""The clicks send nothing for three batches, then clicks on a, c and e."""


def random_script(rng, params) -> dict:
    """Random impressions and clicks in which one input is always idle for the first batches."""
    return random_ads(rng, params, idle=rng.choice(["impressions", "clicks"]))


def pipeline(script, params) -> Dataflow:
    """ministream: a left outer join of impressions with clicks, both watermarked."""
    flow = Dataflow("idle-input")
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
        how="left_outer",
        between=TimeRange("impression_time", "click_time", lower=0, upper=params["within"]),
    )
    joined.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the same left outer join; the policy is the session setting
    ``spark.sql.streaming.multipleWatermarkPolicy`` (set by the lesson from ``--param policy``)."""
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
    return impressions.join(
        clicks,
        F.expr(f"""
        impression_ad = click_ad AND
        click_time >= impression_time AND
        click_time <= impression_time + INTERVAL {params["within"]} MILLISECONDS"""),
        "left_outer",
    )


LESSON = Lesson(
    name="idle-input",
    title="An idle input holds a join's watermark at 0 under the min policy; max does not wait, and drops",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("ad_id", str)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "policy",
            "min",
            "how the two inputs' watermarks combine: min (wait for the slowest) or max",
            kind="choice",
            choices=("min", "max"),
        ),
        Param("within", 20_000, "a click matches an impression shown at most this long before it"),
        Param("delay", 10_000, "watermark delay of both inputs"),
    ],
    inputs=("impressions", "clicks"),
    output_mode="append",
    random_script=random_script,
    watermark_policy=lambda params: params["policy"],
    doc=__doc__,
)
