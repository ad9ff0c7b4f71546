"""Spark's ``TransformWithStateChainingSuite`` (Scala): a ``transformWithState`` step that names an output
event-time column (``eventTimeColumnName``), followed by other stateful operators, replayed by ministream (and
by Spark through PySpark twins of the suite's processors).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateChainingSuite.scala``, the
newest version this project could read (commit e3b7bbd035ab of apache/spark; line numbers refer to it). The
suite mixes in ``AlsoTestWithRocksDBFeatures`` and ``AlsoTestWithEncodingTypes``: each test runs four times,
with the state encoding ``unsaferow`` or ``avro`` and with or without RocksDB's changelog checkpoints, named
``<test> (encoding = <encoding>) (with changelog checkpointing)`` and ``... (without changelog
checkpointing)``. A test whose body is the same under both encodings is one case here (``variants=4``), named
after its first variant. Three tests skip their body under avro (``if (!isAvroEnabled)``) and one expects avro
to be refused: their avro variants test the encoding, which ministream has not, and are listed.

ministream's ``process(..., time_mode="event_time", event_time_column=...)`` is the test's
``transformWithState(processor, eventTimeColumnName, outputMode)`` (Spark runs that overload in event-time
mode). Each ``AddData`` of the tests is one batch (``MemoryStream``). Times are the tests'
``Timestamp.valueOf`` local times, read in UTC (the replay runs with ``TZ=UTC``); ``assertWatermarkEquals``
is ``CheckWatermark``, the watermark of the query's last batch (its no-data batch).
"""

from ministream import Count, Tumbling
from ministream.operators.process import Processor
from ministream.time.units import parse_timestamp
from tests.conformance.harness import (
    ROCKSDB,
    CheckWatermark,
    ExpectFailure,
    NotExpressible,
    StartStream,
    add,
    case,
    check_new,
)

SUITE = "TransformWithStateChainingSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithStateChainingSuite.scala"
VARIANT = " (encoding = unsaferow) (with changelog checkpointing)"
AVRO = " (encoding = avro) (with changelog checkpointing)"
INPUT_EVENT_ROW = {"inputData": "key STRING, eventTime TIMESTAMP, event STRING"}
"""The suite's ``InputEventRow(key, eventTime, event)``."""
OUTPUT_ROW_SCHEMA = "key STRING, outputEventTime TIMESTAMP, count INT"
"""The suite's ``OutputRow(key, outputEventTime, count)``."""
OUTPUT_ROW = ("key", "outputEventTime", "count")


def named(test: str) -> str:
    return test + VARIANT


def ts(text: str) -> int:
    """A ``Timestamp.valueOf`` of the test, as ms (read in UTC)."""
    return parse_timestamp(text.replace(" ", "T") + "Z")


# -- the suite's processors, in ministream --------------------------------------------------------------------------


class MinEventTime(Processor):
    """``TestStatefulProcessor``: no state; per key and batch, one row with the earliest event time of the
    key's rows and how many rows there were."""

    output_schema = OUTPUT_ROW_SCHEMA

    def handle_input_rows(self, key, rows, timer_values):
        if not rows:
            return []
        return [{"key": key, "outputEventTime": min(row["eventTime"] for row in rows), "count": len(rows)}]


class InputCount(Processor):
    """``InputCountStatefulProcessor``: no state; per key and batch, one row: how many rows the key had."""

    output_schema = "value INT"

    def handle_input_rows(self, key, rows, timer_values):
        return [{"value": len(rows)}]


class EmitsEpochPlusOne(Processor):
    """``StatefulProcessorEmittingRowsOlderThanWatermark``: per key and batch, one row whose event time is
    always 1 ms after the epoch, with how many rows the key had: behind the watermark from the second batch."""

    output_schema = OUTPUT_ROW_SCHEMA

    def handle_input_rows(self, key, rows, timer_values):
        return [{"key": key, "outputEventTime": 1, "count": len(rows)}]


# -- the queries and their twins --------------------------------------------------------------------------------


def chained(processor, event_time_column: str | None = "outputEventTime", watermark: bool = True):
    """``inputData.toDS()[.withWatermark("eventTime", "1 minute")].groupByKey(x => x.key)
    .transformWithState(processor, eventTimeColumnName | TimeMode.None(), OutputMode.Append())``."""

    def stream(inputs):
        rows = inputs["inputData"]
        if watermark:
            rows = rows.with_watermark("watermark", "eventTime", "1 minute")
        time_mode = "event_time" if event_time_column is not None else "none"
        return rows.key_by("key").process(
            "tws", processor, time_mode=time_mode, output_mode="append", event_time_column=event_time_column
        )

    return stream


def chained_twin(kind: str, event_time_column: str | None = "outputEventTime", watermark: bool = True):
    """The same in PySpark: the processor (``kind``: ``"min"`` or ``"epoch"``) written as a PySpark
    ``StatefulProcessor``, in event-time mode when it names an event-time column."""

    def frame(inputs):
        from pyspark.sql import Row
        from pyspark.sql.streaming import StatefulProcessor

        class Twin(StatefulProcessor):
            def init(self, handle):
                pass

            def handleInputRows(self, key, rows, timerValues):
                rows = list(rows)
                if not rows:
                    return
                if kind == "min":
                    yield Row(key=key[0], outputEventTime=min(row.eventTime for row in rows), count=len(rows))
                else:
                    import datetime

                    epoch_plus_one = datetime.datetime(1970, 1, 1, 0, 0, 0, 1000)  # local time, TZ=UTC
                    yield Row(key=key[0], outputEventTime=epoch_plus_one, count=len(rows))

            def close(self):
                pass

        frame = inputs["inputData"]
        if watermark:
            frame = frame.withWatermark("eventTime", "1 minute")
        settings = {} if event_time_column is None else {"eventTimeColumnName": event_time_column}
        time_mode = "EventTime" if event_time_column is not None else "None"
        return frame.groupBy("key").transformWithState(Twin(), OUTPUT_ROW_SCHEMA, "Append", time_mode, **settings)

    return frame


def then_window(inputs):
    """``... .groupBy(window($"outputEventTime", "1 minute")).count()``."""
    return chained(MinEventTime())(inputs).window(
        "counts", Tumbling("1 minute"), column="outputEventTime", count=Count()
    )


def then_window_twin(inputs):
    from pyspark.sql import functions as F

    counted = chained_twin("min")(inputs).groupBy(F.window("outputEventTime", "1 minute")).count()
    return counted.select(F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count")


def then_count(inputs):
    """``... .groupByKey(x => x.key).transformWithState(new InputCountStatefulProcessor[OutputRow](),
    TimeMode.None(), OutputMode.Append())``."""
    return chained(MinEventTime())(inputs).key_by("key").process("count", InputCount(), output_mode="append")


def then_count_twin(inputs):
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class InputCountTwin(StatefulProcessor):
        def init(self, handle):
            pass

        def handleInputRows(self, key, rows, timerValues):
            yield Row(value=sum(1 for _ in rows))

        def close(self):
            pass

    frame = chained_twin("min")(inputs)
    return frame.groupBy("key").transformWithState(InputCountTwin(), "value INT", "Append", "None")


def no_time_then_window(inputs):
    """``transformWithState(new TestStatefulProcessor(), TimeMode.None(), OutputMode.Append())`` (no event-time
    column) then ``groupBy(window($"outputEventTime", "1 minute")).count()`` in append mode."""
    return chained(MinEventTime(), event_time_column=None)(inputs).window(
        "counts", Tumbling("1 minute"), column="outputEventTime", count=Count()
    )


def no_time_then_window_twin(inputs):
    from pyspark.sql import functions as F

    counted = chained_twin("min", event_time_column=None)(inputs).groupBy(F.window("outputEventTime", "1 minute"))
    return counted.count().select(
        F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count"
    )


def no_time_then_dedup(inputs):
    """``transformWithState(new TestStatefulProcessor(), TimeMode.None(), OutputMode.Append())`` then
    ``dropDuplicatesWithinWatermark()``."""
    return chained(MinEventTime(), event_time_column=None)(inputs).drop_duplicates("dedup", within_watermark=True)


def no_time_then_dedup_twin(inputs):
    return chained_twin("min", event_time_column=None)(inputs).dropDuplicatesWithinWatermark()


def then_dedup(inputs):
    """``... .dropDuplicatesWithinWatermark()``: duplicates of whole rows."""
    return chained(MinEventTime())(inputs).drop_duplicates("dedup", within_watermark=True)


def then_dedup_twin(inputs):
    return chained_twin("min")(inputs).dropDuplicatesWithinWatermark()


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        SUITE,
        named("watermark is propagated correctly for next stateful operator after transformWithState"),
        113,
        inputs=INPUT_EVENT_ROW,
        output=("window_start", "window_end", "count"),
        pipeline=then_window,
        twin=then_window_twin,
        conf=ROCKSDB,
        steps=[
            add("inputData", ("k1", ts("2024-01-01 00:00:00"), "e1")),
            check_new(),
            CheckWatermark(ts("2023-12-31 23:59:00")),
            add("inputData", ("k1", ts("2024-02-01 00:00:00"), "e1")),
            check_new((ts("2024-01-01 00:00:00"), ts("2024-01-01 00:01:00"), 1)),
            CheckWatermark(ts("2024-01-31 23:59:00")),
            add("inputData", ("k1", ts("2024-02-02 00:00:00"), "e1")),
            check_new((ts("2024-02-01 00:00:00"), ts("2024-02-01 00:01:00"), 1)),
        ],
        variants=2,
        ci=True,
        notes="The window's struct is written as its start and end columns.",
    ),
    case(
        SUITE,
        named("passing eventTime column to transformWithState fails if no watermark is defined"),
        156,
        inputs=INPUT_EVENT_ROW,
        output=OUTPUT_ROW,
        pipeline=chained(MinEventTime(), watermark=False),
        twin=chained_twin("min", watermark=False),
        conf=ROCKSDB,
        steps=[ExpectFailure("needs a watermark", "CANNOT_ASSIGN_EVENT_TIME_COLUMN_WITHOUT_WATERMARK")],
        variants=4,
    ),
    case(
        SUITE,
        named("missing eventTime column to transformWithState fails the query if another stateful operator is added"),
        175,
        inputs=INPUT_EVENT_ROW,
        output=("window_start", "window_end", "count"),
        pipeline=no_time_then_window,
        twin=no_time_then_window_twin,
        conf=ROCKSDB,
        steps=[StartStream(), ExpectFailure("append output mode needs a watermark", "STREAMING_OUTPUT_MODE")],
        variants=2,
        notes="Spark refuses the query as it starts (STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION, streaming "
        "aggregations without watermark): the step after transformWithState has no event time.",
    ),
    case(
        SUITE,
        named("chaining multiple transformWithState operators"),
        207,
        inputs=INPUT_EVENT_ROW,
        output="value",
        pipeline=then_count,
        twin=then_count_twin,
        conf=ROCKSDB,
        steps=[
            add("inputData", ("k1", ts("2024-01-01 00:00:00"), "e1")),
            check_new(1),
            CheckWatermark(ts("2023-12-31 23:59:00")),
            add("inputData", ("k1", ts("2024-02-01 00:00:00"), "e1")),
            check_new(1),
            CheckWatermark(ts("2024-01-31 23:59:00")),
            add("inputData", ("k1", ts("2024-02-02 00:00:00"), "e1")),
            check_new(1),
        ],
        variants=4,
    ),
    case(
        SUITE,
        named("dropDuplicateWithWatermark after transformWithState operator fails if watermark column is not provided"),
        243,
        inputs=INPUT_EVENT_ROW,
        output=OUTPUT_ROW,
        pipeline=no_time_then_dedup,
        twin=no_time_then_dedup_twin,
        conf=ROCKSDB,
        steps=[
            StartStream(),
            ExpectFailure(
                "within_watermark needs a watermark",
                "dropDuplicatesWithinWatermark is not supported on streaming DataFrames/DataSets without watermark",
            ),
        ],
        variants=2,
    ),
    case(
        SUITE,
        named("dropDuplicateWithWatermark after transformWithState operator"),
        269,
        inputs=INPUT_EVENT_ROW,
        output=OUTPUT_ROW,
        pipeline=then_dedup,
        twin=then_dedup_twin,
        conf=ROCKSDB,
        steps=[
            add("inputData", ("k1", ts("2024-02-01 00:00:00"), "e1"), ("k1", ts("2024-02-01 00:00:00"), "e1")),
            check_new(("k1", ts("2024-02-01 00:00:00"), 2)),
            CheckWatermark(ts("2024-01-31 23:59:00")),
        ],
        variants=2,
    ),
    case(
        SUITE,
        named("query fails if the output dataset does not contain specified eventTimeColumn"),
        304,
        inputs=INPUT_EVENT_ROW,
        output=OUTPUT_ROW,
        pipeline=chained(MinEventTime(), event_time_column="missingEventTimeColumn"),
        twin=chained_twin("min", event_time_column="missingEventTimeColumn"),
        conf=ROCKSDB,
        steps=[StartStream(), ExpectFailure("UNRESOLVED_COLUMN", "UNRESOLVED_COLUMN")],
        variants=4,
        notes="Spark resolves the column in the processor's output schema before the query starts; ministream's "
        "plan checks it against the declared output_schema, and names the columns as Spark's suggestion does.",
    ),
    case(
        SUITE,
        named("query fails if the output dataset contains rows older than current watermark"),
        330,
        inputs=INPUT_EVENT_ROW,
        output=OUTPUT_ROW,
        pipeline=chained(EmitsEpochPlusOne()),
        twin=chained_twin("epoch"),
        conf=ROCKSDB,
        steps=[
            add("inputData", ("k1", ts("2024-02-01 00:00:00"), "e1")),
            check_new(("k1", 1, 1)),
            add("inputData", ("k1", ts("2024-02-02 00:00:00"), "e1")),
            ExpectFailure(
                "EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED", "EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED"
            ),
        ],
        variants=4,
        ci=True,
        notes="The test also checks the error's parameters (currentWatermark 1706774340000, the first batch's "
        "watermark; emittedRowEventTime 1000, in microseconds): ministream's message names the same times.",
    ),
]

VIEW = (
    "a temporary view (createOrReplaceTempView, then spark.readStream.table): ministream has no catalog of named "
    "views, and the test is about resolving the watermark through one"
)
AVRO_SKIPPED = (
    "under the avro state encoding the test skips its body (if (!isAvroEnabled)): it tests the state store's "
    "encoding format, a Spark storage setting ministream has no counterpart of"
)

NOT_EXPRESSIBLE = [
    *[
        NotExpressible(SUITE, test + AVRO, line, AVRO_SKIPPED, variants=2)
        for test, line in (
            (
                "missing eventTime column to transformWithState fails the query if another stateful operator is added",
                175,
            ),
            (
                "dropDuplicateWithWatermark after transformWithState operator fails if watermark column is not provided",
                243,
            ),
        )
    ],
    NotExpressible(
        SUITE,
        "watermark is propagated correctly for next stateful operator after transformWithState" + AVRO,
        113,
        AVRO_SKIPPED,
        variants=2,
    ),
    NotExpressible(
        SUITE,
        "dropDuplicateWithWatermark after transformWithState operator" + AVRO,
        269,
        "under the avro state encoding the test expects the query to fail ('State store encoding format as avro "
        "is not supported' by dropDuplicatesWithinWatermark): a state store encoding format, which ministream "
        "has not",
        variants=2,
    ),
    NotExpressible(SUITE, named("ensure that watermark delay is resolved from a view"), 358, VIEW, variants=4),
    NotExpressible(
        SUITE,
        named("ensure that query fails if there is no watermark when reading from a view"),
        384,
        VIEW,
        variants=4,
    ),
]
