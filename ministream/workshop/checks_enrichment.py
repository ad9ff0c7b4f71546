"""Check of the enrichment exercise: the rows one micro-batch of a stream-static join emits.

The learner writes ``enrich_batch(trips, table, how)``: the batch's trips (dicts with ``ts``, ``driver`` and
``fare``) joined with the drivers table in force at that batch (dicts with ``driver`` and ``city``), inner or
left outer. The check tries cases aimed at one rule each, then replays the enrichment-join lesson, batch by
batch, with the table of each batch (``lessons.enrichment_join.table_at``), in both join types, and
compares the rows with the ones Spark emitted.

>>> def enrich_batch(trips, table, how):
...     out = []
...     for trip in trips:
...         matches = [row for row in table if trip["driver"] is not None and row["driver"] == trip["driver"]]
...         out += [{**trip, "city": row["city"]} for row in matches]
...         if not matches and how == "left_outer":
...             out.append({**trip, "city": None})
...     return out
>>> check_enrich_batch(enrich_batch, against="ministream")
✓ enrich_batch: 5 cases, then the 4 batches of enrichment-join, inner and left outer, emit ministream's rows
"""

from __future__ import annotations

from collections import Counter

from ministream.core.results import normalize_row
from ministream.lessons import get_lesson
from ministream.lessons.enrichment_join import table_at, trip
from ministream.workshop.checks_windows import show_time
from ministream.workshop.feedback import Case, ExerciseFailed, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

MATCH = "each trip is joined with the table rows of its driver; the driver column appears once"
INNER = "an inner join drops a trip without a table row at once: nothing can match it later"
LEFT_OUTER = "a left outer join emits a trip without a table row at once, its city null (None)"
NULL = "a null driver matches nothing, not even a table row whose driver is null (SQL's =)"
EVERY = "a trip with two table rows of its driver comes out twice, once with each"
REPLAY = (
    "each batch joins its own trips with the table in force at that batch (the version of the latest change at "
    "or before it), and never joins an earlier batch's trips again"
)


def _counts(rows) -> Counter | None:
    try:
        return Counter(normalize_row(row) for row in rows)
    except (TypeError, ValueError):
        return None


def _show(rows) -> str:
    try:
        shown = sorted(f"{row['driver']} {row['fare']:g} {row.get('city')}" for row in rows)
    except (TypeError, KeyError, ValueError, AttributeError):
        return repr(rows)
    return "[" + ", ".join(shown) + "]" if shown else "no row"


def spark_enrich_batch(trips, table, how) -> list[dict]:
    """The rule, as Spark's ``trips.join(table, "driver", how)`` applies it to one batch."""
    out = []
    for row in trips:
        matches = [match for match in table if row["driver"] is not None and match["driver"] == row["driver"]]
        out += [{**row, "city": match["city"]} for match in matches]
        if not matches and how == "left_outer":
            out.append({**row, "city": None})
    return out


def enrich_cases() -> list[Case]:
    """``enrich_batch(trips, table, how)`` cases, each with its rule."""
    lyon = {"driver": "d1", "city": "Lyon"}
    raw = [
        ([trip(1, "d1", 10)], [lyon], "inner", MATCH),
        ([trip(1, "d4", 6)], [lyon], "inner", INNER),
        ([trip(1, "d4", 6)], [lyon], "left_outer", LEFT_OUTER),
        ([trip(1, None, 5)], [lyon, {"driver": None, "city": "Nowhere"}], "left_outer", NULL),
        ([trip(1, "d1", 10)], [lyon, {"driver": "d1", "city": "Nice"}], "inner", EVERY),
    ]
    return [
        Case((trips, table, how), rule, f"trips {_show(trips)}, table {table}, how={how!r}")
        for trips, table, how, rule in raw
    ]


def check_enrich_batch(enrich_batch, lesson: str = "enrichment-join", against: str = "spark") -> Passed:
    """Exercise: ``enrich_batch(trips, table, how)`` returns the rows one batch of the stream-static join emits.

    Args:
        enrich_batch: the learner's function.
        lesson: the enrichment-join lesson (its table changes before batch 2).
        against: ``"spark"`` or ``"ministream"``.
    """
    oracle = get_oracle(against)
    cases = enrich_cases()

    def copies(trips, table, how):
        return [dict(row) for row in trips], [dict(row) for row in table], how

    check_cases(
        "enrich_batch",
        lambda *args: enrich_batch(*copies(*args)),
        cases,
        lambda case: spark_enrich_batch(*case.args),
        against="the rule",
        show=_show,
        same=lambda got, want: _counts(got) == _counts(want),
    )
    the_lesson = get_lesson(lesson)
    batches = 0
    for how in ("inner", "left_outer"):
        params = {"how": how}
        for batch in oracle.twin_output(lesson, params):
            trips = the_lesson.default_script[batch.batch_id]
            table = table_at(the_lesson.resolve_params(params), batch.batch_id)
            rows = call("enrich_batch", enrich_batch, *copies(trips, table, how))
            mine = _counts(rows)
            if mine is None:
                raise ExerciseFailed(f"enrich_batch: return a list of row dicts, not {rows!r}")
            theirs = _counts(batch.rows)
            if mine != theirs:
                extra, missing = mine - theirs, theirs - mine
                fail(
                    "enrich_batch",
                    f"batch {batch.batch_id} ({how}), trips at {', '.join(show_time(t['ts']) for t in trips)}",
                    _show([dict(row) for row in extra or mine]),
                    _show([dict(row) for row in missing or theirs]),
                    REPLAY,
                    oracle.name,
                )
            batches = max(batches, batch.batch_id + 1)
    return Passed(
        "enrich_batch",
        f"{len(cases)} cases, then the {batches} batches of {lesson}, inner and left outer, emit {oracle.name}'s rows",
    )
