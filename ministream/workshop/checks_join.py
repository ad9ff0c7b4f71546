"""Check of the join exercise: the pairs one micro-batch of a stream-stream join emits.

The learner writes ``join_batch(left_state, right_state, new_left, new_right, within)``: impressions (left) and
clicks (right) are dicts with ``ad_id`` and ``ts``; a click matches an impression of the same ad shown at most
``within`` before it. The check keeps the state as Spark does (late rows dropped against WM_{k-1}; impressions
evicted when ``ts <= WM_k - within - 1 ms``, clicks when ``ts <= WM_k - 1 ms``), replays the stream-join lesson
with the learner's function, and compares each batch's pairs with the ones Spark emitted.

>>> def join_batch(left_state, right_state, new_left, new_right, within):
...     match = lambda imp, click: imp["ad_id"] == click["ad_id"] and imp["ts"] <= click["ts"] <= imp["ts"] + within
...     pairs = [(imp, click) for imp in new_left for click in right_state if match(imp, click)]
...     return pairs + [(imp, click) for click in new_right for imp in left_state + new_left if match(imp, click)]
>>> check_join_batch(join_batch, against="ministream")
✓ join_batch: 7 cases, then the 6 batches of stream-join emit ministream's pairs
"""

from __future__ import annotations

from collections import Counter

from ministream.lessons import get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.workshop.checks_windows import show_time
from ministream.workshop.feedback import Case, ExerciseFailed, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

SECOND = 1_000

EITHER_FIRST = "a new row joins the other side's state: either side may arrive first, so both sides are kept"
ONCE = (
    "in a batch, new impressions join the stored clicks, then new clicks join the stored impressions *including "
    "this batch's*: a pair of two new rows is found exactly once"
)
ONLY_NEW = "a pair of two stored rows came out in an earlier batch: only pairs with at least one new row are emitted"
INCLUSIVE = "the range is inclusive at both ends: impression_time <= click_time <= impression_time + within"
SAME_AD = "rows join only on equal keys: the same ad_id"
REPLAY = (
    "each batch emits the pairs with a new row that are in range; rows late against WM_{k-1} never join, and "
    "rows evicted from the state (impressions at or before WM_k - within - 1 ms) no longer match"
)


def _row(ad: str, second: float) -> dict:
    return {"ad_id": ad, "ts": BASE_TIME + round(second * SECOND)}


def _show_row(row: dict) -> str:
    return f"{row['ad_id']}@{show_time(row['ts'])}"


def _show_pairs(pairs) -> str:
    try:
        shown = sorted(f"{_show_row(imp)} + {_show_row(click)}" for imp, click in pairs)
    except (TypeError, KeyError, ValueError):
        return repr(pairs)
    return "[" + ", ".join(shown) + "]" if shown else "no pair"


def _pair_counts(pairs) -> Counter | None:
    try:
        return Counter((imp["ad_id"], imp["ts"], click["ad_id"], click["ts"]) for imp, click in pairs)
    except (TypeError, KeyError, ValueError):
        return None


def join_cases() -> list[Case]:
    """``join_batch(left_state, right_state, new_left, new_right, within)`` cases, each with its rule."""
    within = 20 * SECOND
    raw = [
        ([_row("a", 1)], [], [], [_row("a", 5)], EITHER_FIRST),
        ([], [_row("a", 5)], [_row("a", 1)], [], EITHER_FIRST),
        ([], [], [_row("a", 1)], [_row("a", 5)], ONCE),
        ([_row("a", 1)], [_row("a", 5)], [], [], ONLY_NEW),
        ([_row("a", 1)], [], [], [_row("a", 21)], INCLUSIVE),
        ([_row("a", 10)], [], [], [_row("a", 9)], INCLUSIVE),
        ([_row("b", 1)], [], [], [_row("a", 5)], SAME_AD),
    ]
    cases = []
    for left, right, new_left, new_right, rule in raw:
        where = (
            f"impressions in state {[_show_row(r) for r in left]}, clicks in state {[_show_row(r) for r in right]}"
            f", new impressions {[_show_row(r) for r in new_left]}, new clicks {[_show_row(r) for r in new_right]}"
            f", within 20 seconds"
        )
        cases.append(Case((left, right, new_left, new_right, within), rule, where))
    return cases


def spark_join_batch(left_state, right_state, new_left, new_right, within) -> list[tuple[dict, dict]]:
    """The rule: new impressions join the stored clicks, then new clicks join every impression, new included."""

    def match(imp, click):
        return imp["ad_id"] == click["ad_id"] and imp["ts"] <= click["ts"] <= imp["ts"] + within

    pairs = [(imp, click) for imp in new_left for click in right_state if match(imp, click)]
    return pairs + [
        (imp, click) for click in new_right for imp in list(left_state) + list(new_left) if match(imp, click)
    ]


def check_join_batch(join_batch, lesson: str = "stream-join", against: str = "spark") -> Passed:
    """Exercise: ``join_batch(left_state, right_state, new_left, new_right, within)`` returns the
    ``(impression, click)`` pairs one batch of the join emits. The state lists are copies: the check keeps the
    real state.

    Args:
        join_batch: the learner's function.
        lesson: the stream-join lesson (an inner join, ``click <= impression + within``, one delay per input).
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    cases = join_cases()

    def copies(*lists):
        return tuple([dict(row) for row in rows] for rows in lists[:4]) + lists[4:]

    check_cases(
        "join_batch",
        lambda *args: join_batch(*copies(*args)),
        cases,
        lambda case: _pair_counts(spark_join_batch(*case.args)),
        against="the rule",
        show=_show_pairs,
        same=lambda got, want: _pair_counts(got) == want,
    )
    the_lesson = get_lesson(lesson)
    within = the_lesson.resolve_params()["within"]
    batches = oracle.twin_output(lesson)
    watermarks = [batch.watermark for batch in batches]
    left_state, right_state = [], []  # the rows each side keeps: [{"ad_id", "ts"}]
    for batch in batches:
        late = watermarks[max(batch.batch_id - 1, 0)]
        script = the_lesson.default_script
        new = {
            side: [dict(row) for row in script[side][batch.batch_id] if row["ts"] > late]
            if batch.batch_id < len(script[side])
            else []
            for side in ("impressions", "clicks")
        }
        pairs = call(
            "join_batch", join_batch, *copies(left_state, right_state, new["impressions"], new["clicks"], within)
        )
        mine = _pair_counts(pairs)
        if mine is None:
            raise ExerciseFailed(f"join_batch: return a list of (impression, click) pairs of rows, not {pairs!r}")
        theirs = Counter(
            (row["impression_ad"], row["impression_time"], row["click_ad"], row["click_time"]) for row in batch.rows
        )
        if mine != theirs:
            extra, missing = mine - theirs, theirs - mine
            ad, imp, _, click = next(iter(extra or missing))
            fail(
                "join_batch",
                f"batch {batch.batch_id} (late rows: at or before {show_time(late)}), impression "
                f"{ad}@{show_time(imp)} with click {ad}@{show_time(click)}",
                f"{'emitted' if extra else 'not emitted'}",
                f"{'not emitted' if extra else 'emitted'}",
                REPLAY,
                oracle.name,
            )
        left_state = [row for row in left_state + new["impressions"] if row["ts"] > batch.watermark - within - 1]
        right_state = [row for row in right_state + new["clicks"] if row["ts"] > batch.watermark - 1]
    return Passed(
        "join_batch", f"{len(cases)} cases, then the {len(batches)} batches of {lesson} emit {oracle.name}'s pairs"
    )
