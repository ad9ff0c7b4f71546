"""Spark's ``EventTimeWatermarkSuite``, replayed by ministream (and by Spark through each case's PySpark twin).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/EventTimeWatermarkSuite.scala`` (Spark master
of 2026-01-07, commit fbdbd016cd71; line numbers refer to it). Most cases run the suite's windowed count:
integers are seconds since the epoch, ``eventTime = timestamp_seconds(value)``, a watermark of 10 seconds, a
count per 5-second window, and the window's start (in seconds) with its count as output.
"""

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum, Tumbling, run_microbatch
from ministream.core.triggers import Trigger
from ministream.errors import PipelineError
from ministream.time.ranges import TimeRange
from ministream.time.units import TimeFormatError, parse_timestamp
from tests.conformance.harness import (
    Assert,
    CheckWatermark,
    ClearSink,
    ExpectFailure,
    NewStream,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    add_many,
    case,
    check_answer,
    check_last,
    check_new,
)

SUITE = "EventTimeWatermarkSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/EventTimeWatermarkSuite.scala"
SECONDS = {"inputData": "value INT"}
NO_DATA_OFF = {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}
NO_DATA_ON = {"spark.sql.streaming.noDataMicroBatches.enabled": "true"}
POLICY = "spark.sql.streaming.multipleWatermarkPolicy"


# -- the suite's queries ---------------------------------------------------------------------------------------


def event_time(stream, name="event_time"):
    """``withColumn("eventTime", timestamp_seconds($"value"))``: seconds become event time in ms."""
    return stream.map(name, lambda row: {**row, "eventTime": row["value"] * 1000})


def start_and_count(row: dict) -> dict:
    """``select($"window".getField("start").cast("long"), $"count")``: the window's start in seconds."""
    return {"start": row["window_start"] // 1000, "count": row["count"]}


def windowed_count(inputs, name="inputData", delay="10 seconds", watermark=True):
    """The suite's windowed count: a count per 5-second window of the event time, watermarked by ``delay``."""
    events = event_time(inputs[name])
    if watermark:
        events = events.with_watermark("watermark", "eventTime", delay)
    counts = events.window("counts", Tumbling("5 seconds"), column="eventTime", count=Count())
    return counts.map("start", start_and_count)


def windowed_count_twin(inputs, name="inputData", delay="10 seconds", watermark=True):
    from pyspark.sql import functions as F

    events = inputs[name].withColumn("eventTime", F.timestamp_seconds("value"))
    if watermark:
        events = events.withWatermark("eventTime", delay)
    counts = events.groupBy(F.window("eventTime", "5 seconds").alias("window")).agg(F.count("*").alias("count"))
    return counts.select(F.col("window.start").cast("long").alias("start"), "count")


def windowed(output_mode="append", **settings) -> Query:
    return Query(
        lambda inputs: windowed_count(inputs, **settings),
        lambda inputs: windowed_count_twin(inputs, **settings),
        output_mode,
    )


def union_of_two(inputs, first="input1", second="input2", delays=("10 seconds", "15 seconds")):
    """``df1.union(df2)`` of two watermarked inputs, each ``withColumn("eventTime", ...)``."""
    one = event_time(inputs[first], "event_time_1").with_watermark("watermark_1", "eventTime", delays[0])
    two = event_time(inputs[second], "event_time_2").with_watermark("watermark_2", "eventTime", delays[1])
    return one, two


def union_event_seconds(inputs):
    """``df1.union(df2).select($"eventTime".cast("int"))``."""
    one, two = union_of_two(inputs)
    return one.union("union", two).map("seconds", lambda row: {"eventTime": row["eventTime"] // 1000})


def union_event_seconds_twin(inputs):
    from pyspark.sql import functions as F

    one = (
        inputs["input1"].withColumn("eventTime", F.timestamp_seconds("value")).withWatermark("eventTime", "10 seconds")
    )
    two = (
        inputs["input2"].withColumn("eventTime", F.timestamp_seconds("value")).withWatermark("eventTime", "15 seconds")
    )
    return one.union(two).select(F.col("eventTime").cast("int").alias("eventTime"))


def check_watermark(input_name: str, seconds: int) -> list:
    """The suite's ``CheckWatermark(input, w)``: add the row 1 to ``input``, then the watermark of that batch."""
    return [add(input_name, 1), CheckWatermark(seconds * 1000)]


def policy_steps(policy: str) -> list:
    """The steps of 'MultipleWatermarkPolicy: max' (``policy="max"``) or ': min'."""
    high = policy == "max"
    return [
        add_many(input1=[20], input2=[30]),
        check_last(20, 30),
        *check_watermark("input1", 15 if high else 10),
        StopStream(),
        StartStream(conf={POLICY: policy}),
        *check_watermark("input1", 15 if high else 10),
        add_many(input1=[120], input2=[130]),
        check_last(120, 130),
        *check_watermark("input1" if high else "input2", 115 if high else 110),
        add("input1" if high else "input2", 150),
        check_last(150),
        *check_watermark("input1" if high else "input2", 140 if high else 110),
    ]


# -- SPARK-35815: delays as Spark writes them --------------------------------------------------------------------

DAY, HOUR, MINUTE = 86_400_000, 3_600_000, 60_000
DELAYS = [
    (["3 days", "Interval 3 day", "inTerval '3' day"], 3 * DAY),
    ([" 5 hours", "INTERVAL 5 hour", "interval '5' hour"], 5 * HOUR),
    (["\t8 minutes", "interval 8 minute", "interval '8' minute"], 8 * MINUTE),
    (["10 seconds", "interval 10 second", "interval '10' second"], 10_000),
    (["1 years", "interval 1 year", "interval '1' year"], 12 * 31 * DAY),
    (["1 months", "interval 1 month", "interval '1' month"], 31 * DAY),
    (
        [
            "1 day 2 hours 3 minutes 4 seconds",
            " interval 1 day 2 hours 3 minutes 4 seconds",
            "\tinterval '1' day '2' hours '3' minutes '4' seconds",
            "interval '1 2:3:4' day to second",
        ],
        DAY + 2 * HOUR + 3 * MINUTE + 4_000,
    ),
    (
        [
            " 1 year 2 months",
            "interval 1 year 2 month",
            "interval '1' year '2' month",
            "\tinterval '1-2' year to month",
        ],
        (12 * 31 + 2 * 31) * DAY,
    ),
]
INVALID_DELAYS = [
    "1 foo",
    "interva 2 day",
    "intrval '3' day",
    "interval 4 foo",
    "interval '5' foo",
    "interval '1 2:3:4' day to hour",
    "interval '1 2' year to month",
]


def delays_as_spark_reads_them(inputs):
    events = event_time(inputs["inputData"])
    for number, (spellings, ms) in enumerate(DELAYS):
        for spelling in spellings:
            delay = events.with_watermark(f"watermark {number} {spelling!r}", "eventTime", spelling).step.spec.delay
            assert delay == ms, f"{spelling!r} is {delay} ms, not {ms}"
    for spelling in INVALID_DELAYS:
        try:
            events.with_watermark(f"invalid {spelling!r}", "eventTime", spelling)
        except TimeFormatError:
            continue
        raise AssertionError(f"{spelling!r} was accepted as a delay")


def delays_as_spark_reads_them_twin(inputs):
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    for spellings, ms in DELAYS:
        for spelling in spellings:
            delay = events.withWatermark("eventTime", spelling).schema["eventTime"].metadata["spark.watermarkDelayMs"]
            assert delay == ms, f"{spelling!r} is {delay} ms, not {ms}"
    for spelling in INVALID_DELAYS:
        try:
            events.withWatermark("eventTime", spelling)
        except PySparkException:
            continue
        raise AssertionError(f"{spelling!r} was accepted as a delay")


def ansi_interval_case(legacy: str):
    return case(
        SUITE,
        f"SPARK-35815: Support ANSI intervals for delay threshold (spark.sql.legacy.interval.enabled={legacy})",
        884,
        inputs=SECONDS,
        output="value",
        conf={"spark.sql.legacy.interval.enabled": legacy},
        pipeline=lambda inputs: inputs["inputData"],
        twin=lambda inputs: inputs["inputData"],
        steps=[
            Assert(
                "each spelling gives the delay Spark reads from it; mismatched ones are refused",
                delays_as_spark_reads_them,
                delays_as_spark_reads_them_twin,
            )
        ],
        ci=legacy == "false",
        notes="Only the delays are checked (no query runs); the legacy interval setting changes nothing.",
    )


# -- other queries -----------------------------------------------------------------------------------------------

NOW = parse_timestamp("2026-01-07T12:34:56Z") // 1000
"""'delay in months and years' adds the wall-clock time; the replay fixes it to this moment, in seconds."""


def two_watermark_sum(inputs):
    one, two = union_of_two(inputs, "first", "second", ("10 seconds", "5 seconds"))
    values = one.select("first_value", value="value").union("union", two.select("second_value", value="value"))
    return values.aggregate("sum", sum=Sum("value"))


def two_watermark_sum_twin(inputs):
    from pyspark.sql import functions as F

    first = (
        inputs["first"].withColumn("eventTime", F.timestamp_seconds("value")).withWatermark("eventTime", "10 seconds")
    )
    second = (
        inputs["second"].withColumn("eventTime", F.timestamp_seconds("value")).withWatermark("eventTime", "5 seconds")
    )
    return first.select("value").union(second.select("value")).agg(F.sum("value").alias("sum"))


def watermark_after_data(first: list, second: list, watermark_ms: int) -> list:
    """The test's ``getWatermarkAfterData``: add to both inputs (one batch), then a dummy row 0 to the first
    input, whose batch runs with the watermark under test."""
    steps = [add_many(first=first, second=second)] if first or second else []
    return [*steps, add("first", 0), CheckWatermark(watermark_ms)]


def raw_timestamp_count(inputs):
    events = event_time(inputs["inputData"]).with_watermark("watermark", "eventTime", "10 seconds")
    counts = events.key_by("eventTime").aggregate("counts", count=Count())
    return counts.map("seconds", lambda row: {"eventTime": row["eventTime"] // 1000, "count": row["count"]})


def raw_timestamp_count_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    counts = events.withWatermark("eventTime", "10 seconds").groupBy("eventTime").agg(F.count("*").alias("count"))
    return counts.select(F.col("eventTime").cast("long").alias("eventTime"), "count")


def negative_delay(delay):
    return Query(
        lambda inputs: inputs["inputData"].with_watermark("watermark", "value", delay),
        lambda inputs: inputs["inputData"].withWatermark("value", delay),
    )


def two_event_times(inputs):
    """``withWatermark("first", "1 minute").select("*").withWatermark("second", "2 minutes")``, then a count
    per 1-minute window of ``second``."""
    pairs = inputs["input"].map("times", lambda row: {**row, "first": row["_1"] * 1000, "second": row["_2"] * 1000})
    twice = pairs.with_watermark("first_watermark", "first", "1 minute").with_watermark(
        "second_watermark", "second", "2 minutes"
    )
    return twice.window("counts", Tumbling("1 minute"), column="second", count=Count())


def two_event_times_twin(inputs):
    from pyspark.sql import functions as F

    pairs = (
        inputs["input"]
        .withColumn("first", F.timestamp_seconds("_1"))
        .withColumn("second", F.timestamp_seconds("_2"))
        .withWatermark("first", "1 minute")
        .select("*")
        .withWatermark("second", "2 minutes")
    )
    return pairs.groupBy(F.window("second", "1 minute")).count()


def deduplicated_join(inputs):
    """A join on ``id1 = id2 AND ts1 = ts2 + INTERVAL 10 SECONDS``, then ``dropDuplicates()``."""
    one = inputs["input1"].map("one", lambda row: {"id1": row["_1"], "ts1": row["_2"] * 1000})
    two = inputs["input2"].map("two", lambda row: {"id2": row["_1"], "ts2": row["_2"] * 1000})
    one = one.with_watermark("watermark_1", "ts1", "1 minute")
    two = two.with_watermark("watermark_2", "ts2", "2 minutes")
    joined = one.key_by("id1").join(
        "join", two.key_by("id2"), between=TimeRange("ts1", "ts2", lower=-10_000, upper=-10_000)
    )
    return joined.drop_duplicates("dedup")


def deduplicated_join_twin(inputs):
    from pyspark.sql import functions as F

    one = inputs["input1"].selectExpr("_1 AS id1", "timestamp_seconds(_2) AS ts1").withWatermark("ts1", "1 minute")
    two = inputs["input2"].selectExpr("_1 AS id2", "timestamp_seconds(_2) AS ts2").withWatermark("ts2", "2 minutes")
    joined = one.join(two, F.expr("id1 = id2 AND ts1 = ts2 + INTERVAL 10 SECONDS"), "inner").selectExpr(
        "id1", "ts1", "ts2"
    )
    return joined.dropDuplicates().selectExpr("id1", "CAST(ts1 AS LONG) AS ts1", "CAST(ts2 AS LONG) AS ts2")


def window_column_count(inputs):
    """``select(window($"eventTime", "5 seconds") as "aliasWindow")``, then a count per window column."""
    events = event_time(inputs["inputData"]).with_watermark("watermark", "eventTime", "10 seconds")
    windows = events.with_window("alias_window", Tumbling("5 seconds"), column="eventTime")
    counts = windows.key_by(["window_start", "window_end"]).aggregate("counts", count=Count())
    return counts.map("start", start_and_count)


def window_column_count_twin(inputs):
    from pyspark.sql import functions as F

    events = (
        inputs["inputData"]
        .withColumn("eventTime", F.timestamp_seconds("value"))
        .withWatermark("eventTime", "10 seconds")
    )
    windows = events.select(F.window("eventTime", "5 seconds").alias("aliasWindow"))
    counts = windows.groupBy("aliasWindow").agg(F.count("*").alias("count"))
    return counts.select(F.col("aliasWindow.start").cast("long").alias("start"), "count")


def check_no_policy(policy: str):
    def engine(inputs):
        flow = Dataflow("policy")
        flow.source("values", ScriptedSource([[{"value": 1}]])).sink("output", CollectingSink())
        with pytest.raises(PipelineError, match="'min' or 'max'"):
            run_microbatch(flow, watermark_policy=policy)

    def spark(inputs):
        from pyspark.errors import PySparkException

        session = inputs["value"].sparkSession
        try:
            with pytest.raises(PySparkException, match=r"(?i)valid values are 'min' and 'max'"):
                session.conf.set(POLICY, policy)
        finally:
            session.conf.unset(POLICY)

    return Assert(f"the policy {policy!r} is refused", engine, spark)


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        "error on bad column",
        117,
        inputs=SECONDS,
        output="value",
        pipeline=lambda inputs: inputs["inputData"].with_watermark("watermark", "badColumn", "1 minute"),
        twin=lambda inputs: inputs["inputData"].withWatermark("badColumn", "1 minute"),
        steps=[ExpectFailure("no column 'badColumn'", "badColumn")],
    ),
    case(
        SUITE,
        "event time and watermark metrics",
        134,
        inputs={"inputData1": "value INT", "inputData2": "value INT"},
        output=("start", "count"),
        queries={
            "aggWithoutWatermark": windowed("complete", name="inputData1", watermark=False),
            "aggWithWatermark": windowed("append", name="inputData2"),
        },
        steps=[
            add("inputData1", 15),
            check_answer((15, 1)),
            add("inputData1", 10, 12, 14),
            check_answer((10, 3), (15, 1)),
            NewStream(query="aggWithWatermark"),
            add("inputData2", 15),
            check_answer(),
            add("inputData2", 10, 12, 14),
            check_answer(),
            add("inputData2", 25),
            check_answer((10, 3)),
        ],
        notes="The event-time statistics of the progress reports (min, max, avg) are not checked: ministream "
        "reports none.",
    ),
    case(
        SUITE,
        "event time and watermark metrics with Trigger.Once (SPARK-24699)",
        174,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed()},
        steps=[
            StartStream(trigger=Trigger.once()),
            add("inputData", 15),
            StartStream(trigger=Trigger.once()),
            check_new(),
            add("inputData", 10, 12, 14),
            StartStream(trigger=Trigger.once()),
            check_new(),
            add("inputData", 25),
            StartStream(trigger=Trigger.once()),
            check_new(),
            add("inputData", 50),
            StartStream(trigger=Trigger.once()),
            check_new((10, 3)),
            add("inputData", 50),
            StartStream(trigger=Trigger.once()),
            check_new((15, 1), (25, 1)),
        ],
        ci=True,
        notes="The event-time statistics are not checked (ministream reports none); the watermark each start "
        "runs with is what makes the answers.",
    ),
    case(
        SUITE,
        "append mode",
        289,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed()},
        steps=[
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_new(),
            add("inputData", 25),
            check_new((10, 5)),
            add("inputData", 10),
            check_new(),
        ],
        ci=True,
        notes="The state-row metrics of the progress reports are not checked.",
    ),
    case(
        SUITE,
        "update mode",
        313,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed("update")},
        steps=[
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_new((10, 5), (15, 1)),
            add("inputData", 25),
            check_new((25, 1)),
            add("inputData", 10, 25),
            check_new((25, 2)),
            add("inputData", 10),
            check_new(),
        ],
        notes="The state-row metrics of the progress reports are not checked.",
    ),
    case(
        SUITE,
        "delay in months and years handled correctly",
        342,
        inputs={"input": "value BIGINT"},
        output=("start", "count"),
        queries={"query": windowed(name="input", delay="2 years 5 months")},
        steps=[
            add("input", NOW),
            check_answer(),
            add("input", NOW),
            check_answer(),
            CheckWatermark((NOW - 29 * 31 * 86_400) * 1000),
        ],
        ci=True,
        notes="The test adds the wall-clock time and checks that the watermark is 29 or 30 months earlier; the "
        "replay adds a fixed moment and checks the exact watermark: 29 months of 31 days earlier.",
    ),
    case(
        SUITE,
        "recovery",
        377,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed()},
        steps=[
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_answer(),
            add("inputData", 25),
            check_answer((10, 5)),
            StopStream(),
            ClearSink(),
            StartStream(),
            add("inputData", 10, 27, 30),
            check_answer((15, 1)),
            StopStream(),
            StartStream(),
            add("inputData", 17),
            check_answer((15, 1)),
            add("inputData", 40),
            check_new((25, 2)),
        ],
        ci=True,
        notes="The test purges the commit log below the last commit (no batch runs again) and clears the "
        "memory sink; ClearSink is the second.",
    ),
    case(
        SUITE,
        "watermark with 2 streams",
        410,
        inputs={"first": "value INT", "second": "value INT"},
        output="sum",
        pipeline=two_watermark_sum,
        twin=two_watermark_sum_twin,
        output_mode="complete",
        steps=[
            *watermark_after_data([11], [], 0),
            *watermark_after_data([], [6], 1_000),
            *watermark_after_data([], [8], 1_000),
            *watermark_after_data([21], [], 3_000),
            *watermark_after_data([], [17, 28, 39], 11_000),
            *watermark_after_data([31], [], 21_000),
            *watermark_after_data([41], [], 31_000),
            *watermark_after_data([51], [], 34_000),
            *watermark_after_data([100], [100], 90_000),
            *watermark_after_data([120], [110], 105_000),
            *watermark_after_data([130], [125], 120_000),
            *watermark_after_data([100], [100], 120_000),
            *watermark_after_data([140], [100], 120_000),
            *watermark_after_data([100], [135], 130_000),
            *watermark_after_data([200], [190], 185_000),
            StopStream(),
            StartStream(),
            *watermark_after_data([], [], 185_000),
            *watermark_after_data([], [200], 185_000),
            *watermark_after_data([200], [], 190_000),
        ],
        ci=True,
        notes="Only the watermarks are checked, as in the test. After the restart each input's own watermark "
        "starts over and the global one waits where it was.",
    ),
    case(
        SUITE,
        "complete mode",
        488,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed("complete")},
        steps=[
            add("inputData", 10, 11, 12),
            check_answer((10, 3)),
            add("inputData", 25),
            check_answer((10, 3), (25, 1)),
            add("inputData", 25),
            check_answer((10, 3), (25, 2)),
            add("inputData", 10),
            check_answer((10, 4), (25, 2)),
            add("inputData", 25),
            check_answer((10, 4), (25, 3)),
        ],
    ),
    case(
        SUITE,
        "group by on raw timestamp",
        513,
        inputs=SECONDS,
        output=("eventTime", "count"),
        pipeline=raw_timestamp_count,
        twin=raw_timestamp_count_twin,
        steps=[add("inputData", 10), check_answer(), add("inputData", 25), check_answer((10, 1))],
        ci=True,
    ),
    case(
        SUITE,
        "delay threshold should not be negative.",
        531,
        inputs=SECONDS,
        output="value",
        queries={
            "minus a year": negative_delay("-1 year"),
            "a year minus 13 months": negative_delay("1 year -13 months"),
            "a month minus 40 days": negative_delay("1 month -40 days"),
            "minus 10 seconds": negative_delay("-10 seconds"),
        },
        steps=[
            ExpectFailure("cannot be negative", "should not be negative"),
            NewStream(query="a year minus 13 months"),
            ExpectFailure("cannot be negative", "should not be negative"),
            NewStream(query="a month minus 40 days"),
            ExpectFailure("cannot be negative", "should not be negative"),
            NewStream(query="minus 10 seconds"),
            ExpectFailure("cannot be negative", "should not be negative"),
        ],
    ),
    case(
        SUITE,
        "overriding watermark should not be allowed by default",
        568,
        inputs={"input": "_1 BIGINT, _2 BIGINT"},
        output=("count",),
        pipeline=two_event_times,
        twin=two_event_times_twin,
        steps=[
            add("input", (100, 200)),
            ExpectFailure("already has a watermark", "Redefining watermark is disallowed"),
        ],
    ),
    case(
        SUITE,
        "multiple event time columns in an input DataFrame for stateful operator is not allowed",
        644,
        inputs={"input1": "_1 STRING, _2 BIGINT", "input2": "_1 STRING, _2 BIGINT"},
        output=("id1", "ts1", "ts2"),
        pipeline=deduplicated_join,
        twin=deduplicated_join_twin,
        conf={"spark.sql.session.timeZone": "UTC"},
        steps=[
            add_many(input1=[("A", 200), ("B", 300)], input2=[("A", 190), ("C", 350)]),
            ExpectFailure("more than one event time", "More than one event time columns are available."),
        ],
        notes="ministream refuses the plan when it is built; Spark when the query starts to run.",
    ),
    case(
        SUITE,
        "SPARK-27340 Alias on TimeWindow expression cause watermark metadata lost",
        718,
        inputs=SECONDS,
        output=("start", "count"),
        pipeline=window_column_count,
        twin=window_column_count_twin,
        steps=[
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_new(),
            add("inputData", 25),
            check_new((10, 5)),
            add("inputData", 10),
            check_new(),
        ],
        ci=True,
        notes="The test's first assertion (the alias keeps the watermark metadata) is what makes append mode "
        "work on the window column; the state-row metrics are not checked.",
    ),
    case(
        SUITE,
        "test no-data flag",
        745,
        inputs=SECONDS,
        output=("start", "count"),
        queries={"query": windowed()},
        steps=[
            StartStream(conf=NO_DATA_ON),
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_new(),
            add("inputData", 25),
            check_new((10, 5)),
            NewStream(),
            StartStream(conf=NO_DATA_OFF),
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_new(),
            add("inputData", 25),
            check_new(),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "MultipleWatermarkPolicy: max",
        771,
        inputs={"input1": "value INT", "input2": "value INT"},
        output="eventTime",
        pipeline=union_event_seconds,
        twin=union_event_seconds_twin,
        conf={POLICY: "max"},
        steps=[StartStream(conf={POLICY: "max"}), *policy_steps("max")],
        ci=True,
    ),
    case(
        SUITE,
        "MultipleWatermarkPolicy: min",
        793,
        inputs={"input1": "value INT", "input2": "value INT"},
        output="eventTime",
        pipeline=union_event_seconds,
        twin=union_event_seconds_twin,
        conf={POLICY: "min"},
        steps=[StartStream(conf={POLICY: "min"}), *policy_steps("min")],
    ),
    case(
        SUITE,
        "MultipleWatermarkPolicy: recovery from checkpoints ignores session conf",
        815,
        inputs={"input1": "value INT", "input2": "value INT"},
        output="eventTime",
        pipeline=union_event_seconds,
        twin=union_event_seconds_twin,
        steps=[
            StartStream(conf={POLICY: "max"}),
            add_many(input1=[20], input2=[30]),
            check_last(20, 30),
            *check_watermark("input1", 15),
            StopStream(),
            StartStream(conf={POLICY: "min"}),
            *check_watermark("input1", 15),
            add_many(input1=[120], input2=[130]),
            check_last(120, 130),
            *check_watermark("input1", 115),
            add("input1", 150),
            check_last(150),
            *check_watermark("input1", 140),
        ],
        ci=True,
        notes="The second testStream of the test uses the same inputs and checkpoint with another session "
        "setting: a restart.",
    ),
    case(
        SUITE,
        "MultipleWatermarkPolicy: fail on incorrect conf values",
        873,
        inputs={"value": "value INT"},
        output="value",
        pipeline=lambda inputs: inputs["value"],
        twin=lambda inputs: inputs["value"],
        steps=[check_no_policy(""), check_no_policy("random")],
    ),
    ansi_interval_case("true"),
    ansi_interval_case("false"),
]

NOT_EXPRESSIBLE = [
    NotExpressible(SUITE, "EventTimeStats", 55, "unit test of Spark's internal EventTimeStats accumulator"),
    NotExpressible(SUITE, "EventTimeStats: avg on large values", 71, "unit test of Spark's internal EventTimeStats"),
    NotExpressible(SUITE, "EventTimeStats: zero merge zero", 90, "unit test of Spark's internal EventTimeStats"),
    NotExpressible(SUITE, "EventTimeStats: non-zero merge zero", 97, "unit test of Spark's internal EventTimeStats"),
    NotExpressible(SUITE, "EventTimeStats: zero merge non-zero", 107, "unit test of Spark's internal EventTimeStats"),
    NotExpressible(
        SUITE,
        "error on wrong type",
        125,
        "a type error: ministream keeps event time as int milliseconds, so an int column is a timestamp",
    ),
    NotExpressible(
        SUITE,
        "recovery from Spark ver 2.3.1 commit log without commit metadata (SPARK-24699)",
        231,
        "restores a checkpoint written by Spark 2.3.1 (a test resource)",
    ),
    NotExpressible(
        SUITE,
        "overriding watermark should not fail in compatibility mode",
        579,
        "Spark's legacy mode spark.sql.streaming.statefulOperator.allowMultiple=false (watermarks as before "
        "Spark 3.4), which ministream does not model",
    ),
    NotExpressible(
        SUITE,
        "stateful operator should pick the first occurrence of event time column if there is multiple event "
        "time columns in compatibility mode",
        663,
        "Spark's legacy mode spark.sql.streaming.statefulOperator.allowMultiple=false, which ministream does not model",
    ),
    NotExpressible(
        SUITE, "EventTime watermark should be ignored in batch query.", 680, "a batch (not streaming) query"
    ),
    NotExpressible(
        SUITE,
        "SPARK-21565: watermark operator accepts attributes from replacement",
        690,
        "an analyzer regression of Spark (attribute replacement with a JSON file source and the console sink)",
    ),
    NotExpressible(
        SUITE,
        "MultipleWatermarkPolicy: recovery from Spark ver 2.3.1 checkpoints ensures min policy",
        843,
        "restores a checkpoint written by Spark 2.3.1 (a test resource)",
    ),
]
