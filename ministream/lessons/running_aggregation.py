"""Lesson ``running-aggregation``: a count and a sum per key, kept in keyed state and updated every batch.

The simplest stateful stream: for each key, how many events so far and the sum of their ``value``. The state
is one accumulator per key; it never shrinks, because without event time and a watermark nothing tells the
engine that a key is finished. That is also why the output modes that fit are:

- **update**: each batch emits the keys it touched, with their new totals;
- **complete**: each batch emits every key, touched or not.

(**append**, which would emit each key once and for all, is refused by both engines: see the tutorial.)

Events: ``ts`` (not used here), ``key`` (a string), ``value`` (a number).

>>> run = LESSON.run(params={"mode": "update"})
>>> for batch in run.output():
...     print(batch.batch_id, sorted((r["key"], r["count"], r["sum"]) for r in batch.rows))
0 [('a', 2, 4.0), ('b', 1, 10.0)]
1 [('a', 3, 9.0), ('c', 1, 1.0)]
2 [('b', 3, 13.0)]
"""

from __future__ import annotations

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(2, "b", 10), event(3, "a", 3)],
    [event(4, "a", 5), event(5, "c", 1)],
    [event(6, "b", 2), event(7, "b", 1)],
]


def pipeline(script, params) -> Dataflow:
    """ministream: key by ``key``, then a running count and sum per key."""
    flow = Dataflow("running-aggregation")
    events = flow.source("events", ScriptedSource(script))
    totals = events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value"))
    totals.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("key").agg(count, sum)`` on the streaming DataFrame of events."""
    from pyspark.sql import functions as F

    events = inputs["events"]
    return events.groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


LESSON = Lesson(
    name="running-aggregation",
    title="Running aggregation: a count and a sum per key, in update and complete mode",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "mode",
            "update",
            "output mode: update (keys a batch touched) or complete (every key)",
            kind="choice",
            choices=("update", "complete"),
        )
    ],
    output_mode=lambda params: params["mode"],
    doc=__doc__,
)
