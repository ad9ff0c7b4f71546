"""Spark's ``MultiStatefulOperatorsSuite``: queries that chain stateful operators (aggregation after
aggregation, deduplication, stream-stream join), replayed by ministream (and by Spark through hand-written
PySpark twins).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/MultiStatefulOperatorsSuite.scala``, the newest
version this project could read (commit 3c39c48239d9 of apache/spark; line numbers refer to it). The suite mixes
in no storage variants: each test is one test name. Its ``assertNumStateRows`` and
``assertNumRowsDroppedByWatermark`` (metrics of each operator's state) are not checked; its ``Execute`` blocks that
read the operators' watermarks from the physical plan are checked where a query can see them: the join's
eviction watermark is the query's watermark (``CheckWatermark``), and a join's output watermark is the watermark
ministream propagates to the step after it (``Assert``, ministream only).

Each stateful step runs with its own watermarks, propagated from the global one
(``ministream/models/watermark_propagation.py``; Spark's ``WatermarkPropagator``, SPARK-42376): an aggregation
passes its input watermark on, a time-range join the lowest of its state watermarks. The last case is
ministream's own (it counts no upstream test name): a window after a left outer join that counts a row the join
emits padded with nulls, which a single global watermark would have dropped as late.

Times are the tests' ``Timestamp.valueOf`` local times, read in UTC (the replay runs with ``TZ=UTC``, and the
tests that cast windows to text set the session time zone to UTC); ``timestamp_seconds(value)`` is ``value *
1000`` ms.
"""

from ministream import Count, Sum, Tumbling
from ministream.core.sinks import CollectingSink
from ministream.models.watermark_propagation import step_watermarks
from ministream.operators.planner import physical_graph
from ministream.time.ranges import TimeRange
from ministream.time.units import parse_timestamp, to_datetime
from tests.conformance.harness import (
    Assert,
    CheckWatermark,
    NewStream,
    Query,
    add,
    add_many,
    case,
    check_answer,
    check_new,
)

SUITE = "MultiStatefulOperatorsSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/MultiStatefulOperatorsSuite.scala"
INTS = {"inputData": "value INT"}
HOUR = 3_600_000
UTC = {"spark.sql.session.timeZone": "UTC"}
"""``withSQLConf(SQLConf.SESSION_LOCAL_TIMEZONE.key -> "UTC")``."""


def ts(text: str) -> int:
    """A ``Timestamp.valueOf`` of the test, as ms (read in UTC)."""
    return parse_timestamp(text.replace(" ", "T") + "Z")


def as_text(ms: int) -> str:
    """``CAST(timestamp AS STRING)`` in UTC, for a whole second: ``2023-01-01 01:00:00``."""
    return to_datetime(ms).strftime("%Y-%m-%d %H:%M:%S")


def _seconds(stream, name="event_time", delay="0 seconds"):
    """``withColumn("eventTime", timestamp_seconds($"value")).withWatermark("eventTime", delay)``."""
    rows = stream.map(f"{name}_seconds", lambda row: {"value": row["value"], "eventTime": row["value"] * 1000})
    return rows.with_watermark(f"{name}_watermark", "eventTime", delay)


def _start_seconds(row):
    return {"start": row["window_start"] // 1000, "end": row["window_end"] // 1000}


# -- aggregation after aggregation -------------------------------------------------------------------------------


def window_then_window(inputs):
    """``groupBy(window($"eventTime", "5 seconds").as("window")).agg(count("*").as("count"))
    .groupBy(window($"window", "10 seconds")).agg(count("*").as("count"), sum("count").as("sum"))``."""
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
    """Windows of 5 s, then ``groupBy(window(window_time($"window"), "10 seconds"))``, then of 20 s over those."""
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


# -- deduplication and aggregation -------------------------------------------------------------------------------


def dedup_then_window(inputs):
    """``withWatermark("eventTime", "10 seconds").dropDuplicates("value", "eventTime")
    .groupBy(window($"eventTime", "5 seconds").as("window")).agg(count("*").as("count"), sum("value").as("sum"))
    .select($"window".getField("start").cast("long"), $"count")``."""
    unique = _seconds(inputs["inputData"], delay="10 seconds").drop_duplicates("dedup", ["value", "eventTime"])
    windows = unique.window("per_window", Tumbling("5 seconds"), column="eventTime", count=Count(), sum=Sum("value"))
    return windows.map("out", lambda row: {"start": row["window_start"] // 1000, "count": row["count"]})


def dedup_then_window_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    unique = events.withWatermark("eventTime", "10 seconds").dropDuplicates(["value", "eventTime"])
    windows = unique.groupBy(F.window("eventTime", "5 seconds").alias("window"))
    counted = windows.agg(F.count("*").alias("count"), F.sum("value").alias("sum"))
    return counted.select(F.col("window.start").cast("long").alias("start"), "count")


def _five_second_counts(inputs):
    """``aggStream``: ``withWatermark("eventTime", "0 seconds").groupBy(window($"eventTime", "5 seconds"))
    .agg(count("*").as("count")).withColumn("windowEnd", expr("window.end"))``: windowEnd is a new column, with
    no watermark; the window stays a column, as withColumn keeps it."""
    counts = _seconds(inputs["inputData"]).window("five", Tumbling("5 seconds"), column="eventTime", count=Count())
    return counts.map("window_end", lambda row: {**row, "windowEnd": row["window_end"]})


def counts_then_dedup(inputs):
    """``aggStream.dropDuplicates("count", "windowEnd").select($"windowEnd".cast("long"), $"count")``: no event
    time in the key, so the deduplication keeps its state."""
    unique = _five_second_counts(inputs).drop_duplicates("dedup", ["count", "windowEnd"])
    return unique.map("out", lambda row: {"windowEnd": row["windowEnd"] // 1000, "count": row["count"]})


def counts_then_dedup_twin(inputs):
    from pyspark.sql import functions as F

    unique = _five_second_counts_twin(inputs).dropDuplicates(["count", "windowEnd"])
    return unique.select(F.col("windowEnd").cast("long").alias("windowEnd"), "count")


def counts_then_dedup_by_window_time(inputs):
    """``aggStream.withColumn("windowTime", expr("window_time(window)")).withColumn("windowTimeMicros",
    expr("unix_micros(windowTime)")).dropDuplicates("count", "windowEnd", "windowTime")``: windowTime keeps the
    window's watermark, so the deduplication forgets a key once the watermark passes it."""
    counts = _five_second_counts(inputs).with_window_time("window_time", "windowTime")
    unique = counts.drop_duplicates("dedup", ["count", "windowEnd", "windowTime"])
    return unique.map(
        "out",
        lambda row: {
            "windowEnd": row["windowEnd"] // 1000,
            "windowTimeMicros": row["windowTime"] * 1000,  # unix_micros of a timestamp in ms
            "count": row["count"],
        },
    )


def counts_then_dedup_by_window_time_twin(inputs):
    from pyspark.sql import functions as F

    counts = _five_second_counts_twin(inputs).withColumn("windowTime", F.expr("window_time(window)"))
    counts = counts.withColumn("windowTimeMicros", F.expr("unix_micros(windowTime)"))
    unique = counts.dropDuplicates(["count", "windowEnd", "windowTime"])
    return unique.select(
        F.col("windowEnd").cast("long").alias("windowEnd"), F.col("windowTimeMicros").cast("long"), "count"
    )


def _five_second_counts_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    windows = events.withWatermark("eventTime", "0 seconds").groupBy(F.window("eventTime", "5 seconds").alias("window"))
    return windows.agg(F.count("*").alias("count")).withColumn("windowEnd", F.expr("window.end"))


# -- joins, then aggregation -------------------------------------------------------------------------------------


def equal_time_join_then_window(inputs):
    """``inputDF1.join(inputDF2, expr("eventTime1 = eventTime2"), "inner")
    .groupBy(window($"eventTime1", "5 seconds").as("window")).agg(count("*").as("count"))``, each side
    ``withColumnRenamed("value", "valueN").withColumn("eventTimeN", timestamp_seconds($"valueN"))
    .withWatermark("eventTimeN", "0 seconds")``."""

    def side(n):
        rows = inputs[f"input{n}"].map(
            f"side{n}", lambda row: {f"value{n}": row["value"], f"eventTime{n}": row["value"] * 1000}
        )
        return rows.with_watermark(f"watermark{n}", f"eventTime{n}", "0 seconds")

    pairs = side(1).key_by("eventTime1").join("join", side(2).key_by("eventTime2"))
    windows = pairs.window("per_window", Tumbling("5 seconds"), column="eventTime1", count=Count())
    return windows.map("out", lambda row: {"start": row["window_start"] // 1000, "count": row["count"]})


def equal_time_join_then_window_twin(inputs):
    from pyspark.sql import functions as F

    def side(n):
        renamed = inputs[f"input{n}"].withColumnRenamed("value", f"value{n}")
        timed = renamed.withColumn(f"eventTime{n}", F.timestamp_seconds(f"value{n}"))
        return timed.withWatermark(f"eventTime{n}", "0 seconds")

    pairs = side(1).join(side(2), F.expr("eventTime1 = eventTime2"), "inner")
    windows = pairs.groupBy(F.window("eventTime1", "5 seconds").alias("window")).agg(F.count("*").alias("count"))
    return windows.select(F.col("window.start").cast("long").alias("start"), "count")


def range_join_then_window(inputs):
    """``inputDF1.join(inputDF2, expr("v1 >= start2 AND v1 < end2 AND eventTime1 = start2"), "inner")
    .groupBy(window($"eventTime1", "5 seconds")).agg(count("*"))``: the key is ``eventTime1 = start2``, the
    range on ``v1`` (not a watermarked column) a condition on each pair."""
    left = inputs["input1"].map(
        "left", lambda row: {"value1": row["value"], "eventTime1": row["value"] * 1000, "v1": row["value"] * 1000}
    )
    left = left.with_watermark("left_watermark", "eventTime1", "0 seconds")
    right = inputs["input2"].map(
        "right",
        lambda row: {
            "start": row["start"],
            "end": row["end"],
            "eventTime2Start": row["start"] * 1000,
            "start2": row["start"] * 1000,
            "end2": row["end"] * 1000,
        },
    )
    right = right.with_watermark("right_watermark", "eventTime2Start", "0 seconds")
    pairs = left.key_by("eventTime1").join(
        "join", right.key_by("start2"), where=lambda one, other: other["start2"] <= one["v1"] < other["end2"]
    )
    windows = pairs.window("per_window", Tumbling("5 seconds"), column="eventTime1", count=Count())
    return windows.map("out", lambda row: {"start": row["window_start"] // 1000, "count": row["count"]})


def range_join_then_window_twin(inputs):
    from pyspark.sql import functions as F

    left = inputs["input1"].withColumnRenamed("value", "value1")
    left = left.withColumn("eventTime1", F.timestamp_seconds("value1")).withColumn("v1", F.timestamp_seconds("value1"))
    left = left.withWatermark("eventTime1", "0 seconds")
    right = inputs["input2"].withColumn("eventTime2Start", F.timestamp_seconds("start"))
    right = right.withColumn("start2", F.timestamp_seconds("start")).withColumn("end2", F.timestamp_seconds("end"))
    right = right.withWatermark("eventTime2Start", "0 seconds")
    pairs = left.join(right, F.expr("v1 >= start2 AND v1 < end2 AND eventTime1 = start2"), "inner")
    windows = pairs.groupBy(F.window("eventTime1", "5 seconds").alias("window")).agg(F.count("*").alias("count"))
    return windows.select(F.col("window.start").cast("long").alias("start"), "count")


def hour_join_then_window(how: str, column: str):
    """``s1.join(s2, expr("s1.id1 = s2.id2 AND (s1.timestamp1 BETWEEN s2.timestamp2 - INTERVAL 1 hour AND
    s2.timestamp2 + INTERVAL 1 hour)"), how).groupBy(window($column, "10 minutes")).agg(count("*").as("cnt"))
    .selectExpr("CAST(window.start AS STRING) AS window_start", "CAST(window.end AS STRING) AS window_end",
    "cnt")``, each side with ``withWatermark(timestampN, "0 seconds")``."""

    def pipeline(inputs):
        s1 = inputs["input1"].with_watermark("s1", "timestamp1", "0 seconds")
        s2 = inputs["input2"].with_watermark("s2", "timestamp2", "0 seconds")
        within_an_hour = TimeRange("timestamp1", "timestamp2", lower=-HOUR, upper=HOUR)
        joined = s1.key_by("id1").join("join", s2.key_by("id2"), how=how, between=within_an_hour)
        windows = joined.window("per_window", Tumbling("10 minutes"), column=column, cnt=Count())
        return windows.map(
            "as_text",
            lambda row: {
                "window_start": as_text(row["window_start"]),
                "window_end": as_text(row["window_end"]),
                "cnt": row["cnt"],
            },
        )

    return pipeline


def hour_join_then_window_twin(how: str, column: str):
    def twin(inputs):
        from pyspark.sql import functions as F

        s1 = inputs["input1"].withWatermark("timestamp1", "0 seconds").alias("s1")
        s2 = inputs["input2"].withWatermark("timestamp2", "0 seconds").alias("s2")
        condition = (
            "s1.id1 = s2.id2 AND (s1.timestamp1 BETWEEN s2.timestamp2 - INTERVAL 1 hour AND "
            "s2.timestamp2 + INTERVAL 1 hour)"
        )
        joined = s1.join(s2, F.expr(condition), how)
        windows = joined.groupBy(F.window(column, "10 minutes")).agg(F.count("*").alias("cnt"))
        return windows.selectExpr(
            "CAST(window.start AS STRING) AS window_start", "CAST(window.end AS STRING) AS window_end", "cnt"
        )

    return twin


def interval_join(lower: int, upper: int):
    """``df1.join(df2, expr("leftId = rightId AND leftEventTime BETWEEN rightEventTime + <lower> AND
    rightEventTime + <upper>"))`` (``lower``/``upper`` in ms), df1 ``selectExpr("_1 as leftId", "_2 as
    leftEventTime").withWatermark("leftEventTime", "5 minutes")``, df2 the same with ``right`` and 10 minutes."""

    def pipeline(inputs):
        left = inputs["input1"].select("left", leftId="_1", leftEventTime="_2")
        left = left.with_watermark("left_watermark", "leftEventTime", "5 minutes")
        right = inputs["input2"].select("right", rightId="_1", rightEventTime="_2")
        right = right.with_watermark("right_watermark", "rightEventTime", "10 minutes")
        # leftEventTime in [rightEventTime + lower, rightEventTime + upper] <=> rightEventTime in
        # [leftEventTime - upper, leftEventTime - lower]
        between = TimeRange("leftEventTime", "rightEventTime", lower=-upper, upper=-lower)
        return left.key_by("leftId").join("join", right.key_by("rightId"), between=between)

    return pipeline


def interval_join_twin(condition: str):
    def twin(inputs):
        from pyspark.sql import functions as F

        left = inputs["input1"].selectExpr("_1 as leftId", "_2 as leftEventTime")
        left = left.withWatermark("leftEventTime", "5 minutes")
        right = inputs["input2"].selectExpr("_1 as rightId", "_2 as rightEventTime")
        right = right.withWatermark("rightEventTime", "10 minutes")
        return left.join(right, F.expr(f"leftId = rightId AND leftEventTime BETWEEN {condition}"))

    return twin


def output_watermark_is(lower: int, upper: int, expected: int) -> Assert:
    """``joinOperator.produceOutputWatermark(0) === expected``: in ministream, the watermark a step after the
    join runs with when the query's watermark is 0 (the join's output watermark, propagated)."""

    def check(inputs):
        joined = interval_join(lower, upper)(inputs)
        after = joined.window("after_join", Tumbling("1 minute"), column="leftEventTime", n=Count())
        after.sink("sink", CollectingSink())
        flow = joined.flow
        got = step_watermarks(flow, physical_graph(flow), 0)["after_join"]
        assert got == expected, f"the join's output watermark for input watermark 0 is {got}, not {expected}"

    return Assert(f"the join's output watermark for input watermark 0 is {expected} ms", check)


def windows_then_join(inputs):
    """``dfN.groupBy(window($"ts", "10 seconds")).agg(sum("value").as("sum_dfN"))`` per source (``selectExpr(
    "value", "timestamp_seconds(value) AS ts").withWatermark("ts", "5 seconds")``), then ``df1Window.join(
    df2Window, "window", "inner").selectExpr("CAST(window.end AS long) AS window_end", "sum_df1", "sum_df2")``."""

    def per_source(n):
        name = f"inputStream{n}"
        events = inputs[name].map(f"ts{n}", lambda row: {"value": row["value"], "ts": row["value"] * 1000})
        events = events.with_watermark(f"watermark{n}", "ts", "5 seconds")
        return events.window(f"windows{n}", Tumbling("10 seconds"), column="ts", **{f"sum_df{n}": Sum("value")})

    window = ["window_start", "window_end"]
    joined = per_source(1).key_by(window).join("join", per_source(2).key_by(window), using=True)
    return joined.map(
        "out",
        lambda row: {"window_end": row["window_end"] // 1000, "sum_df1": row["sum_df1"], "sum_df2": row["sum_df2"]},
    )


def windows_then_join_twin(inputs):
    from pyspark.sql import functions as F

    def per_source(n):
        events = inputs[f"inputStream{n}"].selectExpr("value", "timestamp_seconds(value) AS ts")
        events = events.withWatermark("ts", "5 seconds")
        return events.groupBy(F.window("ts", "10 seconds")).agg(F.sum("value").alias(f"sum_df{n}"))

    joined = per_source(1).join(per_source(2), "window", "inner")
    return joined.selectExpr("CAST(window.end AS long) AS window_end", "sum_df1", "sum_df2")


# -- ministream's own: a left outer join, then a window --------------------------------------------------------


def _side(stream, prefix, delay):
    t, k = f"{prefix}t", f"{prefix}k"
    rows = stream.map(f"{prefix}_seconds", lambda row: {t: row[t] * 1000, k: row[k]})
    return rows.select(f"{prefix}_select", **{t: t, k: k}).with_watermark(f"{prefix}_watermark", t, delay)


def outer_join_then_window(inputs):
    """``l LEFT OUTER JOIN r ON lk = rk AND lt BETWEEN rt - 40 s AND rt + 30 s``, then a 30 s window of lt (the
    query of an older version of the upstream test of the left outer join, commit 02173c2a7601, line 468)."""
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
JAN_2 = 1_577_836_800 + DAY
PAIRS = {"left": "lt BIGINT, lk STRING", "right": "rt BIGINT, rk STRING"}
JOIN_CONF = {"spark.sql.streaming.unsupportedOperationCheck": "false"}
TIMED = {"input1": "id1 STRING, timestamp1 TIMESTAMP", "input2": "id2 STRING, timestamp2 TIMESTAMP"}
"""``MemoryStream[(String, Timestamp)]`` twice, ``toDF("idN", "timestampN")``."""
PAIRS_OF_TIMES = {"input1": "_1 STRING, _2 TIMESTAMP", "input2": "_1 STRING, _2 TIMESTAMP"}
WINDOW_TEXT = ("window_start", "window_end", "cnt")


def hour_join_steps(first: str, second: str) -> list:
    """The steps of the outer join tests: ``first`` is the input of the preserved side (``input1`` for the left
    outer join), ``second`` the other; the join's eviction watermark, checked by the test's ``Execute``
    blocks, is the query's watermark."""
    return [
        add_many(
            **{
                first: [("1", ts("2023-01-01 01:00:10")), ("2", ts("2023-01-01 01:00:30"))],
                second: [("1", ts("2023-01-01 01:00:20"))],
            }
        ),
        check_answer(),
        CheckWatermark(ts("2023-01-01 01:00:20")),
        add_many(**{first: [("5", ts("2023-01-01 01:15:00"))], second: [("6", ts("2023-01-01 01:15:00"))]}),
        check_answer(),
        CheckWatermark(ts("2023-01-01 01:15:00")),
        add_many(**{first: [("5", ts("2023-01-01 02:16:00"))], second: [("6", ts("2023-01-01 02:16:00"))]}),
        # the join evicts ("2", 01:00:30) and ("5", 01:15:00) unmatched, padded with nulls; its output watermark
        # 01:15:59.999 closes the window [01:00, 01:10), where the matched row 01:00:10 already was
        check_answer(("2023-01-01 01:00:00", "2023-01-01 01:10:00", 2)),
        CheckWatermark(ts("2023-01-01 02:16:00")),
    ]


def output_watermark_steps(query: str | None, lower: int, upper: int, expected: int) -> list:
    """``testOutputWatermarkInJoin(df, input1, expected)``: a new ``testStream`` of the join, a dummy row on
    input1 (nothing to match), then the join's output watermark for input watermark 0."""
    steps = [] if query is None else [NewStream(query)]
    return steps + [
        add("input1", ("1", ts("2023-01-01 01:00:10"))),
        check_answer(),
        output_watermark_is(lower, upper, expected),
    ]


SECONDS_40, SECONDS_30 = 40_000, 30_000

CASES = [
    case(
        SUITE,
        "window agg -> window agg, append mode",
        47,
        inputs=INTS,
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
        notes='groupBy(window($"window", ...)) groups by the time of the window column: its window_time.',
    ),
    case(
        SUITE,
        "agg -> agg -> agg, append mode",
        136,
        inputs=INTS,
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
        "stream deduplication -> aggregation, append mode",
        220,
        inputs=INTS,
        output=("start", "count"),
        pipeline=dedup_then_window,
        twin=dedup_then_window_twin,
        steps=[
            add("inputData", *range(1, 16)),
            check_new((0, 4)),  # the watermark, 15 - 10 s, closes [0, 5) in the no-data batch
        ],
        ci=True,
    ),
    case(
        SUITE,
        "join -> window agg, append mode",
        262,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("start", "count"),
        pipeline=equal_time_join_then_window,
        twin=equal_time_join_then_window_twin,
        steps=[
            add_many(input1=range(1, 5), input2=range(1, 5)),
            check_new(),
            add_many(input1=[5], input2=[5]),  # moves the watermark to 5 s: [0, 5) closes
            check_new((0, 4)),
        ],
    ),
    case(
        SUITE,
        "aggregation -> stream deduplication, append mode",
        330,
        inputs=INTS,
        output=("windowEnd", "count"),
        queries={
            "no_event_time": Query(counts_then_dedup, counts_then_dedup_twin),
            "with_event_time": Query(
                counts_then_dedup_by_window_time,
                counts_then_dedup_by_window_time_twin,
                output=("windowEnd", "windowTimeMicros", "count"),
            ),
        },
        steps=[
            add("inputData", 1, 5, 10, 15),
            check_new((5, 1), (10, 1), (15, 1)),
            # a second testStream on the same MemoryStream: its first query committed the rows, which the new
            # query does not read again
            NewStream("with_event_time"),
            add("inputData", 1, 5, 10, 15),
            check_new((5, 4_999_999, 1), (10, 9_999_999, 1), (15, 14_999_999, 1)),
        ],
        notes="window_time is the window's end - 1 microsecond in Spark; unix_micros gives it in microseconds.",
        differs="the second query's deduplication reads windowTime, and its input still has the window, which "
        "carries the same watermark: ministream refuses a step whose rows carry two event times when the step is "
        "added, before it knows what later steps read. Spark checks after its optimizer has pruned the columns "
        "nothing reads: the window is gone, and only windowTime carries the watermark (measured on PySpark "
        "4.3.0: with the window kept in the final select, Spark refuses too, MULTIPLE_EVENT_TIME_COLUMNS). Past "
        "that, ministream's window_time is the end - 1 ms, Spark's the end - 1 microsecond: ministream's times "
        "are whole milliseconds, so windowTimeMicros would read 4999000 where the test asserts 4999999.",
    ),
    case(
        SUITE,
        "join with range join on non-time intervals -> window agg, append mode, shouldn't fail",
        411,
        inputs={"input1": "value INT", "input2": "start INT, end INT"},
        output=("start", "count"),
        pipeline=range_join_then_window,
        twin=range_join_then_window_twin,
        steps=[
            add("input1", 1, 2, 3, 4),
            add("input2", (1, 2), (2, 3), (3, 4), (4, 5)),
            check_new(),
        ],
    ),
    case(
        SUITE,
        "stream-stream time interval left outer join -> aggregation, append mode",
        442,
        inputs=TIMED,
        output=WINDOW_TEXT,
        pipeline=hour_join_then_window("left_outer", "timestamp1"),
        twin=hour_join_then_window_twin("leftOuter", "timestamp1"),
        conf=UTC,
        steps=hour_join_steps("input1", "input2"),
        ci=True,
        notes=(
            "The Execute blocks read the operators' watermarks in the physical plan: the join's eviction watermark "
            "is checked as the query's watermark; the others are not checked."
        ),
    ),
    case(
        SUITE,
        "stream-stream time interval right outer join -> aggregation, append mode",
        705,
        inputs=TIMED,
        output=WINDOW_TEXT,
        pipeline=hour_join_then_window("right_outer", "timestamp2"),
        twin=hour_join_then_window_twin("rightOuter", "timestamp2"),
        conf=UTC,
        steps=hour_join_steps("input2", "input1"),
        notes="As the left outer join test, sides swapped.",
    ),
    case(
        SUITE,
        "stream-stream time interval join - output watermark for various intervals",
        817,
        inputs=PAIRS_OF_TIMES,
        output=("leftId", "rightId"),
        queries={
            "join1": Query(
                interval_join(0, SECONDS_40),
                interval_join_twin("rightEventTime AND rightEventTime + INTERVAL 40 seconds"),
            ),
            "join2": Query(
                interval_join(-SECONDS_30, 0),
                interval_join_twin("rightEventTime - INTERVAL 30 seconds AND rightEventTime"),
            ),
            "join3": Query(
                interval_join(-SECONDS_30, SECONDS_40),
                interval_join_twin("rightEventTime - INTERVAL 30 seconds AND rightEventTime + INTERVAL 40 seconds"),
            ),
        },
        steps=[
            # a right row waits 40 s (+ 1 ms) for its left rows
            *output_watermark_steps(None, 0, SECONDS_40, -SECONDS_40 - 1),
            # a left row waits 30 s (+ 1 ms) for its right rows
            *output_watermark_steps("join2", -SECONDS_30, 0, -SECONDS_30 - 1),
            # both: the lower of the two
            *output_watermark_steps("join3", -SECONDS_30, SECONDS_40, -SECONDS_40 - 1),
        ],
        notes=(
            "produceOutputWatermark(0) is a method of Spark's join operator: ministream checks the watermark it "
            "propagates to a step after the join (the Spark replay checks the rows only)."
        ),
    ),
    case(
        SUITE,
        "SPARK-49829 time window agg per each source followed by stream-stream join",
        882,
        inputs={"inputStream1": "value BIGINT", "inputStream2": "value BIGINT"},
        output=("window_end", "sum_df1", "sum_df2"),
        pipeline=windows_then_join,
        twin=windows_then_join_twin,
        steps=[
            add_many(inputStream1=[1, 2, 3, 4, 5], inputStream2=[5, 6, 7, 8, 9]),
            check_new(),  # watermark 5 - 5 = 0
            add_many(inputStream1=[11, 12, 13, 14, 15], inputStream2=[15, 16, 17, 18, 19]),
            # watermark 15 - 5 = 10: both sides emit [0, 10) into the join, which matches them in the batch that
            # also evicts them
            check_new((10, 15, 35)),
            add_many(inputStream1=[100], inputStream2=[101]),
            check_new((20, 65, 85)),  # watermark 95
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
        variants=0,  # ministream's own: no upstream test name
        ci=True,
    ),
]

NOT_EXPRESSIBLE: list = []
