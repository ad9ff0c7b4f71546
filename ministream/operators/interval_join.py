"""Stream-stream joins in the continuous model, as Flink runs them: the interval join and the window join.

There are no batches: every row is joined the moment it arrives, and the watermark, as it rises, cleans the
state. ``KeyedStream.join`` builds the same step in both models; in the continuous model the planner gives it
a :class:`ContinuousJoin`, which runs one of:

**Interval join** (a ``between`` range; Flink's ``IntervalJoinOperator``), inner only:

0. a row without a time (``None`` in its time column) is refused: the run fails, as Flink's operator throws
   for a record without a timestamp (the row could be neither judged late nor cleaned);
1. a row is *late* when its time ``<`` the step's watermark (strict, unlike Spark's ``<=``): it is dropped;
2. otherwise it is stored, and joined at once with every stored row of the other side of its key for which
   ``left_time + lower <= right_time <= left_time + upper`` (a strict bound moves by 1 ms: Flink adds 1 to an
   exclusive lower bound and subtracts 1 from an exclusive upper one);
3. the joined row's time is the later of the two, in the column ``time``;
4. a left row is removed when the watermark reaches ``left_time + upper`` (or ``left_time`` if ``upper <= 0``),
   a right row when it reaches ``right_time - lower`` (or ``right_time`` if ``lower >= 0``): after that no row
   of the other side that is not late can match it.

**Window join** (an event-time column in the key, e.g. ``window_end``; Flink's ``WindowJoin``), inner only:
both sides' rows of one key and window wait in state; when the watermark reaches ``window_end - 1`` the
window fires, every left row is paired with every right row (time ``window_end - 1``), and the window's rows
are dropped. A row whose window has already fired is late.

>>> from ministream.operators.stream_join import JoinSide, TimeRange
>>> from ministream.core.operator import StepContext
>>> join = IntervalJoin(TimeRange("t", "u", lower=0, upper=10), JoinSide("a", "t"), JoinSide("b", "u"))
>>> ctx = StepContext.for_testing(model="continuous")
>>> join.process([("k", {"t": 100})], 0, ctx); join.process([("k", {"u": 105}), ("k", {"u": 111})], 1, ctx)
>>> ctx.emitted
[{'t': 100, 'u': 105, 'time': 105}]
>>> join.on_watermark(110, ctx); join.sizes()   # left leaves at 100 + 10, right at its own time
{'a': 0, 'b': 1}
"""

from __future__ import annotations

from ministream.core.operator import Operator
from ministream.errors import PipelineError
from ministream.operators.stream_join import JoinSide, StreamJoin, joined_row
from ministream.state.keyed import KeyedStateBackend
from ministream.state.keygroups import key_group_of
from ministream.time.lateness import LateRow
from ministream.time.units import format_ts


def _combine(left: dict, right: dict, time: int) -> dict:
    return {**joined_row(left, right), "time": time}


class IntervalJoin:
    """The interval join's state and rules (run by :class:`ContinuousJoin`).

    State, per side: ``{key_group: {key: [row, ...]}}``, the keyed state tables ``left`` and ``right`` of
    ``backend`` (the step's; a new one when not given): the step's keyed snapshot carries them, and
    ``self.changed`` (``{key: None}`` per side) marks the keys stored or cleaned for incremental checkpoints.

    >>> from ministream.operators.stream_join import JoinSide, TimeRange
    >>> IntervalJoin(TimeRange("t", "u", -5, 10, upper_inclusive=False), JoinSide("a"), JoinSide("b")).upper
    9
    """

    def __init__(self, time_range, left, right, backend=None):
        self.range = time_range
        self.sides = (left, right)
        # Flink's bounds: inclusive, relative to the left time; an exclusive bound moves by 1 ms
        self.lower = time_range.lower + (0 if time_range.lower_inclusive else 1)
        self.upper = time_range.upper - (0 if time_range.upper_inclusive else 1)
        self.columns = (time_range.left, time_range.right)
        backend = KeyedStateBackend() if backend is None else backend
        # {key_group: {key: [row, ...]}} for the left and the right side
        self.state = (backend.table("left"), backend.table("right"))
        self.changed = (backend.track_changes("left"), backend.track_changes("right"))
        self.watermark = None
        self.late_rows = []  # every LateRow

    def process(self, pairs: list, side: int, ctx) -> None:
        """Rules 1 to 3 for each arriving row of ``side`` (0 left, 1 right)."""
        out = []
        column = self.columns[side]
        for key, row in pairs:
            if row.get(column) is None:
                raise PipelineError(
                    f"{self.sides[side].name} row {row!r} has no time in column {column!r}: an interval join "
                    "needs every row's time, to match it with the other side's and to know when to forget it. "
                    "(Flink: 'Long.MIN_VALUE timestamp: Elements used in interval stream joins need to have "
                    "timestamps meaningful timestamps.')"
                )
            if self.watermark is not None and row[column] < self.watermark:
                rule = (
                    f"{self.sides[side].name} row dropped: {column} {format_ts(row[column])} < watermark "
                    f"{format_ts(self.watermark)}"
                )
                self.late_rows.append(LateRow(None, ctx.step_name, row, None, self.watermark, rule))
                ctx.explain("late", rule, row)
                continue
            self.state[side].setdefault(key_group_of(key), {}).setdefault(key, []).append(row)
            self.changed[side][key] = None
            ctx.count("stored in state")
            for other in self.state[1 - side].get(key_group_of(key), {}).get(key, []):
                left, right = (row, other) if side == 0 else (other, row)
                gap = right[self.columns[1]] - left[self.columns[0]]
                if self.lower <= gap <= self.upper:
                    joined = _combine(left, right, max(left[self.columns[0]], right[self.columns[1]]))
                    out.append(joined)
                    ctx.explain(
                        "emit",
                        f"{self.sides[side].name} row met a stored {self.sides[1 - side].name} row within the interval",
                        joined,
                    )
        ctx.emit(out)

    def on_watermark(self, watermark: int, ctx) -> None:
        """Rule 4: remove the rows whose cleanup time the watermark has reached."""
        self.watermark = watermark
        cleanup = (lambda t: t + max(self.upper, 0), lambda t: t - min(self.lower, 0))
        for side in (0, 1):
            column = self.columns[side]
            for group in list(self.state[side]):
                keys = self.state[side][group]
                for key, rows in list(keys.items()):
                    kept = [row for row in rows if cleanup[side](row[column]) > watermark]
                    if len(kept) == len(rows):
                        continue  # nothing cleaned: the key is unchanged
                    self.changed[side][key] = None
                    if kept:
                        keys[key] = kept
                    else:
                        del keys[key]
                if not keys:
                    del self.state[side][group]

    def sizes(self) -> dict[str, int]:
        """Rows kept per side."""
        return {
            side.name: sum(len(rows) for group in table.values() for rows in group.values())
            for side, table in zip(self.sides, self.state)
        }

    def snapshot(self) -> dict:
        """What a checkpoint needs besides the keyed tables (which the step's keyed snapshot carries): the
        watermark, which the late rule needs as soon as the run goes on."""
        return {"watermark": self.watermark}

    def restore(self, snapshot: dict, key_groups=None) -> None:
        """Take back a :meth:`snapshot` (the keyed tables come back with the step's keyed state)."""
        self.watermark = snapshot["watermark"]


class WindowJoin:
    """The window join's state and rules (``stream_join.StreamJoin`` in the continuous model, with ``key_time``).

    State: ``{key_group: {key: ([left rows], [right rows])}}``, the keyed state table ``windows`` of
    ``backend`` (a new one when not given), marked in ``self.changed`` like the interval join's; the key holds
    the window, and ``key_time`` names each side's ``window_end`` column.

    >>> from ministream.operators.stream_join import JoinSide
    >>> WindowJoin(("l_end", "r_end"), JoinSide("a"), JoinSide("b")).sizes()
    {'a': 0, 'b': 0}
    """

    def __init__(self, key_time: tuple[str, str], left, right, backend=None):
        self.key_time = key_time
        self.sides = (left, right)
        backend = KeyedStateBackend() if backend is None else backend
        # {key_group: {key: ([left rows], [right rows])}}
        self.state = backend.table("windows")
        self.changed = backend.track_changes("windows")
        self.watermark = None
        self.late_rows = []  # every LateRow

    def process(self, pairs: list, side: int, ctx) -> None:
        column = self.key_time[side]
        for key, row in pairs:
            if self.watermark is not None and row[column] - 1 <= self.watermark:
                rule = (
                    f"{self.sides[side].name} row dropped: its window ended at {format_ts(row[column])}, already fired"
                )
                self.late_rows.append(LateRow(None, ctx.step_name, row, None, self.watermark, rule))
                ctx.explain("late", rule, row)
                continue
            self.state.setdefault(key_group_of(key), {}).setdefault(key, ([], []))[side].append(row)
            self.changed[key] = None
            ctx.count("stored in state")

    def on_watermark(self, watermark: int, ctx) -> None:
        """Fire every window whose last millisecond the watermark has reached: pair its rows, drop them."""
        self.watermark = watermark
        out = []
        for group in sorted(self.state):
            keys = self.state[group]
            for key in list(keys):
                lefts, rights = keys[key]
                end = (lefts or rights)[0][self.key_time[0 if lefts else 1]]
                if end - 1 > watermark:
                    continue
                for left in lefts:
                    for right in rights:
                        joined = _combine(left, right, end - 1)
                        out.append(joined)
                        ctx.explain("emit", f"window ending {format_ts(end)} fired", joined)
                del keys[key]
                self.changed[key] = None
            if not keys:
                del self.state[group]
        ctx.emit(out)

    def sizes(self) -> dict[str, int]:
        return {
            side.name: sum(len(entry[i]) for keys in self.state.values() for entry in keys.values())
            for i, side in enumerate(self.sides)
        }

    # as the interval join's: only the watermark; the windows' rows come back with the step's keyed state
    snapshot = IntervalJoin.snapshot
    restore = IntervalJoin.restore


def continuous_join(how: str, time_range, left, right, key_time, backend=None):
    """The continuous model's join for a ``StreamJoin``'s settings, or a refusal that says why.

    >>> from ministream.operators.stream_join import JoinSide, TimeRange
    >>> type(continuous_join("inner", TimeRange("t", "u", 0, 5), JoinSide("a"), JoinSide("b"), None)).__name__
    'IntervalJoin'
    """
    if how != "inner":
        raise PipelineError(
            f"the continuous model joins only with how='inner' (Flink's interval and window joins "
            f"are inner joins), not {how!r}: run the outer joins in the micro-batch model"
        )
    if key_time is not None:
        return WindowJoin(key_time, left, right, backend)
    if time_range is None or time_range.lower is None or time_range.upper is None:
        raise PipelineError(
            "the continuous model's interval join needs both bounds of the time range "
            "(between=TimeRange(..., lower=..., upper=...)): they decide when state is cleaned"
        )
    return IntervalJoin(time_range, left, right, backend)


class ContinuousJoin(Operator):
    """The operator of a join step in the continuous model: the interval or window join that the step's
    settings ask for (:func:`continuous_join`), fed each row as it arrives and each watermark as it rises.

    Its snapshot is the step's keyed state (the rows waiting for a match, in the tables ``left`` and
    ``right``) plus the join's own watermark, under ``"continuous"``.
    """

    keyed = True
    counts_rows = True  # each row that is not late is "stored in state"
    check_output_mode = staticmethod(StreamJoin.check_output_mode)

    def __init__(self, how: str, time_range, left: JoinSide, right: JoinSide, key_time: tuple[str, str] | None):
        self.how = how
        self.time_range = time_range
        self.sides = (left, right)
        self.key_time = key_time

    def open(self, ctx):
        super().open(ctx)
        self.join = continuous_join(self.how, self.time_range, *self.sides, self.key_time, ctx.state)

    def process(self, pairs, input_index):
        self.join.process(pairs, input_index, self.ctx)

    def on_watermark(self, watermark):
        self.join.on_watermark(watermark, self.ctx)
        self.ctx.emit_watermark(watermark)

    @property
    def late_rows(self) -> list:
        """The rows dropped as late so far (``LateRow``)."""
        return self.join.late_rows

    def state_sizes(self) -> dict[str, int]:
        """How many rows each side keeps in state: ``{side name: rows}``."""
        return self.join.sizes()

    def state_size(self):
        return sum(self.state_sizes().values())

    def snapshot(self):
        snapshot = super().snapshot()
        snapshot["continuous"] = self.join.snapshot()
        return snapshot

    def restore(self, snapshot, key_groups=None):
        super().restore(snapshot, key_groups)
        if "continuous" in snapshot:
            self.join.restore(snapshot["continuous"], key_groups)
