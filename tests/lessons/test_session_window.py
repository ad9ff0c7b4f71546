"""Lesson session-window: ministream and its PySpark twin agree batch for batch, with the default events, with
other parameters and on random scripts; the comparison catches a twin that is 1 ms off."""

import attrs
import pytest

from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson
from ministream.tools.cli import main
from ministream.tools.fuzz import fuzz_lesson

LESSON = get_lesson("session-window")


@pytest.mark.spark
def test_matches_spark_with_the_default_events():
    """Append mode: the same sessions in the same batches (2, 3 and the no-data batch 5) in both engines."""
    result = compare_lesson(LESSON)
    assert result.matches, result.table()
    assert [b.batch_id for b in result.batches] == [0, 1, 2, 3, 4, 5]
    assert [len(b.in_both) for b in result.batches] == [0, 0, 1, 3, 0, 1]


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [
        {"mode": "complete"},
        {"gap_by": "key"},
        {"gap": "5 seconds", "delay": "0 seconds"},
        {"gap": "20 seconds", "delay": "12 seconds", "mode": "complete"},
    ],
    ids=lambda params: ",".join(f"{name}={value}" for name, value in params.items()),
)
def test_matches_spark_with_other_parameters(params):
    """Complete mode, a gap per key, and other gaps and delays match Spark batch for batch."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


@pytest.mark.spark
def test_comparison_fails_on_a_twin_whose_gap_is_1_ms_shorter():
    """A twin with a gap 1 ms shorter does not merge b@2 with b@12 (exactly one gap apart): the comparison
    shows the sessions that differ."""

    def shorter_gap_twin(inputs, params):
        return LESSON.twin(inputs, {**params, "gap": params["gap"] - 1})

    result = compare_lesson(attrs.evolve(LESSON, twin=shorter_gap_twin))
    assert not result.matches
    assert (
        "batch 3: only in ministream: {key: b, window_start: 2024-01-01T10:00:02Z, "
        "window_end: 2024-01-01T10:00:22Z, count: 2, sum: 11}"
    ) in result.table()


@pytest.mark.spark
def test_random_scripts_match_spark():
    """Three random scripts aimed at the session edges (fixed seed) give the same batches in both engines."""
    report = fuzz_lesson(LESSON, runs=3, seed=2024)
    assert report.matches, [failure.command for failure in report.failures]
    assert len(report.outcomes) == 3


@pytest.mark.spark
def test_cli_compare_exits_0_and_ends_with_the_counts(capsys):
    """`ministream compare session-window` exits 0 and its last line counts the matches."""
    assert main(["compare", "session-window", "--param", "gap_by=key"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "session-window: 6 of 6 batches match; 2 of 2 rows match"


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run())
    for parallelism in (1, 2, 4):
        for seed in (0, 7, 99):
            assert rows(LESSON.run(parallelism=parallelism, seed=seed)) == expected


def test_trace_shows_the_bridging_merge_the_late_row_and_the_dropped_rows(capsys):
    """`ministream run session-window --trace` shows a row bridging two sessions, the late row c@4 with its
    rule, and (with gap_by=key) the rows dropped for having no gap."""
    assert main(["run", "session-window", "--trace"]) == 0
    out = capsys.readouterr().out
    assert (
        "merge: session [10:00:12, 10:00:22) of key 'a' merged with [10:00:01, 10:00:14), "
        "[10:00:20, 10:00:30) into [10:00:01, 10:00:30)"
    ) in out
    assert (
        "late: row dropped for window [10:00:04, 10:00:14): its session ends at 10:00:14 (ts + gap), at or "
        "before the watermark 10:00:15 of the previous batch"
    ) in out
    assert main(["run", "session-window", "--trace", "--param", "gap_by=key"]) == 0
    assert out.count("its session gap is missing") == 0
    assert capsys.readouterr().out.count("its session gap is missing (null in Spark)") == 4


def test_every_input_row_is_counted_late_dropped_or_in_a_session():
    """Each of the default script's rows is in an emitted or stored session, late, or dropped for its gap."""
    for params in ({}, {"gap_by": "key"}):
        run = LESSON.run(params=params)
        [operator] = run.graph.operators("sessions")
        counted = sum(row["count"] for batch in run.output() for row in batch.rows)
        stored = sum(acc[0] for _, by_key in operator.windows.items() for acc in by_key.values())
        total = sum(len(batch) for batch in LESSON.default_script)
        assert counted + stored + len(run.late_rows()) + len(operator.dropped_rows) == total


def test_update_mode_is_not_a_choice_and_is_refused_by_the_engine():
    """The lesson offers append and complete; the pipeline itself refuses update, as Spark does."""
    with pytest.raises(PipelineError, match="must be one of append, complete"):
        LESSON.run(params={"mode": "update"})
    from ministream.models.microbatch import run_microbatch

    flow = LESSON.pipeline(LESSON.default_script, LESSON.resolve_params())
    with pytest.raises(PipelineError, match="a session window cannot run in update output mode"):
        run_microbatch(flow, output_mode="update")


def test_a_gap_of_zero_is_refused():
    """--param gap=0 is refused before anything runs."""
    with pytest.raises(PipelineError, match="gap: must be longer than zero"):
        LESSON.run(params={"gap": "0 seconds"})
