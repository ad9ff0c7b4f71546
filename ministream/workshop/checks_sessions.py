"""Check of the session-merge exercise: add one event to a key's sessions, merging what it touches.

The learner writes ``add_event(sessions, ts, gap)``: the key's sessions (``(start, end)`` pairs, sorted by
start) after an event at ``ts`` opens ``[ts, ts + gap)``. The check tries it on cases aimed at each merge rule,
then replays the session-window lesson with it, batch by batch, with Spark's watermarks (late rows dropped when
``ts + gap <= WM_{k-1}``, sessions emitted and removed when ``end <= WM_k``), and compares the sessions with the
ones Spark emitted.

>>> from ministream.time.windows import merge_sessions
>>> check_add_event(lambda sessions, ts, gap: merge_sessions(sessions + [(ts, ts + gap)]), against="ministream")
✓ add_event: 8 cases, then the 5 sessions session-window emits in ministream, each in the same batch
>>> def strict(sessions, ts, gap):  # merges only overlapping sessions, not touching ones
...     merged = []
...     for start, end in sorted(sessions + [(ts, ts + gap)]):
...         if merged and start < merged[-1][1]:
...             merged[-1] = (merged[-1][0], max(merged[-1][1], end))
...         else:
...             merged.append((start, end))
...     return merged
>>> check_add_event(strict, against="ministream")
Traceback (most recent call last):
...
ministream.workshop.feedback.ExerciseFailed: add_event: session [10:00:01, 10:00:11) and an event at 10:00:11, gap 10 seconds: yours is [10:00:01, 10:00:11), [10:00:11, 10:00:21), the rule's is [10:00:01, 10:00:21).
Rule missed: sessions merge when the next one starts at or before the current one's end (next.start <= current.end): an event exactly gap after the last one joins the session
"""

from __future__ import annotations

from ministream.lessons import get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.time.units import format_duration
from ministream.time.windows import merge_sessions
from ministream.workshop.checks_windows import show_time, show_window, show_windows
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

SECOND = 1_000

OPENS = "an event opens the session [ts, ts + gap)"
EXTENDS = "sessions that overlap merge into one: start = the earliest start, end = the latest end (max of ts_i + gap)"
TOUCHING = (
    "sessions merge when the next one starts at or before the current one's end (next.start <= current.end):"
    " an event exactly gap after the last one joins the session"
)
APART = "an event that starts after every session's end (by even 1 ms) opens a session of its own"
BRIDGE = "one event can bridge two sessions: every session its [ts, ts + gap) touches merges into one"
MAX_END = "an event inside a long session does not shorten it: the end is the max of the ends, not the last ts + gap"
EMITTED = (
    "a session is emitted once, in the first batch whose watermark is at or past its end, and then removed; "
    "a row is late, and opens nothing, when ts + gap <= WM_{k-1}"
)


def _at(second: float) -> int:
    return BASE_TIME + round(second * SECOND)


def session_cases() -> list[Case]:
    """``add_event(sessions, ts, gap)`` cases, each with the rule it tests."""
    gap = 10 * SECOND
    raw = [
        ([], 1, OPENS),
        ([(1, 11)], 5, EXTENDS),
        ([(1, 11)], 11, TOUCHING),
        ([(1, 11)], 11.001, APART),
        ([(20, 30)], 10, TOUCHING),
        ([(1, 30)], 5, MAX_END),
        ([(1, 11), (20, 30)], 10, BRIDGE),
        ([(1, 11), (40, 50)], 25, APART),
    ]
    cases = []
    for sessions, ts, rule in raw:
        spans = [(_at(start), _at(end)) for start, end in sessions]
        where = f"session{'s' if len(spans) != 1 else ''} {show_windows(spans)} and " if spans else "no session and "
        cases.append(
            Case((spans, _at(ts), gap), rule, where + f"an event at {show_time(_at(ts))}, gap {format_duration(gap)}")
        )
    return cases


def _sorted_spans(answer) -> list[tuple] | None:
    try:
        return sorted(tuple(span) for span in answer)
    except TypeError:
        return None


def spark_is_late(ts: int, gap: int, late_watermark: int) -> bool:
    """The rule: a session-window row is late when the session it opens ends at or before WM_{k-1}.

    >>> spark_is_late(4_000, 10_000, late_watermark=14_000), spark_is_late(5_000, 10_000, late_watermark=14_000)
    (True, False)
    """
    return ts + gap <= late_watermark


def replay_sessions(
    exercise: str, script: list, batches: list, gap: int, add_event, is_late, rule: str, against: str
) -> None:
    """Replay a session-window lesson in append mode with ``add_event`` (merge) and ``is_late`` (the late
    filter) and the watermarks of ``batches``; fail at the first session emitted in another batch than there."""
    watermarks = [batch.watermark for batch in batches]
    sessions: dict[str, list[tuple]] = {}  # {key: [(start, end), ...]} the open sessions
    for batch in batches:
        late_watermark = watermarks[max(batch.batch_id - 1, 0)]
        for row in script[batch.batch_id] if batch.batch_id < len(script) else []:
            if not call(exercise, is_late, row["ts"], gap, late_watermark):
                spans = call(exercise, add_event, list(sessions.get(row["key"], [])), row["ts"], gap)
                sessions[row["key"]] = _sorted_spans(spans) or []
        mine = sorted(
            (key, start, end) for key, spans in sessions.items() for start, end in spans if end <= batch.watermark
        )
        theirs = sorted((row["key"], row["window_start"], row["window_end"]) for row in batch.rows)
        if mine != theirs:
            key, start, end = sorted(set(mine) ^ set(theirs))[0]
            fail(
                exercise,
                f"batch {batch.batch_id} (watermark {show_time(batch.watermark)}, late rows: session end "
                f"at or before {show_time(late_watermark)}), session {show_window((start, end))} of key {key}",
                "emitted" if (key, start, end) in mine else "not emitted",
                "emitted" if (key, start, end) in theirs else "not emitted",
                rule,
                against,
            )
        for key, kept in sessions.items():
            sessions[key] = [(start, end) for start, end in kept if end > batch.watermark]


def check_add_event(add_event, lesson: str = "session-window", against: str = "spark") -> Passed:
    """Exercise: ``add_event(sessions, ts, gap)`` returns one key's sessions after an event at ``ts``.

    Args:
        add_event: the learner's function; it must not rely on being given a copy (it gets one).
        lesson: the session-window lesson (a fixed gap, append mode).
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = session_cases()
    check_cases(
        "add_event",
        lambda spans, ts, gap: add_event(list(spans), ts, gap),
        cases,
        lambda case: merge_sessions(case.args[0] + [(case.args[1], case.args[1] + case.args[2])]),
        against="the rule",
        show=show_windows,
        same=lambda got, want: _sorted_spans(got) == want,
    )
    the_lesson = get_lesson(lesson)
    gap = the_lesson.resolve_params()["gap"]
    batches = oracle.twin_output(lesson)
    replay_sessions(
        "add_event", the_lesson.default_script, batches, gap, add_event, spark_is_late, EMITTED, oracle.name
    )
    emitted = sum(len(batch.rows) for batch in batches)
    return Passed(
        "add_event",
        f"{len(cases)} cases, then the {emitted} sessions {lesson} emits in {oracle.name}, each in the same batch",
    )


LATE_BY_END = (
    "a session-window row is late by the end of the session it opens, not by its own time: late when "
    "ts + gap <= WM_{k-1}, inclusive; a row older than the watermark can still open or extend a session"
)


def check_is_late(is_late, lesson: str = "session-window", against: str = "spark") -> Passed:
    """Exercise: ``is_late(ts, gap, late_watermark)``: is a row of a session-window query, with event time
    ``ts`` and gap ``gap``, dropped as late in a batch whose previous watermark is ``late_watermark``?

    >>> check_is_late(spark_is_late, against="ministream")
    ✓ is_late: 4 cases, then the 5 sessions session-window emits in ministream, each in the same batch

    Args:
        is_late: the learner's function.
        lesson: the session-window lesson (fixed gap, append mode).
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    gap = 10 * SECOND
    raw = [(4, 15, LATE_BY_END), (6, 15, LATE_BY_END), (5, 15, LATE_BY_END), (1, 20, LATE_BY_END)]
    cases = [
        Case(
            (_at(ts), gap, _at(wm)),
            rule,
            f"row at {show_time(_at(ts))}, gap {format_duration(gap)}, WM_(k-1) {show_time(_at(wm))}",
        )
        for ts, wm, rule in raw
    ]
    check_cases(
        "is_late",
        is_late,
        cases,
        lambda case: spark_is_late(*case.args),
        against="the rule",
        show=lambda answer: "late" if answer else "not late",
    )
    the_lesson = get_lesson(lesson)
    batches = oracle.twin_output(lesson)
    replay_sessions(
        "is_late",
        the_lesson.default_script,
        batches,
        the_lesson.resolve_params()["gap"],
        lambda spans, ts, gap: merge_sessions(spans + [(ts, ts + gap)]),
        is_late,
        LATE_BY_END,
        oracle.name,
    )
    emitted = sum(len(batch.rows) for batch in batches)
    return Passed(
        "is_late",
        f"{len(cases)} cases, then the {emitted} sessions {lesson} emits in {oracle.name}, each in the same batch",
    )
