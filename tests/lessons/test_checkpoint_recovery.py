"""Lesson checkpoint-recovery: a windowed count crashed mid-batch and recovered, in ministream and in Spark."""

from pathlib import Path

import pytest

from ministream.checkpoints.exactly_once import row_order
from ministream.core.compare import compare_batches
from ministream.lessons import get_lesson
from ministream.lessons.crash_checks import same_output
from ministream.models.microbatch import run_microbatch
from ministream.tools.cli import main

LESSON = get_lesson("checkpoint-recovery")
PAGE = Path(__file__).resolve().parents[2] / "tutorials" / "15-checkpoint-recovery.md"


def failure_free(params=None):
    """The lesson's pipeline run once, without checkpoints or crashes."""
    values = LESSON.resolve_params(params)
    return run_microbatch(LESSON.pipeline(LESSON.default_script, values), output_mode="append").output()


@pytest.fixture(scope="module")
def folders():
    """One exactly-once run of both engines, with their checkpoints in folders (Spark: two queries)."""
    from ministream.spark.checkpoint import checkpoint_folders

    return checkpoint_folders(LESSON)


@pytest.fixture(scope="module")
def at_least_once():
    """The Spark twin with an appending foreachBatch sink, crashed in batch 3 and restarted."""
    return LESSON.spark_recovery(params={"delivery": "at_least_once"})


@pytest.mark.spark
def test_recovered_outputs_match_spark_batch_for_batch(folders):
    """Both engines, crashed in batch 3 and recovered, give the same batches, and the failure-free ones."""
    result = compare_batches(folders.ministream.output(), folders.spark.batches)
    assert result.matches, result.table()
    assert same_output("microbatch", folders.ministream.output(), failure_free())


@pytest.mark.spark
def test_spark_reruns_the_crashed_batch_under_the_same_id(folders):
    """The first query's foreachBatch sees batches 0 to 3 (3 crashes); the restarted one begins with 3 again."""
    assert folders.spark.batch_ids == [[0, 1, 2, 3], [3, 4]]
    assert "SimulatedSparkCrash" in folders.spark.error


@pytest.mark.spark
def test_the_tutorial_shows_both_checkpoint_folders_of_a_real_run(folders):
    """The folder outlines in tutorial 15 are those of a fresh run (refresh: python -m ministream.tools.docs --spark)."""
    from ministream.spark.checkpoint import FOLDERS_BLOCK

    shown = FOLDERS_BLOCK.search(PAGE.read_text()).group("body")
    assert shown == folders.text
    for spark_path in (
        "commits/{0..4}",
        "offsets/{0..4}",
        "metadata",
        "sources/0/{0..3}",
        "state/0/{0..1}/{1..5}.delta",
    ):
        assert spark_path in shown
    for ministream_path in ("chk-{0..4}", "offsets/{0..4}"):
        assert ministream_path in shown


@pytest.mark.spark
def test_the_python_data_source_restarts_from_its_checkpoint_the_same_way(folders):
    """On a cluster the script is read by the Python data source (``spark.source``): crashed and restarted, it
    gives the file source's batches under the same ids."""
    run = LESSON.spark_recovery(source="python")
    assert run.batch_ids == folders.spark.batch_ids == [[0, 1, 2, 3], [3, 4]]
    result = compare_batches(folders.spark.batches, run.batches)
    assert result.matches, result.table()


@pytest.mark.spark
def test_at_least_once_sinks_show_the_same_duplicate_in_both_engines(at_least_once):
    """With appending sinks, both engines show the row written before the crash twice, in batch 3."""
    ours = LESSON.run(params={"delivery": "at_least_once"}).output()
    result = compare_batches(ours, at_least_once.batches)
    assert result.matches, result.table()
    assert len(at_least_once.batches[3].rows) == 4 and len({repr(r) for r in at_least_once.batches[3].rows}) == 3


@pytest.mark.spark
def test_comparison_fails_when_only_one_engine_duplicates(at_least_once):
    """ministream's exactly-once output against Spark's appending sink differs in batch 3: the comparison
    sees a duplicate."""
    result = compare_batches(LESSON.run().output(), at_least_once.batches)
    assert not result.matches
    assert [batch.batch_id for batch in result.batches if not batch.matches] == [3]


def test_exactly_once_output_is_the_failure_free_output_at_any_parallelism_and_seed():
    """Crashed in batch 3 and recovered, with 1, 2 or 4 subtasks and any seed, the output is the failure-free one."""
    for parallelism in (1, 2, 4):
        for seed in (0, 1, 7):
            run = LESSON.run(parallelism=parallelism, seed=seed)
            assert run.crashes == 1 and run.attempts[-1].restored_from == 2
            assert same_output("microbatch", run.output(), failure_free())


def test_crash_in_another_batch_and_after_more_rows():
    """With --param crash_batch=4 after_rows=1 the recovery restores checkpoint 3 and the output is still exact."""
    run = LESSON.run(params={"crash_batch": "4", "after_rows": "1"})
    assert [attempt.restored_from for attempt in run.attempts] == [None, 3]
    assert same_output("microbatch", run.output(), failure_free())


def test_at_least_once_duplicates_exactly_the_rows_written_before_the_crash():
    """An appending sink shows the first row (in row order) of batch 3 twice, and nothing else differs."""
    output = LESSON.run(params={"delivery": "at_least_once"}).output()
    expected = failure_free()
    assert [len(batch.rows) for batch in output] == [0, 0, 0, 4, 1]
    first = sorted(expected[3].rows, key=row_order)[:1]
    assert sorted(map(repr, output[3].rows)) == sorted(map(repr, expected[3].rows + first))


def test_continuous_model_recovers_from_barrier_checkpoints():
    """In the continuous model the source crashes at batch 3's rows; barriers restore the failure-free output."""
    from ministream.models.continuous import run_continuous

    run = LESSON.run(model="continuous")
    assert run.crashes == 1
    flow = LESSON.pipeline(LESSON.default_script, LESSON.resolve_params())
    assert same_output("continuous", run.output(), run_continuous(flow).output())


def test_cli_run_prints_the_recovered_output(capsys):
    """`ministream run checkpoint-recovery` prints the recovered batches (the lesson crashes by itself)."""
    assert main(["run", "checkpoint-recovery"]) == 0
    out = capsys.readouterr().out
    assert "batch 3 (watermark 2024-01-01T10:00:20Z): 3 rows" in out
