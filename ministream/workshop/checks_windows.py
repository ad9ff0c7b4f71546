"""Checks of the window exercises: which windows an event is in, and whether an old event still counts.

Each check takes the learner's function, runs it on cases aimed at one rule each (simplest first), then on the
events of a lesson, and compares with Spark: Spark's ``window()`` for the windows, the lesson's PySpark twin for
what counts. At the first difference it fails with the event, the batch and the rule that was missed.

>>> def window_of(ts, size, offset=0):
...     start = ts - (ts - offset) % size
...     return start, start + size
>>> check_window_of(window_of, against="ministream")
✓ window_of: 19 events land in the same window as in ministream's window()
>>> check_window_of(lambda ts, size, offset=0: (ts // size * size, ts // size * size + size),
...                 against="ministream")
Traceback (most recent call last):
...
ministream.workshop.feedback.ExerciseFailed: window_of: event at 10:00:01 with offset 2 seconds: yours is [10:00:00, 10:00:10), ministream's is [09:59:52, 10:00:02).
Rule missed: Spark's startTime (the offset) shifts every window start: starts are offset + n * size, so a 10 s window with a 2 s offset is [..:02, ..:12)
"""

from __future__ import annotations

from ministream.lessons import get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.time.units import format_clock, format_duration, format_ts
from ministream.time.windows import sliding
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

SECOND = 1_000
DAY = 86_400_000

ALIGNED = (
    "windows are aligned on the Unix epoch (1970-01-01T00:00:00Z, UTC): a window's start is the largest "
    "multiple of the size at or before the event time, [start, start + size)"
)
HALF_OPEN = (
    "a window is half-open, [start, end): an event exactly at a window's end belongs to the next window, "
    "and an event 1 ms before the end to this one"
)
EPOCH_NOT_MINUTE = (
    "alignment is on the epoch, not on the minute, the hour or the first event: a 7-second window "
    "starts at a multiple of 7 s since 1970, which 10:00:00 is not"
)
FLOOR = (
    "before the epoch the start must still be at or before the event: floor, don't truncate. "
    "ts - ts % size floors in Python; int(ts / size), math.fmod and Scala's % truncate towards zero, which puts "
    "-1 ms in [0, 10 s) (Spark adds the size back when the remainder is negative)"
)
OFFSET = (
    "Spark's startTime (the offset) shifts every window start: starts are offset + n * size, so a 10 s "
    "window with a 2 s offset is [..:02, ..:12)"
)
NEGATIVE_OFFSET = (
    "a negative offset shifts the starts back: starts are offset + n * size, start = ts - (ts - offset) mod size"
)
EVERY_WINDOW = (
    "a row belongs to every sliding window that contains it: with a 10 s size and a 5 s slide, two "
    "windows, the latest starting at the last multiple of the slide at or before ts"
)
NOT_DIVIDING = (
    "when the slide does not divide the size, an event is in ceil(size / slide) windows or one fewer: "
    "list the starts from the latest one back, by slide, while start > ts - size"
)


def show_time(ms: int) -> str:
    """An instant as a learner reads it: the time of day, or the full date near the epoch.

    >>> show_time(BASE_TIME + 10_000), show_time(-1)
    ('10:00:10', '1969-12-31T23:59:59.999Z')
    """
    return format_ts(ms) if abs(ms) < DAY else format_clock(ms)


def show_window(window) -> str:
    """A window as ``[start, end)``.

    >>> show_window((-10_000, 0))
    '[1969-12-31T23:59:50Z, 1970-01-01T00:00:00Z)'
    """
    try:
        start, end = window
    except (TypeError, ValueError):
        return repr(window)
    return f"[{show_time(start)}, {show_time(end)})"


def show_windows(windows) -> str:
    """Several windows, in order.

    >>> show_windows([(0, 10_000)])
    '[1970-01-01T00:00:00Z, 1970-01-01T00:00:10Z)'
    """
    try:
        return ", ".join(show_window(window) for window in sorted(map(tuple, windows))) or "no window"
    except TypeError:
        return repr(windows)


def _where(ts: int, size: int, slide: int, offset: int, *, sliding: bool) -> str:
    shape = []
    if size != 10 * SECOND:
        shape.append(f"size {format_duration(size)}")
    if sliding and slide != 5 * SECOND:
        shape.append(f"slide {format_duration(slide)}")
    if offset:
        shape.append(f"offset {format_duration(offset)}")
    return f"event at {show_time(ts)}" + (f" with {', '.join(shape)}" if shape else "")


def _lesson_times(name: str) -> list[int]:

    return sorted({row["ts"] for batch in get_lesson(name).default_script for row in batch})


def tumbling_cases() -> list[Case]:
    """The events ``window_of`` is tried on, as ``(ts, size, offset)``, each with the rule it tests."""
    ten = 10 * SECOND
    cases = [Case((ts, ten, 0), HALF_OPEN if ts % ten == 0 else ALIGNED, "") for ts in _lesson_times("tumbling-window")]
    cases += [
        Case((BASE_TIME + 10 * SECOND, ten, 0), HALF_OPEN, ""),
        Case((BASE_TIME + 20 * SECOND - 1, ten, 0), HALF_OPEN, ""),
        Case((BASE_TIME, 7 * SECOND, 0), EPOCH_NOT_MINUTE, ""),
        Case((BASE_TIME + 3 * SECOND, 7 * SECOND, 0), EPOCH_NOT_MINUTE, ""),
        Case((-1, ten, 0), FLOOR, ""),
        Case((-ten, ten, 0), FLOOR, ""),
        Case((-ten - 1, ten, 0), FLOOR, ""),
        Case((BASE_TIME + 1 * SECOND, ten, 2 * SECOND), OFFSET, ""),
        Case((BASE_TIME + 15 * SECOND, ten, 2 * SECOND), OFFSET, ""),
        Case((BASE_TIME + 8 * SECOND, ten, -3 * SECOND), NEGATIVE_OFFSET, ""),
        Case((-1, ten, 2 * SECOND), FLOOR, ""),
    ]
    return [
        Case(case.args, case.rule, _where(case.args[0], case.args[1], case.args[1], case.args[2], sliding=False))
        for case in cases
    ]


def sliding_cases() -> list[Case]:
    """The events ``windows_of`` is tried on, as ``(ts, size, slide, offset)``, each with the rule it tests."""
    ten, five = 10 * SECOND, 5 * SECOND
    cases = [
        Case((ts, ten, five, 0), HALF_OPEN if ts % five == 0 else EVERY_WINDOW, "")
        for ts in _lesson_times("sliding-window")
    ]
    cases += [
        Case((BASE_TIME + 10 * SECOND, ten, five, 0), HALF_OPEN, ""),
        Case((BASE_TIME + 15 * SECOND - 1, ten, five, 0), HALF_OPEN, ""),
        Case((9_999, ten, 3 * SECOND, 0), NOT_DIVIDING, ""),
        Case((10_000, ten, 3 * SECOND, 0), NOT_DIVIDING, ""),
        Case((BASE_TIME + 1 * SECOND, ten, five, 2 * SECOND), OFFSET, ""),
        Case((BASE_TIME + 1 * SECOND, ten, five, -2 * SECOND), NEGATIVE_OFFSET, ""),
        Case((-1, ten, five, 0), FLOOR, ""),
        Case((-five, ten, five, 0), FLOOR, ""),
    ]
    return [
        Case(case.args, case.rule, _where(case.args[0], case.args[1], case.args[2], case.args[3], sliding=True))
        for case in cases
    ]


def _expected_windows(cases: list[Case], oracle, tumbling: bool) -> dict[tuple, list]:
    """``{case.args: sorted windows}``, asking the oracle once per window shape."""
    shapes: dict[tuple, list[int]] = {}
    for case in cases:
        ts, size, slide, offset = (case.args[0], case.args[1], case.args[1], case.args[2]) if tumbling else case.args
        shapes.setdefault((size, slide, offset), []).append(ts)
    answers = {}
    for (size, slide, offset), times in shapes.items():
        for ts, windows in oracle.windows(times, size, slide, offset).items():
            key = (ts, size, offset) if tumbling else (ts, size, slide, offset)
            answers[key] = windows
    return answers


def _as_windows(answer) -> list[tuple] | None:
    try:
        return sorted(tuple(window) for window in answer)
    except TypeError:
        return None


def check_window_of(window_of, against: str = "spark") -> Passed:
    """Exercise: ``window_of(ts, size, offset=0)`` returns the tumbling window ``(start, end)`` of an event,
    as Spark's ``window(ts, size, startTime=offset)`` does.

    Args:
        window_of: the learner's function.
        against: ``"spark"`` (Spark's ``window()``) or ``"ministream"``.
    """
    oracle = get_oracle(against)
    cases = tumbling_cases()
    answers = _expected_windows(cases, oracle, tumbling=True)

    def expected(case):
        return answers[case.args][0]

    def same(got, want):
        try:
            return tuple(got) == want
        except TypeError:
            return False

    check_cases(
        "window_of",
        window_of,
        cases,
        expected,
        against=oracle.name,
        show=show_window,
        same=same,
    )
    return Passed("window_of", f"{len(cases)} events land in the same window as in {oracle.name}'s window()")


def check_windows_of(windows_of, against: str = "spark") -> Passed:
    """Exercise: ``windows_of(ts, size, slide, offset=0)`` returns every sliding window ``(start, end)`` that
    contains an event, as Spark's ``window(ts, size, slide, startTime=offset)`` does (in any order).

    >>> from ministream.time.windows import sliding
    >>> check_windows_of(sliding, against="ministream")
    ✓ windows_of: 18 events get the same windows as from ministream's window()

    Args:
        windows_of: the learner's function.
        against: ``"spark"`` or ``"ministream"``.
    """
    oracle = get_oracle(against)
    cases = sliding_cases()
    answers = _expected_windows(cases, oracle, tumbling=False)
    check_cases(
        "windows_of",
        windows_of,
        cases,
        lambda case: answers[case.args],
        against=oracle.name,
        show=show_windows,
        same=lambda got, want: _as_windows(got) == want,
    )
    return Passed("windows_of", f"{len(cases)} events get the same windows as from {oracle.name}'s window()")


# -- the late filter ----------------------------------------------------------------------------------------

LATE_RULE = (
    "a row is late for a window when the window's end is at or before the watermark of the previous "
    "batch (end <= WM_{k-1}); it then does not count in that window, and still counts in its other windows"
)
INCLUSIVE = "the late test is inclusive: end <= WM_{k-1} is late, so a window ending exactly at the watermark is closed"
PREVIOUS = (
    "rows of batch k are filtered against the previous batch's watermark WM_{k-1}, not against WM_k, the "
    "watermark batch k runs with (that one decides what is evicted and emitted at the end of the batch)"
)
BEFORE_EPOCH = (
    "batch 0 has no previous batch: it filters against watermark 0, so a window that ends at or before "
    "1970-01-01T00:00:00Z is closed and every later one open (careful: in Python watermarks[-1] is the "
    "last watermark, not the one before batch 0)"
)


def late_filter_cases() -> list[Case]:
    """``counts(window_end, batch_id, watermarks)`` cases, each with the rule it tests."""
    wms = [0, 0, BASE_TIME + 7 * SECOND, BASE_TIME + 20 * SECOND]
    shown = "watermarks per batch 0, 0, 10:00:07, 10:00:20"
    raw = [(10, 1, LATE_RULE), (5, 3, LATE_RULE), (10, 3, PREVIOUS), (7, 3, INCLUSIVE), (7.001, 3, INCLUSIVE)]
    cases = [
        Case(
            (BASE_TIME + round(second * SECOND), batch_id, wms),
            rule,
            f"a row of batch {batch_id}, window ending {show_time(BASE_TIME + round(second * SECOND))}, {shown}",
        )
        for second, batch_id, rule in raw
    ]
    return cases + [
        Case((0, 0, wms), BEFORE_EPOCH, f"a row of batch 0, window ending at the epoch, {shown}"),
        Case((1, 0, wms), BEFORE_EPOCH, f"a row of batch 0, window ending 1 ms after the epoch, {shown}"),
    ]


def still_counts(window_end: int, batch_id: int, watermarks: list[int]) -> bool:
    """The rule itself: a row of batch ``batch_id`` counts for a window unless ``end <= WM_{k-1}``.

    >>> still_counts(10_000, 3, [0, 0, 10_000, 20_000]), still_counts(10_000, 2, [0, 0, 10_000])
    (False, True)
    """
    return window_end > watermarks[max(batch_id - 1, 0)]


def check_counts(counts, lesson: str = "late-data", against: str = "spark") -> Passed:
    """Exercise: ``counts(window_end, batch_id, watermarks)`` says whether a row that arrives in batch
    ``batch_id`` still counts for a window ending at ``window_end``, given ``watermarks[k]`` = WM_k.

    First on cases, then on every row and window of a windowed lesson, with the watermarks Spark reported: the
    counts and sums the learner's rule gives must be the ones Spark emitted.

    >>> check_counts(still_counts, against="ministream")
    ✓ counts: 7 cases, then 11 rows and windows of late-data: every window ministream emitted has the count and sum your rule gives

    Args:
        counts: the learner's function.
        lesson: a windowed lesson with ``size`` (and ``slide``, ``offset``), ``key`` and ``value``.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = late_filter_cases()
    check_cases(
        "counts",
        counts,
        cases,
        lambda case: still_counts(*case.args),
        against="the rule",
        show=lambda answer: "counts" if answer else "late",
    )
    the_lesson = get_lesson(lesson)
    params = the_lesson.resolve_params()
    batches = oracle.twin_output(lesson)
    watermarks = [batch.watermark for batch in batches]
    size = params["size"]
    slide, offset = params.get("slide", size), params.get("offset", 0)
    windows = oracle.windows([row["ts"] for batch in the_lesson.default_script for row in batch], size, slide, offset)
    emitted = {(row["key"], row["window_start"]): (batch.batch_id, row) for batch in batches for row in batch.rows}
    totals: dict[tuple, list] = {}  # {(key, window_start): [count, sum]} from the rows the learner keeps
    decisions = 0
    for batch_id, rows in enumerate(the_lesson.default_script):
        for row in rows:
            for start, end in windows[row["ts"]]:
                decisions += 1
                mine = call("counts", counts, end, batch_id, watermarks)
                if bool(mine) != still_counts(end, batch_id, watermarks):
                    late_watermark = watermarks[max(batch_id - 1, 0)]
                    spark = emitted.get((row["key"], start))
                    seen = (
                        f" ({oracle.name} emitted this window in batch {spark[0]} with count {spark[1]['count']})"
                        if spark
                        else ""
                    )
                    fail(
                        "counts",
                        f"batch {batch_id}, row {row['key']}@{show_time(row['ts'])} for window "
                        f"{show_window((start, end))}{seen}",
                        "counts" if mine else "late",
                        "late" if mine else "counts",
                        f"{LATE_RULE} (here end {show_time(end)} vs WM_{max(batch_id - 1, 0)} = "
                        f"{show_time(late_watermark)})",
                        oracle.name,
                    )
                if mine:
                    total = totals.setdefault((row["key"], start), [0, 0])
                    total[0] += 1
                    total[1] += row["value"]
    for (key, start), (_, row) in emitted.items():  # the rule above is Spark's: so are the totals
        count, total = totals.get((key, start), [0, 0])
        assert count == row["count"] and total == row.get("sum", total), (key, start, count, total, row)
    return Passed(
        "counts",
        f"{len(cases)} cases, then {decisions} rows and windows of {lesson}: every window "
        f"{oracle.name} emitted has the count and sum your rule gives",
    )


PER_WINDOW = (
    "late is decided per window: an old row is dropped from the windows that ended at or before WM_{k-1} "
    "and still counts in its other, open windows"
)


def counting_windows_cases() -> list[Case]:
    """``counting_windows(ts, batch_id, watermarks, size, slide)`` cases, each with the rule it tests."""
    at = lambda second: BASE_TIME + round(second * SECOND)  # noqa: E731
    wms = [0, 0, at(7), at(13), at(13), at(10)]
    shown = "watermarks per batch 0, 0, 10:00:07, 10:00:13, 10:00:13"
    raw = [(12, 1, PER_WINDOW), (8, 3, PER_WINDOW), (8, 4, PER_WINDOW), (3, 4, PER_WINDOW)]
    cases = [
        Case(
            (at(ts), batch_id, wms[:5], 10 * SECOND, 5 * SECOND),
            rule,
            f"a row at {show_time(at(ts))} in batch {batch_id}, 10 s windows every 5 s, {shown}",
        )
        for ts, batch_id, rule in raw
    ]
    return cases + [
        Case(
            (at(8), 1, [at(10), at(10)], 10 * SECOND, 5 * SECOND),
            INCLUSIVE,
            f"a row at {show_time(at(8))} in batch 1, 10 s windows every 5 s, WM_0 = 10:00:10",
        )
    ]


def spark_counting_windows(ts: int, batch_id: int, watermarks: list, size: int, slide: int) -> list[tuple]:
    """The rule: the sliding windows of ``ts`` whose end is after WM_{k-1}.

    >>> spark_counting_windows(8_000, 1, [10_000, 10_000], 10_000, 5_000)
    [(5000, 15000)]
    """

    return [window for window in sliding(ts, size, slide) if still_counts(window[1], batch_id, watermarks)]


def check_counting_windows(counting_windows, lesson: str = "sliding-window", against: str = "spark") -> Passed:
    """Exercise: ``counting_windows(ts, batch_id, watermarks, size, slide)``: the sliding windows a row of batch
    ``batch_id`` counts in (``watermarks[k]`` = WM_k). The lesson's rows, replayed with it, must give the count and
    the average of every window Spark emitted.

    >>> check_counting_windows(spark_counting_windows, against="ministream")
    ✓ counting_windows: 5 cases, then every window sliding-window emits in ministream has your count and average

    Args:
        counting_windows: the learner's function.
        lesson: a sliding-window lesson (``size``, ``slide``, no offset) with ``count`` and ``avg`` of ``value``.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = counting_windows_cases()
    check_cases(
        "counting_windows",
        counting_windows,
        cases,
        lambda case: spark_counting_windows(*case.args),
        against="the rule",
        show=show_windows,
        same=lambda got, want: _as_windows(got) == want,
    )
    the_lesson = get_lesson(lesson)
    params = the_lesson.resolve_params()
    batches = oracle.twin_output(lesson)
    watermarks = [batch.watermark for batch in batches]
    totals: dict[tuple, list] = {}  # {(key, window_start): [count, sum]} from the learner's windows
    for batch_id, rows in enumerate(the_lesson.default_script):
        for row in rows:
            mine = (
                _as_windows(
                    call(
                        "counting_windows",
                        counting_windows,
                        row["ts"],
                        batch_id,
                        watermarks,
                        params["size"],
                        params["slide"],
                    )
                )
                or []
            )
            want = spark_counting_windows(row["ts"], batch_id, watermarks, params["size"], params["slide"])
            if mine != want:
                fail(
                    "counting_windows",
                    f"batch {batch_id}, row {row['key']}@{show_time(row['ts'])} (WM_"
                    f"{max(batch_id - 1, 0)} = {show_time(watermarks[max(batch_id - 1, 0)])})",
                    show_windows(mine),
                    show_windows(want),
                    PER_WINDOW,
                    oracle.name,
                )
            for start, _ in mine:
                total = totals.setdefault((row["key"], start), [0, 0])
                total[0] += 1
                total[1] += row["value"]
    for batch in batches:  # the rule above is Spark's: so are the counts and averages
        for row in batch.rows:
            count, total = totals[(row["key"], row["window_start"])]
            assert count == row["count"] and abs(total / count - row["avg"]) < 1e-9, (row, count, total)
    return Passed(
        "counting_windows",
        f"{len(cases)} cases, then every window {lesson} emits in {oracle.name} has your count and average",
    )
