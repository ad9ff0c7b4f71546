"""Lesson ``session-window``: per key, a count and a sum per session, a burst of events that ends after a gap
of ``gap`` with no event.

Each event opens a session ``[ts, ts + gap)``; sessions of a key that overlap or touch merge, so a session
ends ``gap`` after its last event, and one late-arriving event can bridge two sessions into one. A session is
final only when the watermark passes its end: in **append** mode it is emitted then, once, and removed.
**complete** mode re-emits every session every batch; **update** mode is refused by both engines.

With ``--param gap_by=key`` the gap depends on the row, as in Spark's ``session_window(ts, when(...))``: key
``a`` gets ``gap``, key ``b`` twice as much, and every other key none: Spark drops rows without a positive gap,
and so does ministream, saying so in the trace.

Events: ``ts``, ``key`` (a string), ``value`` (a number). Parameters: ``gap``, ``delay`` of the watermark,
``gap_by`` (``fixed`` or ``key``) and ``mode`` (``append`` or ``complete``).

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["key"], r["window_start"] % 60_000 // 1000,
...                                   r["window_end"] % 60_000 // 1000, r["count"]) for r in batch.rows))
0 []
1 []
2 [('c', 3, 13, 1)]
3 [('a', 1, 34, 5), ('b', 2, 22, 2), ('c', 6, 16, 1)]
4 []
5 [('b', 40, 50, 1)]
"""

from __future__ import annotations

import random as _random

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param, event
from ministream.time.units import format_duration
from ministream.time.windows import Session

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(4, "a", 2), event(2, "b", 10)],
    [event(20, "a", 3), event(12, "b", 1), event(3, "c", 5)],
    [event(12, "a", 4), event(40, "b", 2)],
    [event(4, "c", 1), event(24, "a", 1), event(6, "c", 2)],
    [event(60, "d", 1)],
]


def sessions(params) -> Session:
    """The lesson's session windows: a fixed gap, or with ``gap_by=key`` a gap per key (``a``: gap, ``b``:
    twice the gap, other keys: none, so their rows are dropped)."""
    if params["gap_by"] == "fixed":
        return Session(params["gap"])
    gaps = {"a": params["gap"], "b": 2 * params["gap"]}
    return Session(
        lambda row: gaps.get(row["key"]),
        label=f"{format_duration(gaps['a'])} for key a, {format_duration(gaps['b'])} for b, none else",
    )


def pipeline(script, params) -> Dataflow:
    """ministream: a watermark on ``ts``, then per key and per session a count and a sum."""
    flow = Dataflow("session-window")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    per_session = events.key_by("key").window("sessions", sessions(params), count=Count(), sum=Sum("value"))
    per_session.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``withWatermark``, then ``groupBy(key, session_window(ts, gap)).agg(...)``; with
    ``gap_by=key`` the gap is a column, ``when(key == 'a', ...).when(key == 'b', ...)`` with no ``otherwise``."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    gap = format_duration(params["gap"])
    if params["gap_by"] == "key":
        gap = F.when(F.col("key") == "a", gap).when(F.col("key") == "b", format_duration(2 * params["gap"]))
    per_session = events.groupBy("key", F.session_window("ts", gap)).agg(
        F.count("*").alias("count"), F.sum("value").alias("sum")
    )
    return per_session.select(
        "key",
        F.col("session_window.start").alias("window_start"),
        F.col("session_window.end").alias("window_end"),
        "count",
        "sum",
    )


def random_session_script(rng: _random.Random, params: dict, keys=("a", "b", "c")) -> list[list[dict]]:
    """A random script of 3 to 5 short batches aimed at the edges of session windows: events exactly ``gap``
    after (or before) another of their key, events that bridge two sessions, events whose session ends
    exactly on the watermark that filters late rows (or 1 ms either side), late and out-of-order events,
    duplicates and empty batches; half of the scripts end with a row far ahead, whose watermark makes every
    session final. Values are small whole numbers, so sums are exact.

    >>> script = random_session_script(_random.Random(3), {"gap": 10_000, "delay": 5_000})
    >>> 3 <= len(script) <= 5 and script[-1] != []
    True
    """
    gap, delay = params["gap"], params["delay"]
    latest = BASE_TIME + rng.randrange(0, 5) * 1_000  # the largest event time so far
    watermarks = [0]  # watermarks[k] = WM_k, the watermark of batch k
    seen: list[dict] = []  # every row drawn so far, to copy as a duplicate or to aim a gap edge at
    script = []
    batches = rng.randint(3, 5)
    for batch_id in range(batches):
        late_watermark = watermarks[max(batch_id - 1, 0)]
        rows = []
        if batch_id == batches - 1 or rng.random() >= 0.15:  # else an empty batch (never the last)
            for _ in range(rng.randint(1, 4)):
                if seen and rng.random() < 0.1:
                    row = dict(rng.choice(seen))  # a duplicate
                else:
                    key = rng.choice(keys)
                    ts = _session_timestamp(
                        rng, latest, late_watermark, gap, [r["ts"] for r in seen if r["key"] == key]
                    )
                    row = {"ts": ts, "key": key, "value": float(rng.randint(1, 9))}
                rows.append(row)
                seen.append(row)
                latest = max(latest, row["ts"])
        if batch_id == batches - 1 and rng.random() < 0.5:  # a row far ahead: every session becomes final
            rows.append({"ts": latest + 2 * gap + delay, "key": "z", "value": 1.0})
        script.append(rows)
        batch_max = max((row["ts"] for row in rows), default=None)
        proposal = watermarks[-1] if batch_max is None else batch_max - delay
        watermarks.append(max(watermarks[-1], proposal))  # never goes down
    return script


def _session_timestamp(rng, latest: int, late_watermark: int, gap: int, same_key: list[int]) -> int:
    """One event time, of a kind drawn at random (see :func:`random_session_script`)."""
    kind = rng.choice(["in order", "in order", "out of order", "late edge", "gap edge", "bridge"])
    jitter = rng.choice([-1, 0, 0, 1])
    if kind == "late edge" and late_watermark > 0:
        return late_watermark - gap + jitter  # its session ends on the late rows' watermark
    if kind == "gap edge" and same_key:
        return rng.choice(same_key) + rng.choice([gap, -gap]) + jitter
    if kind == "bridge" and len(same_key) >= 2:
        first, second = sorted(rng.sample(same_key, 2))
        return (first + second) // 2
    if kind == "out of order":
        return latest - rng.randrange(0, 2 * gap, 1_000)
    return latest + rng.randrange(0, 2 * gap, 1_000)


LESSON = Lesson(
    name="session-window",
    title="Session windows: per key, a count and a sum per burst of events, merged until a gap of inactivity",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("gap", 10_000, "how long a session waits for the next event of its key"),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
        Param(
            "gap_by",
            "fixed",
            "fixed: one gap for every key; key: a gap per key (a: gap, b: twice it, others: none, so dropped)",
            kind="choice",
            choices=("fixed", "key"),
        ),
        Param(
            "mode",
            "append",
            "output mode: append (each session once, when final) or complete (every session, every batch)",
            kind="choice",
            choices=("append", "complete"),
        ),
    ],
    output_mode=lambda params: params["mode"],
    doc=__doc__,
    random_script=random_session_script,
)
