"""The processing-time clock: a ManualClock that moves only when told to, and never backwards."""

import pytest

from ministream.time.clock import ClockError, ClockStep, ManualClock


def test_starts_where_told():
    """A clock starts at start_ms (0 by default) and stays there until moved."""
    assert ManualClock().now() == 0
    clock = ManualClock(start_ms=1_000)
    assert (clock.now(), clock.now()) == (1_000, 1_000)


def test_advance_moves_forward():
    """advance(ms) adds ms to the clock and returns the new time."""
    clock = ManualClock(100)
    assert clock.advance(50) == 150 and clock.now() == 150


def test_set_to_the_same_time_is_allowed():
    """set(now) is not going backwards: it leaves the clock where it is."""
    clock = ManualClock(100)
    clock.set(100)
    assert clock.now() == 100


@pytest.mark.parametrize("move", [lambda c: c.set(99), lambda c: c.advance(-1)])
def test_never_backwards(move):
    """Processing time never goes backwards: setting an earlier time or advancing by a negative amount fails."""
    clock = ManualClock(100)
    with pytest.raises(ClockError, match="never goes backwards"):
        move(clock)
    assert clock.now() == 100


def test_whole_milliseconds_only():
    """Clock times are whole milliseconds: a float is refused."""
    with pytest.raises(ClockError, match="whole milliseconds"):
        ManualClock().advance(0.5)


def test_clock_step_reads_durations():
    """A ClockStep takes milliseconds or a duration in words, and refuses a negative one."""
    assert ClockStep("1 minute").advance == ClockStep(60_000).advance == 60_000
    with pytest.raises(ClockError):
        ClockStep(-5)
