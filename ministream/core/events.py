"""Events files: a lesson's input script, written by hand as JSON Lines.

A stream arrives in micro-batches, so a *script* is a list of batches and batch ``k`` is a list of rows. A user
writes one as a text file with one JSON object per line: ``batch`` says which micro-batch the event arrives in
(0, 1, 2, ... in file order; a number that is skipped is an empty batch), ``ts`` is its event time as an
ISO-8601 UTC timestamp, and the lesson's own fields follow. Arrival (``batch``) and event time (``ts``) are
separate on purpose: an event can arrive late, in a batch long after its time.

>>> script = parse_events(['{"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": 1}',
...                        '{"batch": 2, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 2.5}'],
...                       [Field("key", str), Field("value", float)])
>>> script
[[{'ts': 1704103205000, 'key': 'a', 'value': 1.0}], [], [{'ts': 1704103201000, 'key': 'a', 'value': 2.5}]]

Every mistake is reported with the file, the line, the field and a hint, because a reader of this file is
learning, not debugging a parser; a file with several bad lines gets them all (up to :data:`MAX_REPORTED`),
so they can be fixed in one go. A file that cannot be read at all (missing, a folder, not UTF-8 text) is
one message naming the file and what is wrong with it.

The reader takes only what Spark's JSON reader reads into the same value (:data:`TIMESTAMP_FORM`,
:data:`BIGINT`), so that a file means the same to a Spark job; what Spark's lenient reader makes of the lines
this one refuses is ``spark/permissive.py``'s. A lesson field given as ``null`` is read as ``None``, as Spark
reads it (a null key is a key of its own, a sum skips a null value); a field left out is refused, where Spark
would read a null too: a line without a field is more often a mistake than a value.

>>> parse_events(['{"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": null, "value": 1}'],
...              [Field("key", str), Field("value", float)])
[[{'ts': 1704103205000, 'key': None, 'value': 1.0}]]
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable

import attrs

from ministream.time.units import TimeFormatError, format_ts, parse_timestamp

MAX_REPORTED = 10
"""How many bad lines of a file one error reports; the message counts the rest."""

_EXAMPLE = {str: "a", float: 1.0, int: 1}
_JSON_TYPE = {list: "an array", str: "a string", bool: "true/false", type(None): "null"}


@attrs.frozen
class Field:
    """One of a lesson's own columns: its name and kind (``str``, ``float`` or ``int``).

    >>> line = '{"batch": 0, "ts": "2024-01-01T10:00:00Z", "user": "ann", "amount": 5}'
    >>> parse_events([line], [Field("user", str), Field("amount", float)])
    [[{'ts': 1704103200000, 'user': 'ann', 'amount': 5.0}]]
    """

    name: str
    kind: type = attrs.field(validator=attrs.validators.in_((str, float, int)))


@attrs.frozen
class DeadLetter:
    """A line that could not be read, set aside instead of stopping the whole file."""

    path: str
    line: int
    text: str
    reason: str


class EventsFileError(ValueError):
    """A mistake in an events file, located by file, line (1-based) and field.

    >>> str(EventsFileError("events.jsonl", 3, "ts", "'2024-13-01' is not an ISO-8601 timestamp"))
    "events.jsonl line 3, field 'ts': '2024-13-01' is not an ISO-8601 timestamp"
    """

    def __init__(self, path, line: int | None, field: str | None, problem: str):
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        where = self.path + (f" line {line}" if line else "")
        super().__init__(f"{where}{', ' if field else ': '}{self.detail}")

    @property
    def detail(self) -> str:
        """The field and the problem, without the place in the file."""
        return f"field {self.field!r}: {self.problem}" if self.field else self.problem


class BadLinesError(EventsFileError):
    """Several bad lines of one events file: one line of the message per bad line (at most
    :data:`MAX_REPORTED`), then how many there are in all; its own fields are the first bad line's.

    >>> bad = [EventsFileError("e.jsonl", 2, None, "not JSON"), EventsFileError("e.jsonl", 5, "ts", "missing")]
    >>> print(BadLinesError(bad))
    e.jsonl line 2: not JSON
    e.jsonl line 5, field 'ts': missing
    e.jsonl: 2 bad lines
    """

    def __init__(self, errors: list[EventsFileError], total: int | None = None):
        first = errors[0]
        super().__init__(first.path, first.line, first.field, first.problem)
        self.errors = errors
        total = len(errors) if total is None else total
        shown = "" if total == len(errors) else f", the first {len(errors)} shown above"
        self.args = ("\n".join([*map(str, errors), f"{first.path}: {total} bad lines{shown}"]),)


def _shown(value) -> str:
    """A value the way it reads in the file: ``true``, ``null``, ``NaN``, ``'2'`` for a string."""
    return repr(value) if isinstance(value, str) else json.dumps(value)


def _names(names: list[str], last: str = "and") -> str:
    """``'a', 'b' and 'c'``: names listed the way a sentence lists them."""
    quoted = [repr(name) for name in names]
    return f"{', '.join(quoted[:-1])} {last} {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _check_batch(value) -> int:
    """A batch number is a whole number from 0."""
    if isinstance(value, str):
        raise ValueError(f"{value!r} is a string: write the batch number without quotes, like 2")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{_shown(value)} is not a whole number: batches are numbered 0, 1, 2, ...")
    if value < 0:
        raise ValueError(f"{value} is negative: batches are numbered from 0")
    return value


TIMESTAMP_FORM = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?")
"""The ISO-8601 timestamps an events file may hold: a date, then optionally ``T`` (or a space), the time with its
seconds, a fraction and a zone (``Z``, ``+01``, ``+0100`` or ``+01:00``; none is UTC). Python reads more forms
(``20240101T100000Z``, ``2024-W01-1``, ``10:00Z`` without seconds, a comma before the fraction, a lowercase
``z``), which Spark's JSON reader reads as null: refused, so that a file ministream reads is read the same by a
Spark job (``tests/spark/test_permissive.py`` checks every accepted form against Spark's reader)."""

BIGINT = (-(2**63), 2**63 - 1)
"""The range of an ``int`` field: Spark's BIGINT, whose reader makes a larger number null."""


def _check_ts(value) -> int:
    """Event time comes as an ISO-8601 string (:data:`TIMESTAMP_FORM`); a bare number is refused, since its unit
    would be a guess (Spark's reader takes it as seconds)."""
    if not isinstance(value, str):
        raise ValueError(f'{_shown(value)} is not a timestamp string: write it in quotes, like "2024-01-01T10:00:05Z"')
    try:
        ms = parse_timestamp(value)
    except TimeFormatError as err:
        hint = ": keep at most 3 digits after the second, like '2024-01-01T10:00:05.250Z'"
        raise ValueError(str(err) + (hint if "finer than a millisecond" in str(err) else "")) from None
    if not TIMESTAMP_FORM.fullmatch(value.strip()):  # a form Python reads and Spark does not
        raise ValueError(
            f"{value!r} is not a timestamp Spark's JSON reader reads: write the date, 'T' and the time with its "
            "seconds, like '2024-01-01T10:00:05Z' (a fraction and a zone such as '+01:00' may follow)"
        )
    return ms


def _check_value(value, kind: type):
    """A lesson field holds text (``str``) or a finite number (``float``, ``int``); true/false is no number."""
    if kind is str:
        if not isinstance(value, str):
            raise ValueError(f'{_shown(value)} is not a string: write it in quotes, like "{value}"')
        return value
    like = "3" if kind is int else "1.5"
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{_shown(value)} is not a finite number: give a number like {like}")
    if isinstance(value, str) and value.strip().lstrip("-").replace(".", "", 1).isdigit():
        raise ValueError(f"{value!r} is a string, not a number: write it without quotes, like {value.strip()}")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{_shown(value)} is not a number: give a number like {like}")
    if kind is int and not isinstance(value, int):
        raise ValueError(f"{_shown(value)} is not a whole number: write it like {like}")
    if kind is int and not BIGINT[0] <= value <= BIGINT[1]:
        raise ValueError(f"{value} is out of range: a whole number fits 64 bits, from {BIGINT[0]} to {BIGINT[1]}")
    return kind(value)


class _Bad(Exception):
    """One line's problem as ``(field, problem)``, before the file and line number are added."""


def _checked(name: str, check, value, *args):
    try:
        return check(value, *args)
    except ValueError as err:
        raise _Bad(name, str(err)) from None


def _read_batch(text: str, example: str) -> tuple[dict, int]:
    """First step of a line: it is a JSON object with a batch number."""
    try:
        event = json.loads(text)
    except json.JSONDecodeError as err:
        raise _Bad(
            None,
            f"this is not valid JSON ({err.msg} at column {err.colno}): "
            f"write each event as one JSON object on its own line, like {example}",
        ) from None
    if not isinstance(event, dict):
        raise _Bad(
            None, f"this is {_JSON_TYPE.get(type(event), 'a number')}, not an object: write each event like {example}"
        )
    if event.get("batch") is None:
        raise _Bad(
            "batch", f"{'null' if 'batch' in event else 'missing'}: every event needs a batch number, like {example}"
        )
    return event, _checked("batch", _check_batch, event["batch"])


def _read_row(event: dict, fields: list[Field], streams: list[str] | None, example: str):
    """Second step: the stream it belongs to and its row ``{"ts": ms, <fields>...}``."""
    allowed = ["batch", "ts"] + (["stream"] if streams else []) + [f.name for f in fields]
    for name in event:
        if name not in allowed:
            raise _Bad(name, f"this lesson has no such field: the allowed fields are {_names(allowed)}")
    for name in allowed:
        if name not in event:
            raise _Bad(name, f"missing: every event needs {_names(allowed)}, like {example}")
        if event[name] is None and name in ("batch", "ts", "stream"):
            raise _Bad(
                name,
                f"null: every event needs {_names(allowed)}, like {example}; the lesson's own fields may be null, "
                "not the batch, the time or the stream",
            )
    if streams and event["stream"] not in streams:
        raise _Bad("stream", f"{_shown(event['stream'])} is not an input of this lesson: use {_names(streams, 'or')}")
    row = {"ts": _checked("ts", _check_ts, event["ts"])}
    for field in fields:  # a null is read as None, as Spark reads it: grouped as a key, skipped by a sum
        value = event[field.name]
        row[field.name] = None if value is None else _checked(field.name, _check_value, value, field.kind)
    return event.get("stream"), row


def parse_events(
    lines: Iterable[str],
    fields: list[Field],
    streams: list[str] | None = None,
    source_name: str = "<events>",
    dead_letters: list | None = None,
):
    """Read events from lines of JSON: a list of batches, or ``{stream: batches}`` when ``streams`` is given.

    With a ``dead_letters`` list, a bad line is appended to it as a :class:`DeadLetter` instead of raising.
    A batch number that goes backwards still raises, since it breaks the order of the whole script; a line
    set aside after its batch number was read still makes that batch exist (empty if nothing else is in it).

    >>> parse_events(['{"batch": 1, "ts": "2024-01-01T10:00:00Z", "stream": "payments", "amount": 5}'],
    ...              [Field("amount", float)], streams=["orders", "payments"])
    {'orders': [[], []], 'payments': [[], [{'ts': 1704103200000, 'amount': 5.0}]]}
    >>> parse_events(['{"batch": 0, "ts": "2024-13-01", "key": "a"}'], [Field("key", str)], source_name="e.jsonl")
    Traceback (most recent call last):
    ...
    ministream.core.events.EventsFileError: e.jsonl line 1, field 'ts': '2024-13-01' is not an ISO-8601 timestamp: write it like '2024-01-01T10:00:05Z'
    """
    first: dict[str, object] = {"batch": 0, "ts": "2024-01-01T10:00:05Z"} | ({"stream": streams[0]} if streams else {})
    example = json.dumps(first | {f.name: _EXAMPLE[f.kind] for f in fields})
    scripts: dict[str | None, list[list[dict]]] = {name: [] for name in ([*streams] if streams else [None])}
    last_batch, last_line = -1, None

    errors: list[EventsFileError] = []  # without dead letters: the bad lines, reported together at the end
    bad_lines = 0

    def set_aside(number: int, text: str, bad: _Bad) -> None:
        nonlocal bad_lines
        error = EventsFileError(source_name, number, *bad.args)
        if dead_letters is None:
            bad_lines += 1
            if len(errors) < MAX_REPORTED:
                errors.append(error)
            return
        dead_letters.append(DeadLetter(error.path, number, text, error.detail))

    for number, text in enumerate(lines, start=1):
        text = text.strip()
        if not text:
            continue
        try:
            event, batch = _read_batch(text, example)
        except _Bad as bad:
            set_aside(number, text, bad)
            continue
        if batch < last_batch:
            backwards = _Bad(
                "batch",
                f"batch {batch} comes after batch {last_batch} on line {last_line}: batches "
                f"must not go backwards, so sort the lines by batch",
            )
            if dead_letters is not None:
                raise EventsFileError(source_name, number, *backwards.args)
            set_aside(number, text, backwards)
            continue
        last_batch, last_line = batch, number
        for batches in scripts.values():
            batches.extend([] for _ in range(batch + 1 - len(batches)))
        try:
            stream, row = _read_row(event, fields, streams, example)
        except _Bad as bad:
            set_aside(number, text, bad)
            continue
        scripts[stream][batch].append(row)
    if len(errors) == 1 and bad_lines == 1:
        raise errors[0]
    if errors:
        raise BadLinesError(errors, bad_lines)
    if last_batch < 0:
        count = len(dead_letters or [])
        aside = f" ({count} bad line{'s' if count > 1 else ''} set aside)" if count else ""
        raise EventsFileError(
            source_name, None, None, f"the file has no events{aside}: write one JSON object per line, like {example}"
        )
    return scripts if streams else scripts[None]


def read_events(path, fields: list[Field], streams: list[str] | None = None, dead_letters: list | None = None):
    """Read an events file (JSON Lines, UTF-8); see :func:`parse_events` for what it returns. A file that
    cannot be read is an :class:`EventsFileError` naming it and saying why.

    >>> import tempfile
    >>> from pathlib import Path
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "clicks.jsonl"
    ...     _ = path.write_text('{"batch": 0, "ts": "2024-01-01T10:00:05Z", "user": "ann"}\\n'
    ...                         '{"batch": 1, "ts": "2024-01-01T10:00:01Z", "user": "bob"}\\n')
    ...     read_events(path, [Field("user", str)])
    [[{'ts': 1704103205000, 'user': 'ann'}], [{'ts': 1704103201000, 'user': 'bob'}]]
    >>> read_events("no-such-file.jsonl", [Field("key", str)])
    Traceback (most recent call last):
    ...
    ministream.core.events.EventsFileError: no-such-file.jsonl: there is no such file (paths are read from the folder the command runs in)
    """
    text = _read_text(path)
    return parse_events(text.split("\n"), fields, streams, source_name=str(path), dead_letters=dead_letters)


def _read_text(path) -> str:
    """The whole text of an events file, or an :class:`EventsFileError` that says why it cannot be read."""
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        problem = "there is no such file (paths are read from the folder the command runs in)"
        raise EventsFileError(path, None, None, problem) from None
    except IsADirectoryError:
        problem = "this is a folder, not an events file: give the path of a .jsonl file"
        raise EventsFileError(path, None, None, problem) from None
    except PermissionError:
        raise EventsFileError(path, None, None, "the file cannot be read: permission denied") from None
    except OSError as error:
        raise EventsFileError(path, None, None, f"the file cannot be read: {error.strerror or error}") from None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        problem = "this is UTF-16 text (it starts with a UTF-16 byte order mark): save the file as UTF-8"
        raise EventsFileError(path, None, None, problem)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        problem = f"this is not UTF-8 text (byte 0x{data[error.start]:02x} at column {column}): save the file as UTF-8"
        raise EventsFileError(path, line, None, problem) from None


def write_events(path, script, fields: list[Field], streams: list[str] | None = None) -> None:
    """Write a script as an events file that :func:`read_events` reads back to the same script.

    Empty batches are written as skipped batch numbers, so a script cannot end with an empty batch.
    """
    if streams is None and isinstance(script, dict):
        streams = list(script)
    scripts = script if streams else {None: script}
    length = max(len(batches) for batches in scripts.values()) if scripts else 0
    if not any(len(batches) == length and batches[-1] for batches in scripts.values()):
        raise ValueError(
            "an events file cannot hold a script that is empty or ends with an empty batch: "
            "a batch exists in the file only through the events in it"
        )
    with open(path, "w", encoding="utf-8") as out:
        for batch in range(length):
            for name in [*streams] if streams else [None]:
                for row in scripts[name][batch] if batch < len(scripts[name]) else []:
                    event = {"batch": batch, "ts": format_ts(row["ts"])}
                    event.update({"stream": name} if streams else {})
                    event.update({f.name: row[f.name] for f in fields})
                    out.write(json.dumps(event, allow_nan=False) + "\n")
