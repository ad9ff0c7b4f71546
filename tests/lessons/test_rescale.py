"""Lesson rescale: a checkpoint restored with another parallelism in ministream; Spark keeps its partitions."""

import pytest

from ministream.core.compare import compare_batches
from ministream.lessons import get_lesson
from ministream.lessons.crash_checks import same_output
from ministream.lessons.rescale import keys_by_subtask, spark_state_partitions
from ministream.models.microbatch import run_microbatch

LESSON = get_lesson("rescale")


def failure_free():
    """The lesson's pipeline run once, without checkpoints or crashes."""
    return run_microbatch(LESSON.pipeline(LESSON.default_script, {}), output_mode="update").output()


@pytest.fixture(scope="module")
def spark_run(tmp_path_factory):
    """The twin crashed in batch 1 with 2 shuffle partitions, restarted asking for 4, checkpoint kept."""
    folder = tmp_path_factory.mktemp("rescale-checkpoint")
    return LESSON.spark_recovery(checkpoint_dir=str(folder)), folder


@pytest.mark.spark
def test_rescaled_run_matches_spark(spark_run):
    """ministream restored with 4 subtasks and Spark restarted asking for 4 partitions give the same batches."""
    run, _ = spark_run
    result = compare_batches(LESSON.run().output(), run.batches)
    assert result.matches, result.table()
    assert run.batch_ids == [[0, 1], [1, 2]]


@pytest.mark.spark
def test_spark_keeps_the_shuffle_partitions_of_its_checkpoint(spark_run):
    """Restarted with spark.sql.shuffle.partitions=4, the query keeps the checkpoint's 2: two state
    partitions, and 2 recorded in every offsets/N, the restart's included."""
    _, folder = spark_run
    assert spark_state_partitions(folder) == {
        "state folders": ["0", "1"],
        "shuffle partitions by batch": {0: "2", 1: "2", 2: "2"},
    }


@pytest.mark.spark
def test_comparison_fails_when_a_batch_is_lost(spark_run):
    """A ministream run that lost batch 1's update (its rows never written) does not match Spark."""
    run, _ = spark_run
    ours = LESSON.run().output()
    ours[1] = type(ours[1])(1, None, [])
    assert not compare_batches(ours, run.batches).matches


def test_restored_with_4_subtasks_each_user_is_in_the_subtask_of_its_key_group():
    """After the restore at parallelism 4, each of the four users is in its own subtask."""
    run = LESSON.run()
    assert [(a.parallelism, a.restored_from) for a in run.attempts] == [(2, None), (4, 0)]
    assert keys_by_subtask(run.graph, "counts") == {0: ["heidi"], 1: ["alice"], 2: ["bob"], 3: ["erin"]}


@pytest.mark.parametrize("before, after", [(2, 1), (2, 2), (2, 4), (4, 1), (1, 4), (3, 2)])
def test_any_restore_parallelism_gives_the_failure_free_output(before, after):
    """Whatever the parallelism before and after the crash, the output is the failure-free one."""
    run = LESSON.run(params={"before": str(before), "after": str(after)})
    assert run.attempts[-1].parallelism == after
    assert same_output("microbatch", run.output(), failure_free())


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_seed_does_not_change_the_output(seed):
    """The scheduler's seed does not change the rescaled output."""
    assert same_output("microbatch", LESSON.run(seed=seed).output(), failure_free())
