"""Lesson output-modes: the same windows in append, update and complete mode agree with Spark batch for batch,
and each mode emits what its rule says."""

import pytest

from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("output-modes")


def windows(run):
    return [
        sorted((r["key"], r["window_start"] % 60_000 // 1000, r["count"], r["spread"]) for r in b.rows)
        for b in run.output()
    ]


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [
        {"mode": "append"},
        {"mode": "update"},
        {"mode": "complete"},
        {"mode": "update", "size": "5 seconds", "delay": "3 seconds"},
    ],
    ids=["append", "update", "complete", "update-size-5s-delay-3s"],
)
def test_matches_spark(params):
    """In each output mode, every batch is the same as in Spark (the user-defined spread included)."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_append_emits_each_window_once_and_final():
    """Append: [:00, :10) in batch 2 when WM_2 = :11, [:10, :20) in the no-data batch 5; nothing twice."""
    assert windows(LESSON.run(params={"mode": "append"})) == [
        [],
        [],
        [("a", 0, 4, 8.0), ("b", 0, 1, 0.0)],
        [],
        [],
        [("a", 10, 1, 0.0), ("b", 10, 3, 2.0)],
    ]


def test_update_emits_what_each_batch_changed():
    """Update: each batch its touched windows, full value; the late row a at :03 in batch 3 changes nothing."""
    assert windows(LESSON.run(params={"mode": "update"})) == [
        [("a", 0, 2, 4.0), ("b", 0, 1, 0.0)],
        [("a", 0, 3, 5.0), ("a", 10, 1, 0.0), ("b", 10, 1, 0.0)],
        [("a", 0, 4, 8.0), ("a", 20, 1, 0.0), ("b", 10, 2, 1.0)],
        [("b", 10, 3, 2.0)],
        [("a", 30, 1, 0.0)],
        [],
    ]


def test_complete_emits_every_window_and_counts_the_late_row():
    """Complete: the last batch holds every window ever seen, [:00, :10) of a with the row at :03 (count 5)."""
    last = windows(LESSON.run(params={"mode": "complete"}))[-1]
    assert last == [
        ("a", 0, 5, 8.0),
        ("a", 10, 1, 0.0),
        ("a", 20, 1, 0.0),
        ("a", 30, 1, 0.0),
        ("b", 0, 1, 0.0),
        ("b", 10, 3, 2.0),
    ]


def test_an_unknown_mode_is_refused():
    """--param mode=sometimes is refused with the modes there are."""
    with pytest.raises(PipelineError, match="must be one of append, update, complete"):
        LESSON.run(params={"mode": "sometimes"})


def test_same_output_for_any_parallelism_and_seed():
    """In every mode the batches are the same for parallelism 1, 2 and 4 and several seeds."""
    for mode in ("append", "update", "complete"):
        expected = windows(LESSON.run(params={"mode": mode}))
        for parallelism, seed in ((2, 1), (4, 9)):
            assert windows(LESSON.run(params={"mode": mode}, parallelism=parallelism, seed=seed)) == expected
