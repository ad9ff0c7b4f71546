"""Lesson ``device-sessions``: game sessions per device, with heartbeats and a timeout, in a keyed process
function with map state and event-time timers (Spark's ``transformWithState``).

Devices send game events; each carries the id of the game session it belongs to. Per device, the processor
keeps a *map state* from session id to the session's figures (first and last event, events, points). Two
kinds of rows come out:

- every ``heartbeat`` of event time (on the minute and half-minute by default), a ``heartbeat`` row for each
  session that is open then;
- when a session has had no event for ``timeout`` of event time, a ``closed`` row with its summary, and the
  session leaves the state.

Neither is triggered by a row: both are *timers*. An event-time timer fires in the first batch whose watermark
has reached it, and not before; so a heartbeat at 10:00:30 comes out when the watermark passes 10:00:30,
which, with a ``delay`` of 10 seconds, takes an event at 10:00:40 or later.

Events: ``ts``, ``device`` (the key), ``session`` (the game session id) and ``value`` (points scored).

With ``per_window=D`` the process step's rows go on to a tumbling window of ``D``, per ``kind``, over their
``time``: the step names ``time`` its ``event_time_column`` (Spark's ``eventTimeColumnName``), the event time of
the steps after it, under the same watermark, and the query runs in append mode (Spark chains stateful steps in
append mode only). Each row's time must be later than the previous batch's watermark, or the query fails in
both engines (rule 7 of ``operators/process.py``); a heartbeat or a close comes out when the watermark passes
it, from a timer that waited for it, so it is. With ``per_window=30 seconds``, the window of 10:00:30 holds the
two heartbeats at 10:00:30 and d2's close at 10:00:49, and comes out in batch 6, when the watermark passes
10:01:00.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["kind"], r["device"], r["session"], format_clock(r["time"]))
...                                  for r in batch.rows))
0 []
1 []
2 []
3 [('heartbeat', 'd1', 's1', '10:00:30'), ('heartbeat', 'd2', 's7', '10:00:30')]
4 []
5 [('closed', 'd2', 's7', '10:00:49')]
6 [('closed', 'd1', 's1', '10:01:11'), ('closed', 'd1', 's2', '10:01:25'), ('heartbeat', 'd1', 's1', '10:01:00'), ('heartbeat', 'd1', 's2', '10:01:00')]
"""

from __future__ import annotations

import sys

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.lessons.lesson import BASE_TIME, Lesson, Param
from ministream.operators.process import Processor
from ministream.time.units import format_clock  # noqa: F401  (used by the examples)
from ministream.time.windows import Tumbling


def played(second: float, device: str, session: str, points: float = 1.0) -> dict:
    """A game event ``second`` seconds after 10:00:00 on 2024-01-01 (UTC).

    >>> played(5, "d1", "s1", 3)
    {'ts': 1704103205000, 'device': 'd1', 'session': 's1', 'value': 3.0}
    """
    return {"ts": BASE_TIME + round(second * 1000), "device": device, "session": session, "value": float(points)}


DEFAULT_SCRIPT = [
    [played(2, "d1", "s1", 5), played(4, "d2", "s7", 1), played(9, "d1", "s1", 2)],
    [played(25, "d1", "s1", 3), played(19, "d2", "s7", 4)],
    [played(41, "d1", "s1", 1), played(43, "d1", "s2", 2)],
    [played(12, "d2", "s7", 9), played(55, "d1", "s2", 6)],
    [played(62, "d3", "s9", 1)],
    [played(95, "d3", "s9", 1)],
]
"""Device d1 plays session s1, then s2; d2 plays s7. d2's event at 10:00:12 arrives in batch 3, when the
watermark of batch 2 (10:00:15) has passed it: it is late and dropped. d3's events move the watermark on."""

TRANSFORM_WITH_STATE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
}
"""``transformWithState`` keeps its state in RocksDB only: ``ministream.spark.ROCKSDB_STATE_STORE``, written
out here so that the lesson can be imported without PySpark."""

OUTPUT_SCHEMA = (
    "device STRING, session STRING, kind STRING, time TIMESTAMP, session_start TIMESTAMP, "
    "last_event_time TIMESTAMP, events BIGINT, points DOUBLE"
)
"""One row per heartbeat or closed session, the same in both engines."""


def next_tick(after: int, every: int) -> int:
    """The first multiple of ``every`` (a heartbeat time, aligned on the epoch) strictly after ``after``.

    >>> next_tick(BASE_TIME + 29_999, 30_000) - BASE_TIME, next_tick(BASE_TIME + 30_000, 30_000) - BASE_TIME
    (30000, 60000)
    """
    return (after // every + 1) * every


def session_rows(
    device: str, sessions: dict, done_until: int | None, watermark: int, heartbeat: int, timeout: int
) -> tuple[list[dict], list[str]]:
    """The rows a device owes for event time ``(done_until, watermark]``, and the sessions that closed.

    A session is open from its first event until ``timeout`` after its last one. It has a heartbeat at
    every multiple of ``heartbeat`` while it is open, and closes when ``last_event + timeout <= watermark``.
    Both engines' processors call this when a timer fires, with the device's ``sessions`` (``{session id:
    {"started", "last_event", "events", "points"}}``) as their state holds them.

    >>> s1 = {"started": 2_000, "last_event": 41_000, "events": 4, "points": 11.0}
    >>> rows, closed = session_rows("d1", {"s1": s1}, None, 100_000, heartbeat=30_000, timeout=30_000)
    >>> [(row["kind"], row["time"]) for row in rows], closed
    ([('heartbeat', 30000), ('heartbeat', 60000), ('closed', 71000)], ['s1'])

    """
    rows, closed = [], []
    for session, figures in sessions.items():
        closes_at = figures["last_event"] + timeout

        def row(kind: str, time: int, session=session, figures=figures) -> dict:
            return {
                "device": device,
                "session": session,
                "kind": kind,
                "time": time,
                "session_start": figures["started"],
                "last_event_time": figures["last_event"],
                "events": figures["events"],
                "points": figures["points"],
            }

        first = next_tick(max(figures["started"] - 1, done_until if done_until is not None else -1), heartbeat)
        for tick in range(first, min(watermark, closes_at - 1) + 1, heartbeat):
            rows.append(row("heartbeat", tick))
        if closes_at <= watermark:
            rows.append(row("closed", closes_at))
            closed.append(session)
    return rows, closed


def updated(figures: dict | None, row_ts: int, points: float) -> dict:
    """A session's figures after one more event (a new session when ``figures`` is ``None``).

    >>> updated(None, 5_000, 2.0)
    {'started': 5000, 'last_event': 5000, 'events': 1, 'points': 2.0}
    """
    if figures is None:
        return {"started": row_ts, "last_event": row_ts, "events": 1, "points": points}
    return {
        "started": min(figures["started"], row_ts),
        "last_event": max(figures["last_event"], row_ts),
        "events": figures["events"] + 1,
        "points": figures["points"] + points,
    }


def wake_up_times(sessions: dict, done_until: int | None, heartbeat: int, timeout: int) -> set[int]:
    """When a device needs its timer handler again: each open session's next heartbeat and its timeout.

    >>> sorted(wake_up_times({"s1": {"started": 2_000, "last_event": 41_000}}, 30_000, 30_000, 30_000))
    [60000, 71000]
    """
    times = set()
    for figures in sessions.values():
        times.add(next_tick(max(figures["started"] - 1, done_until if done_until is not None else -1), heartbeat))
        times.add(figures["last_event"] + timeout)
    return times


class DeviceSessions(Processor):
    """Per device, its open sessions in map state; heartbeats and timeouts from event-time timers.

    State per device: ``sessions``, ``{session id: {"started", "last_event", "events", "points"}}``, and
    ``done_until``, the watermark up to which the device's heartbeats and timeouts have been emitted.
    """

    def __init__(self, heartbeat: int, timeout: int):
        self.heartbeat, self.timeout = heartbeat, timeout

    def init(self, handle):
        self.handle = handle
        self.sessions = handle.get_map_state("sessions")
        self.done_until = handle.get_value_state("done_until")

    def handle_input_rows(self, device, rows, timer_values):
        for row in rows:
            self.sessions.put(row["session"], updated(self.sessions.get(row["session"]), row["ts"], row["value"]))
        for time in wake_up_times(dict(self.sessions.items()), self.done_until.value(), self.heartbeat, self.timeout):
            self.handle.register_timer(time)
        return []

    def handle_expired_timer(self, device, timer_values, expired_timer_info):
        # Catch up to the watermark, not just to this timer: a timer registered here would wait for the next
        # batch, and there may be none.
        sessions = dict(self.sessions.items())
        rows, closed = session_rows(
            device, sessions, self.done_until.value(), timer_values.watermark, self.heartbeat, self.timeout
        )
        for session in closed:
            self.sessions.remove(session)
            del sessions[session]
        self.done_until.update(timer_values.watermark)
        for time in wake_up_times(sessions, timer_values.watermark, self.heartbeat, self.timeout):
            self.handle.register_timer(time)
        return rows


def pipeline(script, params) -> Dataflow:
    """ministream: watermark the events, key them by device, run ``DeviceSessions`` in event-time mode; with
    ``per_window``, count its rows per kind in tumbling windows over their ``time``."""
    per_window = params.get("per_window", 0)
    if per_window < 0:
        raise PipelineError(f"--param per_window: a window's size cannot be negative, got {per_window} ms")
    flow = Dataflow("device-sessions")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    sessions = events.key_by("device").process(
        "sessions",
        DeviceSessions(params["heartbeat"], params["timeout"]),
        time_mode="event_time",
        output_mode="append" if per_window else "update",
        output_schema=OUTPUT_SCHEMA,
        event_time_column="time" if per_window else None,  # the event time of the window after it
    )
    if per_window:
        sessions = sessions.key_by("kind").window(
            "per_window", Tumbling(per_window), column="time", rows=Count(), points=Sum("points")
        )
    sessions.sink("output", CollectingSink())
    return flow


def output_mode(params) -> str:
    """Update mode, as the processor emits each row once; append mode with a window after it, as Spark runs
    chained stateful steps in append mode only."""
    return "append" if params.get("per_window", 0) else "update"


def twin(inputs, params):
    """PySpark: ``groupBy("device").transformWithState`` with a ``StatefulProcessor`` that keeps the same map
    state and timers, calling the same ``session_rows``."""
    import datetime

    from pyspark import cloudpickle
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors need no ministream
    heartbeat, timeout = params["heartbeat"], params["timeout"]
    utc = datetime.UTC

    def to_ms(moment):
        return round(moment.timestamp() * 1000)

    def as_figures(value):  # a map-state value arrives as a tuple, in the order of its schema
        return dict(zip(("started", "last_event", "events", "points"), value))

    def to_row(row):
        times = {
            name: datetime.datetime.fromtimestamp(row[name] / 1000, tz=utc)
            for name in ("time", "session_start", "last_event_time")
        }
        return Row(**{**row, **times})

    class DeviceSessionsTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.sessions = handle.getMapState(
                "sessions", "session STRING", "started BIGINT, last_event BIGINT, events BIGINT, points DOUBLE"
            )
            self.done_until = handle.getValueState("done_until", "ms BIGINT")

        def read(self):
            sessions = {key[0]: as_figures(value) for key, value in self.sessions.iterator()}
            done_until = self.done_until.get()[0] if self.done_until.exists() else None
            return sessions, done_until

        def handleInputRows(self, key, rows, timerValues):
            for row in rows:
                old = self.sessions.getValue((row.session,))
                figures = updated(as_figures(old) if old is not None else None, to_ms(row.ts), row.value)
                self.sessions.updateValue((row.session,), tuple(figures.values()))
            sessions, done_until = self.read()
            for time in wake_up_times(sessions, done_until, heartbeat, timeout):
                self.handle.registerTimer(time)
            return iter([])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            sessions, done_until = self.read()
            watermark = timerValues.getCurrentWatermarkInMs()
            rows, closed = session_rows(key[0], sessions, done_until, watermark, heartbeat, timeout)
            for session in closed:
                self.sessions.removeKey((session,))
                del sessions[session]
            self.done_until.update((watermark,))
            for time in wake_up_times(sessions, watermark, heartbeat, timeout):
                self.handle.registerTimer(time)
            return iter([to_row(row) for row in rows])

        def close(self):
            pass

    events = inputs["events"].withWatermark("ts", f"{params['delay']} milliseconds")
    per_window = params.get("per_window", 0)
    if not per_window:
        return events.groupBy("device").transformWithState(DeviceSessionsTwin(), OUTPUT_SCHEMA, "Update", "EventTime")
    sessions = events.groupBy("device").transformWithState(
        DeviceSessionsTwin(), OUTPUT_SCHEMA, "Append", "EventTime", eventTimeColumnName="time"
    )
    return rows_per_window(sessions, per_window)


def rows_per_window(sessions, per_window: int):
    """PySpark: the process step's rows counted per kind in tumbling windows over ``time``, its
    ``eventTimeColumnName``."""
    from pyspark.sql import functions as F

    windows = sessions.groupBy("kind", F.window("time", f"{per_window} milliseconds")).agg(
        F.count("*").alias("rows"), F.sum("points").alias("points")
    )
    return windows.select(
        "kind", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "rows", "points"
    )


def adapter_twin(inputs, params):
    """PySpark through the processor adapter (``spark/processor_adapter.py``): the very same ``DeviceSessions``
    class, run by ``groupBy("device").transformWithState``, with the settings of the pipeline's own step."""
    from ministream.spark.processor_adapter import processor_twin

    events = inputs["events"].withWatermark("ts", f"{params['delay']} milliseconds")
    sessions = processor_twin(events, pipeline([], params).step("sessions").spec, step_name="sessions")
    return rows_per_window(sessions, params["per_window"]) if params.get("per_window", 0) else sessions


def random_script(rng, params) -> list:
    """Random game events: a few devices and sessions, time moving on with jitter, some rows late.

    >>> import random
    >>> script = random_script(random.Random(1), {})
    >>> all(set(row) == {"ts", "device", "session", "value"} for batch in script for row in batch)
    True
    """
    script, now = [], BASE_TIME + rng.randint(0, 30_000)
    for _ in range(rng.randint(3, 6)):
        now += rng.choice([0, 5_000, 15_000, 40_000])
        batch = []
        for _ in range(rng.randint(0, 4)):
            device = rng.choice(["d1", "d2", "d3"])
            batch.append(
                {
                    "ts": now + rng.randint(-25_000, 5_000),
                    "device": device,
                    "session": f"{device}-s{rng.randint(1, 2)}",
                    "value": float(rng.randint(0, 5)),
                }
            )
        script.append(batch)
    return script


LESSON = Lesson(
    name="device-sessions",
    title="Device sessions: map state and event-time timers in a keyed process function (transformWithState)",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("device", str), Field("session", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("heartbeat", 30_000, "event time between two heartbeats of an open session"),
        Param("timeout", 30_000, "a session closes after this long without an event"),
        Param("delay", 10_000, "the watermark delay (how late an event may arrive)"),
        Param(
            "per_window",
            0,
            "when longer than 0, a tumbling window of this size counts the rows per kind over their time, "
            "the process step's event_time_column (append mode)",
            signed=True,
        ),
    ],
    output_mode=output_mode,
    spark_conf=TRANSFORM_WITH_STATE_CONF,
    doc=__doc__,
    random_script=random_script,
)
