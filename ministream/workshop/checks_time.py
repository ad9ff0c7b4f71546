"""Checks of the time exercises: Spark's watermark, batch by batch, and the bounds it puts on state.

- ``next_watermark(watermark, event_times, delay)``: one input's watermark for the next batch;
- ``global_watermark(watermark, proposals, policy)``: several inputs' proposals combined (``min`` or ``max``);
- ``state_watermark(watermark, upper, inclusive)``: which stored impressions a time-range join may forget;
- ``forget(first_ts, delay, watermark)``: when ``dropDuplicatesWithinWatermark`` forgets a key.

Each check tries the learner's function on cases aimed at one rule each, then replays a lesson's events with
it and compares with what Spark reported: its watermark per batch, the batch in which an outer join emitted a
null-padded row, the copies deduplication let through.

>>> def next_watermark(watermark, event_times, delay):
...     if not event_times:
...         return watermark
...     return max(watermark, max(event_times) - delay)
>>> check_next_watermark(next_watermark, against="ministream")
✓ next_watermark: 6 cases, then the 5 watermarks of tumbling-window are ministream's
>>> check_next_watermark(lambda wm, times, delay: max(times) - delay if times else wm, against="ministream")
Traceback (most recent call last):
...
ministream.workshop.feedback.ExerciseFailed: next_watermark: watermark 0, batch with event times 1970-01-01T00:00:03Z, delay 5 seconds: yours is -2000, the rule's is 0.
Rule missed: the watermark starts at 0 and never goes down: max - delay below the current watermark leaves it where it is
"""

from __future__ import annotations

from ministream.lessons import get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.time.ranges import TimeRange
from ministream.time.units import format_duration
from ministream.workshop.checks_windows import show_time
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

SECOND = 1_000

MAX_MINUS_DELAY = (
    "after a batch, the watermark is the largest event time seen so far minus the delay "
    "(no -1 ms: that is the continuous model's watermark)"
)
LARGEST = "the largest event time of the batch counts, not the last one to arrive"
NEVER_DOWN = (
    "the watermark starts at 0 and never goes down: max - delay below the current watermark leaves it where it is"
)
EMPTY = "a batch without rows leaves the watermark where it is"
NO_ROW_YET = (
    "an input that has produced no row yet counts as 0: under the min policy it holds the global watermark "
    "at 0 (an idle input stalls the query); under max it is outvoted"
)
POLICY = "the min policy takes the smallest input's proposal, the max policy the largest"


def _show_times(times) -> str:
    return ", ".join(show_time(ts) for ts in times) or "none"


def next_watermark_cases() -> list[Case]:
    """``next_watermark(watermark, event_times, delay)`` cases, each with the rule it tests."""
    delay = 5 * SECOND
    raw = [
        (0, [BASE_TIME + 1 * SECOND, BASE_TIME + 3 * SECOND], MAX_MINUS_DELAY),
        (0, [BASE_TIME + 12 * SECOND, BASE_TIME + 4 * SECOND], LARGEST),
        (0, [3 * SECOND], NEVER_DOWN),
        (BASE_TIME + 7 * SECOND, [], EMPTY),
        (BASE_TIME + 7 * SECOND, [BASE_TIME + 9 * SECOND], NEVER_DOWN),
        (BASE_TIME + 7 * SECOND, [BASE_TIME + 30 * SECOND], MAX_MINUS_DELAY),
    ]
    return [
        Case(
            (watermark, times, delay),
            rule,
            f"watermark {show_time(watermark) if watermark else 0}, batch "
            f"with event times {_show_times(times)}, delay {format_duration(delay)}",
        )
        for watermark, times, rule in raw
    ]


def spark_next_watermark(watermark: int, event_times: list[int], delay: int) -> int:
    """The rule for one input: ``max(watermark, max(event_times) - delay)``; no rows, no change.

    >>> spark_next_watermark(0, [12_000, 4_000], 5_000), spark_next_watermark(7_000, [], 5_000)
    (7000, 7000)
    """
    return max(watermark, max(event_times) - delay) if event_times else watermark


def _show_watermark(watermark) -> str:
    if isinstance(watermark, int) and not isinstance(watermark, bool):
        return show_time(watermark) if abs(watermark) >= 86_400_000 else str(watermark)
    return repr(watermark)


def check_next_watermark(next_watermark, lesson: str = "tumbling-window", against: str = "spark") -> Passed:
    """Exercise: ``next_watermark(watermark, event_times, delay)`` is the watermark of batch k + 1, from the
    watermark of batch k and the event times of batch k's rows.

    Args:
        next_watermark: the learner's function.
        lesson: a lesson with one watermarked input of ``ts`` and a ``delay`` parameter.
        against: ``"spark"`` (the watermarks Spark's twin reported) or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = next_watermark_cases()
    check_cases(
        "next_watermark",
        next_watermark,
        cases,
        lambda case: spark_next_watermark(*case.args),
        against="the rule",
        show=_show_watermark,
    )
    the_lesson = get_lesson(lesson)
    delay = the_lesson.resolve_params()["delay"]
    batches = oracle.twin_output(lesson)
    watermark = 0
    for batch in batches:
        if watermark != batch.watermark:
            fail(
                "next_watermark",
                f"batch {batch.batch_id} of {lesson}, after the batches "
                f"{[[show_time(row['ts']) for row in rows] for rows in the_lesson.default_script[: batch.batch_id]]}",
                _show_watermark(watermark),
                _show_watermark(batch.watermark),
                MAX_MINUS_DELAY,
                oracle.name,
            )
        rows = the_lesson.default_script[batch.batch_id] if batch.batch_id < len(the_lesson.default_script) else []
        watermark = call("next_watermark", next_watermark, watermark, [row["ts"] for row in rows], delay)
    return Passed(
        "next_watermark", f"{len(cases)} cases, then the {len(batches)} watermarks of {lesson} are {oracle.name}'s"
    )


# -- several inputs ------------------------------------------------------------------------------------------


def spark_global_watermark(watermark: int, proposals: dict, policy: str) -> int:
    """The rule for several inputs: ``None`` (no row yet) counts as 0, then min or max, never down.

    >>> spark_global_watermark(0, {"impressions": 20_000, "clicks": None}, "min")
    0
    >>> spark_global_watermark(0, {"impressions": 20_000, "clicks": None}, "max")
    20000
    """
    values = [0 if proposal is None else proposal for proposal in proposals.values()]
    return max(watermark, (min if policy == "min" else max)(values))


def global_watermark_cases() -> list[Case]:
    """``global_watermark(watermark, proposals, policy)`` cases, each with the rule it tests."""
    at = lambda second: BASE_TIME + second * SECOND  # noqa: E731
    raw = [
        (0, {"impressions": at(5), "clicks": at(8)}, "min", POLICY),
        (0, {"impressions": at(5), "clicks": at(8)}, "max", POLICY),
        (0, {"impressions": at(20), "clicks": None}, "min", NO_ROW_YET),
        (0, {"impressions": at(20), "clicks": None}, "max", NO_ROW_YET),
        (at(20), {"impressions": at(25), "clicks": at(15)}, "min", NEVER_DOWN),
    ]

    def shown(proposals):
        return ", ".join(
            f"{name} {'none yet' if value is None else show_time(value)}" for name, value in proposals.items()
        )

    return [
        Case(
            (watermark, proposals, policy),
            rule,
            f"policy {policy}, watermark {_show_watermark(watermark)}, proposals {shown(proposals)}",
        )
        for watermark, proposals, policy, rule in raw
    ]


def check_global_watermark(global_watermark, lesson: str = "idle-input", against: str = "spark") -> Passed:
    """Exercise: ``global_watermark(watermark, proposals, policy)`` is the next batch's watermark of a query with
    several watermarked inputs; ``proposals[input]`` is that input's largest event time so far minus its delay,
    or ``None`` when it has produced no row yet.

    >>> check_global_watermark(spark_global_watermark, against="ministream")
    ✓ global_watermark: 5 cases, then the 12 watermarks of idle-input under min and max are ministream's

    Args:
        global_watermark: the learner's function.
        lesson: a two-input lesson whose inputs are watermarked on ``ts`` with one ``delay`` and that has a
            ``policy`` parameter.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = global_watermark_cases()
    check_cases(
        "global_watermark",
        global_watermark,
        cases,
        lambda case: spark_global_watermark(*case.args),
        against="the rule",
        show=_show_watermark,
    )
    the_lesson = get_lesson(lesson)
    delay = the_lesson.resolve_params()["delay"]
    compared = 0
    for policy in ("min", "max"):
        batches = oracle.twin_output(lesson, {"policy": policy})
        watermark, latest = 0, dict.fromkeys(the_lesson.inputs)  # {input: max event time so far}
        for batch in batches:
            compared += 1
            if watermark != batch.watermark:
                fail(
                    "global_watermark",
                    f"policy {policy}, batch {batch.batch_id} of {lesson}",
                    _show_watermark(watermark),
                    _show_watermark(batch.watermark),
                    NO_ROW_YET if policy == "min" else POLICY,
                    oracle.name,
                )
            for name in the_lesson.inputs:
                rows = the_lesson.default_script[name]
                for row in rows[batch.batch_id] if batch.batch_id < len(rows) else []:
                    latest[name] = row["ts"] if latest[name] is None else max(latest[name], row["ts"])
            proposals = {name: None if ts is None else ts - delay for name, ts in latest.items()}
            watermark = call("global_watermark", global_watermark, watermark, proposals, policy)
    return Passed(
        "global_watermark",
        f"{len(cases)} cases, then the {compared} watermarks of {lesson} under min and max are {oracle.name}'s",
    )


# -- join state ------------------------------------------------------------------------------------------------

STATE_BOUND = (
    "a stored impression can match no future click once impression_time <= WM - upper: a click still to "
    "come is not late, so its time is > WM"
)
ONE_MS = (
    "for an inclusive bound (click_time <= impression_time + upper) Spark keeps one more millisecond: it "
    "evicts impression_time <= WM - upper - 1 ms; a strict bound (<) gets no such millisecond"
)
NULL_ROW = (
    "an unmatched impression comes out padded with nulls in the batch whose watermark evicts it, "
    "impression_time <= WM_k - upper - 1 ms, never earlier"
)


def state_watermark_cases() -> list[Case]:
    """``state_watermark(watermark, upper, inclusive)`` cases, each with the rule it tests."""
    raw = [
        (BASE_TIME + 60 * SECOND, 20 * SECOND, False, STATE_BOUND),
        (BASE_TIME + 60 * SECOND, 20 * SECOND, True, ONE_MS),
        (100 * SECOND, 60 * SECOND, True, ONE_MS),
    ]
    return [
        Case(
            (watermark, upper, inclusive),
            rule,
            f"watermark {show_time(watermark)}, click_time "
            f"{'<=' if inclusive else '<'} impression_time + {format_duration(upper)}",
        )
        for watermark, upper, inclusive, rule in raw
    ]


def check_state_watermark(state_watermark, lesson: str = "outer-join", against: str = "spark") -> Passed:
    """Exercise: ``state_watermark(watermark, upper, inclusive)``: impressions with a time at or before it are
    evicted from the join state (and, unmatched, emitted with nulls) in a batch with this watermark.

    >>> check_state_watermark(lambda wm, upper, inclusive: TimeRange("i", "c", 0, upper, upper_inclusive=inclusive)
    ...                       .left_state_watermark(wm), against="ministream")
    ✓ state_watermark: 3 cases, then the 3 unmatched impressions of outer-join leave the state when ministream's do

    Args:
        state_watermark: the learner's function.
        lesson: a left outer join of impressions with clicks, ``click <= impression + within`` (inclusive).
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = state_watermark_cases()

    def expected(case):
        watermark, upper, inclusive = case.args
        return TimeRange("impression_time", "click_time", 0, upper, upper_inclusive=inclusive).left_state_watermark(
            watermark
        )

    check_cases("state_watermark", state_watermark, cases, expected, against="the rule", show=_show_watermark)
    the_lesson = get_lesson(lesson)
    within = the_lesson.resolve_params()["within"]
    batches = oracle.twin_output(lesson)
    watermarks = [batch.watermark for batch in batches]
    matched = {
        (row["impression_ad"], row["impression_time"])
        for batch in batches
        for row in batch.rows
        if row.get("click_ad") is not None
    }
    padded = {
        (row["impression_ad"], row["impression_time"]): batch.batch_id
        for batch in batches
        for row in batch.rows
        if row.get("click_ad") is None
    }
    unmatched = 0
    for arrived, rows in enumerate(the_lesson.default_script["impressions"]):
        for row in rows:
            place = (row["ad_id"], row["ts"])
            if place in matched or row["ts"] <= watermarks[max(arrived - 1, 0)]:
                continue  # matched, or late: never in the state
            unmatched += 1
            mine = next(
                (
                    k
                    for k in range(arrived, len(batches))
                    if row["ts"] <= call("state_watermark", state_watermark, watermarks[k], within, True)
                ),
                None,
            )
            theirs = padded.get(place)
            if mine != theirs:
                fail(
                    "state_watermark",
                    f"impression {row['ad_id']} at {show_time(row['ts'])} (never clicked), "
                    f"watermarks per batch {', '.join(_show_watermark(w) for w in watermarks)}",
                    "never evicted" if mine is None else f"evicted in batch {mine}",
                    "never emitted" if theirs is None else f"null-padded row in batch {theirs}",
                    NULL_ROW,
                    oracle.name,
                )
    return Passed(
        "state_watermark",
        f"{len(cases)} cases, then the {unmatched} unmatched impressions of {lesson} "
        f"leave the state when {oracle.name}'s do",
    )


# -- deduplication -----------------------------------------------------------------------------------------------

FORGET = (
    "dropDuplicatesWithinWatermark forgets a key once the watermark reaches its first copy's time plus the "
    "delay: WM_k >= first_ts + delay, inclusive"
)


def check_forget(forget, lesson: str = "deduplication", against: str = "spark") -> Passed:
    """Exercise: ``forget(first_ts, delay, watermark)`` says whether ``dropDuplicatesWithinWatermark`` forgets a
    key, first seen at ``first_ts``, at the end of a batch whose watermark is ``watermark``.

    >>> check_forget(lambda first_ts, delay, watermark: watermark >= first_ts + delay, against="ministream")
    ✓ forget: 3 cases, then the 6 batches of deduplication (key=within) let through ministream's rows

    Args:
        forget: the learner's function.
        lesson: the deduplication lesson, run with ``key=within``.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    delay = 10 * SECOND
    raw = [
        (BASE_TIME + 15 * SECOND, BASE_TIME + 30 * SECOND),
        (BASE_TIME + 15 * SECOND, BASE_TIME + 25 * SECOND),
        (BASE_TIME + 15 * SECOND, BASE_TIME + 20 * SECOND),
    ]
    cases = [
        Case(
            (first, delay, watermark),
            FORGET,
            f"key first seen at {show_time(first)}, delay {format_duration(delay)}, watermark {show_time(watermark)}",
        )
        for first, watermark in raw
    ]
    check_cases(
        "forget",
        forget,
        cases,
        lambda case: case.args[2] >= case.args[0] + case.args[1],
        against="the rule",
        show=lambda answer: "forgotten" if answer else "kept",
    )
    the_lesson = get_lesson(lesson)
    params = {"key": "within"}
    delay = the_lesson.resolve_params(params)["delay"]
    batches = oracle.twin_output(lesson, params)
    watermarks = [batch.watermark for batch in batches]
    seen: dict[str, int] = {}  # {event_id: time of its first copy}
    for batch in batches:
        script = the_lesson.default_script
        kept = []
        for row in script[batch.batch_id] if batch.batch_id < len(script) else []:
            if row["ts"] <= watermarks[max(batch.batch_id - 1, 0)] or row["event_id"] in seen:
                continue  # late, or a copy
            seen[row["event_id"]] = row["ts"]
            kept.append((row["event_id"], row["ts"]))
        theirs = sorted((row["event_id"], row["ts"]) for row in batch.rows)
        if sorted(kept) != theirs:
            event_id, ts = sorted(set(kept) ^ set(theirs))[0]
            fail(
                "forget",
                f"batch {batch.batch_id} (watermark {show_time(batch.watermark)}), event {event_id} at {show_time(ts)}",
                "let through" if (event_id, ts) in kept else "dropped as a copy",
                "let through" if (event_id, ts) in theirs else "dropped as a copy",
                FORGET,
                oracle.name,
            )
        seen = {
            event_id: first
            for event_id, first in seen.items()
            if not call("forget", forget, first, delay, batch.watermark)
        }
    return Passed(
        "forget",
        f"{len(cases)} cases, then the {len(batches)} batches of {lesson} (key=within) let "
        f"through {oracle.name}'s rows",
    )
