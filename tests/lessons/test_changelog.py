"""Lesson changelog: recovery from a crash at any record equals the failure-free run; a record written after
the last checkpoint is not replayed; compaction keeps what the retained checkpoints need; Spark's changelog files
and change feed hold the same writes, batch for batch."""

import pytest

from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.storage import MemoryStorage
from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.changelog import (
    DEFAULT_SCRIPT,
    changelog_rows,
    crash_at_every_record,
    log_outline,
    pipeline,
)
from ministream.models.microbatch import run_microbatch
from ministream.state.changelog import ChangelogBackends, ChangelogStorage

LESSON = get_lesson("changelog")
VALUES = LESSON.resolve_params()


def _by_batch(batches) -> list:
    return [(batch.batch_id, sorted(map(repr, batch.rows))) for batch in batches]


FAILURE_FREE = _by_batch(run_microbatch(pipeline(DEFAULT_SCRIPT, VALUES), output_mode="update").output())


@pytest.mark.parametrize(("backend", "parallelism"), [("memory", 1), ("memory", 3), ("rocksdb", 2), ("redis", 1)])
def test_a_crash_at_any_record_recovers_the_failure_free_output(backend, parallelism):
    """Crashing before each of the script's 12 records in turn, then recovering from snapshot + log, gives the
    failure-free batches every time."""
    points = crash_at_every_record(params={"backend": backend}, parallelism=parallelism)
    assert [point.record for point in points] == list(range(12))
    assert all(point.equal for point in points)
    assert [point.restored_from for point in points] == [None, None, None, 0, 0, 1, 1, 2, 2, 3, 4, 4]


@pytest.mark.parametrize("crash_batch", range(len(DEFAULT_SCRIPT)))
def test_a_record_logged_after_the_last_checkpoint_is_not_replayed(crash_batch):
    """The sink crashes in batch k after the subtask logged record k + 1: recovery stops at record k, the batch
    runs again and rewrites record k + 1, and the output is the failure-free one."""
    run = LESSON.run(params={"crash_batch": str(crash_batch)})
    assert run.attempts[0].crash.startswith(f"the sink crashed while writing batch {crash_batch}")
    assert run.attempts[1].restored_from == (crash_batch - 1 if crash_batch else None)
    assert _by_batch(run.output()) == FAILURE_FREE
    assert changelog_rows(run.changelogs, "totals/0", [6]) == [
        (5, "update", "a", 5, 12.0),
        (5, "update", "b", 4, 18.0),
    ]


def test_checkpoints_hold_log_positions_and_logs_are_compacted():
    """Each checkpoint keeps a LogPosition per subtask, not the state; with 2 checkpoints retained, the log
    keeps the newest snapshot at or before the older one and the records after it."""
    storage, logs = MemoryStorage(retain=2), ChangelogStorage()
    backends = ChangelogBackends("memory", logs, materialize_every=3, retain=2)
    run = run_with_recovery(
        pipeline(DEFAULT_SCRIPT, VALUES), output_mode="update", storage=storage, state_backend=backends
    )
    assert _by_batch(run.output()) == FAILURE_FREE
    assert storage.checkpoint_ids() == [4, 5]
    assert b"LogPosition" in storage.files[5]["state/totals/0.json"]
    assert log_outline(logs) == "totals/0: 3.snapshot 4.changelog 5.changelog 6.changelog 6.snapshot"


@pytest.mark.spark
def test_twin_recovers_on_sparks_changelog_checkpoints(spark):
    """Spark's twin, on RocksDB with changelog checkpointing, crashed in batch 3 and restarted, gives
    ministream's batches."""
    result = compare_lesson(LESSON)
    assert result.matches, result.table()


@pytest.mark.spark
def test_sparks_changelog_files_hold_ministreams_records(spark):
    """Decoded, Spark's N.changelog files hold the writes of ministream's records N, and so does Spark's change
    feed; the maintenance task writes N.zip snapshots."""
    from ministream.spark import scripted_stream
    from ministream.spark.changelog_files import spark_changelog

    logs = ChangelogStorage()
    run_with_recovery(
        pipeline(DEFAULT_SCRIPT, VALUES),
        output_mode="update",
        state_backend=ChangelogBackends("memory", logs, materialize_every=2),
    )
    frame = scripted_stream(spark, LESSON.spark_schema(), DEFAULT_SCRIPT)
    theirs = spark_changelog(LESSON.twin({"events": frame}, VALUES), ["string"], ["long", "double"])
    ours = {version: changelog_rows(logs, "totals/0", [version]) for version in range(1, 7)}
    assert theirs.changelogs == ours
    assert theirs.change_feed == sorted(row for rows in ours.values() for row in rows)
    assert "state/0/0/{1..6}.changelog" in theirs.outline.splitlines()
    assert all("metadata" in entries and keys >= 2 for entries, keys in theirs.snapshots.values())


def test_the_state_after_each_batch_is_that_of_the_recovered_run():
    """A StateHistory given to the crashing run holds, after each batch, the state of the batch's last run: the
    same as the failure-free run's (`ministream state changelog`)."""
    from ministream.models.state_history import StateHistory

    crashed, failure_free = StateHistory(), StateHistory()
    LESSON.run(after_batch=crashed)
    run_microbatch(pipeline(DEFAULT_SCRIPT, VALUES), output_mode="update", after_batch=failure_free)
    assert crashed.batches == failure_free.batches
    assert crashed.batches[3]["totals"]["aggregate"] == {"a": [4, 11.0], "b": [3, 13.0], "c": [1, 1.0], "d": [1, 4.0]}


@pytest.mark.parametrize("mode", ["aligned", "unaligned"])
def test_a_crash_at_any_record_recovers_in_the_continuous_model(mode):
    """In the continuous model a record is appended at each barrier: a crash before any of the 12 records, at
    parallelism 2 on RocksDB, recovers the failure-free output."""
    from ministream.core.faults import crash_at
    from ministream.lessons.changelog import changelog_backends
    from ministream.models.continuous import run_continuous

    expected = sorted(
        map(repr, run_continuous(pipeline(DEFAULT_SCRIPT, VALUES), output_mode="update").output()[0].rows)
    )
    for record in range(12):
        flow = pipeline(DEFAULT_SCRIPT, VALUES)
        crash_at(flow, record)
        run = run_with_recovery(
            flow,
            model="continuous",
            output_mode="update",
            parallelism=2,
            mode=mode,
            storage=MemoryStorage(retain=2),
            state_backend=changelog_backends({**VALUES, "backend": "rocksdb"}),
        )
        assert sorted(map(repr, run.output()[0].rows)) == expected, record
