"""Checks of the output exercises: in which batch a window comes out, and what each output mode emits.

The learner decides *when*; the check replays a lesson's events batch by batch with the watermarks Spark
reported, keeps the windows' state as Spark does (late rows filtered against WM_{k-1}, windows evicted at
WM_k), and compares what the learner's rule emits with what Spark emitted, batch by batch, row by row.

>>> def emit_batch(window_end, watermarks):
...     for batch_id, watermark in enumerate(watermarks):
...         if window_end <= watermark:
...             return batch_id
...     return None
>>> check_emit_batch(emit_batch, against="ministream")
✓ emit_batch: 4 cases, then the 6 windows of microbatch-vs-continuous come out in the batch ministream emitted them
>>> check_emit_batch(lambda end, wms: next((k for k, w in enumerate(wms) if end < w), None), against="ministream")
Traceback (most recent call last):
...
ministream.workshop.feedback.ExerciseFailed: emit_batch: window ending 10:00:10, watermarks 0, 10:00:05, 10:00:10, 10:00:20: yours is batch 3, the rule's is batch 2.
Rule missed: the test is inclusive: a window whose end equals the watermark is complete (end <= WM_k)
"""

from __future__ import annotations

from ministream.core.results import normalize_row
from ministream.lessons import get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.time.windows import tumbling
from ministream.workshop.checks_windows import show_time, show_window, still_counts
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

SECOND = 1_000

APPEND = (
    "in append mode a window is emitted once, in the first batch whose own watermark is at or past its end "
    "(end <= WM_k), and then removed"
)
INCLUSIVE = "the test is inclusive: a window whose end equals the watermark is complete (end <= WM_k)"
NEVER = (
    "a window whose end no watermark has reached is never emitted in append mode: a stream has no end "
    "that would flush it (return None)"
)
UPDATE = (
    "update mode emits, at the end of each batch, the windows that batch changed (touched), with their full "
    "value, and nothing else; a window the watermark passes is removed without another row"
)
COMPLETE = "complete mode emits every window in state, every batch, touched or not, final or not"


def _watermark_list(watermarks) -> str:
    return ", ".join(show_time(w) if w else "0" for w in watermarks)


def emit_cases() -> list[Case]:
    """``emit_batch(window_end, watermarks)`` cases, each with the rule it tests."""
    wms = [0, BASE_TIME + 5 * SECOND, BASE_TIME + 10 * SECOND, BASE_TIME + 20 * SECOND]
    cases = [
        (BASE_TIME + 5 * SECOND - 1 * SECOND, APPEND),
        (BASE_TIME + 10 * SECOND, INCLUSIVE),
        (BASE_TIME + 15 * SECOND, APPEND),
        (BASE_TIME + 30 * SECOND, NEVER),
    ]
    return [
        Case((end, wms), rule, f"window ending {show_time(end)}, watermarks {_watermark_list(wms)}")
        for end, rule in cases
    ]


def first_batch_at_or_past(window_end: int, watermarks: list) -> int | None:
    """The rule: the first batch k whose watermark WM_k is at or past the window's end, or ``None``.

    >>> first_batch_at_or_past(10_000, [0, 7_000, 10_000]), first_batch_at_or_past(10_001, [0, 10_000])
    (2, None)
    """
    return next(
        (
            batch_id
            for batch_id, watermark in enumerate(watermarks)
            if watermark is not None and window_end <= watermark
        ),
        None,
    )


def _show_batch(batch_id) -> str:
    return "never" if batch_id is None else f"batch {batch_id}"


def check_emit_batch(emit_batch, lesson: str = "microbatch-vs-continuous", against: str = "spark") -> Passed:
    """Exercise: ``emit_batch(window_end, watermarks)`` gives the batch in which append mode emits a window
    (``watermarks[k]`` is WM_k), or ``None`` when it never comes out.

    After the cases, every window of the lesson's events must come out in the batch Spark emitted it (or never,
    as Spark).

    Args:
        emit_batch: the learner's function.
        lesson: a lesson of tumbling windows (parameter ``size``) in append mode.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    check_cases(
        "emit_batch",
        emit_batch,
        emit_cases(),
        lambda case: first_batch_at_or_past(*case.args),
        against="the rule",
        show=_show_batch,
    )
    the_lesson = get_lesson(lesson)
    size = the_lesson.resolve_params()["size"]
    batches = oracle.twin_output(lesson)
    watermarks = [batch.watermark for batch in batches]
    emitted = {(row["key"], row["window_start"]): batch.batch_id for batch in batches for row in batch.rows}
    windows = sorted(
        {
            (row["key"], *tumbling(row["ts"], size))
            for batch_id, rows in enumerate(the_lesson.default_script)
            for row in rows
            if still_counts(tumbling(row["ts"], size)[1], batch_id, watermarks)
        }
    )
    for key, start, end in windows:
        mine = call("emit_batch", emit_batch, end, watermarks)
        theirs = emitted.get((key, start))
        if mine != theirs:
            at = "" if theirs is None else f" (end {show_time(end)} <= watermark {show_time(watermarks[theirs])})"
            fail(
                "emit_batch",
                f"window {show_window((start, end))} of key {key}, watermarks per batch {_watermark_list(watermarks)}",
                _show_batch(mine),
                _show_batch(theirs),
                APPEND + at,
                oracle.name,
            )
    return Passed(
        "emit_batch",
        f"{len(emit_cases())} cases, then the {len(windows)} windows of {lesson} come out "
        f"in the batch {oracle.name} emitted them",
    )


# -- output modes --------------------------------------------------------------------------------------------


def spark_emits(mode: str, window_end: int, touched: bool, watermark: int) -> bool:
    """The rule: whether a window in state is emitted at the end of a batch, in each output mode.

    >>> [spark_emits(mode, 10_000, touched=False, watermark=10_000) for mode in ("append", "update", "complete")]
    [True, False, True]
    """
    if mode == "append":
        return window_end <= watermark
    if mode == "update":
        return touched
    return True


def emits_cases() -> list[Case]:
    """``emits(mode, window_end, touched, watermark)`` cases, each with the rule it tests."""
    at = lambda second: BASE_TIME + second * SECOND  # noqa: E731
    raw = [
        ("append", 10, True, 7, APPEND),
        ("append", 10, False, 10, INCLUSIVE),
        ("update", 20, False, 7, UPDATE),
        ("update", 10, True, 12, UPDATE),
        ("complete", 20, False, 7, COMPLETE),
        ("complete", 10, True, 12, COMPLETE),
    ]
    return [
        Case(
            (mode, at(end), touched, at(watermark)),
            rule,
            f"{mode} mode, window ending {show_time(at(end))}, "
            f"{'touched' if touched else 'not touched'} by the batch, watermark {show_time(at(watermark))}",
        )
        for mode, end, touched, watermark, rule in raw
    ]


def replay_modes(emits, lesson, params: dict, watermarks: list) -> list[list[dict]]:
    """A windowed lesson's output, batch by batch, with the emit decision taken by ``emits`` and everything
    else as Spark does it: late rows dropped (``end <= WM_{k-1}``) and windows evicted (``end <= WM_k``) except
    in complete mode. Rows: ``key, window_start, window_end, count, spread``.

    >>> from ministream.lessons import get_lesson
    >>> lesson = get_lesson("output-modes")
    >>> wms = [b.watermark for b in lesson.run(params={"mode": "append"}).output()]
    >>> [len(rows) for rows in replay_modes(spark_emits, lesson, {"mode": "append"}, wms)]
    [0, 0, 2, 0, 0, 2]
    """
    mode = params["mode"]
    size = lesson.resolve_params(params)["size"]
    state: dict[tuple, dict] = {}  # {(key, window_start): {"end", "count", "low", "high"}}
    out = []
    for batch_id, watermark in enumerate(watermarks):
        late_watermark = watermarks[max(batch_id - 1, 0)]
        touched = set()
        for row in lesson.default_script[batch_id] if batch_id < len(lesson.default_script) else []:
            start, end = tumbling(row["ts"], size)
            if mode != "complete" and end <= late_watermark:
                continue  # late for its window
            window = state.setdefault(
                (row["key"], start), {"end": end, "count": 0, "low": row["value"], "high": row["value"]}
            )
            window["count"] += 1
            window["low"], window["high"] = min(window["low"], row["value"]), max(window["high"], row["value"])
            touched.add((row["key"], start))
        rows = [
            {
                "key": key,
                "window_start": start,
                "window_end": window["end"],
                "count": window["count"],
                "spread": window["high"] - window["low"],
            }
            for (key, start), window in sorted(state.items())
            if call("emits", emits, mode, window["end"], (key, start) in touched, watermark)
        ]
        out.append(rows)
        if mode != "complete":
            state = {place: window for place, window in state.items() if window["end"] > watermark}
    return out


def check_emits(emits, lesson: str = "output-modes", against: str = "spark") -> Passed:
    """Exercise: ``emits(mode, window_end, touched, watermark)`` says whether a window in state is emitted at
    the end of a batch whose watermark is ``watermark`` (``touched``: the batch changed it), in ``mode``.

    The lesson's events are replayed in all three modes with the learner's rule; each batch must hold the rows
    Spark emitted in that mode.

    >>> check_emits(spark_emits, against="ministream")
    ✓ emits: 6 cases, then append, update and complete give ministream's rows in all 17 batches of output-modes

    Args:
        emits: the learner's function.
        lesson: the output-modes lesson (tumbling windows, a count and a spread).
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = emits_cases()
    check_cases(
        "emits",
        emits,
        cases,
        lambda case: spark_emits(*case.args),
        against="the rule",
        show=lambda answer: "emitted" if answer else "not emitted",
    )
    the_lesson = get_lesson(lesson)
    rules = {"append": APPEND, "update": UPDATE, "complete": COMPLETE}
    total = 0
    for mode in ("append", "update", "complete"):
        batches = oracle.twin_output(lesson, {"mode": mode})
        watermarks = [batch.watermark for batch in batches]
        mine = replay_modes(emits, the_lesson, {"mode": mode}, watermarks)
        for batch, rows in zip(batches, mine):
            total += 1
            ours = {normalize_row(row): row for row in rows}
            theirs = {normalize_row(row): row for row in batch.rows}
            if set(ours) != set(theirs):
                extra = [ours[row] for row in ours if row not in theirs]
                missing = [theirs[row] for row in theirs if row not in ours]
                row = (extra or missing)[0]
                fail(
                    "emits",
                    f"{mode} mode, batch {batch.batch_id} (watermark {show_time(batch.watermark)}), window "
                    f"{show_window((row['window_start'], row['window_end']))} of key {row['key']}",
                    "emitted" if extra else "not emitted",
                    "not emitted" if extra else "emitted",
                    rules[mode],
                    oracle.name,
                )
    return Passed(
        "emits",
        f"{len(cases)} cases, then append, update and complete give {oracle.name}'s rows in all "
        f"{total} batches of {lesson}",
    )


# -- the continuous model --------------------------------------------------------------------------------------

CONTINUOUS_WATERMARK = (
    "the continuous model's watermark follows every row: largest event time so far - delay - 1 ms "
    "(Flink's bounded out-of-orderness), not max - delay"
)
FIRES = (
    "a window fires in the continuous model right after the row that lifts the watermark to end - 1 ms or beyond "
    "(watermark >= end - 1), with no batch to wait for"
)
NEVER_FIRES = "a window whose end - 1 no watermark reached does not fire before the end of input (return None)"


def continuous_fire_row(window_end: int, event_times: list[int], delay: int) -> int | None:
    """The rule: the 1-based number of the row after which a window fires, or ``None``.

    >>> continuous_fire_row(10_000, [1_000, 14_999, 15_000], delay=5_000)
    3
    """
    top = None
    for number, ts in enumerate(event_times, start=1):
        top = ts if top is None else max(top, ts)
        if top - delay - 1 >= window_end - 1:
            return number
    return None


def fire_cases() -> list[Case]:
    """``fires_after(window_end, event_times, delay)`` cases, each with the rule it tests."""
    at = lambda second: BASE_TIME + round(second * SECOND)  # noqa: E731
    edge = (
        f"{CONTINUOUS_WATERMARK}; and {FIRES}: here the row at 10:00:15 lifts the watermark to 10:00:09.999, "
        "which is end - 1 ms, and the row at 10:00:14.999 does not"
    )
    raw = [
        (10, [1, 3, 16], FIRES),
        (10, [1, 14.999, 15], edge),
        (10, [1, 15, 2], edge),
        (10, [1, 16, 4], FIRES),
        (20, [1, 16, 4], NEVER_FIRES),
    ]
    return [
        Case(
            (at(end), [at(t) for t in times], 5 * SECOND),
            rule,
            f"window ending {show_time(at(end))}, rows at "
            f"{', '.join(show_time(at(t)) for t in times)}, delay 5 seconds",
        )
        for end, times, rule in raw
    ]


def check_fires_after(fires_after, lesson: str = "microbatch-vs-continuous") -> Passed:
    """Exercise: ``fires_after(window_end, event_times, delay)``: in the continuous model, the number (from 1)
    of the row after which a window ending at ``window_end`` fires, rows arriving with ``event_times`` in this
    order; ``None`` if none makes it fire. Checked against ministream's continuous model (Flink's rules; Spark's
    continuous mode runs no aggregation, so there is no twin to ask), on cases and on the lesson's windows.

    >>> check_fires_after(continuous_fire_row)
    ✓ fires_after: 5 cases, then the 4 windows of microbatch-vs-continuous fire after the same row as in ministream

    Args:
        fires_after: the learner's function.
        lesson: a tumbling-window lesson that runs in the continuous model.
    """

    cases = fire_cases()
    check_cases(
        "fires_after",
        fires_after,
        cases,
        lambda case: continuous_fire_row(*case.args),
        against="ministream's continuous model",
        show=lambda answer: "never" if answer is None else f"after row {answer}",
    )
    the_lesson = get_lesson(lesson)
    params = the_lesson.resolve_params()
    times = [row["ts"] for batch in the_lesson.default_script for row in batch]
    windows = sorted({tumbling(ts, params["size"]) for ts in times})
    for start, end in windows:
        mine = call("fires_after", fires_after, end, list(times), params["delay"])
        theirs = continuous_fire_row(end, times, params["delay"])
        if mine != theirs:
            fail(
                "fires_after",
                f"window {show_window((start, end))} of {lesson}, rows at {', '.join(show_time(ts) for ts in times)}",
                "never" if mine is None else f"after row {mine}",
                "never" if theirs is None else f"after row {theirs}",
                FIRES,
                "ministream's continuous model",
            )
    return Passed(
        "fires_after",
        f"{len(cases)} cases, then the {len(windows)} windows of {lesson} fire after the same row as in ministream",
    )
