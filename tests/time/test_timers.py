"""Timers: unique per key and timestamp, fired in order when time reaches them, kept by key group."""

import pytest

from ministream.state.keygroups import key_group_of, key_group_range
from ministream.time.timers import TimerService


def test_one_timer_per_key_and_timestamp():
    """Registering the same (key, timestamp) twice leaves one timer, which fires once."""
    timers = TimerService()
    timers.register_event_time_timer("a", 5_000)
    timers.register_event_time_timer("a", 5_000)
    assert timers.size() == 1
    assert timers.pop_expired_event_time(10_000) == [(5_000, "a")]


def test_same_timestamp_in_both_domains_are_two_timers():
    """Uniqueness is per time domain: an event-time and a processing-time timer at the same time are two."""
    timers = TimerService()
    timers.register_event_time_timer("a", 5_000)
    timers.register_processing_time_timer("a", 5_000)
    assert timers.size() == 2
    assert timers.event_time_timers("a") == [5_000]
    assert timers.processing_time_timers("a") == [5_000]


def test_fire_in_timestamp_order():
    """Due timers come out earliest first, whatever order they were registered in."""
    timers = TimerService()
    for key, ts in [("a", 30), ("b", 10), ("c", 20)]:
        timers.register_event_time_timer(key, ts)
    assert timers.pop_expired_event_time(100) == [(10, "b"), (20, "c"), (30, "a")]


def test_ties_fire_in_key_order():
    """Timers with the same timestamp fire in key order, not registration order."""
    timers = TimerService()
    for key in ["c", "a", "b"]:
        timers.register_processing_time_timer(key, 7)
    assert timers.pop_expired_processing_time(7) == [(7, "a"), (7, "b"), (7, "c")]


def test_a_null_key_ties_with_others_and_fires_first():
    """A grouping key may be null (Spark groups nulls together): its timer, due with others, fires first, and
    a snapshot and a delta of its timers are taken like any other's. (Sorting ``None`` with strings failed.)"""
    for keys, order in (
        (("b", None, "a"), [None, "a", "b"]),
        ((("a", 2), (None, 1), ("a", None)), [(None, 1), ("a", None), ("a", 2)]),  # keys of two columns
    ):
        timers = TimerService()
        for key in keys:
            timers.register_event_time_timer(key, 5_000)
        assert sum(len(domains["event_time"]) for domains in timers.snapshot().values()) == 3
        assert [key for _, key in timers.pop_expired_event_time(5_000)] == order


def test_event_time_firing_is_inclusive():
    """An event-time timer fires when its timestamp is at or before the watermark (<=), not after it."""
    timers = TimerService()
    timers.register_event_time_timer("a", 10_000)
    assert timers.pop_expired_event_time(9_999) == []
    assert timers.pop_expired_event_time(10_000) == [(10_000, "a")]


def test_processing_time_firing_is_inclusive():
    """A processing-time timer fires when the clock reads its timestamp or later (<=)."""
    timers = TimerService()
    timers.register_processing_time_timer("a", 60_000)
    assert timers.pop_expired_processing_time(59_999) == []
    assert timers.pop_expired_processing_time(60_000) == [(60_000, "a")]


def test_domains_fire_independently():
    """The watermark fires only event-time timers and the clock only processing-time timers."""
    timers = TimerService()
    timers.register_event_time_timer("a", 5)
    timers.register_processing_time_timer("a", 5)
    assert timers.pop_expired_processing_time(100) == [(5, "a")]
    assert timers.event_time_timers("a") == [5]


def test_fired_timers_are_removed():
    """A timer fires once: after it fired it is gone."""
    timers = TimerService()
    timers.register_event_time_timer("a", 5)
    timers.pop_expired_event_time(5)
    assert timers.pop_expired_event_time(10) == []
    assert timers.size() == 0 and timers.next_event_time() is None


def test_delete_removes_only_that_timer():
    """Deleting (key, timestamp) cancels that timer and leaves the key's other timers."""
    timers = TimerService()
    for ts in (5, 6):
        timers.register_event_time_timer("a", ts)
    timers.register_event_time_timer("b", 5)
    timers.delete_event_time_timer("a", 5)
    assert timers.pop_expired_event_time(10) == [(5, "b"), (6, "a")]


def test_deleting_a_missing_timer_does_nothing():
    """Deleting a timer that was never registered (or already fired) is not an error."""
    timers = TimerService()
    timers.delete_event_time_timer("a", 5)
    timers.delete_processing_time_timer("a", 5)
    assert timers.size() == 0


def test_next_timer():
    """next_event_time and next_processing_time give the earliest pending timestamp of their domain."""
    timers = TimerService()
    timers.register_event_time_timer("a", 9)
    timers.register_event_time_timer("b", 4)
    timers.register_processing_time_timer("a", 100)
    assert (timers.next_event_time(), timers.next_processing_time()) == (4, 100)


def test_timestamps_must_be_whole_milliseconds():
    """A timer's timestamp is an int of milliseconds; a float is refused."""
    with pytest.raises(ValueError, match="whole milliseconds"):
        TimerService().register_event_time_timer("a", 1.5)


def test_snapshot_is_laid_out_by_key_group():
    """A snapshot holds each key's timers under the key's key group, per domain."""
    timers = TimerService()
    timers.register_event_time_timer("alice", 5)
    timers.register_event_time_timer("alice", 3)
    timers.register_processing_time_timer("alice", 7)
    assert timers.snapshot() == {
        key_group_of("alice"): {"event_time": {"alice": [3, 5]}, "processing_time": {"alice": [7]}}
    }


def test_restore_takes_only_the_subtasks_key_groups():
    """Restoring into two subtasks gives each the timers of the keys in its key-group range, and no others."""
    keys = [f"user-{i}" for i in range(20)]
    old = TimerService()
    for i, key in enumerate(keys):
        old.register_event_time_timer(key, 1_000 + i)
    snapshot = old.snapshot()
    halves = []
    for subtask in range(2):
        new = TimerService()
        new.restore(snapshot, key_group_range(subtask, 2))
        halves.append(new.pop_expired_event_time(10_000))
        assert all(key_group_of(key) in key_group_range(subtask, 2) for _, key in halves[-1])
    assert sorted(halves[0] + halves[1]) == sorted(old.pop_expired_event_time(10_000))


def test_restore_keeps_uniqueness_and_order():
    """Restored timers are unique per (key, timestamp) and fire in the same order as before the snapshot."""
    old = TimerService()
    for key, ts in [("b", 2), ("a", 2), ("a", 1)]:
        old.register_event_time_timer(key, ts)
    new = TimerService()
    new.restore(old.snapshot())
    new.restore(old.snapshot())  # twice: still one timer per (key, timestamp)
    assert new.pop_expired_event_time(5) == old.pop_expired_event_time(5) == [(1, "a"), (2, "a"), (2, "b")]


def test_a_delta_holds_the_timers_of_the_keys_changed_since_the_last_checkpoint():
    """After a checkpoint's full snapshot, a delta holds each key whose timers were registered, deleted or
    fired since, with all its timers now (a key left with none is removed), and nothing of the other keys;
    the full snapshot with the delta applied is the full snapshot taken now."""
    from ministream.state.changes import StateDelta, apply_delta

    timers = TimerService()
    for i in range(1_000):
        timers.register_processing_time_timer(f"device-{i}", 30_000 + i % 7)
        timers.register_event_time_timer(f"device-{i}", 60_000)
    full = timers.snapshot("full")
    timers.register_processing_time_timer("device-1", 90_000)  # one more timer
    timers.delete_event_time_timer("device-2", 60_000)  # the key's only event-time timer
    timers.register_event_time_timer("device-3", 60_000)  # already there: no change
    timers.pop_expired_processing_time(30_000)  # fires the timers at 30,000: devices 0, 7, 14...
    fired = {f"device-{i}" for i in range(0, 1_000, 7)}
    delta = timers.snapshot("delta")
    assert isinstance(delta, StateDelta) and delta.tracked == ["event_time", "processing_time"]
    updated = {key for states in delta.updated.values() for timers_of in states.values() for key in timers_of}
    removed = {key for states in delta.removed.values() for keys in states.values() for key in keys}
    assert updated == {"device-1"} and removed == fired | {"device-2"}
    assert delta.entries() == 2 + len(fired)
    assert apply_delta(full, delta) == timers.snapshot()


def test_restored_timers_are_written_whole_by_a_delta_until_a_checkpoint_counts():
    """No checkpoint counts from restored timers: a delta before the next full snapshot holds every timer
    (no domain tracked, so a restore replaces them all); after it, only what changed."""
    from ministream.state.changes import apply_delta

    old = TimerService()
    for key in ("a", "b", "c"):
        old.register_event_time_timer(key, 5_000)
    new = TimerService()
    new.restore(old.snapshot())
    whole = new.snapshot("delta")
    assert whole.tracked == [] and apply_delta({}, whole) == old.snapshot()
    new.register_event_time_timer("b", 7_000)
    delta = new.snapshot("delta")
    assert delta.updated == {key_group_of("b"): {"event_time": {"b": [5_000, 7_000]}}} and delta.removed == {}
