"""Processing time: the time on the machine's clock when the engine does something, kept as an object.

Event time is written in the rows; *processing time* is whatever the clock says while a record is being
processed. A real engine reads the wall clock, so a run with processing-time timers is never the same twice.
ministream never reads the wall clock: every run is handed a :class:`ManualClock` that moves only when told
to, so a test or a lesson says exactly when processing time passes, and the run repeats exactly.

In a script, a :class:`ClockStep` between rows moves the clock of the continuous model
(``ministream.models.continuous``): every row before it is processed, then the clock moves, then the processing-time
timers that are due fire, then the rows after it are read.

>>> clock = ManualClock()
>>> clock.now()
0
>>> clock.advance(1_500)
1500
>>> clock.set(10_000); clock.now()
10000
>>> clock.set(9_000)
Traceback (most recent call last):
...
ministream.time.clock.ClockError: processing time never goes backwards: the clock is at 10000 ms, cannot set it to 9000 ms
"""

from __future__ import annotations

import attrs

from ministream.time.units import parse_duration


class ClockError(ValueError):
    """A clock asked to go backwards or to a time that is not whole milliseconds."""


def _whole_ms(what: str, ms) -> int:
    """``ms`` as an int of milliseconds, or a ``ClockError`` that says why not."""
    if isinstance(ms, bool) or not isinstance(ms, int):
        raise ClockError(f"{what} must be whole milliseconds (an int), got {ms!r}")
    return ms


class ManualClock:
    """A processing-time clock that moves only when a test, a lesson or a script moves it.

    State: ``self.time``, the current processing time in ms (it only goes up).

    >>> clock = ManualClock(start_ms=1_000)
    >>> clock.advance(250), clock.now()
    (1250, 1250)

    Args:
        start_ms: the processing time the clock starts at (ms since the epoch; 0 by default).
    """

    def __init__(self, start_ms: int = 0):
        self.time = _whole_ms("the start of a clock", start_ms)

    def now(self) -> int:
        """The current processing time, in ms.

        >>> ManualClock(42).now()
        42
        """
        return self.time

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` milliseconds and return the new time; ``ms`` cannot be negative.

        >>> ManualClock().advance(-1)
        Traceback (most recent call last):
        ...
        ministream.time.clock.ClockError: processing time never goes backwards: cannot advance the clock by -1 ms
        """
        ms = _whole_ms("a clock advance", ms)
        if ms < 0:
            raise ClockError(f"processing time never goes backwards: cannot advance the clock by {ms} ms")
        self.time += ms
        return self.time

    def set(self, ms: int) -> None:
        """Move the clock to ``ms``, which must not be earlier than now (setting it to now does nothing).

        >>> clock = ManualClock(); clock.set(5_000); clock.now()
        5000
        """
        ms = _whole_ms("a clock time", ms)
        if ms < self.time:
            raise ClockError(
                f"processing time never goes backwards: the clock is at {self.time} ms, cannot set it to {ms} ms"
            )
        self.time = ms

    def __repr__(self):
        return f"ManualClock(now={self.time})"


def _duration(value) -> int:
    ms = parse_duration(value)
    if ms < 0:
        raise ClockError(f"a clock step moves the clock forward, not by {value!r}")
    return ms


@attrs.frozen
class ClockStep:
    """A script entry that moves the processing-time clock forward, placed between rows of a source's script.

    ``advance`` is a duration: milliseconds, or text such as ``"30 seconds"``. The continuous model reads it
    where it stands in the script (see ``ministream.models.continuous``); it is not a row and reaches no step.

    >>> ClockStep("30 seconds")
    ClockStep(advance=30000)
    >>> script = [[{"key": "a", "ts": 1_000}, ClockStep(5_000), {"key": "a", "ts": 2_000}]]
    """

    advance: int = attrs.field(converter=_duration)
