"""Spark's ``StreamingDeduplicationSuite`` and ``StreamingDeduplicationWithinWatermarkSuite``, replayed by
ministream (and by Spark through each case's PySpark twin).

Sources: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingDeduplicationSuite.scala`` and
``.../StreamingDeduplicationWithinWatermarkSuite.scala`` (Spark master of 2026-01-07). The state-row metrics
many tests assert (rows total, updated, dropped by the watermark) are not checked: ministream reports state
sizes in its trace, not Spark's progress metrics.
"""

from ministream import Count, Sum, Tumbling
from tests.conformance.harness import (
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

SUITE = "StreamingDeduplicationSuite"
WITHIN = "StreamingDeduplicationWithinWatermarkSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingDeduplicationSuite.scala"
SOURCE_WITHIN = (
    "sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingDeduplicationWithinWatermarkSuite.scala"
)
PAIRS = {"inputData": "_1 STRING, _2 INT"}
SECONDS = {"inputData": "value INT"}
FIVE_TIMES_10_TO_15 = [v for _ in range(5) for v in range(10, 16)]


# -- queries -----------------------------------------------------------------------------------------------------


def dedup_all(inputs):
    return inputs["inputData"].drop_duplicates("dedup")


def dedup_all_twin(inputs):
    return inputs["inputData"].dropDuplicates()


def dedup_first(inputs, name="inputData"):
    return inputs[name].drop_duplicates("dedup", "_1")


def dedup_first_twin(inputs, name="inputData"):
    return inputs[name].dropDuplicates(["_1"])


def watermarked(inputs, name="inputData"):
    """``withColumn("eventTime", timestamp_seconds($"value")).withWatermark("eventTime", "10 seconds")``."""
    events = inputs[name].map("event_time", lambda row: {**row, "eventTime": row["value"] * 1000})
    return events.with_watermark("watermark", "eventTime", "10 seconds")


def watermarked_twin(inputs, name="inputData"):
    from pyspark.sql import functions as F

    events = inputs[name].withColumn("eventTime", F.timestamp_seconds("value"))
    return events.withWatermark("eventTime", "10 seconds")


def event_seconds(stream):
    return stream.map("seconds", lambda row: {"eventTime": row["eventTime"] // 1000})


def event_seconds_twin(df):
    from pyspark.sql import functions as F

    return df.select(F.col("eventTime").cast("long").alias("eventTime"))


def dedup_watermark(inputs, name="inputData", within=False):
    """``... .dropDuplicates()`` (or ``dropDuplicatesWithinWatermark()``) ``.select($"eventTime".cast("long"))``."""
    return event_seconds(watermarked(inputs, name).drop_duplicates("dedup", within_watermark=within))


def dedup_watermark_twin(inputs, name="inputData", within=False):
    events = watermarked_twin(inputs, name)
    return event_seconds_twin(events.dropDuplicatesWithinWatermark() if within else events.dropDuplicates())


def watermark_dedup(name="inputData", within=False) -> Query:
    return Query(
        lambda inputs: dedup_watermark(inputs, name, within),
        lambda inputs: dedup_watermark_twin(inputs, name, within),
    )


def dedup_then_window(inputs):
    counts = (
        watermarked(inputs)
        .drop_duplicates("dedup")
        .window("counts", Tumbling("5 seconds"), column="eventTime", count=Count())
    )
    return counts.map("start", lambda row: {"start": row["window_start"] // 1000, "count": row["count"]})


def dedup_then_window_twin(inputs):
    from pyspark.sql import functions as F

    counts = (
        watermarked_twin(inputs)
        .dropDuplicates()
        .groupBy(F.window("eventTime", "5 seconds").alias("window"))
        .agg(F.count("*").alias("count"))
    )
    return counts.select(F.col("window.start").cast("long").alias("start"), "count")


def dedup_then_sum(inputs):
    """``select($"_1" as "str", $"_2" as "num").dropDuplicates().groupBy("str").agg(sum("num"))``."""
    pairs = inputs["inputData"].select("rename", str="_1", num="_2")
    return pairs.drop_duplicates("dedup").key_by("str").aggregate("sums", sum=Sum("num"))


def dedup_then_sum_twin(inputs):
    from pyspark.sql import functions as F

    pairs = inputs["inputData"].select(F.col("_1").alias("str"), F.col("_2").alias("num"))
    return pairs.dropDuplicates().groupBy("str").agg(F.sum("num").alias("sum"))


def by_keys(columns, select):
    """``toDF(names).withColumn("time", timestamp_seconds($"time")).withWatermark("time", "1 second")
    .dropDuplicates(columns).select(select)``: the time column in seconds, back in the output."""

    def pipeline(inputs):
        if columns == ("id",):
            rows = inputs["input"].map("rename", lambda row: {"id": row["_1"], "time": row["_2"] * 1000})
        else:
            rows = inputs["input"].map("rename", lambda row: {"time": row["_1"] * 1000, "id": row["_2"]})
        kept = rows.with_watermark("watermark", "time", "1 second").drop_duplicates("dedup", list(columns))
        return kept.map("select", lambda row: {column: _seconds(column, row[column]) for column in select})

    def twin(inputs):
        from pyspark.sql import functions as F

        names = ("time", "id") if columns != ("id",) else ("id", "time")
        rows = inputs["input"].toDF(*names).withColumn("time", F.timestamp_seconds("time"))
        kept = rows.withWatermark("time", "1 second").dropDuplicates(list(columns))
        return kept.select(*[F.col(c).cast("long").alias(c) if c == "time" else F.col(c) for c in select])

    return pipeline, twin


def _seconds(column, value):
    return value // 1000 if column == "time" else value


def union_dedup(inputs):
    """``input1.select($"value").union(input2.dropDuplicates("value"))``."""
    return inputs["input1"].union("union", inputs["input2"].drop_duplicates("dedup", "value"))


def union_dedup_twin(inputs):
    return inputs["input1"].select("value").union(inputs["input2"].dropDuplicates(["value"]))


def dedup_first_two_columns(inputs):
    """The first run of SPARK-39650: the input has (_1, _2); the replay's input has the later _3 too."""
    return inputs["dedupeInputData"].select("first_run_columns", _1="_1", _2="_2").drop_duplicates("dedup", "_1")


def dedup_first_two_columns_twin(inputs):
    return inputs["dedupeInputData"].select("_1", "_2").dropDuplicates(["_1"])


def within_two_columns(inputs):
    """SPARK-39650 within the watermark, first run: (_1, _2 seconds) -> (_1, eventTime seconds)."""
    rows = inputs["dedupeInputData"].map("event_time", lambda row: {"_1": row["_1"], "eventTime": row["_2"] * 1000})
    kept = rows.with_watermark("watermark", "eventTime", "10 seconds").drop_duplicates(
        "dedup", "_1", within_watermark=True
    )
    return kept.map("seconds", lambda row: {"_1": row["_1"], "eventTime": row["eventTime"] // 1000})


def within_two_columns_twin(inputs):
    from pyspark.sql import functions as F

    rows = inputs["dedupeInputData"].select("_1", "_2").withColumn("eventTime", F.timestamp_seconds("_2"))
    kept = rows.withWatermark("eventTime", "10 second").dropDuplicatesWithinWatermark(["_1"])
    return kept.select("_1", F.col("eventTime").cast("long").alias("eventTime"))


def within_three_columns(inputs):
    """SPARK-39650 within the watermark, second run: (_1, _2, _3) -> (_1, eventTime seconds, _3)."""
    rows = inputs["dedupeInputData"].map("event_time", lambda row: {**row, "eventTime": row["_2"] * 1000})
    kept = rows.with_watermark("watermark", "eventTime", "10 seconds").drop_duplicates(
        "dedup", "_1", within_watermark=True
    )
    return kept.map("select", lambda row: {"_1": row["_1"], "eventTime": row["eventTime"] // 1000, "_3": row["_3"]})


def within_three_columns_twin(inputs):
    from pyspark.sql import functions as F

    rows = inputs["dedupeInputData"].withColumn("eventTime", F.timestamp_seconds("_2"))
    kept = rows.withWatermark("eventTime", "10 second").dropDuplicatesWithinWatermark(["_1"])
    return kept.select("_1", F.col("eventTime").cast("long").alias("eventTime"), "_3")


def within_subset(inputs):
    """``withColumn("eventTime", timestamp_seconds($"_2")).withWatermark("eventTime", "2 seconds")
    .dropDuplicatesWithinWatermark("_1").select($"_1", $"eventTime".cast("long"))``."""
    rows = inputs["inputData"].map("event_time", lambda row: {**row, "eventTime": row["_2"] * 1000})
    kept = rows.with_watermark("watermark", "eventTime", "2 seconds").drop_duplicates(
        "dedup", "_1", within_watermark=True
    )
    return kept.map("select", lambda row: {"_1": row["_1"], "eventTime": row["eventTime"] // 1000})


def within_subset_twin(inputs):
    from pyspark.sql import functions as F

    rows = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("_2"))
    kept = rows.withWatermark("eventTime", "2 seconds").dropDuplicatesWithinWatermark(["_1"])
    return kept.select("_1", F.col("eventTime").cast("long").alias("eventTime"))


def within_without_watermark(inputs):
    return inputs["inputData"].drop_duplicates("dedup", within_watermark=True)


def within_new_column_without_watermark(inputs):
    rows = inputs["inputData"].map("newcol", lambda row: {**row, "newcol": row["value"]})
    return rows.drop_duplicates("dedup", "newcol", within_watermark=True)


def within_before_join(inputs):
    """The watermark is on the other side of a later join, not on the deduplicated stream."""
    other = inputs["inputData2"].map("other", lambda row: {"key2": row["_1"], "time": row["_2"] * 1000})
    other = other.with_watermark("watermark", "time", "10 seconds")
    keys = inputs["inputData"].select("key", key="value").drop_duplicates("dedup", within_watermark=True)
    return keys.key_by("key").join("join", other.key_by("key2"))


def within_twin(kind):
    def twin(inputs):
        from pyspark.sql import functions as F

        values = inputs["inputData"]
        if kind == "all":
            return values.dropDuplicatesWithinWatermark()
        if kind == "newcol":
            return values.withColumn("newcol", F.col("value")).dropDuplicatesWithinWatermark(["newcol"])
        other = inputs["inputData2"].select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("time"))
        other = other.withWatermark("Time", "10 seconds")
        return values.select(F.col("value").alias("key")).dropDuplicatesWithinWatermark().join(other, "key")

    return twin


def drop_event_time(inputs):
    """``withColumn("first", timestamp_seconds($"_1")).withWatermark("first", "10 seconds")
    .dropDuplicatesWithinWatermark("_2").select("_2")``."""
    rows = inputs["inputData"].map("first", lambda row: {**row, "first": row["_1"] * 1000})
    kept = rows.with_watermark("watermark", "first", "10 seconds").drop_duplicates("dedup", "_2", within_watermark=True)
    return kept.select("select", _2="_2")


def drop_event_time_twin(inputs):
    from pyspark.sql import functions as F

    rows = inputs["inputData"].withColumn("first", F.timestamp_seconds("_1")).withWatermark("first", "10 seconds")
    return rows.dropDuplicatesWithinWatermark(["_2"]).select("_2")


def collated(inputs):
    """``select(col("_1").try_cast(StringType("UTF8_BINARY")).as("str"), col("_2").as("int")).dropDuplicates("str")``:
    a binary collation compares strings as they are."""
    return inputs["inputData"].select("rename", str="_1", int="_2").drop_duplicates("dedup", "str")


def collated_twin(inputs):
    return (
        inputs["inputData"]
        .selectExpr("try_cast(_1 AS STRING COLLATE UTF8_BINARY) AS str", "_2 AS int")
        .dropDuplicates(["str"])
    )


KEY_SECONDS = {"input": "_1 INT, _2 INT"}
SPARK_19841 = by_keys(("id", "time"), ("id",))
SPARK_21546 = by_keys(("id",), ("id", "time"))

# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        "deduplicate with all columns",
        46,
        inputs={"inputData": "value STRING"},
        output="value",
        pipeline=dedup_all,
        twin=dedup_all_twin,
        steps=[
            add("inputData", "a"),
            check_last("a"),
            add("inputData", "a"),
            check_last(),
            add("inputData", "b"),
            check_last("b"),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "deduplicate with some columns",
        63,
        inputs=PAIRS,
        output=("_1", "_2"),
        pipeline=dedup_first,
        twin=dedup_first_twin,
        steps=[
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 2)),
            check_last(),
            add("inputData", ("b", 1)),
            check_last(("b", 1)),
        ],
    ),
    case(
        SUITE,
        "multiple deduplicates",
        80,
        inputs=PAIRS,
        output=("_1", "_2"),
        pipeline=lambda inputs: dedup_all(inputs).drop_duplicates("dedup_first", "_1"),
        twin=lambda inputs: dedup_all_twin(inputs).dropDuplicates(["_1"]),
        steps=[
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 2)),
            check_last(),
            add("inputData", ("b", 1)),
            check_last(("b", 1)),
        ],
    ),
    case(
        SUITE,
        "SPARK-35896: metrics in StateOperatorProgress are output correctly",
        99,
        inputs=SECONDS,
        output="eventTime",
        queries={"query": watermark_dedup()},
        steps=[
            StartStream(conf={"spark.sql.shuffle.partitions": "2"}),
            add("inputData", *FIVE_TIMES_10_TO_15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("inputData", 25),
            check_new(25),
            add("inputData", 10),
            check_new(),
            add("inputData", 10),
            check_new(),
        ],
    ),
    case(
        SUITE,
        "deduplicate with watermark",
        131,
        inputs=SECONDS,
        output="eventTime",
        queries={"query": watermark_dedup()},
        steps=[
            add("inputData", *FIVE_TIMES_10_TO_15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("inputData", 25),
            check_new(25),
            add("inputData", 10),
            check_new(),
            add("inputData", 45),
            check_new(45),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "deduplicate with aggregate - append mode",
        158,
        inputs=SECONDS,
        output=("start", "count"),
        pipeline=dedup_then_window,
        twin=dedup_then_window_twin,
        steps=[
            add("inputData", *FIVE_TIMES_10_TO_15),
            check_last(),
            add("inputData", 25),
            check_last((10, 5)),
            add("inputData", 10),
            check_last(),
            add("inputData", 40),
            check_last((15, 1), (25, 1)),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "deduplicate with aggregate - update mode",
        194,
        inputs=PAIRS,
        output=("str", "sum"),
        pipeline=dedup_then_sum,
        twin=dedup_then_sum_twin,
        output_mode="update",
        steps=[
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 1)),
            check_last(),
            add("inputData", ("a", 2)),
            check_last(("a", 3)),
            add("inputData", ("b", 1)),
            check_last(("b", 1)),
        ],
    ),
    case(
        SUITE,
        "deduplicate with aggregate - complete mode",
        219,
        inputs=PAIRS,
        output=("str", "sum"),
        pipeline=dedup_then_sum,
        twin=dedup_then_sum_twin,
        output_mode="complete",
        steps=[
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 2)),
            check_last(("a", 3)),
            add("inputData", ("b", 1)),
            check_last(("a", 3), ("b", 1)),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "deduplicate with file sink",
        244,
        inputs={"inputData": "value STRING"},
        output="value",
        pipeline=dedup_all,
        twin=dedup_all_twin,
        steps=[
            add("inputData", "a"),
            check_answer("a"),
            add("inputData", "a"),
            check_answer("a"),
            add("inputData", "b"),
            check_answer("a", "b"),
        ],
        notes="The test reads back the Parquet files its query wrote; the replay's sink keeps the same rows.",
    ),
    case(
        SUITE,
        "SPARK-19841: watermarkPredicate should filter based on keys",
        274,
        inputs=KEY_SECONDS,
        output="id",
        pipeline=SPARK_19841[0],
        twin=SPARK_19841[1],
        steps=[
            add("input", (1, 1), (1, 1), (1, 2)),
            check_answer(1, 2),
            add("input", (1, 1), (2, 3), (2, 4)),
            check_new(3, 4),
            add("input", (1, 0), (1, 1), (3, 5), (3, 6)),
            check_new(5, 6),
            add("input", (1, 0), (4, 7)),
            check_new(7),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "SPARK-21546: dropDuplicates should ignore watermark when it's not a key",
        293,
        inputs=KEY_SECONDS,
        output=("id", "time"),
        pipeline=SPARK_21546[0],
        twin=SPARK_21546[1],
        steps=[add("input", (1, 1), (1, 2), (2, 2)), check_answer((1, 1), (2, 2))],
    ),
    case(
        SUITE,
        "test no-data flag",
        306,
        inputs=SECONDS,
        output="eventTime",
        queries={"query": watermark_dedup()},
        steps=[
            StartStream(conf={"spark.sql.streaming.noDataMicroBatches.enabled": "true"}),
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("inputData", 25),
            check_new(25),
            check_last(),
            NewStream(),
            StartStream(conf={"spark.sql.streaming.noDataMicroBatches.enabled": "false"}),
            add("inputData", 10, 11, 12, 13, 14, 15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("inputData", 25),
            check_new(25),
        ],
        ci=True,
        notes="The test's last assertion (the sink's output rows of the last progress are 0) is a check of the "
        "last batch: the no-data batch with the flag on; with it off, Spark's idle progress after 10 s, which "
        "the replay does not wait for.",
    ),
    case(
        SUITE,
        "SPARK-29438: ensure UNION doesn't lead streaming deduplication to use shifted partition IDs",
        342,
        inputs={"input1": "value INT", "input2": "value INT"},
        output="value",
        pipeline=union_dedup,
        twin=union_dedup_twin,
        steps=[
            add_many(input1=[11, 12], input2=[21, 22]),
            check_new(11, 12, 21, 22),
            StopStream(),
            StartStream(),
            add_many(input1=[13, 14], input2=[22, 23]),
            check_new(13, 14, 23),
        ],
        notes="The test restarts with new MemoryStreams of another partitioning that replay the first batch: "
        "the same inputs, restarted.",
    ),
    case(
        SUITE,
        "SPARK-35880: custom metric numDroppedDuplicateRows in state operator progress",
        382,
        inputs={"dedupeInputData": "_1 STRING, _2 INT", "dedupeWithWMInputData": "value INT"},
        output=("_1", "_2"),
        queries={
            "dedupe": Query(
                lambda i: dedup_first(i, "dedupeInputData"), lambda i: dedup_first_twin(i, "dedupeInputData")
            ),
            "dedupeWithWatermark": Query(
                lambda i: dedup_watermark(i, "dedupeWithWMInputData"),
                lambda i: dedup_watermark_twin(i, "dedupeWithWMInputData"),
                output=("eventTime",),
            ),
        },
        steps=[
            add("dedupeInputData", ("a", 1)),
            check_last(("a", 1)),
            add("dedupeInputData", ("a", 2), ("b", 3)),
            check_last(("b", 3)),
            add("dedupeInputData", ("a", 5), ("b", 2), ("c", 9)),
            check_last(("c", 9)),
            NewStream(query="dedupeWithWatermark"),
            add("dedupeWithWMInputData", *FIVE_TIMES_10_TO_15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("dedupeWithWMInputData", 14),
            check_new(),
            add("dedupeWithWMInputData", 25),
            check_new(25),
            add("dedupeWithWMInputData", 10),
            check_new(),
            add("dedupeWithWMInputData", 26, 26),
            check_new(26),
        ],
        notes="The dropped-duplicate counts are not checked; the rows are.",
    ),
    case(
        SUITE,
        "SPARK-39650: duplicate with specific keys should allow input to change schema",
        432,
        inputs={"dedupeInputData": "_1 STRING, _2 INT, _3 STRING"},
        output=("_1", "_2", "_3"),
        queries={
            "first run": Query(dedup_first_two_columns, dedup_first_two_columns_twin, output=("_1", "_2")),
            "second run": Query(
                lambda i: dedup_first(i, "dedupeInputData"), lambda i: dedup_first_twin(i, "dedupeInputData")
            ),
        },
        steps=[
            StartStream(query="first run", checkpoint="checkpoint"),
            add("dedupeInputData", ("a", 1, None)),
            check_last(("a", 1)),
            add("dedupeInputData", ("a", 2, None), ("b", 3, None)),
            check_last(("b", 3)),
            StopStream(),
            StartStream(query="second run", checkpoint="checkpoint"),
            add("dedupeInputData", ("a", 5, "a"), ("b", 2, "b"), ("c", 9, "c")),
            check_last(("c", 9, "c")),
        ],
        notes="The first run's input has two columns and the second's three: the replay's input has the three, "
        "and the first query selects two.",
    ),
    case(
        SUITE,
        "collation aware deduplication",
        539,
        inputs=PAIRS,
        output=("str", "int"),
        pipeline=collated,
        twin=collated_twin,
        steps=[
            add("inputData", ("a", 1)),
            check_last(("a", 1)),
            add("inputData", ("a", 2)),
            check_last(),
            add("inputData", ("\u00e4", 1)),
            check_last(("\u00e4", 1)),
        ],
        notes="A binary collation compares strings as they are, as ministream does.",
    ),
    # -- StreamingDeduplicationWithinWatermarkSuite ----------------------------------------------------------
    case(
        WITHIN,
        "deduplicate without event time column should result in error",
        52,
        inputs={"inputData": "value STRING", "inputData2": "_1 STRING, _2 INT"},
        output="key",
        queries={
            "result": Query(within_without_watermark, within_twin("all")),
            "result2": Query(within_new_column_without_watermark, within_twin("newcol")),
            "result3": Query(within_before_join, within_twin("join")),
        },
        steps=[
            ExpectFailure("within_watermark needs a watermark", "dropDuplicatesWithinWatermark is not supported"),
            NewStream(query="result2"),
            ExpectFailure("within_watermark needs a watermark", "dropDuplicatesWithinWatermark is not supported"),
            NewStream(query="result3"),
            ExpectFailure("within_watermark needs a watermark", "dropDuplicatesWithinWatermark is not supported"),
        ],
    ),
    case(
        WITHIN,
        "deduplicate with all columns with event time column in DataFrame",
        85,
        inputs=SECONDS,
        output="eventTime",
        queries={"query": watermark_dedup(within=True)},
        steps=[
            add("inputData", *FIVE_TIMES_10_TO_15),
            check_answer(10, 11, 12, 13, 14, 15),
            add("inputData", 13, 14, 15, 16, 17),
            check_new(16, 17),
            add("inputData", 5),
            check_new(),
            add("inputData", 35),
            check_new(35),
            add("inputData", 55),
            check_new(55),
        ],
        ci=True,
    ),
    case(
        WITHIN,
        "deduplicate with subset of columns which event time column is not in subset",
        121,
        inputs=PAIRS,
        output=("_1", "eventTime"),
        pipeline=within_subset,
        twin=within_subset_twin,
        steps=[
            add("inputData", ("a", 17)),
            check_new(("a", 17)),
            add("inputData", ("a", 16)),
            check_new(),
            add("inputData", ("a", 13)),
            check_new(),
            add("inputData", ("b", 22), ("c", 21)),
            check_new(("b", 22), ("c", 21)),
            add("inputData", ("a", 21)),
            check_new(("a", 21)),
            add("inputData", ("d", 25)),
            check_new(("d", 25)),
        ],
        ci=True,
    ),
    case(
        WITHIN,
        "SPARK-39650: duplicate with specific keys should allow input to change schema",
        167,
        inputs={"dedupeInputData": "_1 STRING, _2 INT, _3 STRING"},
        output=("_1", "eventTime", "_3"),
        queries={
            "first run": Query(within_two_columns, within_two_columns_twin, output=("_1", "eventTime")),
            "second run": Query(within_three_columns, within_three_columns_twin),
        },
        steps=[
            StartStream(query="first run", checkpoint="checkpoint"),
            add("dedupeInputData", ("a", 1, None)),
            check_new(("a", 1)),
            add("dedupeInputData", ("a", 2, None), ("b", 3, None)),
            check_new(("b", 3)),
            StopStream(),
            StartStream(query="second run", checkpoint="checkpoint"),
            add("dedupeInputData", ("a", 5, "a"), ("b", 2, "b"), ("c", 9, "c")),
            check_new(("c", 9, "c")),
        ],
    ),
    case(
        WITHIN,
        "SPARK-50492: drop event time column after dropDuplicatesWithinWatermark",
        227,
        inputs={"inputData": "_1 INT, _2 INT"},
        output="_2",
        pipeline=drop_event_time,
        twin=drop_event_time_twin,
        steps=[add("inputData", (1, 2)), check_answer(2)],
    ),
]

NOT_EXPRESSIBLE = (
    [
        NotExpressible(
            SUITE,
            f"SPARK-39650: recovery from checkpoint having all columns as value schema with sparkVersion={version}",
            464,
            f"restores a checkpoint written by Spark {version} (a test resource)",
        )
        for version in ("3.3.0", "3.5.1")
    ]
    + [
        NotExpressible(
            SUITE,
            f"SPARK-39650: recovery from checkpoint with changes on key schema are not allowed with sparkVersion={version}",
            500,
            f"restores a checkpoint written by Spark {version} and checks Spark's state key schema compatibility error",
        )
        for version in ("3.3.0", "3.5.1")
    ]
    + [
        NotExpressible(
            SUITE,
            "non-binary collation aware deduplication not supported",
            562,
            "Spark's string collations (UTF8_LCASE) and the state store's refusal of them",
        ),
        NotExpressible(
            SUITE, "test that avro encoding is not supported", 585, "Spark's internal state store encoding format"
        ),
        NotExpressible(
            SUITE, "Partition key extraction - Dedupe", 600, "reads Spark's state store and its partition-key extractor"
        ),
        NotExpressible(WITHIN, "deduplicate in batch DataFrame", 34, "a batch (not streaming) DataFrame"),
        NotExpressible(
            WITHIN,
            "SPARK-46676: canonicalization of StreamingDeduplicateWithinWatermarkExec should work",
            206,
            "canonicalization of Spark's physical plan",
        ),
        NotExpressible(
            WITHIN,
            "Partition key extraction - DedupeWithinWatermark",
            241,
            "reads Spark's state store and its partition-key extractor",
        ),
    ]
)
