"""Check of the operator-state exercise: how a rescale deals the old subtasks' lists out to the new ones.

The learner writes ``deal_out(lists, parallelism, mode)``: ``lists`` are the lists of the old subtasks, in
subtask order; the answer is one list per new subtask, split evenly (``"even"``: end to end, then cut into
contiguous parts whose sizes differ by at most one, the larger ones first) or given whole to each (``"union"``).
The check tries cases aimed at one rule each, then the buffers of the lesson's checkpoint, dealt out to the
lesson's new parallelism, against ministream's restore (``state/operator_state.redistribute``). Spark has no
operator state: the rules come from ministream (and Flink, whose even split and union they are).

>>> def deal_out(lists, parallelism, mode):
...     items = [item for old in lists for item in old]
...     if mode == "union":
...         return [list(items) for _ in range(parallelism)]
...     size, extra = divmod(len(items), parallelism)
...     bounds = [i * size + min(i, extra) for i in range(parallelism + 1)]
...     return [items[bounds[i]:bounds[i + 1]] for i in range(parallelism)]
>>> check_deal_out(deal_out)
✓ deal_out: 6 cases, then the lesson's buffers at its restore, as ministream deals them out
"""

from __future__ import annotations

from ministream.checkpoints.coordinator import load_checkpoint
from ministream.checkpoints.storage import MemoryStorage
from ministream.lessons import get_lesson
from ministream.state.operator_state import redistribute
from ministream.workshop.feedback import Case, Passed, call, check_cases, fail

ONCE = "an even split gives every item to exactly one new subtask: none lost, none repeated"
ORDER = "an even split keeps the items in order: the old lists end to end, then cut into contiguous parts"
SIZES = "the parts' sizes differ by at most one, the larger parts first"
MORE = "with more subtasks than items, some new subtasks get an empty list"
UNION = "union gives every new subtask every item of every old subtask"
ONE = "restored into one subtask, every item goes to it, in order"


def deal_cases() -> list[Case]:
    """``deal_out(lists, parallelism, mode)`` cases, each with its rule."""
    raw = [
        ([["a", "b"], ["c"]], 3, "even", ONCE),
        ([["a", "b", "c"], ["d"]], 2, "even", ORDER),
        ([["a"], ["b", "c", "d", "e"]], 3, "even", SIZES),
        ([["a"]], 3, "even", MORE),
        ([["p0:4"], ["p1:7"]], 3, "union", UNION),
        ([["a"], [], ["b", "c"]], 1, "even", ONE),
    ]
    return [
        Case((lists, parallelism, mode), rule, f"lists {lists} into {parallelism} subtasks, {mode}")
        for lists, parallelism, mode, rule in raw
    ]


def check_deal_out(deal_out, lesson: str = "operator-state") -> Passed:
    """Exercise: ``deal_out(lists, parallelism, mode)`` deals the old subtasks' lists out to the new ones.

    Args:
        deal_out: the learner's function.
        lesson: the operator-state lesson (its checkpoint's buffers are the last case).
    """
    cases = deal_cases()
    check_cases(
        "deal_out",
        lambda lists, parallelism, mode: deal_out([list(old) for old in lists], parallelism, mode),
        cases,
        lambda case: redistribute(*case.args),
        against="the rule",
    )
    the_lesson = get_lesson(lesson)
    values = the_lesson.resolve_params()
    storage = MemoryStorage()
    run = the_lesson.run(storage=storage)
    restored = run.attempts[-1].restored_from
    saved = load_checkpoint(storage, restored).operators["writer"]
    buffers = [[row["trip"] for row in saved[index]["operator"]["buffer"]["items"]] for index in sorted(saved)]
    for mode in ("even", "union"):
        answer = call("deal_out", deal_out, [list(old) for old in buffers], values["after"], mode)
        expected = redistribute(buffers, values["after"], mode)
        if answer != expected:
            fail(
                "deal_out",
                f"the lesson's buffers at checkpoint {restored}, {buffers}, into {values['after']} subtasks, {mode}",
                repr(answer),
                repr(expected),
                ONCE if mode == "even" else UNION,
                "ministream",
            )
    return Passed(
        "deal_out", f"{len(cases)} cases, then the lesson's buffers at its restore, as ministream deals them out"
    )
