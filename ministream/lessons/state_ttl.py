"""Lesson ``state-ttl``: keyed state with a time-to-live, and what a learner sees when it expires.

A site remembers, per user, how many visits it has seen and the last few values, but only for ``ttl`` of
processing time after the last write: state that nobody writes again goes away by itself, so the state
cannot grow for ever. The processor keeps two state variables with a time-to-live:

- ``visits``, a value state: one expiry for the whole value, renewed at every update;
- ``recent``, a list state: each element has its own expiry, stamped when it was appended.

What a learner sees when state expires: the user is a stranger again (``remembered`` drops to 0 and
``recent`` is empty), in the first batch whose timestamp is at or after the expiry, even before the cleanup
at the end of that batch has removed the entry (the trace shows the cleanup, and the state size falls).

A time-to-live counts **processing time**, so it needs ``time_mode="processing_time"`` (Spark refuses TTL in
the other modes). ministream's batches run at fixed batch timestamps, one second apart from 10:00:00, so its
output is always the same. Spark's batches read the wall clock, so its output depends on how long each batch
took: ``compare`` runs Spark first and then ministream with Spark's batch timestamps.

Events: ``ts`` (not used), ``key`` (the user) and ``value``.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, format_clock(batch.processing_time),
...           sorted((r["key"], r["remembered"], r["visits"], r["recent"]) for r in batch.rows))
0 10:00:00 [('a', 0, 1, [1.0]), ('b', 0, 1, [5.0])]
1 10:00:01 [('a', 1, 2, [1.0, 2.0])]
2 10:00:02 [('b', 0, 1, [1.0])]
3 10:00:03 []
4 10:00:04 [('a', 0, 1, [4.0])]
"""

from __future__ import annotations

import sys

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.device_sessions import TRANSFORM_WITH_STATE_CONF
from ministream.lessons.lesson import BASE_TIME, Lesson, Param, event
from ministream.operators.process import Processor
from ministream.time.units import format_clock  # noqa: F401  (used by the examples)

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(1, "b", 5)],
    [event(2, "a", 2)],
    [event(3, "b", 1)],
    [],
    [event(5, "a", 4)],
]
"""User ``a`` visits in batches 0, 1 and 4, user ``b`` in batches 0 and 2; batch 3 has no event at all."""

PROCESSING_TIME_STEP = 1_000
"""ministream's batch k runs at processing time 10:00:00 + k seconds."""

OUTPUT_SCHEMA = "key STRING, remembered BIGINT, visits BIGINT, recent ARRAY<DOUBLE>, processing_time TIMESTAMP"

SPARK_CONF = {**TRANSFORM_WITH_STATE_CONF, "spark.sql.streaming.noDataMicroBatches.enabled": "false"}
"""RocksDB state, and no no-data batches: in processing-time mode Spark would otherwise run one after the
other, for ever (see the ``processing-time`` lesson)."""


def batch_timestamps(script, params) -> list[int]:
    """ministream's processing time for each batch of ``script``: one second apart from 10:00:00.

    >>> [format_clock(t) for t in batch_timestamps([[], [], []], {})]
    ['10:00:00', '10:00:01', '10:00:02']
    """
    return [BASE_TIME + k * PROCESSING_TIME_STEP for k in range(len(script))]


def random_quiet_script(rng, params, keys=("a", "b", "c")) -> list:
    """Random events for the processing-time lessons (for ``ministream fuzz``): a few keys, each batch brings
    some of them, and runs of empty batches let processing time pass with no write, so that state outlives
    its time-to-live and timers come due; the script often ends with such a run. (An events file cannot hold
    trailing empty batches: a failure replayed from one has them cut.)

    >>> import random
    >>> script = random_quiet_script(random.Random(3), LESSON.resolve_params())
    >>> 4 <= len(script) <= 12 and {row["key"] for batch in script for row in batch} <= {"a", "b", "c"}
    True
    """
    script = []
    for batch_id in range(rng.randint(4, 8)):
        rows = []
        if rng.random() >= 0.35:  # else an empty batch: only processing time moves
            for key in keys:
                for _ in range(rng.choice([0, 0, 1, 1, 2])):
                    rows.append(
                        {
                            "ts": BASE_TIME + batch_id * PROCESSING_TIME_STEP,
                            "key": key,
                            "value": float(rng.randint(1, 9)),
                        }
                    )
        script.append(rows)
    script += [[] for _ in range(rng.choice([0, 2, 3, 4]))]  # silence at the end: state expires, timers fire
    return script


class VisitMemory(Processor):
    """Per user: ``visits`` (a value state) and ``recent`` values (a list state), both with a time-to-live."""

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.visits = handle.get_value_state("visits", default=0, ttl=self.ttl)
        self.recent = handle.get_list_state("recent", ttl=self.ttl)

    def handle_input_rows(self, user, rows, timer_values):
        remembered = self.visits.value()  # 0 when never seen, or forgotten
        self.visits.update(remembered + len(rows))
        for row in rows:
            self.recent.add(row["value"])
        yield {
            "key": user,
            "remembered": remembered,
            "visits": self.visits.value(),
            "recent": self.recent.get(),
            "processing_time": timer_values.processing_time,
        }


def pipeline(script, params) -> Dataflow:
    """ministream: key by user, run ``VisitMemory`` in processing-time mode."""
    flow = Dataflow("state-ttl")
    events = flow.source("events", ScriptedSource(script))
    visits = events.key_by("key").process(
        "visits",
        VisitMemory(params["ttl"]),
        time_mode="processing_time",
        output_mode="update",
        output_schema=OUTPUT_SCHEMA,
    )
    visits.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("key").transformWithState`` in ``ProcessingTime`` mode, with ``ttlDurationMs`` on
    both state variables."""
    import datetime

    from pyspark import cloudpickle
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors need no ministream
    ttl = params["ttl"]

    class VisitMemoryTwin(StatefulProcessor):
        def init(self, handle):
            self.visits = handle.getValueState("visits", "visits BIGINT", ttl)
            self.recent = handle.getListState("recent", "value DOUBLE", ttl)

        def handleInputRows(self, key, rows, timerValues):
            rows = list(rows)
            remembered = self.visits.get()[0] if self.visits.exists() else 0
            self.visits.update((remembered + len(rows),))
            for row in rows:
                self.recent.appendValue((row.value,))
            now = timerValues.getCurrentProcessingTimeInMs()
            yield Row(
                key=key[0],
                remembered=remembered,
                visits=remembered + len(rows),
                recent=[item[0] for item in self.recent.get()],
                processing_time=datetime.datetime.fromtimestamp(now / 1000, tz=datetime.UTC),
            )

        def close(self):
            pass

    return (
        inputs["events"].groupBy("key").transformWithState(VisitMemoryTwin(), OUTPUT_SCHEMA, "Update", "ProcessingTime")
    )


def adapter_twin(inputs, params):
    """PySpark through the processor adapter (``spark/processor_adapter.py``): the very same ``VisitMemory``
    class, its TTL state over Spark's, run by ``groupBy("key").transformWithState``."""
    from ministream.spark.processor_adapter import processor_twin

    return processor_twin(inputs["events"], pipeline([], params).step("visits").spec, step_name="visits")


LESSON = Lesson(
    name="state-ttl",
    title="State TTL: keyed state that expires after a time-to-live of processing time",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[Param("ttl", 2_000, "how long state lives after its last write, in processing time")],
    output_mode="update",
    spark_conf=SPARK_CONF,
    doc=__doc__,
    batch_timestamps=batch_timestamps,
    replay_spark_clock=True,
    random_script=random_quiet_script,
)
