"""Lesson state-backends: the same output on every backend and in Spark on both of its state store providers;
the external store's crash; the state after every batch equal to Spark's state data source."""

import tempfile

import pytest

from ministream.checkpoints.storage import folder_outline
from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.state_backends import external_store_crash
from ministream.lessons.state_compare import compare_state, ministream_state_rows

LESSON = get_lesson("state-backends")


def _counts(run) -> list:
    return [sorted((row["key"], row["count"], row["sum"]) for row in batch.rows) for batch in run.output()]


def test_the_output_does_not_depend_on_the_backend():
    """The lesson's running count is the same, batch for batch, in memory, in RocksDB and in Redis."""
    outputs = [_counts(LESSON.run(params={"backend": backend})) for backend in ("memory", "rocksdb", "redis")]
    assert (
        outputs[0]
        == outputs[1]
        == outputs[2]
        == [
            [("a", 2, 4.0), ("b", 1, 10.0)],
            [("a", 3, 9.0), ("c", 1, 1.0)],
            [("b", 3, 13.0)],
        ]
    )


def test_naive_writes_to_an_external_store_count_the_replayed_batch_twice():
    """Batch 1 (a and c) is written, the job crashes before committing it, and the restart writes it again."""
    final = {row["key"]: row["count"] for batch in LESSON.run().output() for row in batch.rows}
    assert external_store_crash(versioned=False) == {"a": final["a"] + 1, "b": final["b"], "c": final["c"] + 1}
    assert external_store_crash(versioned=True) == final


def test_ministream_state_rows_after_every_batch():
    """`ministream state` shows each key's count as it stands after every batch."""
    rows = [sorted((r["key"], r["value"]) for r in batch.rows) for batch in ministream_state_rows(LESSON)]
    assert rows == [
        [(("a",), (2, 4.0)), (("b",), (1, 10.0))],
        [(("a",), (3, 9.0)), (("b",), (1, 10.0)), (("c",), (1, 1.0))],
        [(("a",), (3, 9.0)), (("b",), (3, 13.0)), (("c",), (1, 1.0))],
    ]


@pytest.mark.spark
@pytest.mark.parametrize("backend", ["memory", "rocksdb"])
def test_twin_matches_on_both_spark_state_stores(spark, backend):
    """The twin gives ministream's batches on Spark's HDFS-backed and on its RocksDB state store."""
    assert compare_lesson(LESSON, params={"backend": backend}).matches


@pytest.mark.spark
@pytest.mark.parametrize(("backend", "files"), [("memory", "{1..3}.delta"), ("rocksdb", "{1..3}.zip")])
def test_spark_checkpoint_of_each_state_store(spark, backend, files):
    """HDFSBackedStateStoreProvider writes N.delta files; RocksDBStateStoreProvider N.zip and SST files."""
    with tempfile.TemporaryDirectory() as checkpoint:
        LESSON.run_twin(params={"backend": backend}, checkpoint_dir=checkpoint)
        outline = folder_outline(checkpoint)
    assert f"state/0/{{0..1}}/{files}" in outline.splitlines()
    assert ("SSTs/" in outline) == (backend == "rocksdb")


@pytest.mark.spark
@pytest.mark.parametrize("name", ["state-backends", "running-aggregation"])
def test_state_after_every_batch_equals_sparks(spark, name):
    """After every batch, ministream's state (kept in RocksDB) equals what Spark's state reader reads."""
    result = compare_state(get_lesson(name), state_backend="rocksdb")
    assert result.matches, result.table()
