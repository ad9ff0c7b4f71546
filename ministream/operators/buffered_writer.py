"""A buffered writer: a sink step that writes rows in groups of ``size``, its buffer kept in operator state.

Writing one row at a time to a file or a database is slow; a writer gathers rows and writes ``size`` of them
at once. The rows waiting in its buffer belong to no key: they are *operator state* (``state/operator_state.py``),
a list the subtask keeps for itself. A checkpoint must save that list, or a crash loses the rows that were
buffered but not yet written (their source offsets are already behind the checkpoint, so nothing reads them
again). Restored at another parallelism, the buffers of the old subtasks are split evenly among the new ones,
each row to one subtask (``"even"``); given to every new subtask (``"union"``), each buffered row would be
written once per subtask.

Each write comes out as one row: the ids of the rows written together (``rows``: how many).

>>> from ministream.core.operator import StepContext
>>> writer = BufferedWriter(2, id_column="trip")
>>> ctx = StepContext.for_testing(); writer.open(ctx)
>>> writer.process([("t1", {"trip": "t1"}), ("t2", {"trip": "t2"}), ("t3", {"trip": "t3"})], 0)
>>> ctx.emitted, writer.buffer
([{'trips': 't1 t2', 'rows': 2}], [{'trip': 't3'}])
>>> writer.snapshot()["operator"]
{'buffer': {'mode': 'even', 'items': [{'trip': 't3'}]}}
"""

from __future__ import annotations

from ministream.core.operator import Operator
from ministream.errors import PipelineError
from ministream.state.operator_state import OperatorState

KEEP_IN = ("operator_state", "plain")


class BufferedWriter(Operator):
    """Buffers the rows it receives and emits a write of ``size`` rows each time the buffer holds that many.

    ``keep_in="operator_state"`` keeps the buffer in operator state (saved by every checkpoint, redistributed
    ``redistribution`` on a rescale); ``"plain"`` in a plain attribute that no checkpoint sees (what a sink
    written without operator state does: a crash loses its buffer). State: ``self.buffer``, the rows not yet
    written, oldest first."""

    keyed = True  # it runs after key_by: rows come as (key, row) pairs, spread over the subtasks
    counts_rows = True

    def __init__(self, size: int, *, id_column: str, keep_in: str = "operator_state", redistribution: str = "even"):
        if size < 1:
            raise PipelineError(f"a buffered writer writes groups of at least 1 row, not {size}")
        if keep_in not in KEEP_IN:
            raise PipelineError(f"the buffer is kept in 'operator_state' or 'plain', not {keep_in!r}")
        self.size = size
        self.id_column = id_column
        self.keep_in = keep_in
        self.redistribution = redistribution
        self.operator_state = OperatorState()
        self.buffer: list[dict] = self._new_buffer()

    def _new_buffer(self) -> list[dict]:
        if self.keep_in == "operator_state":
            return self.operator_state.list("buffer", self.redistribution)
        return []

    def process(self, pairs, input_index):
        written = []
        for _key, row in pairs:
            self.buffer.append(row)
            if len(self.buffer) >= self.size:
                chunk = self.buffer[: self.size]
                del self.buffer[: self.size]
                written.append({"trips": " ".join(str(r[self.id_column]) for r in chunk), "rows": len(chunk)})
        self.ctx.count(f"buffered, then written in groups of {self.size}", len(pairs))
        self.ctx.emit(written)

    def state_size(self) -> int:
        return len(self.buffer)

    def snapshot(self) -> dict:
        saved = super().snapshot()
        if self.keep_in == "operator_state":
            saved["operator"] = self.operator_state.snapshot()
        return saved

    def restore(self, snapshot: dict, key_groups=None) -> None:
        super().restore(snapshot, key_groups)
        self.operator_state = OperatorState()
        self.operator_state.restore(snapshot.get("operator", {}))
        self.buffer = self._new_buffer()
