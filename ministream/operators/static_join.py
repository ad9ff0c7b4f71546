"""Stream-static joins: each row of a stream joined, as it comes, with a fixed table.

``orders.join_static("with_customers", customers, on="customer_id")`` is Spark's ``orders.join(customers_df,
"customer_id")`` where ``customers_df`` is a batch (static) DataFrame. Nothing waits in state: the table is
known in full, so each stream row finds all its matches the moment it arrives, and a row that finds none
will never find one. That is why Spark allows only the joins whose unmatched rows come from the stream side:
an inner join, or a left outer join with the stream on the left (its unmatched rows are emitted at once,
padded with nulls). The table is read again for every batch in Spark (a batch aggregate there is recomputed,
never turned into streaming state); ministream's table is a list of rows that does not change.

Output columns: the stream row's, then the table row's; a key column with the same name on both sides
appears once (Spark's ``join(df, "key")``).

>>> from ministream.core.operator import StepContext
>>> join = StaticJoin([{"parity": 0, "n": 2}, {"parity": 1, "n": 3}], ("value",), ("parity",), "inner")
>>> ctx = StepContext.for_testing(); join.open(ctx)
>>> join.process([{"value": 1}, {"value": 4}], 0); ctx.emitted
[{'value': 1, 'parity': 1, 'n': 3}]
"""

from __future__ import annotations

from ministream.core.operator import Operator
from ministream.errors import PipelineError


class StaticJoin(Operator):
    """Joins each row with the rows of ``table`` whose ``table_keys`` equal its ``stream_keys`` (``how`` is
    ``"inner"`` or ``"left_outer"``). State: ``self.index``, the table by key, built once; a key with a
    null never matches (SQL's ``=``)."""

    counts_rows = True

    def __init__(self, table, stream_keys: tuple[str, ...], table_keys: tuple[str, ...], how: str):
        self.table = [dict(row) for row in table]
        self.stream_keys = stream_keys
        self.table_keys = table_keys
        self.how = how
        self.index: dict = {}
        for row in self.table:
            key = tuple(row.get(column) for column in table_keys)
            if None not in key:
                self.index.setdefault(key, []).append(row)
        self.table_columns = list(dict.fromkeys(column for row in self.table for column in row))
        # a key column named the same on both sides appears once (Spark's join(df, "key"))
        self.merged = {t for s, t in zip(stream_keys, table_keys) if s == t}

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
