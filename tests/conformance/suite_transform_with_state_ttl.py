"""Spark's TTL suites for ``transformWithState`` state variables: ``TransformWithValueStateTTLSuite``,
``TransformWithListStateTTLSuite`` and ``TransformWithMapStateTTLSuite`` (Scala), replayed by ministream.

Sources, in ``sql/core/src/test/scala/org/apache/spark/sql/streaming/``: the abstract base
``TransformWithStateTTLTest.scala`` (commit 043b09636e82 of apache/spark, five tests) and the three suites that
extend it, ``TransformWithValueStateTTLSuite.scala`` (two more tests; the version whose
``MultipleValueStatesTTLProcessor`` takes a ``TTLConfig``), ``TransformWithListStateTTLSuite.scala`` (commit
007b0b9fcb00, six more) and ``TransformWithMapStateTTLSuite.scala`` (commit 14b307e5434f, two more): the
versions this project could read, with Spark 4's processor API (``TTLConfig``, ``TimeMode``). Line numbers
refer to them; the base's tests are cited at their lines in ``TransformWithStateTTLTest.scala``. Each suite
runs the base's five tests with its own processor (a value, a list or a map state with a time-to-live), so the
base's tests are one case per suite here. The base mixes in
``AlsoTestWithRocksDBFeatures`` and ``AlsoTestWithEncodingTypes``: each test runs four times (with and without
changelog checkpoints, each in two state encodings), and is one case, named after the first:
``... (with changelog checkpointing) (encoding = unsaferow)`` (the changelog trait's ``test`` adds its suffix
and calls the encoding trait's, which adds its own).

Every test drives processing time with Spark's manual clock (``StreamManualClock``, a class of Spark's
tests): ministream replays them, each ``AdvanceManualClock`` a trigger firing at the new time (processing
time, Spark's batch timestamp, is the clock's time; a write at ``t`` expires at ``t + ttl``); there is no
Spark replay.

**What is not checked.** The suites' processors cast their state to Spark's implementation classes
(``ValueStateImplWithTTL`` and friends) and read what only those give, through test-only methods:

- ``get_ttl_value_from_state``: the expiry stamp stored beside each value (``getTTLValue(s)``);
- ``get_values_in_ttl_state`` and ``get_values_in_min_state``: the rows of Spark's secondary TTL index and of
  the list state's min-expiry index (``getValuesInTTLState``, ``getValueInTTLState``, ``getMinValues``,
  ``getKeyValuesInTTLState``);
- ``get_without_enforcing_ttl``: the stored value read past its expiry (``getWithoutEnforcingTTL``), which says
  whether the end-of-batch cleanup removed it.

These are engine internals, with no counterpart in ministream's processor API. Here the processors' actions
of those names do nothing, and the checks of batches that only ran them are left out (each case's notes say
which); the batches themselves still run, at the same times. The values a processor reads with ``get`` (and
the map's ``iterator``) are checked, as are the empty answers of batches that only write. State metrics
(``assertNumStateRows``, custom metrics) are not checked either.
"""

from ministream.operators.process import Processor
from tests.conformance.harness import (
    MANUAL_CLOCK,
    ROCKSDB,
    AdvanceManualClock,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    case,
    check_new,
)

SUITE = "TransformWithStateTTLTest"
"""The abstract base; the cases carry the suite that runs them."""
VALUE_SUITE = "TransformWithValueStateTTLSuite"
LIST_SUITE = "TransformWithListStateTTLSuite"
MAP_SUITE = "TransformWithMapStateTTLSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateTTLTest.scala"
VARIANT = " (with changelog checkpointing) (encoding = unsaferow)"
VARIANTS = 4
INPUT_EVENT = "key STRING, action STRING, value INT"
"""The suites' ``InputEvent(key, action, value, eventTime)``; ``eventTime`` is always null and unused."""
MAP_INPUT_EVENT = "key STRING, userKey STRING, action STRING, value INT"
"""The map suite's ``MapInputEvent(key, userKey, action, value)``."""
OUTPUT_EVENT = ("key", "value", "isTTLValue", "ttlValue")
"""The suites' ``OutputEvent(key, value, isTTLValue, ttlValue)``."""
MAP_OUTPUT_EVENT = ("key", "userKey", "value", "isTTLValue", "ttlValue")
"""The map suite's ``MapOutputEvent(key, userKey, value, isTTLValue, ttlValue)``."""
MINUTE = 60_000


def named(test: str) -> str:
    return test + VARIANT


def event(key: str, action: str, value: int = -1) -> tuple:
    """An ``InputEvent(key, action, value)`` of the tests."""
    return (key, action, value)


def got(key: str, value) -> tuple:
    """``OutputEvent(key, value, isTTLValue = false, -1)``: a value the processor read with ``get``."""
    return (key, value, False, -1)


# -- the suites' processors, in ministream -------------------------------------------------------------------------


class ValueStateTtl(Processor):
    """``ValueStateTTLProcessor``: a value state ``valueState`` with a time-to-live; each row is an action on
    it (``TTLInputProcessFunction.processRow``): ``put`` writes the row's value, ``get`` outputs the value if
    the key has a live one; the internal reads do nothing here."""

    output_schema = "key STRING, value INT, isTTLValue BOOLEAN, ttlValue BIGINT"

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.state = handle.get_value_state("valueState", ttl=self.ttl)

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            if row["action"] == "get" and self.state.exists():
                out.append({"key": key, "value": self.state.value(), "isTTLValue": False, "ttlValue": -1})
            elif row["action"] == "put":
                self.state.update(row["value"])
        return out


class MultipleValueStatesTtl(ValueStateTtl):
    """``MultipleValueStatesTTLProcessor(ttlKey, noTtlKey, ttlConfig)``: the rows of ``ttl_key`` act on a value
    state with a time-to-live (``valueStateTTL``), those of any other key on one without (``valueState``,
    ``processNonTTLStateRow``: only ``put`` and ``get``)."""

    def __init__(self, ttl: int, ttl_key: str):
        super().__init__(ttl)
        self.ttl_key = ttl_key

    def init(self, handle):
        self.with_ttl = handle.get_value_state("valueStateTTL", ttl=self.ttl)
        self.without_ttl = handle.get_value_state("valueState")

    def handle_input_rows(self, key, rows, timer_values):
        self.state = self.with_ttl if key == self.ttl_key else self.without_ttl
        return super().handle_input_rows(key, rows, timer_values)


class ListStateTtl(Processor):
    """``ListStateTTLProcessor``: a list state ``listState`` with a time-to-live (each element its own expiry);
    ``get`` outputs every live element, ``put`` replaces the list with the row's value, ``append`` appends it,
    ``clear`` clears the list; the internal reads do nothing here."""

    output_schema = "key STRING, value INT, isTTLValue BOOLEAN, ttlValue BIGINT"

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.items = handle.get_list_state("listState", ttl=self.ttl)

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            action = row["action"]
            if action == "get":
                out += [{"key": key, "value": v, "isTTLValue": False, "ttlValue": -1} for v in self.items.get()]
            elif action == "put":
                self.items.update([row["value"]])
            elif action == "append":
                self.items.add(row["value"])
            elif action == "clear":
                self.items.clear()
        return out


class MapStateSingleKeyTtl(Processor):
    """``MapStateSingleKeyTTLProcessor``: a map state ``mapState`` with a time-to-live, used under the one map
    key ``"key"``: ``put`` sets it to the row's value, ``get`` outputs its value if live, ``clear`` clears the
    map; the internal reads do nothing here."""

    output_schema = "key STRING, value INT, isTTLValue BOOLEAN, ttlValue BIGINT"

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.map = handle.get_map_state("mapState", ttl=self.ttl)

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            action = row["action"]
            if action == "get" and self.map.contains("key"):
                out.append({"key": key, "value": self.map.get("key"), "isTTLValue": False, "ttlValue": -1})
            elif action == "put":
                self.map.put("key", row["value"])
            elif action == "clear":
                self.map.clear()
        return out


class MapStateTtl(Processor):
    """``MapStateTTLProcessor``: a map state ``mapState`` with a time-to-live, under each row's ``userKey``:
    ``put`` sets it, ``get`` outputs its value if live, ``iterator`` outputs every live entry; the internal
    reads do nothing here."""

    output_schema = "key STRING, userKey STRING, value INT, isTTLValue BOOLEAN, ttlValue BIGINT"

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.map = handle.get_map_state("mapState", ttl=self.ttl)

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            action, user_key = row["action"], row["userKey"]
            if action == "get" and self.map.contains(user_key):
                out.append(map_row(key, user_key, self.map.get(user_key)))
            elif action == "put":
                self.map.put(user_key, row["value"])
            elif action == "iterator":
                out += [map_row(key, k, v) for k, v in self.map.items()]
        return out


def map_row(key: str, user_key: str, value) -> dict:
    return {"key": key, "userKey": user_key, "value": value, "isTTLValue": False, "ttlValue": -1}


class MultiStatefulVariableTtl(Processor):
    """``MultiStatefulVariableTTLProcessor``: a list, a map and a value state, all with the same time-to-live,
    kept in step: each row is appended to the list, put in the map under (its size + 1), and counted in the
    value state; the processor checks that the three agree before and after each row, and outputs the key and
    the list's length."""

    output_schema = "key STRING, count BIGINT"

    def __init__(self, ttl: int):
        self.ttl = ttl

    def init(self, handle):
        self.items = handle.get_list_state("listState", ttl=self.ttl)
        self.map = handle.get_map_state("mapState", ttl=self.ttl)
        self.count = handle.get_value_state("valueState", ttl=self.ttl, default=0)

    def _assert_sanity(self):
        size = len(self.items.get())
        assert size == len(self.map.items()) == self.count.value(), "the three state variables disagree"

    def handle_input_rows(self, key, rows, timer_values):
        self._assert_sanity()
        out = []
        for row in rows:
            self.items.add(row["value"])
            size = len(self.map.items())
            self.map.put(size + 1, size + 1)
            self.count.update(self.count.value() + 1)
            self._assert_sanity()
            out.append({"key": key, "count": len(self.items.get())})
        return out


def ttl_query(processor, group_by: str = "key") -> Query:
    """``inputStream.toDS().groupByKey(...).transformWithState(processor, TimeMode.ProcessingTime(),
    OutputMode.Append())``."""

    def pipeline(inputs):
        return (
            inputs["inputData"]
            .key_by(group_by)
            .process("ttl", processor, time_mode="processing_time", output_mode="append")
        )

    return Query(pipeline, None, "append", conf=ROCKSDB)


PROCESSORS = {VALUE_SUITE: ValueStateTtl, LIST_SUITE: ListStateTtl, MAP_SUITE: MapStateSingleKeyTtl}
"""Each suite's ``getProcessor(ttlConfig)``, which the base's tests run."""

START = StartStream(manual_clock=True)
"""``StartStream(Trigger.ProcessingTime("1 second"), triggerClock = clock)``: the same clock at every start."""


def tick(seconds: int = 1) -> AdvanceManualClock:
    return AdvanceManualClock(seconds * 1_000)


# -- the base's tests, once per suite ------------------------------------------------------------------------------

BASE_LINES = {
    "validate state is evicted at ttl expiry": 53,
    "validate state update updates the expiration timestamp": 130,
    "validate state is evicted at ttl expiry for no data batch": 204,
    "validate only expired keys are removed from the state": 255,
    "validate that clear only clears the current grouping key": 303,
}
"""The lines of the base's tests in ``TransformWithStateTTLTest.scala``."""

INTERNAL_READS = (
    "the checks of the batches that only read Spark's TTL internals (get_ttl_value_from_state, "
    "get_values_in_ttl_state{more}) are not made"
)


def base_cases(suite: str) -> list:
    processor = PROCESSORS[suite]
    query = {"query": ttl_query(processor(MINUTE))}
    return [
        case(
            suite,
            named("validate state is evicted at ttl expiry"),
            BASE_LINES["validate state is evicted at ttl expiry"],
            inputs={"inputData": INPUT_EVENT},
            output=OUTPUT_EVENT,
            queries=query,
            steps=[
                START,
                add("inputData", event("k1", "put", 1)),
                tick(),  # 1000: expires at 61000
                check_new(),
                StopStream(),
                START,
                add("inputData", event("k1", "get")),
                tick(),
                check_new(got("k1", 1)),
                StopStream(),
                START,
                add("inputData", event("k1", "get_ttl_value_from_state")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
                StopStream(),
                START,
                tick(60),  # 64000: expired
                add("inputData", event("k1", "get")),
                tick(),
                check_new(),
                add("inputData", event("k1", "get_without_enforcing_ttl")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
            ],
            variants=VARIANTS,
            spark=MANUAL_CLOCK,
            notes=INTERNAL_READS.format(more=", get_without_enforcing_ttl")
            + "; nor the custom metrics of the last step (the TTL state variables, the values removed by TTL).",
        ),
        case(
            suite,
            named("validate state update updates the expiration timestamp"),
            BASE_LINES["validate state update updates the expiration timestamp"],
            inputs={"inputData": INPUT_EVENT},
            output=OUTPUT_EVENT,
            queries=query,
            steps=[
                START,
                add("inputData", event("k1", "put", 1)),
                tick(),  # 1000: expires at 61000
                check_new(),
                add("inputData", event("k1", "get")),
                tick(),
                check_new(got("k1", 1)),
                add("inputData", event("k1", "get_ttl_value_from_state")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
                tick(30),
                add("inputData", event("k1", "put", 1)),
                add("inputData", event("k1", "get")),
                tick(),  # 35000: the put expires at 95000
                check_new(got("k1", 1)),
                add("inputData", event("k1", "get_ttl_value_from_state")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
                tick(30),
                add("inputData", event("k1", "get")),
                tick(),  # 68000: past the first expiry, not the second
                check_new(got("k1", 1)),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
            ],
            variants=VARIANTS,
            spark=MANUAL_CLOCK,
            notes=INTERNAL_READS.format(more="") + ": the expiry stamps 61000 and then 95000.",
        ),
        case(
            suite,
            named("validate state is evicted at ttl expiry for no data batch"),
            BASE_LINES["validate state is evicted at ttl expiry for no data batch"],
            inputs={"inputData": INPUT_EVENT},
            output=OUTPUT_EVENT,
            queries=query,
            steps=[
                START,
                add("inputData", event("k1", "put", 1)),
                tick(),
                check_new(),
                add("inputData", event("k1", "get")),
                tick(),
                check_new(got("k1", 1)),
                add("inputData", event("k1", "get_ttl_value_from_state")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
                tick(60),  # 64000: a no-data batch, in which the value expires and is cleaned up
                check_new(),
                add("inputData", event("k1", "get")),
                tick(),
                check_new(),
                add("inputData", event("k1", "get_without_enforcing_ttl")),
                tick(),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
            ],
            variants=VARIANTS,
            spark=MANUAL_CLOCK,
            notes=INTERNAL_READS.format(more=", get_without_enforcing_ttl")
            + ": that the no-data batch removed the value from the state.",
        ),
        case(
            suite,
            named("validate only expired keys are removed from the state"),
            BASE_LINES["validate only expired keys are removed from the state"],
            inputs={"inputData": INPUT_EVENT},
            output=OUTPUT_EVENT,
            queries=query,
            steps=[
                START,
                add("inputData", event("k1", "put", 1)),
                tick(),  # 1000: k1 expires at 61000
                check_new(),
                tick(30),
                add("inputData", event("k2", "put", 2)),
                tick(),  # 32000: k2 expires at 92000
                check_new(),
                tick(30),
                add("inputData", event("k1", "get", 1)),
                add("inputData", event("k2", "get")),
                tick(),  # 63000
                check_new(got("k2", 2)),
                add("inputData", event("k1", "get_ttl_value_from_state")),
                add("inputData", event("k1", "get_values_in_ttl_state")),
                tick(),
                add("inputData", event("k2", "get_ttl_value_from_state")),
                add("inputData", event("k2", "get_values_in_ttl_state")),
                tick(),
            ],
            variants=VARIANTS,
            spark=MANUAL_CLOCK,
            notes=INTERNAL_READS.format(more="") + ": k1's are gone, k2's say 92000.",
        ),
    ]


def base_not_expressible(suite: str) -> list:
    test = "validate that clear only clears the current grouping key"
    return [
        NotExpressible(
            suite,
            named(test),
            BASE_LINES[test],
            f"(as {suite} runs it) every answer of the test is read from Spark's TTL internals (the expiry stamps, getTTLValue(s), and "
            "the secondary TTL index rows, getValuesInTTLState): it never reads a value with get",
            variants=VARIANTS,
        )
    ]


# -- TransformWithValueStateTTLSuite's own tests -------------------------------------------------------------------

VALUE_CASES = [
    case(
        VALUE_SUITE,
        named("validate multiple value states"),
        200,
        inputs={"inputData": INPUT_EVENT},
        output=OUTPUT_EVENT,
        queries={"query": ttl_query(MultipleValueStatesTtl(MINUTE, "k1"))},
        steps=[
            START,
            add("inputData", event("k1", "put", 1)),
            add("inputData", event("k2", "put", 2)),
            tick(),  # 1000: k1's value expires at 61000, k2's never
            check_new(),
            add("inputData", event("k1", "get")),
            add("inputData", event("k2", "get")),
            tick(),
            check_new(got("k1", 1), got("k2", 2)),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            add("inputData", event("k2", "get_ttl_value_from_state")),
            tick(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            add("inputData", event("k2", "get_values_in_ttl_state")),
            tick(),
            tick(60),
            add("inputData", event("k1", "get")),
            add("inputData", event("k2", "get")),
            tick(),  # 65000
            check_new(got("k2", 2)),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes=INTERNAL_READS.format(more="") + " (k1's expiry 61000, and nothing for k2 or once k1 expired).",
    ),
]

VALUE_NOT_EXPRESSIBLE = [
    NotExpressible(
        VALUE_SUITE,
        named("verify StateSchemaV3 writes correct SQL schema of key/value and with TTL"),
        255,
        "it reads the state schema file Spark writes in the checkpoint (its column families and their schemas, "
        "with the TTL's ttlExpirationMs column) and the custom metrics counting each kind of state variable",
        variants=VARIANTS,
    ),
]


# -- TransformWithListStateTTLSuite's own tests --------------------------------------------------------------------


def list_query(ttl: int) -> Query:
    return ttl_query(ListStateTtl(ttl))


def counted(key: str, count: int) -> tuple:
    return (key, count)


LIST_CASES = [
    case(
        LIST_SUITE,
        named("verify the list state secondary index has at most one record per key"),
        179,
        inputs={"inputData": "value STRING"},
        output=("key", "count"),
        queries={"query": ttl_query(MultiStatefulVariableTtl(10 * MINUTE), group_by="value")},
        steps=[
            START,
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 1)),
            add("inputData", "k2"),
            tick(),
            check_new(counted("k2", 1)),
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 2)),
            add("inputData", "k2"),
            tick(),
            check_new(counted("k2", 2)),
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 3)),
            add("inputData", "k2"),
            tick(),
            check_new(counted("k2", 3)),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes="The state row counts after each batch (assertNumStateRows: Spark's primary and index rows) are "
        "not checked.",
    ),
    case(
        LIST_SUITE,
        named("verify iterator works with expired values in beginning of list"),
        249,
        inputs={"inputData": INPUT_EVENT},
        output=OUTPUT_EVENT,
        queries={"query": list_query(MINUTE)},
        steps=[
            START,
            add("inputData", event("k1", "put", 1)),
            tick(),  # 1000: 1 expires at 61000
            add("inputData", event("k1", "append", 2), event("k1", "append", 3)),
            tick(),  # 2000: 2 and 3 expire at 62000
            check_new(),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
            tick(45),  # 48000
            add("inputData", event("k1", "append", 4), event("k1", "append", 5), event("k1", "append", 6)),
            tick(),  # 49000: 4, 5 and 6 expire at 109000
            check_new(),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
            add("inputData", event("k1", "get")),
            tick(15),  # 65000: the first three expired
            check_new(got("k1", 4), got("k1", 5), got("k1", 6)),
            add("inputData", event("k1", "get_without_enforcing_ttl")),
            tick(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            tick(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes=INTERNAL_READS.format(more=", get_without_enforcing_ttl")
        + "; nor the state row counts and rows updated and removed.",
    ),
    case(
        LIST_SUITE,
        named("verify iterator works with expired values in middle of list"),
        346,
        inputs={"inputData": INPUT_EVENT},
        output=OUTPUT_EVENT,
        queries={"result1": list_query(3 * MINUTE), "result2": list_query(15_000)},
        steps=[
            StartStream(query="result1", manual_clock=True),
            add("inputData", event("k1", "put", 1)),
            tick(),  # 1000: 1 expires at 181000
            add("inputData", event("k1", "append", 2)),
            add("inputData", event("k1", "append", 3)),
            tick(),  # 2000: 2 and 3 expire at 182000
            check_new(),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
            add("inputData", event("k1", "get")),
            tick(),
            check_new(got("k1", 1), got("k1", 2), got("k1", 3)),
            StopStream(),
            # the same checkpoint, a time-to-live of 15 seconds
            StartStream(query="result2", manual_clock=True),
            add("inputData", event("k1", "append", 4)),
            add("inputData", event("k1", "append", 5)),
            add("inputData", event("k1", "append", 6)),
            tick(),  # 5000: 4, 5 and 6 expire at 20000
            check_new(),
            add("inputData", event("k1", "get_without_enforcing_ttl")),
            tick(),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
            StopStream(),
            StartStream(query="result1", manual_clock=True),
            add("inputData", event("k1", "append", 7)),
            add("inputData", event("k1", "append", 8)),
            add("inputData", event("k1", "append", 9)),
            tick(),  # 8000: 7, 8 and 9 expire at 188000
            check_new(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            tick(),
            tick(45),  # 54000: the middle three expired
            add("inputData", event("k1", "get")),
            tick(),
            check_new(*(got("k1", v) for v in (1, 2, 3, 7, 8, 9))),
            add("inputData", event("k1", "get_without_enforcing_ttl")),
            tick(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            tick(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes="Three testStream runs on one checkpoint and one clock, the second with another time-to-live: "
        "three starts of two queries here. "
        + INTERNAL_READS.format(more=", get_without_enforcing_ttl")
        + "; nor the state row counts.",
    ),
    case(
        LIST_SUITE,
        named("verify iterator works with expired values in end of list"),
        611,
        inputs={"inputData": INPUT_EVENT},
        output=OUTPUT_EVENT,
        queries={"result1": list_query(2 * MINUTE), "result2": list_query(MINUTE)},
        steps=[
            StartStream(query="result1", manual_clock=True),
            add("inputData", event("k1", "put", 1)),
            tick(),  # 1000: 1 expires at 121000
            add("inputData", event("k1", "append", 2)),
            add("inputData", event("k1", "append", 3)),
            tick(),  # 2000: 2 and 3 expire at 122000
            check_new(),
            add("inputData", event("k1", "get_ttl_value_from_state"), event("k1", "get_values_in_min_state")),
            tick(),
            add("inputData", event("k1", "get")),
            tick(),
            check_new(got("k1", 1), got("k1", 2), got("k1", 3)),
            StopStream(),
            # the same checkpoint, a time-to-live of one minute
            StartStream(query="result2", manual_clock=True),
            add("inputData", event("k1", "append", 4)),
            add("inputData", event("k1", "append", 5)),
            add("inputData", event("k1", "append", 6)),
            tick(),  # 5000: 4, 5 and 6 expire at 65000
            check_new(),
            add("inputData", event("k1", "get_ttl_value_from_state")),
            tick(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            tick(),
            tick(60),  # 67000: the last three expired
            add("inputData", event("k1", "get")),
            tick(),
            check_new(got("k1", 1), got("k1", 2), got("k1", 3)),
            add("inputData", event("k1", "get_without_enforcing_ttl")),
            tick(),
            add("inputData", event("k1", "get_values_in_ttl_state")),
            tick(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes="Two testStream runs on one checkpoint and one clock, with two times-to-live: two queries here. "
        + INTERNAL_READS.format(more=", get_values_in_min_state, get_without_enforcing_ttl")
        + "; nor the state row counts.",
    ),
    case(
        LIST_SUITE,
        named("SPARK-53069: stopping and restarting the query maintains correct state total rows"),
        746,
        inputs={"inputData": "value STRING"},
        output=("key", "count"),
        queries={"query": ttl_query(MultiStatefulVariableTtl(10 * MINUTE), group_by="value")},
        steps=[
            START,
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 1)),
            StopStream(),
            START,
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 2)),
            StopStream(),
            START,
            add("inputData", "k1"),
            tick(),
            check_new(counted("k1", 3)),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes="The state row counts after each batch (assertNumStateRows, the test's point: Spark's total across "
        "restarts) are not checked; the answers are.",
    ),
]

LIST_NOT_EXPRESSIBLE = [
    NotExpressible(
        LIST_SUITE,
        named("verify min-expiry index doesn't insert when the new minimum is None"),
        512,
        "it checks Spark's list-state indexes: every read is of the secondary TTL index and the min-expiry index "
        "(getValueInTTLState, getMinValues) or of the expiry stamps, and the state row counts; it never reads a "
        "value with get",
        variants=VARIANTS,
    ),
]


# -- TransformWithMapStateTTLSuite's own tests ---------------------------------------------------------------------


def map_event(key: str, user_key: str, action: str, value: int = -1) -> tuple:
    """A ``MapInputEvent(key, userKey, action, value)``."""
    return (key, user_key, action, value)


def map_got(key: str, user_key: str, value: int) -> tuple:
    return (key, user_key, value, False, -1)


MAP_CASES = [
    case(
        MAP_SUITE,
        named("validate state is evicted with multiple user keys"),
        186,
        inputs={"inputData": MAP_INPUT_EVENT},
        output=MAP_OUTPUT_EVENT,
        queries={"query": ttl_query(MapStateTtl(MINUTE))},
        steps=[
            START,
            add("inputData", map_event("k1", "key1", "put", 1)),
            tick(),  # 1000: key1 expires at 61000
            check_new(),
            add("inputData", map_event("k1", "key1", "get")),
            tick(30),  # 31000
            check_new(map_got("k1", "key1", 1)),
            add("inputData", map_event("k1", "key2", "put", 2)),
            tick(),  # 32000: key2 expires at 92000
            check_new(),
            add("inputData", map_event("k1", "key1", "get"), map_event("k1", "key2", "get")),
            tick(30),  # 62000: key1 expired
            check_new(map_got("k1", "key2", 2)),
            StopStream(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes="The rows updated and removed (lastProgress) are not checked.",
    ),
    case(
        MAP_SUITE,
        named("verify iterator doesn't return expired keys"),
        228,
        inputs={"inputData": MAP_INPUT_EVENT},
        output=MAP_OUTPUT_EVENT,
        queries={"query": ttl_query(MapStateTtl(MINUTE))},
        steps=[
            START,
            add("inputData", map_event("k1", "key1", "put", 1), map_event("k1", "key2", "put", 2)),
            tick(),  # 1000: both expire at 61000
            check_new(),
            add("inputData", map_event("k1", "key1", "get"), map_event("k1", "key2", "get")),
            tick(30),  # 31000
            check_new(map_got("k1", "key1", 1), map_got("k1", "key2", 2)),
            add("inputData", map_event("k1", "", "get_values_in_ttl_state")),
            tick(),  # 32000
            tick(30),  # 62000: key1 and key2 expired
            add(
                "inputData",
                map_event("k1", "key3", "put", 3),
                map_event("k1", "key4", "put", 4),
                map_event("k1", "key5", "put", 5),
                map_event("k1", "", "iterator"),
            ),
            tick(),  # 63000: key3, key4 and key5 expire at 123000
            check_new(map_got("k1", "key3", 3), map_got("k1", "key4", 4), map_got("k1", "key5", 5)),
            add("inputData", map_event("k1", "", "get_values_in_ttl_state")),
            tick(),
            add("inputData", *(map_event("k1", f"key{i}", "get_without_enforcing_ttl") for i in range(1, 6))),
            tick(),
            add("inputData", map_event("k1", "key3", "put", 3)),
            tick(),
            add("inputData", map_event("k1", "", "get_values_in_ttl_state")),
            tick(),
            add("inputData", map_event("k1", "key3", "get_ttl_value_from_state")),
            tick(),
            StopStream(),
        ],
        variants=VARIANTS,
        spark=MANUAL_CLOCK,
        notes=INTERNAL_READS.format(more=", get_without_enforcing_ttl")
        + ": the expiry stamps (61000, 123000, then 126000 for the updated key3) and that the expired entries "
        "are gone from the state.",
    ),
]

MAP_NOT_EXPRESSIBLE: list = []


# -- the module's lists ----------------------------------------------------------------------------------------

CASES = base_cases(VALUE_SUITE) + VALUE_CASES + base_cases(LIST_SUITE) + LIST_CASES + base_cases(MAP_SUITE) + MAP_CASES

NOT_EXPRESSIBLE = (
    base_not_expressible(VALUE_SUITE)
    + VALUE_NOT_EXPRESSIBLE
    + base_not_expressible(LIST_SUITE)
    + LIST_NOT_EXPRESSIBLE
    + base_not_expressible(MAP_SUITE)
    + MAP_NOT_EXPRESSIBLE
)

DISAGREEMENTS: list = []
"""Tests the API can express where ministream's answer differs from Spark's: kept out of ``CASES``."""
