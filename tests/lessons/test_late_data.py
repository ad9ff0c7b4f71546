"""Lesson late-data: ministream agrees with Spark batch for batch, and every row the watermark drops is
counted and shown: in the trace, in run.late_rows() and in the late side output."""

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.tools.cli import main

LESSON = get_lesson("late-data")


@pytest.mark.spark
@pytest.mark.parametrize("params", [{}, {"delay": "2 seconds"}], ids=["default", "delay-2s"])
def test_matches_spark(params):
    """Every batch is the same as in Spark (Spark drops the same rows, silently)."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_late_rows_are_counted_and_kept_with_their_rule():
    """Two rows are late, both in batch 3 against WM_2 = 10:00:10; each comes with its window and rule."""
    late = LESSON.run().late_rows()
    assert [(row.batch_id, row.row["key"], row.row["ts"] % 60_000) for row in late] == [
        (3, "a", 9_000),
        (3, "b", 4_000),
    ]
    assert late[0].rule == "end 10:00:10 <= watermark 10:00:10 of the previous batch"
    assert late[0].window[1] % 60_000 == 10_000 and late[0].step == "per_window"


def test_late_rows_reach_the_side_output_in_their_batch():
    """The late side output holds the two late rows, in batch 3."""
    batches = LESSON.run().output("late")
    assert [[row["ts"] % 60_000 for row in batch.rows] for batch in batches] == [[], [], [], [9_000, 4_000], []]


def test_a_row_on_the_watermark_counts_and_a_row_in_a_window_ending_there_does_not():
    """With the watermark at 10:00:10, a at :10 counts in [:10, :20) while a at :09 (window end :10) is late;
    a at :09.999 arrived a batch earlier and counted, because rows are filtered with the previous watermark."""
    last = LESSON.run().output()[4].rows
    assert {(r["key"], r["count"], r["sum"]) for r in last} == {("a", 2, 13.0), ("b", 1, 6.0)}
    first = LESSON.run().output()[2].rows
    assert {(r["key"], r["count"]) for r in first} == {("a", 4), ("b", 1)}


def test_a_longer_delay_drops_nothing():
    """With a 20-second delay the watermark never passes a window a late row belongs to."""
    assert LESSON.run(params={"delay": "20 seconds"}).late_rows() == []


def test_the_trace_shows_each_late_row_and_counts_them(capsys):
    """`ministream run late-data --trace` prints each late row with the rule, and the count per batch."""
    assert main(["run", "late-data", "--trace"]) == 0
    out = capsys.readouterr().out
    assert (
        "[per_window] late: row dropped for window [10:00:00, 10:00:10): end 10:00:10 <= watermark "
        "10:00:10 of the previous batch -> {ts: 2024-01-01T10:00:09Z, key: a, value: 8}"
    ) in out
    assert "late rows dropped: per_window=2" in out


def test_same_output_for_any_parallelism_and_seed():
    """The output and the late rows are the same for parallelism 1, 2 and 4 and several seeds."""

    def seen(run):
        return ([sorted(map(repr, b.rows)) for b in run.output()], sorted(repr(late.row) for late in run.late_rows()))

    expected = seen(LESSON.run())
    for parallelism in (1, 2, 4):
        for seed in (0, 5):
            assert seen(LESSON.run(parallelism=parallelism, seed=seed)) == expected
