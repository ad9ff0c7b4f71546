"""Spark's ``TransformWithStateInitialStateSuite`` (Scala): ``transformWithState`` with an initial state,
replayed by ministream (and by Spark through PySpark twins of the suite's processors).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateInitialStateSuite.scala``,
the newest version this project could read (commit b463c3fe87ad of apache/spark; line numbers refer to it). The
suite mixes in ``AlsoTestWithChangelogCheckpointingEnabled``: each test runs twice, with and without RocksDB's
changelog checkpoints (a storage variant), and is one case here, named after the first, ``... (with changelog
checkpointing)``. Each ``AddData`` of the tests is one batch (``MemoryStream``).

ministream's ``process(..., initial_state=[rows])`` is the test's ``transformWithState(..., initialState)``:
each initial row carries the step's key column (``key``, or ``value`` for a stream of strings grouped by
itself), and the processor's ``handle_initial_state`` sees it in the query's first batch, before any input
row. The tests' queries declare ``OutputMode.Append()`` for the operator and run with ``OutputMode.Update()``
for the sink: the process step is in append mode, the query in update mode.
"""

from ministream.operators.process import Processor
from tests.conformance.harness import (
    MANUAL_CLOCK,
    ROCKSDB,
    AdvanceManualClock,
    ExpectFailure,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    case,
    check_new,
)

SUITE = "TransformWithStateInitialStateSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateInitialStateSuite.scala"
VARIANT = " (with changelog checkpointing)"
INIT_INPUT_ROW = {"inputData": "key STRING, action STRING, value DOUBLE"}
"""The suite's ``InitInputRow(key, action, value: Double)``."""
ACTION_OUTPUT = "key STRING, action STRING, value DOUBLE"
"""The ``(String, String, Double)`` rows of the suite's action processors."""
PYSPARK_INITIALIZES_TWICE = (
    "a Python processor's handleInitialState runs for each initial-state row of a key: PySpark 4.3.0 ran the "
    "query with init_1 twice (measured), where the JVM's processor fails it (tutorials/spark-facts.md)"
)


def named(test: str) -> str:
    return test + VARIANT


# -- the suite's processors, in ministream --------------------------------------------------------------------------


class StateActions(Processor):
    """``InitialStateInMemoryTestClass`` (on ``StatefulProcessorWithInitialStateTestClass``): the initial state
    row ``(key, value, entries, mapping)`` sets the key's value state ``testValueInit`` to ``value``, appends
    ``entries`` to its list state ``testListInit`` and puts each pair of ``mapping`` in its map state
    ``testMapInit``. Each input row is an action: ``update`` sets the value state, ``remove`` clears it,
    ``getOption`` outputs it (-1.0 when absent); ``appendList`` appends the row's value, ``clearList`` clears
    the list, ``getList`` outputs each element; ``incCount`` adds one to the map's count of the row's value,
    ``clearCount`` removes that map key, ``getCount`` outputs the count (0.0 when absent)."""

    output_schema = ACTION_OUTPUT

    def init(self, handle):
        self.value = handle.get_value_state("testValueInit")
        self.list = handle.get_list_state("testListInit")
        self.map = handle.get_map_state("testMapInit")

    def handle_initial_state(self, key, initial_state, timer_values):
        self.value.update(initial_state["value"])
        self.list.add_all(initial_state["entries"])
        for map_key, count in initial_state["mapping"].items():
            self.map.put(map_key, count)

    def handle_input_rows(self, key, rows, timer_values):
        out = []

        def emit(value):
            out.append({"key": key, "action": row["action"], "value": float(value)})

        for row in rows:
            action, value = row["action"], row["value"]
            if action == "getOption":
                emit(self.value.value() if self.value.exists() else -1.0)
            elif action == "update":
                self.value.update(value)
            elif action == "remove":
                self.value.clear()
            elif action == "getList":
                for element in self.list.get():
                    emit(element)
            elif action == "appendList":
                self.list.add(value)
            elif action == "clearList":
                self.list.clear()
            elif action == "getCount":
                emit(self.map.get(value, 0))
            elif action == "incCount":
                self.map.put(value, self.map.get(value, 0) + 1)
            elif action == "clearCount":
                self.map.remove(value)
        return out


class Accumulate(Processor):
    """``AccumulateStatefulProcessorWithInitState``: the initial state row ``(key, value)`` sets the key's value
    state ``testValueInit``; an ``add`` row adds its value to it (from 0.0), ``remove`` clears it, and
    ``getOption`` outputs it (0.0 when absent)."""

    output_schema = ACTION_OUTPUT

    def init(self, handle):
        self.value = handle.get_value_state("testValueInit")

    def handle_initial_state(self, key, initial_state, timer_values):
        self.value.update(initial_state["value"])

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            if row["action"] == "getOption":
                out.append({"key": key, "action": "getOption", "value": float(self.value.value() or 0.0)})
            elif row["action"] == "add":
                self.value.update((self.value.value() or 0.0) + row["value"])
            elif row["action"] == "remove":
                self.value.clear()
        return out


class CountWithProcTimer(Processor):
    """``StatefulProcessorWithInitialStateProcTimerClass``: a count of the key's rows in ``countState``, its
    initial state counting 1. For key "a" only, the first count (from the initial state or a first row)
    registers a processing-time timer 5 s after the batch time, and the count that follows a count of 1
    deletes the timer recorded in ``timerState`` (none once it fired: a timer at 0) and registers one 7.5 s
    after the batch time. Each batch outputs ``(key, count)``; a fired timer clears ``timerState`` and
    outputs ``(key, "-1")``."""

    output_schema = "key STRING, value STRING"

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("countState")
        self.timer = handle.get_value_state("timerState")

    def counted(self, key, current: int, count: int, timer_values) -> None:
        self.count.update(count)
        if key != "a":
            return
        if current == 0:
            due = timer_values.processing_time + 5_000
        elif current == 1:
            self.handle.delete_timer(self.timer.value() or 0)  # Scala's get() of a cleared Long is 0
            due = timer_values.processing_time + 7_500
        else:
            return
        self.handle.register_timer(due)
        self.timer.update(due)

    def handle_initial_state(self, key, initial_state, timer_values):
        self.counted(key, 0, 1, timer_values)

    def handle_input_rows(self, key, rows, timer_values):
        current = self.count.value() or 0
        count = current + len(rows)
        self.counted(key, current, count, timer_values)
        return [{"key": key, "value": str(count)}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.timer.clear()
        return [{"key": key, "value": "-1"}]


class MaxEventTimeWithTimer(Processor):
    """``StatefulProcessorWithInitialStateEventTimerClass``: the key's greatest event time, in seconds, in
    ``maxEventTimeState`` (the initial state row brings one too); whenever it gives a later timeout (5 s after
    it) than the timer recorded in ``timerState``, that timer is replaced by an event-time timer at the
    timeout. Each batch outputs ``(key, greatest seconds)``; a fired timer clears the greatest time and
    outputs ``(key, -1)``."""

    output_schema = "key STRING, value INT"

    def init(self, handle):
        self.handle = handle
        self.max = handle.get_value_state("maxEventTimeState")
        self.timer = handle.get_value_state("timerState")

    def seen(self, seconds: int) -> None:
        timeout = (seconds + 5) * 1000
        self.max.update(seconds)
        registered = self.timer.value() or 0
        if registered < timeout:
            self.handle.delete_timer(registered)
            self.handle.register_timer(timeout)
            self.timer.update(timeout)

    def handle_initial_state(self, key, initial_state, timer_values):
        self.seen(max(initial_state["eventTime"] // 1000, self.max.value() or 0))

    def handle_input_rows(self, key, rows, timer_values):
        seconds = max(*(row["eventTime"] // 1000 for row in rows), self.max.value() or 0)
        self.seen(seconds)
        return [{"key": key, "value": seconds}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.max.clear()
        return [{"key": key, "value": -1}]


# -- the queries and their twins --------------------------------------------------------------------------------


def actions_query(processor, initial: list[dict], kind: str) -> Query:
    """``inputData.toDS().groupByKey(x => x.key).transformWithState(processor, TimeMode.None(),
    OutputMode.Append(), initialState)``, run in update mode; the twin's processor (``kind``: ``"memory"`` or
    ``"accumulate"``) is a PySpark ``StatefulProcessor`` doing the same, its initial state a DataFrame of the
    same rows grouped by ``key``."""

    def pipeline(inputs):
        return inputs["inputData"].key_by("key").process("tws", processor, output_mode="append", initial_state=initial)

    def twin(inputs):
        from pyspark.sql import Row
        from pyspark.sql.streaming import StatefulProcessor

        class ActionsTwin(StatefulProcessor):
            def init(self, handle):
                self.value = handle.getValueState("testValueInit", "v DOUBLE")
                self.list = handle.getListState("testListInit", "v DOUBLE")
                self.map = handle.getMapState("testMapInit", "k DOUBLE", "v INT")

            def handleInitialState(self, key, initialState, timerValues):
                self.value.update((initialState.value,))
                if kind == "memory":
                    self.list.appendList([(element,) for element in initialState.entries])
                    mapping = initialState.mapping  # Arrow hands a map over as a list of pairs
                    for map_key, count in mapping.items() if isinstance(mapping, dict) else mapping:
                        self.map.updateValue((map_key,), (count,))

            def handleInputRows(self, key, rows, timerValues):
                for row in rows:
                    action, value = row.action, row.value
                    current = self.value.get()[0] if self.value.exists() else None
                    if action == "getOption":
                        missing = -1.0 if kind == "memory" else 0.0
                        yield Row(key=key[0], action=action, value=float(missing if current is None else current))
                    elif action == "update":
                        self.value.update((value,))
                    elif action == "add":
                        self.value.update(((current or 0.0) + value,))
                    elif action == "remove":
                        self.value.clear()
                    elif action == "getList":
                        for (element,) in self.list.get():
                            yield Row(key=key[0], action=action, value=float(element))
                    elif action == "appendList":
                        self.list.appendValue((value,))
                    elif action == "clearList":
                        self.list.clear()
                    elif action in ("getCount", "incCount"):
                        count = self.map.getValue((value,))[0] if self.map.containsKey((value,)) else 0
                        if action == "getCount":
                            yield Row(key=key[0], action=action, value=float(count))
                        else:
                            self.map.updateValue((value,), (count + 1,))
                    elif action == "clearCount":
                        self.map.removeKey((value,))

            def close(self):
                pass

        frame = inputs["inputData"]
        if kind == "memory":
            schema = "key STRING, value DOUBLE, entries ARRAY<DOUBLE>, mapping MAP<DOUBLE, INT>"
            rows = [(row["key"], row["value"], row["entries"], row["mapping"]) for row in initial]
        else:
            schema = "key STRING, value DOUBLE"
            rows = [(row["key"], row["value"]) for row in initial]
        start = frame.sparkSession.createDataFrame(rows, schema).groupBy("key")
        return frame.groupBy("key").transformWithState(
            ActionsTwin(), ACTION_OUTPUT, "Append", "None", initialState=start
        )

    return Query(pipeline, twin, "update", conf=ROCKSDB)


IN_MEMORY_INITIAL = [
    {"key": "init_1", "value": 40.0, "entries": [40.0], "mapping": {40.0: 1}},
    {"key": "init_2", "value": 100.0, "entries": [100.0], "mapping": {100.0: 1}},
]
"""``Seq(InputRowForInitialState("init_1", 40.0, List(40.0), Map(40.0 -> 1)), ...("init_2", 100.0, ...))``."""
ACCUMULATE_INITIAL = [{"key": "init_1", "value": 40.0}, {"key": "init_2", "value": 100.0}]
"""``createInitialDfForTest``: ``Seq(("init_1", 40.0), ("init_2", 100.0))`` grouped by ``_1``."""


def proc_timer(inputs):
    """``inputData.toDS().groupByKey(x => x).transformWithState(new
    StatefulProcessorWithInitialStateProcTimerClass(), TimeMode.ProcessingTime(), OutputMode.Update(),
    Seq("a", "b").toDS().groupByKey(x => x))``."""
    return (
        inputs["inputData"]
        .key_by("value")
        .process(
            "tws",
            CountWithProcTimer(),
            time_mode="processing_time",
            output_mode="update",
            initial_state=[{"value": "a"}, {"value": "b"}],
        )
    )


def event_timer(inputs):
    """``eventTimeDf(inputData.toDS())``: ``select($"_1".as("key"), timestamp_seconds($"_2").as("eventTime"))
    .withWatermark("eventTime", "10 seconds").groupByKey(_._1)``, then ``transformWithState(new
    StatefulProcessorWithInitialStateEventTimerClass(), TimeMode.EventTime(), OutputMode.Update(), initDf)``,
    ``initDf`` the same of ``Seq(("a", 11), ("b", 5))``."""
    rows = inputs["inputData"].map("event_time", lambda row: {"key": row["_1"], "eventTime": row["_2"] * 1000})
    return (
        rows.with_watermark("watermark", "eventTime", "10 seconds")
        .key_by("key")
        .process(
            "tws",
            MaxEventTimeWithTimer(),
            time_mode="event_time",
            output_mode="update",
            initial_state=[{"key": "a", "eventTime": 11_000}, {"key": "b", "eventTime": 5_000}],
        )
    )


def event_timer_twin(inputs):
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor

    class MaxEventTimeTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.max = handle.getValueState("maxEventTimeState", "v BIGINT")
            self.timer = handle.getValueState("timerState", "v BIGINT")

        def stored(self, state):
            return state.get()[0] if state.exists() else 0

        def seen(self, seconds):
            timeout = (seconds + 5) * 1000
            self.max.update((seconds,))
            registered = self.stored(self.timer)
            if registered < timeout:
                self.handle.deleteTimer(registered)
                self.handle.registerTimer(timeout)
                self.timer.update((timeout,))

        def handleInitialState(self, key, initialState, timerValues):
            self.seen(max(int(initialState.eventTime.timestamp()), self.stored(self.max)))

        def handleInputRows(self, key, rows, timerValues):
            seconds = max(*(int(row.eventTime.timestamp()) for row in rows), self.stored(self.max))
            self.seen(seconds)
            yield Row(key=key[0], value=seconds)

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.max.clear()
            yield Row(key=key[0], value=-1)

        def close(self):
            pass

    def event_time_df(frame):
        events = frame.select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("eventTime"))
        return events.withWatermark("eventTime", "10 seconds").groupBy("key")

    frame = inputs["inputData"]
    initial = event_time_df(frame.sparkSession.createDataFrame([("a", 11), ("b", 5)], "_1 STRING, _2 INT"))
    return event_time_df(frame).transformWithState(
        MaxEventTimeTwin(), "key STRING, value INT", "Update", "EventTime", initialState=initial
    )


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        named(
            "transformWithStateWithInitialState - correctness test, run with multiple state variables - in-memory type"
        ),
        280,
        inputs=INIT_INPUT_ROW,
        output=("key", "action", "value"),
        queries={"query": actions_query(StateActions(), IN_MEMORY_INITIAL, "memory")},
        steps=[
            # keys with no initial state
            add("inputData", ("k1", "update", 37.0)),
            add("inputData", ("k2", "update", 40.0)),
            add("inputData", ("non-exist", "getOption", -1.0)),
            check_new(("non-exist", "getOption", -1.0)),
            add("inputData", ("k1", "appendList", 37.0)),
            add("inputData", ("k2", "appendList", 40.0)),
            add("inputData", ("non-exist", "getList", -1.0)),
            check_new(),
            add("inputData", ("k1", "incCount", 37.0)),
            add("inputData", ("k2", "incCount", 40.0)),
            add("inputData", ("non-exist", "getCount", -1.0)),
            check_new(("non-exist", "getCount", 0.0)),
            add("inputData", ("k2", "incCount", 40.0)),
            add("inputData", ("k2", "getCount", 40.0)),
            check_new(("k2", "getCount", 2.0)),
            # every initial state row was handled
            add("inputData", ("init_1", "getOption", -1.0)),
            check_new(("init_1", "getOption", 40.0)),
            add("inputData", ("init_2", "getOption", -1.0)),
            check_new(("init_2", "getOption", 100.0)),
            add("inputData", ("init_1", "getList", -1.0)),
            check_new(("init_1", "getList", 40.0)),
            add("inputData", ("init_2", "getList", -1.0)),
            check_new(("init_2", "getList", 100.0)),
            add("inputData", ("init_1", "getCount", 40.0)),
            check_new(("init_1", "getCount", 1.0)),
            add("inputData", ("init_2", "getCount", 100.0)),
            check_new(("init_2", "getCount", 1.0)),
            # a key of the initial state is updated like any other
            add("inputData", ("init_1", "update", 50.0)),
            add("inputData", ("init_1", "getOption", -1.0)),
            check_new(("init_1", "getOption", 50.0)),
            add("inputData", ("init_1", "remove", -1.0)),
            add("inputData", ("init_1", "getOption", -1.0)),
            check_new(("init_1", "getOption", -1.0)),
            add("inputData", ("init_1", "appendList", 50.0)),
            add("inputData", ("init_1", "getList", -1.0)),
            check_new(("init_1", "getList", 50.0), ("init_1", "getList", 40.0)),
            add("inputData", ("init_1", "incCount", 40.0)),
            add("inputData", ("init_1", "getCount", 40.0)),
            check_new(("init_1", "getCount", 2.0)),
            # removals
            add("inputData", ("k1", "remove", -1.0)),
            add("inputData", ("k1", "getOption", -1.0)),
            check_new(("k1", "getOption", -1.0)),
            add("inputData", ("init_1", "clearCount", -1.0)),
            add("inputData", ("init_1", "getCount", -1.0)),
            check_new(("init_1", "getCount", 0.0)),
            add("inputData", ("init_1", "clearList", -1.0)),
            add("inputData", ("init_1", "getList", -1.0)),
            check_new(),
        ],
        variants=2,
        ci=True,
    ),
    case(
        SUITE,
        named("transformWithStateWithInitialState - correctness test, processInitialState should only run once"),
        362,
        inputs=INIT_INPUT_ROW,
        output=("key", "action", "value"),
        queries={"query": actions_query(Accumulate(), ACCUMULATE_INITIAL, "accumulate")},
        steps=[
            add("inputData", ("init_1", "add", 50.0)),
            add("inputData", ("init_2", "add", 60.0)),
            add("inputData", ("init_1", "add", 50.0)),
            add("inputData", ("init_1", "getOption", -1.0), ("init_2", "getOption", -1.0)),
            check_new(("init_2", "getOption", 160.0), ("init_1", "getOption", 140.0)),
        ],
        variants=2,
    ),
    case(
        SUITE,
        named("transformWithStateWithInitialState - cannot re-initialize state during initial state handling"),
        399,
        inputs=INIT_INPUT_ROW,
        output=("key", "action", "value"),
        queries={
            "query": actions_query(Accumulate(), [*ACCUMULATE_INITIAL, {"key": "init_1", "value": 50.0}], "accumulate")
        },
        steps=[
            add("inputData", ("k1", "add", 50.0)),
            ExpectFailure("STATEFUL_PROCESSOR_CANNOT_REINITIALIZE_STATE_ON_KEY", "CANNOT_REINITIALIZE_STATE_ON_KEY"),
        ],
        variants=2,
        spark=PYSPARK_INITIALIZES_TWICE,
        notes="The initial state holds init_1 twice: the first batch fails on its second row.",
    ),
    case(
        SUITE,
        named(
            "transformWithStateWithInitialState - streaming with processing time timer, can emit expired initial "
            "state rows when grouping key is not received for new input rows"
        ),
        430,
        inputs={"inputData": "value STRING"},
        output=("key", "value"),
        pipeline=proc_timer,
        output_mode="update",
        conf=ROCKSDB,
        steps=[
            StartStream(manual_clock=True),
            add("inputData", "c"),
            AdvanceManualClock(1_000),
            check_new(("c", "1")),
            add("inputData", "c"),
            AdvanceManualClock(6_000),
            check_new(("a", "-1"), ("c", "2")),
            add("inputData", "a", "a"),
            AdvanceManualClock(1_000),
            check_new(("a", "3")),
            add("inputData", "b"),
            AdvanceManualClock(8_000),
            check_new(("a", "-1"), ("b", "2")),
            StopStream(),
        ],
        variants=2,
        spark=MANUAL_CLOCK,
        notes="The processor's rows are ``(key, count)``; the key of a stream of strings grouped by itself is its "
        "``value`` column, named ``key`` in the output.",
    ),
    case(
        SUITE,
        named(
            "transformWithStateWithInitialState - streaming with event time timer, can emit expired initial "
            "state rows when grouping key is not received for new input rows"
        ),
        469,
        inputs={"inputData": "_1 STRING, _2 INT"},
        output=("key", "value"),
        pipeline=event_timer,
        twin=event_timer_twin,
        output_mode="update",
        conf=ROCKSDB,
        steps=[
            StartStream(),
            add("inputData", ("a", 13), ("a", 15)),
            check_new(("a", 15)),
            add("inputData", ("c", 7)),
            check_new(("c", 7)),
            add("inputData", ("d", 31)),
            check_new(("a", -1), ("b", -1), ("c", -1), ("d", 31)),
            StopStream(),
        ],
        variants=2,
        ci=True,
    ),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        named("transformWithStateWithInitialState - batch should succeed"),
        386,
        "a batch (not streaming) Dataset",
        variants=2,
    ),
]
