"""Spark's unit tests of ``transformWithState``'s state primitives, replayed against ministream's:
``TimerSuite``, ``ValueStateSuite``, ``ListStateSuite``, ``MapStateSuite`` and ``StatefulProcessorHandleSuite``.

What they pin down: each state variable's answers under the current key (a value, a list in insertion order, a
map with its keys in insertion order, ``exists`` and ``clear``), several variables side by side without touching
each other, timers per key (listed for the current key, due across all keys in timestamp order, a timer at the
time asked for counting as due), a time-to-live that hides a value at exactly ``write time + ttl`` and is
refused when not positive, null lists refused, and the handle's rules: state variables are created only before
``init()`` is over, timers need a time mode, and only the variables with a time-to-live are cleaned up.

Sources, in ``sql/core/src/test/scala/org/apache/spark/sql/execution/streaming/state/``, the newest versions this
project could read of each (line numbers refer to them): ``TimerSuite.scala`` (commit 1ea93d595052, where a
timer at the time asked for is due), ``ValueStateSuite.scala`` (commit 93e8a4bdfaa2; it also holds the suites'
base, ``StateVariableSuiteBase``), ``ListStateSuite.scala`` (commit 0631e75a2e72), ``MapStateSuite.scala``
(commit 05ff15b296ee) and ``StatefulProcessorHandleSuite.scala`` (commit 048501dcac51). The base mixes in
``AlsoTestWithEncodingTypes``: every test runs twice, in the ``unsaferow`` and ``avro`` state encodings (a
storage variant), and is one case here, named after the first, ``... (encoding = unsaferow)``. A test that runs
once per time mode (``Processing timer - ...``, ``... timeMode=EventTime ...``) is one case per mode: the modes
drive different timers.

These are JVM unit tests: each builds a state store and a ``StatefulProcessorHandleImpl`` on it and calls the
primitives directly (``primitives.py`` says how they map to ministream's ``ProcessorHandle``), so no case has a
Spark replay. ``Long.MaxValue`` and ``Long.MinValue`` are :data:`LONG_MAX` and :data:`LONG_MIN`; a Scala case
class value is :class:`TestClass` (or :class:`POJOTestClass`), and a grouping key of one is a tuple, as
ministream keys a group of several columns.

**Handle states.** Spark's handle moves through ``CREATED`` (``init()`` runs in it), ``INITIALIZED``,
``DATA_PROCESSED``, ``TIMER_PROCESSED`` and ``CLOSED``. ministream's handle moves through ``start_init()``
(``init()`` runs: state variables may be created, and there is no key), ``end_init()`` (the handlers run, each
with its key) and ``leave_keys()`` (the handlers are over: ``close()`` runs with no key);
:data:`HANDLE_STATES` maps Spark's states to them. A test's implicit key (``setImplicitKey``,
``removeImplicitKey``) is the handle's ``enter_keys()`` with the backend's current key, and ``leave_keys()``.
"""

from __future__ import annotations

from functools import partial

import attrs

from ministream.errors import PipelineError
from ministream.operators.processor_handle import EVENT_TIME, NO_TIME, PROCESSING_TIME, ProcessorHandle
from ministream.state.keyed import KeyedStateBackend
from ministream.time.timers import TimerService
from tests.conformance.harness import NotExpressible
from tests.conformance.primitives import PrimitiveCase, check, check_raises

SUITE = "StateVariableSuiteBase"
"""The base the five suites extend; the cases carry the suite that runs them."""
TIMER_SUITE = "TimerSuite"
VALUE_SUITE = "ValueStateSuite"
LIST_SUITE = "ListStateSuite"
MAP_SUITE = "MapStateSuite"
HANDLE_SUITE = "StatefulProcessorHandleSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/execution/streaming/state/ValueStateSuite.scala"
"""The file of ``StateVariableSuiteBase``; the other four suites are its neighbours."""
VARIANT = " (encoding = unsaferow)"
VARIANTS = 2
"""``AlsoTestWithEncodingTypes``: each test name once per state encoding, ``unsaferow`` and ``avro``."""

LONG_MAX, LONG_MIN = 2**63 - 1, -(2**63)
MINUTE, HOUR = 60_000, 3_600_000
BATCH_TIMESTAMP = 10
"""The tests' ``batchTimestampMs = Some(10)``: the processing time their TTL counts from."""

INVALID_HANDLE_STATE = "STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_HANDLE_STATE"
INVALID_TIME_MODE = "STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_TIME_MODE"

HANDLE_STATES = {
    "CREATED": ("start_init",),  # init() is running: Spark calls init() in CREATED
    "INITIALIZED": ("start_init", "end_init"),
    "DATA_PROCESSED": ("start_init", "end_init"),
    "TIMER_PROCESSED": ("start_init", "end_init", "leave_keys"),  # the handlers are over
    "CLOSED": ("start_init", "end_init", "leave_keys"),
}
"""Spark's handle states as the calls that bring ministream's handle there."""

INTERNAL_TTL_READS = (
    "getWithoutEnforcingTTL and getTTLValue(s) are read from the stored entry, (value, expires_at) as ministream's "
    "TTL states keep it (state/ttl.py); Spark's secondary TTL index ({index}) has no counterpart (ministream's "
    "cleanup walks the table), so its checks are left out."
)
NULL_TTL = (
    "TTLConfig(null) is not checked: ministream's ttl=None is TTLConfig.NONE, a state without a time-to-live, so a "
    "null duration is nothing it can be asked for; the {durations} duration is."
)
ENCODER = "ministream keeps Python values as they are (no encoder): the case checks the same operations on {what}."


@attrs.frozen
class TestClass:
    """The suites' ``case class TestClass(id: Long, name: String)``."""

    __test__ = False  # not a pytest test class
    id: int
    name: str


@attrs.frozen
class POJOTestClass:
    """The suites' Java bean ``POJOTestClass(name, id)``."""

    name: str
    id: int


# -- what a test opens: a store, handles on it ---------------------------------------------------------------------


@attrs.define
class Store:
    """What ``provider.getStore(0)`` gives a test: one subtask's keyed state and timers. Handles made on the same
    store share them, as Spark's handles on one store do."""

    backend: KeyedStateBackend = attrs.field(factory=KeyedStateBackend)
    timers: TimerService = attrs.field(factory=TimerService)

    def handle(self, time_mode: str = NO_TIME, batch_timestamp: int | None = None) -> ProcessorHandle:
        """``new StatefulProcessorHandleImpl(store, ..., timeMode, batchTimestampMs)`` (or ``new TimerStateImpl``)."""
        return ProcessorHandle(self.backend, self.timers, time_mode, now=lambda: batch_timestamp)

    def set_key(self, key) -> None:
        """``ImplicitGroupingKeyTracker.setImplicitKey(key)``."""
        self.backend.set_current_key(key)

    def stored(self, name: str):
        """What state ``name`` stores under the current key (a TTL state: its values with their expiry stamps)."""
        return self.backend.get(name)


def set_handle_state(handle: ProcessorHandle, state: str) -> None:
    """``handle.setHandleState(state)``, as ministream's two flags (:data:`HANDLE_STATES`)."""
    for step in HANDLE_STATES[state]:
        getattr(handle, step)()


def expired_timers(handle: ProcessorHandle, time: int) -> list[tuple]:
    """``getExpiredTimers(time)``: every timer of the handle's time mode due at ``time``, of any key, as ``(key,
    timestamp)`` in firing order; they stay registered."""
    due = handle.timers.due_event_time if handle.time_mode == EVENT_TIME else handle.timers.due_processing_time
    return [(key, timestamp) for timestamp, keys in due(time) for key in keys]


def ttl_states(handle: ProcessorHandle) -> list:
    """``handle.ttlStates``: the state variables the end-of-batch TTL cleanup visits."""
    return [state for state in handle.states.values() if hasattr(state, "remove_expired")]


def values(state) -> list:
    """``MapState.values()``: the map's values in the order of its keys."""
    return [value for _, value in state.items()]


# -- TimerSuite ----------------------------------------------------------------------------------------------------

TIMER_MODES = {"Processing": PROCESSING_TIME, "Event": EVENT_TIME}
"""``testWithTimeMode``: each test once per time mode, named ``"<mode> timer - <test>"``."""


def timer_single_instance_with_single_key(mode: str) -> None:
    store = Store()
    store.set_key("test_key")
    timer_state = store.handle(mode)
    timer_state.register_timer(1 * 1000)
    check("listTimers", set(timer_state.list_timers()), {1000})
    check("getExpiredTimers(Long.MaxValue)", expired_timers(timer_state, LONG_MAX), [("test_key", 1000)])
    check("getExpiredTimers(Long.MinValue)", expired_timers(timer_state, LONG_MIN), [])

    timer_state.register_timer(20 * 1000)
    check("listTimers", set(timer_state.list_timers()), {20000, 1000})
    timer_state.delete_timer(20000)
    check("listTimers after deleteTimer(20000)", set(timer_state.list_timers()), {1000})


def timer_multiple_instances_with_single_key(mode: str) -> None:
    store = Store()
    store.set_key("test_key")
    timer_state1, timer_state2 = store.handle(mode), store.handle(mode)
    timer_state1.register_timer(1 * 1000)
    timer_state2.register_timer(15 * 1000)
    check("timerState1.listTimers", set(timer_state1.list_timers()), {15000, 1000})
    check(
        "getExpiredTimers(Long.MaxValue)",
        expired_timers(timer_state1, LONG_MAX),
        [("test_key", 1000), ("test_key", 15000)],
    )
    # a timer at exactly the time asked for is expired
    check("getExpiredTimers(15000)", expired_timers(timer_state1, 15000), [("test_key", 1000), ("test_key", 15000)])
    check("listTimers (getExpiredTimers removes nothing)", set(timer_state1.list_timers()), {15000, 1000})

    timer_state1.register_timer(20 * 1000)
    check("listTimers", set(timer_state1.list_timers()), {20000, 15000, 1000})
    timer_state1.delete_timer(20000)
    check("listTimers after deleteTimer(20000)", set(timer_state1.list_timers()), {15000, 1000})


def timer_multiple_instances_with_multiple_keys(mode: str) -> None:
    store = Store()
    store.set_key("test_key1")
    timer_state1 = store.handle(mode)
    timer_state1.register_timer(1 * 1000)
    timer_state1.register_timer(2 * 1000)
    check("listTimers of test_key1", set(timer_state1.list_timers()), {1000, 2000})

    store.set_key("test_key2")
    timer_state2 = store.handle(mode)
    timer_state2.register_timer(15 * 1000)

    store.set_key("test_key1")
    check(
        "getExpiredTimers(Long.MaxValue)",
        expired_timers(timer_state1, LONG_MAX),
        [("test_key1", 1000), ("test_key1", 2000), ("test_key2", 15000)],
    )
    check("getExpiredTimers(10000)", expired_timers(timer_state1, 10000), [("test_key1", 1000), ("test_key1", 2000)])
    check("listTimers of test_key1", set(timer_state1.list_timers()), {1000, 2000})

    store.set_key("test_key2")
    check("listTimers of test_key2", set(timer_state2.list_timers()), {15000})
    check("getExpiredTimers(1500), of every key", expired_timers(timer_state2, 1500), [("test_key1", 1000)])


def timer_range_scan_single_instance(mode: str) -> None:
    store = Store()
    store.set_key("test_key")
    timer_state = store.handle(mode)
    timestamps = [931, 8000, 452300, 4200, 90, 1, 2, 8, 3, 35, 6, 9, 5]
    for timestamp in timestamps:  # registered out of order
        timer_state.register_timer(timestamp)
    expired = [timestamp for _, timestamp in expired_timers(timer_state, LONG_MAX)]
    check("getExpiredTimers(Long.MaxValue) timestamps", expired, sorted(timestamps))
    expired = [timestamp for _, timestamp in expired_timers(timer_state, 4200)]
    check("getExpiredTimers(4200) timestamps", expired, [t for t in sorted(timestamps) if t <= 4200])
    check("getExpiredTimers(Long.MinValue)", expired_timers(timer_state, LONG_MIN), [])


def timer_range_scan_multiple_instances(mode: str) -> None:
    store = Store()
    store.set_key("test_key1")
    timer_state1 = store.handle(mode)
    timestamps1 = [64, 32, 1024, 4096, 0, 1]
    for timestamp in timestamps1:
        timer_state1.register_timer(timestamp)
    timer_state2 = store.handle(mode)
    timestamps2 = [931, 8000, 452300, 4200]
    for timestamp in timestamps2:
        timer_state2.register_timer(timestamp)

    store.set_key("test_key3")
    timer_state3 = store.handle(mode)
    timestamps3 = [1, 2, 8, 3]
    for timestamp in timestamps3:
        timer_state3.register_timer(timestamp)

    every = sorted(timestamps1 + timestamps2 + timestamps3)
    expired = [timestamp for _, timestamp in expired_timers(timer_state1, LONG_MAX)]
    check("getExpiredTimers(Long.MaxValue) timestamps", expired, every)
    check("getExpiredTimers(Long.MinValue)", expired_timers(timer_state1, LONG_MIN), [])
    expired = [timestamp for _, timestamp in expired_timers(timer_state1, 8000)]
    check("getExpiredTimers(8000) timestamps", expired, [t for t in every if t <= 8000])


def timer_non_primitive_key(mode: str) -> None:
    store = Store()
    key = (1, "k1")  # TestClass(1L, "k1"): a grouping key of two columns
    store.set_key(key)
    timer_state = store.handle(mode)
    timer_state.register_timer(1 * 1000)
    check("listTimers", set(timer_state.list_timers()), {1000})
    check("getExpiredTimers(Long.MaxValue)", expired_timers(timer_state, LONG_MAX), [(key, 1000)])
    check("getExpiredTimers(Long.MinValue)", expired_timers(timer_state, LONG_MIN), [])

    timer_state.register_timer(20 * 1000)
    check("listTimers", set(timer_state.list_timers()), {20000, 1000})
    timer_state.delete_timer(20000)
    check("listTimers after deleteTimer(20000)", set(timer_state.list_timers()), {1000})


TIMER_TESTS = [
    ("single instance with single key", 43, timer_single_instance_with_single_key),
    ("multiple instances with single key", 62, timer_multiple_instances_with_single_key),
    ("multiple instances with multiple keys", 88, timer_multiple_instances_with_multiple_keys),
    (
        "Range scan on second index timer key - verify timestamp is sorted for single instance",
        121,
        timer_range_scan_single_instance,
    ),
    (
        "test range scan on second index timer key - verify timestamp is sorted for multiple instances",
        141,
        timer_range_scan_multiple_instances,
    ),
    ("Timer state operations with non-primitive type", 174, timer_non_primitive_key),
]

TIMER_CASES = [
    PrimitiveCase(
        TIMER_SUITE,
        f"{name} timer - {test}{VARIANT}",
        line,
        lambda run=run, mode=mode: run(mode),
        variants=VARIANTS,
        notes="Two TimerStateImpl on one store are two handles on one TimerService; getExpiredTimers is the "
        "service's due timers, left registered.",
    )
    for test, line, run in TIMER_TESTS
    for name, mode in TIMER_MODES.items()
]


# -- ValueStateSuite -----------------------------------------------------------------------------------------------


def value_implicit_key_operations() -> None:
    store = Store()
    handle = store.handle()
    state_name = "testState"
    test_state = handle.get_value_state("testState")
    handle.leave_keys()  # no implicit key
    check_raises(
        "update with no implicit key", lambda: test_state.update(123), PipelineError, "INTERNAL_ERROR_TWS", state_name
    )
    handle.enter_keys()
    store.set_key("test_key")
    test_state.update(123)
    check("get", test_state.value(), 123)

    handle.leave_keys()  # removeImplicitKey
    check_raises(
        "update after the implicit key was removed",
        lambda: test_state.update(123),
        PipelineError,
        "INTERNAL_ERROR_TWS",
        state_name,
    )


def value_single_instance() -> None:
    store = Store()
    handle = store.handle()
    test_state = handle.get_value_state("testState")
    store.set_key("test_key")
    test_state.update(123)
    check("get", test_state.value(), 123)
    test_state.clear()
    check("exists after clear", test_state.exists(), False)
    check("get after clear", test_state.value(), None)

    test_state.update(456)
    check("get", test_state.value(), 456)
    check("get again", test_state.value(), 456)
    test_state.update(123)
    check("get", test_state.value(), 123)

    test_state.clear()
    check("exists after clear", test_state.exists(), False)
    check("get after clear", test_state.value(), None)


def value_multiple_instances() -> None:
    store = Store()
    handle = store.handle()
    test_state1 = handle.get_value_state("testState1")
    test_state2 = handle.get_value_state("testState2")
    store.set_key("test_key")
    test_state1.update(123)
    check("testState1.get", test_state1.value(), 123)
    test_state1.clear()
    check("testState1.exists after clear", test_state1.exists(), False)
    check("testState1.get after clear", test_state1.value(), None)

    test_state2.update(456)
    check("testState2.get", test_state2.value(), 456)
    test_state2.clear()
    check("testState2.exists after clear", test_state2.exists(), False)
    check("testState2.get after clear", test_state2.value(), None)

    test_state1.update(456)
    check("testState1.get", test_state1.value(), 456)
    check("testState1.get again", test_state1.value(), 456)
    test_state1.update(123)
    check("testState1.get", test_state1.value(), 123)

    test_state2.update(123)
    check("testState2.get", test_state2.value(), 123)
    check("testState2.get again", test_state2.value(), 123)
    test_state2.update(456)
    check("testState2.get", test_state2.value(), 456)

    test_state1.clear()
    check("testState1.exists after clear", test_state1.exists(), False)
    check("testState1.get after clear", test_state1.value(), None)

    test_state2.clear()
    check("testState2.exists after clear", test_state2.exists(), False)
    check("testState2.get after clear", test_state2.value(), None)


def value_operations_on(first, second, third):
    """The four ``test SQL encoder`` tests: update, clear, update twice, clear, with three values of one type."""

    def run() -> None:
        store = Store()
        handle = store.handle()
        test_state = handle.get_value_state("testState")
        store.set_key("test_key")
        test_state.update(first)
        check("get", test_state.value(), first)
        test_state.clear()
        check("exists after clear", test_state.exists(), False)
        check("get after clear", test_state.value(), None)

        test_state.update(second)
        check("get", test_state.value(), second)
        test_state.update(third)
        check("get", test_state.value(), third)

        test_state.clear()
        check("exists after clear", test_state.exists(), False)
        check("get after clear", test_state.value(), None)

    return run


def value_ttl(key, value):
    """``test Value state TTL`` (``"v1"`` under ``"test_key"``) and ``Value state TTL with non-primitive type``
    (a bean under a case-class key, which stops after the first batch's checks)."""

    def run(next_batch: bool = True) -> None:
        store = Store()
        timestamp_ms = BATCH_TIMESTAMP
        handle = store.handle(PROCESSING_TIME, batch_timestamp=timestamp_ms)
        test_state = handle.get_value_state("testState", ttl=MINUTE)
        store.set_key(key)
        test_state.update(value)
        check("get", test_state.value(), value)
        check("getWithoutEnforcingTTL", store.stored("testState")[0], value)

        ttl_expiration_ms = timestamp_ms + 60_000
        check("getTTLValue's expiry", store.stored("testState")[1], ttl_expiration_ms)
        if not next_batch:
            return

        # the next batch runs at the expiry time: the value is expired
        next_batch_handle = store.handle(PROCESSING_TIME, batch_timestamp=ttl_expiration_ms)
        next_batch_test_state = next_batch_handle.get_value_state("testState", ttl=MINUTE)
        store.set_key(key)
        check("exists once expired", next_batch_test_state.exists(), False)
        check("get once expired", next_batch_test_state.value(), None)

        # the expired value is still stored, with its expiry, until the cleanup
        check("getTTLValue's expiry once expired", store.stored("testState")[1], ttl_expiration_ms)
        check("getWithoutEnforcingTTL once expired", store.stored("testState")[0], value)

        next_batch_test_state.clear()
        check("exists after clear", next_batch_test_state.exists(), False)
        check("get after clear", next_batch_test_state.value(), None)

    return run


def non_positive_ttl(kind: str, ttls: tuple[int, ...] = (-MINUTE,)):
    """``get<Kind>State("testState", TTLConfig(ttl))`` with each ttl, none of them positive: refused, naming the
    state (Spark: ``STATEFUL_PROCESSOR_TTL_DURATION_MUST_BE_POSITIVE``)."""

    def run() -> None:
        handle = Store().handle(PROCESSING_TIME, batch_timestamp=BATCH_TIMESTAMP)
        get_state = getattr(handle, f"get_{kind}_state")
        for ttl in ttls:
            check_raises(
                f"get_{kind}_state with a TTL of {ttl} ms",
                lambda ttl=ttl: get_state("testState", ttl=ttl),
                ValueError,
                "testState",
            )

    return run


VALUE_CASES = [
    PrimitiveCase(
        VALUE_SUITE,
        "Implicit key operations" + VARIANT,
        49,
        value_implicit_key_operations,
        variants=VARIANTS,
        notes="No implicit key is the handle's leave_keys(), as after the handlers. Upstream checks "
        "INTERNAL_ERROR_TWS with the message 'Implicit key not found in state store for stateName=testState'; "
        "the case checks the class and the state name.",
    ),
    PrimitiveCase(
        VALUE_SUITE, "Value state operations for single instance" + VARIANT, 94, value_single_instance, VARIANTS
    ),
    PrimitiveCase(
        VALUE_SUITE, "Value state operations for multiple instances" + VARIANT, 121, value_multiple_instances, VARIANTS
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test SQL encoder - Value state operations for Primitive(Double) instances" + VARIANT,
        206,
        value_operations_on(1.0, 2.0, 3.0),
        variants=VARIANTS,
        notes=ENCODER.format(what="floats"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test SQL encoder - Value state operations for Primitive(Long) instances" + VARIANT,
        232,
        value_operations_on(1, 2, 3),
        variants=VARIANTS,
        notes=ENCODER.format(what="ints"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test SQL encoder - Value state operations for case class instances" + VARIANT,
        258,
        value_operations_on(TestClass(1, "testcase1"), TestClass(2, "testcase2"), TestClass(3, "testcase3")),
        variants=VARIANTS,
        notes=ENCODER.format(what="instances of a class"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test SQL encoder - Value state operations for POJO instances" + VARIANT,
        284,
        value_operations_on(
            POJOTestClass("testcase1", 1), POJOTestClass("testcase2", 2), POJOTestClass("testcase3", 3)
        ),
        variants=VARIANTS,
        notes=ENCODER.format(what="instances of a class"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test Value state TTL" + VARIANT,
        310,
        value_ttl("test_key", "v1"),
        variants=VARIANTS,
        notes="The next batch is a second handle on the same store, its processing time the expiry. "
        + INTERNAL_TTL_READS.format(index="getValueInTTLState"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "test null or zero TTL duration throws error" + VARIANT,
        365,
        non_positive_ttl("value"),
        variants=VARIANTS,
        notes="Upstream checks STATEFUL_PROCESSOR_TTL_DURATION_MUST_BE_POSITIVE with stateName=testState; "
        "ministream names no error class here, so the case checks the refusal and the state name. "
        + NULL_TTL.format(durations="-1 minute"),
    ),
    PrimitiveCase(
        VALUE_SUITE,
        "Value state TTL with non-primitive type" + VARIANT,
        392,
        lambda: value_ttl((1, "k1"), POJOTestClass("n1", 1))(next_batch=False),
        variants=VARIANTS,
        notes="The grouping key TestClass(1L, \"k1\") is the tuple (1, 'k1'). "
        + INTERNAL_TTL_READS.format(index="getValueInTTLState"),
    ),
]

VALUE_NOT_EXPRESSIBLE = [
    NotExpressible(
        VALUE_SUITE,
        "Value state operations for unsupported type name should fail" + VARIANT,
        166,
        "the name '$testState' is refused because Spark names its internal column families (timers, TTL indexes) "
        "with a reserved prefix in the same store (STATE_STORE_CANNOT_CREATE_COLUMN_FAMILY_WITH_RESERVED_CHARS); "
        "ministream keeps timers and TTL stamps outside the variables' namespace and reserves no name",
        variants=VARIANTS,
    ),
    NotExpressible(
        VALUE_SUITE,
        "colFamily with HDFSBackedStateStoreProvider should fail" + VARIANT,
        187,
        "a state store provider that cannot hold several column families: a property of Spark's storage "
        "(UNSUPPORTED_FEATURE.STATE_STORE_MULTIPLE_COLUMN_FAMILIES), with no ministream counterpart",
        variants=VARIANTS,
    ),
]


# -- ListStateSuite ------------------------------------------------------------------------------------------------


def list_with_null(operation: str):
    """``Test list operation(appendList|put) with null``: the list state refuses a null list."""

    def run() -> None:
        store = Store()
        handle = store.handle()
        list_state = handle.get_list_state("listState")
        store.set_key("test_key")
        call = {"appendList": list_state.add_all, "put": list_state.update}[operation]
        check_raises(
            f"{operation}(null)", lambda: call(None), PipelineError, "ILLEGAL_STATE_STORE_VALUE.NULL_VALUE", "listState"
        )

    return run


def list_single_instance() -> None:
    store = Store()
    handle = store.handle()
    test_state = handle.get_list_state("testState")
    store.set_key("test_key")

    test_state.add(123)
    check("get", test_state.get(), [123])
    test_state.clear()
    check("exists after clear", test_state.exists(), False)
    check("get after clear", test_state.get(), [])

    test_state.add_all([123, 456])
    check("get after appendList", test_state.get(), [123, 456])
    test_state.add(789)
    check("get after appendValue", test_state.get(), [123, 456, 789])

    test_state.clear()
    check("exists after clear", test_state.exists(), False)
    check("get after clear", test_state.get(), [])


def list_value_ordering(put, appended, append_list, after_clear, append_list_after_clear):
    """The three ``list state - value ordering`` tests: the list keeps the order its values were written in,
    through ``put``, ``appendValue``, ``appendList`` and ``clear``."""

    def run() -> None:
        store = Store()
        handle = store.handle()
        test_state = handle.get_list_state("testState")
        store.set_key("test_key")

        test_seq = list(put)
        test_state.update(test_seq)
        check("get after put", test_state.get(), test_seq)
        for value in appended:
            test_state.add(value)
        test_seq = test_seq + list(appended)
        check("get after appendValue", test_state.get(), test_seq)

        test_state.add_all(list(append_list))
        test_seq = test_seq + list(append_list)
        check("get after appendList", test_state.get(), test_seq)

        test_state.clear()
        for value in after_clear:
            test_state.add(value)
        test_seq = list(after_clear)
        check("get after clear and appendValue", test_state.get(), test_seq)

        test_state.add_all(list(append_list_after_clear))
        test_seq = test_seq + list(append_list_after_clear)
        check("get after appendList", test_state.get(), test_seq)

        test_state.clear()
        check("exists after clear", test_state.exists(), False)
        check("get after clear", test_state.get(), [])

    return run


LONGS = [931, 8000, 452300, 4200, -1, 90, 1, 2, 8, -230, -14569, -92, -7434253, 35, 6, 9, -323, 5]
STRINGS = ["test", "actual", "state", "value", "ordering", "string", "", "type"]
CLASSES = [
    TestClass(931, "test"),
    TestClass(8000, "verification"),
    TestClass(452300, "state"),
    TestClass(4200, "actual"),
    TestClass(-1, "value"),
    TestClass(90, "ordering"),
    TestClass(1, "string"),
]


def list_multiple_instances() -> None:
    store = Store()
    handle = store.handle()
    test_state1 = handle.get_list_state("testState1")
    test_state2 = handle.get_list_state("testState2")
    store.set_key("test_key")

    test_state1.add(123)
    test_state2.add(456)
    check("testState1.get", test_state1.get(), [123])
    check("testState2.get", test_state2.get(), [456])
    test_state1.clear()
    check("testState1.exists after clear", test_state1.exists(), False)
    check("testState2.exists", test_state2.exists(), True)
    check("testState1.get after clear", test_state1.get(), [])

    test_state1.add_all([123, 456])
    check("testState1.get", test_state1.get(), [123, 456])
    test_state2.add_all([123])
    check("testState2.get", test_state2.get(), [456, 123])

    test_state1.add(789)
    check("testState1.get", test_state1.get(), [123, 456, 789])
    check("testState2.get", test_state2.get(), [456, 123])

    test_state2.clear()
    check("testState2.exists after clear", test_state2.exists(), False)
    check("testState1.exists", test_state1.exists(), True)
    check("testState2.get after clear", test_state2.get(), [])


def list_with_value_and_another_list() -> None:
    store = Store()
    handle = store.handle()
    list_state1 = handle.get_list_state("listState1")
    list_state2 = handle.get_list_state("listState2")
    value_state = handle.get_value_state("valueState")
    store.set_key("test_key")

    value_state.update(123)
    list_state1.add(123)
    list_state2.add(456)
    check("listState1.get", list_state1.get(), [123])
    check("listState2.get", list_state2.get(), [456])
    check("valueState.get", value_state.value(), 123)

    list_state1.clear()
    value_state.clear()
    check("listState1.exists after clear", list_state1.exists(), False)
    check("listState2.exists", list_state2.exists(), True)
    check("valueState.exists after clear", value_state.exists(), False)
    check("listState1.get after clear", list_state1.get(), [])


def list_ttl(key, values_put):
    """``test List state TTL`` (three strings under ``"test_key"``) and ``ListState TTL with non-primitive types``
    (case-class values under a bean key, which stops after the first batch's checks)."""

    def run(next_batch: bool = True) -> None:
        store = Store()
        timestamp_ms = BATCH_TIMESTAMP
        handle = store.handle(PROCESSING_TIME, batch_timestamp=timestamp_ms)
        test_state = handle.get_list_state("testState", ttl=MINUTE)
        store.set_key(key)
        test_state.update(values_put)
        check("get", test_state.get(), values_put)
        check("getWithoutEnforcingTTL", [value for value, _ in store.stored("testState")], values_put)

        ttl_expiration_ms = timestamp_ms + 60_000
        expiries = [expires_at for _, expires_at in store.stored("testState")]
        check("getTTLValues's expiries", expiries, [ttl_expiration_ms] * len(values_put))
        if not next_batch:
            return

        next_batch_handle = store.handle(PROCESSING_TIME, batch_timestamp=ttl_expiration_ms)
        next_batch_test_state = next_batch_handle.get_list_state("testState", ttl=MINUTE)
        store.set_key(key)
        check("exists once expired", next_batch_test_state.exists(), False)
        check("get once expired", next_batch_test_state.get(), [])

        expiries = [expires_at for _, expires_at in store.stored("testState")]
        check("getTTLValues's expiries once expired", expiries, [ttl_expiration_ms] * len(values_put))
        stored = [value for value, _ in store.stored("testState")]
        check("getWithoutEnforcingTTL once expired", stored, values_put)

        next_batch_test_state.clear()
        check("exists after clear", next_batch_test_state.exists(), False)
        check("get after clear", next_batch_test_state.get(), [])

    return run


LIST_CASES = [
    *(
        PrimitiveCase(
            LIST_SUITE, f"Test list operation({operation}) with null" + VARIANT, 63, list_with_null(operation), VARIANTS
        )
        for operation in ("appendList", "put")
    ),
    PrimitiveCase(
        LIST_SUITE, "List state operations for single instance" + VARIANT, 73, list_single_instance, VARIANTS
    ),
    PrimitiveCase(
        LIST_SUITE,
        "list state - value ordering - long type" + VARIANT,
        103,
        list_value_ordering(LONGS, [100, 9, 48972], [-1, 2942450, 7], [3451, 24, -14342429], LONGS),
        variants=VARIANTS,
    ),
    PrimitiveCase(
        LIST_SUITE,
        "list state - value ordering - string type" + VARIANT,
        148,
        list_value_ordering(
            STRINGS,
            ["hello", "world", "verification"],
            ["test string", "stateful", "processor", "handle"],
            [" validate space in front", "validate space in back ", " validate space in both "],
            STRINGS + ["hello", "world", "verification"],
        ),
        variants=VARIANTS,
    ),
    PrimitiveCase(
        LIST_SUITE,
        "list state - value ordering - case class type" + VARIANT,
        194,
        list_value_ordering(
            CLASSES,
            [TestClass(2, "type"), TestClass(-323, "hello"), TestClass(48972, " verify with space")],
            [
                TestClass(-1, "space at end "),
                TestClass(2942450, " space before and after "),
                TestClass(7, "sample_string"),
            ],
            [TestClass(3451, "values"), TestClass(24, "ordering"), TestClass(-14342429, "state")],
            CLASSES,
        ),
        variants=VARIANTS,
        notes=ENCODER.format(what="instances of a class"),
    ),
    PrimitiveCase(
        LIST_SUITE, "List state operations for multiple instance" + VARIANT, 245, list_multiple_instances, VARIANTS
    ),
    PrimitiveCase(
        LIST_SUITE,
        "List state operations with list, value, another list instances" + VARIANT,
        285,
        list_with_value_and_another_list,
        variants=VARIANTS,
    ),
    PrimitiveCase(
        LIST_SUITE,
        "test List state TTL" + VARIANT,
        316,
        list_ttl("test_key", ["v1", "v2", "v3"]),
        variants=VARIANTS,
        notes="The next batch is a second handle on the same store, its processing time the expiry. "
        + INTERNAL_TTL_READS.format(index="getValueInTTLState, the list's min-expiry row"),
    ),
    PrimitiveCase(
        LIST_SUITE,
        "test null or negative TTL duration throws error" + VARIANT,
        371,
        non_positive_ttl("list"),
        variants=VARIANTS,
        notes="Upstream checks STATEFUL_PROCESSOR_TTL_DURATION_MUST_BE_POSITIVE with stateName=testState; "
        "ministream names no error class here, so the case checks the refusal and the state name. "
        + NULL_TTL.format(durations="-1 minute"),
    ),
    PrimitiveCase(
        LIST_SUITE,
        "ListState TTL with non-primitive types" + VARIANT,
        398,
        lambda: list_ttl(("gk1", 1), [TestClass(1, "v1"), TestClass(2, "v2"), TestClass(3, "v3")])(next_batch=False),
        variants=VARIANTS,
        notes="The grouping key POJOTestClass(\"gk1\", 1) is the tuple ('gk1', 1). "
        + INTERNAL_TTL_READS.format(index="getValueInTTLState, the list's min-expiry row"),
    ),
]


# -- MapStateSuite -------------------------------------------------------------------------------------------------


def map_single_instance() -> None:
    store = Store()
    handle = store.handle(PROCESSING_TIME)
    test_state = handle.get_map_state("testState")
    store.set_key("test_key")
    test_state.put("k1", 1.0)
    check("getValue(k1)", test_state.get("k1"), 1.0)
    # update an existing value, add a new key
    test_state.put("k1", 1.0)
    test_state.put("k2", 2.0)
    check("getValue(k1)", test_state.get("k1"), 1.0)
    check("getValue(k2)", test_state.get("k2"), 2.0)
    test_state.put("k1", 3.0)
    check("getValue(k1)", test_state.get("k1"), 3.0)

    check("keys", test_state.keys(), ["k1", "k2"])
    check("values", values(test_state), [3.0, 2.0])

    test_state.remove("k1")
    check("getValue(k1) after removeKey", test_state.get("k1"), None)
    check("containsKey(k1) after removeKey", test_state.contains("k1"), False)

    test_state.clear()
    check("exists after clear", test_state.exists(), False)
    check("iterator after clear", test_state.items(), [])


def map_multiple_instances() -> None:
    store = Store()
    handle = store.handle(PROCESSING_TIME)
    test_state1 = handle.get_map_state("testState1")
    test_state2 = handle.get_map_state("testState2")
    store.set_key("test_key")
    test_state1.put(1, 1.0)
    check("testState1.getValue(1)", test_state1.get(1), 1.0)
    check("testState2.containsKey(1)", test_state2.contains(1), False)
    test_state1.put(1, 2.0)
    test_state2.put(2, 3)
    check("testState1.getValue(1)", test_state1.get(1), 2.0)
    check("testState2.getValue(2)", test_state2.get(2), 3)

    check("testState1.keys", test_state1.keys(), [1])
    check("testState2.keys", test_state2.keys(), [2])
    check("testState1.values", values(test_state1), [2.0])
    check("testState2.values", values(test_state2), [3])

    test_state1.remove(1)
    check("testState1.getValue(1) after removeKey", test_state1.get(1), None)
    check("testState1.containsKey(1) after removeKey", test_state1.contains(1), False)

    test_state2.clear()
    check("testState1.exists", test_state1.exists(), False)
    check("testState2.exists after clear", test_state2.exists(), False)
    check("testState1.iterator", test_state1.items(), [])
    check("testState2.iterator", test_state2.items(), [])


def map_with_list_value_and_another_map() -> None:
    store = Store()
    handle = store.handle(PROCESSING_TIME)
    map_test_state1 = handle.get_map_state("mapTestState1")
    map_test_state2 = handle.get_map_state("mapTestState2")
    value_test_state = handle.get_value_state("valueTestState")
    list_test_state = handle.get_list_state("listTestState")
    store.set_key("test_key")

    value_test_state.update("v1")
    list_test_state.update(["v1"])
    map_test_state1.put("k1", 1)
    map_test_state2.put("k2", 2)
    check("valueTestState.get", value_test_state.value(), "v1")
    check("listTestState.get", list_test_state.get(), ["v1"])
    check("mapTestState1.getValue(k1)", map_test_state1.get("k1"), 1)
    check("mapTestState2.getValue(k2)", map_test_state2.get("k2"), 2)

    value_test_state.update("v2")
    list_test_state.add("v3")
    map_test_state1.put("k1", 3)
    map_test_state2.put("k2", 4)
    check("valueTestState.get", value_test_state.value(), "v2")
    check("listTestState.get", list_test_state.get(), ["v1", "v3"])
    check("mapTestState1.getValue(k1)", map_test_state1.get("k1"), 3)
    check("mapTestState2.getValue(k2)", map_test_state2.get("k2"), 4)

    list_test_state.add_all(["v4"])
    map_test_state1.put("k3", 5)
    map_test_state2.put("k4", 6)
    check("valueTestState.get", value_test_state.value(), "v2")
    check("listTestState.get", list_test_state.get(), ["v1", "v3", "v4"])
    check("mapTestState1.keys", map_test_state1.keys(), ["k1", "k3"])
    check("mapTestState2.values", values(map_test_state2), [4, 6])

    value_test_state.clear()
    list_test_state.clear()
    map_test_state1.clear()
    map_test_state2.remove("k4")
    check("valueTestState.exists after clear", value_test_state.exists(), False)
    check("listTestState.exists after clear", list_test_state.exists(), False)
    check("mapTestState1.exists after clear", map_test_state1.exists(), False)
    check("mapTestState2.exists", map_test_state2.exists(), True)
    check("mapTestState2.iterator", map_test_state2.items(), [("k2", 4)])


def map_ttl() -> None:
    store = Store()
    timestamp_ms = BATCH_TIMESTAMP
    handle = store.handle(PROCESSING_TIME, batch_timestamp=timestamp_ms)
    test_state = handle.get_map_state("testState", ttl=MINUTE)
    store.set_key("test_key")
    test_state.put("k1", "v1")
    check("getValue(k1)", test_state.get("k1"), "v1")
    check("getWithoutEnforcingTTL(k1)", store.stored("testState")["k1"][0], "v1")

    ttl_expiration_ms = timestamp_ms + 60_000
    check("getTTLValue(k1)'s expiry", store.stored("testState")["k1"][1], ttl_expiration_ms)

    next_batch_handle = store.handle(PROCESSING_TIME, batch_timestamp=ttl_expiration_ms)
    next_batch_test_state = next_batch_handle.get_map_state("testState", ttl=MINUTE)
    store.set_key("test_key")
    check("exists once expired", next_batch_test_state.exists(), False)
    check("getValue(k1) once expired", next_batch_test_state.get("k1"), None)

    check("getTTLValue(k1)'s expiry once expired", store.stored("testState")["k1"][1], ttl_expiration_ms)
    check("getWithoutEnforcingTTL(k1) once expired", store.stored("testState")["k1"][0], "v1")

    next_batch_test_state.clear()
    check("exists after clear", next_batch_test_state.exists(), False)
    check("getValue(k1) after clear", next_batch_test_state.get("k1"), None)


MAP_CASES = [
    PrimitiveCase(MAP_SUITE, "Map state operations for single instance" + VARIANT, 40, map_single_instance, VARIANTS),
    PrimitiveCase(
        MAP_SUITE, "Map state operations for multiple map instances" + VARIANT, 74, map_multiple_instances, VARIANTS
    ),
    PrimitiveCase(
        MAP_SUITE,
        "Map state operations with list, value, another map instances" + VARIANT,
        113,
        map_with_list_value_and_another_map,
        variants=VARIANTS,
    ),
    PrimitiveCase(
        MAP_SUITE,
        "test Map state TTL" + VARIANT,
        173,
        map_ttl,
        variants=VARIANTS,
        notes="The next batch is a second handle on the same store, its processing time the expiry. "
        + INTERNAL_TTL_READS.format(index="getKeyValuesInTTLState"),
    ),
    PrimitiveCase(
        MAP_SUITE,
        "test negative or zero TTL duration throws error" + VARIANT,
        231,
        non_positive_ttl("map", (0, -MINUTE)),  # Duration.ZERO, Duration.ofMinutes(-1)
        variants=VARIANTS,
        notes="Upstream checks STATEFUL_PROCESSOR_TTL_DURATION_MUST_BE_POSITIVE with stateName=testState; "
        "ministream names no error class here, so the case checks the refusal and the state name. "
        + NULL_TTL.format(durations="zero and the -1 minute"),
    ),
]


# -- StatefulProcessorHandleSuite ----------------------------------------------------------------------------------

HANDLE_MODES = {"None": NO_TIME, "ProcessingTime": PROCESSING_TIME, "EventTime": EVENT_TIME}
"""``getTimeMode``: Spark's time modes by the name its test names carry."""


def handle_value_state_creation(mode: str) -> None:
    store = Store()
    handle = store.handle(mode)
    check("the handle is CREATED (init() is not over)", handle.initialized, False)
    handle.get_value_state("testState")


def handle_value_state_creation_in_invalid_state(mode: str) -> None:
    store = Store()
    handle = store.handle(mode)
    for state in ("INITIALIZED", "DATA_PROCESSED", "TIMER_PROCESSED", "CLOSED"):
        set_handle_state(handle, state)
        check_raises(
            f"getValueState in {state}",
            lambda: handle.get_value_state("testState"),
            PipelineError,
            INVALID_HANDLE_STATE,
        )


def handle_timers_with_no_time_mode() -> None:
    store = Store()
    handle = store.handle(NO_TIME)
    for name, call in (("registerTimer", handle.register_timer), ("deleteTimer", handle.delete_timer)):
        check_raises(f"{name} with timeMode=None", lambda call=call: call(10000), PipelineError, INVALID_TIME_MODE)


def handle_timers_succeed(mode: str) -> None:
    store = Store()
    handle = store.handle(mode)
    set_handle_state(handle, "INITIALIZED")
    store.set_key("test_key")
    handle.register_timer(10000)
    handle.delete_timer(10000)


def handle_list_timers(mode: str) -> None:
    store = Store()
    handle = store.handle(mode)
    set_handle_state(handle, "DATA_PROCESSED")

    store.set_key("test_key1")
    timestamps1 = [931, 8000, 452300, 4200, 90, 1, 2, 8, 3, 35, 6, 9, 5]
    for timestamp in timestamps1:
        handle.register_timer(timestamp)
    check("listTimers of test_key1", sorted(handle.list_timers()), sorted(timestamps1))

    store.set_key("test_key2")
    timestamps2 = [12000, 14500, 16000]
    for timestamp in timestamps2:
        handle.register_timer(timestamp)
    check("listTimers of test_key2", sorted(handle.list_timers()), sorted(timestamps2))


def handle_timers_in_invalid_state(mode: str) -> None:
    store = Store()
    handle = store.handle(mode)
    for state in ("CREATED", "TIMER_PROCESSED", "CLOSED"):
        set_handle_state(handle, state)
        check_raises(
            f"registerTimer in {state}", lambda: handle.register_timer(1000), PipelineError, INVALID_HANDLE_STATE
        )


def handle_ttl_states_populated(kind: str):
    """``ttl States are populated for <kind> and timeMode=ProcessingTime``: a state with a time-to-live is
    cleaned up at the end of the batch; the same name asked for again without one adds nothing to clean up."""

    def run() -> None:
        store = Store()
        handle = store.handle(PROCESSING_TIME, batch_timestamp=BATCH_TIMESTAMP)
        get_state = {"valueState": handle.get_value_state, "listState": handle.get_list_state}.get(
            kind, handle.get_map_state
        )
        with_ttl = get_state("testState", ttl=HOUR)
        get_state("testState")  # the same state without a time-to-live: not one to clean up
        cleaned = ttl_states(handle)
        check("ttlStates.size", len(cleaned), 1)
        check("ttlStates.get(0)", cleaned[0], with_ttl._state)  # the state variable behind the key-scoped view

    return run


def handle_ttl_states_not_populated() -> None:
    store = Store()
    handle = store.handle(NO_TIME)
    handle.get_value_state("testValueState")
    handle.get_list_state("testListState")
    handle.get_map_state("testMapState")
    check("ttlStates", ttl_states(handle), [])


HANDLE_STATE_NOTE = (
    "Spark's handle states are the steps of ministream's handle: CREATED is init() running (start_init), "
    "INITIALIZED and DATA_PROCESSED the handlers (end_init), TIMER_PROCESSED and CLOSED after them (leave_keys): "
    "HANDLE_STATES."
)


def per_time_mode(test: str, line: int, run, notes: str = HANDLE_STATE_NOTE, timers: bool = False) -> list:
    """One case per time mode of a test the runner names ``... timeMode=<mode> ...`` (``test`` with ``{mode}``
    in it), each running ``run(mode)``; with ``timers``, only the modes that have timers."""
    return [
        PrimitiveCase(HANDLE_SUITE, test.format(mode=name) + VARIANT, line, partial(run, mode), VARIANTS, notes=notes)
        for name, mode in HANDLE_MODES.items()
        if not (timers and mode == NO_TIME)
    ]


HANDLE_CASES = [
    *per_time_mode(
        "value state creation with timeMode={mode} should succeed",
        47,
        handle_value_state_creation,
        "CREATED is a handle whose init() is not over (initialized is false).",
    ),
    *per_time_mode(
        "value state creation with timeMode={mode} and invalid state should fail",
        87,
        handle_value_state_creation_in_invalid_state,
        HANDLE_STATE_NOTE + " Upstream also checks operationType=get_value_state and the handle state's name, which "
        "ministream's message does not carry.",
    ),
    PrimitiveCase(
        HANDLE_SUITE,
        "registering processing/event time timeouts with None timeMode should fail" + VARIANT,
        106,
        handle_timers_with_no_time_mode,
        variants=VARIANTS,
        notes="Upstream checks STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_TIME_MODE for register_timer "
        "and delete_timer; so does the case.",
    ),
    *per_time_mode("registering timeouts with timeMode={mode} should succeed", 142, handle_timers_succeed, timers=True),
    *per_time_mode("verify listing of registered timers with timeMode={mode}", 163, handle_list_timers, timers=True),
    *per_time_mode(
        "registering timeouts with timeMode={mode} and invalid state should fail",
        203,
        handle_timers_in_invalid_state,
        HANDLE_STATE_NOTE + " The three states the test tries (CREATED, TIMER_PROCESSED, CLOSED) are init() and "
        "after the handlers in ministream.",
        timers=True,
    ),
    *(
        PrimitiveCase(
            HANDLE_SUITE,
            f"ttl States are populated for {kind} and timeMode=ProcessingTime" + VARIANT,
            line,
            handle_ttl_states_populated(kind),
            variants=VARIANTS,
            notes="handle.ttlStates is the state variables the handle's end-of-batch TTL cleanup visits "
            "(remove_expired_state).",
        )
        for kind, line in (("valueState", 220), ("listState", 238), ("mapState", 256))
    ),
    PrimitiveCase(
        HANDLE_SUITE,
        "ttl States are not populated for timeMode=None" + VARIANT,
        275,
        handle_ttl_states_not_populated,
        variants=VARIANTS,
        notes="handle.ttlStates is the state variables the handle's end-of-batch TTL cleanup visits.",
    ),
]


# -- the module's lists --------------------------------------------------------------------------------------------

CASES = TIMER_CASES + VALUE_CASES + LIST_CASES + MAP_CASES + HANDLE_CASES

NOT_EXPRESSIBLE = VALUE_NOT_EXPRESSIBLE
