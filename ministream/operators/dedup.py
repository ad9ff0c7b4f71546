"""Deduplication: keep the first row of each key, forget the key when the watermark says no copy can come.

A source that retries delivers some events twice; ``dropDuplicates(["event_id"])`` keeps the first copy.
To know that a row is a copy, the engine must remember every key it has seen, so the question, as with
every stateful operator, is when it may forget one. Spark's answers (``StreamingDeduplicateExec``):

``dropDuplicates(cols)``, in micro-batch k:

1. with a watermark, **late rows are dropped first**: event time ``<= WM_{k-1}``, whatever their key;
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
from ministream.state.keygroups import key_group_of
from ministream.time.lateness import LateRow
from ministream.time.units import format_ts


class Deduplicate(Operator):
    """The first row per key, in the micro-batch model (Spark's ``dropDuplicates`` and
    ``dropDuplicatesWithinWatermark``).

    State: ``{key_group: {key: expires}}`` (the keyed state table ``"seen"``): ``expires`` is the event
    time at which the key may be forgotten, or ``None`` for never. ``self.changed``: the keys stored or
    forgotten since the last checkpoint, for an incremental checkpoint (``state/changes.py``). The table is
    copy on write, trivially: its values are numbers, never changed in place, so a snapshot shares them.

    Args:
        columns: the columns that make the key (the rows arrive keyed by them).
        event_time: the column the upstream watermark tracks (``None`` without a watermark).
        key_has_event_time: whether ``event_time`` is one of ``columns``.
        within_delay: the watermark delay, for ``dropDuplicatesWithinWatermark``; ``None`` otherwise.
    """

    keyed = True

    def __init__(
        self,
        columns: tuple[str, ...],
        event_time: str | None,
        key_has_event_time: bool,
        within_delay: int | None = None,
    ):
        self.columns = columns
        self.event_time = event_time
        self.key_has_event_time = key_has_event_time
        self.within_delay = within_delay

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Deduplication emits each first row once, in every output mode: complete mode is the aggregation's
        business, so a deduplication followed by an aggregation runs in complete mode (Spark accepts it;
        without an aggregation, the run refuses complete mode anyway)."""

    def open(self, ctx):
        super().open(ctx)
        self.seen = ctx.state.table("seen")  # {key_group: {key: expires (ms) or None}}
        self.changed = ctx.state.track_changes("seen", copy_on_write=True)  # {key: None}
        self.batch = None
        self.late_rows = []  # every LateRow: what Run.late_rows() reports

    def on_batch_start(self, batch):
        self.batch = batch

    def process(self, pairs, input_index):
        """Rules 1 and 2, row by row as the rows arrive: a row's fate depends only on the rows before it."""
        late_watermark = None if self.ctx.model == "continuous" else self._late_watermark()
        self._keep_first(pairs, late_watermark)

    def on_batch_end(self, batch):
        if batch.watermark is not None:  # rule 3
            self._evict(batch.watermark)
        if self.ctx.tracing:
            self.ctx.explain("state", f"keys in state: {self.state_size()}", {"keys": self.state_size()})

    def _late_watermark(self) -> int | None:
        """Micro-batch: rows at or before this (WM_{k-1}) are late; ``None`` without a watermark."""
        return None if self.event_time is None else self.batch.late_watermark

    def _keep_first(self, pairs, late_watermark: int | None = None) -> None:
        """Emit each row whose key is not in state, and store its key; drop the duplicates, and the rows at or
        before ``late_watermark`` (rule 1, whatever their key).

        A chunk at a time, in two passes: first the chunk's own first row of each key (a dict lookup per row),
        then only those first rows looked up in state (the key's group found once per key, not once per row).
        The rows emitted are the same, in the same order, as a row-by-row pass would emit."""
        tracing, event_time = self.ctx.tracing, self.event_time
        firsts: dict = {}  # {key: its first row in this chunk}, in arrival order
        duplicates = 0  # counted here without a trace, where each one is a line of its own
        for key, row in pairs:
            if late_watermark is not None and row[event_time] <= late_watermark:
                self._late(row, late_watermark)
            elif key not in firsts:
                firsts[key] = row
            elif tracing:
                self.ctx.drop("duplicate", row, text=f"duplicate of key {key!r}: dropped")
            else:
                duplicates += 1
        out = []
        seen, changed, within_delay = self.seen, self.changed, self.within_delay
        # A key that holds its event time is new at almost every row: the cache of key groups would only miss
        # (and evict another key each time), which costs twice the computation, so it is computed uncached.
        group_of = key_group_of.__wrapped__ if self.key_has_event_time else key_group_of
        for key, row in firsts.items():
            number = group_of(key)
            group = seen.get(number)
            if group is None:
                group = seen[number] = {}
            elif key in group:  # seen in an earlier chunk
                if tracing:
                    self.ctx.drop("duplicate", row, text=f"duplicate of key {key!r}: dropped")
                else:
                    duplicates += 1
                continue
            # when the key may be forgotten: its event time + delay (within), its event time, or never
            if within_delay is not None:
                group[key] = row[event_time] + within_delay
            else:
                group[key] = row[event_time] if self.key_has_event_time else None
            changed[key] = None
            out.append(row)
            if tracing:
                self.ctx.explain("emit", f"first row of key {key!r}", row)
        if duplicates:
            self.ctx.drop("duplicate", rows=duplicates)
        self.ctx.emit(out)

    def _late(self, row: dict, late_watermark: int) -> None:
        rule = (
            f"row dropped: {self.event_time} {format_ts(row[self.event_time])} <= watermark "
            f"{format_ts(late_watermark)} of the previous batch"
        )
        self.late_rows.append(LateRow(self.batch.batch_id, self.ctx.step_name, row, None, late_watermark, rule))
        self.ctx.explain("late", rule, row)

    def _evict(self, watermark: int) -> None:
        """Forget every key whose ``expires`` the watermark has reached (a scan of the table: the keys a
        batch stores are about the keys the next batches evict, so the scan costs about one step per row)."""
        seen, changed, tracing = self.seen, self.changed, self.ctx.tracing
        for group in list(seen):
            keys = seen[group]
            for key in [key for key, expires in keys.items() if expires is not None and expires <= watermark]:
                del keys[key]
                changed[key] = None
                if tracing:
                    self.ctx.explain("evict", f"key {key!r} forgotten: watermark {format_ts(watermark)}")
            if not keys:
                del seen[group]

    def on_watermark(self, watermark):
        """Continuous model: forget the keys the watermark has passed (rule 3), then pass it on."""
        self._evict(watermark)
        self.ctx.emit_watermark(watermark)

    def should_run_another_batch(self, watermark):
        """Spark's dedup asks for a no-data batch whenever the watermark moved, even with nothing to evict."""
        return self.event_time is not None and watermark_moved(self.batch, watermark)

    def state_size(self):
        return sum(len(keys) for keys in self.seen.values())
