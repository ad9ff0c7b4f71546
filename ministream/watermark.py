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
that raises it; every subtask's watermark is the minimum over its input channels and never goes down (see
``runtime.Subtask.on_watermark``).

>>> marks = MicroBatchWatermarks({"wm": 5_000})
>>> marks.observe("wm", 3_000); marks.advance()   # 3 s - 5 s < 0: stays at 0
0
>>> marks.observe("wm", 12_000); marks.advance()
7000
>>> marks.observe("wm", 11_000); marks.advance()  # never goes down
7000
"""

from __future__ import annotations

from ministream.operators import Operator, PipelineError

POLICIES = ("min", "max")


class MicroBatchWatermarks:
    """Spark's watermark tracker: one proposal per ``with_watermark`` step, combined by a policy.

    State: ``self.proposals[step] = watermark proposed so far`` and ``self.batch_max[step] = largest event
    time seen in the batch that is running``.
    """

    def __init__(self, delays: dict[str, int], policy: str = "min"):
        if policy not in POLICIES:
            raise PipelineError(f"watermark policy must be 'min' or 'max', not {policy!r}")
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


class WatermarkOperator(Operator):
    """The ``with_watermark`` step: rows pass through unchanged while it tracks their event time.

    In the micro-batch model it reports the batch's largest event time to the driver. In the continuous
    model it emits a :class:`~ministream.runtime.Watermark` marker each time ``max - delay - 1`` goes up.
    """

    def __init__(self, column: str, delay: int):
        self.column = column
        self.delay = delay

    def open(self, ctx):
        super().open(ctx)
        self.batch_max = None  # micro-batch: the largest event time of the running batch
        self.max_seen = None   # continuous: the largest event time so far
        self.emitted = None    # continuous: the last watermark sent downstream

    def process(self, rows, input_index):
        column = self.column
        if self.ctx.model == "microbatch":
            times = [row[column] for row in rows if row.get(column) is not None]
            if times:
                top = max(times)
                self.batch_max = top if self.batch_max is None else max(self.batch_max, top)
            self.ctx.emit(rows)
            return
        pending = []
        for row in rows:
            pending.append(row)
            event_time = row.get(column)
            if event_time is None or (self.max_seen is not None and event_time <= self.max_seen):
                continue
            self.max_seen = event_time
            watermark = event_time - self.delay - 1
            if self.emitted is None or watermark > self.emitted:
                self.ctx.emit(pending)
                pending = []
                self.emitted = watermark
                self.ctx.explain("watermark", f"watermark {watermark}: max event time {event_time} - "
                                 f"delay {self.delay} - 1 ms")
                self.ctx.emit_watermark(watermark)
        self.ctx.emit(pending)

    def on_batch_end(self, batch):
        if self.batch_max is not None:
            self.ctx.report_event_time(self.batch_max)
        self.batch_max = None

    def on_watermark(self, watermark):
        pass  # a watermark step makes its own watermarks; it does not forward its input's

    def snapshot(self):
        return {"max_seen": self.max_seen, "emitted": self.emitted}

    def restore(self, snapshot, key_groups=None):
        self.max_seen, self.emitted = snapshot["max_seen"], snapshot["emitted"]
