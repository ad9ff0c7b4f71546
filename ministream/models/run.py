"""A run: what a pipeline produced when it ran, in either model.

``run_microbatch`` and ``run_continuous`` both return a :class:`Run`: each sink's batches, the watermark of
every batch, the trace when one was kept, the physical graph (to look at the state the operators hold after
the run), the rows that the watermark kept out (:meth:`Run.late_rows`) and the account of every row
(:meth:`Run.accounting`). A micro-batch run of a dataflow with several queries (``core/queries.py``) gathers
each query's run: every sink's batches, and the rest of the query of the first sink, each query's in
:attr:`Run.queries`.
"""

from __future__ import annotations

import attrs

from ministream.core.accounting import RowCounts, account
from ministream.core.physical import PhysicalGraph
from ministream.core.results import BatchResult
from ministream.core.trace import Trace


@attrs.define
class Run:
    """What a run produced: each sink's batches, the watermark of every batch, the trace if one was kept,
    the physical graph (to look at state after the run), the rows each step received and emitted, and, in
    the micro-batch model, every batch the run ran (``BatchInfo``: its watermarks, whether it had data or was
    a no-data batch, and the script positions it read)."""

    outputs: dict[str, list[BatchResult]]
    watermarks: list[int | None]
    trace: Trace | None
    graph: PhysicalGraph
    row_counts: RowCounts | None = None
    batches: list = attrs.field(factory=list)
    queries: list[Run] = attrs.field(factory=list)
    """The run of each query, when the dataflow ran as several (one per sink, ``core/queries.py``); empty
    when it ran as one."""

    @classmethod
    def of_queries(cls, runs: list[Run]) -> Run:
        """The runs of a dataflow's queries as one: every sink's batches; the watermarks, the trace, the graph,
        the counts and the batches of the first query (the first sink's); each query's run in ``queries``."""
        first = runs[0]
        outputs = {sink: batches for run in runs for sink, batches in run.outputs.items()}
        return cls(outputs, first.watermarks, first.trace, first.graph, first.row_counts, first.batches, runs)

    def query(self, sink: str) -> Run:
        """The run of the query that feeds ``sink`` (the run itself when the dataflow ran as one query)."""
        for run in self.queries:
            if sink in run.outputs:
                return run
        return self

    def no_data_batches(self) -> list[int]:
        """The ids of the no-data batches the run ran (micro-batch model; ``core/triggers.py`` says when).

        >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, run_microbatch
        >>> from ministream.time.windows import Tumbling
        >>> flow = Dataflow("f")
        >>> flow.source("events", ScriptedSource([[{"key": "a", "ts": 1_000}, {"key": "a", "ts": 22_000}], None, []])
        ...     ).with_watermark("wm", "ts", "1 second").key_by("key").window(
        ...     "counts", Tumbling("5 seconds"), count=Count()).sink("output", CollectingSink())
        >>> run = run_microbatch(flow, output_mode="append")
        >>> run.no_data_batches(), [batch.rows for batch in run.output()]
        ([1], [[], [{'key': 'a', 'window_start': 0, 'window_end': 5000, 'count': 1}], []])
        """
        return [batch.batch_id for batch in self.batches if not batch.has_data]

    def output(self, sink: str = "output") -> list[BatchResult]:
        """The batches one sink received."""
        return self.outputs[sink]

    def late_rows(self, step: str | None = None) -> list:
        """The rows the watermark kept out, batch by batch: every entry an operator keeps in its ``late_rows``
        list (``lateness.LateRow``: batch, step, row, window, watermark and the rule), for one step
        or all. A run of several queries gathers every query's, each named by the query's first sink
        (``LateRow.query``): a step in two queries may drop a row in one of them only, or in both."""
        found = [
            late if len(self.queries) < 2 else attrs.evolve(late, query=next(iter(run.outputs)))
            for run in self.queries or [self]
            for name, subtasks in run.graph.by_step.items()
            if step in (None, name)
            for subtask in subtasks
            for late in getattr(subtask.operator, "late_rows", ())
        ]
        return sorted(found, key=lambda late: -1 if late.batch_id is None else late.batch_id)

    def accounting(self, events_file=None, dead_letters=None):
        """Where every row went, step by step, with a check that nothing is unexplained (``core/accounting.py``);
        give the events file and its dead letters to account for the file's lines too. A run of several queries
        accounts for the first sink's query: ``run.query(sink).accounting()`` for another's."""
        if self.row_counts is None:
            raise ValueError("this run did not count its rows (only run_microbatch and run_continuous do)")
        return account(self, events_file, dead_letters)
