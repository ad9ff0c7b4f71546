"""Lesson ``enrichment-join``: each trip of a stream joined with a table of drivers (a stream-static join),
inner or left outer, with a table that changes between batches; nothing is kept in state.

Trips (``driver``, ``fare``, ``ts``) arrive in micro-batches; ``DRIVERS`` is a table of each driver's
``city``. ``trips.join_static(...)`` is Spark's ``trips.join(drivers_df, "driver", how)`` where
``drivers_df`` is a batch DataFrame. The table is known in full whenever a trip arrives, so each trip finds
every match it will ever have at once: nothing waits in state, no watermark is needed, and an inner join
drops a trip without a driver row at once (a left outer join emits it at once, padded with nulls). A
stream-stream join (lesson ``stream-join``) must keep both sides because a match can still arrive later.

With ``table=changing`` the table is updated before batch 2 (``CHANGES``: ``d1`` moves to Nice, ``d3`` is
added). Spark reads its static side again in every micro-batch, so trips from batch 2 on are joined with the
new table; the rows emitted before are not revised (d1's first trips stay in Lyon, d3's first trip stays
unmatched).

With ``min_fare=N`` the trips get a watermark on ``ts`` (0 seconds behind), and only the trips whose fare is
above N are kept, by a filter *after* the join. Spark's optimizer runs that filter before the join, and
before the watermark (it reads ``fare``, a column of the stream, not the event time): the trips it drops never
move the watermark (``operators/pushdown.py``). ministream does the same.

>>> for batch in LESSON.run(params={"how": "left_outer"}).output():
...     print(batch.batch_id, sorted((r["driver"], r["fare"], r["city"]) for r in batch.rows))
0 [('d1', 10.0, 'Lyon'), ('d2', 7.0, 'Paris'), ('d3', 4.0, None)]
1 [('d1', 12.0, 'Lyon'), ('d4', 6.0, None)]
2 [('d1', 9.0, 'Nice'), ('d3', 5.0, 'Lille')]
3 [('d2', 8.0, 'Paris'), ('d3', 3.0, 'Lille'), ('d4', 2.0, None)]
"""

from __future__ import annotations

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param, event


def trip(second: float, driver: str | None, fare: float) -> dict:
    """A trip of ``driver`` that cost ``fare``, ``second`` seconds after 10:00:00 on 2024-01-01 (UTC).

    >>> trip(5, "d1", 12)
    {'ts': 1704103205000, 'driver': 'd1', 'fare': 12.0}
    """
    return {"ts": event(second, "")["ts"], "driver": driver, "fare": float(fare)}


DRIVERS = [{"driver": "d1", "city": "Lyon"}, {"driver": "d2", "city": "Paris"}]
"""The table of drivers as the query starts."""

CHANGES = {2: [{"driver": "d1", "city": "Nice"}, {"driver": "d2", "city": "Paris"}, {"driver": "d3", "city": "Lille"}]}
"""The table from batch 2 on (``table=changing``): d1 moved to Nice, d3 was added."""

DEFAULT_SCRIPT = [
    [trip(1, "d1", 10), trip(2, "d2", 7), trip(3, "d3", 4)],
    [trip(12, "d1", 12), trip(15, "d4", 6)],
    [trip(21, "d1", 9), trip(22, "d3", 5)],
    [trip(31, "d2", 8), trip(33, "d3", 3), trip(35, "d4", 2)],
]
"""d3 has no row before batch 2 and d4 never has one; d1's city changes in batch 2."""


def table_versions(params) -> dict[int, list[dict]]:
    """``{first batch: rows}``: the table in force from each batch on."""
    return {0: DRIVERS, **(CHANGES if params["table"] == "changing" else {})}


def table_at(params, batch_id: int) -> list[dict]:
    """The table in force at ``batch_id``: the version of the latest change at or before it.

    >>> [row["city"] for row in table_at({"table": "changing"}, 1)], len(table_at({"table": "changing"}, 2))
    (['Lyon', 'Paris'], 3)
    """
    versions = table_versions(params)
    return versions[max(start for start in versions if start <= batch_id)]


def random_script(rng, params) -> list:
    """Random trips (for ``ministream fuzz``): drivers with a row in every version, in one only, in none, and
    now and then a trip without a driver (a null never matches), in 2 to 6 batches, some empty.

    >>> import random
    >>> script = random_script(random.Random(1), LESSON.resolve_params())
    >>> 2 <= len(script) <= 6 and {row["driver"] for batch in script for row in batch} <= {"d1", "d2", "d3", "d4", None}
    True
    """
    script, now = [], BASE_TIME
    for _ in range(rng.randint(2, 6)):
        rows = []
        for _ in range(rng.choice([0, 1, 2, 3, 4])):
            now += rng.choice([0, 1_000, 5_000])
            driver = rng.choice(["d1", "d2", "d3", "d4", "d1", "d3", None])
            rows.append({"ts": now, "driver": driver, "fare": float(rng.randint(1, 20))})
        script.append(rows)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: each trip joined, as it comes, with the drivers table in force in its batch."""
    versions = table_versions(params)
    flow = Dataflow("enrichment-join")
    trips = flow.source("trips", ScriptedSource(script))
    if params["min_fare"]:
        trips = trips.with_watermark("trips_watermark", "ts", "0 seconds")
    enriched = trips.join_static(
        "with_drivers",
        versions[0],
        on="driver",
        how=params["how"],
        changes={batch_id: rows for batch_id, rows in versions.items() if batch_id > 0},
    )
    if params["min_fare"]:  # after the join, but Spark runs it below the watermark
        minimum = params["min_fare"]
        enriched = enriched.filter("big_fares", lambda row: row["fare"] > minimum, columns="fare")
    enriched.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``join`` with a batch DataFrame on ``driver``; Spark reads it again in every micro-batch, and
    ``versioned_table`` gives it the version in force then (a table updated between batches)."""
    from pyspark.sql import functions as F

    from ministream.spark.table import versioned_table

    trips = inputs["trips"]
    if params["min_fare"]:
        trips = trips.withWatermark("ts", "0 seconds")
    drivers = versioned_table(trips.sparkSession, "driver STRING, city STRING", table_versions(params))
    enriched = trips.join(drivers, "driver", params["how"])
    return enriched.filter(F.col("fare") > params["min_fare"]) if params["min_fare"] else enriched


LESSON = Lesson(
    name="enrichment-join",
    title="Enrichment join: a stream joined with a table, inner or left outer; nothing waits in state",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("driver", str), Field("fare", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("how", "inner", "inner or left_outer", kind="choice", choices=("inner", "left_outer")),
        Param(
            "table",
            "changing",
            "changing: the table is updated before batch 2; fixed: it never changes",
            kind="choice",
            choices=("changing", "fixed"),
        ),
        Param(
            "min_fare",
            0,
            "0: every trip; N: a watermark on ts, and only the trips whose fare is above N, kept after the join",
            kind="int",
        ),
    ],
    inputs=("trips",),
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
