"""Chained stateful steps, replayed from Spark's ``MultiStatefulOperatorsSuite`` (``sql/core/src/test/scala/org/
apache/spark/sql/streaming/MultiStatefulOperatorsSuite.scala``, apache/spark master of 2026), with hand-written
PySpark twins, in ministream and in Spark.

Each stateful step runs with its own watermarks, propagated from the global one
(``ministream/models/watermark_propagation.py``; Spark's ``WatermarkPropagator``, SPARK-42376): an aggregation
passes its input watermark on, a time-range join the lowest of its state watermarks. The last case is
ministream's own: a window after a left outer join that counts a row the join emits padded with nulls, which
a single global watermark would have dropped as late.
"""

import pytest

from ministream import Count, Sum, Tumbling
from ministream.time.ranges import TimeRange
from tests.conformance.harness import add, add_many, case, check_new, run_engine

SUITE = "MultiStatefulOperatorsSuite"


def _seconds(stream, name="event_time"):
    """``withColumn("eventTime", timestamp_seconds($"value")).withWatermark("eventTime", "0 seconds")``."""
    rows = stream.map(f"{name}_seconds", lambda row: {"value": row["value"], "eventTime": row["value"] * 1000})
    return rows.with_watermark(f"{name}_watermark", "eventTime", "0 seconds")


def _start_seconds(row):
    return {"start": row["window_start"] // 1000, "end": row["window_end"] // 1000}


def window_then_window(inputs):
    """``groupBy(window(eventTime, 5 s)).count()`` then ``groupBy(window(window, 10 s)).agg(count, sum)``."""
    fives = _seconds(inputs["inputData"]).window("five", Tumbling("5 seconds"), column="eventTime", count=Count())
    tens = fives.with_window_time("five_time").window(
        "ten", Tumbling("10 seconds"), column="window_time", count=Count(), sum=Sum("count")
    )
    return tens.map("out", lambda row: {"start": row["window_start"] // 1000, "count": row["count"], "sum": row["sum"]})


def window_then_window_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    fives = events.withWatermark("eventTime", "0 seconds").groupBy(F.window("eventTime", "5 seconds").alias("window"))
    tens = fives.agg(F.count("*").alias("count")).groupBy(F.window("window", "10 seconds"))
    counted = tens.agg(F.count("*").alias("count"), F.sum("count").alias("sum"))
    return counted.select(F.col("window.start").cast("long").alias("start"), "count", "sum")


def three_aggregations(inputs):
    """Windows of 5 s, then of 10 s over their ``window_time``, then of 20 s over those."""
    fives = _seconds(inputs["inputData"]).window("five", Tumbling("5 seconds"), column="eventTime", count=Count())
    tens = fives.with_window_time("five_time").window(
        "ten", Tumbling("10 seconds"), column="window_time", count=Count(), sum=Sum("count")
    )
    twenties = tens.with_window_time("ten_time").window(
        "twenty", Tumbling("20 seconds"), column="window_time", count=Count(), sum=Sum("sum")
    )
    return twenties.map("out", lambda row: {**_start_seconds(row), "count": row["count"], "sum": row["sum"]})


def three_aggregations_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    fives = events.withWatermark("eventTime", "0 seconds").groupBy(F.window("eventTime", "5 seconds").alias("window"))
    tens = fives.agg(F.count("*").alias("count")).groupBy(F.window(F.window_time("window"), "10 seconds"))
    tens = tens.agg(F.count("*").alias("count"), F.sum("count").alias("sum"))
    twenties = tens.groupBy(F.window(F.window_time("window"), "20 seconds"))
    counted = twenties.agg(F.count("*").alias("count"), F.sum("sum").alias("sum"))
    return counted.select(
        F.col("window.start").cast("long").alias("start"), F.col("window.end").cast("long").alias("end"), "count", "sum"
    )


def _side(stream, prefix, delay):
    t, k = f"{prefix}t", f"{prefix}k"
    rows = stream.map(f"{prefix}_seconds", lambda row: {t: row[t] * 1000, k: row[k]})
    return rows.select(f"{prefix}_select", **{t: t, k: k}).with_watermark(f"{prefix}_watermark", t, delay)


def outer_join_then_window(inputs):
    """``l LEFT OUTER JOIN r ON lk = rk AND lt BETWEEN rt - 40 s AND rt + 30 s``, then a 30 s window of lt."""
    left, right = _side(inputs["left"], "l", "2 minutes"), _side(inputs["right"], "r", "4 minutes")
    joined = left.key_by("lk").join(
        "join", right.key_by("rk"), how="left_outer", between=TimeRange("lt", "rt", lower=-30_000, upper=40_000)
    )
    windows = joined.key_by([]).window("per_window", Tumbling("30 seconds"), column="lt", cnt=Count())
    return windows.map("out", lambda row: {**_start_seconds(row), "cnt": row["cnt"]})


def outer_join_then_window_twin(inputs):
    from pyspark.sql import functions as F

    def side(df, prefix, delay):
        t, k = f"{prefix}t", f"{prefix}k"
        return df.select(F.timestamp_seconds(t).alias(t), k).withWatermark(t, delay)

    left, right = side(inputs["left"], "l", "2 minutes"), side(inputs["right"], "r", "4 minutes")
    joined = left.join(
        right, F.expr("lk = rk AND lt BETWEEN rt - INTERVAL 40 SECONDS AND rt + INTERVAL 30 SECONDS"), "leftOuter"
    )
    windows = joined.groupBy(F.window("lt", "30 seconds")).agg(F.count("*").alias("cnt"))
    return windows.select(
        F.col("window.start").cast("long").alias("start"), F.col("window.end").cast("long").alias("end"), "cnt"
    )


DAY = 86_400
JAN_1, JAN_2, JAN_5 = 1_577_836_800, 1_577_836_800 + DAY, 1_577_836_800 + 4 * DAY
PAIRS = {"left": "lt BIGINT, lk STRING", "right": "rt BIGINT, rk STRING"}
JOIN_CONF = {"spark.sql.streaming.unsupportedOperationCheck": "false"}


CASES = [
    case(
        SUITE,
        "window agg -> window agg, append mode",
        44,
        inputs={"inputData": "value INT"},
        output=("start", "count", "sum"),
        pipeline=window_then_window,
        twin=window_then_window_twin,
        steps=[
            add("inputData", *range(10, 22)),
            check_new((10, 2, 10)),  # both windows of the first step and the second step's window in one batch
            add("inputData", *range(10, 30)),
            check_new(),
            add("inputData", 30, 31),
            check_new((20, 2, 12)),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "agg -> agg -> agg, append mode",
        133,
        inputs={"inputData": "value INT"},
        output=("start", "end", "count", "sum"),
        pipeline=three_aggregations,
        twin=three_aggregations_twin,
        steps=[
            add("inputData", *range(38)),
            check_new((0, 20, 2, 20)),
            add("inputData", *range(30, 61)),
            check_new((20, 40, 2, 23), (40, 60, 2, 20)),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "stream-stream time interval left outer join -> aggregation, append mode",
        468,
        inputs=PAIRS,
        output=("start", "end", "cnt"),
        pipeline=outer_join_then_window,
        twin=outer_join_then_window_twin,
        conf=JOIN_CONF,
        steps=[
            add_many(
                left=[(JAN_1, "abc"), (JAN_2, "abc"), (JAN_2 + 3600, "abc")],
                right=[(JAN_2 + 10, "abc"), (JAN_2 + 3599, "abc"), (JAN_2 + 7200, "abc")],
            ),
            check_new((JAN_1, JAN_1 + 30, 1), (JAN_2, JAN_2 + 30, 1)),
            add_many(left=[(JAN_5, "abc")], right=[(JAN_5 + 10, "abc")]),
            check_new((JAN_2 + 3600, JAN_2 + 3630, 1)),
        ],
        ci=True,
    ),
    case(
        "ministream",
        "a window after a left outer join counts the rows the join pads late (output watermark of the join)",
        0,
        inputs=PAIRS,
        output=("start", "end", "cnt"),
        pipeline=outer_join_then_window,
        twin=outer_join_then_window_twin,
        conf=JOIN_CONF,
        steps=[
            # lt 00:57:30 never matches. WM becomes 00:58:00 (both inputs): the window [00:57:30, 00:58:00) ends at
            # the global watermark, but its row is still in the join's state (left rows leave at lt <= WM - 40 s
            # - 1 ms), and the join's output watermark, 00:57:19.999, is what the window step runs with
            add_many(
                left=[(JAN_2 + 3450, "abc"), (JAN_2 + 3600, "abc")],
                right=[(JAN_2 + 3599, "abc"), (JAN_2 + 3720, "abc")],
            ),
            check_new(),
            # WM 00:59:00 evicts the row, padded with nulls: not late for the window step (its watermark of the
            # previous batch is 00:57:19.999, not 00:58:00), which counts it and closes the window at 00:58:19.999
            add_many(left=[(JAN_2 + 3660, "abc")], right=[(JAN_2 + 3840, "abc")]),
            check_new((JAN_2 + 3450, JAN_2 + 3480, 1)),
        ],
        ci=True,
    ),
]


@pytest.mark.parametrize("chained_case", CASES, ids=lambda c: c.test)
def test_engine(chained_case):
    """ministream gives the rows each case expects, batch by batch."""
    run_engine(chained_case)


@pytest.mark.spark
@pytest.mark.parametrize("chained_case", CASES, ids=lambda c: c.test)
def test_spark(chained_case, spark):
    """The case's hand-written PySpark twin gives the same rows on Spark, batch by batch."""
    from tests.conformance.spark_replay import run_spark

    run_spark(chained_case, spark)
