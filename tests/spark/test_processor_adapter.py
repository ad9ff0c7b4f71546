"""The processor adapter (``spark/processor_adapter.py``): the engine's own ``Processor`` classes, run by Spark's
``transformWithState``, give the engine's rows batch for batch, on every lesson with a process step and on the
conformance cases of Spark's and PySpark's ``transformWithState`` suites.

The lessons keep their hand-written twins; here each runs with ``adapter_twin`` instead (a copy of the lesson,
``attrs.evolve(lesson, twin=...)``) and is compared with the engine by ``compare_lesson``. A conformance case
keeps its steps and its expected rows, which the engine meets (``tests/conformance``); here the case's twins
are replaced by the adapter running the engine pipeline's own process step, and the Spark replay must meet the
same rows. The rows that lead into the process step are translated from the pipeline's plan (sources,
watermarks, unions; a map's Python function is given its Spark ``select`` by hand).
"""

import functools
import os

import attrs
import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StructField, StructType, TimestampType

from ministream.core.plan import Dataflow
from ministream.core.sources import ScriptedSource
from ministream.core.steps import AggregateSpec, MapSpec, ProcessSpec, SourceSpec, UnionSpec, WatermarkSpec
from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, device_sessions, processing_time, state_ttl
from ministream.operators.process import Processor
from ministream.spark.processor_adapter import output_schema_of, processor_twin, to_output_row
from tests.conformance import suite_pyspark_transform_with_state as pyspark_suite
from tests.conformance import suite_transform_with_state as scala_suite
from tests.conformance.harness import Inputs
from tests.conformance.spark_replay import run_spark

pytestmark = pytest.mark.spark


# -- the lessons -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [device_sessions, state_ttl, processing_time], ids=lambda m: m.LESSON.name)
def test_a_lesson_through_the_adapter_matches_the_engine(module):
    """A keyed-process lesson's own Processor, run by Spark through the adapter, gives the engine's rows and
    watermarks in every batch (processing-time lessons: with the batch timestamps Spark recorded)."""
    lesson = attrs.evolve(module.LESSON, twin=module.adapter_twin)
    comparison = compare_lesson(lesson)
    assert comparison.matches, comparison.table()
    if lesson.name != "processing-time":  # its alerts depend on the wall-clock gaps between Spark's batches
        assert comparison.rows_matched == {"device-sessions": 7, "state-ttl": 5}[lesson.name]


# -- the conformance cases ---------------------------------------------------------------------------------------

OUTPUT_SCHEMAS = {
    "RunningCount": scala_suite.KEY_COUNT,
    "RunningCountWithError": scala_suite.KEY_COUNT,
    "Failing": scala_suite.KEY_STATE,
    "RunningCountList": scala_suite.KEY_COUNT,
    "ExistsInInit": scala_suite.KEY_COUNT,
    "LazyIterators": "value BIGINT",
    "MaxEventTime": "key STRING, max INT",
    "RunningCountMostRecent": "key STRING, count STRING, previous STRING",
    "MostRecentWithDeletion": "key STRING, previous STRING",
    "SimpleCount": "id STRING, countAsString STRING",
    "ProcTimeCount": "id STRING, countAsString STRING, timeValues STRING",
    "EventTimeMax": "id STRING, timestamp STRING",
    "EventTimeMin": "id STRING, timestamp STRING",
    "SumWithInitialState": "id1 STRING, id2 STRING, value STRING",
    "ChainingOps": "id STRING, outputTimestamp TIMESTAMP",
    "LargeValues": "id STRING, valueStateResult STRING, listStateResult STRING, mapStateResult STRING",
}
"""The suites' processors declare no output schema: the adapter is given the one of the suite's own twin."""


def spark_map(name: str, frame):
    """The Spark ``select`` of a map step of the suites' pipelines (the step's function is Python, not data)."""
    if name == "event_time" and "_1" in frame.columns:
        return frame.select(F.col("_1").alias("key"), F.timestamp_seconds("_2").alias("eventTime"))
    if name == "event_time":
        return frame.select("id", F.timestamp_seconds("temperature").alias("eventTime"))
    if name == "timestamp":
        return frame.select(F.timestamp_seconds("value").alias("timestamp"))
    if name.endswith("_as_string"):
        return frame.select(F.col("value").cast("string").alias("value"))
    raise AssertionError(f"no Spark select for map step {name!r}")


def spark_frame(step, inputs):
    """The streaming DataFrame of a step's output, for the steps that lead into the suites' process steps."""
    frames = [spark_frame(edge.upstream, inputs) for edge in step.inputs]
    spec = step.spec
    if isinstance(spec, SourceSpec):
        return inputs[step.name]
    if isinstance(spec, WatermarkSpec):
        return frames[0].withWatermark(spec.column, f"{spec.delay} milliseconds")
    if isinstance(spec, UnionSpec):
        return functools.reduce(lambda left, right: left.union(right), frames)
    if isinstance(spec, MapSpec):
        return spark_map(step.name, frames[0])
    if isinstance(spec, ProcessSpec):
        schema = OUTPUT_SCHEMAS[type(spec.processor).__name__]
        united = functools.reduce(lambda left, right: left.union(right), frames)
        return processor_twin(united, spec, step_name=step.name, output_schema=schema)
    counts = all(f.name == "count" and f.column is None for f in getattr(spec, "aggregates", {}).values())
    if isinstance(spec, AggregateSpec) and counts:
        (name,) = spec.aggregates
        return frames[0].groupBy(*spec.key_columns).agg(F.count("*").alias(name))
    raise AssertionError(f"no Spark translation for step {step.name!r} ({step.kind})")


def adapter_twin(case, query):
    """A twin of ``query`` that runs its ministream pipeline's own process step through the adapter."""

    def twin(inputs):
        flow = Dataflow("adapter")
        streams = {name: flow.source(name, ScriptedSource([], columns=case.columns(name))) for name in case.inputs}
        end = query.pipeline(Inputs(streams, {}))
        return spark_frame(end.step, inputs)

    return twin


def uses_process(case) -> bool:
    """Whether one of the case's queries has a process step."""
    for query in case.queries.values():
        flow = Dataflow("probe")
        streams = {name: flow.source(name, ScriptedSource([], columns=case.columns(name))) for name in case.inputs}
        query.pipeline(Inputs(streams, {}))
        if any(isinstance(step.spec, ProcessSpec) for step in flow.steps):
            return True
    return False


ALL_CASES = [
    case for suite in (scala_suite, pyspark_suite) for case in suite.CASES if case.spark is None and uses_process(case)
]
CASES = [case for case in ALL_CASES if case.ci or os.environ.get("MINISTREAM_CONFORMANCE", "").strip().lower() == "all"]
"""The cases CI replays through the adapter (those it replays through their hand-written twins); all of them
with ``MINISTREAM_CONFORMANCE=all``."""


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_a_conformance_case_through_the_adapter_gives_the_test_s_rows(case, spark):
    """A transformWithState case's ministream processor, run by Spark through the adapter, gives every answer
    the Spark test asserts (the answers the engine gives: tests/conformance)."""
    queries = {
        name: attrs.evolve(query, twin=adapter_twin(case, query)) if query.twin is not None else query
        for name, query in case.queries.items()
    }
    run_spark(attrs.evolve(case, queries=queries), spark)


# -- every part of the handle, in one query --------------------------------------------------------------------


class EveryPart(Processor):
    """Value state with a default, list state, map state (insertion order, a key put again, a key removed),
    timers listed and fired; every call reports what the processor sees."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count", default=0)
        self.values = handle.get_list_state("values")
        self.seen = handle.get_map_state("seen")

    def report(self, key, kind, timer_values):
        return {
            "key": key,
            "kind": kind,
            "count": self.count.value(),
            "values": repr(self.values.get()),
            "seen": repr(self.seen.items()),
            "timers": repr(self.handle.list_timers()),
            "watermark": timer_values.watermark,
        }

    def handle_input_rows(self, key, rows, timer_values):
        for row in rows:
            self.count.update(self.count.value() + 1)
            self.values.add((row["tag"], row["ts"]))
            self.seen.put(row["tag"], {"at": row["ts"], "again": self.seen.contains(row["tag"])})
            self.handle.register_timer(row["ts"] + 1_000)
        return [self.report(key, "input", timer_values)]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        for first in self.seen.keys()[:1]:  # the oldest entry goes
            self.seen.remove(first)
        rest = self.values.get()[1:]
        if rest:  # a list state is never set empty (Spark: EMPTY_LIST_VALUE): cleared instead
            self.values.update(rest)
        else:
            self.values.clear()
        return [{**self.report(key, "timer", timer_values), "kind": f"timer {expired_timer_info.expiry_time}"}]


EVERY_PART_SCHEMA = (
    "key STRING, kind STRING, count BIGINT, values STRING, seen STRING, timers STRING, watermark TIMESTAMP"
)


def test_every_part_of_the_handle_gives_the_engine_s_rows(spark):
    """Value, list and map state (map entries in insertion order, though Spark orders them by their bytes),
    timers (listed earliest first, fired at the watermark) and TimerValues reach the processor in Spark as in
    the engine: the same rows in every batch."""
    from ministream import CollectingSink, run_microbatch
    from ministream.core.compare import compare_batches
    from ministream.spark import ROCKSDB_STATE_STORE, run_query, scripted_stream

    script = [
        [{"key": "x", "tag": "b", "ts": 10_000}],
        [{"key": "x", "tag": "a", "ts": 11_000}, {"key": "y", "tag": "c", "ts": 9_000}],
        [{"key": "x", "tag": "b", "ts": 12_000}],
        [{"key": "x", "tag": "c", "ts": 13_000}],
        [{"key": "y", "tag": "d", "ts": 30_000}],
    ]
    flow = Dataflow("every-part")
    rows = flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", "0 seconds")
    rows.key_by("key").process(
        "every", EveryPart(), time_mode="event_time", output_mode="update", output_schema=EVERY_PART_SCHEMA
    ).sink("output", CollectingSink())
    ours = run_microbatch(flow, output_mode="update").output()
    frame = scripted_stream(spark, "key STRING, tag STRING, ts TIMESTAMP", script).withWatermark("ts", "0 seconds")
    theirs = run_query(
        processor_twin(frame, flow.step("every").spec, step_name="every"), "update", conf=ROCKSDB_STATE_STORE
    )
    comparison = compare_batches(ours, theirs)
    assert comparison.matches, comparison.table()
    (put_again,) = [row for row in ours[2].rows if row["kind"] == "input"]
    assert put_again["seen"] == "[('b', {'at': 12000, 'again': True}), ('a', {'at': 11000, 'again': False})]"
    assert len(theirs) == 6 and sum(len(batch.rows) for batch in theirs) == 11


class ExpiringMap(Processor):
    """Map state with a 1 ms time-to-live in processing-time mode: what the previous batch wrote is gone."""

    def init(self, handle):
        self.seen = handle.get_map_state("seen", ttl=1)

    def handle_input_rows(self, key, rows, timer_values):
        before = repr(self.seen.items())
        for row in rows:
            self.seen.put(row["tag"], timer_values.processing_time)
        return [
            {"key": key, "before": before, "watermark": timer_values.watermark, "now": timer_values.processing_time}
        ]


def test_map_state_ttl_and_a_query_without_watermark_give_the_engine_s_rows(spark):
    """In processing-time mode, map entries with a time-to-live expire in Spark as in the engine (run with
    Spark's batch timestamps), and in a query without a watermark the processor sees the engine's ``None``
    where Spark's TimerValues say 0."""
    from ministream import CollectingSink, run_microbatch
    from ministream.core.compare import compare_batches
    from ministream.spark import ROCKSDB_STATE_STORE, run_query, scripted_stream

    script = [
        [{"key": "a", "tag": "x"}],
        [{"key": "a", "tag": "y"}, {"key": "b", "tag": "x"}],
        [],
        [{"key": "a", "tag": "z"}],
    ]
    flow = Dataflow("expiring")
    flow.source("events", ScriptedSource(script)).key_by("key").process(
        "expiring",
        ExpiringMap(),
        time_mode="processing_time",
        output_mode="update",
        output_schema="key STRING, before STRING, watermark BIGINT, now TIMESTAMP",
    ).sink("output", CollectingSink())
    frame = scripted_stream(spark, "key STRING, tag STRING", script)
    conf = {**ROCKSDB_STATE_STORE, "spark.sql.streaming.noDataMicroBatches.enabled": "false"}
    theirs = run_query(processor_twin(frame, flow.step("expiring").spec, step_name="expiring"), "update", conf=conf)
    timestamps = [batch.processing_time for batch in theirs]
    ours = run_microbatch(flow, output_mode="update", batch_timestamps=timestamps).output()
    comparison = compare_batches(ours, theirs)
    assert comparison.matches, comparison.table()
    assert [row["before"] for batch in theirs for row in batch.rows] == ["[]", "[]", "[]", "[]"]
    assert {row["watermark"] for batch in theirs for row in batch.rows} == {None}


OUTPUT_TIME_SCRIPTS = {
    "a timer row later than the previous watermark": (
        1_000,
        [[{"key": "a", "ts": 1_000}], [{"key": "b", "ts": 20_000}]],
    ),
    "timers in the past, later than WM_0": (-5_000, [[{"key": "a", "ts": 10_000}], [{"key": "b", "ts": 11_000}]]),
    "a timer in the past, at or before WM_1": (
        -5_000,
        [[{"key": "a", "ts": 10_000}], [{"key": "b", "ts": 11_000}], [{"key": "a", "ts": 12_000}]],
    ),
}


@pytest.mark.parametrize("name", OUTPUT_TIME_SCRIPTS)
def test_an_output_event_time_is_checked_against_the_previous_watermark_as_in_the_engine(name, spark):
    """Rule 7 of ``operators/process.py``, measured: with ``event_time_column`` (``eventTimeColumnName``) Spark
    fails the query on a returned row at or before the previous batch's watermark, even with no step after it
    (``EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED``), and the engine raises on the same row; rows later
    than it pass, in both, with the same batches."""
    from ministream import CollectingSink, run_microbatch
    from ministream.core.compare import compare_batches
    from ministream.spark import ROCKSDB_STATE_STORE, SparkQueryError, run_query, scripted_stream
    from tests.operators.test_process import TimerPerRow

    after, script = OUTPUT_TIME_SCRIPTS[name]
    flow = Dataflow("output-time")
    flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", 0).key_by("key").process(
        "p",
        TimerPerRow(after),
        time_mode="event_time",
        event_time_column="t",
        output_schema="key STRING, kind STRING, t TIMESTAMP, wm BIGINT",
    ).sink("output", CollectingSink())
    frame = scripted_stream(spark, "ts TIMESTAMP, key STRING", script).withWatermark("ts", "0 seconds")
    twin = processor_twin(frame, flow.step("p").spec, step_name="p")
    if name.endswith("WM_1"):
        with pytest.raises(SparkQueryError, match=r"EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED.*7000000"):
            run_query(twin, "update", conf=ROCKSDB_STATE_STORE)
        with pytest.raises(PipelineError, match="'t': 7000"):
            run_microbatch(flow, output_mode="update")
        return
    ours = run_microbatch(flow, output_mode="update").output()
    comparison = compare_batches(ours, run_query(twin, "update", conf=ROCKSDB_STATE_STORE))
    assert comparison.matches, comparison.table()
    assert any(row["kind"] == "timer" for batch in ours for row in batch.rows)


# -- the adapter's parts, without a query ------------------------------------------------------------------------


class Declared(Processor):
    output_schema = "key STRING, n BIGINT"


def test_the_output_schema_comes_from_the_call_the_step_or_the_processor_class():
    """The output schema is the call's, else the step's ``output_schema``, else the processor class's; none is
    a one-line error naming the step."""
    spec = ProcessSpec(("key",), Declared())
    assert output_schema_of(spec, "s") == "key STRING, n BIGINT"
    assert output_schema_of(attrs.evolve(spec, output_schema="key STRING"), "s") == "key STRING"
    assert output_schema_of(spec, "s", "n BIGINT") == "n BIGINT"
    with pytest.raises(PipelineError, match=r"^step 'count': Spark needs the columns of the rows Processor returns"):
        output_schema_of(ProcessSpec(("key",), Processor()), "count")


def test_output_rows_get_timestamps_from_ms_and_nulls_for_missing_columns():
    """A returned row becomes the schema's Row: ms in a TIMESTAMP column become that UTC time, a column the row
    lacks is null, and a column the schema lacks is an error naming the step and the row."""
    schema = StructType([StructField("key", LongType()), StructField("at", TimestampType())])
    row = to_output_row({"key": 7}, schema, "s")
    assert row.asDict() == {"key": 7, "at": None}
    assert to_output_row({"at": 1_500}, schema, "s").at.timestamp() == 1.5
    with pytest.raises(PipelineError, match=r"^step 's': the processor returned column 'x'"):
        to_output_row({"x": 1}, schema, "s")
