"""A join that Spark's optimizer removed: the kept side's rows pass on, the other side's reach nothing.

``core/outer_join_elimination.py`` says when Spark runs an outer join this way: under a window of ``max`` and
``min`` over the preserved side's columns (rule ``EliminateOuterJoin``), where the join could not change the
result of a batch query. The micro-batch planner then runs the join step as this operator, so that the rows
are Spark's in a stream too: each row of the kept side goes on to the window in its own batch (there is no
join state to hold it back, and the window runs with the query's watermark), and the other side's rows are
dropped, counted under the rule's name. The other side's watermark never moves either: the planner keeps
its rows from its ``with_watermark`` step (``removed_watermarks``).

>>> from ministream.core.operator import StepContext
>>> join = RemovedOuterJoin(kept=0, removed_name="clicks")
>>> ctx = StepContext.for_testing(); join.open(ctx)
>>> join.process([("a", {"ad": "a", "impression_time": 5})], 0)
>>> join.process([("a", {"click_ad": "a", "click_time": 6})], 1)
>>> ctx.emitted, ctx.outcomes
([{'ad': 'a', 'impression_time': 5}], {'passed on': 1, 'dropped: join removed by Spark (EliminateOuterJoin)': 1})
"""

from __future__ import annotations

from ministream.core.operator import Operator

REASON = "join removed by Spark (EliminateOuterJoin)"


def reaches_nothing(row: dict) -> bool:
    """The condition the planner runs below a ``with_watermark`` step whose rows only lead to the removed side
    of such a join: no row passes it, so none moves the watermark (Spark runs none of them)."""
    return False


class RemovedOuterJoin(Operator):
    """The join step of a join Spark removes: passes on the rows of input ``kept`` (0: left, 1: right) and
    drops the other input's (``removed_name`` names that input in the trace). No state, no late rows."""

    keyed = True
    counts_rows = True

    def __init__(self, kept: int, removed_name: str):
        self.kept = kept
        self.removed_name = removed_name

    def process(self, pairs, input_index):
        rows = [row for _, row in pairs]
        if input_index == self.kept:
            self.ctx.count("passed on", len(rows))
            self.ctx.emit(rows)
            return
        self.ctx.drop(REASON, rows=len(rows))
        if self.ctx.tracing:
            for row in rows:
                self.ctx.explain(
                    "removed",
                    f"{self.removed_name} row reaches nothing: Spark's optimizer removed this outer join, "
                    "under a window of max and min over the other side's columns",
                    row,
                )
