"""Spark's ``TransformWithStateSuite`` (Scala, run as ``TransformWithStateUnsafeRowSuite`` and
``TransformWithStateAvroSuite``) and ``TransformWithStateValidationSuite``, replayed by ministream (and by
Spark through PySpark twins of the suite's processors).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateSuite.scala`` (Spark master
of 2026-01-07). Each test of the abstract suite runs four times (two state encodings, with and without
changelog checkpoints): one case here, named after the first. The suite's processors are Scala classes; each
is written here twice, as a ministream ``Processor`` and as a PySpark ``StatefulProcessor`` (in the twin that
uses it, so that Spark's Python workers need nothing from this file).

Tests that drive the query with Spark's manual clock (``StreamManualClock``, a class of Spark's own tests)
are replayed by ministream only: the harness turns each clock advance into a trigger firing at that time.
"""

from ministream.core.triggers import Trigger
from ministream.errors import PipelineError
from ministream.operators.process import Processor
from tests.conformance.harness import (
    MANUAL_CLOCK,
    ROCKSDB,
    AdvanceManualClock,
    CheckBatches,
    ExpectFailure,
    NewStream,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    case,
    check_answer,
    check_new,
)

SUITE = "TransformWithStateUnsafeRowSuite"
VALIDATION = "TransformWithStateValidationSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateSuite.scala"
VARIANT = " (encoding = UnsafeRow) (with changelog checkpointing)"
STRINGS = {"inputData": "value STRING"}
KEY_COUNT = "key STRING, count STRING"


def named(test: str) -> str:
    return test + VARIANT


# -- the suite's processors, in ministream ------------------------------------------------------------------------


class RunningCount(Processor):
    """``RunningCountStatefulProcessor``: a count of the batches that had rows for the key (``handleInputRows``
    runs once per key and batch); at 3 the count is cleared and nothing is emitted."""

    output_schema = KEY_COUNT

    def init(self, handle):
        self.count = handle.get_value_state("countState")

    def handle_input_rows(self, key, rows, timer_values):
        count = (self.count.value() or 0) + 1
        if count == 3:
            self.count.clear()
            return []
        self.count.update(count)
        return [{"key": key, "count": str(count)}]


class RunningCountWithError(RunningCount):
    """``RunningCountStatefulProcessorWithError``: asks for a state variable in ``handleInputRows``."""

    def init(self, handle):
        super().init(handle)
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        self.handle.get_value_state("tempState")
        return super().handle_input_rows(key, rows, timer_values)


class RunningCountWithProcTimeTimer(RunningCount):
    """``...WithProcTimeTimer``: the running count, and for keys a and c a processing-time timer 5 s after their
    first batch; the timer clears the count and emits -1."""

    def init(self, handle):
        super().init(handle)
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        if (self.count.value() or 0) == 0 and key in ("a", "c"):
            self.handle.register_timer(timer_values.processing_time + 5_000)
        return super().handle_input_rows(key, rows, timer_values)

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.count.clear()
        return [{"key": key, "count": "-1"}]


class ProcTimeTimerUpdates(Processor):
    """``...WithProcTimeTimerUpdates``: a count of rows; key a's timer at 5 s after its first batch is moved
    to 7.5 s after its second one (deleteTimer, then registerTimer)."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("countState")
        self.timer = handle.get_value_state("timerState")

    def handle_input_rows(self, key, rows, timer_values):
        old = self.count.value() or 0
        count = old + len(rows)
        self.count.update(count)
        now = timer_values.processing_time
        if key == "a" and old == 0:
            self.handle.register_timer(now + 5_000)
            self.timer.update(now + 5_000)
        elif key == "a" and old == 1:
            self.handle.delete_timer(self.timer.value())
            self.handle.register_timer(now + 7_500)
            self.timer.update(now + 7_500)
        return [{"key": key, "count": str(count)}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.timer.clear()
        return [{"key": key, "count": "-1"}]


class MultipleTimers(Processor):
    """``...WithMultipleTimers``: three timers 5, 10 and 15 s after the key's first batch; each emits the
    count; the last one (the only timer ``listTimers()`` still lists while its handler runs) clears it."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("countState")

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update((self.count.value() or 0) + len(rows))
        if not self.handle.list_timers():
            for after in (5_000, 10_000, 15_000):
                self.handle.register_timer(timer_values.processing_time + after)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        rows = [{"key": key, "count": str(self.count.value())}]
        if len(self.handle.list_timers()) == 1:
            self.count.clear()
        return rows


class MaxEventTime(Processor):
    """``MaxEventTimeStatefulProcessor``: the largest event second of the key; an event-time timer 5 s after
    it, moved when the maximum moves; the timer clears the maximum and emits -1."""

    output_schema = "key STRING, max INT"

    def init(self, handle):
        self.handle = handle
        self.max = handle.get_value_state("maxEventTimeState")
        self.timer = handle.get_value_state("timerState")

    def handle_input_rows(self, key, rows, timer_values):
        top = max([row["eventTime"] // 1000 for row in rows] + [self.max.value() or 0])
        self.max.update(top)
        timeout = (top + 5) * 1000
        old = self.timer.value() or 0
        if old < timeout:
            self.handle.delete_timer(old)
            self.handle.register_timer(timeout)
            self.timer.update(timeout)
        return [{"key": key, "max": top}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.max.clear()
        return [{"key": key, "max": -1}]


class MinEventTime(Processor):
    """``MinEventTimeStatefulProcessor``: the smallest event second of the key."""

    def init(self, handle):
        self.min = handle.get_value_state("minEventTimeState")

    def handle_input_rows(self, key, rows, timer_values):
        low = min(
            [row["eventTime"] // 1000 for row in rows] + [self.min.value() if self.min.exists() else float("inf")]
        )
        self.min.update(low)
        return [{"key": key, "max": low}]


class LazyIterators(Processor):
    """``ProcessorWithLazyIterators``: state read and written as the output iterator is consumed; an event-time
    timer at 0 ms the first time a processor instance sees rows; the timer yields 42."""

    def init(self, handle):
        self.handle = handle
        self.state = handle.get_value_state("myValueState")
        self.registered = False

    def handle_input_rows(self, key, rows, timer_values):
        self.state.update((self.state.value() or 0) + 1)
        if not self.registered:
            self.handle.register_timer(0)
            self.registered = True
        for row in rows:
            self.state.update(self.state.value() + 1)
            yield {"value": row["timestamp"] // 1000}

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.state.update((self.state.value() or 0) + 1)
        yield {"value": 42}


class RunningCountMostRecent(Processor):
    """``RunningCountMostRecentStatefulProcessor``: a count of the key's batches and its previous value."""

    output_schema = "key STRING, count STRING, previous STRING"

    def init(self, handle):
        self.count = handle.get_value_state("countState")
        self.recent = handle.get_value_state("mostRecent")

    def handle_input_rows(self, key, rows, timer_values):
        count = (self.count.value() or 0) + 1
        previous = self.recent.value() or ""
        out = []
        for row in rows:
            self.recent.update(row["_2"])
            self.count.update(count)
            out.append({"key": key, "count": str(count), "previous": previous})
        return out


class MostRecentWithDeletion(Processor):
    """``MostRecentStatefulProcessorWithDeletion``: drops ``countState`` (``deleteIfExists``); emits the key's
    previous value."""

    output_schema = "key STRING, previous STRING"

    def init(self, handle):
        handle.delete_if_exists("countState")
        self.recent = handle.get_value_state("mostRecent")

    def handle_input_rows(self, key, rows, timer_values):
        previous = self.recent.value() or ""
        out = []
        for row in rows:
            self.recent.update(row["_2"])
            out.append({"key": key, "previous": previous})
        return out


class RunningCountList(Processor):
    """``RunningCountListStatefulProcessor``: a *list* state named ``countState``; emits nothing."""

    def init(self, handle):
        self.count = handle.get_list_state("countState")

    def handle_input_rows(self, key, rows, timer_values):
        return []


class SleepingTimer(Processor):
    """``SleepingTimerProcessor``: a processing-time timer 10 s after each row; the timer emits the key (the
    Scala processor sleeps a second in it, for a metric; not here)."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        for _ in rows:
            self.handle.register_timer(timer_values.processing_time + 10_000)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        return [{"value": key}]


def exists_in_init(kind: str):
    class ExistsInInit(Processor):
        """``Test<kind>ExistsInInit``: creates a state variable and calls ``exists()`` in ``init``."""

        def init(self, handle):
            getattr(handle, f"get_{kind}_state")("testState").exists()

    return ExistsInInit()


# -- the PySpark twins ---------------------------------------------------------------------------------------


def count_twin(kind: str, mode: str = "Update"):
    """A PySpark twin of a running-count processor over ``value`` (Spark's ``groupByKey(x => x)``), its
    operator in output mode ``mode``."""

    def twin(inputs, source=None):
        from pyspark.sql import Row
        from pyspark.sql.streaming import StatefulProcessor

        class RunningCountTwin(StatefulProcessor):
            def init(self, handle):
                self.handle = handle
                if kind == "list":
                    self.count = handle.getListState("countState", "count BIGINT")
                else:
                    self.count = handle.getValueState("countState", "count BIGINT")
                if kind in ("value exists", "map exists", "list exists"):
                    make = {"value": handle.getValueState, "map": handle.getMapState, "list": handle.getListState}
                    name = kind.split(maxsplit=1)[0]
                    schemas = ("k STRING", "v BIGINT") if name == "map" else ("v BIGINT",)
                    make[name]("testState", *schemas).exists()

            def handleInputRows(self, key, rows, timerValues):
                if kind == "error":
                    self.handle.getValueState("tempState", "v BIGINT")
                if kind == "list":
                    return iter([])
                count = (self.count.get()[0] if self.count.exists() else 0) + 1
                if count == 3:
                    self.count.clear()
                    return iter([])
                self.count.update((count,))
                return iter([Row(key=key[0], count=str(count))])

            def close(self):
                pass

        values = source if source is not None else inputs["inputData"]
        return values.groupBy("value").transformWithState(RunningCountTwin(), KEY_COUNT, mode, "None")

    return twin


def running_count(pipeline_input="inputData"):
    def pipeline(inputs):
        return inputs[pipeline_input].key_by("value").process("count", RunningCount(), output_mode="update")

    return pipeline


def processor_query(processor, kind="count", output_mode="update", time_mode="none") -> Query:
    def pipeline(inputs):
        return (
            inputs["inputData"]
            .key_by("value")
            .process("count", processor, time_mode=time_mode, output_mode=output_mode)
        )

    return Query(pipeline, count_twin(kind, output_mode.capitalize()) if kind else None, "update", conf=ROCKSDB)


def union_count(names: list[str], to_string: tuple[str, ...] = ()):
    """``inputData1.toDS().union(inputData2.toDS()...)`` (``to_string``: inputs mapped to strings first)."""

    def pipeline(inputs):
        streams = [
            inputs[name].map(f"{name}_as_string", lambda row: {"value": str(row["value"])})
            if name in to_string
            else inputs[name]
            for name in names
        ]
        united = streams[0].union("union", *streams[1:])
        return united.key_by("value").process("count", RunningCount(), output_mode="update")

    def twin(inputs):
        from pyspark.sql import functions as F

        frames = [
            inputs[name].select(F.col("value").cast("string").alias("value")) if name in to_string else inputs[name]
            for name in names
        ]
        united = frames[0]
        for frame in frames[1:]:
            united = united.union(frame)
        return count_twin("count")(inputs, united)

    return Query(pipeline, twin, "update", conf=ROCKSDB)


def max_event_time(inputs):
    rows = inputs["inputData"].map("event_time", lambda row: {"key": row["_1"], "eventTime": row["_2"] * 1000})
    rows = rows.with_watermark("watermark", "eventTime", "10 seconds")
    return rows.key_by("key").process("max", MaxEventTime(), time_mode="event_time", output_mode="update")


def max_event_time_twin(inputs):
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor

    class MaxEventTimeTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.max = handle.getValueState("maxEventTimeState", "max BIGINT")
            self.timer = handle.getValueState("timerState", "timer BIGINT")

        def handleInputRows(self, key, rows, timerValues):
            seconds = [int(row.eventTime.timestamp()) for row in rows]
            top = max([*seconds, self.max.get()[0] if self.max.exists() else 0])
            self.max.update((top,))
            timeout = (top + 5) * 1000
            old = self.timer.get()[0] if self.timer.exists() else 0
            if old < timeout:
                self.handle.deleteTimer(old)
                self.handle.registerTimer(timeout)
                self.timer.update((timeout,))
            return iter([Row(key=key[0], max=top)])

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.max.clear()
            return iter([Row(key=key[0], max=-1)])

        def close(self):
            pass

    rows = inputs["inputData"].select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("eventTime"))
    rows = rows.withWatermark("eventTime", "10 seconds")
    return rows.groupBy("key").transformWithState(MaxEventTimeTwin(), MaxEventTime.output_schema, "Update", "EventTime")


def lazy_iterators(inputs):
    rows = inputs["inputData"].map("timestamp", lambda row: {"timestamp": row["value"] * 1000})
    rows = rows.with_watermark("watermark", "timestamp", "10 seconds")
    return rows.key_by("timestamp").process("lazy", LazyIterators(), time_mode="event_time", output_mode="update")


def lazy_iterators_twin(inputs):
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor

    class LazyIteratorsTwin(StatefulProcessor):
        def init(self, handle):
            self.handle = handle
            self.state = handle.getValueState("myValueState", "v BIGINT")
            self.registered = False

        def handleInputRows(self, key, rows, timerValues):
            self.state.update(((self.state.get()[0] if self.state.exists() else 0) + 1,))
            if not self.registered:
                self.handle.registerTimer(0)
                self.registered = True
            for row in rows:
                self.state.update((self.state.get()[0] + 1,))
                yield Row(value=int(row.timestamp.timestamp()))

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            self.state.update(((self.state.get()[0] if self.state.exists() else 0) + 1,))
            yield Row(value=42)

        def close(self):
            pass

    rows = (
        inputs["inputData"]
        .select(F.timestamp_seconds("value").alias("timestamp"))
        .withWatermark("timestamp", "10 seconds")
    )
    return rows.groupBy("timestamp").transformWithState(LazyIteratorsTwin(), "value BIGINT", "Update", "EventTime")


def most_recent(deletion: bool):
    def pipeline(inputs):
        processor = MostRecentWithDeletion() if deletion else RunningCountMostRecent()
        return inputs["inputData"].key_by("_1").process("recent", processor, output_mode="update")

    def twin(inputs):
        from pyspark.sql import Row
        from pyspark.sql.streaming import StatefulProcessor

        class MostRecentTwin(StatefulProcessor):
            def init(self, handle):
                if deletion:
                    handle.deleteIfExists("countState")
                else:
                    self.count = handle.getValueState("countState", "count BIGINT")
                self.recent = handle.getValueState("mostRecent", "recent STRING")

            def handleInputRows(self, key, rows, timerValues):
                previous = self.recent.get()[0] if self.recent.exists() else ""
                count = None if deletion else (self.count.get()[0] if self.count.exists() else 0) + 1
                out = []
                for row in rows:
                    self.recent.update((row._2,))
                    if deletion:
                        out.append(Row(key=key[0], previous=previous))
                    else:
                        self.count.update((count,))
                        out.append(Row(key=key[0], count=str(count), previous=previous))
                return iter(out)

            def close(self):
                pass

        schema = MostRecentWithDeletion.output_schema if deletion else RunningCountMostRecent.output_schema
        return inputs["inputData"].groupBy("_1").transformWithState(MostRecentTwin(), schema, "Update", "None")

    output = ("key", "previous") if deletion else ("key", "count", "previous")
    return Query(pipeline, twin, "update", conf=ROCKSDB, output=output)


def files_count(inputs):
    return inputs["srcDir"].key_by("value").process("count", RunningCount(), output_mode="update")


def min_event_time(time_mode: str):
    def pipeline(inputs):
        rows = inputs["inputData"].map("event_time", lambda row: {"key": row["_1"], "eventTime": row["_2"] * 1000})
        rows = rows.with_watermark("watermark", "eventTime", "10 seconds")
        return rows.key_by("key").process("min", MinEventTime(), time_mode=time_mode, output_mode="update")

    return pipeline


def sleeping_timer(inputs):
    return (
        inputs["inputData"]
        .key_by("value")
        .process("timers", SleepingTimer(), time_mode="processing_time", output_mode="update")
    )


UNCLASSIFIED = "dummy unclassified error"
CLASSIFIED = "creating multiple column families with dummy val is not supported"
KEY_STATE = "key STRING, id INT, name STRING"
"""The rows of the failing processors, ``(String, BasicState)`` in the suite (they emit none)."""


class Failing(Processor):
    """The suite's ``UnclassifiedErrorProcessor``, ``ClassifiedErrorProcessor`` and their initial-state and
    timer kin: the handler ``failing`` (``"handle_input_rows"``, ``"handle_initial_state"``, or
    ``"handle_expired_timer"``, whose timer the row handler sets 1 s of processing time later) raises an error
    Spark has not classified (Scala's ``IllegalStateException``, a ``RuntimeError`` here) or, ``classified``, one
    it has (``StateStoreErrors.multipleColumnFamiliesNotSupported``; here the engine's own, a ``PipelineError``)."""

    output_schema = KEY_STATE

    def __init__(self, failing: str, classified: bool):
        self.failing, self.classified = failing, classified

    def init(self, handle):
        self.handle = handle
        self.state = handle.get_value_state("testState")

    def fail(self, handler: str) -> None:
        if handler == self.failing:
            raise PipelineError(CLASSIFIED) if self.classified else RuntimeError(UNCLASSIFIED)

    def handle_initial_state(self, key, initial_state, timer_values):
        self.fail("handle_initial_state")

    def handle_input_rows(self, key, rows, timer_values):
        self.fail("handle_input_rows")
        if self.failing == "handle_expired_timer":
            self.handle.register_timer(timer_values.processing_time + 1_000)
        return ()

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.fail("handle_expired_timer")
        return ()


def failing_query(failing: str, classified: bool) -> Query:
    """``inputData.toDS().groupByKey(x => x).transformWithState(new ...ErrorProcessor(), ...)``; the initial
    state, for ``handle_initial_state``, is ``Seq("init_1")`` grouped by itself. The twin (no timer: its test
    drives Spark's manual clock) raises the same message from a Python processor."""
    time_mode = "processing_time" if failing == "handle_expired_timer" else "none"
    initial = [{"value": "init_1"}] if failing == "handle_initial_state" else None
    message = CLASSIFIED if classified else UNCLASSIFIED

    def pipeline(inputs):
        return (
            inputs["inputData"]
            .key_by("value")
            .process(
                "failing",
                Failing(failing, classified),
                time_mode=time_mode,
                output_mode="update",
                initial_state=initial,
            )
        )

    def twin(inputs):
        from pyspark.sql.streaming import StatefulProcessor

        class FailingTwin(StatefulProcessor):
            def init(self, handle):
                self.state = handle.getValueState("testState", "id INT, name STRING")

            def handleInitialState(self, key, initialState, timerValues):
                if failing == "handle_initial_state":
                    raise RuntimeError(message)

            def handleInputRows(self, key, rows, timerValues):
                if failing == "handle_input_rows":
                    raise RuntimeError(message)
                return iter([])

            def close(self):
                pass

        values = inputs["inputData"]
        settings = {}
        if initial is not None:
            start = values.sparkSession.createDataFrame([("init_1",)], "value STRING")
            settings["initialState"] = start.groupBy("value")
        return values.groupBy("value").transformWithState(FailingTwin(), KEY_STATE, "Update", "None", **settings)

    return Query(pipeline, None if failing == "handle_expired_timer" else twin, "update", conf=ROCKSDB)


def failing_steps(failing: str, classified: bool) -> list:
    """The test's steps: data for key a, then the failure. The engine's message is the error itself when Spark
    classified it (the engine's own error, as it was raised), else one line naming the handler and the key;
    Spark's (a Python processor: ``PYTHON_EXCEPTION``) has the error's message."""
    key = "init_1" if failing == "handle_initial_state" else "a"
    if classified:
        failure = ExpectFailure(f"^{CLASSIFIED}$", "not supported")
    else:
        failure = ExpectFailure(
            rf"^step 'failing': the processor's {failing} failed for key '{key}': RuntimeError: {UNCLASSIFIED} ",
            UNCLASSIFIED,
        )
    if failing != "handle_expired_timer":
        return [add("inputData", "a"), failure]
    return [
        StartStream(manual_clock=True),
        add("inputData", "a"),
        AdvanceManualClock(1_000),
        check_new(),
        AdvanceManualClock(2_000),
        failure,
    ]


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        named("transformWithState - streaming with rocksdb and invalid processor should fail"),
        989,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"query": processor_query(RunningCountWithError(), "error")},
        steps=[add("inputData", "a"), ExpectFailure("created outside init", "INVALID_HANDLE_STATE")],
        variants=4,
    ),
    case(
        SUITE,
        named("transformWithState - lazy iterators can properly get/set keyed state"),
        1011,
        inputs={"inputData": "value INT"},
        output="value",
        pipeline=lazy_iterators,
        twin=lazy_iterators_twin,
        output_mode="update",
        conf=ROCKSDB,
        steps=[StartStream(), add("inputData", 12), check_answer(12, 42)],
        variants=4,
    ),
    case(
        SUITE,
        named("transformWithState - streaming with rocksdb should succeed"),
        1089,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"query": processor_query(RunningCount())},
        steps=[
            add("inputData", "a"),
            check_new(("a", "1")),
            add("inputData", "a", "b"),
            check_new(("a", "2"), ("b", "1")),
            StopStream(),
            StartStream(),
            add("inputData", "a", "b"),
            check_new(("b", "2")),
            StopStream(),
            StartStream(),
            add("inputData", "a", "c"),
            check_new(("a", "1"), ("c", "1")),
        ],
        variants=4,
        ci=True,
        notes="The state metrics (value state variables, timers, rows updated and removed) are not checked.",
    ),
    case(
        SUITE,
        named("transformWithState - streaming with rocksdb and processing time timer should succeed"),
        1127,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"query": processor_query(RunningCountWithProcTimeTimer(), None, time_mode="processing_time")},
        steps=[
            StartStream(manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(1_000),
            check_new(("a", "1")),
            add("inputData", "b"),
            AdvanceManualClock(1_000),
            check_new(("b", "1")),
            add("inputData", "b"),
            AdvanceManualClock(10_000),
            check_new(("a", "-1"), ("b", "2")),
            StopStream(),
            StartStream(manual_clock=True),
            add("inputData", "b"),
            add("inputData", "c"),
            AdvanceManualClock(1_000),
            check_new(("c", "1")),
            add("inputData", "d"),
            AdvanceManualClock(10_000),
            check_new(("c", "-1"), ("d", "1")),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
    ),
    case(
        SUITE,
        named(
            "transformWithState - streaming with rocksdb and processing time timer and updating timers should succeed"
        ),
        1172,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"query": processor_query(ProcTimeTimerUpdates(), None, time_mode="processing_time")},
        steps=[
            StartStream(manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(1_000),
            check_new(("a", "1")),
            add("inputData", "a"),
            AdvanceManualClock(2_000),
            check_new(("a", "2")),
            StopStream(),
            StartStream(manual_clock=True),
            add("inputData", "d"),
            AdvanceManualClock(10_000),
            check_new(("a", "-1"), ("d", "1")),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
    ),
    case(
        SUITE,
        named(
            "transformWithState - streaming with rocksdb and processing time timer and multiple timers should succeed"
        ),
        1208,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"query": processor_query(MultipleTimers(), None, time_mode="processing_time")},
        steps=[
            StartStream(manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(1_000),
            add("inputData", "a"),
            AdvanceManualClock(6_000),
            check_new(("a", "2")),
            add("inputData", "a"),
            AdvanceManualClock(5_000),
            check_new(("a", "3")),
            StopStream(),
            StartStream(manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(5_000),
            check_new(("a", "4")),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
        notes="The last timer sees itself in listTimers() while its handler runs: that is what clears the count.",
    ),
    case(
        SUITE,
        named("transformWithState - streaming with rocksdb and event time based timer"),
        1245,
        inputs={"inputData": "_1 STRING, _2 INT"},
        output=("key", "max"),
        pipeline=max_event_time,
        twin=max_event_time_twin,
        output_mode="update",
        conf=ROCKSDB,
        steps=[
            StartStream(),
            add("inputData", ("a", 11), ("a", 13), ("a", 15)),
            check_new(("a", 15)),
            add("inputData", ("a", 4)),
            check_new(),
            add("inputData", ("a", 10)),
            check_new(("a", 15)),
            add("inputData", ("b", 31)),
            check_new(("a", -1), ("b", 31)),
        ],
        variants=4,
        ci=True,
        notes="The custom metrics (state variables, timers registered and deleted) are not checked.",
    ),
    case(
        SUITE,
        named("transformWithState - timer duration should be reflected in metrics"),
        1290,
        inputs=STRINGS,
        output="value",
        pipeline=sleeping_timer,
        twin=None,
        output_mode="update",
        steps=[
            StartStream(manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(1_000),
            check_new(),
            add("inputData", "b"),
            AdvanceManualClock(1_000),
            check_new(),
            add("inputData", "c"),
            AdvanceManualClock(11_000),
            check_new("a", "b"),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
        notes="The timer-duration metric is not checked (the Scala processor sleeps in its timer for it).",
    ),
    case(
        SUITE,
        named("transformWithState - test deleteIfExists operator"),
        1361,
        inputs={"inputData": "_1 STRING, _2 STRING"},
        output=("key", "count", "previous"),
        queries={"stream1": most_recent(deletion=False), "stream2": most_recent(deletion=True)},
        steps=[
            StartStream(query="stream1", checkpoint="chkptDir"),
            add("inputData", ("a", "str1")),
            check_new(("a", "1", "")),
            StopStream(),
            StartStream(query="stream2", checkpoint="chkptDir"),
            add("inputData", ("a", "str2"), ("b", "str3")),
            check_new(("a", "str1"), ("b", "")),
        ],
        variants=4,
        ci=True,
        notes="The second testStream of the test restarts on the same checkpoint with another processor.",
    ),
    case(
        SUITE,
        named("transformWithState - two input streams"),
        1402,
        inputs={"inputData1": "value STRING", "inputData2": "value STRING"},
        output=("key", "count"),
        queries={"query": union_count(["inputData1", "inputData2"])},
        steps=[
            add("inputData1", "a"),
            check_new(("a", "1")),
            add("inputData2", "a", "b"),
            check_new(("a", "2"), ("b", "1")),
            add("inputData1", "a", "b"),
            check_new(("b", "2")),
            add("inputData1", "d", "e"),
            add("inputData2", "a", "c"),
            check_new(("a", "1"), ("c", "1"), ("d", "1"), ("e", "1")),
        ],
        variants=4,
    ),
    case(
        SUITE,
        named("transformWithState - three input streams"),
        1432,
        inputs={"inputData1": "value STRING", "inputData2": "value STRING", "inputData3": "value STRING"},
        output=("key", "count"),
        queries={"query": union_count(["inputData1", "inputData2", "inputData3"])},
        steps=[
            add("inputData1", "a"),
            check_new(("a", "1")),
            add("inputData2", "a", "b"),
            check_new(("a", "2"), ("b", "1")),
            add("inputData3", "a", "b"),
            check_new(("b", "2")),
            add("inputData1", "d", "e"),
            add("inputData2", "a", "c"),
            check_new(("a", "1"), ("c", "1"), ("d", "1"), ("e", "1")),
            add("inputData3", "a", "c", "d", "e"),
            check_new(("a", "2"), ("c", "2"), ("d", "2"), ("e", "2")),
        ],
        variants=4,
        ci=True,
    ),
    case(
        SUITE,
        named("transformWithState - two input streams, different key type"),
        1467,
        inputs={"inputData1": "value STRING", "inputData2": "value BIGINT"},
        output=("key", "count"),
        queries={"query": union_count(["inputData1", "inputData2"], to_string=("inputData2",))},
        steps=[
            add("inputData1", "1"),
            check_new(("1", "1")),
            add("inputData2", 1, 2),
            check_new(("1", "2"), ("2", "1")),
            add("inputData1", "1", "2"),
            check_new(("2", "2")),
            add("inputData1", "4", "5"),
            add("inputData2", 1, 3),
            check_new(("1", "1"), ("3", "1"), ("4", "1"), ("5", "1")),
        ],
        variants=4,
    ),
    case(
        SUITE,
        named("transformWithState - availableNow trigger mode, rate limit is respected"),
        1514,
        inputs={"srcDir": "value STRING"},
        output=("key", "count"),
        queries={
            "query": Query(
                files_count, lambda inputs: count_twin("count")(inputs, inputs["srcDir"]), "update", conf=ROCKSDB
            )
        },
        steps=[
            add("srcDir", "a"),
            add("srcDir", "b"),
            add("srcDir", "c"),
            StartStream(trigger=Trigger.available_now()),
            check_new(("a", "1"), ("b", "1"), ("c", "1")),
            StopStream(),
            add("srcDir", "a"),
            StartStream(trigger=Trigger.available_now()),
            check_new(("a", "2")),
            NewStream(keep_data=True),
            StartStream(trigger=Trigger.available_now()),
            CheckBatches(4),
        ],
        variants=4,
        files=True,
        ci=True,
        notes="One file per value, read one per batch (maxFilesPerTrigger=1); the test's last query counts its "
        "foreachBatch calls over the same four files, on a fresh checkpoint.",
    ),
    case(
        SUITE,
        named("transformWithState - availableNow trigger mode, multiple restarts"),
        1556,
        inputs={"srcDir": "value STRING"},
        output=("key", "count"),
        queries={
            "query": Query(
                files_count, lambda inputs: count_twin("count")(inputs, inputs["srcDir"]), "update", conf=ROCKSDB
            )
        },
        steps=[
            add("srcDir", "a"),
            add("srcDir", "b"),
            add("srcDir", "c"),
            StartStream(trigger=Trigger.available_now()),
            CheckBatches(3),
            NewStream(keep_data=True),
            add("srcDir", "a"),
            add("srcDir", "b"),
            StartStream(trigger=Trigger.available_now()),
            CheckBatches(5),
            NewStream(keep_data=True),
            add("srcDir", "d"),
            StartStream(trigger=Trigger.available_now()),
            CheckBatches(6),
        ],
        variants=4,
        files=True,
        notes="Without a checkpoint location every start has a fresh checkpoint and reads every file again: "
        "3, 5 and 6 batches (the test counts 3, 8 and 14 calls in all).",
    ),
    case(
        SUITE,
        named("test that different outputMode after query restart fails"),
        1746,
        inputs=STRINGS,
        output=("key", "count"),
        queries={
            "result1": processor_query(RunningCount()),
            "result2": processor_query(RunningCount(), output_mode="append"),
        },
        steps=[
            StartStream(query="result1", checkpoint="checkpointDir"),
            add("inputData", "a"),
            check_new(("a", "1")),
            StopStream(),
            StartStream(query="result2", checkpoint="checkpointDir"),
            add("inputData", "a"),
            ExpectFailure("keeps the output mode", "STATE_STORE_INVALID_CONFIG_AFTER_RESTART"),
        ],
        variants=4,
        notes="The twin of the second query runs its processor in Append mode, as the test's does.",
    ),
    case(
        SUITE,
        named("test that changing between different state variable types fails"),
        1789,
        inputs=STRINGS,
        output=("key", "count"),
        queries={"result": processor_query(RunningCount()), "result2": processor_query(RunningCountList(), "list")},
        steps=[
            StartStream(query="result", checkpoint="checkpointDir"),
            add("inputData", "a"),
            check_new(("a", "1")),
            StopStream(),
            StartStream(query="result2", checkpoint="checkpointDir"),
            add("inputData", "a"),
            ExpectFailure("was a ValueState", "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE"),
        ],
        variants=4,
    ),
    case(
        SUITE,
        named("test that different timeMode after query restart fails"),
        1831,
        inputs=STRINGS,
        output=("key", "count"),
        queries={
            "result1": processor_query(RunningCount()),
            "result2": processor_query(RunningCount(), None, time_mode="processing_time"),
        },
        steps=[
            StartStream(query="result1", checkpoint="checkpointDir"),
            add("inputData", "a"),
            check_new(("a", "1")),
            StopStream(),
            StartStream(query="result2", checkpoint="checkpointDir", manual_clock=True),
            add("inputData", "a"),
            AdvanceManualClock(1_000),
            ExpectFailure("keeps the time mode", "STATE_STORE_INVALID_CONFIG_AFTER_RESTART"),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
    ),
    case(
        SUITE,
        named("test query restart with new state variable succeeds"),
        1878,
        inputs={"inputData1": "value STRING"},
        output=("key", "count"),
        queries={
            "result1": Query(
                lambda inputs: (
                    inputs["inputData1"]
                    .key_by("value")
                    .process("count", RunningCount(), time_mode="processing_time", output_mode="update")
                ),
                None,
                "update",
            ),
            "result2": Query(
                lambda inputs: (
                    inputs["inputData1"]
                    .key_by("value")
                    .process(
                        "count", RunningCountWithProcTimeTimer(), time_mode="processing_time", output_mode="update"
                    )
                ),
                None,
                "update",
            ),
        },
        steps=[
            StartStream(query="result1", checkpoint="checkpointDir", manual_clock=True),
            add("inputData1", "a"),
            AdvanceManualClock(1_000),
            check_new(("a", "1")),
            StopStream(),
            StartStream(query="result2", checkpoint="checkpointDir", manual_clock=True),
            add("inputData1", "a"),
            AdvanceManualClock(1_000),
            check_new(("a", "2")),
        ],
        variants=4,
        spark=MANUAL_CLOCK,
    ),
    *[
        case(
            VALIDATION,
            f"transformWithState - {kind}.exists() should fail in init",
            line,
            inputs=STRINGS,
            output=("key", "count"),
            queries={
                "query": processor_query(
                    exists_in_init(kind.removesuffix("State").lower()), f"{kind.removesuffix('State').lower()} exists"
                )
            },
            steps=[add("inputData", "a"), ExpectFailure(r"exists in init\(\)", "INVALID_HANDLE_STATE")],
        )
        for kind, line in (("ValueState", 2743), ("MapState", 2771), ("ListState", 2799))
    ],
    *[
        case(
            VALIDATION,
            f"transformWithState - using watermark but time mode as {name} should not perform late record filtering",
            2868,
            inputs={"inputData": "_1 STRING, _2 INT"},
            output=("key", "max"),
            pipeline=min_event_time(mode),
            twin=None,
            output_mode="update",
            steps=[
                StartStream(manual_clock=True),
                add("inputData", ("a", 11), ("a", 13), ("a", 15)),
                AdvanceManualClock(1_000),
                check_new(("a", 11)),
                add("inputData", ("a", 4)),
                AdvanceManualClock(1_000),
                check_new(("a", 4)),
                add("inputData", ("a", 1)),
                AdvanceManualClock(1_000),
                check_new(("a", 1)),
                add("inputData", ("a", 85)),
                AdvanceManualClock(1_000),
                check_new(("a", 1)),
            ],
            spark=MANUAL_CLOCK,
        )
        for name, mode in (("NoTime", "none"), ("ProcessingTime", "processing_time"))
    ],
    *[
        case(
            VALIDATION,
            name,
            line,
            inputs=STRINGS,
            output=("key", "id", "name"),
            queries={"query": failing_query(failing, classified)},
            steps=failing_steps(failing, classified),
            spark=MANUAL_CLOCK if failing == "handle_expired_timer" else None,
            ci=failing == "handle_input_rows" and not classified,
            notes=(
                "Scala's IllegalStateException is a RuntimeError here, and the error Spark classified "
                "(StateStoreErrors.multipleColumnFamiliesNotSupported) the engine's own PipelineError, which comes "
                "out as it was raised; PySpark reports a Python processor's error as PYTHON_EXCEPTION with its "
                "message (measured), not as TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR, so the twin's failure is "
                "checked by its message"
            ),
        )
        for name, line, failing, classified in (
            (
                "transformWithState - check that error within handleInputRows is classified",
                2579,
                "handle_input_rows",
                False,
            ),
            (
                "transformWithState - check that classified error is thrown from handleInputRows",
                2607,
                "handle_input_rows",
                True,
            ),
            (
                "transformWithState - check that error within handleInitialState is classified",
                2629,
                "handle_initial_state",
                False,
            ),
            (
                "transformWithState - check that classified error is thrown from handleInitialState",
                2659,
                "handle_initial_state",
                True,
            ),
            (
                "transformWithState - check that error within handleExpiredTimer is classified",
                2683,
                "handle_expired_timer",
                False,
            ),
            (
                "transformWithState - check that classified error is thrown from handleExpiredTimer",
                2716,
                "handle_expired_timer",
                True,
            ),
        )
    ],
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        named("Use statefulProcessor without transformWithState - handle should be absent"),
        1336,
        "no query: Spark's error for a processor's handle used outside a query",
        variants=4,
    ),
    NotExpressible(
        SUITE, named("transformWithState - batch should succeed"), 1349, "a batch (not streaming) Dataset", variants=4
    ),
    *[
        NotExpressible(
            SUITE,
            named(
                f"transformWithState - verify StateSchemaV3 writes correct SQL schema of key/value with "
                f"useImplicits={implicits} (encoding = {encoding})"
            ),
            1597,
            "reads the state schema file Spark writes into the checkpoint",
            variants=4,
        )
        for encoding in ("unsaferow", "avro")
        for implicits in ("false", "true")
    ],
    NotExpressible(
        SUITE,
        named("transformWithState - verify that OperatorStateMetadataV2 file is being written correctly"),
        1702,
        "reads Spark's operator state metadata files",
        variants=4,
    ),
    NotExpressible(
        SUITE,
        named("test exceeding schema file threshold throws error"),
        1924,
        "an internal limit on the number of Spark's state schema files",
        variants=4,
    ),
    NotExpressible(
        SUITE,
        named("test query restart succeeds"),
        1973,
        "plants directories inside Spark's checkpoint and checks that they are ignored",
        variants=4,
    ),
    NotExpressible(
        SUITE,
        named("SPARK-49070: transformWithState - valid initial state plan"),
        2023,
        "a check of Spark's physical plan",
        variants=4,
    ),
    NotExpressible(
        SUITE,
        named("state data source integration - value state supports time travel"),
        2278,
        "reads old versions of Spark's state store through its state data source",
        variants=4,
    ),
    NotExpressible(
        VALIDATION,
        "transformWithState - streaming with hdfsStateStoreProvider should fail",
        2563,
        "a capability error of one of Spark's state store providers",
    ),
    NotExpressible(
        VALIDATION,
        "transformWithStateWithInitialState - streaming with hdfsStateStoreProvider should fail",
        2827,
        "a capability error of one of Spark's state store providers",
    ),
    NotExpressible(
        VALIDATION, "transformWithState - validate timeModes", 2847, "a unit test of an internal helper of Spark"
    ),
]
