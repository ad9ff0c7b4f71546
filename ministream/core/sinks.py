"""Sinks: where a pipeline's rows end up, batch by batch.

A sink step runs a :class:`SinkOperator`, which buffers the rows of a micro-batch and hands them to its sink
when the batch ends. The sink of tests, lessons and notebooks is the :class:`CollectingSink`: it keeps each
batch as a :class:`~ministream.core.results.BatchResult` (id, watermark, rows), the shape in which both
engines' outputs are compared. The sinks that survive a crash, and make output exactly once, are in
``checkpoints/exactly_once.py``.

>>> sink = CollectingSink()
>>> sink.write(0, None, [{"n": 1}]); sink.write(1, 5_000, [])
>>> sink.batches
[BatchResult(batch_id=0, watermark=None, rows=[{'n': 1}]), BatchResult(batch_id=1, watermark=5000, rows=[])]
"""

from __future__ import annotations

from ministream.core.operator import Operator
from ministream.core.results import BatchResult


class CollectingSink:
    """A sink that keeps every batch it receives as a ``BatchResult``, for tests and comparisons.

    >>> sink = CollectingSink()
    >>> sink.write(0, None, [{"key": "a"}])
    >>> sink.write(1, 5_000, [])
    >>> sink.batches
    [BatchResult(batch_id=0, watermark=None, rows=[{'key': 'a'}]), BatchResult(batch_id=1, watermark=5000, rows=[])]
    >>> sink.rows
    [{'key': 'a'}]

    In the continuous model, which has no batches, everything lands in one result with ``batch_id`` 0, in
    the order the sink received it.
    """

    def __init__(self):
        self.batches: list[BatchResult] = []

    def reset(self) -> None:
        """Forget earlier runs (the runner calls this when a run starts)."""
        self.batches = []

    def write(self, batch_id: int, watermark: int | None, rows: list[dict], processing_time: int | None = None) -> None:
        """Keep one batch of output (with the batch's processing time, when the run has one)."""
        self.batches.append(BatchResult(batch_id, watermark, list(rows), processing_time))

    @property
    def rows(self) -> list[dict]:
        """Every row received, all batches together, in order."""
        return [row for batch in self.batches for row in batch.rows]

    def __repr__(self):
        return f"CollectingSink({len(self.batches)} batches, {len(self.rows)} rows)"


class SinkOperator(Operator):
    """The operator of a sink step: buffers a batch's rows, hands them to the sink when the batch ends."""

    counts_rows = True  # each row is "written to the sink" when its batch ends

    def __init__(self, sink):
        self.sink = sink
        self.buffer: list[dict] = []

    def process(self, rows, input_index):
        self.buffer.extend(rows)

    def on_batch_end(self, batch):
        if batch.processing_time is None:
            self.sink.write(batch.batch_id, batch.watermark, self.buffer)
        else:
            self.sink.write(batch.batch_id, batch.watermark, self.buffer, batch.processing_time)
        self.ctx.count("written to the sink", len(self.buffer))
        self.buffer = []
