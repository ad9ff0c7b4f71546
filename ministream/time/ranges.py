"""Time-range join conditions, and the state watermarks they give each side of a stream-stream join.

``TimeRange("imp_time", "click_time", lower=0, upper=60_000)`` says a click matches an impression shown at
most a minute before it: ``imp_time + 0 <= click_time <= imp_time + 1 minute``. Spark writes it as
``click_time >= imp_time AND click_time <= imp_time + INTERVAL 1 MINUTE``.

With watermark WM, a row of the other side that is still to come is not late, so its time is ``> WM``. That
bounds which stored rows can still match (Spark's ``StreamingJoinHelper.getStateValueWatermark``):

- a left row can match a future right row only if ``left > WM - upper``: left rows with
  ``left <= WM - upper`` may go;
- a right row can match a future left row only if ``right > WM + lower``.

For an inclusive bound (``<=``) Spark keeps one more millisecond: it solves the condition as if it were
strict and subtracts 1 ms, so it removes ``left <= WM - upper - 1 ms``. Strict bounds get no such millisecond.

>>> within = TimeRange("imp_time", "click_time", lower=0, upper=60_000)
>>> within.left_state_watermark(100_000), within.right_state_watermark(100_000)
(39999, 99999)
"""

from __future__ import annotations

import attrs

from ministream.time.units import format_duration


@attrs.frozen
class TimeRange:
    """A time-range join condition: ``left_time + lower <= right_time <= left_time + upper``.

    Bounds are in ms; ``None`` leaves that side open; ``*_inclusive=False`` makes a bound strict (``<``). In
    Spark: ``right_time >= left_time + INTERVAL lower AND right_time <= left_time + INTERVAL upper``.

    >>> TimeRange("order_time", "payment_time", lower=0, upper=600_000, upper_inclusive=False)
    TimeRange(order_time + 0 seconds <= payment_time < order_time + 10 minutes)
    """

    left: str
    right: str
    lower: int | None = None
    upper: int | None = None
    lower_inclusive: bool = True
    upper_inclusive: bool = True

    def holds(self, left_row: dict, right_row: dict) -> bool:
        """Whether a left and a right row satisfy the range."""
        gap = right_row[self.right] - left_row[self.left]
        if self.lower is not None and (gap < self.lower or (gap == self.lower and not self.lower_inclusive)):
            return False
        return self.upper is None or gap < self.upper or (gap == self.upper and self.upper_inclusive)

    def left_state_watermark(self, watermark: int) -> int | None:
        """Left rows with time ``<=`` this can match no future right row (``None``: no upper bound, keep
        them all)."""
        if self.upper is None:
            return None
        return watermark - self.upper - (1 if self.upper_inclusive else 0)

    def right_state_watermark(self, watermark: int) -> int | None:
        """Right rows with time ``<=`` this can match no future left row (``None``: no lower bound)."""
        if self.lower is None:
            return None
        return watermark + self.lower - (1 if self.lower_inclusive else 0)

    def describe(self) -> str:
        """The condition in words: ``imp_time + 0 seconds <= click_time <= imp_time + 1 minute``."""
        low = (
            ""
            if self.lower is None
            else (f"{self.left} + {format_duration(self.lower)} {'<=' if self.lower_inclusive else '<'} ")
        )
        high = (
            ""
            if self.upper is None
            else (f" {'<=' if self.upper_inclusive else '<'} {self.left} + {format_duration(self.upper)}")
        )
        return f"{low}{self.right}{high}"

    def __repr__(self):
        return f"TimeRange({self.describe()})"
