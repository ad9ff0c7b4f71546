"""Feedback: how a check tells a learner what their code got wrong, in words.

A check runs the learner's function on *cases*, each aimed at one rule, simplest first; the first case whose
answer differs from the expected one names the place (which event, which batch, which row) and the rule that
was missed. A correct function gets a :class:`Passed` result that says what was checked and against what.

>>> def window_start(ts):
...     return ts - ts % 10_000
>>> cases = [Case((12_345,), "a 10-second window starts at a multiple of 10 s", "event at 00:00:12.345"),
...          Case((-1,), "floor, not truncate", "event at 1 ms before the epoch")]
>>> check_cases("window_start", window_start, cases, expected=lambda case: case.args[0] // 10_000 * 10_000,
...             against="the rule")
✓ window_start: 2 cases agree with the rule
>>> check_cases("window_start", lambda ts: int(ts / 10_000) * 10_000, cases,
...             expected=lambda case: case.args[0] // 10_000 * 10_000, against="the rule")
Traceback (most recent call last):
...
ministream.workshop.feedback.ExerciseFailed: window_start: event at 1 ms before the epoch: yours is 0, the rule's is -10000.
Rule missed: floor, not truncate
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from ministream.core.bad_rows import short_repr


class ExerciseFailed(AssertionError):
    """A check found a difference; the message says where, what was expected, and which rule was missed.

    In a notebook only the message is shown, not the check's own traceback (IPython's
    ``_render_traceback_`` hook), because the learner's mistake is in their cell, not in the checker.
    """

    def _render_traceback_(self) -> list[str]:
        return ["✗ " + line for line in str(self).splitlines()]


class NotWrittenYet(ExerciseFailed):
    """The learner's cell still holds the starter code (it raises ``NotImplementedError``)."""


@attrs.frozen
class Passed:
    """A check that passed: which exercise, and what was compared with what. Its ``repr`` is the message
    a notebook shows."""

    exercise: str
    text: str

    def __repr__(self) -> str:
        return f"✓ {self.exercise}: {self.text}"


@attrs.frozen
class Case:
    """One input to a learner's function: its arguments, the rule it tests, and where it comes from in words
    (``"event a at 10:00:10"``)."""

    args: tuple
    rule: str
    where: str


def call(exercise: str, fn: Callable, *args) -> Any:
    """Call the learner's function; a starter still in place or an exception becomes a failure in words.

    >>> call("window_of", lambda ts: 1 / 0, 5)
    Traceback (most recent call last):
    ...
    ministream.workshop.feedback.ExerciseFailed: window_of(5) raised ZeroDivisionError: division by zero
    """
    try:
        return fn(*args)
    except NotImplementedError:
        raise NotWrittenYet(
            f"{exercise}: not written yet: replace the `raise NotImplementedError` of the "
            "exercise cell with your code, run that cell, then this one"
        ) from None
    except ExerciseFailed:
        raise
    except Exception as error:  # the learner's bug, reported as one line rather than a traceback
        shown = ", ".join(short_repr(arg, limit=60) for arg in args)
        raise ExerciseFailed(f"{exercise}({shown}) raised {type(error).__name__}: {error}") from None


def fail(exercise: str, where: str, yours: str, expected: str, rule: str, against: str = "Spark") -> None:
    """Raise the failure message every check uses: where, yours, the expected answer, and the rule missed.

    >>> fail("window_of", "event at 10:00:10", "[10:00:00, 10:00:10)", "[10:00:10, 10:00:20)",
    ...      "windows are half-open")
    Traceback (most recent call last):
    ...
    ministream.workshop.feedback.ExerciseFailed: window_of: event at 10:00:10: yours is [10:00:00, 10:00:10), Spark's is [10:00:10, 10:00:20).
    Rule missed: windows are half-open
    """
    raise ExerciseFailed(f"{exercise}: {where}: yours is {yours}, {against}'s is {expected}.\nRule missed: {rule}")


def check_cases(
    exercise: str,
    fn: Callable,
    cases: list[Case],
    expected: Callable[[Case], Any],
    *,
    against: str = "Spark",
    show: Callable[[Any], str] = repr,
    same: Callable[[Any, Any], bool] = lambda a, b: a == b,
) -> Passed:
    """Run ``fn`` on every case, in order; at the first answer that differs from ``expected(case)``, fail
    with the case's place and rule.

    Args:
        exercise: the exercise's name, shown in every message.
        fn: the learner's function.
        cases: the inputs, simplest first, each aimed at one rule.
        expected: the right answer of a case (from Spark, or from ministream's rules).
        against: where the right answers come from, in words (``"Spark"``).
        show: how to write an answer for a person.
        same: how to compare an answer with the expected one.
    """
    for case in cases:
        try:
            got = call(exercise, fn, *case.args)
        except NotWrittenYet:
            raise
        except ExerciseFailed as error:  # the learner's function raised: say on what, and what rule applies
            raise ExerciseFailed(f"{exercise}: {case.where}: {error}\nThe rule here: {case.rule}") from None
        want = expected(case)
        if not same(got, want):
            fail(exercise, case.where, show(got), show(want), case.rule, against)
    return Passed(exercise, f"{len(cases)} cases agree with {against}")
