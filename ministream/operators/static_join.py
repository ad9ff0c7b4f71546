"""Stream-static joins: each row of a stream joined, as it comes, with a fixed table.

``orders.join_static("with_customers", customers, on="customer_id")`` is Spark's ``orders.join(customers_df,
"customer_id")`` where ``customers_df`` is a batch (static) DataFrame. Nothing waits in state: the table is
known in full, so each stream row finds all its matches the moment it arrives, and a row that finds none
will never find one. That is why Spark allows only the joins whose unmatched rows come from the stream side:
an inner join, or a left outer join with the stream on the left (its unmatched rows are emitted at once,
padded with nulls). The table is read again for every batch in Spark (a batch aggregate there is recomputed,
never turned into streaming state), so a table updated between two batches is joined in its new version from
the next batch on; rows joined before are not joined again. ministream's table is a list of rows, with
``changes``: the table as it is from a given micro-batch on (the continuous model has no batches and keeps
the first table).

Output columns: the stream row's, then the table row's; a key column with the same name on both sides
appears once (Spark's ``join(df, "key")``).

Order: the stream's rows come out in the order they came, each with its matches; several table rows with the
same key match last one first, as Spark's broadcast table gives them back (its hash table keeps a key's rows
last first). The order matters to a step after the join that keeps the first row of a key, a deduplication.
The twin broadcasts the table (``F.broadcast``; a changing table is hashed after a shuffle), as one does with
an enrichment table: left to itself Spark would broadcast the stream's batch, whose size it knows, against a
table made from a list, whose size it does not, and emit the rows in the table's order
(``tutorials/spark-facts.md``, "Stream-static joins").

>>> from ministream.core.operator import StepContext
>>> join = StaticJoin([{"parity": 0, "n": 2}, {"parity": 1, "n": 3}], ("value",), ("parity",), "inner")
>>> ctx = StepContext.for_testing(); join.open(ctx)
>>> join.process([{"value": 1}, {"value": 4}], 0); ctx.emitted
[{'value': 1, 'parity': 1, 'n': 3}]
>>> from ministream.core.operator import BatchInfo
>>> changed = StaticJoin([{"parity": 1, "n": 3}], ("value",), ("parity",), "inner", ((1, ({"parity": 1, "n": 9},)),))
>>> ctx = StepContext.for_testing(); changed.open(ctx)
>>> for batch_id in (0, 1):
...     changed.on_batch_start(BatchInfo(batch_id)); changed.process([{"value": 1}], 0)
>>> ctx.emitted
[{'value': 1, 'parity': 1, 'n': 3}, {'value': 1, 'parity': 1, 'n': 9}]
"""

from __future__ import annotations

from ministream.core.operator import Operator
from ministream.errors import PipelineError


class StaticJoin(Operator):
    """Joins each row with the rows of ``table`` whose ``table_keys`` equal its ``stream_keys`` (``how`` is
    ``"inner"`` or ``"left_outer"``); ``changes``, ``(batch id, rows)`` pairs, replace the table from that
    micro-batch on. No state: ``self.index`` is the table in force, by key (``{key tuple: [table rows]}``),
    rebuilt when the table changes; a key with a null never matches (SQL's ``=``)."""

    counts_rows = True

    def __init__(
        self,
        table,
        stream_keys: tuple[str, ...],
        table_keys: tuple[str, ...],
        how: str,
        changes: tuple[tuple[int, tuple[dict, ...]], ...] = (),
    ):
        self.versions = [(0, [dict(row) for row in table])] + [(k, [dict(row) for row in rows]) for k, rows in changes]
        self.stream_keys = stream_keys
        self.table_keys = table_keys
        self.how = how
        # a left outer join pads with every column any version of the table has, so that all rows agree
        self.table_columns = list(dict.fromkeys(column for _, rows in self.versions for row in rows for column in row))
        # a key column named the same on both sides appears once (Spark's join(df, "key"))
        self.merged = {t for s, t in zip(stream_keys, table_keys) if s == t}
        self.in_force = -1
        self._use_table(0)

    def _use_table(self, batch_id: int) -> None:
        """Index the version of the table in force at ``batch_id`` (the last change at or before it)."""
        version = max(i for i, (start, _) in enumerate(self.versions) if start <= batch_id or i == 0)
        if version == self.in_force:
            return
        self.in_force = version
        self.table = self.versions[version][1]
        self.index: dict = {}  # {key: [table rows]}, each key's rows last first, as Spark's hash table gives them
        for row in reversed(self.table):
            key = tuple(row.get(column) for column in self.table_keys)
            if None not in key:
                self.index.setdefault(key, []).append(row)

    def on_batch_start(self, batch):
        self._use_table(batch.batch_id)

    def process(self, rows, input_index):
        out, unmatched = [], 0
        for row in rows:
            key = tuple(row.get(column) for column in self.stream_keys)
            matches = self.index.get(key, []) if None not in key else []
            for match in matches:
                out.append(self._joined(row, match))
            if not matches:
                if self.how == "left_outer":
                    out.append(self._joined(row, dict.fromkeys(self.table_columns)))
                else:
                    unmatched += 1
        if unmatched:
            self.ctx.drop("no match in the static table", rows=unmatched)
        self.ctx.count("joined with the static table", len(rows) - unmatched)
        self.ctx.emit(out)

    def _joined(self, row: dict, match: dict) -> dict:
        extra = {column: value for column, value in match.items() if column not in self.merged}
        clash = row.keys() & extra.keys()
        if clash:
            raise PipelineError(
                f"the stream and the static table both have columns {sorted(clash)}: rename them on one side "
                "first (stream.select(...)), or join on them"
            )
        return {**row, **extra}
