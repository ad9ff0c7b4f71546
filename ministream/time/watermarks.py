"""Watermarks: how far event time has got, so that state can be finalized and late rows recognized.

A watermark is a claim: "no more rows with event time at or before W will be accepted". With *bounded
out-of-orderness* the claim is derived from the largest event time seen so far, minus a delay that allows for
rows arriving out of order. ministream computes it in the two ways engines do:

**Micro-batch (Spark).** The driver computes one watermark per batch, between batches
(:class:`MicroBatchWatermarks`):

1. after batch k-1, each ``with_watermark`` step proposes ``max event time it has ever seen - delay``;
2. a step that has not seen a row yet proposes 0;
3. the proposals are combined by the policy, ``min`` (Spark's default) or ``max``;
4. the watermark never goes down, and starts at 0;
5. batch k runs with WM_k: rows with event time ``<= WM_{k-1}`` are late in batch k, and state with event
   time ``<= WM_k`` is evicted at its end.

**Continuous (Flink).** Each ``with_watermark`` subtask emits ``max event time - delay - 1`` after every row
that raises it; every subtask's watermark is the minimum over its *active* input channels and never goes
down (:class:`WatermarkValve`, Flink's ``StatusWatermarkValve``); an idle input leaves the minimum. When all
input is over, sources send :data:`MAX_WATERMARK`, which every step passes on, so every window fires.

>>> marks = MicroBatchWatermarks({"wm": 5_000})
>>> marks.observe("wm", 3_000); marks.advance()   # 3 s - 5 s < 0: stays at 0
0
>>> marks.observe("wm", 12_000); marks.advance()
7000
>>> marks.observe("wm", 11_000); marks.advance()  # never goes down
7000
"""

from __future__ import annotations

from typing import TypedDict

from ministream.errors import PipelineError
from ministream.time.units import MAX_TIME

POLICIES = ("min", "max")

MAX_WATERMARK = MAX_TIME
"""The watermark that means "no more input, ever" (Flink's ``Watermark.MAX_WATERMARK``)."""


def check_policy(policy: str) -> None:
    """Refuse a watermark policy other than ``"min"`` and ``"max"`` (Spark refuses it when the setting is
    made, query or no query).

    >>> check_policy("random")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: watermark policy must be 'min' or 'max', not 'random' (Spark: 'Valid values are 'min' and 'max'')
    """
    if policy not in POLICIES:
        raise PipelineError(
            f"watermark policy must be 'min' or 'max', not {policy!r} (Spark: 'Valid values are 'min' and 'max'')"
        )


class MicroBatchWatermarks:
    """Spark's watermark tracker: one proposal per ``with_watermark`` step, combined by a policy.

    State: ``self.proposals[step] = watermark proposed so far`` and ``self.batch_max[step] = largest event
    time seen in the batch that is running``.
    """

    def __init__(self, delays: dict[str, int], policy: str = "min"):
        check_policy(policy)
        self.delays = delays
        self.policy = policy
        self.proposals: dict[str, int] = {}
        self.batch_max: dict[str, int] = {}
        self.current = 0

    def observe(self, step: str, max_event_time: int) -> None:
        """A subtask of ``step`` saw rows in this batch, the latest at ``max_event_time``."""
        self.batch_max[step] = max(max_event_time, self.batch_max.get(step, max_event_time))

    def advance(self) -> int:
        """End of a batch: the watermark of the next batch."""
        for step, delay in self.delays.items():
            if step in self.batch_max:
                proposal = self.batch_max[step] - delay
                if proposal > self.proposals.get(step, proposal - 1):
                    self.proposals[step] = proposal
            else:
                self.proposals.setdefault(step, 0)  # no row yet: this input holds the minimum at 0
        self.batch_max = {}
        combine = min if self.policy == "min" else max
        self.current = max(self.current, combine(self.proposals.values()))
        return self.current


class ChannelState(TypedDict):
    """What a valve knows of one input channel: its latest watermark (``None`` before the first), whether it
    is active (not idle), and whether it is aligned (takes part in the minimum)."""

    watermark: int | None
    active: bool
    aligned: bool


class WatermarkValve:
    """A subtask's watermark, made from the watermarks and idle statuses of its input channels (continuous
    model): Flink's ``StatusWatermarkValve``.

    The rules:

    1. the subtask's watermark is the minimum over its *aligned* input channels, and it only goes up;
    2. an active channel that has sent no watermark yet holds the minimum down (it might send anything);
    3. an *idle* channel leaves the minimum, and its watermarks are ignored while it is idle;
    4. a channel that becomes active again rejoins the minimum only once its watermark has caught up with the
       subtask's (until then it is *unaligned*, and its rows may be late);
    5. when every channel is idle the subtask is idle: its watermark jumps to the largest channel watermark
       (nothing will hold it back) and it tells its receivers it is idle; it is active again as soon as one
       channel is.

    State: ``self.channels[position] = {"watermark": int or None, "active": bool, "aligned": bool}``,
    ``self.watermark`` (the subtask's, ``None`` before the first) and ``self.idle``.

    >>> valve = WatermarkValve(2)
    >>> valve.on_watermark(0, 10) is None     # channel 1 has sent nothing: it holds the minimum
    True
    >>> valve.on_watermark(1, 5), valve.on_watermark(1, 20)
    (5, 10)
    >>> valve.on_status(0, idle=True)          # channel 0 leaves the minimum: channel 1 alone decides
    (20, None)
    >>> valve.on_status(1, idle=True)          # every channel idle: the subtask is idle too
    (None, True)
    >>> valve.on_status(0, idle=False)         # back, but at 10 < 20: unaligned until it catches up
    (None, False)
    >>> valve.on_watermark(0, 15) is None, valve.on_watermark(0, 25)
    (True, 25)
    """

    def __init__(self, inputs: int):
        # {position: {"watermark": latest watermark or None, "active": bool, "aligned": bool}}
        self.channels: dict[int, ChannelState] = {
            position: {"watermark": None, "active": True, "aligned": True} for position in range(inputs)
        }
        self.watermark: int | None = None
        self.idle = False

    def on_watermark(self, position: int, time: int) -> int | None:
        """Channel ``position`` sent watermark ``time``: the subtask's new watermark if it rose, else
        ``None``."""
        channel = self.channels[position]
        if self.idle or not channel["active"]:
            return None  # rule 3
        if channel["watermark"] is not None and time <= channel["watermark"]:
            return None
        channel["watermark"] = time
        if not channel["aligned"] and time >= self._current():
            channel["aligned"] = True  # rule 4: caught up
        return self._rise_to_minimum()

    def on_status(self, position: int, idle: bool) -> tuple[int | None, bool | None]:
        """Channel ``position`` became idle (or active): ``(new watermark if it rose, new idle status of the
        subtask if it changed)``; the watermark, when there is one, goes out before the status."""
        channel = self.channels[position]
        if idle and channel["active"]:
            channel["active"] = channel["aligned"] = False
            if not any(other["active"] for other in self.channels.values()):
                self.idle = True  # rule 5: flush to the largest watermark, then go idle
                return self._rise_to(max(self._known_watermarks(), default=None)), True
            return self._rise_to_minimum(), None  # rule 3
        if not idle and not channel["active"]:
            channel["active"] = True
            known = channel["watermark"] if channel["watermark"] is not None else float("-inf")
            if known >= self._current():
                channel["aligned"] = True  # rule 4: it has not fallen behind (or nothing was output yet)
            if self.idle:
                self.idle = False
                return None, False
        return None, None

    def _current(self) -> float:
        return float("-inf") if self.watermark is None else self.watermark

    def _known_watermarks(self) -> list[int]:
        return [channel["watermark"] for channel in self.channels.values() if channel["watermark"] is not None]

    def _rise_to_minimum(self) -> int | None:
        aligned = [channel["watermark"] for channel in self.channels.values() if channel["aligned"]]
        known = [watermark for watermark in aligned if watermark is not None]
        if not aligned or len(known) < len(aligned):
            return None  # rule 2
        return self._rise_to(min(known))

    def _rise_to(self, time: int | None) -> int | None:
        if time is None or time <= self._current():
            return None  # rule 1: never down, and only a rise is news
        self.watermark = time
        return time
