"""Lesson ``chained-aggregations``: an hourly sum per driver, then the top driver of each hour: two stateful
steps in one query, and how the watermark passes from the first to the second.

Trips (``driver``, ``fare``, ``ts``) arrive in micro-batches. The first step sums the fares per driver and per
hour (a tumbling window, append mode: each hour's sums come out once the watermark passes the hour's end).
``with_window_time`` gives each sum the time of its hour, ``window_end - 1 ms`` (Spark's ``window_time``), and
the second step groups those rows by the hour again and keeps the largest ``(total, driver)`` (Spark's
``max(struct(total, driver))``: the largest total, ties going to the larger driver name).

Each stateful step runs with its own watermarks (``models/watermark_propagation.py``). An aggregation passes
its input watermark on unchanged, so both steps run batch k with WM_k: the hourly sums that the first step
emits in batch k reach the second step in the same batch, are not late for it (their hour ended after
WM_{k-1}, or they would have come out before), and the second step emits the hour's top driver in that same
batch. Before Spark 3.4 an operator filtered late rows with WM_k, its eviction watermark, so the rows a first
aggregation emitted were late for the second (SPARK-40925 split the two watermarks).

>>> from ministream.time.units import format_clock
>>> for batch in LESSON.run().output():
...     print(batch.batch_id, [(format_clock(r["window_start"]), r["driver"], r["total"]) for r in batch.rows])
0 []
1 []
2 [('10:00:00', 'd2', 24.0)]
3 []
4 []
5 [('11:00:00', 'd1', 30.0)]
"""

from __future__ import annotations

from ministream.core.aggregates import Custom, Max, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param
from ministream.time.windows import Tumbling

MINUTE = 60_000
HOUR = 60 * MINUTE


def trip(minute: float, driver: str, fare: float) -> dict:
    """A trip of ``driver`` that cost ``fare``, ``minute`` minutes after 10:00 on 2024-01-01 (UTC).

    >>> trip(5, "d1", 12)
    {'ts': 1704103500000, 'driver': 'd1', 'fare': 12.0}
    """
    return {"ts": BASE_TIME + round(minute * MINUTE), "driver": driver, "fare": float(fare)}


DEFAULT_SCRIPT = [
    [trip(5, "d1", 10), trip(20, "d2", 15), trip(40, "d1", 12)],
    [trip(55, "d2", 9), trip(50, "d3", 5), trip(70, "d3", 20)],
    [trip(85, "d1", 30), trip(75, "d2", 8)],
    [trip(58, "d1", 50), trip(95, "d3", 4)],
    [trip(135, "d2", 6)],
]
"""Hour 10: d1 22, d2 24, d3 5; it closes in batch 2 (WM_2 = 11:00, its end). Batch 3: d1's trip at 10:58
comes after its hour closed: late, dropped by the first step (it would have made d1 the top driver). Hour 11:
d1 30, d3 24, d2 8; it closes in the no-data batch 5, whose watermark 12:05 (12:15 - 10 minutes) passes 12:00.
Hour 12 (d2 6) is still open when the script ends."""


def random_script(rng, params) -> list:
    """Random trips (for ``ministream fuzz``): a few drivers over two to four hours, whole-number fares (ties
    between drivers included), trips near the end of an hour, and now and then a late one.

    >>> import random
    >>> script = random_script(random.Random(1), LESSON.resolve_params())
    >>> 2 <= len(script) <= 6 and all(row["fare"] == int(row["fare"]) for batch in script for row in batch)
    True
    """
    script, now = [], BASE_TIME
    for _ in range(rng.randint(2, 6)):
        rows = []
        for _ in range(rng.randint(0, 4)):
            now += rng.choice([0, 5 * MINUTE, 15 * MINUTE, 30 * MINUTE])
            ts = now - rng.choice([0, 0, 0, 2 * MINUTE, 40 * MINUTE, HOUR])  # some out of order, some late
            rows.append({"ts": ts, "driver": rng.choice(["d1", "d2", "d3"]), "fare": float(rng.randint(1, 10))})
        script.append(rows)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: hourly sums per driver, then per hour the largest total and the driver of the largest
    ``(total, driver)``."""
    flow = Dataflow("chained-aggregations")
    trips = flow.source("trips", ScriptedSource(script)).with_watermark("trips_watermark", "ts", params["delay"])
    hourly = trips.key_by("driver").window("hourly_sums", Tumbling("1 hour"), total=Sum("fare"))
    timed = hourly.with_window_time("hour_time")
    timed.key_by([]).window(
        "top_driver", Tumbling("1 hour"), column="window_time", driver=TOP_DRIVER, total=Max("total")
    ).sink("output", CollectingSink())
    return flow


def _larger(best: tuple | None, other: tuple | None) -> tuple | None:
    """The larger of two ``(total, driver)`` pairs (``None``: no row yet)."""
    return other if best is None or (other is not None and other > best) else best


TOP_DRIVER = Custom(
    None,
    create=lambda: None,
    add=lambda best, row: _larger(best, (row["total"], row["driver"])),
    result=lambda best: None if best is None else best[1],
    merge=_larger,
)
"""The driver of the largest ``(total, driver)`` pair of the hour: the largest total, ties going to the larger
driver name, as Spark's ``max(struct(total, driver))`` compares them."""


def twin(inputs, params):
    """PySpark: ``groupBy(window("ts", "1 hour"), "driver")``, then ``groupBy(window(window_time("window"),
    "1 hour"))`` with ``max(struct(total, driver))``, in append mode."""
    from pyspark.sql import functions as F

    trips = inputs["trips"].withWatermark("ts", f"{params['delay']} milliseconds")
    hourly = trips.groupBy(F.window("ts", "1 hour"), "driver").agg(F.sum("fare").alias("total"))
    top = hourly.groupBy(F.window(F.window_time("window"), "1 hour")).agg(
        F.max(F.struct("total", "driver")).alias("top")
    )
    return top.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        F.col("top.driver").alias("driver"),
        F.col("top.total").alias("total"),
    )


LESSON = Lesson(
    name="chained-aggregations",
    title="Chained aggregations: hourly sums per driver, then the top driver per hour, under one watermark",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("driver", str), Field("fare", float)],
    default_script=DEFAULT_SCRIPT,
    params=[Param("delay", 10 * MINUTE, "watermark delay of the trips")],
    inputs=("trips",),
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
