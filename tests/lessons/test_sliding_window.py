"""Lesson sliding-window: ministream and its PySpark twin agree batch for batch, with the default settings,
with a start offset and with another size and slide."""

import pytest

from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("sliding-window")


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{}, {"offset": "2 seconds"}, {"size": "7 seconds", "slide": "3 seconds"}],
    ids=["default", "offset-2s", "size-7s-slide-3s"],
)
def test_matches_spark(params):
    """Every batch is the same as in Spark, also when the slide does not divide the size."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_an_event_counts_in_every_window_that_contains_it():
    """With 10-second windows every 5 seconds, the first event of a (at :01) counts in [:55, :05) and
    [:00, :10); the late row at :08 counts only in [:05, :15)."""
    run = LESSON.run()
    firsts = {(r["key"], r["window_start"] % 60_000 // 1000): r["count"] for b in run.output() for r in b.rows}
    assert firsts[("a", 55)] == 2 and firsts[("a", 0)] == 4 and firsts[("a", 5)] == 4
    assert [(late.row["ts"] % 60_000, late.window[0] % 60_000) for late in run.late_rows()] == [(8_000, 0)]


def test_an_offset_shifts_every_window():
    """With offset 2 seconds every window starts at :02, :07, :12..."""
    starts = {r["window_start"] % 5_000 for b in LESSON.run(params={"offset": "2 seconds"}).output() for r in b.rows}
    assert starts == {2_000}


def test_a_negative_offset_is_a_parameter_too():
    """--param offset=-2 seconds is accepted (Spark takes a negative startTime)."""
    starts = {r["window_start"] % 5_000 for b in LESSON.run(params={"offset": "-2 seconds"}).output() for r in b.rows}
    assert starts == {3_000}


@pytest.mark.parametrize(
    "params, message",
    [
        ({"slide": "20 seconds"}, "the slide .20 seconds. must be at most the window size .10 seconds."),
        ({"offset": "5 seconds"}, "a window offset .5 seconds. must be shorter than the slide .5 seconds."),
    ],
)
def test_shapes_spark_refuses_are_refused(params, message):
    """A slide longer than the window, or an offset of a whole slide, is refused with Spark's reason."""
    with pytest.raises(PipelineError, match=message):
        LESSON.run(params=params)


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(repr, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run())
    for parallelism in (1, 2, 4):
        for seed in (0, 3):
            assert rows(LESSON.run(parallelism=parallelism, seed=seed)) == expected
