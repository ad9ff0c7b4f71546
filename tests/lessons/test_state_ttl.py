"""Lesson state-ttl: state with a time-to-live expires on the batch timestamps, in ministream as in Spark's
transformWithState, once ministream runs on the timestamps Spark's batches really had."""

import pytest

from ministream.core.compare import compare_batches
from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("state-ttl")


@pytest.mark.spark
def test_matches_spark_on_sparks_batch_timestamps_and_not_on_ministreams_own():
    """With Spark's batch timestamps replayed, every batch matches; with ministream's own clock (one second a
    batch) the processing times differ, so the comparison fails: processing time is not in the script."""
    theirs = LESSON.run_twin()
    timestamps = [batch.processing_time for batch in theirs]
    assert all(isinstance(t, int) for t in timestamps) and timestamps == sorted(timestamps)
    replayed = compare_batches(LESSON.run(batch_timestamps=timestamps).output(), theirs)
    assert replayed.matches, replayed.table()
    assert [b.batch_id for b in replayed.batches] == [0, 1, 2, 3, 4]
    assert not compare_batches(LESSON.run().output(), theirs).matches


@pytest.mark.spark
def test_a_ttl_shorter_than_any_batch_forgets_everything_in_both_engines():
    """With a 1 ms time-to-live every batch finds the state of the previous one expired, in Spark as in
    ministream, however long Spark's batches took."""
    result = compare_lesson(LESSON, params={"ttl": "1 ms"})
    assert result.matches, result.table()
    remembered = [row[1][1] for batch in result.batches for row in batch.in_both]
    assert remembered == [0] * len(remembered) and len(remembered) == 5


def test_a_user_is_forgotten_in_the_first_batch_at_or_after_the_expiry():
    """Written at 10:00:00 with a 2 s TTL, b's visits are gone in the batch at 10:00:02 (now >= expiry)."""
    rows = {batch.batch_id: {r["key"]: r for r in batch.rows} for batch in LESSON.run().output()}
    assert rows[1]["a"]["remembered"] == 1 and rows[2]["b"]["remembered"] == 0
    assert rows[4]["a"]["remembered"] == 0 and rows[4]["a"]["recent"] == [4.0]


def test_the_cleanup_shows_in_the_trace_and_the_state_size():
    """The end-of-batch cleanup removes what expired: the trace says so and the state size falls."""
    run = LESSON.run(trace=True)
    # entries: (visits, recent) of a and b; a list with one element left is still one entry
    assert [s.state_sizes["visits"] for s in run.trace.batches] == [4, 4, 4, 2, 2]
    assert [(line.batch_id, line.text.split(" removed")[0]) for line in run.trace.of_kind("ttl")] == [
        (2, "key 'a': expired entries of state 'recent'"),
        (2, "key 'b': expired entries of state 'recent'"),
        (3, "key 'a': expired entries of state 'visits'"),
        (3, "key 'a': expired entries of state 'recent'"),
        (4, "key 'b': expired entries of state 'visits'"),
        (4, "key 'b': expired entries of state 'recent'"),
    ]


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same at parallelism 1, 2 and 4 and for several seeds."""
    expected = [sorted(map(repr, b.rows)) for b in LESSON.run().output()]
    for parallelism, seed in ((1, 5), (2, 0), (4, 9)):
        assert [sorted(map(repr, b.rows)) for b in LESSON.run(parallelism=parallelism, seed=seed).output()] == expected
