"""PySpark's ``transformWithState`` tests (``TransformWithStateInPandasTests``, and the same tests in
``TransformWithStateInPySparkTests`` with the row-based API), replayed by ministream and by Spark.

Source: ``python/pyspark/sql/tests/pandas/streaming/test_pandas_transform_with_state.py`` (Spark master of
2026-01-07); its processors are in ``python/pyspark/sql/tests/pandas/helper/helper_pandas_transform_with_state.py``.
Every test runs its query with ``spark.sql.streaming.noDataMicroBatches.enabled=false`` on a stream of text
files (one file per micro-batch, lines ``id, temperature``), and checks each batch as a set in
``foreachBatch``. The twins are the tests' own processors, with the row-based API (the pandas API gives the
same rows; its chunking of rows is what the excluded tests count).
"""

from ministream import Count
from ministream.operators.process import Processor
from tests.conformance.harness import (
    NewStream,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    case,
    check_answer,
    check_last,
)

SUITE = "TransformWithStateInPandasTests"
ROW_SUITE = "TransformWithStateInPySparkTests"
SOURCE = "python/pyspark/sql/tests/pandas/streaming/test_pandas_transform_with_state.py"
CONF = {
    "spark.sql.shuffle.partitions": "5",
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
}
TEMPERATURES = {"files": "id STRING, temperature INT"}
R1 = [("0", 123), ("0", 46), ("1", 146), ("1", 346)]
R2 = [("0", 123), ("0", 223), ("0", 323), ("1", 246), ("1", 6)]
R3 = [("0", 123), ("1", 6)]
EVENTS = [[("a", 20)], [("a", 4)], [("a", 2), ("a", 11), ("a", 13), ("a", 15)]]


# -- the tests' processors, in ministream --------------------------------------------------------------------


class SimpleCount(Processor):
    """``SimpleStatefulProcessor``: the number of the key's rows in this batch (a count of temperatures over
    100 is kept in state, and asserted inside the PySpark test's processor, not here)."""

    output_schema = "id STRING, countAsString STRING"

    def init(self, handle):
        self.violations = handle.get_value_state("numViolations", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.violations.update(self.violations.value() + sum(row["temperature"] > 100 for row in rows))
        return [{"id": key, "countAsString": str(len(rows))}]


class ProcTimeCount(Processor):
    """``ProcTimeStatefulProcessor``: a running count of rows; key 0 registers a processing-time timer 1 ms
    after every batch; the timer (which ``listTimers()`` still lists, with the batch's new one) clears it."""

    output_schema = "id STRING, countAsString STRING, timeValues STRING"

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count_state")

    def handle_input_rows(self, key, rows, timer_values):
        count = int(self.count.value() or 0) + len(rows)
        if key == "0":
            self.handle.register_timer(timer_values.processing_time + 1)
        self.count.update(str(count))
        return [{"id": key, "countAsString": str(count), "timeValues": str(timer_values.processing_time)}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        timers = self.handle.list_timers()
        assert timers == self.handle.list_timers() and len(timers) in (0, 2), timers
        self.count.clear()
        self.handle.delete_timer(expired_timer_info.expiry_time)
        return [{"id": key, "countAsString": "-1", "timeValues": str(expired_timer_info.expiry_time)}]


class EventTimeMax(Processor):
    """``EventTimeStatefulProcessor``: the largest event second of the key; a timer at the watermark the
    batch evicts with (it fires in the same batch); the timer clears the state."""

    output_schema = "id STRING, timestamp STRING"

    def init(self, handle):
        self.handle = handle
        self.max = handle.get_value_state("max_state")

    def handle_input_rows(self, key, rows, timer_values):
        top = max([int(self.max.value() or 0)] + [row["eventTime"] // 1000 for row in rows])
        self.max.update(str(top))
        self.handle.register_timer(timer_values.watermark)
        return [{"id": key, "timestamp": str(top)}]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.max.clear()
        self.handle.delete_timer(expired_timer_info.expiry_time)
        return [{"id": f"{key}-expired", "timestamp": str(expired_timer_info.expiry_time)}]


class EventTimeMin(Processor):
    """``MinEventTimeStatefulProcessor``: the smallest event second of the key."""

    output_schema = "id STRING, timestamp STRING"

    def init(self, handle):
        self.min = handle.get_value_state("min_state")

    def handle_input_rows(self, key, rows, timer_values):
        low = min(
            [int(self.min.value()) if self.min.exists() else float("inf")] + [row["eventTime"] // 1000 for row in rows]
        )
        self.min.update(str(low))
        return [{"id": key, "timestamp": str(low)}]


class SumWithInitialState(Processor):
    """``SimpleStatefulProcessorWithInitialState``: the key's sum of temperatures, starting from its
    initial state."""

    output_schema = "id1 STRING, id2 STRING, value STRING"

    def init(self, handle):
        self.value = handle.get_value_state("value_state")

    def handle_initial_state(self, key, initial_state, timer_values):
        self.value.update(initial_state["initVal"])

    def handle_input_rows(self, key, rows, timer_values):
        total = (self.value.value() or 0) + sum(row["temperature"] for row in rows)
        self.value.update(total)
        return [{"id1": key[0], "id2": key[1], "value": str(total)}]


class ChainingOps(Processor):
    """``StatefulProcessorChainingOps``: no state; the event time of the first row of the last chunk of the
    key's rows (the test's pandas chunks hold 2 rows: spark.sql.execution.arrow...maxRecordsPerBatch)."""

    output_schema = "id STRING, outputTimestamp TIMESTAMP"

    def handle_input_rows(self, key, rows, timer_values):
        last_chunk = rows[(len(rows) - 1) // 2 * 2 :]
        return [{"id": key, "outputTimestamp": last_chunk[0]["eventTime"]}]


LARGE = "a" * 524_288


class LargeValues(Processor):
    """``LargeValueStatefulProcessor``: 512 KiB strings in value, list and map state, read back."""

    output_schema = "id STRING, valueStateResult STRING, listStateResult STRING, mapStateResult STRING"

    def init(self, handle):
        self.value = handle.get_value_state("value_state")
        self.list = handle.get_list_state("list_state")
        self.map = handle.get_map_state("map_state")

    def handle_input_rows(self, key, rows, timer_values):
        self.value.update(LARGE)
        self.list.update([LARGE, LARGE + "b", LARGE + "c"])
        self.map.put("large_string_key", LARGE)
        return [
            {
                "id": key,
                "valueStateResult": self.value.value(),
                "listStateResult": ",".join(self.list.get()),
                "mapStateResult": ",".join(f"{k}:{v}" for k, v in self.map.items()),
            }
        ]


# -- the pipelines and their twins -------------------------------------------------------------------------


def by_id(processor, time_mode="none", output_mode="update", key="id", **settings):
    def pipeline(inputs):
        return (
            inputs["files"]
            .key_by(key)
            .process("tws", processor, time_mode=time_mode, output_mode=output_mode, **settings)
        )

    return pipeline


def event_times(processor, time_mode, delay="10 seconds"):
    def pipeline(inputs):
        rows = inputs["files"].map("event_time", lambda row: {"id": row["id"], "eventTime": row["temperature"] * 1000})
        rows = rows.with_watermark("watermark", "eventTime", delay)
        return rows.key_by("id").process("tws", processor, time_mode=time_mode, output_mode="update")

    return pipeline


def twin(kind: str, time_mode: str = "None", output_mode: str = "Update"):
    """The test's processor ``kind``, run by PySpark's ``transformWithState``."""

    def make(inputs):
        from pyspark.sql import Row
        from pyspark.sql import functions as F
        from pyspark.sql.streaming import StatefulProcessor

        large = "a" * 524_288

        class TwinProcessor(StatefulProcessor):
            def init(self, handle):
                self.handle = handle
                if kind == "simple":
                    self.violations = handle.getValueState("numViolations", "v INT")
                elif kind == "proc_timer":
                    self.count = handle.getValueState("count_state", "v STRING")
                elif kind in ("event_time", "min"):
                    self.state = handle.getValueState("state", "v STRING")
                elif kind == "init_state":
                    self.value = handle.getValueState("value_state", "v INT")
                elif kind == "large":
                    self.value = handle.getValueState("value_state", "v STRING")
                    self.list = handle.getListState("list_state", "v STRING")
                    self.map = handle.getMapState("map_state", "k STRING", "v STRING")

            def handleInputRows(self, key, rows, timerValues):
                rows = list(rows)
                if kind == "simple":
                    old = self.violations.get()[0] if self.violations.exists() else 0
                    self.violations.update((old + sum(r.temperature > 100 for r in rows),))
                    yield Row(id=key[0], countAsString=str(len(rows)))
                elif kind == "proc_timer":
                    count = int(self.count.get()[0] if self.count.exists() else 0) + len(rows)
                    now = timerValues.getCurrentProcessingTimeInMs()
                    if key[0] == "0":
                        self.handle.registerTimer(now + 1)
                    self.count.update((str(count),))
                    yield Row(id=key[0], countAsString=str(count), timeValues=str(now))
                elif kind == "event_time":
                    seconds = [int(r.eventTime.timestamp()) for r in rows]
                    top = max([int(self.state.get()[0]) if self.state.exists() else 0, *seconds])
                    self.state.update((str(top),))
                    self.handle.registerTimer(timerValues.getCurrentWatermarkInMs())
                    yield Row(id=key[0], timestamp=str(top))
                elif kind == "min":
                    seconds = [int(r.eventTime.timestamp()) for r in rows]
                    low = min([int(self.state.get()[0]) if self.state.exists() else float("inf"), *seconds])
                    self.state.update((str(low),))
                    yield Row(id=key[0], timestamp=str(low))
                elif kind == "init_state":
                    total = (self.value.get()[0] if self.value.exists() else 0) + sum(r.temperature for r in rows)
                    self.value.update((total,))
                    yield Row(id1=key[0], id2=key[1], value=str(total))
                elif kind == "chaining":
                    last_chunk = rows[(len(rows) - 1) // 2 * 2 :]
                    yield Row(id=key[0], outputTimestamp=last_chunk[0].eventTime)
                elif kind == "large":
                    self.value.update((large,))
                    self.list.put([(large,), (large + "b",), (large + "c",)])
                    self.map.updateValue(("large_string_key",), (large,))
                    values = ",".join(v[0] for v in self.list.get())
                    entries = ",".join(f"{k[0]}:{v[0]}" for k, v in self.map.iterator())
                    yield Row(
                        id=key[0], valueStateResult=self.value.get()[0], listStateResult=values, mapStateResult=entries
                    )

            def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
                expiry = expiredTimerInfo.getExpiryTimeInMs()
                if kind == "proc_timer":
                    timers = list(self.handle.listTimers())
                    assert timers == list(self.handle.listTimers()) and len(timers) in (0, 2), timers
                    self.count.clear()
                    self.handle.deleteTimer(expiry)
                    yield Row(id=key[0], countAsString="-1", timeValues=str(expiry))
                elif kind == "event_time":
                    self.state.clear()
                    self.handle.deleteTimer(expiry)
                    yield Row(id=f"{key[0]}-expired", timestamp=str(expiry))

            def handleInitialState(self, key, initialState, timerValues):
                if kind == "init_state":
                    self.value.update((initialState.initVal,))

            def close(self):
                pass

        files = inputs["files"]
        schemas = {
            "simple": SimpleCount.output_schema,
            "proc_timer": ProcTimeCount.output_schema,
            "event_time": EventTimeMax.output_schema,
            "min": EventTimeMin.output_schema,
            "init_state": SumWithInitialState.output_schema,
            "chaining": ChainingOps.output_schema,
            "large": LargeValues.output_schema,
        }
        if kind in ("event_time", "min", "chaining"):
            files = files.select("id", F.timestamp_seconds("temperature").alias("eventTime"))
            files = files.withWatermark("eventTime", "5 seconds" if kind == "chaining" else "10 seconds")
        keys = ["id1", "id2"] if kind == "init_state" else ["id"]
        settings = {}
        if kind == "init_state" and inputs.memory.get("initial_state"):
            initial = files.sparkSession.createDataFrame(
                [(789, "0", "1"), (987, "3", "2")], "initVal INT, id1 STRING, id2 STRING"
            ).groupBy("id1", "id2")
            settings["initialState"] = initial
        if kind == "chaining":
            settings["eventTimeColumnName"] = "outputTimestamp"
        result = files.groupBy(*keys).transformWithState(
            TwinProcessor(), schemas[kind], output_mode, time_mode, **settings
        )
        if kind == "chaining":
            grouping = inputs.memory.get("grouping", ["outputTimestamp"])
            result = result.groupBy(*grouping).count()
        return result

    return make


def chaining(grouping: list[str]):
    def pipeline(inputs):
        rows = inputs["files"].map("event_time", lambda row: {"id": row["id"], "eventTime": row["temperature"] * 1000})
        rows = rows.with_watermark("watermark", "eventTime", "5 seconds")
        chained = rows.key_by("id").process(
            "tws", ChainingOps(), time_mode="event_time", output_mode="append", event_time_column="outputTimestamp"
        )
        return chained.key_by(grouping).aggregate("counts", count=Count())

    def spark(inputs):
        inputs.memory["grouping"] = grouping
        return twin("chaining", "EventTime", "Append")(inputs)

    return Query(pipeline, spark, "append", conf=CONF, output=("outputTimestamp", "count"))


def with_initial_state(inputs):
    return (
        inputs["files"]
        .key_by(["id1", "id2"])
        .process(
            "tws",
            SumWithInitialState(),
            output_mode="update",
            initial_state=[{"initVal": 789, "id1": "0", "id2": "1"}, {"initVal": 987, "id1": "3", "id2": "2"}],
        )
    )


def with_initial_state_twin(inputs):
    inputs.memory["initial_state"] = True
    return twin("init_state")(inputs)


def batches(*files, check=None):
    """One file per batch, then the check of each batch's rows (as a set)."""
    steps = []
    for rows, expected in zip(files, check):
        steps += [add("files", *rows), check_last(*expected, as_set=True)]
    return steps


EVENT_TIME_STEPS = batches(
    *EVENTS,
    check=[
        [("a", "20"), ("a-expired", "0")],
        [("a", "4"), ("a-expired", "10000")],
        [("a", "15"), ("a-expired", "10000")],
    ],
)
PROC_TIMER_STEPS = batches(
    R3,
    R1,
    R2,
    check=[[("0", "1"), ("1", "1")], [("0", "3"), ("0", "-1"), ("1", "3")], [("0", "3"), ("0", "-1"), ("1", "5")]],
)


def pyspark_case(test: str, line: int, **settings):
    return case(SUITE, test, line, variants=2, files=True, **settings)


CASES = [
    pyspark_case(
        "test_transform_with_state_basic",
        194,
        inputs=TEMPERATURES,
        output=("id", "countAsString"),
        queries={"query": Query(by_id(SimpleCount()), twin("simple"), "update", conf=CONF)},
        steps=batches(R1, R2, check=[[("0", "2"), ("1", "2")], [("0", "3"), ("1", "2")]]),
        ci=True,
        notes="The test's processor also checks its violation counts and a deleted state variable inside; "
        "the replay checks the rows.",
    ),
    pyspark_case(
        "test_transform_with_state_query_restarts",
        210,
        inputs=TEMPERATURES,
        output=("id", "countAsString"),
        queries={"query": Query(by_id(SimpleCount()), twin("simple"), "append", conf=CONF)},
        steps=[
            StartStream(checkpoint="checkpoint"),
            add("files", *R1),
            StopStream(),
            add("files", *R2),
            StartStream(checkpoint="checkpoint"),
            StopStream(),
            check_answer(("0", "2"), ("0", "3"), ("1", "2"), ("1", "2")),
        ],
        notes="The test writes Parquet files (append) and reads them back; the processor's mode is Update.",
    ),
    pyspark_case(
        "test_transform_with_state_proc_timer",
        337,
        inputs=TEMPERATURES,
        output=("id", "countAsString"),
        queries={
            "query": Query(
                by_id(ProcTimeCount(), "processing_time"), twin("proc_timer", "ProcessingTime"), "update", conf=CONF
            )
        },
        steps=PROC_TIMER_STEPS,
        notes="Processing time is the wall clock in Spark; in the replay, a second passes between two batches.",
    ),
    pyspark_case(
        "test_transform_with_state_event_time",
        455,
        inputs=TEMPERATURES,
        output=("id", "timestamp"),
        queries={
            "query": Query(
                event_times(EventTimeMax(), "event_time"), twin("event_time", "EventTime"), "update", conf=CONF
            )
        },
        steps=EVENT_TIME_STEPS,
        ci=True,
    ),
    pyspark_case(
        "test_transform_with_state_with_wmark_and_non_event_time",
        487,
        inputs=TEMPERATURES,
        output=("id", "timestamp"),
        queries={
            "None": Query(event_times(EventTimeMin(), "none"), twin("min", "None"), "update", conf=CONF),
            "ProcessingTime": Query(
                event_times(EventTimeMin(), "processing_time"), twin("min", "ProcessingTime"), "update", conf=CONF
            ),
        },
        steps=[
            *batches(*EVENTS, check=[[("a", "20")], [("a", "4")], [("a", "2")]]),
            NewStream(query="ProcessingTime"),
            *batches(*EVENTS, check=[[("a", "20")], [("a", "4")], [("a", "2")]]),
        ],
    ),
    pyspark_case(
        "test_transform_with_state_non_contiguous_grouping_cols",
        571,
        inputs={"files": "id1 STRING, temperature INT, id2 STRING"},
        output=("id1", "id2", "value"),
        queries={
            "query": Query(by_id(SumWithInitialState(), key=["id1", "id2"]), twin("init_state"), "update", conf=CONF)
        },
        steps=[
            add("files", ("0", 123, "1"), ("0", 46, "1"), ("1", 146, "2"), ("1", 346, "2")),
            check_last(("0", "1", "169"), ("1", "2", "492"), as_set=True),
        ],
    ),
    pyspark_case(
        "test_transform_with_state_non_contiguous_grouping_cols_with_init_state",
        583,
        inputs={"files": "id1 STRING, temperature INT, id2 STRING"},
        output=("id1", "id2", "value"),
        queries={"query": Query(with_initial_state, with_initial_state_twin, "update", conf=CONF)},
        steps=[
            add("files", ("0", 123, "1"), ("0", 46, "1"), ("1", 146, "2"), ("1", 346, "2")),
            check_last(("0", "1", "958"), ("1", "2", "492"), as_set=True),
        ],
        ci=True,
    ),
    pyspark_case(
        "test_transform_with_state_chaining_ops",
        667,
        inputs=TEMPERATURES,
        output=("outputTimestamp", "count"),
        queries={
            "outputTimestamp": chaining(["outputTimestamp"]),
            "outputTimestamp, id": chaining(["outputTimestamp", "id"]),
        },
        steps=[
            *batches(
                [("a", 10), ("b", 15)],
                [("a", 11), ("c", 25)],
                [("a", 5)],
                check=[[], [(10_000, 1)], [(11_000, 1), (15_000, 1)]],
            ),
            NewStream(query="outputTimestamp, id"),
            *batches(
                [("a", 10), ("b", 15)],
                [("a", 11), ("c", 25)],
                [("a", 5)],
                check=[[], [(10_000, 1)], [(11_000, 1), (15_000, 1)]],
            ),
        ],
        ci=True,
    ),
    pyspark_case(
        "test_transform_with_state_with_timers_single_partition",
        1132,
        inputs=TEMPERATURES,
        output=("id", "timestamp"),
        queries={
            "event time": Query(
                event_times(EventTimeMax(), "event_time"),
                twin("event_time", "EventTime"),
                "update",
                conf={**CONF, "spark.sql.shuffle.partitions": "1"},
            ),
            "processing time": Query(
                by_id(ProcTimeCount(), "processing_time"),
                twin("proc_timer", "ProcessingTime"),
                "update",
                conf={**CONF, "spark.sql.shuffle.partitions": "1"},
                output=("id", "countAsString"),
            ),
        },
        steps=[*EVENT_TIME_STEPS, NewStream(query="processing time"), *PROC_TIMER_STEPS],
    ),
    pyspark_case(
        "test_transform_with_state_large_values",
        1583,
        inputs=TEMPERATURES,
        output=("id", "valueStateResult", "listStateResult", "mapStateResult"),
        queries={"query": Query(by_id(LargeValues()), twin("large"), "update", conf=CONF)},
        steps=[
            add("files", *R1),
            check_last(
                ("0", LARGE, f"{LARGE},{LARGE}b,{LARGE}c", f"large_string_key:{LARGE}"),
                ("1", LARGE, f"{LARGE},{LARGE}b,{LARGE}c", f"large_string_key:{LARGE}"),
                as_set=True,
            ),
        ],
    ),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE, "test_transform_with_state_batch_query", 703, "a batch (not streaming) DataFrame", variants=2
    ),
    NotExpressible(
        SUITE,
        "test_transform_with_state_batch_query_initial_state",
        734,
        "a batch (not streaming) DataFrame",
        variants=2,
    ),
    NotExpressible(
        SUITE,
        "test_transform_with_state_in_pandas_composite_type",
        773,
        "PySpark's encoding of composite Python state types (arrays, maps, nested) and their JSON dumps",
        variants=2,
    ),
    NotExpressible(
        SUITE, "test_composite_output_schema", 831, "PySpark's conversion of composite output types", variants=2
    ),
    NotExpressible(
        SUITE,
        "test_schema_evolution_scenarios",
        1179,
        "evolution of Spark's Avro state schema across restarts (fields added, removed, reordered, widened)",
        variants=2,
    ),
    NotExpressible(
        SUITE, "test_schema_evolution_fails", 1247, "Spark's refusal of an Avro state schema change", variants=2
    ),
    NotExpressible(SUITE, "test_not_nullable_fails", 1299, "Spark's nullability rule for state schemas", variants=2),
    NotExpressible(
        SUITE,
        "test_transform_with_state_int_to_decimal_coercion",
        1331,
        "pandas' int to decimal coercion of output columns, on a batch DataFrame",
    ),
    NotExpressible(
        SUITE,
        "test_transform_with_state_with_bytes_limit",
        1399,
        "counts the Arrow chunks PySpark cuts the rows into (spark.sql.execution.arrow.maxBytesPerBatch)",
    ),
    NotExpressible(
        SUITE,
        "test_transform_with_state_with_records_limit",
        1492,
        "counts the Arrow chunks PySpark cuts the rows into (spark.sql.execution.arrow.maxRecordsPerBatch)",
    ),
    *[
        NotExpressible(
            ROW_SUITE,
            test,
            line,
            "the test returns at once in the row-based class: it checks nothing there",
        )
        for test, line in (
            ("test_transform_with_state_int_to_decimal_coercion", 1331),
            ("test_transform_with_state_with_bytes_limit", 1399),
            ("test_transform_with_state_with_records_limit", 1492),
        )
    ],
]
