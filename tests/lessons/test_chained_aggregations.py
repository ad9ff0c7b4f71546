"""Lesson chained-aggregations: ministream and its PySpark twin (two windowed aggregations in append mode, the
second over ``window_time``) agree batch for batch, on the default trips, with another delay and on random
trips; both steps emit an hour in the same batch, and the first step's output is never late for the second."""

import os
import random

import attrs
import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.chained_aggregations import HOUR

LESSON = get_lesson("chained-aggregations")
RUNS = int(os.environ.get("MINISTREAM_FUZZ_RUNS", "3"))


def tops(run) -> list[list[tuple]]:
    return [[(row["window_start"], row["driver"], row["total"]) for row in batch.rows] for batch in run.output()]


@pytest.mark.spark
@pytest.mark.parametrize("params", [{}, {"delay": "0 seconds"}, {"delay": "30 minutes"}], ids=["default", "0s", "30m"])
def test_matches_spark(params):
    """Every batch, its watermark and the trailing no-data batch are the same in ministream and in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


@pytest.mark.spark
def test_random_trips_match_spark():
    """On random trips (ties between drivers, trips near an hour's end, late trips), every batch is Spark's."""
    rng = random.Random("chained-aggregations")
    for _ in range(RUNS):
        script = LESSON.random_script(rng, LESSON.resolve_params())
        result = compare_lesson(LESSON, script)
        assert result.matches, f"script {script}\n{result.table()}"


@pytest.mark.spark
def test_comparison_fails_when_the_twin_breaks_ties_the_other_way():
    """A twin that keeps the smallest driver name among equal totals disagrees on a tie."""
    from pyspark.sql import functions as F

    def other_ties(inputs, params):
        trips = inputs["trips"].withWatermark("ts", f"{params['delay']} milliseconds")
        hourly = trips.groupBy(F.window("ts", "1 hour"), "driver").agg(F.sum("fare").alias("total"))
        top = hourly.groupBy(F.window(F.window_time("window"), "1 hour")).agg(
            F.max(F.struct("total", F.expr("-cast(substring(driver, 2) AS INT)").alias("d"), "driver")).alias("top")
        )
        return top.select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            F.col("top.driver").alias("driver"),
            F.col("top.total").alias("total"),
        )

    tie = [[{"ts": 1_704_103_200_000 + 60_000, "driver": "d1", "fare": 5.0},
            {"ts": 1_704_103_200_000 + 120_000, "driver": "d2", "fare": 5.0}],
           [{"ts": 1_704_103_200_000 + 2 * HOUR, "driver": "d1", "fare": 1.0}]]  # fmt: skip
    result = compare_lesson(attrs.evolve(LESSON, twin=other_ties), tie)
    assert not result.matches
    assert "only in ministream: {window_start: 2024-01-01T10:00:00Z, window_end: 2024-01-01T11:00:00Z, driver: d2" in (
        result.table()
    )


def test_each_hour_comes_out_of_both_steps_in_the_same_batch():
    """Hour 10 leaves the first step in batch 2 and the second step emits its top driver in batch 2 too; hour 11
    in the no-data batch 5 (the trace names both steps' emissions)."""
    run = LESSON.run(trace=True)
    emitted = [(line.batch_id, line.step) for line in run.trace.of_kind("emit")]
    assert sorted(set(emitted)) == [(2, "hourly_sums"), (2, "top_driver"), (5, "hourly_sums"), (5, "top_driver")]
    assert [len(batch.rows) for batch in run.output()] == [0, 0, 1, 0, 0, 1]


def test_the_late_trip_is_dropped_by_the_first_step_only():
    """d1's trip at 10:58 arrives in batch 3, after hour 10 closed: the first step drops it as late; the second
    step never drops a row (what the first emits is never behind its watermark)."""
    run = LESSON.run(trace=True)
    late = [(line.batch_id, line.step) for line in run.trace.of_kind("late")]
    assert late == [(3, "hourly_sums")]
    assert tops(run)[2] == [(1_704_103_200_000, "d2", 24.0)]


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""
    expected = tops(LESSON.run())
    for parallelism, seed in ((1, 3), (2, 0), (4, 7)):
        assert tops(LESSON.run(parallelism=parallelism, seed=seed)) == expected
