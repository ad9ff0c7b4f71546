"""Lesson barrier-alignment: a two-input step holds back the faster input; unaligned and at-least-once
checkpoints for contrast; the micro-batch side against Spark."""

import pytest

from ministream.checkpoints.coordinator import Checkpoint
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.compare import compare_batches
from ministream.core.faults import total_rows
from ministream.lessons import get_lesson
from ministream.lessons.barrier_alignment import (
    ALIGNMENT_SEED,
    AT_LEAST_ONCE_CRASH,
    barrier_lines,
    checkpointed_run,
    counts,
)
from ministream.lessons.crash_checks import same_output

LESSON = get_lesson("barrier-alignment")
FAILURE_FREE = {"a": 6, "b": 4}


@pytest.fixture(scope="module")
def spark_batches():
    """The twin's batches, run once (one Spark query)."""
    return LESSON.run_twin()


@pytest.mark.spark
def test_union_count_matches_spark(spark_batches):
    """The micro-batch union count matches Spark batch for batch."""
    result = compare_batches(LESSON.run().output(), spark_batches)
    assert result.matches, result.table()


@pytest.mark.spark
def test_comparison_fails_without_the_second_input(spark_batches):
    """Counting only the web input differs from Spark's union: the comparison fails in every batch."""
    script = {"web": LESSON.default_script["web"], "mobile": [[], [], []]}
    result = compare_batches(LESSON.run(script).output(), spark_batches)
    assert not result.matches and result.batches_matched == 0


def test_the_input_whose_barrier_came_first_is_held_back_until_the_other_delivers_it():
    """Under ALIGNMENT_SEED, barrier 1 reaches totals on web first: web is held back, then mobile's barrier
    1 aligns it: totals snapshots and forwards, and only then the sink acknowledges."""
    lines = barrier_lines(checkpointed_run(seed=ALIGNMENT_SEED))
    held = lines.index(
        "totals[0]: barrier 1 on input 0 (web[0]->totals[0]): held back until barrier 1 arrives on every input"
    )
    aligned = lines.index(
        "totals[0]: barrier 1 on input 1 (mobile[0]->totals[0]): aligned, snapshot taken, barrier forwarded"
    )
    sink = lines.index(
        "output[0]: barrier 1 on input 0 (totals[0]->output[0]): aligned, snapshot taken, barrier forwarded"
    )
    assert held < aligned < sink


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("parallelism", [1, 2])
def test_aligned_snapshots_count_exactly_the_rows_before_the_barriers(seed, parallelism):
    """In every checkpoint, the counts in totals' state are the counts of the rows before each source's
    offset: a consistent cut, whatever the interleaving."""
    storage = MemoryStorage()
    checkpointed_run(seed=seed, parallelism=parallelism, storage=storage)
    for checkpoint_id in storage.checkpoint_ids():
        checkpoint = Checkpoint.from_files(storage.files[checkpoint_id])
        expected = {}
        for name, batches in LESSON.default_script.items():
            rows = [row for batch in batches for row in batch][: checkpoint.sources[name]["offset"]]
            for row in rows:
                expected[row["key"]] = expected.get(row["key"], 0) + 1
        found = {
            key: accumulators[0]
            for snapshot in checkpoint.operators["totals"].values()
            for group in snapshot["keyed"].values()
            for key, accumulators in group["aggregate"].items()
        }
        assert found == expected


def test_unaligned_checkpoints_store_the_overtaken_rows_and_recover_exactly():
    """An unaligned checkpoint holds the rows its barrier overtook as in-flight data, and a run restored
    from it (the rows put back in their channels) gives the failure-free counts."""
    storage = MemoryStorage()
    checkpointed_run({"mode": "unaligned"}, seed=2, storage=storage)
    assert Checkpoint.from_files(storage.files[1]).channels
    for rows in range(total_rows(LESSON.pipeline(LESSON.default_script, {}))):
        run = checkpointed_run({"mode": "unaligned"}, seed=2, crash_after_rows=rows)
        assert counts(run.output()) == FAILURE_FREE


def test_at_least_once_checkpoints_count_rows_twice_after_a_crash():
    """The same crash restored from an aligned checkpoint gives the failure-free counts; from an
    at-least-once checkpoint, web rows from after the barrier are counted twice."""
    assert counts(checkpointed_run(**AT_LEAST_ONCE_CRASH).output()) == FAILURE_FREE
    run = checkpointed_run({"mode": "at_least_once"}, **AT_LEAST_ONCE_CRASH)
    assert counts(run.output()) == {"a": 8, "b": 5}


def test_without_a_crash_every_mode_gives_the_failure_free_counts():
    """Checkpoints never change a run's output: aligned, unaligned and at-least-once runs without a crash
    count the same."""
    for mode in ("aligned", "unaligned", "at_least_once"):
        for seed in range(4):
            assert counts(checkpointed_run({"mode": mode}, seed=seed).output()) == FAILURE_FREE


@pytest.mark.parametrize("parallelism", [1, 2, 4])
@pytest.mark.parametrize("seed", [0, 3])
def test_micro_batch_output_does_not_depend_on_parallelism_or_seed(parallelism, seed):
    """The micro-batch union count is the same at parallelism 1, 2 and 4 and under any seed."""
    assert same_output("microbatch", LESSON.run(parallelism=parallelism, seed=seed).output(), LESSON.run().output())


def test_the_held_back_moment_is_drawn_from_the_channels():
    """The picture of the first held-back moment shows web's channel held back (red, dashed) and barrier 1
    still in flight on mobile's."""
    caption, dot = checkpointed_run(seed=ALIGNMENT_SEED, pictures=True).pictures[0]
    assert caption == "totals[0] holds back input 0 (barrier 1)"
    assert '"web[0]" -> "totals[0]" [label="1 row (held back)", color="red"' in dot
    assert '"mobile[0]" -> "totals[0]" [label="B1"]' in dot
