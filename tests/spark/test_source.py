"""The scripted source (``spark/source.py``): each scripted batch is exactly one Spark micro-batch, empty ones
included, two inputs advance in lockstep, timestamps come back to the millisecond, and a bad script is refused
before Spark runs."""

import os
import time

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StructField, StructType

from ministream.core.results import BatchResult
from ministream.spark import run_query, scripted_stream
from ministream.spark.source import write_script_files
from tests.spark.test_collect import BASE, SCHEMA, SOURCES, by_key, ev

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("source", SOURCES)
def test_each_scripted_batch_is_one_micro_batch_empty_ones_included(spark, source):
    """Scripted batch k is Spark's micro-batch k, an empty scripted batch an empty micro-batch, by either source."""
    script = [[ev("a", 1)], [], [], [ev("b", 2), ev("c", 3)], []]
    results = [
        BatchResult(r.batch_id, r.watermark, by_key(r.rows))
        for r in run_query(scripted_stream(spark, SCHEMA, script, source=source), "append")
    ]
    assert results == [
        BatchResult(0, None, [{"key": "a", "ts": 1000}]),
        BatchResult(1, None, []),
        BatchResult(2, None, []),
        BatchResult(3, None, by_key([{"key": "b", "ts": 2000}, {"key": "c", "ts": 3000}])),
        BatchResult(4, None, []),
    ]


def test_timestamps_round_trip_to_the_millisecond(spark):
    """Spark sees the exact instant (unix_millis) and the result comes back exact, whatever the local zone."""
    moments = [1, 999, 1_000, BASE + 1, BASE + 999, BASE - 1]
    df = scripted_stream(spark, SCHEMA, [[{"key": str(ms), "ts": ms} for ms in moments]])
    saved_tz = os.environ.get("TZ")
    os.environ["TZ"] = "America/New_York"  # the driver's zone must not leak into collected timestamps
    time.tzset()
    try:
        results = run_query(
            df.select(
                "key", "ts", F.unix_millis("ts").alias("millis"), F.date_format("ts", "HH:mm:ss.SSS").alias("clock")
            ),
            "append",
        )
    finally:
        if saved_tz is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = saved_tz
        time.tzset()
    rows = {row["key"]: row for row in results[0].rows}
    for ms in moments:
        assert rows[str(ms)]["ts"] == ms
        assert rows[str(ms)]["millis"] == ms
    assert rows["999"]["clock"] == "00:00:00.999"  # session time zone UTC
    assert rows[str(BASE + 1)]["clock"] == "10:00:00.001"


def test_two_inputs_advance_in_lockstep_union(spark):
    """Two scripted inputs of a union deliver their batch k in the same micro-batch k."""
    left = scripted_stream(spark, SCHEMA, [[ev("a", 1)], [], [ev("a", 3)], []])
    right = scripted_stream(spark, SCHEMA, [[], [ev("b", 2)], [ev("b", 3)], [ev("b", 4)]])
    results = run_query(left.unionByName(right), "append")
    assert [by_key(r.rows) for r in results] == [
        [{"key": "a", "ts": 1000}],
        [{"key": "b", "ts": 2000}],
        by_key([{"key": "a", "ts": 3000}, {"key": "b", "ts": 3000}]),
        [{"key": "b", "ts": 4000}],
    ]


def test_two_inputs_advance_in_lockstep_inner_join(spark):
    """Two scripted inputs of a join deliver their batch k in the same micro-batch k, so matches come in the batch
    of the later row."""
    left = scripted_stream(
        spark, "key STRING, lts TIMESTAMP", [[{"key": "a", "lts": 1000}], [{"key": "b", "lts": 2000}], []]
    )
    right = scripted_stream(
        spark, "key STRING, rts TIMESTAMP", [[], [{"key": "a", "rts": 1500}], [{"key": "b", "rts": 2500}]]
    )
    results = run_query(left.join(right, "key"), "append")
    assert results == [
        BatchResult(0, None, []),
        BatchResult(1, None, [{"key": "a", "lts": 1000, "rts": 1500}]),
        BatchResult(2, None, [{"key": "b", "lts": 2000, "rts": 2500}]),
    ]


def test_script_errors_are_caught_before_spark_runs(spark):
    """A row with a column the schema lacks, or a timestamp that is not int milliseconds, is refused before Spark
    starts a query."""
    with pytest.raises(ValueError, match="not in the schema"):
        scripted_stream(spark, SCHEMA, [[{"key": "a", "ts": 1, "colour": "red"}]])
    with pytest.raises(TypeError, match="int milliseconds"):
        scripted_stream(spark, SCHEMA, [[{"key": "a", "ts": "2024-01-01T00:00:00Z"}]])


def test_a_file_seen_with_a_later_time_hides_older_files_from_the_file_source(spark, tmp_path):
    """Spark's file source reads only files newer than its newest file seen minus ``maxFileAge`` (7 days): after
    a file with today's modification time, files dated 1970 are never read. So a file added to a running query's
    folder must get its time before it lands (``tests/conformance/spark_replay.py``, ``spark-facts.md``)."""
    schema = StructType([StructField("v", IntegerType())])
    folder, seen = tmp_path / "data", []
    folder.mkdir()
    query = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(folder))
        .writeStream.foreachBatch(lambda df, batch_id: seen.append(sorted(row.v for row in df.collect())))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    try:
        for n in (1, 2, 3, 4):
            staging = tmp_path / f"staging-{n}"
            staging.mkdir()
            write_script_files(schema, [[{"v": n}]], str(staging))
            (written,) = staging.iterdir()
            if n != 2:  # file 2 keeps today's time
                os.utime(written, (1_000_000 + n, 1_000_000 + n))
            written.rename(folder / f"part-{n}.parquet")
            query.processAllAvailable()
    finally:
        query.stop()
    assert seen == [[1], [2]]
