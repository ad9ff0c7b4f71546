"""Lesson game-heartbeats: per device, map state of its game sessions; processing-time timers send a heartbeat
per open session, close a silent one after the timeout, and an end event closes its session at once; the same
rows as Spark's transformWithState in ProcessingTime mode on Spark's batch timestamps."""

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.game_heartbeats import game
from ministream.tools.fuzz import fuzz_lesson

LESSON = get_lesson("game-heartbeats")
START = LESSON.batch_timestamps(LESSON.default_script, {})[0]


def rows(run):
    """Per batch, ``(kind, session, seconds after 10:00:00, events)`` sorted."""
    return [
        sorted((r["kind"], r["session"], (r["time"] - START) // 1000, r["events"]) for r in batch.rows)
        for batch in run.output()
    ]


def test_default_script_heartbeats_end_and_timeouts():
    """Heartbeats every 2 s of processing time from each session's start, b1 ends at once in batch 3, a1 and a2
    time out 4.5 s after their last event (in the first batch at or after it)."""
    assert rows(LESSON.run()) == [
        [],
        [],
        [("heartbeat", "a1", 2, 2), ("heartbeat", "b1", 2, 2)],
        [("ended", "b1", 3, 4), ("heartbeat", "a2", 3, 1)],
        [("heartbeat", "a1", 4, 2)],
        [("heartbeat", "a2", 5, 1)],
        [("heartbeat", "a1", 6, 2), ("timed_out", "a2", 6, 1)],
        [("timed_out", "a1", 7, 2)],
    ]


def test_a_late_batch_sends_one_heartbeat_not_a_burst():
    """When processing time jumps past several heartbeats, the session sends one, and the next is the first
    tick of its grid (start + k * heartbeat) after now."""
    script = [[game("d1", "a1", "start")], [game("d1", "a1", "play", batch=1)], [], []]
    timestamps = [START, START + 7_000, START + 8_000, START + 10_000]
    out = rows(LESSON.run(script, {"timeout": "20 seconds"}, batch_timestamps=timestamps))
    assert out == [[], [("heartbeat", "a1", 7, 2)], [("heartbeat", "a1", 8, 2)], [("heartbeat", "a1", 10, 2)]]


def test_an_end_event_closes_at_once_and_counts_the_batchs_other_events():
    """An end with plays of the same session in the same batch: one ended row counting them all; an end of an
    unknown session opens and closes it."""
    script = [[game("d1", "a1", "start")], [game("d1", "a1", "play", 4, batch=1), game("d1", "a1", "end", batch=1)]]
    script[1].append(game("d2", "zz", "end", batch=1))
    run = LESSON.run(script)
    ended = sorted((r["session"], r["events"], r["points"]) for r in run.output()[1].rows)
    assert ended == [("a1", 3, 4.0), ("zz", 1, 0.0)]
    assert run.graph.operators("sessions")[0].state_size() == 0  # no session, no timer left


def test_same_output_for_any_parallelism_and_seed():
    """The rows do not depend on the number of subtasks or on the scheduler's seed."""
    expected = rows(LESSON.run())
    assert all(rows(LESSON.run(parallelism=p, seed=s)) == expected for p, s in ((2, 1), (4, 7)))


@pytest.mark.spark
def test_matches_spark_on_its_batch_timestamps():
    """Spark's transformWithState in ProcessingTime mode gives the same rows, batch for batch, when ministream
    runs on the batch timestamps Spark's batches had."""
    comparison = compare_lesson(LESSON)
    assert comparison.matches, comparison.table()


@pytest.mark.spark
def test_random_scripts_match_spark():
    """A few random scripts of starts, plays, ends and silences: ministream and Spark agree on every one."""
    report = fuzz_lesson(LESSON, runs=2, seed=20)
    assert report.matches, [failure.command for failure in report.failures]
    assert len(report.outcomes) == 2


@pytest.mark.parametrize("crash_after_rows", range(7))
def test_a_crash_recovers_from_a_full_checkpoint_and_timer_deltas_with_the_same_rows(crash_after_rows):
    """With incremental checkpoints (a full one, then up to two deltas), the sessions' map state and their
    timers are written as deltas; a run that crashes and recovers from the full checkpoint plus its deltas
    gives exactly the rows of a run without a crash."""
    from ministream.checkpoints.coordinator import Checkpoint
    from ministream.checkpoints.storage import MemoryStorage
    from ministream.lessons.crash_checks import recovered_outputs, run_lesson_with_recovery, same_output
    from ministream.state.changes import StateDelta

    storage = MemoryStorage()
    run = run_lesson_with_recovery(LESSON, crash_after_rows=crash_after_rows, storage=storage, incremental=2)
    assert run.attempts[0].restored_from is None and len(run.attempts) == 2
    deltas = [Checkpoint.from_files(storage.files[n]) for n in storage.checkpoint_ids()]
    timer_deltas = [
        c for c in deltas if c.base is not None and isinstance(c.operators["sessions"][0]["timers"], StateDelta)
    ]
    assert timer_deltas and all(c.operators["sessions"][0]["timers"].tracked for c in timer_deltas)
    assert any(same_output("microbatch", run.output(), expected) for expected in recovered_outputs(LESSON, run))
    assert rows(run) == rows(LESSON.run())
