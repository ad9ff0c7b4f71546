"""Lesson ``game-heartbeats``: game sessions kept alive by processing-time heartbeats, closed by an end event or
by a timeout (the seed's gaming case, Spark's ``transformWithState`` in ``ProcessingTime`` mode).

Devices send game events: ``start``, ``play`` and ``end``, each with the id of the game session it belongs to.
Per device, the processor keeps a *map state* from session id to the session's figures, and one
*processing-time timer* per distinct wake-up time of its open sessions. Three kinds of rows come out:

- ``heartbeat``: every ``heartbeat`` of processing time after its start (10:00:02, 10:00:04... for a session
  opened at 10:00:00), an open session reports that it is alive, with its figures so far;
- ``ended``: an ``end`` event closes its session at once, with a summary row (the batch's other events of the
  session count in it);
- ``timed_out``: a session that got no event for ``timeout`` of processing time is closed with a summary row.

Processing time is the *batch timestamp* (``processing-time`` lesson): ministream's batches run one second
apart from 10:00:00; Spark's batches read the wall clock, so ``compare`` runs Spark first and then ministream
on the timestamps Spark recorded. Whatever the timestamps, the rules are the same in both engines, because
both call the same functions here (:func:`opened_or_played`, :func:`due_rows`, :func:`wake_up`).

Rules (per device, ``now`` the batch timestamp):

1. rows first (``handle_input_rows``): each session that has rows in the batch is opened if new (an event of an
   unknown session opens it, whatever its kind), its ``last_event`` becomes ``now``, its events and points
   grow; if one of its rows is an ``end``, it is closed at once (``ended``) and leaves the state;
2. then the timers due (``expiry <= now``): the handler looks at *every* session of the device, not only the
   one the timer was for: a session whose ``last_event + timeout <= now`` is closed (``timed_out``), else one
   whose next heartbeat is ``<= now`` sends one heartbeat and schedules the next on its grid (``started +
   k * heartbeat``, the first after ``now``: a batch that comes late sends one heartbeat, not a burst);
3. each session's wake-up time is the earlier of its next heartbeat and its timeout; the device keeps one timer
   per distinct wake-up time after ``now``; a timer due in this batch is left alone (it fires, and finds
   nothing left to do if another timer's handler did it).

Events: ``ts`` (not used: this is processing time), ``device`` (the key), ``session``, ``kind`` (``start``,
``play`` or ``end``) and ``value`` (points scored).

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, format_clock(batch.processing_time),
...           sorted((r["kind"], r["session"], r["events"]) for r in batch.rows))
0 10:00:00 []
1 10:00:01 []
2 10:00:02 [('heartbeat', 'a1', 2), ('heartbeat', 'b1', 2)]
3 10:00:03 [('ended', 'b1', 4), ('heartbeat', 'a2', 1)]
4 10:00:04 [('heartbeat', 'a1', 2)]
5 10:00:05 [('heartbeat', 'a2', 1)]
6 10:00:06 [('heartbeat', 'a1', 2), ('timed_out', 'a2', 1)]
7 10:00:07 [('timed_out', 'a1', 2)]
"""

from __future__ import annotations

import sys

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param
from ministream.lessons.state_ttl import PROCESSING_TIME_STEP, SPARK_CONF, batch_timestamps
from ministream.operators.process import Processor
from ministream.time.units import format_clock  # noqa: F401  (used by the examples)

KINDS = ("start", "play", "end")
"""The kinds of game event."""


def game(device: str, session: str, kind: str, points: float = 0.0, batch: int = 0) -> dict:
    """A game event of ``device`` in ``session``; its ``ts`` is the time of its batch (it plays no part).

    >>> game("d1", "a1", "start")
    {'ts': 1704103200000, 'device': 'd1', 'session': 'a1', 'kind': 'start', 'value': 0.0}
    """
    ts = BASE_TIME + batch * PROCESSING_TIME_STEP
    return {"ts": ts, "device": device, "session": session, "kind": kind, "value": float(points)}


DEFAULT_SCRIPT = [
    [game("d1", "a1", "start"), game("d2", "b1", "start")],
    [game("d1", "a2", "start", batch=1), game("d2", "b1", "play", 3, batch=1)],
    [game("d1", "a1", "play", 5, batch=2)],
    [game("d2", "b1", "play", 1, batch=3), game("d2", "b1", "end", batch=3)],
    [],
    [],
    [],
    [],
]
"""d1 opens a1 then a2 and plays a1 once; d2 opens b1, plays it and ends it in batch 3. The empty batches let
processing time pass: a1 and a2 send heartbeats, then time out."""

STATE_SCHEMA = "started BIGINT, last_event BIGINT, next_beat BIGINT, events BIGINT, points DOUBLE"
"""A session's figures in map state, in both engines: ``(started, last_event, next_beat, events, points)``."""

OUTPUT_SCHEMA = (
    "device STRING, session STRING, kind STRING, time TIMESTAMP, started TIMESTAMP, last_event TIMESTAMP, "
    "events BIGINT, points DOUBLE"
)
"""One row per heartbeat, ended session or timed-out session, the same in both engines."""


def opened_or_played(figures: tuple | None, rows: list[dict], now: int, heartbeat: int) -> tuple:
    """A session's figures after this batch's rows of it (a new session when ``figures`` is ``None``).

    >>> opened_or_played(None, [{"kind": "start", "value": 0.0}], 1_000, 2_000)
    (1000, 1000, 3000, 1, 0.0)
    >>> opened_or_played((1_000, 1_000, 3_000, 1, 0.0), [{"kind": "play", "value": 4.0}], 2_000, 2_000)
    (1000, 2000, 3000, 2, 4.0)
    """
    started, _, next_beat, events, points = figures if figures is not None else (now, now, now + heartbeat, 0, 0.0)
    return (started, now, next_beat, events + len(rows), points + sum(row["value"] for row in rows))


def wake_up(figures: tuple, timeout: int) -> int:
    """When a session needs its device's timer: the earlier of its next heartbeat and its timeout.

    >>> wake_up((0, 5_000, 6_000, 2, 1.0), timeout=3_000), wake_up((0, 5_000, 9_000, 2, 1.0), timeout=3_000)
    (6000, 8000)
    """
    _, last_event, next_beat, _, _ = figures
    return min(next_beat, last_event + timeout)


def summary(device: str, session: str, kind: str, now: int, figures: tuple) -> dict:
    """The row a session sends: a heartbeat, or its summary when it closes.

    >>> summary("d1", "a1", "ended", 9, (1, 5, 7, 2, 3.0))
    {'device': 'd1', 'session': 'a1', 'kind': 'ended', 'time': 9, 'started': 1, 'last_event': 5, 'events': 2, 'points': 3.0}
    """
    started, last_event, _, events, points = figures
    return {
        "device": device,
        "session": session,
        "kind": kind,
        "time": now,
        "started": started,
        "last_event": last_event,
        "events": events,
        "points": points,
    }


def due_rows(
    device: str, sessions: dict, now: int, heartbeat: int, timeout: int
) -> tuple[list[dict], dict[str, tuple], list[str]]:
    """Rule 2, what a device's timer handler does at ``now``: the rows due, the sessions whose figures changed
    (a heartbeat moves its next one on), and the sessions that timed out.

    >>> rows, changed, closed = due_rows("d1", {"a1": (0, 0, 2_000, 1, 0.0), "a2": (0, 1_000, 4_000, 1, 0.0)},
    ...                                  now=4_500, heartbeat=2_000, timeout=4_000)
    >>> [(row["kind"], row["session"]) for row in rows], changed, closed
    ([('timed_out', 'a1'), ('heartbeat', 'a2')], {'a2': (0, 1000, 6000, 1, 0.0)}, ['a1'])
    """
    rows, changed, closed = [], {}, []
    for session, figures in sessions.items():
        started, last_event, next_beat, events, points = figures
        if last_event + timeout <= now:
            rows.append(summary(device, session, "timed_out", now, figures))
            closed.append(session)
        elif next_beat <= now:
            rows.append(summary(device, session, "heartbeat", now, figures))
            following = started + ((now - started) // heartbeat + 1) * heartbeat  # the grid's first tick after now
            changed[session] = (started, last_event, following, events, points)
    return rows, changed, closed


def timers_to_change(wanted: set[int], registered: list[int], now: int) -> tuple[list[int], list[int]]:
    """Rule 3: ``(to register, to delete)`` for a device whose sessions wake up at ``wanted``; a registered
    timer at or before ``now`` is due in this batch and is left alone.

    >>> timers_to_change({7_000, 9_000}, [5_000, 7_000, 8_000], now=6_000)
    ([9000], [8000])
    """
    register = sorted(wanted - set(registered))
    delete = [expiry for expiry in registered if expiry > now and expiry not in wanted]
    return register, delete


class GameHeartbeats(Processor):
    """Per device, its open sessions in map state; heartbeats and timeouts from processing-time timers.

    State per device: ``sessions``, ``{session id: (started, last_event, next_beat, events, points)}`` (times in
    processing time, ms), and its timers, one per distinct wake-up time of its sessions.
    """

    def __init__(self, heartbeat: int, timeout: int):
        self.heartbeat, self.timeout = heartbeat, timeout

    def init(self, handle):
        self.handle = handle
        self.sessions = handle.get_map_state("sessions")

    def handle_input_rows(self, device, rows, timer_values):
        now = timer_values.processing_time
        by_session: dict[str, list[dict]] = {}  # {session id: its rows of this batch}
        for row in rows:
            by_session.setdefault(row["session"], []).append(row)
        out = []
        for session, its_rows in by_session.items():
            figures = opened_or_played(self.sessions.get(session), its_rows, now, self.heartbeat)
            if any(row["kind"] == "end" for row in its_rows):
                out.append(summary(device, session, "ended", now, figures))
                self.sessions.remove(session)
            else:
                self.sessions.put(session, figures)
        self._set_timers(now, self.sessions.items())
        return out

    def handle_expired_timer(self, device, timer_values, expired_timer_info):
        now = timer_values.processing_time
        sessions = dict(self.sessions.items())
        rows, changed, closed = due_rows(device, sessions, now, self.heartbeat, self.timeout)
        for session, figures in changed.items():
            self.sessions.put(session, figures)
            sessions[session] = figures
        for session in closed:
            self.sessions.remove(session)
            del sessions[session]
        self._set_timers(now, sessions.items())
        return rows

    def _set_timers(self, now: int, sessions) -> None:
        """Rule 3 for this device, whose ``sessions`` are ``(session id, figures)`` pairs."""
        wanted = {wake_up(figures, self.timeout) for _, figures in sessions}
        register, delete = timers_to_change(wanted, self.handle.list_timers(), now)
        for expiry in delete:
            self.handle.delete_timer(expiry)
        for expiry in register:
            self.handle.register_timer(expiry)


def pipeline(script, params) -> Dataflow:
    """ministream: key the events by device, run ``GameHeartbeats`` in processing-time mode."""
    flow = Dataflow("game-heartbeats")
    events = flow.source("events", ScriptedSource(script))
    sessions = events.key_by("device").process(
        "sessions",
        GameHeartbeats(params["heartbeat"], params["timeout"]),
        time_mode="processing_time",
        output_mode="update",
        output_schema=OUTPUT_SCHEMA,
    )
    sessions.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("device").transformWithState`` in ``ProcessingTime`` mode, with the same map state and
    timers, calling the same functions."""
    import datetime

    from pyspark import cloudpickle
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors need no ministream
    heartbeat, timeout = params["heartbeat"], params["timeout"]
    utc = datetime.UTC

    def to_row(row):
        times = {
            name: datetime.datetime.fromtimestamp(row[name] / 1000, tz=utc)
            for name in ("time", "started", "last_event")
        }
        return Row(**{**row, **times})

    class GameHeartbeatsTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.sessions = handle.getMapState("sessions", "session STRING", STATE_SCHEMA)

        def read(self):
            return {key[0]: tuple(value) for key, value in self.sessions.iterator()}

        def set_timers(self, now, sessions):
            wanted = {wake_up(figures, timeout) for figures in sessions.values()}
            register, delete = timers_to_change(wanted, list(self.handle.listTimers()), now)
            for expiry in delete:
                self.handle.deleteTimer(expiry)
            for expiry in register:
                self.handle.registerTimer(expiry)

        def handleInputRows(self, key, rows, timerValues):
            now = timerValues.getCurrentProcessingTimeInMs()
            by_session = {}
            for frame in rows:  # Python transformWithState hands the rows over as pandas-free Row iterators
                row = {"kind": frame.kind, "value": frame.value}
                by_session.setdefault(frame.session, []).append(row)
            out = []
            sessions = self.read()  # the device's map, read once: each call to the state server is a round trip
            for session, its_rows in by_session.items():
                figures = opened_or_played(sessions.get(session), its_rows, now, heartbeat)
                if any(row["kind"] == "end" for row in its_rows):
                    out.append(to_row(summary(key[0], session, "ended", now, figures)))
                    self.sessions.removeKey((session,))
                    sessions.pop(session, None)
                else:
                    self.sessions.updateValue((session,), figures)
                    sessions[session] = figures
            self.set_timers(now, sessions)
            return iter(out)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            now = timerValues.getCurrentProcessingTimeInMs()
            sessions = self.read()
            rows, changed, closed = due_rows(key[0], sessions, now, heartbeat, timeout)
            for session, figures in changed.items():
                self.sessions.updateValue((session,), figures)
                sessions[session] = figures
            for session in closed:
                self.sessions.removeKey((session,))
                del sessions[session]
            self.set_timers(now, sessions)
            return iter([to_row(row) for row in rows])

        def close(self):
            pass

    return (
        inputs["events"]
        .groupBy("device")
        .transformWithState(GameHeartbeatsTwin(), OUTPUT_SCHEMA, "Update", "ProcessingTime")
    )


def random_script(rng, params) -> list:
    """Random game events (for ``ministream fuzz``): two or three devices with a few sessions each, that start,
    play and end in random batches, and runs of empty batches in which processing time passes and sessions
    send heartbeats or time out.

    >>> import random
    >>> script = random_script(random.Random(3), {})
    >>> {row["kind"] for batch in script for row in batch} <= set(KINDS)
    True
    """
    script = []
    for batch_id in range(rng.randint(4, 9)):
        rows = []
        if rng.random() >= 0.4:  # else an empty batch: only processing time moves
            for _ in range(rng.randint(1, 4)):
                device = rng.choice(["d1", "d2", "d3"])
                session = f"{device}-s{rng.randint(1, 3)}"
                kind = rng.choices(KINDS, weights=(3, 5, 2))[0]
                rows.append(game(device, session, kind, rng.randint(0, 5), batch=batch_id))
        script.append(rows)
    script += [[] for _ in range(rng.choice([0, 2, 4, 6]))]  # silence at the end: heartbeats and timeouts
    return script


LESSON = Lesson(
    name="game-heartbeats",
    title="Game heartbeats: per device, map state of sessions, processing-time heartbeats, timeouts and end events",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("device", str), Field("session", str), Field("kind", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("heartbeat", 2_000, "processing time between two heartbeats of an open session (the seed's: 30 s)"),
        Param("timeout", 4_500, "a session closes after this long without an event, in processing time"),
    ],
    output_mode="update",
    spark_conf=SPARK_CONF,
    doc=__doc__,
    batch_timestamps=batch_timestamps,
    replay_spark_clock=True,
    random_script=random_script,
)
