"""Lesson tumbling-window: ministream and its PySpark twin agree batch for batch, with the default settings and
with other window sizes and delays; the comparison fails on a twin with other windows."""

import attrs
import pytest

from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("tumbling-window")


def rows(run):
    return [sorted(map(repr, batch.rows)) for batch in run.output()]


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{}, {"size": "5 seconds", "delay": "0 seconds"}, {"delay": "12 seconds"}],
    ids=["default", "size-5s-delay-0", "delay-12s"],
)
def test_matches_spark(params):
    """Every batch (rows, watermark, the trailing no-data batch) is the same as in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


@pytest.mark.spark
def test_comparison_fails_when_the_twin_has_other_windows():
    """A twin with 20-second windows gives other rows: the comparison says so, row by row."""
    from pyspark.sql import functions as F

    def wrong_twin(inputs, params):
        events = inputs["events"].withWatermark("ts", "5 seconds")
        windows = events.groupBy("key", F.window("ts", "20 seconds")).agg(
            F.count("*").alias("count"), F.sum("value").alias("sum"), F.max("value").alias("max")
        )
        return windows.select(
            "key",
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "count",
            "sum",
            "max",
        )

    result = compare_lesson(attrs.evolve(LESSON, twin=wrong_twin))
    assert not result.matches
    assert "only in ministream: {key: a, window_start: 2024-01-01T10:00:10Z" in result.table()


def test_default_events_give_the_measured_spark_answer():
    """Windows [:00, :10) a=2 b=2 and [:10, :20) a=2 come out in batch 3, [:20, :30) a=1 in the no-data batch 4
    (the answer measured on Spark 4.3, spark-semantics.md)."""
    run = LESSON.run()
    shown = [sorted((r["key"], r["window_start"] % 60_000 // 1000, r["count"]) for r in b.rows) for b in run.output()]
    assert shown == [[], [], [], [("a", 0, 2), ("a", 10, 2), ("b", 0, 2)], [("a", 20, 1)]]
    assert [w % 60_000 // 1000 if w else 0 for w in run.watermarks] == [0, 58, 7, 20, 35]


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""
    expected = rows(LESSON.run())
    for parallelism in (1, 2, 4):
        for seed in (0, 7, 99):
            assert rows(LESSON.run(parallelism=parallelism, seed=seed)) == expected


def test_a_zero_window_is_refused_in_the_users_terms():
    """--param size=0 is refused before anything runs."""
    with pytest.raises(PipelineError, match="size: must be longer than zero"):
        LESSON.run(params={"size": "0 seconds"})


def test_the_trace_says_why_each_window_was_emitted():
    """The trace explains every emitted window with the watermark that made it final."""
    text = LESSON.run(trace=True).trace.format()
    assert (
        "[per_window] emit: window [10:00:00, 10:00:10) of key 'a' emitted: end <= watermark 10:00:20: "
        "final (append mode emits a window once, then removes it)"
    ) in text
    assert "batch 4: watermark 2024-01-01T10:00:35Z" in text and "[no-data batch" in text
