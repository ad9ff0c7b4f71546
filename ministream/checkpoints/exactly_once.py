"""Exactly-once output: a sink whose rows become visible only when their checkpoint completes.

After a crash, a run goes back to its last complete checkpoint and processes again everything that came
after it. Whatever the sink had already made visible from that part is then written a second time. Two
sinks show the difference:

- :class:`AtLeastOnceSink`: a row is visible the moment it is written. Nothing is lost, but the rows written
  between the last complete checkpoint and the crash appear **twice** (Spark's ``foreachBatch`` without a
  check of the batch id; Flink's at-least-once sinks);
- :class:`ExactlyOnceSink`: a *transactional* sink, with the two phases of Flink's ``TwoPhaseCommitSinkFunction``.
  Rows go into the open transaction; when the checkpoint's barrier reaches the sink the transaction is
  **pre-committed** (closed, kept, not visible); when the checkpoint completes it is **committed** (visible).
  After a crash, the transactions of checkpoints that never completed are **aborted**: their rows are
  written again by the replay, once.

Both put the visible rows in an ``inner`` sink (a ``CollectingSink`` by default). Either can be told to crash
in the middle of writing a micro-batch (:class:`SinkCrash`), as Spark's ``foreachBatch`` does in the tutorial.

>>> sink = ExactlyOnceSink()
>>> sink.write(0, None, [{"n": 1}]); sink.pre_commit(0); sink.inner.rows   # written, pre-committed, not visible
[]
>>> sink.commit(0); sink.inner.rows
[{'n': 1}]
>>> sink.write(1, None, [{"n": 2}]); sink.recover(0); sink.inner.rows      # a crash: transaction 1 is aborted
[{'n': 1}]
"""

from __future__ import annotations

import attrs

from ministream.core.faults import SimulatedCrash
from ministream.core.results import normalize_row
from ministream.core.sinks import CollectingSink


def row_order(row: dict) -> str:
    """A fixed order of rows (their normalized form as text): a crashing sink writes a batch in this order, so
    that ministream and Spark, whose row orders differ, write the same rows before they crash.

    >>> sorted([{"key": "b", "n": 1.0}, {"key": "a", "n": 2}], key=row_order)
    [{'key': 'a', 'n': 2}, {'key': 'b', 'n': 1.0}]
    """

    return repr(normalize_row(row))


@attrs.frozen
class SinkCrash:
    """Crash the sink while it writes micro-batch ``batch_id``, after ``after_rows`` of the batch's rows in
    :func:`row_order` (the first time only).

    >>> SinkCrash(batch_id=2, after_rows=1)
    SinkCrash(batch_id=2, after_rows=1, sink=None)
    """

    batch_id: int
    after_rows: int = 0
    sink: str | None = None
    """The sink step that crashes (``None``: the dataflow's first sink)."""


class AtLeastOnceSink:
    """A sink whose rows are visible as soon as they are written: after a crash, replayed rows show up twice.

    >>> sink = AtLeastOnceSink(crash=SinkCrash(batch_id=0, after_rows=1))
    >>> sink.write(0, None, [{"n": 1}, {"n": 2}])
    Traceback (most recent call last):
    ...
    ministream.core.faults.SimulatedCrash: the sink crashed while writing batch 0, after 1 of its 2 rows
    >>> sink.recover(None); sink.write(0, None, [{"n": 1}, {"n": 2}]); sink.inner.rows   # the batch again
    [{'n': 1}, {'n': 1}, {'n': 2}]

    Args:
        inner: where visible rows go (a new ``CollectingSink`` by default).
        crash: a :class:`SinkCrash`, to fail in the middle of a batch.
    """

    delivery = "at least once"

    def __init__(self, inner=None, crash: SinkCrash | None = None):

        self.inner = inner if inner is not None else CollectingSink()
        self.crash = crash
        self.crashed = False

    def write(self, batch_id: int, watermark: int | None, rows: list[dict], processing_time: int | None = None):
        """Take the rows of a batch (the continuous model writes every row as it arrives, as batch 0)."""
        rows = list(rows)
        if self.crash is not None and not self.crashed and batch_id == self.crash.batch_id:
            self.crashed = True
            written = sorted(rows, key=row_order)[: self.crash.after_rows]
            self._accept(batch_id, watermark, written, processing_time)
            raise SimulatedCrash(
                f"the sink crashed while writing batch {batch_id}, after "
                f"{min(self.crash.after_rows, len(rows))} of its {len(rows)} rows"
            )
        self._accept(batch_id, watermark, rows, processing_time)

    def _accept(self, batch_id, watermark, rows, processing_time) -> None:
        _write(self.inner, (batch_id, watermark, rows, processing_time))

    def pre_commit(self, checkpoint_id: int) -> None:
        """The checkpoint's barrier reached the sink: nothing to do, the rows are out already."""

    def commit(self, checkpoint_id: int) -> None:
        """The checkpoint completed: nothing to do."""

    def recover(self, checkpoint_id: int | None) -> None:
        """The run restarts from checkpoint ``checkpoint_id``: rows already visible stay visible."""

    def reset(self) -> None:
        """A new run: forget everything."""
        self.inner.reset()

    @property
    def batches(self):
        """The visible output, as the inner sink holds it."""
        return self.inner.batches


class ExactlyOnceSink(AtLeastOnceSink):
    """A transactional sink: rows become visible only when the checkpoint they belong to completes.

    State: ``self.open``, the open transaction's writes ``[(batch_id, watermark, rows, processing_time)]``;
    ``self.prepared``, the pre-committed transactions ``{checkpoint_id: [writes]}``, waiting for their
    checkpoint to complete; ``self.committed``, the ids of the transactions made visible.

    A transaction is committed once: if recovery has to go back further than a committed transaction (the
    newest checkpoint was corrupt), the replay pre-commits it again under the same id in the micro-batch
    model (the batch id) and the sink skips it, as Spark's file sink skips a batch id its log already has.
    In the continuous model the replay gets new checkpoint ids, so going back past a committed transaction
    writes its rows again: exactly once holds from the newest checkpoint that recovery can read.

    >>> sink = ExactlyOnceSink()
    >>> sink.write(1, None, [{"n": 1}]); sink.pre_commit(1); sink.commit(1)
    >>> sink.write(1, None, [{"n": 1}]); sink.pre_commit(1); sink.commit(1)   # batch 1 run again: skipped
    >>> sink.inner.rows
    [{'n': 1}]
    """

    delivery = "exactly once"

    def __init__(self, inner=None, crash: SinkCrash | None = None):
        super().__init__(inner, crash)
        self.open: list[tuple] = []
        self.prepared: dict[int, list[tuple]] = {}  # {checkpoint_id: [(batch_id, watermark, rows, time)]}
        self.committed: set[int] = set()  # {checkpoint_id}

    def _accept(self, batch_id, watermark, rows, processing_time) -> None:
        self.open.append((batch_id, watermark, rows, processing_time))

    def pre_commit(self, checkpoint_id: int) -> None:
        """Phase one: close the open transaction and keep it under the checkpoint's id (still invisible)."""
        self.prepared[checkpoint_id] = self.open
        self.open = []

    def commit(self, checkpoint_id: int) -> None:
        """Phase two: the checkpoint completed: make its transaction (and any older one) visible."""
        for done in sorted(n for n in self.prepared if n <= checkpoint_id):
            writes = self.prepared.pop(done)
            if done not in self.committed:
                self.committed.add(done)
                for write in writes:
                    _write(self.inner, write)

    def recover(self, checkpoint_id: int | None) -> None:
        """After a crash: commit what the restored checkpoint covers, abort everything newer."""
        if checkpoint_id is not None:
            self.commit(checkpoint_id)
        self.prepared = {}
        self.open = []

    def reset(self) -> None:
        super().reset()
        self.open, self.prepared, self.committed = [], {}, set()


def _write(sink, write: tuple) -> None:
    batch_id, watermark, rows, processing_time = write
    if processing_time is None:
        sink.write(batch_id, watermark, rows)
    else:
        sink.write(batch_id, watermark, rows, processing_time)


DELIVERIES = {"exactly_once": ExactlyOnceSink, "at_least_once": AtLeastOnceSink}
"""The sink wrappers a recovering run can put in front of a dataflow's sinks, by name."""
