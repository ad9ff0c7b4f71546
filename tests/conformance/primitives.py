"""Unit-level conformance cases: Spark's JVM unit tests of its state primitives, replayed against ministream's.

Spark tests ``transformWithState``'s state variables and timers one by one, without a query: a test opens a
state store, builds a ``StatefulProcessorHandleImpl`` (or a ``TimerStateImpl``) on it, sets the *implicit
grouping key* by hand (``ImplicitGroupingKeyTracker.setImplicitKey``) and calls the primitives directly,
asserting what each call returns. There are no batches, no sink and nothing for PySpark to replay, so these
cases are not :class:`~tests.conformance.harness.Case` steps: a :class:`PrimitiveCase` is a function that does
what the upstream test does, with ministream's own primitives:

===========================================  ===============================================================
Spark                                        ministream
===========================================  ===============================================================
a state store and a handle on it             a ``KeyedStateBackend``, a ``TimerService`` and a
                                             ``ProcessorHandle`` on them (``operators/processor_handle.py``)
``setImplicitKey(k)``                        ``backend.set_current_key(k)`` (the handle between
                                             ``enter_keys()`` and ``leave_keys()``, as in the handlers)
``removeImplicitKey()``                      ``handle.leave_keys()``, as after the handlers
``getValueState``, ``getListState``,         ``get_value_state``, ``get_list_state``, ``get_map_state``
``getMapState`` (with a ``TTLConfig``)       (with ``ttl=`` ms of processing time)
``batchTimestampMs``                         the handle's ``now``: the processing time TTL counts
``registerTimer``, ``deleteTimer``,          ``register_timer``, ``delete_timer``, ``list_timers``
``listTimers``
``getExpiredTimers(t)``                      ``TimerService.due_event_time(t)`` / ``due_processing_time(t)``
===========================================  ===============================================================

A case raises :class:`~tests.conformance.harness.CaseFailure` (an ``AssertionError``) at the first answer that
differs from the upstream test's, saying what was expected and what ministream gave; :func:`run_primitive`
runs it. The helpers :func:`check` and :func:`check_raises` are the upstream ``assert`` and ``intercept``.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from tests.conformance.harness import CaseFailure

JVM_UNIT_TEST = "a JVM unit test of Spark's state primitives: nothing to replay in PySpark"
"""Why no case of this kind has a Spark replay (the catalog's ``spark`` reason)."""


@attrs.frozen
class PrimitiveCase:
    """One upstream unit test, as ministream replays it.

    Attributes:
        suite, test, line: the test class, the exact name its runner prints (the first of its variants), and
            the line of the test in the upstream source.
        run: performs the test against ministream's primitives; raises ``CaseFailure`` at the first difference.
        variants: how many test names the runner generates for this test (its encodings, for instance).
        spark: why there is no Spark replay (always: these are JVM unit tests).
        ci: whether CI runs a Spark replay of the case (never).
        notes: what the transcription had to decide, in a sentence or two.
    """

    suite: str
    test: str
    line: int
    run: Callable[[], None]
    variants: int = 1
    spark: str = JVM_UNIT_TEST
    ci: bool = False
    notes: str = ""

    @property
    def id(self) -> str:
        return f"{self.suite}: {self.test}"


def run_primitive(case: PrimitiveCase) -> None:
    """Run one unit case; a ``CaseFailure`` (an ``AssertionError``) says where ministream differs."""
    case.run()


def check(what: str, got, expected) -> None:
    """The upstream ``assert(got === expected)``: ``what`` names the value in the failure message.

    >>> check("the list", [1, 2], [1, 2])
    >>> check("the list", [2, 1], [1, 2])
    Traceback (most recent call last):
    ...
    tests.conformance.harness.CaseFailure: the list: expected [1, 2], got [2, 1]
    """
    if got != expected:
        raise CaseFailure(f"{what}: expected {expected!r}, got {got!r}")


def check_raises(what: str, call: Callable[[], object], error: type[BaseException], *texts: str) -> BaseException:
    """The upstream ``intercept[...] { call }`` and ``checkError``: ``call`` raises ``error`` and its message holds
    every one of ``texts`` (an error class, a state name...). Returns the error.

    >>> check_raises("a division by zero", lambda: 1 / 0, ZeroDivisionError, "division")
    ZeroDivisionError('division by zero')
    >>> check_raises("a sum", lambda: 1 + 1, ZeroDivisionError)
    Traceback (most recent call last):
    ...
    tests.conformance.harness.CaseFailure: a sum: expected ZeroDivisionError, but nothing was raised
    """
    try:
        call()
    except error as raised:
        missing = [text for text in texts if text not in str(raised)]
        if missing:
            raise CaseFailure(f"{what}: the {error.__name__} does not say {missing}: {raised}") from raised
        return raised
    except Exception as raised:
        raise CaseFailure(f"{what}: expected {error.__name__}, got {type(raised).__name__}: {raised}") from raised
    raise CaseFailure(f"{what}: expected {error.__name__}, but nothing was raised")
