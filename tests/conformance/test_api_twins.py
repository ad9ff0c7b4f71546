"""ministream's own cases for parts of the plan API that no upstream test exercises positively, each with a
hand-written PySpark twin, replayed by the same harness as the upstream cases (in ministream, and in Spark:
these run in CI).

The other new parts of the API (union, one-sided join conditions, null-safe keys, USING joins, an inner
stream-static join, window columns, whole-row deduplication, global aggregates, sorting in complete mode,
durations in months and ANSI intervals, trigger kinds, process initial state and output event time) are
exercised by upstream cases whose twins CI runs (``tutorials/conformance.md``); these add a pair condition
next to a time range, and a left outer stream-static join.
"""

import pytest

from ministream.time.ranges import TimeRange
from tests.conformance.harness import add, add_many, case, check_new, run_engine

SUITE = "ministream"

TRIPLES = {"left": "lk INT, lt INT, lv INT", "right": "rk INT, rt INT, rv INT"}


def _side(stream, prefix):
    k, t, v = f"{prefix}k", f"{prefix}t", f"{prefix}v"
    rows = stream.map(f"{prefix}_seconds", lambda row: {k: row[k], t: row[t] * 1000, v: row[v]})
    return rows.select(f"{prefix}_select", **{k: k, t: t, v: v}).with_watermark(f"{prefix}_watermark", t, "10 seconds")


def pair_condition(inputs):
    """``lk = rk AND rt BETWEEN lt AND lt + interval 10 seconds AND lv < rv``: the last part reads both rows."""
    left, right = _side(inputs["left"], "l"), _side(inputs["right"], "r")
    joined = left.key_by("lk").join(
        "join",
        right.key_by("rk"),
        between=TimeRange("lt", "rt", lower=0, upper=10_000),
        where=lambda left_row, right_row: left_row["lv"] < right_row["rv"],
    )
    return joined.map("seconds", lambda row: {"lk": row["lk"], "lt": row["lt"] // 1000, "rt": row["rt"] // 1000})


def pair_condition_twin(inputs):
    from pyspark.sql import functions as F

    def side(df, prefix):
        k, t, v = f"{prefix}k", f"{prefix}t", f"{prefix}v"
        return df.select(k, F.timestamp_seconds(t).alias(t), v).withWatermark(t, "10 seconds")

    left, right = side(inputs["left"], "l"), side(inputs["right"], "r")
    joined = left.join(right, F.expr("lk = rk AND rt BETWEEN lt AND lt + interval 10 seconds AND lv < rv"))
    return joined.select("lk", F.col("lt").cast("int").alias("lt"), F.col("rt").cast("int").alias("rt"))


NAMES = [{"k": 1, "name": "one"}, {"k": 2, "name": "two"}]


def static_left_outer(inputs):
    """``events.join(names, "k", "left_outer")`` with a fixed table of names."""
    return inputs["events"].join_static("names", NAMES, on="k", how="left_outer")


def static_left_outer_twin(inputs):
    events = inputs["events"]
    names = events.sparkSession.createDataFrame([(row["k"], row["name"]) for row in NAMES], "k INT, name STRING")
    return events.join(names, "k", "left_outer").select("k", "v", "name")


CASES = [
    case(
        SUITE,
        "inner join with a time range and a condition on the pair",
        0,
        inputs=TRIPLES,
        output=("lk", "lt", "rt"),
        pipeline=pair_condition,
        twin=pair_condition_twin,
        steps=[
            add_many(left=[(1, 1, 5), (2, 2, 5)], right=[(1, 3, 6), (2, 4, 4)]),
            check_new((1, 1, 3)),  # key 2 is in range, but 5 < 4 fails
            add("right", (1, 20, 9)),
            check_new(),  # 19 s after left 1: out of range
            add("left", (1, 15, 1)),
            check_new((1, 15, 20)),
        ],
        ci=True,
    ),
    case(
        SUITE,
        "left outer stream-static join",
        0,
        inputs={"events": "k INT, v INT"},
        output=("k", "v", "name"),
        pipeline=static_left_outer,
        twin=static_left_outer_twin,
        steps=[
            add("events", (1, 10), (3, 30)),
            check_new((1, 10, "one"), (3, 30, None)),
            add("events", (2, 20)),
            check_new((2, 20, "two")),
        ],
        ci=True,
    ),
]


@pytest.mark.parametrize("twin_case", CASES, ids=lambda c: c.test)
def test_engine(twin_case):
    """ministream gives the rows each of its own cases expects, batch by batch."""
    run_engine(twin_case)


@pytest.mark.spark
@pytest.mark.parametrize("twin_case", CASES, ids=lambda c: c.test)
def test_spark(twin_case, spark):
    """The case's hand-written PySpark twin gives the same rows on Spark, batch by batch."""
    from tests.conformance.spark_replay import run_spark

    run_spark(twin_case, spark)


def test_processing_time_windows_run_in_the_continuous_model_only():
    """A processing-time window (Flink's) takes the clock's time when a row arrives, and fires as the clock
    passes its end; the micro-batch model refuses it (Spark has none)."""
    from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling, run_microbatch
    from ministream.errors import PipelineError
    from ministream.models.continuous import run_continuous
    from ministream.time.clock import ClockStep

    def flow(*clock):
        script = [[{"key": "a", "ts": 0}, ClockStep("4 seconds"), {"key": "a", "ts": 0}, {"key": "b", "ts": 0}, *clock]]
        flow = Dataflow("processing-time")
        flow.source("events", ScriptedSource(script)).key_by("key").window(
            "counts", Tumbling("5 seconds"), processing_time=True, count=Count()
        ).sink("output", CollectingSink())
        return flow

    with pytest.raises(PipelineError, match="processing-time window"):
        run_microbatch(flow(), output_mode="update")
    rows = run_continuous(flow(ClockStep("1 second"))).output("output")[0].rows  # the clock reaches 5 s
    assert rows == [
        {"key": "a", "window_start": 0, "window_end": 5000, "count": 2},
        {"key": "b", "window_start": 0, "window_end": 5000, "count": 1},
    ]
    assert run_continuous(flow()).output("output")[0].rows == []  # the clock never reaches 5 s: nothing fires
