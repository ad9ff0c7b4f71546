"""Results: the rows a query emitted, batch by batch, in the same shape for ministream and for Spark.

A micro-batch query produces a sequence of batches. Each batch has an id (0, 1, 2, ...), the watermark the
batch ran with (``None`` when the query has no watermark) and the rows the sink received. Both engines report
their output as a list of :class:`BatchResult`, so that :mod:`ministream.core.compare` can set them side by side.

>>> batch = BatchResult(0, None, [{"key": "a", "count": 2}])
>>> batch.batch_id, batch.rows
(0, [{'key': 'a', 'count': 2}])
"""

from __future__ import annotations

import datetime as _dt
import decimal
import math

import attrs

from ministream.time.units import format_ts, from_datetime


@attrs.frozen
class BatchResult:
    """What one micro-batch emitted: its id, its watermark in ms (or ``None``), and its rows (dicts).

    ``processing_time`` is the batch's timestamp in ms when the engine had one (Spark always does: it is in
    the checkpoint's ``offsets/k``). It is a fact about the run, not about the result: it is left out of
    ``==`` and of ``repr``, so that two engines' batches compare by what they emitted.
    """

    batch_id: int
    watermark: int | None
    rows: list[dict]
    processing_time: int | None = attrs.field(default=None, eq=False, repr=False)


FLOAT_DIGITS = 12
"""Floats are compared to this many significant digits.

Spark adds partial sums per partition and then merges them, so the order of its additions (and so the last
bits of a float sum) depends on its partitioning. Twelve significant digits keep every real difference and
drop only that rounding noise. Lessons use values that are exact in binary, where no rounding happens at all.
"""


def normalize_value(value):
    """One value in the form both engines are compared in: timestamps as ms ints, floats rounded.

    >>> normalize_value(_dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=_dt.timezone.utc))
    1000
    >>> normalize_value(0.1 + 0.2), normalize_value(3.0), normalize_value(None)
    (0.3, 3, None)
    """
    if isinstance(value, _dt.datetime):
        return from_datetime(value)
    if isinstance(value, decimal.Decimal):
        value = float(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return value
        if value == int(value) and abs(value) < 2**53:
            return int(value)
        return float(f"{value:.{FLOAT_DIGITS}g}")
    if isinstance(value, (list, tuple)):
        return tuple(normalize_value(v) for v in value)
    return value


def normalize_row(row) -> tuple:
    """A row as a sorted tuple of (column, value) pairs: hashable, so rows can be counted as a multiset.

    >>> normalize_row({"b": 2.0, "a": "x"})
    (('a', 'x'), ('b', 2))
    """
    return tuple(sorted((name, normalize_value(value)) for name, value in dict(row).items()))


TIME_COLUMNS = ("ts", "window_start", "window_end", "time", "event_time")
"""Columns shown as timestamps when rows are printed (they hold ms since the epoch)."""


def format_value(name: str, value) -> str:
    """A value as a person reads it: timestamps as UTC times, the rest as they are."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (name in TIME_COLUMNS or name.endswith(("_time", "_start", "_end", "_ts")))
    ):
        return format_ts(value)
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def format_row(row) -> str:
    """A row on one line: ``{key: a, count: 2}``."""
    pairs = row if isinstance(row, tuple) else tuple(dict(row).items())
    return "{" + ", ".join(f"{name}: {format_value(name, value)}" for name, value in pairs) + "}"
