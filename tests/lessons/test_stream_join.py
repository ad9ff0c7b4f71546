"""Lesson stream-join: ministream and its PySpark twin agree batch for batch, with the default events and with
other bounds and delays; the comparison fails when the twin's range differs by one millisecond."""

import attrs
import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.operators.stream_join import state_sizes_by_side
from ministream.time.units import format_clock

LESSON = get_lesson("stream-join")


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{}, {"within": "30 seconds", "click_delay": "2 seconds", "impression_delay": "25 seconds"}, {"campaign": "a"}],
    ids=["default", "within-30s-delays", "campaign-a"],
)
def test_matches_spark(params):
    """Every batch, its watermark and its joined rows are the same in ministream and in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


@pytest.mark.spark
def test_comparison_fails_when_the_twin_uses_a_strict_upper_bound():
    """A twin whose range is ``<`` instead of ``<=`` on a click exactly ``within`` after its impression
    makes the comparison fail on that row."""

    def strict_twin(inputs, params):
        from pyspark.sql import functions as F

        imps = (
            inputs["impressions"]
            .select(F.col("ad_id").alias("impression_ad"), F.col("ts").alias("impression_time"))
            .withWatermark("impression_time", "10 seconds")
        )
        clicks = (
            inputs["clicks"]
            .select(F.col("ad_id").alias("click_ad"), F.col("ts").alias("click_time"))
            .withWatermark("click_time", "10 seconds")
        )
        return imps.join(
            clicks,
            F.expr(
                "impression_ad = click_ad AND click_time >= impression_time AND "
                "click_time < impression_time + INTERVAL 13 SECONDS"
            ),
            "inner",
        )

    result = compare_lesson(attrs.evolve(LESSON, twin=strict_twin), params={"within": "13 seconds"})
    assert not result.matches
    assert "only in ministream: {impression_ad: b, impression_time: 2024-01-01T10:00:02Z" in result.table()


def test_default_events_show_state_growing_and_shrinking():
    """Each side's join state grows while the watermark lags, then shrinks as it evicts (trace, per side)."""
    run = LESSON.run(trace=True)
    assert state_sizes_by_side(run.trace, "join") == {"impressions": [2, 3, 4, 3, 3, 3], "clicks": [1, 5, 7, 3, 3, 1]}
    assert [line.batch_id for line in run.trace.of_kind("late")] == [4]


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run())
    for parallelism, seed in ((1, 5), (2, 0), (2, 9), (4, 1)):
        assert rows(LESSON.run(parallelism=parallelism, seed=seed)) == expected


def test_a_wider_range_keeps_impressions_longer():
    """With ``within`` = 30 s, b's click 28 s after its impression matches too."""
    rows = [row for batch in LESSON.run(params={"within": "30 seconds"}).output() for row in batch.rows]
    assert ("b", 1704103230000) in {(row["click_ad"], row["click_time"]) for row in rows}


def test_a_filter_after_the_join_runs_below_both_watermarks():
    """campaign=a keeps ad a's pairs with a filter after the join. Spark runs it below the impressions'
    watermark, and copied to click_ad below the clicks' (the keys are equal): only ad a's rows move the
    watermarks, which stay at 09:59:51 (a@1 - 10 s) until a@40, where b@2 and c@12 moved them before."""
    clock = {}
    for campaign in ("all", "a"):
        batches = LESSON.run(params={"campaign": campaign}).output()
        clock[campaign] = [format_clock(batch.watermark) if batch.watermark else 0 for batch in batches]
    assert clock["all"] == [0, "09:59:52", "10:00:02", "10:00:30", "10:00:35", "10:00:50"]
    assert clock["a"] == [0, "09:59:51", "09:59:51", "10:00:30", "10:00:30"]
    rows = [
        [(r["impression_ad"], r["click_time"]) for r in b.rows] for b in LESSON.run(params={"campaign": "a"}).output()
    ]
    assert [len(batch) for batch in rows] == [1, 0, 1, 1, 0]
