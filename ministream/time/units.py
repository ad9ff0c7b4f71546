"""Time in ministream: whole milliseconds since the Unix epoch, in UTC.

Every event time, watermark, timer and window bound inside the engine is an ``int`` of milliseconds.
Spark floors event times to milliseconds for its watermark arithmetic, so an engine that works in whole
milliseconds agrees with it at every edge. This module turns text into those integers and back.

>>> parse_duration("10 seconds")
10000
>>> parse_timestamp("2024-01-01T10:00:05Z")
1704103205000
>>> format_ts(1704103205000)
'2024-01-01T10:00:05Z'
>>> format_duration(90_000)
'1 minute 30 seconds'
"""

from __future__ import annotations

import datetime as _dt
import re

MS_PER_UNIT = {
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 7 * 86_400_000,
    "month": 31 * 86_400_000,
    "year": 12 * 31 * 86_400_000,
}
"""Milliseconds per unit. A month counts 31 days and a year 12 months, as Spark counts them in a watermark
delay (``IntervalUtils.getDuration`` with its 31-day month); windows refuse months and years, as Spark does."""
_UNIT_ALIASES = {
    "ms": "millisecond",
    "msec": "millisecond",
    "milli": "millisecond",
    "s": "second",
    "sec": "second",
    "m": "minute",
    "min": "minute",
    "h": "hour",
    "hr": "hour",
    "d": "day",
}
_PART = re.compile(r"\s*(-?\d+)\s*([a-zA-Z]+)\s*")
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)

MAX_TIME = 2**63 - 1
"""The end of time: Flink's ``Long.MAX_VALUE``, the watermark a source sends when its input is over (shown
as ``+∞``)."""


class TimeFormatError(ValueError):
    """A duration or timestamp that ministream cannot read; the message says what was expected."""


def _unit(word: str) -> str:
    word = word.lower()
    word = _UNIT_ALIASES.get(word, word)
    if word.endswith("s") and word[:-1] in MS_PER_UNIT:
        word = word[:-1]
    if word not in MS_PER_UNIT:
        raise TimeFormatError(
            f"unknown time unit {word!r}: use milliseconds, seconds, minutes, hours, days, weeks, months or years"
        )
    return word


_QUOTED_PART = re.compile(r"\s*'?([+-]?\d+)'?\s*([a-zA-Z]+)\s*")
_INTERVAL = re.compile(r"(?is)\s*interval\s+(.*)")
_ANSI_RANGE = re.compile(r"(?is)'([^']*)'\s+([a-z]+)\s+to\s+([a-z]+)\s*")
_ANSI_FORMS = {
    ("year", "month"): (r"(\d+)-(\d+)", ("year", "month")),
    ("day", "hour"): (r"(\d+) (\d+)", ("day", "hour")),
    ("day", "minute"): (r"(\d+) (\d+):(\d+)", ("day", "hour", "minute")),
    ("day", "second"): (r"(\d+) (\d+):(\d+):(\d+)", ("day", "hour", "minute", "second")),
    ("hour", "minute"): (r"(\d+):(\d+)", ("hour", "minute")),
    ("hour", "second"): (r"(\d+):(\d+):(\d+)", ("hour", "minute", "second")),
    ("minute", "second"): (r"(\d+):(\d+)", ("minute", "second")),
}
"""The ANSI interval literals with a range (``INTERVAL '1 2:3:4' DAY TO SECOND``): the form of the quoted
value for each pair of units, and which unit each number is."""


def parse_duration(text: str | int) -> int:
    """Read a duration such as ``"10 seconds"`` or ``"1 hour 30 minutes"`` as milliseconds.

    Spark writes durations the same way (``window(ts, "10 seconds")``), and also as SQL interval literals,
    which ministream reads too: ``"interval 10 seconds"``, ``"INTERVAL '10' SECOND"``, the ANSI forms
    ``"interval '1 2:3:4' day to second"`` and ``"interval '1-2' year to month"``; surrounding spaces and
    tabs are ignored. A month counts 31 days and a year 12 months (Spark's rule for a watermark delay). The
    sign is that of the whole: ``"1 month -40 days"`` is negative. An ``int`` is taken as milliseconds.

    >>> parse_duration("1 hour 30 minutes")
    5400000
    >>> parse_duration("250 ms"), parse_duration("interval '3:30' minute to second")
    (250, 210000)
    >>> parse_duration("\tinterval '1-2' year to month") == parse_duration("1 year 2 months") == 14 * 31 * 86_400_000
    True
    >>> parse_duration("1 month -40 days") < 0
    True
    >>> parse_duration("ten seconds")
    Traceback (most recent call last):
    ...
    ministream.time.units.TimeFormatError: cannot read 'ten seconds' as a duration: write it like '10 seconds' or '1 minute 30 seconds'
    """
    if isinstance(text, bool):
        raise TimeFormatError(f"cannot read {text!r} as a duration")
    if isinstance(text, int):
        return text
    s = str(text).strip()
    if s.lstrip("-").isdigit():
        return int(s)
    interval = _INTERVAL.fullmatch(s)
    body = interval.group(1).strip() if interval else s
    ansi = _ANSI_RANGE.fullmatch(body) if interval else None
    if ansi is not None:
        return _ansi_range(text, *ansi.groups())
    total, pos = 0, 0
    part = _QUOTED_PART if interval else _PART
    for match in part.finditer(body):
        if match.start() != pos:
            break
        total += int(match.group(1)) * MS_PER_UNIT[_unit(match.group(2))]
        pos = match.end()
    if pos != len(body) or not body:
        raise TimeFormatError(
            f"cannot read {text!r} as a duration: write it like '10 seconds' or '1 minute 30 seconds'"
        )
    return total


def _ansi_range(text, value: str, start: str, end: str) -> int:
    """An ANSI interval with a range of units, ``'1 2:3:4' DAY TO SECOND``, in ms."""
    form = _ANSI_FORMS.get((_unit(start), _unit(end)))
    value = value.strip()
    sign = -1 if value.startswith("-") else 1
    found = re.fullmatch(form[0], value.lstrip("+-")) if form else None
    if form is None or found is None:
        raise TimeFormatError(
            f"cannot read {text!r} as a duration: an interval {start} to {end} is written like "
            f"{_ANSI_EXAMPLES.get((_unit(start), _unit(end)), 'another pair of units')}"
        )
    total = 0
    for number, unit in zip(found.groups(), form[1]):
        total += int(number) * MS_PER_UNIT[unit]
    return sign * total


_ANSI_EXAMPLES = {
    ("year", "month"): "'1-2'",
    ("day", "hour"): "'1 2'",
    ("day", "minute"): "'1 2:3'",
    ("day", "second"): "'1 2:3:4'",
    ("hour", "minute"): "'2:3'",
    ("hour", "second"): "'2:3:4'",
    ("minute", "second"): "'3:4'",
}


def format_duration(ms: int) -> str:
    """Write milliseconds as the largest whole units, the way a person says them.

    >>> format_duration(10_000), format_duration(1), format_duration(3_600_500)
    ('10 seconds', '1 millisecond', '1 hour 500 milliseconds')
    """
    if ms == 0:
        return "0 seconds"
    sign, ms = ("-", -ms) if ms < 0 else ("", ms)
    parts = []
    for unit in ("week", "day", "hour", "minute", "second", "millisecond"):  # months are shown as days
        size = MS_PER_UNIT[unit]
        if ms >= size:
            count, ms = divmod(ms, size)
            parts.append(f"{count} {unit}{'s' if count != 1 else ''}")
    return sign + " ".join(parts)


def parse_timestamp(text: str) -> int:
    """Read an ISO-8601 timestamp as milliseconds since the epoch; a timestamp without a zone is UTC.

    Sub-millisecond precision is refused rather than rounded, because rounding would move an event across a
    window or watermark edge that Spark would not move it across.

    >>> parse_timestamp("1970-01-01T00:00:01.5Z")
    1500
    >>> parse_timestamp("2024-01-01T10:00:00+01:00") == parse_timestamp("2024-01-01T09:00:00Z")
    True
    >>> parse_timestamp("2024-01-01T00:00:00.0001Z")
    Traceback (most recent call last):
    ...
    ministream.time.units.TimeFormatError: '2024-01-01T00:00:00.0001Z' has a fraction finer than a millisecond; ministream keeps event time in whole milliseconds
    """
    if not isinstance(text, str):
        raise TimeFormatError(f"{text!r} is not a timestamp: write it as a string like '2024-01-01T10:00:05Z'")
    try:
        moment = _dt.datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        raise TimeFormatError(f"{text!r} is not an ISO-8601 timestamp: write it like '2024-01-01T10:00:05Z'") from None
    return from_datetime(moment, original=text)


def from_datetime(moment: _dt.datetime, original: object = None) -> int:
    """Milliseconds since the epoch of a ``datetime``; a naive one is taken as UTC.

    >>> from_datetime(_dt.datetime(1970, 1, 1, 0, 0, 2))
    2000
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    if moment.microsecond % 1000:
        shown = original if original is not None else moment.isoformat()
        raise TimeFormatError(
            f"{shown!r} has a fraction finer than a millisecond; ministream keeps event time in whole milliseconds"
        )
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def to_datetime(ms: int) -> _dt.datetime:
    """The UTC ``datetime`` of a millisecond timestamp.

    >>> to_datetime(1500)
    datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc)
    """
    return EPOCH + _dt.timedelta(milliseconds=ms)


def format_ts(ms: int | None) -> str:
    """ISO-8601 UTC text of a millisecond timestamp, with milliseconds only when there are some.

    A time past the year 9999 (Flink's tests use times near ``Long.MAX_VALUE``) is shown in ms.

    >>> format_ts(0), format_ts(1500), format_ts(None), format_ts(MAX_TIME), format_ts(MAX_TIME - 808)
    ('1970-01-01T00:00:00Z', '1970-01-01T00:00:01.500Z', '-', '+∞', '9223372036854774999 ms')
    """
    if ms is None:
        return "-"
    if ms >= MAX_TIME:
        return "+∞"
    try:
        moment = to_datetime(ms)
    except OverflowError:  # beyond what a datetime holds
        return f"{ms} ms"
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{moment.microsecond // 1000:03d}"
    return text + "Z"


def format_clock(ms: int | None) -> str:
    """The time of day of a millisecond timestamp, for compact tables: ``HH:MM:SS`` (and ``.mmm``).

    >>> format_clock(1704103205000), format_clock(12_345), format_clock(MAX_TIME)
    ('10:00:05', '00:00:12.345', '+∞')
    """
    text = format_ts(ms)
    return text[11:-1] if text.endswith("Z") else text
