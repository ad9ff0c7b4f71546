"""Windows: which time intervals a row belongs to, computed from its event time alone.

A *window* is a half-open interval of event time ``[start, end)``. A *window assigner* maps a row's event time
to the windows that contain it; it is a pure function of the timestamp, so every subtask, every batch and
every engine agrees on it. Two assigners live here, both aligned on the Unix epoch exactly as Spark's
``window(ts, windowDuration, slideDuration, startTime)`` aligns them:

- **tumbling** windows of ``size``: back to back, each row in exactly one;
- **sliding** windows of ``size`` starting every ``slide``: they overlap, so a row is in ``ceil(size / slide)``
  of them (or one fewer, when ``slide`` does not divide ``size``).

Both take an ``offset`` (Spark's ``startTime``) that shifts every window start away from the epoch.

The arithmetic is Spark's (``TimeWindowResolution.getWindow``): the latest window start at or before ``ts`` is
``ts - ((ts - offset) mod slide)``, and the others are that minus ``slide``, ``2 * slide``, ... as long as the
window still contains ``ts``. The ``mod`` is a *floor* modulo: Scala's ``%`` truncates towards zero, so Spark
adds ``slide`` back when the remainder is negative; Python's ``%`` floors already. That is what places a row
before the epoch in the right window: -1 ms is in ``[-10 s, 0)``, not in ``[0, 10 s)``.

>>> tumbling(12_345, size=10_000)
(10000, 20000)
>>> tumbling(-1, size=10_000)              # before the epoch: the window that contains it
(-10000, 0)
>>> sliding(12_345, size=10_000, slide=5_000)
[(5000, 15000), (10000, 20000)]
>>> sliding(12_345, size=10_000, slide=5_000, offset=2_000)
[(7000, 17000), (12000, 22000)]

**Session windows** are the third kind: each event opens ``[ts, ts + gap)``, and the sessions of a key that
overlap or touch merge (:func:`merge_sessions`), so a session's bounds depend on the other events of its key
and are known only once the watermark says no event can still extend it (``operators/sessions.py`` runs them).

>>> merge_sessions([(1_000, 11_000), (30_000, 40_000), (11_000, 21_000)])   # [1, 11) and [11, 21) touch
[(1000, 21000), (30000, 40000)]

The assigner *objects* :class:`Tumbling`, :class:`Sliding` and :class:`Session` are what a pipeline passes to
``key_by(...).window(name, assigner, ...)``; the planner (``operators/planner.py``) picks the operator that
runs each ``kind``. Every assigner has a ``kind`` (``"tumbling"``, ``"sliding"``, ``"session"``) and
``describe()``, the assigner in words for diagrams and traces (:class:`WindowAssigner`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import attrs

from ministream.errors import PipelineError
from ministream.time.units import TimeFormatError, format_clock, format_duration, parse_duration


class WindowAssigner(Protocol):
    """What a window step needs of its assigner: its kind, and its description in words."""

    kind: str

    def describe(self) -> str: ...


def last_start(ts: int, slide: int, offset: int = 0) -> int:
    """The latest window start at or before ``ts``: starts are ``offset + n * slide`` for every integer n.

    >>> last_start(12_345, 5_000), last_start(12_345, 5_000, offset=3_000), last_start(-1, 5_000)
    (10000, 8000, -5000)
    """
    return ts - (ts - offset) % slide


def tumbling(ts: int, size: int, offset: int = 0) -> tuple[int, int]:
    """The one tumbling window ``[start, end)`` that contains ``ts``: Spark's ``window(ts, size)``.

    >>> tumbling(10_000, size=10_000)          # a window's end belongs to the next window
    (10000, 20000)
    >>> tumbling(12_345, size=10_000, offset=-3_000)
    (7000, 17000)

    Args:
        ts: the event time, in ms since the epoch.
        size: the window length in ms (> 0).
        offset: shifts every window start by this many ms (Spark's ``startTime``; ``|offset| < size``).
    """
    start = last_start(ts, size, offset)
    return start, start + size


def sliding(ts: int, size: int, slide: int, offset: int = 0) -> list[tuple[int, int]]:
    """Every sliding window ``[start, end)`` that contains ``ts``, earliest first: Spark's
    ``window(ts, size, slide, offset)``.

    >>> sliding(9_999, size=10_000, slide=3_000)
    [(0, 10000), (3000, 13000), (6000, 16000), (9000, 19000)]
    >>> sliding(10_000, size=10_000, slide=3_000)   # 3 does not divide 10: only 3 windows contain it
    [(3000, 13000), (6000, 16000), (9000, 19000)]

    Args:
        ts: the event time, in ms since the epoch.
        size: the window length in ms (> 0).
        slide: the distance between two window starts in ms (0 < slide <= size).
        offset: shifts every window start by this many ms (Spark's ``startTime``; ``|offset| < slide``).
    """
    windows = []
    start = last_start(ts, slide, offset)
    while start > ts - size:  # the window [start, start + size) still contains ts
        windows.append((start, start + size))
        start -= slide
    windows.reverse()
    return windows


def check_window(size: int, slide: int | None = None, offset: int = 0) -> None:
    """Refuse the window shapes Spark refuses, with Spark's reason in plain words.

    >>> check_window(10_000, 20_000)
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: the slide (20 seconds) must be at most the window size (10 seconds): with a longer slide, the rows between two windows would belong to none. (Spark: 'The `slide_duration` must be <= the `window_duration`'.)
    """
    slide = size if slide is None else slide
    if size <= 0:
        raise PipelineError(
            f"a window size must be longer than zero, got {format_duration(size)}. "
            "(Spark: 'The `window_duration` must be between (0, ...]'.)"
        )
    if slide <= 0:
        raise PipelineError(
            f"a window slide must be longer than zero, got {format_duration(slide)}. "
            "(Spark: 'The `slide_duration` must be between (0, ...]'.)"
        )
    if slide > size:
        raise PipelineError(
            f"the slide ({format_duration(slide)}) must be at most the window size ({format_duration(size)}): "
            "with a longer slide, the rows between two windows would belong to none. "
            "(Spark: 'The `slide_duration` must be <= the `window_duration`'.)"
        )
    if abs(offset) >= slide:
        raise PipelineError(
            f"a window offset ({format_duration(offset)}) must be shorter than the slide "
            f"({format_duration(slide)}): an offset of a whole slide gives the same windows as none. "
            "(Spark: 'The `abs(start_time)` must be < the `slide_duration`'.)"
        )


def describe_window(start: int, end: int) -> str:
    """A window as a person reads it: ``[10:00:00, 10:00:10)`` (UTC times of day).

    >>> describe_window(1_704_103_200_000, 1_704_103_210_000)
    '[10:00:00, 10:00:10)'
    """
    return f"[{format_clock(start)}, {format_clock(end)})"


def _duration(value) -> int:
    """A window's size, slide or offset in ms: months and years are refused, as Spark refuses them in a
    window (their length varies)."""
    if isinstance(value, str) and re.search(r"(?i)\b(month|months|year|years|mon|mons)\b|year\s+to\s+month", value):
        raise PipelineError(
            f"a window cannot be {value!r} long: months and years have no fixed length. Use days or weeks. "
            f"(Spark: 'Intervals greater than a month is not supported ({value})'.)"
        )
    return parse_duration(value)


@attrs.frozen
class Tumbling:
    """Tumbling windows of ``size``, back to back from the epoch (plus ``offset``): each row in exactly one.

    >>> windows = Tumbling("10 seconds")
    >>> windows.assign(12_345), windows.describe()
    ([(10000, 20000)], 'tumbling 10 seconds')
    >>> Tumbling("0 seconds")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: a window size must be longer than zero, got 0 seconds. (Spark: 'The `window_duration` must be between (0, ...]'.)

    Args:
        size: the window length: ``"10 seconds"`` or ms.
        offset: shifts every window start (Spark's ``startTime``): ``"2 seconds"`` or ms; ``|offset| < size``.
    """

    size: int = attrs.field(converter=_duration)
    offset: int = attrs.field(default=0, converter=_duration)
    kind = "tumbling"

    def __attrs_post_init__(self):
        check_window(self.size, self.size, self.offset)

    @property
    def slide(self) -> int:
        """A tumbling window slides by its own size."""
        return self.size

    def assign(self, ts: int) -> list[tuple[int, int]]:
        """The windows that contain ``ts``: a list of one (``tumbling()``'s arithmetic, written out here
        because it runs for every row)."""
        start = ts - (ts - self.offset) % self.size
        return [(start, start + self.size)]

    def describe(self) -> str:
        offset = f", offset {format_duration(self.offset)}" if self.offset else ""
        return f"tumbling {format_duration(self.size)}{offset}"


@attrs.frozen
class Sliding:
    """Sliding windows of ``size`` starting every ``slide`` from the epoch (plus ``offset``): a row is in
    every window that contains it.

    >>> windows = Sliding("10 seconds", "5 seconds", offset="2 seconds")
    >>> windows.assign(12_345), windows.describe()
    ([(7000, 17000), (12000, 22000)], 'sliding 10 seconds every 5 seconds, offset 2 seconds')

    Args:
        size: the window length: ``"10 seconds"`` or ms.
        slide: the distance between two window starts, at most ``size``.
        offset: shifts every window start (Spark's ``startTime``); ``|offset| < slide``.
    """

    size: int = attrs.field(converter=_duration)
    slide: int = attrs.field(converter=_duration)
    offset: int = attrs.field(default=0, converter=_duration)
    kind = "sliding"

    def __attrs_post_init__(self):
        check_window(self.size, self.slide, self.offset)

    def assign(self, ts: int) -> list[tuple[int, int]]:
        """The windows that contain ``ts``, earliest first."""
        return sliding(ts, self.size, self.slide, self.offset)

    def describe(self) -> str:
        offset = f", offset {format_duration(self.offset)}" if self.offset else ""
        return f"sliding {format_duration(self.size)} every {format_duration(self.slide)}{offset}"


def touches(one: tuple[int, int], other: tuple[int, int]) -> bool:
    """Whether two sessions overlap or touch, and so belong to one session: the later start is at or before
    the earlier end.

    >>> touches((0, 10_000), (10_000, 20_000)), touches((0, 10_000), (10_001, 20_000))
    (True, False)
    """
    return max(one[0], other[0]) <= min(one[1], other[1])


def merge_sessions(windows) -> list[tuple[int, int]]:
    """Merge sessions as Spark's ``MergingSessionsIterator`` does: sort by start, then fold each session into
    the current one while ``next.start <= current.end``; the order of the input does not matter.

    >>> merge_sessions([(5, 15), (1, 11), (16, 26)])
    [(1, 15), (16, 26)]

    Args:
        windows: ``(start, end)`` pairs in ms, in any order.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(windows):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _fixed_gap(gap):
    return gap if callable(gap) else parse_duration(gap)


@attrs.frozen
class Session:
    """Session windows with a fixed ``gap`` or a gap computed from each row: an event opens ``[ts, ts + gap)``
    and sessions of a key that touch merge.

    >>> Session("10 seconds").describe(), Session("10 seconds").gap_of({"key": "a"})
    ('session, gap 10 seconds', 10000)
    >>> per_key = Session(lambda row: "5 seconds" if row["key"] == "a" else 0, label="5 seconds for key a")
    >>> per_key.gap_of({"key": "a"}), per_key.gap_of({"key": "b"}), per_key.describe()
    (5000, 0, 'session, gap 5 seconds for key a')
    >>> Session("0 seconds")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: a session gap must be longer than zero, got 0 seconds: every session [ts, ts + gap) would be empty. (Spark does not refuse it: it silently drops every row.)

    Args:
        gap: a duration (``"10 seconds"`` or ms), or a function of the row that returns one (ms or text);
            a row whose gap is not positive (or ``None``) is dropped.
        label: how a per-row gap reads in diagrams and traces.
    """

    gap: int | Callable[[dict], object] = attrs.field(converter=_fixed_gap)
    label: str | None = None
    kind = "session"

    def __attrs_post_init__(self):
        if not callable(self.gap) and self.gap <= 0:
            raise PipelineError(
                f"a session gap must be longer than zero, got {format_duration(self.gap)}: every session "
                "[ts, ts + gap) would be empty. (Spark does not refuse it: it silently drops every row.)"
            )

    def gap_of(self, row: dict) -> int | None:
        """The gap of this row's session in ms (``None`` when a per-row gap gives none or cannot be read)."""
        if not callable(self.gap):
            return self.gap
        gap = self.gap(row)
        if gap is not None and not isinstance(gap, (str, int)):
            return None
        try:
            return None if gap is None else parse_duration(gap)
        except TimeFormatError:
            return None

    def describe(self) -> str:
        if callable(self.gap):
            return f"session, gap {self.label or 'per row'}"
        return f"session, gap {format_duration(self.gap)}"
