"""The trace: why each row was emitted or dropped, batch by batch, step by step.

Operators explain themselves as they run (``ctx.explain(kind, text, row)``); a :class:`Trace` keeps those
lines with the batch they belong to, the watermark, and the state size of every step at the end of each
batch. ``ministream run LESSON --trace`` prints it; notebooks plot from it.

Kinds of lines: ``emit`` (a row left a step, and why), ``late`` (a row was dropped by the watermark, and the
rule), ``evict`` (state was removed), ``timer`` (a timer fired), ``wait`` (a window held back until the next
batch's watermark: why results look one batch late), ``watermark`` and ``state``.

>>> trace = Trace()
>>> trace.begin_batch(0, watermark=None)
>>> trace.record("totals", 0, "emit", "key 'a' emitted: updated in this batch", {"key": "a", "count": 1})
>>> print(trace.format())
batch 0
  [totals] emit: key 'a' emitted: updated in this batch -> {key: a, count: 1}

The continuous model has no batches: its trace (``Trace(model="continuous")``) is read per step, each line
numbered in the order things happened across the whole dataflow:

>>> trace = Trace(model="continuous")
>>> trace.record("totals", 0, "emit", "key 'a' emitted: its value changed", {"key": "a", "count": 1})
>>> trace.record("output", 0, "watermark", "watermark rises to 5000")
>>> print(trace.format())
continuous model: one block per step; #n numbers what happened in order, [i] is the subtask
step totals
  #1 [0] emit: key 'a' emitted: its value changed -> {key: a, count: 1}
step output
  #2 [0] watermark: watermark rises to 5000
"""

from __future__ import annotations

from collections import Counter

import attrs

from ministream.core.results import format_row
from ministream.time.units import format_ts


@attrs.frozen
class TraceLine:
    """One thing that happened: in which batch, at which step and subtask, what kind, and why."""

    batch_id: int
    step: str
    subtask: int
    kind: str
    text: str
    row: dict | None = None


@attrs.frozen
class BatchSummary:
    """The facts of one batch: its watermarks, and the state size of each step when it ended."""

    batch_id: int
    watermark: int | None
    late_watermark: int | None = None
    has_data: bool = True
    state_sizes: dict = attrs.field(factory=dict)


class Trace:
    """Collects trace lines and batch summaries during a run."""

    def __init__(self, model: str = "microbatch"):
        self.model = model  # "microbatch": read per batch; "continuous": read per step
        self.lines: list[TraceLine] = []
        self.batches: list[BatchSummary] = []
        self.batch_id = 0

    def begin_batch(
        self, batch_id: int, watermark: int | None, late_watermark: int | None = None, has_data: bool = True
    ) -> None:
        self.batch_id = batch_id
        self.batches.append(BatchSummary(batch_id, watermark, late_watermark, has_data))

    def end_batch(self, state_sizes: dict) -> None:
        last = self.batches[-1]
        self.batches[-1] = attrs.evolve(last, state_sizes=dict(state_sizes))

    def record(self, step: str, subtask: int, kind: str, text: str, row: dict | None = None) -> None:
        self.lines.append(TraceLine(self.batch_id, step, subtask, kind, text, row))

    def of_kind(self, kind: str) -> list[TraceLine]:
        """Every line of one kind, e.g. ``trace.of_kind("late")``."""
        return [line for line in self.lines if line.kind == kind]

    def format(self) -> str:
        """The trace as text: one block per batch, or per step in the continuous model."""
        if self.model == "continuous":
            return self.format_by_step()
        out = []
        summaries = {summary.batch_id: summary for summary in self.batches}
        ids = sorted(set(summaries) | {line.batch_id for line in self.lines})
        for batch_id in ids:
            summary = summaries.get(batch_id)
            header = f"batch {batch_id}"
            if summary is not None:
                if summary.watermark is not None:
                    header += (
                        f": watermark {format_ts(summary.watermark)}"
                        f" (late rows: at or before {format_ts(summary.late_watermark)})"
                    )
                if not summary.has_data:
                    header += " [no-data batch: run because the watermark advanced]"
            out.append(header)
            for line in self.lines:
                if line.batch_id == batch_id:
                    shown = f" -> {format_row(line.row)}" if line.row is not None else ""
                    out.append(f"  [{line.step}] {line.kind}: {line.text}{shown}")
            late = Counter(line.step for line in self.lines if line.batch_id == batch_id and line.kind == "late")
            if late:
                out.append("  late rows dropped: " + ", ".join(f"{step}={count}" for step, count in late.items()))
            if summary is not None and summary.state_sizes:
                sizes = ", ".join(f"{step}={size}" for step, size in summary.state_sizes.items())
                out.append(f"  state after the batch: {sizes}")
        return "\n".join(out)

    def format_by_step(self) -> str:
        """The trace as text, one block per step (in the order steps first appear), each line numbered in
        the order it happened; then the state sizes at the end, if the run recorded them."""
        out = ["continuous model: one block per step; #n numbers what happened in order, [i] is the subtask"]
        steps = list(dict.fromkeys(line.step for line in self.lines))  # first appearance order
        for step in steps:
            out.append(f"step {step}")
            for number, line in enumerate(self.lines, start=1):
                if line.step == step:
                    shown = f" -> {format_row(line.row)}" if line.row is not None else ""
                    out.append(f"  #{number} [{line.subtask}] {line.kind}: {line.text}{shown}")
        if self.batches and self.batches[-1].state_sizes:
            sizes = ", ".join(f"{step}={size}" for step, size in self.batches[-1].state_sizes.items())
            out.append(f"state at the end of input: {sizes}")
        return "\n".join(out)
