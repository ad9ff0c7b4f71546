"""The state after every batch: what each stateful step keeps, per key, as Spark's state store versions it.

Spark's state store keeps one *version* per batch: version ``N + 1`` is the state after batch ``N``
(``state/<operator>/<partition>/<N+1>.delta``), and its state data source reads any of them
(``spark.read.format("statestore").option("batchId", N)``). :class:`StateHistory` records the same thing for a
ministream run: given as ``run_microbatch(..., after_batch=history)`` (or ``Lesson.run(after_batch=...)``), it
takes, once every subtask has ended batch ``N``, each keyed step's tables merged over its subtasks and key
groups: ``history.batches[N][step][table][key] = value``. ``ministream state LESSON --batch N`` prints it.

>>> from ministream.core.aggregates import Count
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sinks import CollectingSink
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.models.microbatch import run_microbatch
>>> flow = Dataflow("counts")
>>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}], [{"key": "a"}]]))
>>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
>>> history = StateHistory()
>>> _ = run_microbatch(flow, output_mode="update", parallelism=2, after_batch=history, state_backend="rocksdb")
>>> history.batches[1]
{'totals': {'aggregate': {'a': [2], 'b': [1]}}}
>>> print(history.describe(0))
after batch 0
  totals: aggregate
    'a': [1]
    'b': [1]
"""

from __future__ import annotations

from ministream.core.operator import BatchInfo
from ministream.core.physical import PhysicalGraph


class StateHistory:
    """The keyed state of every stateful step after every batch: ``batches[batch_id][step][table][key]``, keys
    sorted by their ``repr`` (two engines, or two backends, then list them alike); in a dataflow of several
    queries, each query's steps after its own batch of that id (a step in two queries once, or, when their
    states differ, twice: the second named ``"step (in the query of 'sink')"``)."""

    def __init__(self):
        self.batches: dict[int, dict[str, dict[str, dict]]] = {}

    def __call__(self, batch: BatchInfo, graph: PhysicalGraph) -> None:
        steps: dict[str, dict[str, dict]] = {}
        for name, subtasks in graph.by_step.items():
            if subtasks[0].operator is None or subtasks[0].operator.ctx.state is None:
                continue
            tables: dict[str, dict] = {}
            for subtask in subtasks:
                for by_table in subtask.operator.snapshot().get("keyed", {}).values():
                    for table, entries in by_table.items():
                        tables.setdefault(table, {}).update(entries)
            steps[name] = {
                table: dict(sorted(entries.items(), key=lambda item: repr(item[0])))
                for table, entries in sorted(tables.items())
            }
        # a dataflow of several queries (core/queries.py) calls this after each query's batches: its steps join
        # those of the queries before it under the same batch id. A step that feeds two sinks runs in both their
        # queries, each with its own state: a state that differs from the one already kept is kept beside it,
        # named after its query's first sink
        kept = self.batches.setdefault(batch.batch_id, {})
        for name, tables in steps.items():
            if name in kept and kept[name] != tables:
                name = f"{name} (in the query of {graph.flow.sinks[0].name!r})"
            kept[name] = tables

    def describe(self, batch_id: int) -> str:
        """The state after one batch, one line per key."""
        lines = [f"after batch {batch_id}"]
        for step, tables in self.batches[batch_id].items():
            if not tables:
                lines.append(f"  {step}: no state")
            for table, entries in tables.items():
                lines.append(f"  {step}: {table}")
                lines += [f"    {key!r}: {value!r}" for key, value in entries.items()]
        return "\n".join(lines)
