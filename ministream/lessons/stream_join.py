"""Lesson ``stream-join``: ad impressions joined with their clicks, each side kept in state until the time
range and the watermarks say no match can come.

An impression is shown (``impressions``), and maybe clicked a little later (``clicks``); both streams carry
``ad_id`` and ``ts``. The join pairs a click with the impressions of the same ad shown at most ``within``
before it: ``impression_time <= click_time <= impression_time + within``. Either row may arrive first, so
each side waits in state. The watermark of each input (its max event time minus its delay) and the range
bound how long: impressions leave when ``impression_time <= WM - within - 1 ms``, clicks when
``click_time <= WM - 1 ms``; rows at or before the previous batch's watermark are dropped as late.

>>> from ministream.time.units import format_clock
>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["impression_ad"], format_clock(r["impression_time"]),
...                                   format_clock(r["click_time"])) for r in batch.rows))
0 [('a', '10:00:01', '10:00:05')]
1 [('b', '10:00:02', '10:00:15')]
2 [('a', '10:00:40', '10:00:45'), ('c', '10:00:12', '10:00:20')]
3 [('a', '10:00:40', '10:00:44')]
4 [('d', '10:01:00', '10:01:01')]
5 []
"""

from __future__ import annotations

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param, event
from ministream.operators.stream_join import TimeRange


def ad(second: float, ad_id: str) -> dict:
    """An impression or a click of ``ad_id``, ``second`` seconds after 10:00:00 on 2024-01-01 (UTC)."""
    return {"ts": event(second, "")["ts"], "ad_id": ad_id}


DEFAULT_SCRIPT = {
    "impressions": [[ad(1, "a"), ad(2, "b")], [ad(12, "c")], [ad(40, "a")], [ad(50, "b")], [ad(60, "d")]],
    "clicks": [
        [ad(5, "a")],
        [ad(15, "b"), ad(30, "b"), ad(14, "x"), ad(10, "c")],
        [ad(45, "a"), ad(20, "c")],
        [ad(44, "a")],
        [ad(28, "a"), ad(61, "d")],
    ],
}
"""Batch 1: b@30 is 28 s after its impression (too late a click), x@14 has no impression, c@10 comes before
its impression. Batch 4: a@28 is at or before the watermark of batch 3 (30 s): late, dropped."""


def random_script(rng, params, idle: str | None = None) -> dict:
    """Random impressions and clicks (for ``ministream fuzz`` and the fuzz tests): clicks inside, exactly on
    and 1 ms outside the range, late rows on either side, and often one input idle for the first batches.

    >>> import random
    >>> script = random_script(random.Random(1), LESSON.resolve_params())
    >>> sorted(script), len(script["impressions"]) == len(script["clicks"])
    (['clicks', 'impressions'], True)
    """
    within = params.get("within", 20_000)
    length = rng.randint(2, 5)
    idle = idle or rng.choice([None, None, "impressions", "clicks"])
    idle_until = rng.randint(1, length - 1) if idle else 0
    script = {"impressions": [], "clicks": []}
    shown, now = [], BASE_TIME
    for batch in range(length):
        now += rng.choice([0, 1_000, 7_000, 15_000, 30_000])
        impressions = [
            {"ts": now + rng.randint(-3_000, 3_000), "ad_id": rng.choice("abc")} for _ in range(rng.randint(0, 3))
        ]
        clicks = []
        for impression in rng.sample(shown + impressions, min(len(shown + impressions), rng.randint(0, 3))):
            gap = rng.choice([0, within, within + 1, -1, rng.randint(0, within)])
            clicks.append({"ts": impression["ts"] + gap, "ad_id": impression["ad_id"]})
        if rng.random() < 0.3:  # a late row on a random side
            (impressions if rng.random() < 0.5 else clicks).append(
                {"ts": now - rng.choice([15_000, 40_000]), "ad_id": rng.choice("abc")}
            )
        shown += impressions
        script["impressions"].append([] if idle == "impressions" and batch < idle_until else impressions)
        script["clicks"].append([] if idle == "clicks" and batch < idle_until else clicks)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: name each side's columns, watermark both, join on the ad within the time range."""
    flow = Dataflow("stream-join")
    impressions = (
        flow.source("impressions", ScriptedSource(script["impressions"]))
        .select("impression_columns", impression_ad="ad_id", impression_time="ts")
        .with_watermark("impressions_watermark", "impression_time", params["impression_delay"])
    )
    clicks = (
        flow.source("clicks", ScriptedSource(script["clicks"]))
        .select("click_columns", click_ad="ad_id", click_time="ts")
        .with_watermark("clicks_watermark", "click_time", params["click_delay"])
    )
    joined = impressions.key_by("impression_ad").join(
        "join",
        clicks.key_by("click_ad"),
        how="inner",
        between=TimeRange("impression_time", "click_time", lower=0, upper=params["within"]),
    )
    if params["campaign"] != "all":  # after the join, but Spark runs it below both watermarks
        campaign = params["campaign"]
        joined = joined.filter("campaign", lambda row: row["impression_ad"] == campaign, columns="impression_ad")
    joined.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the same renames and watermarks, and ``join`` with an equality plus a time range."""
    from pyspark.sql import functions as F

    impressions = (
        inputs["impressions"]
        .select(F.col("ad_id").alias("impression_ad"), F.col("ts").alias("impression_time"))
        .withWatermark("impression_time", f"{params['impression_delay']} milliseconds")
    )
    clicks = (
        inputs["clicks"]
        .select(F.col("ad_id").alias("click_ad"), F.col("ts").alias("click_time"))
        .withWatermark("click_time", f"{params['click_delay']} milliseconds")
    )
    joined = impressions.join(
        clicks,
        F.expr(f"""
        impression_ad = click_ad AND
        click_time >= impression_time AND
        click_time <= impression_time + INTERVAL {params["within"]} MILLISECONDS"""),
        "inner",
    )
    return joined if params["campaign"] == "all" else joined.filter(F.col("impression_ad") == params["campaign"])


LESSON = Lesson(
    name="stream-join",
    title="Stream-stream join: impressions and their clicks, kept in state until the time range expires",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("ad_id", str)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("within", 20_000, "a click matches an impression shown at most this long before it"),
        Param("impression_delay", 10_000, "watermark delay of the impressions"),
        Param("click_delay", 10_000, "watermark delay of the clicks"),
        Param(
            "campaign",
            "all",
            "all, or one ad: keep only its pairs, with a filter after the join (Spark runs it below both "
            "watermarks, so that only that ad's rows move them)",
            kind="choice",
            choices=("all", "a", "b", "c", "d"),
        ),
    ],
    inputs=("impressions", "clicks"),
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
