"""Lesson ``deduplication``: keep the first copy of each event, and when its key may be forgotten.

A source that retries sends some events twice or more. Deduplication keeps the first row of each key and
drops the copies; the key stays in state so that later copies are recognized. The three ways (``--param
key=...``) differ in when a key is forgotten:

- ``id``: ``dropDuplicates(["event_id"])``: never (the state grows forever), though late rows are dropped;
- ``id_and_time``: ``dropDuplicates(["event_id", "ts"])``: when ``ts <= WM``; a retry stamped with a new time
  is then a new key, so it is not recognized as a copy;
- ``within``: ``dropDuplicatesWithinWatermark(["event_id"])``: ``delay`` after the first copy's time, once
  ``WM >= ts + delay``: copies are assumed to come within the watermark delay.

``--param keep=id`` keeps only ``event_id`` in the output (``select("event_id")`` after the deduplication).
Nothing then reads ``ts`` after the deduplication, so Spark's optimizer prunes it below it, and a
deduplication by ``event_id`` alone drops no late row (``core/pruning.py``): e7, new but late, comes out.

>>> for key in ("id", "id_and_time", "within"):
...     run = LESSON.run(params={"key": key})
...     print(key, [sorted(row["event_id"] for row in batch.rows) for batch in run.output()])
id [['e1', 'e2'], ['e3'], ['e4'], ['e5'], ['e6'], []]
id_and_time [['e1', 'e2'], ['e3'], ['e1', 'e4'], ['e5'], ['e6'], ['e3']]
within [['e1', 'e2'], ['e3'], ['e4'], ['e5'], ['e6'], ['e3']]
>>> [batch.rows for batch in LESSON.run(params={"keep": "id"}).output()][3]
[{'event_id': 'e5'}, {'event_id': 'e7'}]
"""

from __future__ import annotations

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param, event


def sent(second: float, event_id: str) -> dict:
    """One copy of event ``event_id`` stamped ``second`` seconds after 10:00:00 on 2024-01-01 (UTC)."""
    return {"ts": event(second, "")["ts"], "event_id": event_id}


DEFAULT_SCRIPT = [
    [sent(1, "e1"), sent(2, "e2"), sent(1, "e1")],
    [sent(1, "e1"), sent(15, "e3"), sent(2, "e2")],
    [sent(30, "e4"), sent(15, "e3"), sent(6, "e1")],
    [sent(40, "e5"), sent(2, "e2"), sent(3, "e7")],
    [sent(60, "e6"), sent(30, "e4")],
    [sent(35, "e3")],
]
"""Exact retries (e1@1, e2@2, e3@15, e4@30), retries stamped anew (e1@6, e3@35), and in batch 3, when they are
late (at or before the watermark of batch 2, 10:00:05), e2@2 once more and a new event, e7@3."""


def random_script(rng, params) -> list:
    """Random events with exact copies, copies stamped anew and late copies (for ``ministream fuzz``).

    >>> import random
    >>> all("event_id" in row for batch in random_script(random.Random(3), {}) for row in batch)
    True
    """
    script, sent_so_far, now = [], [], BASE_TIME
    for _ in range(rng.randint(2, 5)):
        now += rng.choice([0, 2_000, 8_000, 20_000])
        batch = [
            {"ts": now + rng.randint(-2_000, 2_000), "event_id": f"e{rng.randint(1, 5)}"}
            for _ in range(rng.randint(0, 3))
        ]
        for copy in rng.sample(sent_so_far, min(len(sent_so_far), rng.randint(0, 2))):
            batch.append(dict(copy, ts=copy["ts"] + rng.choice([0, 0, 1, 5_000])))
        sent_so_far += batch
        script.append(batch)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: watermark the events, then keep the first row per key."""
    flow = Dataflow("deduplication")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    columns = ["event_id", "ts"] if params["key"] == "id_and_time" else ["event_id"]
    unique = events.drop_duplicates("dedup", columns, within_watermark=params["key"] == "within")
    if params["keep"] == "id":  # nothing reads ts after the deduplication: Spark prunes it
        unique = unique.select("ids", event_id="event_id")
    unique.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``dropDuplicates`` or ``dropDuplicatesWithinWatermark`` after ``withWatermark``."""
    events = inputs["events"].withWatermark("ts", f"{params['delay']} milliseconds")
    if params["key"] == "within":
        unique = events.dropDuplicatesWithinWatermark(["event_id"])
    else:
        unique = events.dropDuplicates(["event_id", "ts"] if params["key"] == "id_and_time" else ["event_id"])
    return unique.select("event_id") if params["keep"] == "id" else unique


LESSON = Lesson(
    name="deduplication",
    title="Deduplication: the first copy of each event, and when its key may be forgotten",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("event_id", str)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "key",
            "id",
            "id (dropDuplicates(event_id)), id_and_time (dropDuplicates(event_id, ts)) or "
            "within (dropDuplicatesWithinWatermark(event_id))",
            kind="choice",
            choices=("id", "id_and_time", "within"),
        ),
        Param(
            "keep",
            "all",
            "the output's columns: all, or id (select(event_id) after the deduplication: Spark then prunes ts "
            "below it, and a deduplication by event_id drops no late row)",
            kind="choice",
            choices=("all", "id"),
        ),
        Param("delay", 10_000, "watermark delay"),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
