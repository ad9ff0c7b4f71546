"""Stream-stream joins in the micro-batch model, exactly as Spark runs them.

Two streams are joined on a key: an ad impression with the clicks on the same ad, an order with its payment.
Either side's row may arrive first, so **each side keeps its rows in state** until no future row of the other
side can match them. Without a bound that moment never comes and the state grows forever; with watermarks and
a **time range** (``click_time`` between ``impression_time`` and ``impression_time + 1 minute``) the engine
can compute, batch by batch, which stored rows can no longer match: each side's *state watermark*.

What happens in micro-batch k (Spark's ``StreamingSymmetricHashJoinExec``):

1. **late rows are dropped**: a row whose watermarked event time is ``<= WM_{k-1}`` (the previous batch's
   watermark) is not joined and not stored; the trace counts it. Only a side with an event time of its own
   (a ``with_watermark`` upstream of it, or a window column made from one) filters late rows: the other
   side's rows are never late, even though the global watermark moves. Nor are a side's rows late when
   nothing at or after the join reads its event-time column: Spark's optimizer prunes the column below the
   join, and the join no longer sees a watermarked column on that side (``core/pruning.py``);
2. **the left rows** join the right state, then are stored (a left-semi row that matched is emitted once and
   not stored);
3. **the right rows** join the left state, which already holds this batch's left rows, then are stored; in a
   left semi join, a right row at or below the right state watermark of WM_k (so it leaves at step 4) meets
   only the left rows stored in earlier batches, not this batch's (Spark 4.3 does so: ``tutorials/spark-facts.md``;
   an inner or outer join's right rows meet them all);
4. **state is evicted** with WM_k: a row leaves when its event time ``<=`` its side's state watermark. An
   outer join emits an evicted row padded with nulls if it never matched: never earlier, because until then
   a match could still come.

The state watermarks come from the range ``left + lower <= right <= left + upper`` and WM_k
(``time/ranges.py`` says why; an inclusive bound costs one more millisecond):

- left rows leave when ``left_time <= WM_k - upper`` (``- 1 ms`` if the upper bound is inclusive);
- right rows leave when ``right_time <= WM_k + lower`` (``- 1 ms`` if the lower bound is inclusive).

With an event-time column in the join key (a window), both sides leave when that column ``<= WM_k``.

**The rest of the condition**, as Spark's optimizer places it (each pinned by Spark's own join tests,
``tests/conformance/suite_streaming_join.py``):

- keys are equal (``=``) or null-safe equal (``null_safe``, Spark's ``<=>``: null matches null), each key
  column one or the other; a join without equal keys is refused, as Spark refuses it. With ``=``, a row whose
  key is null is dropped before the join on each side Spark infers ``key IS NOT NULL`` for (a side the join
  does not keep: ``pushdown.drops_null_keys``); a row that reaches the join with a null key is stored, and
  Spark looks a key up in its state, where a null key equals a null key: in a full outer join, whose two
  sides keep their rows, a null key meets a null key even with ``=``;
- a one-sided condition (``left_where`` / ``right_where``) is applied *before* the join on an inner side, so
  a failing row is neither stored nor late-counted, and a condition whose columns are known
  (``RowCondition(fn, columns)``) on the watermarked rows is even applied below the watermark (the failing
  row does not move it); on the side an outer join preserves, it stays in the join: a failing row matches
  nothing and gets its null-padded row at once, in its own batch;
- a condition on the pair (``where``) is tested with the time range for each candidate pair;
- ``using=True`` (Spark's ``join(other, ["key"])``): the key columns appear once in the output, and an outer
  join's padded row takes them from the side it kept.

>>> within = TimeRange("imp_time", "click_time", lower=0, upper=60_000)   # a click within a minute
>>> within.left_state_watermark(100_000), within.right_state_watermark(100_000)
(39999, 99999)
>>> within.holds({"imp_time": 0}, {"click_time": 60_000}), within.holds({"imp_time": 0}, {"click_time": 60_001})
(True, False)

The operator is :class:`StreamJoin`; ``KeyedStream.join`` adds the step (``core/plan.py``, which refuses
what Spark refuses), the planner picks this operator for it in the micro-batch model, and
``operators/interval_join.py`` has the continuous (Flink) model's joins. ``TimeRange`` lives in ``time/ranges.py``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from functools import partial
from heapq import heapify, heappop, heappush
from itertools import compress, count

import attrs

from ministream.core.operator import Operator, watermark_moved
from ministream.core.physical import KeyedRows
from ministream.core.steps import RowCondition
from ministream.errors import PipelineError
from ministream.state.keygroups import key_group_of
from ministream.time.lateness import LateRow
from ministream.time.ranges import TimeRange
from ministream.time.units import format_ts

_EMPTY: dict = {}  # a key group with no rows (never written to)
_NO_MATCHES: list = []  # the matches of a row that has none (never written to)


@attrs.frozen
class JoinSide:
    """What the join knows of one input: a name for traces, its event-time column (the column its watermark
    tracks, or the end of a window column; ``None`` without a watermark: its rows are never late), its
    columns when the plan knows them (``select``, a source's columns), for null padding, and whether it
    drops late rows (rule 1): not when nothing at or after the join reads the event-time column, which
    Spark's optimizer then prunes below the join (``core/pruning.py``).

    >>> JoinSide("clicks", watermark_column="click_time", columns=("click_ad", "click_time")).columns
    ('click_ad', 'click_time')
    """

    name: str
    watermark_column: str | None = None
    columns: tuple[str, ...] | None = None
    drops_late: bool = True


class StreamJoin(Operator):
    """A stream-stream join of two keyed inputs (input 0 is the left side, input 1 the right).

    State, one table per side, laid out by key group so that checkpoints can split it:
    ``{key_group: {key: [rows, matched]}}``: per key, its rows and, at the same positions, a flag per row
    saying whether it has joined yet (an outer join pads only the rows that never did). Two parallel lists per
    key rather than a ``[row, matched]`` list per row, because Python's garbage collector walks every
    container object that lives long enough at each of its full collections: rows of plain values are not
    containers it tracks, a list per row is, and the state holds at least a batch of rows (they leave only
    when the watermark, which moves between batches, lets them), so a list per row made the cost of each row
    grow with the batch size. With a time range, each key's rows are kept **sorted by
    their time** (the range's column of that side), so that a new row finds the other side's rows in its
    range by binary search, O(log n + matches), instead of testing every row of its key. Beside the tables,
    ``self.by_time``, per side, is the index eviction reads: a heap of ``(time, n, key)`` (``time`` in the
    column the side is evicted by, ``n`` a counter, so that keys are never compared), smallest time on top,
    with an entry for each key at or before its earliest row: one pushed when a row becomes its key's
    earliest, O(log k) for k entries. Eviction pops the entries at or below the side's state watermark and
    cleans just those keys, never looking at the others: a key's rows sorted by the evicting time leave as a
    prefix, and the key goes back on the heap with its earliest row left. An entry whose key has no rows
    there is skipped. (When a key's rows are not sorted by the column evicting them, a time in the key, every
    row gets an entry.)

    During a batch the new rows wait in ``self.arrived``, because Spark joins all left rows before any right
    row: per side, ``(keys, rows)``, two parallel lists (the n-th key is the n-th row's), not a ``(key, row)``
    tuple per row, for the same reason as above. ``self.changed``, ``{key: None}`` per side: the keys stored,
    matched or evicted since the last checkpoint.

    A key whose rows all leave leaves the table, and its lists (rows, flags and times), emptied, wait in
    ``self.spare`` and ``self.spare_times`` (per side, ``[[rows, matched], ...]`` and ``[times, ...]`` at the
    same positions) for a new key to take instead of making its own: with small batches most keys leave at
    each eviction and come back in the next batch, and lists made afresh each time would live just long
    enough to reach the collector's oldest generation, whose full collections walk every object there. There
    are never more spare lists than keys in state: the oldest go first.

    >>> from ministream.core.operator import StepContext, BatchInfo
    >>> join = StreamJoin("inner", TimeRange("t", "u", lower=0, upper=10),
    ...                   JoinSide("orders", "t"), JoinSide("payments", "u"))
    >>> ctx = StepContext.for_testing(); join.open(ctx)
    >>> join.on_batch_start(BatchInfo(0, watermark=0, late_watermark=0))
    >>> join.process([("o1", {"id": "o1", "t": 100})], 0)
    >>> join.process([("o1", {"pid": "o1", "u": 105}), ("o1", {"pid": "o1", "u": 111})], 1)
    >>> join.on_batch_end(BatchInfo(0, watermark=0, late_watermark=0)); ctx.emitted
    [{'id': 'o1', 't': 100, 'pid': 'o1', 'u': 105}]
    >>> join.state_sizes()
    {'orders': 1, 'payments': 2}
    """

    keyed = True
    counts_rows = True  # each row that is not late is "stored in state", or "matched once, not stored" (semi)

    def __init__(
        self,
        how: str,
        time_range: TimeRange | None,
        left: JoinSide,
        right: JoinSide,
        key_time: tuple[str, str] | None = None,
        *,
        left_where: RowCondition | None = None,
        right_where: RowCondition | None = None,
        where=None,
        null_safe: tuple[bool, ...] = (),
        using: tuple[str, ...] = (),
        drops_null_keys: tuple[bool, bool] | None = None,
    ):
        self.how = how
        self.time_range = time_range
        self.sides = (left, right)
        self.key_time = key_time  # (left column, right column): event time inside the join key
        self.where = where  # a condition on a (left, right) pair
        self.null_safe = null_safe  # per key position, compared with <=> (empty: every position with =)
        # whether a key has a null where it is compared with '='; None when every position is compared with <=>
        equal = tuple(position for position, safe in enumerate(null_safe) if not safe)
        self.null_for_equal = _has_null if not null_safe else partial(_has_null_at, equal) if equal else None
        self.using = using  # key columns that appear once in the output
        # Rule 2 of each side's one-sided condition: Spark's optimizer moves it below the join (the rows that
        # fail it never reach the join) unless the side is preserved by an outer join, where it stays in the
        # join and a failing row gets its null-padded row at once.
        conditions = (left_where, right_where)
        self.pushed = tuple(None if self._preserved(side) else conditions[side] for side in (0, 1))
        self.pre_join = tuple(conditions[side] if self._preserved(side) else None for side in (0, 1))
        # per side, whether its rows with a null '=' key are dropped before the join (Spark's inferred
        # IS NOT NULL): the planner knows from the plan; by default, on the sides the join does not keep
        if drops_null_keys is None:
            drops_null_keys = (not self._preserved(0), not self._preserved(1))
        self.drops_null_keys = tuple(drops and self.null_for_equal is not None for drops in drops_null_keys)

    def _preserved(self, side: int) -> bool:
        """Whether the side's rows are emitted even without a match (an outer join's preserved side)."""
        return self.how == "full_outer" or self.how == ("left_outer", "right_outer")[side]

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Refuse update and complete mode, as Spark does: a joined row, once emitted, is final."""
        if output_mode != "append":
            raise PipelineError(
                f"step {step_name!r}: a stream-stream join runs only in append output mode: it emits each "
                f"joined row once, and never updates it. (Spark: 'Join between two streaming DataFrames/"
                f"Datasets is not supported in {output_mode.capitalize()} output mode, only in Append output "
                "mode'.)"
            )

    def open(self, ctx):
        super().open(ctx)
        # {key_group: {key: [rows, matched]}}, one per side: parallel lists, see the class
        self.state = (ctx.state.table("left"), ctx.state.table("right"))
        self.arrived = (([], []), ([], []))  # per side, (keys, rows): parallel lists, see the class
        self.held = self.arrived  # the rows of the batch being joined, until it is (held_rows)
        self.batch_left: list = []  # the batch's left rows (that were not late), while its right rows join
        self.new_left: set[int] | None = None  # their ids, made when a left semi join's rule 3 first needs them
        self.batch = None  # the batch running, then the last one this run ran
        self.late_rows = []  # every LateRow (time/lateness.py): what Run.late_rows() reports
        # marked for incremental checkpoints; not copy on write: a snapshot copies the lists
        self.changed = (ctx.state.track_changes("left"), ctx.state.track_changes("right"))
        self.by_time: tuple[list, list] = ([], [])  # per side, heap of (time, n, key): see the class
        self.stored = count()  # n of the next heap entry
        # per side, the emptied lists of the keys that left state at its last eviction, for new keys to take:
        # [[rows, matched], ...] and, at the same positions, [times, ...] (see the class)
        self.spare: tuple[list, list] = ([], [])
        self.spare_times: tuple[list, list] = ([], [])
        # per side: the column its rows are sorted by (its column of the time range), or None; how to read
        # a stored entry's time in it (for the binary searches)
        self.sort_column = tuple(self._time_column(side) for side in (0, 1))
        self.time_of = tuple(self._entry_time(column) for column in self.sort_column)
        # per side, {key: [time, ...]}: the times of each key's rows in the sort column, in their order, so that
        # a binary search compares plain numbers; not part of a checkpoint: made from the tables
        self.times: tuple[dict, dict] = ({}, {})
        self.reach = tuple(self._reach(side) for side in (0, 1))  # per side: see _reach
        # per side, its columns all null (what pads the other side's rows), when the plan knows them
        self.nulls = tuple(None if side.columns is None else dict.fromkeys(side.columns) for side in self.sides)
        self.evicted_by = tuple(self._eviction_column(side) for side in (0, 1))  # per side, or None
        # per side: whether a key's rows leave in the order they are kept, first ones first (they are sorted
        # by the column that evicts them)
        self.in_eviction_order = tuple(
            self.evicted_by[side] is not None and self.evicted_by[side] == self.sort_column[side] for side in (0, 1)
        )

    def process(self, pairs, input_index):
        """Keep a message's keys and rows until the batch ends, each in its side's list: a chunk of
        :class:`~ministream.core.physical.KeyedRows` (what the engine sends) is copied list to list, O(n)
        references and no new object per row; any other iterable of ``(key, row)`` pairs is split into them."""
        keys, rows = self.arrived[input_index]
        if isinstance(pairs, KeyedRows):
            keys += pairs.keys
            rows += pairs.rows
        else:
            for key, row in pairs:
                keys.append(key)
                rows.append(row)

    def on_batch_end(self, batch):
        self.held = self.arrived  # until the batch has been joined: where a row the join cannot read is looked for
        arrived = [self._pushed_down(side, keys, rows) for side, (keys, rows) in enumerate(self.arrived)]
        left, right = (self._drop_late(side, keys, rows, batch) for side, (keys, rows) in enumerate(arrived))
        self.arrived = (([], []), ([], []))
        out = self._join_side(0, *left)  # rule 2: left rows meet the right state first
        self.batch_left, self.new_left = left[1], None
        out += self._join_side(1, *right)  # rule 3: then right rows meet the left state
        self.batch_left, self.new_left = [], None
        if batch.watermark is not None:  # rule 4: eviction, and the outer rows it releases
            for side in (0, 1):
                out += self._evict(side, batch.watermark)
        self.ctx.emit(out)
        self.held = self.arrived
        if self.ctx.tracing:
            sizes = self.state_sizes()
            self.ctx.explain(
                "state",
                f"subtask {self.ctx.subtask} keeps " + ", ".join(f"{n} {side} rows" for side, n in sizes.items()),
                sizes,
            )

    def on_batch_start(self, batch):
        self.batch = batch

    def held_rows(self) -> dict[int, list]:
        """Each side's rows of the running batch (``core/bad_rows.py`` looks there when the batch's end fails)."""
        return {side: rows for side, (_, rows) in enumerate(self.held)}

    def should_run_another_batch(self, watermark):
        """Spark runs a no-data batch for a join whenever the watermark moved and some state can be evicted
        by it (a state watermark exists for either side)."""
        return watermark_moved(self.batch, watermark) and any(
            self._state_watermark(side, watermark) is not None for side in (0, 1)
        )

    # -- the rules ----------------------------------------------------------------------------------------

    def _pushed_down(self, side: int, keys: list, rows: list) -> tuple[list, list]:
        """The conditions Spark's optimizer moves below the join (a one-sided condition of a side that is not
        preserved; ``key IS NOT NULL`` on such a side when keys are compared with ``=``): rows that fail them
        never reach the join, so they are neither late nor stored. Takes and gives ``(keys, rows)``, parallel
        lists; when every row passes, the same lists come back (no copy)."""
        condition = self.pushed[side]
        null_for_equal = self.null_for_equal
        nulls_out = self.drops_null_keys[side]
        if condition is None and not nulls_out:
            return keys, rows
        if condition is None:
            kinds = set(map(type, keys))  # one pass in C: plain keys are null only as None itself
            if type(None) not in kinds and tuple not in kinds:
                return keys, rows  # the usual case: no key is null, nothing to drop
            passes = [not null_for_equal(key) for key in keys]
        else:
            passes = [condition.fn(row) and not (nulls_out and null_for_equal(key)) for key, row in zip(keys, rows)]
        return self._kept(keys, rows, passes, "filtered by the join condition")

    def _kept(self, keys: list, rows: list, passes: list[bool], why: str) -> tuple[list, list]:
        """The keys and rows whose flag in ``passes`` is true (``(keys, rows)`` themselves when all are), the
        others counted as dropped for ``why``. The flags are ``True``/``False``, shared objects: no new object
        per row."""
        dropped = passes.count(False)
        if not dropped:
            return keys, rows
        self.ctx.drop(why, rows=dropped)
        return list(compress(keys, passes)), list(compress(rows, passes))

    def _drop_late(self, side: int, keys: list, rows: list, batch) -> tuple[list, list]:
        """Rule 1: rows at or before the previous batch's watermark are late: not joined, not stored. The
        column tested is the side's own event time (its watermarked column, or its window's end); a side
        without a watermark has no late rows, even when the other side's watermark evicts its state, and
        neither has a side whose event time Spark prunes (:class:`JoinSide`)."""
        column = self.sides[side].watermark_column
        if column is None or batch.late_watermark is None:
            return keys, rows
        if not self.sides[side].drops_late:  # Spark pruned the column: no late row, but the trace says why
            if self.ctx.tracing:
                for row in rows:
                    if row[column] <= batch.late_watermark:
                        self.ctx.explain("not late", self._not_late(side, row, batch.late_watermark), row)
            return keys, rows
        late = batch.late_watermark
        on_time = [row[column] > late for row in rows]  # a flag per row (shared True/False objects)
        if False not in on_time:
            return keys, rows
        for row in rows:  # the late ones, each reported with its rule
            if row[column] <= late:
                rule = (
                    f"{self.sides[side].name} row dropped: {column} {format_ts(row[column])} <= watermark "
                    f"{format_ts(late)} of the previous batch"
                )
                self.late_rows.append(LateRow(batch.batch_id, self.ctx.step_name, row, None, late, rule))
                self.ctx.explain("late", rule, row)
        return list(compress(keys, on_time)), list(compress(rows, on_time))

    def _not_late(self, side: int, row: dict, late: int) -> str:
        """Why a row at or before the previous batch's watermark is joined all the same (rule 1's exception)."""
        column = self.sides[side].watermark_column
        return (
            f"{self.sides[side].name} row kept: {column} {format_ts(row[column])} <= watermark {format_ts(late)}, "
            f"but nothing at or after the join reads {column}, so Spark prunes it and this side drops no late row"
        )

    def _join_side(self, side: int, keys: list, rows: list) -> list[dict]:
        """Rules 2 and 3 for the batch's new rows of one side, in their order: each meets the other side's
        stored rows of its key that are in its time range (a binary search in the key's times, then
        :meth:`_matches`), then is stored (in time order, and in the eviction index when it is its key's
        earliest row); a left-semi row that matched is emitted once and not stored, and a left-semi right row
        that leaves this batch meets only the left rows of earlier batches (rule 3). A row that fails its
        side's condition (kept in the join because the side is preserved) can never match: its null-padded
        row comes out at once and it is not stored. The loop runs once per row: what it reads of the operator
        is taken into local names first."""
        condition = self.pre_join[side]
        table, times, changed, heap = self.state[side], self.times[side], self.changed[side], self.by_time[side]
        spare, spare_times = self.spare[side], self.spare_times[side]
        other_table, other_times = self.state[1 - side], self.times[1 - side]
        column, reach = self.sort_column[side], self.reach[side]
        own_column, low, high = reach if reach is not None else (None, None, None)
        evicted_by, every_row_indexed = self.evicted_by[side], not self.in_eviction_order[side]
        # with '=', a null key matches nothing (on a side not preserved, such rows were dropped before)
        semi_left = self.how == "left_semi" and side == 0
        # left semi, rule 3: a right row at or below this leaves at step 4, and meets only the left rows of
        # earlier batches, not those of this batch (self.batch_left)
        semi_limit = None
        if self.how == "left_semi" and side == 1 and evicted_by is not None:
            watermark = None if self.batch is None else self.batch.watermark
            if watermark is not None:
                semi_limit = self._state_watermark(1, watermark)
        # the usual join (inner or outer, no condition on the pair): every candidate matches, and the loop
        # below joins them itself, without a call of _matches for each row that matches
        plain, joined = self.how != "left_semi" and self.where is None, self._joined if self.using else joined_row
        other_changed = self.changed[1 - side]
        tracing, name, other_name = self.ctx.tracing, self.sides[side].name, self.sides[1 - side].name
        marking = self.ctx.state.reads_marks(("left", "right")[side])  # a checkpoint will read the stored keys
        out: list[dict] = []
        stored = semi_matched = padded = 0
        for key, row in zip(keys, rows):  # zip reuses its pair tuple: no object per row
            if condition is not None and not condition.fn(row):
                padded += 1
                out.append(self._pad(side, row))
                self._explain_emit(out[-1:], f"{name} row fails its side's join condition: padded now")
                continue
            group = key_group_of(key)
            # the probe: the other side's rows of the key, those in range of the row's time (see _reach)
            matches: list[dict] = _NO_MATCHES
            others = other_table.get(group, _EMPTY).get(key)  # a stored null key meets a null key, as in Spark
            if others:
                first, last = 0, len(others[0])  # the candidates: the stored rows first to last - 1
                if reach is not None:  # two binary searches in the key's times, O(log n)
                    time, key_times = row[own_column], other_times[key]
                    first = 0 if low is None else bisect_left(key_times, time + low)
                    last = len(key_times) if high is None else bisect_right(key_times, time + high, first)
                if first < last and plain:  # each candidate joins, and is flagged as matched
                    other_rows, flags = others
                    matches = []
                    for position in range(first, last):
                        other = other_rows[position]
                        matches.append(joined(row, other) if side == 0 else joined(other, row))
                        if not flags[position]:  # the stored row changed in place: it matched
                            flags[position] = True
                            other_changed[key] = None
                elif first < last:
                    leaving = semi_limit is not None and row[evicted_by] <= semi_limit
                    if leaving and self.new_left is None:  # the ids of this batch's left rows, made once
                        self.new_left = set(map(id, self.batch_left))
                    matches = self._matches(side, key, row, others, first, last, self.new_left if leaving else None)
            if matches and semi_left:
                semi_matched += 1
                out += matches
                self._explain_emit(matches, "left semi: the left row matched, emitted once and not stored")
                continue
            # the store: the row goes at its place in time order (mostly last), its time at the same place
            by_key = table.get(group)
            if by_key is None:
                by_key = table[group] = {}
            kept = by_key.get(key)
            if kept is None and spare:  # a new key takes the emptied lists of a key that left state
                kept = by_key[key] = spare.pop()
                times[key] = spare_times.pop()
            if kept is None:
                by_key[key] = [[row], [bool(matches)]]
                if column is not None:
                    times[key] = [row[column]]
                position = 0
            elif column is None:
                kept[0].append(row)
                kept[1].append(bool(matches))
                position = len(kept[0]) - 1
            else:
                time, key_times = row[column], times[key]
                position = len(key_times) if not key_times or key_times[-1] <= time else bisect_right(key_times, time)
                key_times.insert(position, time)
                kept[0].insert(position, row)
                kept[1].insert(position, bool(matches))
            if evicted_by is not None and (position == 0 or every_row_indexed):  # the key's new earliest row
                heappush(heap, (row[evicted_by], next(self.stored), key))
            if marking:
                changed[key] = None
            stored += 1
            if matches:
                out += matches
                if tracing:
                    self._explain_emit(matches, f"a new {name} row matched a stored {other_name} row")
        for outcome, how_many in (
            ("stored in state", stored),
            ("matched once, not stored (left semi)", semi_matched),
            ("emitted padded with nulls at once (fails its side's condition)", padded),
        ):
            if how_many:
                self.ctx.count(outcome, how_many)
        return out

    def _matches(
        self, side: int, key, row: dict, stored: list, first: int, last: int, skip: set[int] | None = None
    ) -> list[dict]:
        """The output rows of a new ``row`` of ``side`` with the other side's stored rows of its key that are
        in its time range, in a left semi join or one with a condition on the pair (:meth:`_join_side` joins
        the others itself): ``stored`` is the key's ``[rows, matched]``, the candidates are its rows ``first``
        to ``last - 1``; each one that matches gets its ``matched`` flag set. ``skip``: the ids of stored rows
        a new right row of a left semi join does not meet (this batch's left rows, when it leaves at step 4)."""
        out = []
        rows, matched = stored
        semi = self.how == "left_semi"
        if semi and self.where is None:  # every candidate matches: a left semi join without a condition
            if side == 0:  # a new left row: emitted once, at its first match
                if not matched[first]:
                    matched[first] = True
                    self.changed[1][key] = None  # the stored row changed in place: it matched
                return [dict(row)]
            for position in range(first, last):  # a new right row: each stored left row not emitted yet
                if not matched[position] and (skip is None or id(rows[position]) not in skip):
                    matched[position] = True
                    self.changed[0][key] = None
                    out.append(dict(rows[position]))
            return out
        for position in range(first, last):
            left, right = _sides(side, row, rows[position])
            if semi and side == 1 and (matched[position] or (skip is not None and id(rows[position]) in skip)):
                continue  # left semi: a left row is emitted at its first match only (and see skip)
            if self.where is not None and not self.where(left, right):
                continue
            if not matched[position]:
                matched[position] = True
                self.changed[1 - side][key] = None  # the stored row changed in place: it matched
            if semi:
                out.append(dict(left))
                if side == 0:
                    break  # one output row per left row, however many right rows match
            else:
                out.append(self._joined(left, right))
        return out

    def _time_column(self, side: int) -> str | None:
        """The column a side's rows are sorted by in state: its column of the time range (``None``: none)."""
        if self.time_range is None:
            return None
        return (self.time_range.left, self.time_range.right)[side]

    def _reach(self, side: int) -> tuple | None:
        """How far a new row of ``side`` reaches into the other side's times: ``(its time column, low, high)``
        such that it matches the other side's rows timed from ``time + low`` to ``time + high`` (``None``:
        unbounded that way), from the range ``left + lower <= right <= left + upper`` solved for the other
        side's time; ``None`` without a time range. Times are whole ms, so a strict bound is 1 ms closer.

        >>> join = StreamJoin("inner", TimeRange("t", "u", lower=0, upper=10, upper_inclusive=False),
        ...                   JoinSide("a", "t"), JoinSide("b", "u"))
        >>> join._reach(0), join._reach(1)
        (('t', 0, 9), ('u', -9, 0))
        """
        time_range = self.time_range
        if time_range is None:
            return None
        lower, upper = time_range.lower, time_range.upper
        if lower is not None and not time_range.lower_inclusive:
            lower += 1
        if upper is not None and not time_range.upper_inclusive:
            upper -= 1
        if side == 0:
            return time_range.left, lower, upper
        return time_range.right, (None if upper is None else -upper), (None if lower is None else -lower)

    @staticmethod
    def _entry_time(column: str | None):
        """A function that reads a stored row's time in ``column`` (``None`` for no column)."""
        return None if column is None else lambda row: row[column]

    def _eviction_column(self, side: int) -> str | None:
        """The column whose time evicts a side's rows (``None``: they are never evicted)."""
        if self.key_time is not None:
            return self.key_time[side]
        if self._state_watermark(side, 0) is None:
            return None
        return self.sides[side].watermark_column

    def _state_watermark(self, side: int, watermark: int) -> int | None:
        """Rows of ``side`` whose event time is ``<=`` this can no longer match (``None``: keep them all)."""
        if self.key_time is not None:
            return watermark
        if self.time_range is None or self.sides[side].watermark_column is None:
            return None
        if self.sides[1 - side].watermark_column != (self.time_range.right, self.time_range.left)[side]:
            return None  # the other side's time is not watermarked: it bounds nothing
        return (self.time_range.left_state_watermark, self.time_range.right_state_watermark)[side](watermark)

    def output_watermark(self, input_watermark):
        """A stored row leaves (padded, in an outer join) only when its time is at or before its side's state
        watermark, which lags the input watermark: the join's output watermark is the smallest of the two
        state watermarks and the input watermark (Spark's ``StreamingSymmetricHashJoinExec``), so that the
        step after it does not take those rows for late. A left semi join emits left rows only: the left state
        watermark and the input watermark (Spark 4.3 does so: ``tutorials/spark-facts.md``)."""
        sides = (0,) if self.how == "left_semi" else (0, 1)
        limits = [self._state_watermark(side, input_watermark) for side in sides]
        return min([limit for limit in limits if limit is not None] + [input_watermark])

    def _evict(self, side: int, watermark: int) -> list[dict]:
        """Rule 4: remove the rows that can no longer match; an outer side pads its unmatched ones.

        The heap gives the keys with a row at or below the limit, earliest first. A key whose rows are in
        eviction order loses a prefix of them (a binary search in its times finds where it ends), and leaves
        the table when that is all its rows, or goes back on the heap with its new earliest row; an older
        entry of a key cleaned already finds no row to cut. Keys whose rows are in another order are scanned
        (:meth:`_evict_scanning`)."""
        limit = self._state_watermark(side, watermark)
        if limit is None:
            return []
        if not self.in_eviction_order[side]:
            return self._evict_scanning(side, limit)
        pads, out = self._preserved(side), []
        table, times_table, changed, heap = self.state[side], self.times[side], self.changed[side], self.by_time[side]
        spare, spare_times = self.spare[side], self.spare_times[side]
        while heap and heap[0][0] <= limit:
            key = heappop(heap)[2]
            times = times_table.get(key)  # the key's sorted times (None: the key left state already)
            cut = 0 if times is None else bisect_right(times, limit)  # its first `cut` rows leave
            if not cut:
                continue
            changed[key] = None  # shrunk or removed
            group = key_group_of(key)
            keys = table[group]
            kept = keys[key]
            rows, flags = kept
            if pads and False in flags[:cut]:  # some of the rows that leave never matched
                self._pad_evicted(side, rows[:cut], flags[:cut], limit, out)
            if cut == len(rows):  # every row leaves: so does the key, its lists emptied for a new key to take
                del keys[key], times_table[key]
                if not keys:
                    del table[group]
                rows.clear(), flags.clear(), times.clear()
                spare.append(kept)
                spare_times.append(times)
            else:
                del rows[:cut], flags[:cut], times[:cut]
                heappush(heap, (times[0], next(self.stored), key))  # back on the heap, by its earliest row left
        extra = len(spare) - len(times_table)  # never more spare lists than keys in state: the oldest go
        if extra > 0:
            del spare[:extra], spare_times[:extra]
        return out

    def _evict_scanning(self, side: int, limit: int) -> list[dict]:
        """Rule 4 for a side whose keys' rows are not sorted by the column that evicts them (a time in the key):
        every row has an entry on the heap, and each key due is scanned once for its rows at or below the limit."""
        column, pads, time_of = self.evicted_by[side], self._preserved(side), self.time_of[side]
        table, times_table, changed, heap = self.state[side], self.times[side], self.changed[side], self.by_time[side]
        due = {}  # {key: None}: the keys with rows at or below the limit, each once
        while heap and heap[0][0] <= limit:
            due[heappop(heap)[2]] = None
        out: list[dict] = []
        for key in due:
            group = key_group_of(key)
            kept = table.get(group, _EMPTY).get(key)
            if not kept:
                continue  # the key's rows are gone already (an entry of the index stays until its time comes)
            rows, flags = kept
            stays = [row[column] > limit for row in rows]
            if all(stays):
                continue  # nothing evicted: the key is unchanged
            changed[key] = None  # shrunk or removed
            if pads:
                leaves = [not stay for stay in stays]
                self._pad_evicted(side, list(compress(rows, leaves)), list(compress(flags, leaves)), limit, out)
            if not any(stays):
                del table[group][key]
                times_table.pop(key, None)
                if not table[group]:
                    del table[group]
                continue
            rows[:] = list(compress(rows, stays))
            flags[:] = list(compress(flags, stays))
            if time_of is not None:
                times_table[key] = [time_of(row) for row in rows]
        return out

    def _pad_evicted(self, side: int, rows: list, flags: list, limit: int, out: list) -> None:
        """An outer side's evicted ``rows``: each one that never matched (its flag in ``flags`` is false) is
        added to ``out`` padded with nulls."""
        for row, matched in zip(rows, flags):
            if not matched:
                out.append(self._pad(side, row))
                if self.ctx.tracing:
                    column = self.evicted_by[side]
                    self._explain_emit(
                        out[-1:],
                        f"{self.sides[side].name} row evicted unmatched "
                        f"({column} {format_ts(row[column])} <= {format_ts(limit)}): padded with nulls",
                    )

    def restore(self, snapshot, key_groups=None):
        """Load the rows of the subtask's key groups, then sort each key's rows by time, list their times and
        index them for eviction (times and index are not part of a checkpoint: they are made from the tables)."""
        super().restore(snapshot, key_groups)
        self.by_time, self.times = ([], []), ({}, {})
        self.spare, self.spare_times = ([], []), ([], [])
        for side in (0, 1):
            time_of, evicted_by = self.time_of[side], self.evicted_by[side]
            for keys in self.state[side].values():
                for key, (rows, flags) in keys.items():
                    if time_of is not None:  # sorted by time, rows and flags together (a stable sort)
                        order = sorted(range(len(rows)), key=lambda n, rows=rows: time_of(rows[n]))
                        rows[:], flags[:] = [rows[n] for n in order], [flags[n] for n in order]
                        self.times[side][key] = [time_of(row) for row in rows]
                    if evicted_by is not None:
                        self.by_time[side].extend((row[evicted_by], next(self.stored), key) for row in rows)
            heapify(self.by_time[side])

    def _pad(self, side: int, row: dict) -> dict:
        """An outer row: this side's columns, and nulls for the other side's."""
        columns = self.sides[1 - side].columns
        if columns is None:
            raise PipelineError(
                f"an outer join pads {self.sides[side].name} rows with nulls for the "
                f"{self.sides[1 - side].name} columns, so it must know them: select them "
                "before the join (stream.select(...)), as Spark knows them from the schema"
            )
        nulls = self.nulls[1 - side]
        if not self.using:
            return joined_row(row, nulls) if side == 0 else joined_row(nulls, row)
        return self._joined(row, nulls) if side == 0 else self._joined(nulls, row)

    def _joined(self, left: dict, right: dict) -> dict:
        """A joined row (:func:`joined_row`); with ``using`` keys, each key column once: the right side's
        value in a right outer join, otherwise the left's, or the right's where the left is padded."""
        if not self.using:
            return joined_row(left, right)
        merged = dict(left)
        for column in self.using:
            if self.how == "right_outer" or merged.get(column) is None:
                merged[column] = right.get(column)
        return joined_row(merged, {c: v for c, v in right.items() if c not in self.using})

    def _explain_emit(self, rows: list[dict], why: str) -> None:
        if self.ctx.tracing:
            for row in rows:
                self.ctx.explain("emit", why, row)

    def state_sizes(self) -> dict[str, int]:
        """How many rows each side keeps in state: ``{side name: rows}``."""
        return {
            side.name: sum(len(kept[0]) for group in table.values() for kept in group.values())
            for side, table in zip(self.sides, self.state)
        }

    def state_size(self):
        return sum(self.state_sizes().values())


def _sides(side: int, row: dict, stored: dict) -> tuple[dict, dict]:
    """``(left row, right row)`` of a new ``row`` of ``side`` and a ``stored`` row of the other side."""
    return (row, stored) if side == 0 else (stored, row)


def _has_null(key) -> bool:
    """Whether a join key is null or has a null part."""
    return key is None or (isinstance(key, tuple) and None in key)


def _has_null_at(positions: tuple[int, ...], key: tuple) -> bool:
    """Whether a key of several columns has a null at one of ``positions``.

    >>> _has_null_at((1,), (None, 3)), _has_null_at((1,), (3, None))
    (False, True)
    """
    return any(key[position] is None for position in positions)


def joined_row(left: dict, right: dict) -> dict:
    """A joined row: the left columns, then the right ones. Spark keeps both when names clash, and then a
    column name means nothing: rename one side first."""
    joined = {**left, **right}
    if len(joined) < len(left) + len(right):  # a column of both sides
        raise PipelineError(
            f"both sides of the join have columns {sorted(left.keys() & right.keys())}: rename them on one side "
            "first (stream.select(...)), as Spark needs too"
        )
    return joined


def state_sizes_by_side(trace, step: str) -> dict[str, list[int]]:
    """From a run's trace, the rows each side of join ``step`` kept after every batch (all subtasks added).

    >>> from ministream.core.trace import Trace
    >>> trace = Trace()
    >>> trace.begin_batch(0, 0); trace.record("join", 0, "state", "", {"a": 1, "b": 0})
    >>> trace.record("join", 1, "state", "", {"a": 2, "b": 3})
    >>> state_sizes_by_side(trace, "join")
    {'a': [3], 'b': [3]}
    """
    per_batch: dict[int, dict[str, int]] = {}
    for line in trace.lines:
        if line.step == step and line.kind == "state":
            sizes = per_batch.setdefault(line.batch_id, {})
            for side, size in line.row.items():
                sizes[side] = sizes.get(side, 0) + size
    sides = list(next(iter(per_batch.values()), {}))
    return {side: [per_batch[batch].get(side, 0) for batch in sorted(per_batch)] for side in sides}
