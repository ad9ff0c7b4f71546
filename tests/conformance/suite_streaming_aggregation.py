"""Spark's ``StreamingAggregationSuite``, replayed by ministream (and by Spark through each case's PySpark twin).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingAggregationSuite.scala`` (Spark
master of 2026-01-07). Most tests run twice, with the aggregation state format versions 1 and 2 (a storage
layout): one case each here, named after the first.
"""

import os

from ministream import Count, Custom, Tumbling
from tests.conformance.harness import (
    AdvanceManualClock,
    CheckWatermark,
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

SUITE = "StreamingAggregationSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingAggregationSuite.scala"
V1 = " - state format version 1"
INTS = {"inputData": "value INT"}


def versions(name: str) -> str:
    return name + V1


# -- queries -----------------------------------------------------------------------------------------------------


def count_by_value(inputs, name="inputData"):
    """``groupBy($"value").agg(count("*"))``."""
    return inputs[name].key_by("value").aggregate("counts", count=Count())


def count_by_value_twin(inputs, name="inputData"):
    from pyspark.sql import functions as F

    return inputs[name].groupBy("value").agg(F.count("*").alias("count"))


def counts(output_mode: str) -> Query:
    return Query(count_by_value, count_by_value_twin, output_mode)


def distinct_count(inputs):
    """``select($"*", explode($"_2") as "value").groupBy($"_1").agg(size(collect_set($"value")))``."""
    values = inputs["inputData"].flat_map("explode", lambda row: [{**row, "value": v} for v in row["_2"]])
    distinct = Custom(
        "value",
        create=frozenset,
        add=lambda seen, value: seen | {value},
        result=len,
        merge=lambda a, b: a | b,
    )
    return values.key_by("_1").aggregate("distinct", size=distinct)


def distinct_count_twin(inputs):
    from pyspark.sql import functions as F

    values = inputs["inputData"].select("*", F.explode("_2").alias("value"))
    return values.groupBy("_1").agg(F.size(F.collect_set("value")).alias("size"))


def sorted_counts(inputs):
    return count_by_value(inputs).sort("sort", "count", descending=True)


def sorted_counts_twin(inputs):
    from pyspark.sql import functions as F

    return count_by_value_twin(inputs).orderBy(F.col("count").desc())


def windowed_count(inputs):
    events = inputs["inputData"].map("event_time", lambda row: {**row, "eventTime": row["value"] * 1000})
    events = events.with_watermark("watermark", "eventTime", "10 seconds")
    windows = events.window("counts", Tumbling("5 seconds"), column="eventTime", count=Count())
    return windows.map("start", lambda row: {"start": row["window_start"] // 1000, "count": row["count"]})


def windowed_count_twin(inputs):
    from pyspark.sql import functions as F

    events = inputs["inputData"].withColumn("eventTime", F.timestamp_seconds("value"))
    windows = (
        events.withWatermark("eventTime", "10 seconds")
        .groupBy(F.window("eventTime", "5 seconds").alias("window"))
        .agg(F.count("*").alias("count"))
    )
    return windows.select(F.col("window.start").cast("long").alias("start"), "count")


def doubled_count(inputs):
    """``flatMap(x => Seq(x, x + 1)).toDF("value").groupBy($"value").agg(count("*"))``."""
    values = inputs["inputData"].flat_map(
        "and_next", lambda row: [{"value": row["value"]}, {"value": row["value"] + 1}]
    )
    return values.key_by("value").aggregate("counts", count=Count())


def doubled_count_twin(inputs):
    from pyspark.sql import functions as F

    values = inputs["inputData"].select(F.explode(F.array("value", F.col("value") + 1)).alias("value"))
    return values.groupBy("value").agg(F.count("*").alias("count"))


def two_key_count(inputs):
    """``groupBy($"value", $"value" + 1).agg(count("*"))``."""
    values = inputs["inputData"].map("next", lambda row: {"value": row["value"], "next": row["value"] + 1})
    return values.key_by(["value", "next"]).aggregate("counts", count=Count())


def two_key_count_twin(inputs):
    from pyspark.sql import functions as F

    return inputs["inputData"].groupBy("value", (F.col("value") + 1).alias("next")).agg(F.count("*").alias("count"))


def union_with_aggregate(inputs):
    """``input1.select($"value", $"value" + 1).union(input2.groupBy($"value").agg(count("*")))``: Spark's union
    matches columns by position, ministream's by name, so both sides call the second column ``second``."""
    plus_one = inputs["input1"].map("plus_one", lambda row: {"value": row["value"], "second": row["value"] + 1})
    counted = inputs["input2"].key_by("value").aggregate("counts", count=Count())
    counted = counted.select("rename", value="value", second="count")
    return plus_one.union("union", counted)


def union_with_aggregate_twin(inputs):
    from pyspark.sql import functions as F

    plus_one = inputs["input1"].select("value", (F.col("value") + 1).alias("second"))
    counted = inputs["input2"].groupBy("value").agg(F.count("*").alias("second"))
    return plus_one.union(counted)


def first_time(memory: dict) -> bool:
    """Spark's ``FailureSingleton.firstTime``, then set false: in the test's own process (a flag in
    ``memory``), or, when the function runs in Spark's Python workers (the compiled twin), in a file of the
    replay's folder, which every worker sees."""
    if "folder" not in memory:
        seen, memory["failed"] = memory.get("failed", False), True
        return not seen
    marker = os.path.join(memory["folder"], "failed-once")
    if os.path.exists(marker):
        return False
    open(marker, "w").close()
    return True


def failing_once(inputs):
    """``map { i => if (i == 4 && FailureSingleton.firstTime) { firstTime = false; sys.error(...) }; i }``."""
    memory = inputs.memory

    def fail_on_4_once(row: dict) -> dict:
        if row["value"] == 4 and first_time(memory):
            raise RuntimeError("injected failure")
        return row

    return inputs["inputData"].map("fail_once", fail_on_4_once).key_by("value").aggregate("counts", count=Count())


def failing_once_twin(inputs):
    from pyspark.sql import functions as F

    memory = inputs.memory

    def fail_on_4_once(value):
        if value == 4 and first_time(memory):
            raise RuntimeError("injected failure")
        return value

    values = inputs["inputData"].select(F.udf(fail_on_4_once, "int")("value").alias("value"))
    return values.groupBy("value").agg(F.count("*").alias("count"))


def static_join(inputs):
    """``streamInput.toDF().join(batchDF, $"value" === $"parity")`` where ``batchDF`` counts 1..5 by parity."""
    table = [{"parity": 0, "joinValue": 2}, {"parity": 1, "joinValue": 3}]
    return inputs["streamInput"].join_static("join", table, on={"value": "parity"})


def static_join_twin(inputs):
    from pyspark.sql import functions as F

    stream = inputs["streamInput"]
    numbers = stream.sparkSession.createDataFrame([(v,) for v in range(1, 6)], "value INT")
    batch = numbers.withColumn("parity", F.col("value") % 2).groupBy("parity").agg(F.count("*").alias("joinValue"))
    return stream.join(batch, stream["value"] == batch["parity"])


LAST = Custom("value", create=lambda: None, add=lambda last, value: value, merge=lambda a, b: b)
"""Spark's ``last($"value")``: the last value, in arrival order."""


def last_value(inputs):
    return inputs["input"].aggregate("last", last=LAST)


def last_value_twin(inputs):
    from pyspark.sql import functions as F

    return inputs["input"].agg(F.last("value").alias("last"))


def collected(inputs):
    """``selectExpr("value as group", "value").groupBy("group").agg(collect_list("value"))``."""
    groups = inputs["input"].map("group", lambda row: {"group": row["value"], "value": row["value"]})
    values = Custom("value", create=tuple, add=lambda seen, value: (*seen, value), merge=lambda a, b: a + b)
    return groups.key_by("group").aggregate("collect", values=values)


def collected_twin(inputs):
    from pyspark.sql import functions as F

    groups = inputs["input"].selectExpr("value as group", "value")
    return groups.groupBy("group").agg(F.collect_list("value").alias("values"))


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        versions("simple count, update mode"),
        89,
        inputs=INTS,
        output=("value", "count"),
        queries={"query": counts("update")},
        steps=[
            add("inputData", 3),
            check_last((3, 1)),
            add("inputData", 3, 2),
            check_last((3, 2), (2, 1)),
            StopStream(),
            StartStream(),
            add("inputData", 3, 2, 1),
            check_last((3, 3), (2, 2), (1, 1)),
            add("inputData", 4, 4, 4, 4),
            check_last((4, 4)),
        ],
        variants=2,
        ci=True,
    ),
    case(
        SUITE,
        versions("count distinct"),
        113,
        inputs={"inputData": "_1 INT, _2 ARRAY<INT>"},
        output=("_1", "size"),
        pipeline=distinct_count,
        twin=distinct_count_twin,
        output_mode="update",
        steps=[add("inputData", (1, [1, 2])), check_last((1, 2))],
        variants=2,
    ),
    case(
        SUITE,
        versions("simple count, complete mode"),
        129,
        inputs=INTS,
        output=("value", "count"),
        queries={"query": counts("complete")},
        steps=[
            add("inputData", 3),
            check_last((3, 1)),
            add("inputData", 2),
            check_last((3, 1), (2, 1)),
            StopStream(),
            StartStream(),
            add("inputData", 3, 2, 1),
            check_last((3, 2), (2, 2), (1, 1)),
            add("inputData", 4, 4, 4, 4),
            check_last((4, 4), (3, 2), (2, 2), (1, 1)),
        ],
        variants=2,
    ),
    case(
        SUITE,
        versions("simple count, append mode"),
        152,
        inputs=INTS,
        output=("value", "count"),
        queries={"query": counts("append")},
        steps=[ExpectFailure("append output mode cannot be used", "not supported")],
        variants=2,
    ),
    case(
        SUITE,
        versions("sort after aggregate in complete mode"),
        169,
        inputs=INTS,
        output=("value", "count"),
        pipeline=sorted_counts,
        twin=sorted_counts_twin,
        output_mode="complete",
        steps=[
            add("inputData", 3),
            check_last((3, 1), ordered=True),
            add("inputData", 2, 3),
            check_last((3, 2), (2, 1), ordered=True),
            StopStream(),
            StartStream(),
            add("inputData", 3, 2, 1),
            check_last((3, 3), (2, 2), (1, 1), ordered=True),
            add("inputData", 4, 4, 4, 4),
            check_last((4, 4), (3, 3), (2, 2), (1, 1), ordered=True),
        ],
        variants=2,
        ci=True,
    ),
    case(
        SUITE,
        versions("state metrics - append mode"),
        194,
        inputs=INTS,
        output=("start", "count"),
        pipeline=windowed_count,
        twin=windowed_count_twin,
        steps=[
            add("inputData", 15),
            StartStream(manual_clock=True),
            check_answer(),
            CheckWatermark(0),
            AdvanceManualClock(1_000),
            check_answer(),
            CheckWatermark(5_000),
            add("inputData", 10, 12, 14),
            AdvanceManualClock(1_000),
            check_answer(),
            add("inputData", 25),
            AdvanceManualClock(1_000),
            check_answer(),
            AdvanceManualClock(1_000),
            check_answer((10, 3)),
            CheckWatermark(15_000),
        ],
        variants=2,
        spark="a manual clock (Spark's StreamManualClock is a class of its tests, out of PySpark's reach)",
        notes="The state metrics are not checked; the watermarks the test's comments give are.",
    ),
    case(
        SUITE,
        versions("state metrics - update/complete mode"),
        276,
        inputs=INTS,
        output=("value", "count"),
        queries={
            "update": Query(doubled_count, doubled_count_twin, "update"),
            "complete": Query(doubled_count, doubled_count_twin, "complete"),
        },
        steps=[
            add("inputData", 1),
            check_last((1, 1), (2, 1)),
            add("inputData", 2, 3),
            check_last((2, 2), (3, 2), (4, 1)),
            NewStream(query="complete"),
            add("inputData", 1),
            check_last((1, 1), (2, 1)),
            add("inputData", 2, 3),
            check_last((1, 1), (2, 2), (3, 2), (4, 1)),
        ],
        variants=2,
        notes="The state metrics are not checked. The typed flatMap is written as an explode in the twin.",
    ),
    case(
        SUITE,
        versions("multiple keys"),
        329,
        inputs=INTS,
        output=("value", "next", "count"),
        pipeline=two_key_count,
        twin=two_key_count_twin,
        output_mode="update",
        steps=[
            add("inputData", 1, 2),
            check_last((1, 2, 1), (2, 3, 1)),
            add("inputData", 1, 2),
            check_last((1, 2, 2), (2, 3, 2)),
        ],
        variants=2,
    ),
    case(
        SUITE,
        versions("SPARK-29438: ensure UNION doesn't lead streaming aggregation to use shifted partition IDs"),
        346,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("value", "second"),
        pipeline=union_with_aggregate,
        twin=union_with_aggregate_twin,
        output_mode="update",
        steps=[
            add_many(input1=[11, 12], input2=[21, 22]),
            check_new((11, 12), (12, 13), (21, 1), (22, 1)),
            StopStream(),
            StartStream(),
            add_many(input1=[13, 14], input2=[22, 23]),
            check_new((13, 14), (14, 15), (22, 2), (23, 1)),
        ],
        variants=2,
        notes="The test restarts with new MemoryStreams of another partitioning that replay the first batch: "
        "the same inputs, restarted.",
    ),
    case(
        SUITE,
        versions("midbatch failure"),
        389,
        inputs=INTS,
        output=("value", "count"),
        pipeline=failing_once,
        twin=failing_once_twin,
        output_mode="update",
        steps=[
            StartStream(),
            add("inputData", 1, 2, 3, 4),
            ExpectFailure("injected failure", "injected failure"),
            StartStream(),
            check_last((1, 1), (2, 1), (3, 1), (4, 1)),
        ],
        variants=2,
    ),
    case(
        SUITE,
        versions("SPARK-19690: do not convert batch aggregation in streaming query to streaming"),
        526,
        inputs={"streamInput": "value INT"},
        output=("value", "parity", "joinValue"),
        pipeline=static_join,
        twin=static_join_twin,
        steps=[
            add("streamInput", 0, 1, 2, 3),
            check_last((0, 0, 2), (1, 1, 3)),
            add("streamInput", 0, 1, 2, 3),
            check_last((0, 0, 2), (1, 1, 3)),
        ],
        variants=2,
        ci=True,
        notes="The static side is the test's batch aggregate, computed: (parity 0, 2 values), (1, 3).",
    ),
    case(
        SUITE,
        versions("SPARK-22230: last should change with new batches"),
        681,
        inputs={"input": "value INT"},
        output="last",
        pipeline=last_value,
        twin=last_value_twin,
        output_mode="complete",
        steps=[
            add("input", 1, 2, 3),
            check_last(3),
            add("input", 4, 5, 6),
            check_last(6),
            add("input"),
            check_last(6),
            add("input", 0),
            check_last(0),
        ],
        variants=2,
        ci=True,
    ),
    case(
        SUITE,
        versions("SPARK-23004: Ensure that TypedImperativeAggregate functions do not throw errors"),
        697,
        inputs={"input": "value INT"},
        output=("group", "values"),
        pipeline=collected,
        twin=collected_twin,
        output_mode="update",
        conf={"spark.sql.shuffle.partitions": "1"},
        steps=[add("input", *range(1, 129))],
        variants=2,
        notes="The test only runs the batch (a regression of Spark's sort-based aggregation fallback).",
    ),
    case(
        SUITE,
        "SPARK-35896: metrics in StateOperatorProgress are output correctly",
        821,
        inputs=INTS,
        output=("value", "count"),
        queries={
            "aggregated": counts("update"),
            "aggregated, complete": counts("complete"),
            "aggWithWatermark": Query(windowed_count, windowed_count_twin, "append", output=("start", "count")),
        },
        steps=[
            add("inputData", 3, 2, 1, 3),
            check_last((3, 2), (2, 1), (1, 1)),
            add("inputData", 1, 4),
            check_last((1, 2), (4, 1)),
            NewStream(query="aggregated, complete"),
            add("inputData", 3, 2, 1, 3),
            check_last((3, 2), (2, 1), (1, 1)),
            add("inputData", 1, 4),
            check_last((3, 2), (2, 1), (1, 2), (4, 1)),
            NewStream(query="aggWithWatermark"),
            add("inputData", 3, 2, 1, 9),
            check_last(),
            add("inputData", 25),
            check_last((0, 3), (5, 1)),
        ],
        notes="The state metrics are not checked; each testStream starts on fresh inputs (inputData.reset()).",
    ),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        versions("prune results by current_time or localtimestamp, complete mode"),
        415,
        "current_timestamp() in an expression (the batch timestamp as a value of each row): ministream's row "
        "functions see the row only; and the test purges Spark's commit log (q.commitLog.purge) to make the "
        "restarted query run its last batch again",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions("prune results by current_date, complete mode"),
        477,
        "current_date() in an expression (the batch timestamp as a value of each row): ministream's row "
        "functions see the row only; and the test purges Spark's commit log (q.commitLog.purge) to make the "
        "restarted query run its last batch again",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions("SPARK-21977: coalesce(1) with 0 partition RDD should be repartitioned to 1"),
        595,
        "a custom source of Spark's tests that makes batches of 0 partitions, and checks of the physical plan",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions(
            "SPARK-21977: coalesce(1) with aggregation should still be repartitioned when it has non-empty "
            "grouping keys"
        ),
        634,
        "a custom source of Spark's tests and checks of the physical plan's exchanges",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions("changing schema of state when restarting query"),
        772,
        "Spark's state schema compatibility check on restart (StateStoreValueSchemaNotCompatible)",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions("changing schema of state when restarting query - schema check off"),
        798,
        "Spark's state schema compatibility check, switched off",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        versions("test that avro encoding is not supported"),
        879,
        "Spark's internal state store encoding format (avro)",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        "simple count, update mode - recovery from checkpoint uses state format version 1",
        722,
        "restores a checkpoint written by Spark 2.3.1 and inspects the state format version in the plan",
    ),
]
