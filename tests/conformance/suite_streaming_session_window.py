"""Spark's ``StreamingSessionWindowSuite``, replayed by ministream (and by Spark through each case's twin).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingSessionWindowSuite.scala`` (Spark
master of 2026-01-07). Each test runs four times in Spark (sessions merged in the local partition or not,
two state store providers): one case here, named after the first.

The suite's query: lines of words with a time in seconds; each word is a session id; a watermark of 30
seconds; a count per session of 10 seconds of inactivity; output ``(sessionId, start, end, duration,
numEvents)``, times in seconds (the duration column is named ``durationMs`` but holds seconds).
"""

import statistics

from ministream import Count, Custom, Sum
from ministream.time.windows import Session
from tests.conformance.harness import (
    ExpectFailure,
    NotExpressible,
    Query,
    add,
    case,
    check_answer,
    check_new,
)

SUITE = "StreamingSessionWindowSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingSessionWindowSuite.scala"
VARIANT = " - merging sessions in local partition: true / provider: org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
LINES = {"inputData": "_1 STRING, _2 BIGINT"}
SECONDS = {"inputData": "value INT"}
OUTPUT = ("sessionId", "start", "end", "durationMs", "numEvents")


def named(test: str) -> str:
    return test + VARIANT


# -- the queries -------------------------------------------------------------------------------------------------


def words(inputs, key="word"):
    """``select($"_1".as("value"), $"_2".as("timestamp")).withColumn("eventTime", $"timestamp".cast("timestamp"))
    .withWatermark("eventTime", "30 seconds").selectExpr("explode(split(value, ' ')) AS sessionId",
    "eventTime")``; ``key`` shapes the session id: the word, ``((w, w), w)`` (nested), or two columns."""
    lines = inputs["inputData"].map("event_time", lambda row: {"value": row["_1"], "eventTime": row["_2"] * 1000})
    lines = lines.with_watermark("watermark", "eventTime", "30 seconds")

    def explode(row):
        out = []
        for word in row["value"].split(" "):
            if key == "word":
                out.append({"sessionId": word, "eventTime": row["eventTime"]})
            elif key == "nested":
                out.append({"sessionId": ((word, word), word), "eventTime": row["eventTime"]})
            else:
                out.append({"aggKeyDouble": (word, word), "aggKeySingle": word, "eventTime": row["eventTime"]})
        return out

    return lines.flat_map("explode", explode)


def word_of(row) -> str:
    """The word of a row, whatever the key's shape."""
    if "aggKeySingle" in row:
        return row["aggKeySingle"]
    session_id = row["sessionId"]
    return session_id[1] if isinstance(session_id, tuple) else session_id


def gap_of(row) -> int:
    """The suite's dynamic gap: 1 second for hello, 0 for structured, -10 seconds for world, else 10 seconds
    (a row whose gap is zero or negative opens no session)."""
    return {"hello": 1_000, "structured": 0, "world": -10_000}.get(word_of(row), 10_000)


def sessions(inputs, key="word", dynamic=False):
    keys = "sessionId" if key != "multi" else ["aggKeyDouble", "aggKeySingle"]
    gap = Session(gap_of) if dynamic else Session("10 seconds")
    counted = words(inputs, key).key_by(keys).window("sessions", gap, column="eventTime", numEvents=Count())

    def output(row):
        start, end = row["window_start"] // 1000, row["window_end"] // 1000
        keys = {k: row[k] for k in ("sessionId", "aggKeyDouble", "aggKeySingle") if k in row}
        return {**keys, "start": start, "end": end, "durationMs": end - start, "numEvents": row["numEvents"]}

    return counted.map("columns", output)


def sessions_twin(inputs, key="word", dynamic=False):
    from pyspark.sql import functions as F

    lines = (
        inputs["inputData"]
        .select(F.col("_1").alias("value"), F.col("_2").alias("timestamp"))
        .withColumn("eventTime", F.col("timestamp").cast("timestamp"))
        .withWatermark("eventTime", "30 seconds")
    )
    if key == "word":
        events = lines.selectExpr("explode(split(value, ' ')) AS sessionId", "eventTime")
        keys, word = ["sessionId"], F.col("sessionId")
    elif key == "nested":
        events = lines.selectExpr(
            "explode(arrays_zip(arrays_zip(split(value, ' '), split(value, ' ')), split(value, ' '))) AS sessionId",
            "eventTime",
        )
        keys, word = ["sessionId"], F.col("sessionId").getField("1")
    else:
        events = lines.selectExpr(
            "explode(arrays_zip(arrays_zip(split(value, ' '), split(value, ' ')), split(value, ' '))) AS keys",
            "eventTime",
        ).selectExpr("keys['0'] AS aggKeyDouble", "keys['1'] AS aggKeySingle", "eventTime")
        keys, word = ["aggKeyDouble", "aggKeySingle"], F.col("aggKeySingle")
    if dynamic:
        gap = (
            F.when(word == "hello", "1 second")
            .when(word == "structured", "0 second")
            .when(word == "world", "-10 seconds")
            .otherwise("10 seconds")
        )
    else:
        gap = "10 seconds"
    counted = events.groupBy(F.session_window("eventTime", gap).alias("session"), *keys).agg(
        F.count("*").alias("numEvents")
    )
    return counted.selectExpr(
        *keys,
        "CAST(session.start AS LONG) AS start",
        "CAST(session.end AS LONG) AS end",
        "CAST(session.end AS LONG) - CAST(session.start AS LONG) AS durationMs",
        "numEvents",
    )


def session_query(output_mode: str, key="word", dynamic=False) -> Query:
    return Query(
        lambda inputs: sessions(inputs, key, dynamic),
        lambda inputs: sessions_twin(inputs, key, dynamic),
        output_mode,
        output=OUTPUT if key != "multi" else ("aggKeyDouble", "aggKeySingle", *OUTPUT[1:]),
    )


def global_sessions(inputs):
    """``groupBy(session_window($"eventTime", "5 seconds"))`` alone: no key besides the session."""
    events = inputs["inputData"].map("event_time", lambda row: {**row, "eventTime": row["value"] * 1000})
    events = events.with_watermark("watermark", "eventTime", "10 seconds")
    return events.window("sessions", Session("5 seconds"), column="eventTime", count=Count(), sum=Sum("value"))


def global_sessions_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].selectExpr("*").withColumn("eventTime", F.col("value").cast("timestamp"))
    counted = (
        events.withWatermark("eventTime", "10 seconds")
        .groupBy(F.session_window("eventTime", "5 seconds").alias("session"))
        .agg(F.count("*").alias("count"), F.sum("value").alias("sum"))
    )
    return counted.select(
        F.col("session.start").cast("long").alias("start"),
        F.col("session.end").cast("long").alias("end"),
        "count",
        "sum",
    )


def global_session_query(output_mode: str) -> Query:
    return Query(global_sessions, global_sessions_twin, output_mode, output=("start", "end", "count", "sum"))


def values_of(column: str, result):
    """An aggregate over the list of a session's values (merged when sessions merge)."""
    return Custom(column, create=tuple, add=lambda seen, value: (*seen, value), result=result, merge=lambda a, b: a + b)


def more_aggregates(inputs):
    """``agg(mean($"single"), median($"single"), stddev($"single"), variance($"single"), ..., mySum($"single"))``."""
    lines = inputs["inputData"].map(
        "event_time", lambda row: {"value": row["_1"], "eventTime": row["_2"] * 1000, "single": row["_2"]}
    )
    events = lines.with_watermark("watermark", "eventTime", "30 seconds").flat_map(
        "explode", lambda row: [{**row, "sessionId": word} for word in row["value"].split(" ")]
    )
    aggregated = events.key_by("sessionId").window(
        "sessions",
        Session("10 seconds"),
        column="eventTime",
        meanTime=values_of("single", statistics.fmean),
        medianTime=values_of("single", statistics.median),
        stdDevTime=values_of("single", statistics.stdev),
        varTime=values_of("single", statistics.variance),
        mySumSingle=Sum("single"),
    )
    return aggregated.map(
        "columns",
        lambda row: {
            "sessionId": row["sessionId"],
            "start": row["window_start"] // 1000,
            "end": row["window_end"] // 1000,
            **{name: int(row[name]) for name in ("meanTime", "medianTime", "stdDevTime", "varTime")},
            "mySumSingle": row["mySumSingle"],
        },
    )


def more_aggregates_twin(inputs):
    from pyspark.sql import functions as F

    events = (
        inputs["inputData"]
        .select(F.col("_1").alias("value"), F.col("_2").alias("timestamp"))
        .withColumn("eventTime", F.col("timestamp").cast("timestamp"))
        .withColumn("single", F.col("timestamp"))
        .withWatermark("eventTime", "30 seconds")
        .selectExpr("explode(split(value, ' ')) AS sessionId", "eventTime", "single")
    )
    aggregated = events.groupBy(F.session_window("eventTime", "10 seconds").alias("session"), "sessionId").agg(
        F.mean("single").alias("meanTime"),
        F.median("single").alias("medianTime"),
        F.stddev("single").alias("stdDevTime"),
        F.variance("single").alias("varTime"),
        F.sum("single").alias("mySumSingle"),
    )
    return aggregated.selectExpr(
        "sessionId",
        "CAST(session.start AS LONG) AS start",
        "CAST(session.end AS LONG) AS end",
        "CAST(meanTime AS LONG) AS meanTime",
        "CAST(medianTime AS LONG) AS medianTime",
        "CAST(stdDevTime AS LONG) AS stdDevTime",
        "CAST(varTime AS LONG) AS varTime",
        "mySumSingle",
    )


# -- the steps shared by several tests ---------------------------------------------------------------------------

B1 = [("hello world spark streaming", 40), ("world hello structured streaming", 41)]
B2 = [("spark streaming", 25)]
B3 = [("spark streaming", 30)]
B4 = [("hello apache spark", 60)]
B5 = [("structured streaming", 90)]

C1 = [
    ("hello", 40, 51, 11, 2),
    ("world", 40, 51, 11, 2),
    ("streaming", 40, 51, 11, 2),
    ("spark", 40, 50, 10, 1),
    ("structured", 41, 51, 10, 1),
]
C2 = [("spark", 25, 35, 10, 1), ("streaming", 25, 35, 10, 1), *C1]
C3 = [
    ("spark", 25, 50, 25, 3),
    ("streaming", 25, 51, 26, 4),
    ("hello", 40, 51, 11, 2),
    ("world", 40, 51, 11, 2),
    ("structured", 41, 51, 10, 1),
]
C4 = [*C3, ("hello", 60, 70, 10, 1), ("apache", 60, 70, 10, 1), ("spark", 60, 70, 10, 1)]
C5 = [*C4, ("structured", 90, 100, 10, 1), ("streaming", 90, 100, 10, 1)]

APPEND_FINAL = [
    ("spark", 25, 50, 25, 3),
    ("streaming", 25, 51, 26, 4),
    ("hello", 40, 51, 11, 2),
    ("world", 40, 51, 11, 2),
    ("structured", 41, 51, 10, 1),
]
DYNAMIC_FINAL = [("spark", 25, 50, 25, 3), ("streaming", 25, 51, 26, 4), ("hello", 40, 42, 2, 2)]


def nested(rows):
    return [(((r[0], r[0]), r[0]), *r[1:]) for r in rows]


def multi(rows):
    return [((r[0], r[0]), r[0], *r[1:]) for r in rows]


def complete_steps(shape):
    return [
        add("inputData", *B1),
        check_new(*shape(C1)),
        add("inputData", *B2),
        check_new(*shape(C2)),
        add("inputData", *B3),
        check_new(*shape(C3)),
        add("inputData", *B4),
        check_new(*shape(C4)),
        add("inputData", *B5),
        check_new(*shape(C5)),
    ]


def append_steps(final):
    return [
        add("inputData", *B1),
        check_new(),
        add("inputData", *B2),
        check_new(),
        add("inputData", ("spark streaming", 0)),
        check_new(),
        add("inputData", *B3),
        check_new(),
        add("inputData", *B4),
        check_new(),
        add("inputData", *B5),
        check_new(*final),
    ]


def same(rows):
    return rows


def no_key_error(output_mode: str, test: str, line: int, expected: tuple[str, str]):
    return case(
        SUITE,
        named(test),
        line,
        inputs=SECONDS,
        output=("start", "end", "count", "sum"),
        queries={"query": global_session_query(output_mode)},
        steps=[add("inputData", 40), ExpectFailure(*expected)],
        variants=4,
    )


NO_KEY = ("needs a key", "ession window in streaming query is not supported")
UPDATE = ("cannot run in update output mode", "session window streaming aggregations")

CASES = [
    case(
        SUITE,
        named("complete mode - session window"),
        74,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("complete")},
        steps=complete_steps(same),
        variants=4,
        ci=True,
    ),
    case(
        SUITE,
        named("complete mode - session window - nested tuple key"),
        150,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("complete", "nested")},
        steps=complete_steps(nested),
        variants=4,
    ),
    case(
        SUITE,
        named("complete mode - session window - multiple col key"),
        210,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("complete", "multi")},
        steps=complete_steps(multi),
        variants=4,
    ),
    no_key_error("complete", "complete mode - session window - no key", 268, NO_KEY),
    case(
        SUITE,
        named("append mode - session window"),
        286,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("append")},
        steps=append_steps(APPEND_FINAL),
        variants=4,
        ci=True,
        notes="The number of rows dropped as late (2) is not checked.",
    ),
    case(
        SUITE,
        named("SPARK-36465: dynamic gap duration"),
        383,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("append", dynamic=True)},
        steps=append_steps(DYNAMIC_FINAL),
        variants=4,
        ci=True,
        notes="The test's gap is a UDF of the session id; the twin writes the same choice as a CASE expression.",
    ),
    case(
        SUITE,
        named("dynamic gap duration - nested tuple key"),
        482,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("append", "nested", dynamic=True)},
        steps=append_steps(nested(DYNAMIC_FINAL)),
        variants=4,
    ),
    case(
        SUITE,
        named("dynamic gap duration - multiple col key"),
        532,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("append", "multi", dynamic=True)},
        steps=append_steps(multi(DYNAMIC_FINAL)),
        variants=4,
    ),
    no_key_error("append", "append mode - session window - no key", 581, NO_KEY),
    case(
        SUITE,
        named("update mode - session window"),
        596,
        inputs=LINES,
        output=OUTPUT,
        queries={"query": session_query("update")},
        steps=[add("inputData", ("hello", 40)), ExpectFailure(*UPDATE)],
        variants=4,
    ),
    no_key_error("update", "update mode - session window - no key", 617, UPDATE),
    case(
        SUITE,
        named("session window - with more aggregation functions and UDAFs"),
        637,
        inputs=LINES,
        output=("sessionId", "start", "end", "meanTime", "medianTime", "stdDevTime", "varTime", "mySumSingle"),
        pipeline=more_aggregates,
        twin=more_aggregates_twin,
        steps=[
            add("inputData", ("a", 41)),
            add("inputData", ("a", 42)),
            add("inputData", ("a", 40)),
            check_answer(),
            add("inputData", ("b", 100)),
            add("inputData", ("b", 101)),
            check_answer(("a", 40, 52, 41, 41, 1, 1, 123)),
        ],
        variants=4,
        notes="The test's first/last aggregates are computed but not output; its summing Aggregator (mySum) "
        "is a plain sum here.",
    ),
]

NOT_EXPRESSIBLE: list[NotExpressible] = []
