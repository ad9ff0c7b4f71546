"""Lesson processing-time: processing-time timers are testable with ministream's manual clock, and agree with
Spark's transformWithState once ministream runs on the batch timestamps Spark's batches really had."""

import pytest

from ministream.core.compare import compare_batches
from ministream.lessons import get_lesson
from ministream.time.clock import ClockError
from ministream.time.units import format_clock

LESSON = get_lesson("processing-time")
START = LESSON.batch_timestamps(LESSON.default_script, {})[0]


def alerts(run):
    return [[(r["key"], format_clock(r["alert_time"])) for r in batch.rows] for batch in run.output()]


@pytest.mark.spark
def test_matches_spark_on_sparks_batch_timestamps_and_not_on_ministreams_own():
    """Spark runs the script's batches only (no-data batches off) at wall-clock timestamps; ministream on those
    timestamps fires the same timers in the same batches, and on its own clock it does not."""
    theirs = LESSON.run_twin()
    assert [b.batch_id for b in theirs] == list(range(len(LESSON.default_script)))
    timestamps = [batch.processing_time for batch in theirs]
    replayed = compare_batches(LESSON.run(batch_timestamps=timestamps).output(), theirs)
    assert replayed.matches, replayed.table()
    assert not compare_batches(LESSON.run().output(), theirs).matches


def test_a_manual_clock_decides_when_the_timers_fire():
    """The same readings with the batches closer together in processing time: no sensor is silent for 2.5 s."""
    close = [START + k * 300 for k in range(len(LESSON.default_script))]
    assert alerts(LESSON.run(batch_timestamps=close)) == [[]] * 7
    far = [START, START + 1_000, START + 5_000, START + 5_100, START + 9_000, START + 9_001, START + 9_002]
    assert alerts(LESSON.run(batch_timestamps=far)) == [[], [], [("s2", "10:00:05")], [], [("s1", "10:00:09")], [], []]


def test_processing_time_never_goes_backwards():
    """Batch timestamps that go down are refused: a clock only moves forward."""
    with pytest.raises(ClockError, match="never goes backwards"):
        LESSON.run(batch_timestamps=[START, START - 1])


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same at parallelism 1, 2 and 4 and for several seeds."""
    expected = alerts(LESSON.run())
    assert all(alerts(LESSON.run(parallelism=p, seed=s)) == expected for p, s in ((2, 1), (4, 7)))
