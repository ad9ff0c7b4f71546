"""Check of the chained-aggregations exercise: the top driver of an hour, from the hourly sums the first step
emitted.

The learner writes ``top_driver(sums)``: ``sums`` are the rows the first step emitted for one hour (dicts with
``driver`` and ``total``), and the answer is the ``(driver, total)`` that Spark's ``max(struct(total,
driver))`` picks. The check tries cases aimed at one rule each, then replays the lesson: the first step's
emissions (read from ministream's trace, batch by batch) go through the learner's function, hour by hour, and
each answer must be the row the twin emitted, in the same batch.

>>> def top_driver(sums):
...     best = max(sums, key=lambda row: (row["total"], row["driver"]))
...     return best["driver"], best["total"]
>>> check_top_driver(top_driver, against="ministream")
✓ top_driver: 4 cases, then the 2 hours of chained-aggregations come out as in ministream, in the same batch
"""

from __future__ import annotations

from ministream.lessons import get_lesson
from ministream.time.units import format_clock
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

LARGEST = "the top driver has the largest total of the hour"
TIE = "on equal totals, struct ordering compares the next field: the larger driver name wins"
ONE = "an hour with one driver: that driver"
NEGATIVE = "totals are compared as numbers, a refund (negative total) included"
REPLAY = (
    "both steps run a batch with the same watermark: the hour's sums leave the first step and its top driver "
    "leaves the second in the same batch; a trip dropped as late by the first step is in no sum"
)


def _sum(driver: str, total: float) -> dict:
    return {"driver": driver, "total": total}


def spark_top_driver(sums) -> tuple[str, float]:
    """The rule: ``max(struct(total, driver))``."""
    best = max(sums, key=lambda row: (row["total"], row["driver"]))
    return best["driver"], best["total"]


def top_cases() -> list[Case]:
    """``top_driver(sums)`` cases, each with its rule."""
    raw = [
        ([_sum("d1", 22.0), _sum("d2", 24.0), _sum("d3", 5.0)], LARGEST),
        ([_sum("d2", 10.0), _sum("d1", 10.0)], TIE),
        ([_sum("d7", 3.0)], ONE),
        ([_sum("d1", -4.0), _sum("d2", -2.0)], NEGATIVE),
    ]
    return [Case((sums,), rule, f"sums {[(row['driver'], row['total']) for row in sums]}") for sums, rule in raw]


def check_top_driver(top_driver, lesson: str = "chained-aggregations", against: str = "spark") -> Passed:
    """Exercise: ``top_driver(sums)`` returns the ``(driver, total)`` of an hour's top driver.

    Args:
        top_driver: the learner's function.
        lesson: the chained-aggregations lesson.
        against: ``"spark"`` or ``"ministream"``.
    """
    oracle = get_oracle(against)
    cases = top_cases()
    check_cases(
        "top_driver",
        lambda sums: top_driver([dict(row) for row in sums]),
        cases,
        lambda case: spark_top_driver(*case.args),
        against="the rule",
        same=lambda got, want: tuple(got) == want if isinstance(got, (tuple, list)) else False,
    )
    run = get_lesson(lesson).run(trace=True)
    # {(batch id, hour start): [the first step's rows for that hour]}
    emitted: dict[tuple[int, int], list[dict]] = {}
    for line in run.trace.of_kind("emit"):
        if line.step == "hourly_sums" and line.row is not None:
            emitted.setdefault((line.batch_id, line.row["window_start"]), []).append(line.row)
    theirs = {
        (batch.batch_id, row["window_start"]): (row["driver"], row["total"])
        for batch in oracle.twin_output(lesson)
        for row in batch.rows
    }
    for (batch_id, start), sums in sorted(emitted.items()):
        answer = call("top_driver", top_driver, [{"driver": r["driver"], "total": r["total"]} for r in sums])
        where = f"hour {format_clock(start)}, whose sums left the first step in batch {batch_id}"
        expected = theirs.get((batch_id, start))
        if expected is None:
            fail("top_driver", where, "a top driver in that batch", "none in that batch", REPLAY, oracle.name)
        shown = tuple(answer) if isinstance(answer, (tuple, list)) else answer
        if shown != expected:
            fail("top_driver", where, repr(shown), repr(expected), REPLAY, oracle.name)
    return Passed(
        "top_driver",
        f"{len(cases)} cases, then the {len(emitted)} hours of {lesson} come out as in {oracle.name}, in the same "
        "batch",
    )
