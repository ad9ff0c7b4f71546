"""Lesson ``processing-time``: timers on the machine's clock, why Spark cannot be checked against them batch
for batch, and how a manual clock makes them testable.

A watchdog per sensor: each batch that brings readings of a sensor (re)arms a *processing-time timer*
``timeout`` after the batch's timestamp; when a batch starts at or after that time with no reading in between,
the timer fires and the sensor is reported silent. Event time plays no part: the question is "how long has
the *machine* waited?", not "what do the events say?".

Why this cannot be checked against Spark the way the other lessons are:

1. each Spark batch reads the wall clock once, when it starts (its *batch timestamp*); how far apart two
   batches are depends on how busy the machine is, so Spark's output changes from run to run;
2. in processing-time mode ``transformWithState`` asks for another batch after every batch, for ever, in
   case a timer is due: ``processAllAvailable()`` never returns. Spark runs the twin with
   ``spark.sql.streaming.noDataMicroBatches.enabled=false``, so that it runs the script's batches only.

ministream never reads the wall clock: its micro-batch driver moves a ``ManualClock`` to each batch's
timestamp (``run_microbatch(..., batch_timestamps=[...])``), one second apart here, so the same run gives
the same rows every time. To compare, ``compare`` runs Spark first and then ministream with the batch
timestamps Spark wrote in its checkpoint: same processing time, same rows.

Events: ``ts`` (not used), ``key`` (the sensor) and ``value`` (its reading).

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, format_clock(batch.processing_time),
...           [(r["key"], format_clock(r["last_reading_time"]), format_clock(r["alert_time"])) for r in batch.rows])
0 10:00:00 []
1 10:00:01 []
2 10:00:02 []
3 10:00:03 []
4 10:00:04 [('s2', '10:00:01', '10:00:04')]
5 10:00:05 []
6 10:00:06 [('s1', '10:00:03', '10:00:06')]
"""

from __future__ import annotations

import sys

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.state_ttl import SPARK_CONF, batch_timestamps, random_quiet_script
from ministream.operators.process import Processor
from ministream.time.units import format_clock  # noqa: F401  (used by the examples)

DEFAULT_SCRIPT = [
    [event(1, "s1", 20), event(1, "s2", 18)],
    [event(2, "s1", 21), event(2, "s2", 18)],
    [event(3, "s1", 21)],
    [event(4, "s1", 22)],
    [],
    [],
    [],
]
"""Sensor s2 reports in batches 0 and 1, s1 in batches 0 to 3; the last three batches bring nothing, so that
processing time passes (in ministream: one second per batch)."""

OUTPUT_SCHEMA = "key STRING, last_reading_time TIMESTAMP, alert_time TIMESTAMP"


def random_script(rng, params) -> list:
    """Random readings of sensors s1 to s3 (for ``ministream fuzz``), with silences: ``state_ttl.random_quiet_script``.

    >>> import random
    >>> {row["key"] for batch in random_script(random.Random(3), {}) for row in batch} <= {"s1", "s2", "s3"}
    True
    """
    return random_quiet_script(rng, params, keys=("s1", "s2", "s3"))


class Watchdog(Processor):
    """Per sensor: a processing-time timer ``timeout`` after the last batch with a reading of it.

    State per sensor: ``last_reading``, the processing time of the last batch with a reading (until the
    sensor is reported), and the timer.
    """

    def __init__(self, timeout: int):
        self.timeout = timeout

    def init(self, handle):
        self.handle = handle
        self.last_reading = handle.get_value_state("last_reading")

    def handle_input_rows(self, sensor, rows, timer_values):
        for expiry in self.handle.list_timers():  # a reading: re-arm the watchdog
            self.handle.delete_timer(expiry)
        self.last_reading.update(timer_values.processing_time)
        self.handle.register_timer(timer_values.processing_time + self.timeout)
        return []

    def handle_expired_timer(self, sensor, timer_values, expired_timer_info):
        yield {
            "key": sensor,
            "last_reading_time": self.last_reading.value(),
            "alert_time": timer_values.processing_time,
        }
        self.last_reading.clear()  # reported: nothing left to keep for this sensor


def pipeline(script, params) -> Dataflow:
    """ministream: key by sensor, run ``Watchdog`` in processing-time mode."""
    flow = Dataflow("processing-time")
    readings = flow.source("readings", ScriptedSource(script))
    alerts = readings.key_by("key").process(
        "watchdog",
        Watchdog(params["timeout"]),
        time_mode="processing_time",
        output_mode="update",
        output_schema=OUTPUT_SCHEMA,
    )
    alerts.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("key").transformWithState`` in ``ProcessingTime`` mode with the same timers."""
    import datetime

    from pyspark import cloudpickle
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors need no ministream
    timeout = params["timeout"]

    def moment(ms):
        return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)

    class WatchdogTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.last_reading = handle.getValueState("last_reading", "ms BIGINT")

        def handleInputRows(self, key, rows, timerValues):
            for expiry in list(self.handle.listTimers()):
                self.handle.deleteTimer(expiry)
            now = timerValues.getCurrentProcessingTimeInMs()
            self.last_reading.update((now,))
            self.handle.registerTimer(now + timeout)
            return iter([])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            yield Row(
                key=key[0],
                last_reading_time=moment(self.last_reading.get()[0]),
                alert_time=moment(timerValues.getCurrentProcessingTimeInMs()),
            )
            self.last_reading.clear()

        def close(self):
            pass

    return inputs["events"].groupBy("key").transformWithState(WatchdogTwin(), OUTPUT_SCHEMA, "Update", "ProcessingTime")


def adapter_twin(inputs, params):
    """PySpark through the processor adapter (``spark/processor_adapter.py``): the very same ``Watchdog``
    class, its processing-time timers on Spark's, run by ``groupBy("key").transformWithState``."""
    from ministream.spark.processor_adapter import processor_twin

    return processor_twin(inputs["events"], pipeline([], params).step("watchdog").spec, step_name="watchdog")


LESSON = Lesson(
    name="processing-time",
    title="Processing time: timers on the machine's clock, made testable with a manual clock",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[Param("timeout", 2_500, "how long a sensor may stay silent, in processing time")],
    output_mode="update",
    spark_conf=SPARK_CONF,
    doc=__doc__,
    batch_timestamps=batch_timestamps,
    replay_spark_clock=True,
    random_script=random_script,
)
