"""Lesson idle-input: under min an idle input holds the watermark at 0, under max it does not and the slow
input's rows are dropped as late; both match Spark."""

import pytest

from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("idle-input")


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{"policy": "min"}, {"policy": "max", "within": "40 seconds", "delay": "5 seconds"}],
    ids=["min", "max-40s-5s"],
)
def test_matches_spark(params):
    """The watermark of every batch and the joined rows are the same as in Spark, under both policies."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_min_holds_the_watermark_at_zero_while_an_input_is_idle():
    """Until the clicks produce a row (batch 3), the watermark stays at 0 and nothing is evicted."""
    run = LESSON.run(params={"policy": "min"}, trace=True)
    assert [batch.watermark for batch in run.output()][:4] == [0, 0, 0, 0]
    assert [summary.state_sizes["join"] for summary in run.trace.batches][:3] == [2, 3, 4]


def test_max_drops_the_slow_inputs_click_and_pads_its_impression():
    """Under max the click on a (10:00:04) is late in batch 3, and impression a comes out with nulls."""
    run = LESSON.run(params={"policy": "max"}, trace=True)
    assert [line.row["click_ad"] for line in run.trace.of_kind("late")] == ["a"]
    padded = sorted(row["impression_ad"] for batch in run.output() for row in batch.rows if row["click_ad"] is None)
    assert padded == ["a", "b"]
