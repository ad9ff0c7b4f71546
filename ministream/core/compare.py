"""Compare: two engines' outputs set side by side, batch by batch, row by row.

Rows inside a batch have no order (Spark does not promise one), so each batch is compared as a *multiset*:
a row that appears twice in one engine must appear twice in the other. The batches themselves must line up
too: the same batch ids, Spark's no-data batches included, and the same watermark in each batch.

>>> from ministream.core.results import BatchResult
>>> ours = [BatchResult(0, None, [{"key": "a", "count": 1}]), BatchResult(1, None, [{"key": "a", "count": 2}])]
>>> theirs = [BatchResult(0, None, [{"key": "a", "count": 1}]), BatchResult(1, None, [{"key": "a", "count": 3}])]
>>> result = compare_batches(ours, theirs)
>>> result.matches, result.summary()
(False, '1 of 2 batches match; 1 of 3 rows match')
>>> print(result.batches[1].describe_differences())
batch 1: only in ministream: {key: a, count: 2}
batch 1: only in Spark:      {key: a, count: 3}
"""

from __future__ import annotations

from collections import Counter

import attrs

from ministream.core.results import BatchResult, format_row, normalize_row, normalize_value
from ministream.time.units import format_ts


def _ordered(rows: Counter, shown: dict) -> list[tuple]:
    """The rows of a multiset, repeated by count, in a stable order, each with its columns in the order
    the engine wrote them (``shown`` maps the sorted form used for counting to that order)."""
    out = []
    for row, count in sorted(rows.items(), key=lambda item: repr(item[0])):
        out.extend([shown[row]] * count)
    return out


@attrs.frozen
class BatchComparison:
    """One batch in both engines: the rows both emitted, the rows only one of them emitted, and the
    watermarks. ``None`` for a whole side means that engine had no batch with this id."""

    batch_id: int
    in_both: list[tuple]
    only_ministream: list[tuple]
    only_spark: list[tuple]
    watermark_ministream: int | None
    watermark_spark: int | None
    in_ministream: bool = True
    in_spark: bool = True

    @property
    def matches(self) -> bool:
        return (
            self.in_ministream
            and self.in_spark
            and not self.only_ministream
            and not self.only_spark
            and self.watermark_ministream == self.watermark_spark
        )

    def describe_differences(self) -> str:
        """What differs in this batch, in words, one line per row."""
        lines = []
        if not self.in_spark:
            lines.append(f"batch {self.batch_id}: Spark ran no batch {self.batch_id}")
        if not self.in_ministream:
            lines.append(f"batch {self.batch_id}: ministream ran no batch {self.batch_id}")
        if self.in_spark and self.in_ministream and self.watermark_ministream != self.watermark_spark:
            lines.append(
                f"batch {self.batch_id}: watermark {format_ts(self.watermark_ministream)} in "
                f"ministream, {format_ts(self.watermark_spark)} in Spark"
            )
        lines += [f"batch {self.batch_id}: only in ministream: {format_row(r)}" for r in self.only_ministream]
        lines += [f"batch {self.batch_id}: only in Spark:      {format_row(r)}" for r in self.only_spark]
        return "\n".join(lines)


@attrs.frozen
class Comparison:
    """Every batch of a comparison, and the verdict."""

    batches: list[BatchComparison]

    @property
    def matches(self) -> bool:
        return all(batch.matches for batch in self.batches)

    @property
    def batches_matched(self) -> int:
        return sum(batch.matches for batch in self.batches)

    @property
    def rows_matched(self) -> int:
        return sum(len(batch.in_both) for batch in self.batches)

    @property
    def rows_total(self) -> int:
        return sum(len(b.in_both) + len(b.only_ministream) + len(b.only_spark) for b in self.batches)

    def summary(self) -> str:
        """One line: how many batches and rows matched."""
        return (
            f"{self.batches_matched} of {len(self.batches)} batches match; "
            f"{self.rows_matched} of {self.rows_total} rows match"
        )

    def table(self) -> str:
        """The per-batch table: watermark, rows in each engine, rows in both, rows in only one."""
        header = ("batch", "watermark", "ministream", "spark", "in both", "only ministream", "only spark", "")
        lines = [header]
        for b in self.batches:
            lines.append(
                (
                    str(b.batch_id),
                    format_ts(b.watermark_ministream if b.in_ministream else b.watermark_spark),
                    str(len(b.in_both) + len(b.only_ministream)) if b.in_ministream else "-",
                    str(len(b.in_both) + len(b.only_spark)) if b.in_spark else "-",
                    str(len(b.in_both)),
                    str(len(b.only_ministream)),
                    str(len(b.only_spark)),
                    "ok" if b.matches else "DIFFERS",
                )
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
        differences = [b.describe_differences() for b in self.batches if not b.matches]
        return "\n".join(text + differences)


def compare_batches(ministream: list[BatchResult], spark: list[BatchResult]) -> Comparison:
    """Compare two engines' batches: rows as multisets per batch, batch ids and watermarks exactly."""
    ours = {batch.batch_id: batch for batch in ministream}
    theirs = {batch.batch_id: batch for batch in spark}
    compared = []
    for batch_id in sorted(set(ours) | set(theirs)):
        mine, other = ours.get(batch_id), theirs.get(batch_id)
        left = Counter(normalize_row(row) for row in (mine.rows if mine else []))
        right = Counter(normalize_row(row) for row in (other.rows if other else []))
        shown = {
            normalize_row(row): tuple((name, normalize_value(value)) for name, value in row.items())
            for row in (other.rows if other else []) + (mine.rows if mine else [])
        }
        compared.append(
            BatchComparison(
                batch_id,
                in_both=_ordered(left & right, shown),
                only_ministream=_ordered(left - right, shown),
                only_spark=_ordered(right - left, shown),
                watermark_ministream=mine.watermark if mine else None,
                watermark_spark=other.watermark if other else None,
                in_ministream=mine is not None,
                in_spark=other is not None,
            )
        )
    return Comparison(compared)
