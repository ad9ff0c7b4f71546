"""Lesson operator-state: a buffered writer keeps its buffer in operator state. Spark has no operator state, so
the lesson has no twin; its checks are properties of ministream's crash and rescale runs: a crash at the same
parallelism gives the failure-free writes, every trip is written or still buffered exactly once after a
rescale with even redistribution, union gives each buffered trip to every new subtask, and a buffer kept out of
the checkpoint is lost."""

import random

import pytest

from ministream.checkpoints.coordinator import load_checkpoint
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.compare import compare_batches
from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.lesson import Lesson
from ministream.lessons.operator_state import buffered, written_or_buffered

LESSON = get_lesson("operator-state")
TRIPS = {f"t{number}" for number in range(1, 15)}


def test_a_crash_at_the_same_parallelism_gives_the_failure_free_writes():
    """Crashed in batch 2 and restored with 2 subtasks, the visible writes are those of a run without a crash,
    batch for batch, and the buffers end the same."""
    params = {"after": "2"}
    recovered = LESSON.run(params=params)
    plain = Lesson.run(LESSON, params=params, parallelism=2)
    assert [attempt.restored_from for attempt in recovered.attempts] == [None, 1]
    assert compare_batches(recovered.output(), plain.output()).matches
    assert sorted(row["trip"] for row in buffered(recovered)) == sorted(row["trip"] for row in buffered(plain))


def test_the_checkpoint_holds_each_subtasks_buffer():
    """The checkpoint of batch 1 holds each subtask's buffer under 'operator', declared 'even'."""
    storage = MemoryStorage()
    LESSON.run(storage=storage)
    saved = load_checkpoint(storage, 1).operators["writer"]
    assert {index: snapshot["operator"]["buffer"]["mode"] for index, snapshot in saved.items()} == {
        0: "even",
        1: "even",
    }
    assert {index: [row["trip"] for row in s["operator"]["buffer"]["items"]] for index, s in saved.items()} == {
        0: ["t8"],
        1: ["t7"],
    }


def test_an_even_split_writes_every_trip_once_after_a_rescale():
    """Restored from 2 subtasks into 3, the two buffered trips go one each to two subtasks: every trip is
    written or still buffered exactly once."""
    run = LESSON.run()
    assert [attempt.parallelism for attempt in run.attempts] == [2, 3]
    assert written_or_buffered(run) == dict.fromkeys(TRIPS, 1)


def test_union_gives_every_new_subtask_every_buffered_trip():
    """With union redistribution each of the 3 new subtasks gets t7 and t8: each is written or buffered 3
    times (union is for state every subtask needs whole, such as a source's offsets, not for a buffer)."""
    counts = written_or_buffered(LESSON.run(params={"redistribution": "union"}))
    assert {trip: n for trip, n in counts.items() if n != 1} == {"t7": 3, "t8": 3}


def test_a_buffer_outside_operator_state_is_lost_in_a_crash():
    """Kept in a plain attribute, the buffers are not in the checkpoint: t7 and t8 are never written."""
    counts = written_or_buffered(LESSON.run(params={"keep_in": "plain"}))
    assert TRIPS - set(counts) == {"t7", "t8"} and set(counts.values()) == {1}


@pytest.mark.parametrize(
    "before, after", [(2, 3), (3, 1), (1, 4), (2, 2), (4, 2)], ids=lambda n: str(n) if isinstance(n, int) else n
)
def test_random_trips_are_written_once_for_any_rescale(before, after):
    """On random trips, a group size from 1 to 4 and a crash in a random batch, every trip is written or still
    buffered exactly once, whatever the parallelism before and after the crash."""
    rng = random.Random(f"operator-state-{before}-{after}")
    for _ in range(8):
        params = {"before": before, "after": after, "size": rng.randint(1, 4), "crash_batch": rng.randint(0, 3)}
        script = LESSON.random_script(rng, LESSON.resolve_params(params))
        run = LESSON.run(script, params)
        trips = {row["trip"] for batch in script for row in batch}
        assert written_or_buffered(run) == dict.fromkeys(trips, 1), (params, script)
        assert run.attempts[-1].parallelism == after


def test_there_is_no_twin_to_compare_with():
    """compare refuses the lesson and says why: Spark has no operator state."""
    with pytest.raises(PipelineError, match="has no Spark twin"):
        compare_lesson(LESSON)
