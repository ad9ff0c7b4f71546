"""Running a Spark query to the end (``spark/collect.py``): one BatchResult per micro-batch with its watermark,
a per-query configuration that does not leak into the session, and errors in plain terms after which the next
query runs (the scripted source itself: tests/spark/test_source.py)."""

import pytest
from pyspark.sql import functions as F

from ministream.core.results import BatchResult, normalize_row
from ministream.spark import ROCKSDB_STATE_STORE, SparkQueryError, run_query, scripted_stream
from ministream.spark.session import ROCKSDB_PROVIDER

pytestmark = pytest.mark.spark

SCHEMA = "key STRING, ts TIMESTAMP"
BASE = 1_704_103_200_000  # 2024-01-01T10:00:00Z


def ev(key, second, base=0):
    """A row with key ``key`` at ``second`` seconds (after ``base`` ms)."""
    return {"key": key, "ts": base + second * 1000}


def windowed_count(df):
    return (
        df.withWatermark("ts", "5 seconds")
        .groupBy(F.window("ts", "10 seconds"), "key")
        .count()
        .select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "key", "count")
    )


def by_key(rows):
    """Rows in a fixed order (Spark's order within a batch is not guaranteed)."""
    return sorted(rows, key=normalize_row)


SOURCES = ["files", "python"]
"""Both ways of reading a script (``scripted_stream``): Spark's file source (local masters) and the Python data
source (clusters). Each must give exactly the scripted batches."""


@pytest.mark.parametrize("source", SOURCES)
def test_measured_windowed_count_in_append_mode(spark, source):
    """The measured example of shared/spark-semantics.md, batch for batch."""
    script = [
        [ev("a", 1), ev("b", 2), ev("a", 3)],
        [ev("a", 12), ev("b", 4)],
        [ev("a", 25), ev("a", 11)],
        [ev("b", 40)],
    ]
    results = run_query(windowed_count(scripted_stream(spark, SCHEMA, script, source=source)), "append")
    assert [r.batch_id for r in results] == [0, 1, 2, 3, 4]  # 4 scripted batches + the trailing no-data batch
    assert [r.watermark for r in results] == [0, 0, 7_000, 20_000, 35_000]
    assert [by_key(r.rows) for r in results] == [
        [],
        [],
        [],
        by_key(
            [
                {"window_start": 0, "window_end": 10_000, "key": "a", "count": 2},
                {"window_start": 0, "window_end": 10_000, "key": "b", "count": 2},
                {"window_start": 10_000, "window_end": 20_000, "key": "a", "count": 2},
            ]
        ),
        [{"window_start": 20_000, "window_end": 30_000, "key": "a", "count": 1}],
    ]


def test_update_mode_running_count_has_no_watermark_and_no_extra_batch(spark):
    """Without a watermark, a running count in update mode has watermark None in every batch and no trailing
    no-data batch."""
    script = [
        [{"key": "a", "value": 1.0}, {"key": "b", "value": 2.0}, {"key": "a", "value": 0.5}],
        [],
        [{"key": "a", "value": 4.0}],
    ]
    df = scripted_stream(spark, "key STRING, value DOUBLE", script)
    results = run_query(df.groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("total")), "update")
    assert [(r.batch_id, r.watermark) for r in results] == [(0, None), (1, None), (2, None)]
    assert by_key(results[0].rows) == by_key(
        [{"key": "a", "count": 2, "total": 1.5}, {"key": "b", "count": 1, "total": 2}]
    )
    assert results[1].rows == []
    assert results[2].rows == [{"key": "a", "count": 3, "total": 5.5}]


def test_min_watermark_holds_at_zero_until_every_input_has_rows(spark):
    """Pitfall 3: a union's watermark (policy min) stays 0 while one input has produced nothing."""
    left = scripted_stream(spark, SCHEMA, [[ev("a", 10)], [ev("a", 20)], [ev("a", 30)], []])
    right = scripted_stream(spark, SCHEMA, [[], [], [ev("b", 5)], [ev("b", 6)]])
    union = left.withWatermark("ts", "0 seconds").unionByName(right.withWatermark("ts", "0 seconds"))
    assert [r.watermark for r in run_query(union, "append")] == [0, 0, 0, 5_000]
    with_max = run_query(union, "append", conf={"spark.sql.streaming.multipleWatermarkPolicy": "max"})
    assert [r.watermark for r in with_max] == [0, 10_000, 20_000, 30_000]
    assert spark.conf.get("spark.sql.streaming.multipleWatermarkPolicy") == "min"  # restored after the query


def test_append_aggregation_without_watermark_is_refused_then_next_query_runs(spark):
    """Spark's refusal of an append aggregation without a watermark comes back as one line with its error class,
    and the next query runs."""
    df = scripted_stream(spark, SCHEMA, [[ev("a", 1)]])
    with pytest.raises(SparkQueryError) as caught:
        run_query(df.groupBy("key").count(), "append")
    assert caught.value.error_class == "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION"
    message = str(caught.value)
    assert "append" in message and "without watermark" in message
    assert "\n" not in message and "at org.apache" not in message
    assert run_query(df.groupBy("key").count(), "update") == [BatchResult(0, None, [{"key": "a", "count": 1}])]


def test_failing_udf_is_reported_query_stopped_next_query_runs(spark):
    """A Python exception inside the query is reported in one line, the query is stopped, and its name is free for
    the next query."""

    @F.udf("long")
    def explode_on_b(key):
        if key == "b":
            raise ValueError(f"no b allowed, got {key}")
        return 1

    df = scripted_stream(spark, SCHEMA, [[ev("a", 1)], [ev("b", 2)], [ev("a", 3)]])
    with pytest.raises(SparkQueryError) as caught:
        run_query(df.select("key", explode_on_b("key").alias("one")), "append", query_name="failing_twin")
    assert caught.value.error_class == "PYTHON_EXCEPTION"
    assert str(caught.value) == (
        "Spark failed while running the query: PYTHON_EXCEPTION: ValueError: no b allowed, got b"
    )
    assert spark.streams.active == []
    results = run_query(df.select("key"), "append", query_name="failing_twin")  # same name is free again
    assert [r.rows for r in results] == [[{"key": "a"}], [{"key": "b"}], [{"key": "a"}]]


def test_per_query_conf_selects_rocksdb_state_for_that_query_only(spark, tmp_path):
    """A per-query conf (the RocksDB state store) applies to that query, is recorded in its checkpoint, and is
    undone afterwards."""
    df = scripted_stream(spark, SCHEMA, [[ev("a", 1), ev("a", 2)], [ev("a", 3)]])
    before = spark.conf.get("spark.sql.streaming.stateStore.providerClass", None)
    results = run_query(
        df.groupBy("key").count(), "update", conf=ROCKSDB_STATE_STORE, checkpoint_dir=str(tmp_path / "ckpt")
    )
    assert [r.rows for r in results] == [[{"key": "a", "count": 2}], [{"key": "a", "count": 3}]]
    assert ROCKSDB_PROVIDER in (tmp_path / "ckpt" / "offsets" / "0").read_text()  # recorded in the checkpoint
    assert spark.conf.get("spark.sql.streaming.stateStore.providerClass", None) == before
