"""Lesson microbatch-vs-continuous: the micro-batch side matches Spark batch for batch; the continuous side
fires each window at the watermark, finds more rows late, and fires the open windows at the end of input."""

import random
from collections import Counter

import pytest

from ministream.core.results import normalize_row
from ministream.lessons import compare_lesson
from ministream.lessons.lesson import BASE_TIME, event
from ministream.lessons.microbatch_vs_continuous import LESSON, row_table, run_both
from ministream.time.watermarks import MAX_WATERMARK
from ministream.tools.cli import main


def seconds(ms):
    return (ms - BASE_TIME) // 1000


def windows(rows):
    """(key, window start in seconds after 10:00, count) of each output row, in order."""
    return [(r["key"], seconds(r["window_start"]), r["count"]) for r in rows]


def late_events(run):
    """(key, seconds after 10:00) of the rows the window step dropped as late."""
    return sorted(
        (late.row["key"], seconds(late.row["ts"])) for op in run.graph.operators("per_window") for late in op.late_rows
    )


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{}, {"size": "5 seconds", "delay": "2 seconds"}, {"delay": "0 seconds"}],
    ids=["default", "5s-windows-2s-delay", "no-delay"],
)
def test_microbatch_side_matches_spark(params):
    """The micro-batch side has the same watermark and rows as Spark in every batch, no-data batch included."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_microbatch_emits_in_the_batch_after_the_watermark_passes():
    """Micro-batch: [10:00:00, 10:00:10) closes in batch 2 although the row that closed it came in batch 1;
    the windows still open at the end are never emitted."""
    micro, _ = run_both()
    assert [(b.batch_id, sorted(windows(b.rows))) for b in micro.output()] == [
        (0, []),
        (1, []),
        (2, [("a", 0, 3), ("b", 0, 2)]),
        (3, [("a", 10, 1), ("b", 10, 1)]),
        (4, []),
    ]


def test_continuous_fires_at_the_watermark_and_everything_at_the_end():
    """Continuous: a window fires as soon as the watermark reaches end - 1, and the final +inf watermark fires
    the windows still open."""
    _, continuous = run_both()
    arrivals = continuous.arrivals_at("output")
    assert windows(a.row for a in arrivals) == [
        ("a", 0, 2),
        ("b", 0, 1),
        ("a", 10, 1),
        ("b", 10, 1),
        ("a", 20, 1),
        ("b", 30, 1),
    ]
    # the sink's watermark when they arrived: the one before the firing one, then 25.999 s before the end
    assert [None if a.watermark is None else a.watermark - BASE_TIME for a in arrivals] == [
        -2_001,
        -2_001,
        10_999,
        10_999,
        25_999,
        25_999,
    ]
    assert continuous.output()[0].watermark == MAX_WATERMARK


def test_rows_late_in_one_model_and_not_the_other():
    """Rows after the closing row in the same batch (a@4) or in the next (b@9) are late only in the continuous
    model; a@8, behind the previous batch's watermark, is late in both."""
    micro, continuous = run_both()
    assert late_events(micro) == [("a", 8)]
    assert late_events(continuous) == [("a", 4), ("a", 8), ("b", 9)]
    assert "5    a at 10:00:04  1      counted      late" in row_table()


def test_late_in_microbatch_is_late_in_continuous():
    """Without allowed lateness every row late in micro-batch is late in the continuous model too (its
    watermark already includes every earlier row), on random scripts."""
    rng = random.Random(3)
    for _ in range(40):
        script = [
            [event(rng.randrange(0, 60), rng.choice("ab")) for _ in range(rng.randrange(0, 4))]
            for _ in range(rng.randrange(1, 5))
        ]
        micro, continuous = run_both(script, {"delay": f"{rng.randrange(0, 8)} seconds"})
        assert set(late_events(micro)) <= set(late_events(continuous))


def test_allowed_lateness_fires_a_window_again():
    """With 10 s of allowed lateness the continuous model keeps [10:00:00, 10:00:10) after it fired, and each
    late row fires it again with the new count."""
    _, continuous = run_both(params={"lateness": "10 seconds"})
    rows = windows(continuous.output()[0].rows)
    assert [r for r in rows if r[1] == 0] == [("a", 0, 2), ("b", 0, 1), ("a", 0, 3), ("b", 0, 2)]
    assert late_events(continuous) == [("a", 8)]


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_continuous_output_does_not_depend_on_seed_or_parallelism(parallelism):
    """The continuous side's multiset of rows is the same for every seed and parallelism (one source)."""
    expected = Counter(map(normalize_row, run_both()[1].output()[0].rows))
    for seed in range(8):
        _, continuous = run_both(parallelism=parallelism, seed=seed)
        assert Counter(map(normalize_row, continuous.output()[0].rows)) == expected


def test_cli_runs_the_lesson_in_the_continuous_model(capsys):
    """`ministream run microbatch-vs-continuous --model continuous` prints the rows in arrival order."""
    assert main(["run", "microbatch-vs-continuous", "--model", "continuous"]) == 0
    out = capsys.readouterr().out
    assert "continuous model (no batches): 6 rows in arrival order" in out
    assert out.strip().splitlines()[-1] == "final watermark: +∞"
