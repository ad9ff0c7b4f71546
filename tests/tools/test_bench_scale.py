"""The scale benchmark's workload (``ministream bench --scale``), at a small scale: it opens every session, keeps
them alive with one heartbeat per 30 s of processing time, and closes the ones that end or fall silent, exactly
as its definition says. (Its timings are figures to read, never checked here.)"""

from ministream.tools.bench.scale import expected_counts, measure, scale_batch


def test_the_workload_gives_the_heartbeats_and_closures_it_defines():
    """3,000 sessions over 120 s of processing time, one in 7 ending and one in 5 silent: the rows of each kind
    and the events read are those worked out from the workload's definition."""
    figures = measure(3_000, keep_alive_seconds=90, end_every=7, silent_every=5, checkpoints=False)
    expected = expected_counts(3_000, 30, 90, 7, 5)
    assert figures["rows"] == {kind: expected[kind] for kind in ("heartbeat", "ended", "timed_out")}
    assert figures["events"] == 3_000 + expected["play"] + expected["ended"]
    assert figures["rows"]["heartbeat"] > 3_000 and figures["rows"]["timed_out"] > 0


def test_the_default_workload_keeps_its_sessions_open_and_survives_a_restore():
    """With the bench's own settings every session is open after the opening batches (four per device), one
    heartbeat per session comes in the following 30 s, and the checkpoint restores every device."""
    figures = measure(1_200)
    assert figures["open_sessions"] == 1_200 // 4 == figures["restored_devices"]
    assert figures["rows"]["heartbeat"] == expected_counts(1_200, 30, 30, 1_000, 1_000)["heartbeat"]
    assert figures["timer_firings"] >= figures["rows"]["heartbeat"] // 4


def test_a_batch_of_the_workload():
    """Batch 0 starts the sessions whose number is a multiple of 30; 30 s later they play, and s0 (one in a
    thousand) ends instead."""
    assert {row["kind"] for row in scale_batch(0, 100)} == {"start"}
    kinds = [(row["session"], row["kind"]) for row in scale_batch(30, 100)]
    assert kinds == [("s0", "end"), ("s30", "play"), ("s60", "play"), ("s90", "play")]
