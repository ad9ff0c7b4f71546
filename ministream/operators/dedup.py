"""Deduplication: keep the first row of each key, forget the key when the watermark says no copy can come.

A source that retries delivers some events twice; ``dropDuplicates(["event_id"])`` keeps the first copy.
To know that a row is a copy, the engine must remember every key it has seen, so the question, as with
every stateful operator, is when it may forget one. Spark's answers (``StreamingDeduplicateExec``):

``dropDuplicates(cols)``, in micro-batch k:

1. with a watermark, **late rows are dropped first**: event time ``<= WM_{k-1}``, whatever their key; but
   not when the event-time column is not a key column and no step after the deduplication reads it: Spark's
   optimizer then prunes the column below it, and it sees no watermarked column (``core/pruning.py``);
2. a row whose key is not in state is emitted and its key stored; a row whose key is there is dropped;
3. a key is evicted when ``key's event time <= WM_k``, **only if the key includes the event-time column**.
   Otherwise keys are kept forever: the watermark says nothing about when a copy of ``event_id`` may come.

``dropDuplicatesWithinWatermark(cols)`` (Spark 3.5+): the copies of an event are assumed to arrive within the
watermark delay of the first one. The first row of a key stores ``expires = its event time + delay``; the key
is evicted when ``WM_k >= expires`` (then a later copy counts as new). Late rows are dropped first too.

A no-data batch runs after the script whenever the watermark moved (Spark's dedup asks for one every time).

>>> from ministream.core.operator import StepContext, BatchInfo
>>> dedup = Deduplicate(("id",), event_time="ts", key_has_event_time=False)
>>> ctx = StepContext.for_testing(); dedup.open(ctx)
>>> dedup.on_batch_start(BatchInfo(1, watermark=50, late_watermark=10))
>>> dedup.process([("e1", {"id": "e1", "ts": 20}), ("e1", {"id": "e1", "ts": 30}),
...                ("e2", {"id": "e2", "ts": 5})], 0)
>>> dedup.on_batch_end(BatchInfo(1, watermark=50, late_watermark=10)); ctx.emitted   # e2 is late
[{'id': 'e1', 'ts': 20}]
"""

from __future__ import annotations

from ministream.core.operator import Operator, watermark_moved
from ministream.operators.seen_keys import SeenBySecond, SeenInState, SeenKeys
from ministream.time.lateness import LateRow
from ministream.time.units import format_ts


class Deduplicate(Operator):
    """The first row per key, in the micro-batch model (Spark's ``dropDuplicates`` and
    ``dropDuplicatesWithinWatermark``).

    State: ``self.seen``, the keys seen with when each may be forgotten (``expires``: the event time at which
    the watermark lets the key go, or ``None`` for never), laid out as ``operators/seen_keys.py`` says: in
    memory, tables ``{key: expires}`` by the second of the expiry when the key holds the event time, else a
    flat ``{key: expires}`` with an index by expiry (split by key group, as the keyed state table ``"seen"``,
    only when a checkpoint is taken); the table ``"seen"`` itself when the keyed state lives in a store.
    ``self.changed``: the keys stored or forgotten since the last checkpoint, for an incremental checkpoint
    (``state/changes.py``). Its values are numbers, never changed in place: a snapshot shares them.

    Args:
        columns: the columns that make the key (the rows arrive keyed by them).
        event_time: the column the upstream watermark tracks (``None`` without a watermark).
        key_has_event_time: whether ``event_time`` is one of ``columns``.
        within_delay: the watermark delay, for ``dropDuplicatesWithinWatermark``; ``None`` otherwise.
        drops_late: whether rule 1 applies (``False`` when Spark prunes ``event_time`` below the step).
    """

    keyed = True

    def __init__(
        self,
        columns: tuple[str, ...],
        event_time: str | None,
        key_has_event_time: bool,
        within_delay: int | None = None,
        drops_late: bool = True,
    ):
        self.columns = columns
        self.event_time = event_time
        self.key_has_event_time = key_has_event_time
        self.within_delay = within_delay
        self.drops_late = drops_late

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Deduplication emits each first row once, in every output mode: complete mode is the aggregation's
        business, so a deduplication followed by an aggregation runs in complete mode (Spark accepts it;
        without an aggregation, the run refuses complete mode anyway)."""

    def open(self, ctx):
        super().open(ctx)
        self.changed = ctx.state.track_changes("seen", copy_on_write=True)  # {key: None}
        if ctx.state.writes_back:  # the state lives in a store: so do the seen keys
            self.seen = SeenInState(ctx.state.table("seen"))
        elif self.key_has_event_time:  # a key's expiry follows from the key: group the keys by its second
            self.seen = SeenBySecond()
        else:
            self.seen = SeenKeys()
        self.batch = None
        self.late_rows = []  # every LateRow: what Run.late_rows() reports

    def on_batch_start(self, batch):
        self.batch = batch

    def process(self, pairs, input_index):
        """Rules 1 and 2, row by row as the rows arrive: a row's fate depends only on the rows before it."""
        late_watermark = None if self.ctx.model == "continuous" else self._late_watermark()
        if not self.drops_late and self.ctx.tracing and self.batch.late_watermark is not None:
            self._explain_not_late(pairs, self.batch.late_watermark)
        if isinstance(self.seen, SeenBySecond):
            self._keep_first_by_second(pairs, late_watermark)
        else:
            self._keep_first(pairs, late_watermark)

    def on_batch_end(self, batch):
        if batch.watermark is not None:  # rule 3
            self._evict(batch.watermark)
        if self.ctx.tracing:
            self.ctx.explain("state", f"keys in state: {self.state_size()}", {"keys": self.state_size()})

    def _explain_not_late(self, pairs, late: int) -> None:
        """Trace why the rows at or before the previous batch's watermark are not late (rule 1's exception)."""
        column = self.event_time
        for _, row in pairs:
            if row[column] <= late:
                self.ctx.explain(
                    "not late",
                    f"row kept: {column} {format_ts(row[column])} <= watermark {format_ts(late)}, but neither the "
                    f"key nor a later step reads {column}, so Spark prunes it and no row is late here",
                    row,
                )

    def _late_watermark(self) -> int | None:
        """Micro-batch: rows at or before this (WM_{k-1}) are late; ``None`` without a watermark, or when
        the event-time column is pruned."""
        return None if self.event_time is None or not self.drops_late else self.batch.late_watermark

    def _keep_first(self, pairs, late_watermark: int | None = None) -> None:
        """Emit each row whose key is not in state, and store its key with when it may be forgotten; drop the
        duplicates, and the rows at or before ``late_watermark`` (rule 1, whatever their key). One lookup per
        row; the keys stored are then indexed (and marked changed) together."""
        tracing, event_time = self.ctx.tracing, self.event_time
        within_delay, key_has_event_time = self.within_delay, self.key_has_event_time
        expires = self.seen.expires  # {key: expires}
        stored, expiries = [], []  # the keys stored, in order, and their expiries
        out = []
        duplicates = 0  # counted without a trace (_duplicate)
        for key, row in pairs:
            if late_watermark is not None and row[event_time] <= late_watermark:
                self._late(row, late_watermark)
            elif key in expires:
                duplicates += self._duplicate(key, row, tracing)
            else:
                # when the key may be forgotten: its event time + delay (within), its event time, or never
                if within_delay is not None:
                    at = row[event_time] + within_delay
                else:
                    at = row[event_time] if key_has_event_time else None
                expires[key] = at
                stored.append(key)
                expiries.append(at)
                out.append(row)
                if tracing:
                    self.ctx.explain("emit", f"first row of key {key!r}", row)
        if stored:
            self.seen.index(stored, expiries)
            self._mark(stored)
        if duplicates:
            self.ctx.drop("duplicate", rows=duplicates)
        self.ctx.emit(out)

    def _keep_first_by_second(self, pairs, late_watermark: int | None = None) -> None:
        """:meth:`_keep_first` when the key holds the event time (``seen_keys.SeenBySecond``): the row says when
        its key expires, so in which second's table to look the key up. Consecutive rows mostly share that
        second: its table is looked up again only when it changes."""
        tracing, event_time, within_delay = self.ctx.tracing, self.event_time, self.within_delay
        seen = self.seen
        second, expires = None, None  # the second of the last row's expiry, and its table {key: expires}
        # the keys stored, in order, only when a checkpoint will read their marks (``_mark``), and their rows
        stored, out = ([] if self.ctx.state.reads_marks("seen") else None), []
        duplicates = 0  # counted without a trace (_duplicate)
        for key, row in pairs:
            if late_watermark is not None and row[event_time] <= late_watermark:
                self._late(row, late_watermark)
                continue
            at = row[event_time] if within_delay is None else row[event_time] + within_delay
            at_second = None if at is None else at // 1_000
            if expires is None or at_second != second:
                second, expires = at_second, seen.table(at_second)
            if key in expires:
                duplicates += self._duplicate(key, row, tracing)
            else:
                expires[key] = at
                if stored is not None:
                    stored.append(key)
                out.append(row)
                if tracing:
                    self.ctx.explain("emit", f"first row of key {key!r}", row)
        if stored:
            self._mark(stored)
        if duplicates:
            self.ctx.drop("duplicate", rows=duplicates)
        self.ctx.emit(out)

    def _duplicate(self, key, row: dict, tracing: bool) -> int:
        """A row whose key is in state is dropped: traced with its key, or counted (1 returned) for the batch's
        one ``drop`` call, where a line per duplicate would be too many."""
        if tracing:
            self.ctx.drop("duplicate", row, text=f"duplicate of key {key!r}: dropped")
            return 0
        return 1

    def _late(self, row: dict, late_watermark: int) -> None:
        rule = (
            f"row dropped: {self.event_time} {format_ts(row[self.event_time])} <= watermark "
            f"{format_ts(late_watermark)} of the previous batch"
        )
        self.late_rows.append(LateRow(self.batch.batch_id, self.ctx.step_name, row, None, late_watermark, rule))
        self.ctx.explain("late", rule, row)

    def _evict(self, watermark: int) -> None:
        """Forget every key whose ``expires`` the watermark has reached (through the index by expiry, in
        memory: ``seen_keys.py``)."""
        forgotten = self.seen.evict(watermark)
        self._mark(forgotten)
        if self.ctx.tracing:
            for key in forgotten:
                self.ctx.explain("evict", f"key {key!r} forgotten: watermark {format_ts(watermark)}")

    def _mark(self, keys: list) -> None:
        """Mark keys stored or forgotten as changed, when a checkpoint or a store's write-back will read the
        marks (``KeyedStateBackend.reads_marks``): a run with no checkpoint then marks nothing."""
        if self.ctx.state.reads_marks("seen"):
            self.changed.update(dict.fromkeys(keys))

    def on_watermark(self, watermark):
        """Continuous model: forget the keys the watermark has passed (rule 3), then pass it on."""
        self._evict(watermark)
        self.ctx.emit_watermark(watermark)

    def should_run_another_batch(self, watermark):
        """Spark's dedup asks for a no-data batch whenever the watermark moved, even with nothing to evict."""
        return self.event_time is not None and watermark_moved(self.batch, watermark)

    def state_size(self):
        return self.seen.size()

    def snapshot(self):
        """The keyed state table ``"seen"`` by key group (``{key_group: {key: expires}}``), made from the flat
        layout at the moment of the snapshot (in a store, the table is the state already). For an incremental
        checkpoint (``state/changes.py``) the table holds only the keys changed since the last checkpoint:
        the delta writes those still seen, and the others as removed."""
        state = self.ctx.state
        if isinstance(self.seen, SeenInState):
            return super().snapshot()
        marked_only = state.reads_only_marked("seen")
        state.tables["seen"] = self.seen.by_key_group(list(self.changed) if marked_only else None)
        try:
            return super().snapshot()
        finally:
            del state.tables["seen"]

    def restore(self, snapshot, key_groups=None):
        super().restore(snapshot, key_groups)
        if not isinstance(self.seen, SeenInState):
            self.seen = SeenBySecond() if self.key_has_event_time else SeenKeys()
            self.seen.load(self.ctx.state.tables.pop("seen", {}))
