"""Random processors: the keyed process functions that random pipelines (``tools/pipeline_generator.py``) draw.

A process step runs a :class:`~ministream.operators.process.Processor` per key, in the engine and, through
``spark/processor_adapter.py``, in Spark's ``transformWithState``. Each processor here declares its Spark
``output_schema`` (the adapter needs it) and lives in the package, so Spark's workers import it by name:

- :class:`KeyCounter` (no timers): each key's count of rows so far, one row per key and batch that has rows;
- :class:`KeyLatest` (event-time mode, an output event time): each key's count of rows so far, with the sum of
  the batch's values and its latest event time, ``latest``, which a step after it takes as its event time
  (``event_time_column="latest"``): the batch's rows are all later than the previous batch's watermark, so
  their latest time is too, as Spark requires of an ``eventTimeColumnName``;
- :class:`QuietKeyCounter` (an event-time timer): each key's rows counted until the key is quiet for ``gap``
  ms of event time; the timer at the latest row's time + ``gap`` fires once the watermark passes it, emits the
  count and the latest time, and forgets the key (below: batch 1 runs under the watermark of batch 0, 2 s;
  the no-data batch 2 under 9 s, past a's timer at 5 s).

>>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
>>> flow = Dataflow("quiet")
>>> script = [[{"ts": 1_000, "key": "a"}, {"ts": 2_000, "key": "a"}], [{"ts": 9_000, "key": "b"}]]
>>> flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", 0).key_by("key").process(
...     "quiet", QuietKeyCounter(3_000), time_mode="event_time").sink("output", CollectingSink())
>>> [batch.rows for batch in run_microbatch(flow, output_mode="append").output()]
[[], [], [{'key': 'a', 'count': 2, 'last': 2000}]]
"""

from __future__ import annotations

from ministream.operators.process import Processor


class KeyCounter(Processor):
    """Per key, the number of rows so far, emitted with every batch of the key's rows."""

    output_schema = "key STRING, count BIGINT"

    def init(self, handle):
        self.count = handle.get_value_state("count", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update(self.count.value() + len(rows))
        return [{"key": key, "count": self.count.value()}]


class KeyLatest(Processor):
    """Per key and batch with rows: the count of the key's rows so far, the sum of the batch's values, and
    the batch's latest event time (``latest``, an output event time for the steps after it)."""

    output_schema = "key STRING, count BIGINT, value DOUBLE, latest TIMESTAMP"

    def init(self, handle):
        self.count = handle.get_value_state("count", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update(self.count.value() + len(rows))
        total = float(sum(row["value"] for row in rows if row["value"] is not None))
        return [{"key": key, "count": self.count.value(), "value": total, "latest": max(row["ts"] for row in rows)}]


class QuietKeyCounter(Processor):
    """Per key, the rows counted until ``gap`` ms of event time pass after the latest one: an event-time
    timer at that time emits the count and the latest time, then forgets the key."""

    output_schema = "key STRING, count BIGINT, last TIMESTAMP"

    def __init__(self, gap: int):
        self.gap = gap

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count", default=0)
        self.last = handle.get_value_state("last")

    def handle_input_rows(self, key, rows, timer_values):
        before = self.last.value()
        latest = max(row["ts"] for row in rows)
        if before is not None:
            latest = max(latest, before)
            self.handle.delete_timer(before + self.gap)  # one timer per key: the latest row's
        self.count.update(self.count.value() + len(rows))
        self.last.update(latest)
        self.handle.register_timer(latest + self.gap)
        return ()

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        row = {"key": key, "count": self.count.value(), "last": self.last.value()}
        self.count.clear()
        self.last.clear()
        return [row]
