"""The compiler's source text and its refusals (``spark/compiler``), without running Spark: what a twin says it
does, one statement per step, and the one-line error, naming the step, Spark's rule and the rewrite, for what
Spark cannot run (Spark's own error for each: tests/spark/test_compiler_refusals.py)."""

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling
from ministream.core.aggregates import Custom
from ministream.core.events import Field
from ministream.core.steps import RowCondition
from ministream.lessons import all_lessons, get_lesson
from ministream.spark.compiler import CompileError, compile_flow, compiled_lesson_twin
from ministream.time.ranges import TimeRange
from ministream.tools.cli import main

FIELDS = {"events": [Field("key", str), Field("value", float)]}

TUMBLING_WINDOW = """\
# The PySpark twin of the ministream dataflow 'tumbling-window', written by ministream.spark.compiler.
# `steps` holds the plan's steps by name: their Python functions run as UDFs.
from pyspark.sql import functions as F


def twin(inputs):
    # source 'events': ts TIMESTAMP, key STRING, value DOUBLE
    events = inputs["events"]
    # watermark 'watermark': column=ts, delay=5 seconds
    watermark = events.withWatermark("ts", "5 seconds")
    # window_aggregate 'per_window': key=key, window=tumbling 10 seconds, column=ts, aggregates=count=count(*),
    # sum=sum(value), max=max(value)
    per_window = watermark.groupBy("key", F.window("ts", "10 seconds")).agg(
        F.count("*").alias("count"),
        F.sum("value").alias("sum"),
        F.max("value").alias("max"),
    )
    per_window = per_window.select(
        "key",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "count",
        "sum",
        "max",
    )
    # sink 'output': the query's output, in append mode
    return per_window
"""

REFUSED = {
    "operator-state": "step 'writer' (buffered_writer): it runs an operator of your own, which only ministream's "
    "engine can run; Spark has none",
}
"""The lessons the compiler refuses, each with its CompileError's message (operator-state has no Spark twin)."""


def events(flow, script=()):
    return flow.source("events", ScriptedSource(list(script)))


def compile_one(build, output_mode="append", fields=FIELDS):
    """Compile a flow of one input whose steps ``build(stream)`` adds, ending in the sink ``output``."""
    flow = Dataflow("case")
    build(events(flow)).sink("output", CollectingSink())
    return compile_flow(flow, fields, output_mode=output_mode)


def refusal(build, output_mode="append", fields=FIELDS) -> str:
    with pytest.raises(CompileError) as caught:
        compile_one(build, output_mode, fields)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_the_tumbling_window_twin_reads_one_statement_per_step():
    """The compiled twin of tumbling-window is one commented statement per step, named after the step."""
    assert compiled_lesson_twin(get_lesson("tumbling-window")).source == TUMBLING_WINDOW


@pytest.mark.parametrize("lesson", all_lessons(), ids=lambda lesson: lesson.name)
def test_every_lesson_compiles_but_process_functions_until_the_adapter(lesson):
    """Every lesson compiles, keyed process functions included (through spark/processor_adapter.py), but those
    of ``REFUSED``, each refused with its reason (a one-line CompileError naming the step and Spark's rule)."""
    if lesson.name in REFUSED:
        with pytest.raises(CompileError) as caught:
            compiled_lesson_twin(lesson)
        assert str(caught.value) == REFUSED[lesson.name]
        return
    compiled = compiled_lesson_twin(lesson)
    assert "def twin(inputs):" in compiled.source
    assert compiled.conf["spark.sql.streaming.multipleWatermarkPolicy"] == lesson.policy(lesson.resolve_params())
    compile(compiled.source, lesson.name, "exec")  # valid Python


def test_the_twin_command_prints_the_compiled_source(capsys):
    """``ministream twin LESSON`` prints the compiled source; ``--hand-written`` the lesson's own twin."""
    assert main(["twin", "tumbling-window"]) == 0
    assert capsys.readouterr().out == TUMBLING_WINDOW
    assert main(["twin", "tumbling-window", "--hand-written"]) == 0
    assert capsys.readouterr().out.startswith("def twin(inputs, params):")


def test_a_side_output_sink_is_named_in_the_header_not_compiled():
    """late-data's sink of late rows reads a side output, which Spark does not have: the header says so."""
    source = compiled_lesson_twin(get_lesson("late-data")).source
    assert "# The sink 'late' reads the side output 'late' of 'per_window': Spark has no side outputs" in source


def test_a_custom_aggregate_is_a_collected_list_folded_by_a_udf():
    """A Custom aggregate is kept as collect_list in Spark's state and folded by the aggregate's own functions."""
    spread = Custom(
        "value",
        lambda: None,
        lambda acc, v: (v, v) if acc is None else (min(acc[0], v), max(acc[1], v)),
        lambda acc: acc[1] - acc[0],
    )
    source = compile_one(lambda s: s.key_by("key").aggregate("spread", spread=spread), "update").source
    assert 'F.collect_list("value").alias("spread")' in source
    assert 'fold_values(steps["spread"].spec.aggregates["spread"], "DOUBLE")("spread").alias("spread")' in source


def test_map_output_is_inferred_from_a_sample_row_or_declared():
    """A map's output columns are inferred by calling it on a sample row; a null there needs a declaration."""
    inferred = compile_one(lambda s: s.map("double", lambda row: {"key": row["key"], "twice": 2 * row["value"]}))
    assert '{"key": "STRING", "twice": "DOUBLE"}' in inferred.source
    message = refusal(lambda s: s.map("maybe", lambda row: {"key": row["key"], "note": None}))
    assert message.startswith("step 'maybe' (map): a Python UDF must declare the type of each column")
    assert "output=" in message
    declared = compile_one(
        lambda s: s.map(
            "maybe", lambda row: {"key": row["key"], "note": None}, output={"key": "STRING", "note": "STRING"}
        )
    )
    assert '{"key": "STRING", "note": "STRING"}' in declared.source


def test_a_filter_passes_only_the_columns_it_reads_to_its_udf():
    """A filter that names its columns gives its UDF only those, so Spark can push it below the watermark."""
    source = compile_one(
        lambda s: s.with_watermark("wm", "ts", "5 seconds").filter("big", lambda row: row["value"] > 1, columns="value")
    ).source
    assert 'wm.filter(row_predicate(steps["big"].spec.predicate, {"value": "DOUBLE"})(F.struct("value")))' in source


def test_join_condition_is_spark_sql_with_the_time_range():
    """A stream-stream join's keys and time range are one Spark SQL condition; a pushed-down one-sided
    condition is a filter before the join; a using join keeps each key once."""
    flow = Dataflow("join")
    left = flow.source("left", ScriptedSource([])).select("l", lk="key", lt="ts").with_watermark("lw", "lt", 0)
    right = flow.source("right", ScriptedSource([])).select("r", rk="key", rt="ts").with_watermark("rw", "rt", 0)
    left.key_by("lk").join(
        "join",
        right.key_by("rk"),
        how="left_outer",
        between=TimeRange("lt", "rt", lower=-1000, upper=5000, upper_inclusive=False),
        right_where=RowCondition(lambda row: row["rk"] != "x", ("rk",)),
    ).sink("output", CollectingSink())
    fields = {"left": [Field("key", str)], "right": [Field("key", str)]}
    source = compile_flow(flow, fields).source
    assert 'rw.filter(row_predicate(steps["join"].spec.right_where.fn, {"rk": "STRING"})(F.struct("rk")))' in source
    assert '"lk = rk AND rt >= lt - interval 1 second AND rt < lt + interval 5 seconds"' in source


# -- refusals: each names the step, the Spark rule and the rewrite -------------------------------------------------


def test_allowed_lateness_is_refused():
    """Spark emits a window once and drops later rows: allowed lateness (Flink's) has no Spark equivalent."""
    message = refusal(
        lambda s: (
            s.with_watermark("wm", "ts", 0)
            .key_by("key")
            .window("counts", Tumbling("10 seconds"), allowed_lateness="5 seconds", count=Count())
        )
    )
    assert message.startswith("step 'counts' (window_aggregate): Spark has no allowed lateness")
    assert "rewrite: drop allowed_lateness" in message


def test_a_sink_of_a_side_output_is_refused():
    """A query whose sink reads a side output cannot be compiled: Spark drops late rows and only counts them."""
    flow = Dataflow("late")
    windows = (
        events(flow)
        .with_watermark("wm", "ts", 0)
        .key_by("key")
        .window("counts", Tumbling("10 seconds"), late_rows="late", count=Count())
    )
    windows.side_output("late").sink("late", CollectingSink())
    with pytest.raises(CompileError, match="reads the side output 'late' of 'counts', and Spark has no side outputs"):
        compile_flow(flow, FIELDS, sink="late")


def test_a_processing_time_window_is_refused():
    """Spark has no processing-time window: a micro-batch's rows all arrive at the batch's time."""
    message = refusal(
        lambda s: s.key_by("key").window("counts", Tumbling("10 seconds"), processing_time=True, count=Count()),
        "update",
    )
    assert "Spark has no processing-time window" in message


def test_the_continuous_model_is_refused_for_stateful_steps():
    """Spark's continuous trigger runs map-like queries only: a stateful step in the continuous model is refused."""
    flow = Dataflow("continuous")
    events(flow).key_by("key").aggregate("n", n=Count()).sink("output", CollectingSink())
    with pytest.raises(CompileError, match="Continuous processing does not support Aggregate operations"):
        compile_flow(flow, FIELDS, output_mode="update", model="continuous")


def test_a_python_map_between_the_watermark_and_a_window_is_refused():
    """A UDF's output column has no watermark mark: a window after a map of the event time sees no watermark."""
    message = refusal(
        lambda s: (
            s.with_watermark("wm", "ts", "5 seconds")
            .map("copy", dict)
            .key_by("key")
            .window("counts", Tumbling("10 seconds"), count=Count())
        )
    )
    assert message.startswith("step 'counts' (window_aggregate): its event time 'ts' was rebuilt by the Python")
    assert "rewrite: put with_watermark after 'copy'" in message


def test_sorting_outside_complete_mode_is_refused():
    """Spark sorts a stream only after an aggregation in complete mode."""
    message = refusal(lambda s: s.sort("ordered", "key"))
    assert "'Sorting is not supported on streaming DataFrames/Datasets" in message
    sorted_totals = compile_one(
        lambda s: s.key_by("key").aggregate("n", n=Count()).sort("top", "n", descending=True), "complete"
    )
    assert 'top = n.orderBy(F.col("n").desc())' in sorted_totals.source


def test_a_python_condition_on_the_pair_in_an_outer_join_is_refused():
    """A Python condition on the pair of rows would sit in an outer join's ON clause, which Spark refuses for a
    UDF that reads both sides; a condition on the side the outer join keeps is a UDF column in the ON clause."""

    def flow_with(**conditions):
        flow = Dataflow("join")
        left = flow.source("left", ScriptedSource([])).select("l", lk="key", lt="ts").with_watermark("lw", "lt", 0)
        right = flow.source("right", ScriptedSource([])).select("r", rk="key", rt="ts").with_watermark("rw", "rt", 0)
        left.key_by("lk").join(
            "join", right.key_by("rk"), how="left_outer", between=TimeRange("lt", "rt", 0, 1000), **conditions
        ).sink("output", CollectingSink())
        return flow

    fields = {"left": [Field("key", str)], "right": [Field("key", str)]}
    with pytest.raises(CompileError, match="PYTHON_UDF_IN_ON_CLAUSE"):
        compile_flow(flow_with(where=lambda one, other: True), fields)
    source = compile_flow(flow_with(left_where=RowCondition(lambda row: True, ("lk",))), fields).source
    assert '& row_predicate(steps["join"].spec.left_where.fn, {"lk": "STRING"})(F.struct(F.col("lk"))),' in source


def test_an_aggregate_by_a_window_column_groups_by_the_window_struct():
    """The bounds of with_window taken out as columns carry no watermark mark in Spark: an aggregate keyed by
    both groups by the window struct the twin keeps beside them; keyed by one bound alone it is refused."""
    source = compile_one(
        lambda s: (
            s.with_watermark("wm", "ts", 0)
            .with_window("windowed", Tumbling("10 seconds"))
            .key_by(["window_start", "window_end"])
            .aggregate("counts", count=Count())
        )
    ).source
    assert 'counts = windowed.groupBy("_window_window_start_window_end").agg(F.count("*").alias("count"))' in source
    assert 'F.col("_window_window_start_window_end.end").alias("window_end")' in source
    message = refusal(
        lambda s: (
            s.with_watermark("wm", "ts", 0)
            .with_window("windowed", Tumbling("10 seconds"))
            .key_by("window_end")
            .aggregate("counts", count=Count())
        )
    )
    assert "is a bound of the window of step 'windowed'" in message
    assert "rewrite: window the aggregate itself" in message


def test_dedup_within_watermark_after_a_python_map_of_the_event_time_is_refused():
    """dropDuplicatesWithinWatermark forgets keys by event time: after a UDF rebuilt ts, Spark has no watermark."""
    message = refusal(
        lambda s: (
            s.with_watermark("wm", "ts", 0).map("copy", dict).drop_duplicates("unique", ["key"], within_watermark=True)
        )
    )
    assert message.startswith("step 'unique' (drop_duplicates_within): its event time 'ts' was rebuilt")


def test_an_operator_of_your_own_is_refused():
    """An OperatorSpec step runs ministream's own operator, which Spark does not have."""
    message = refusal(lambda s: s.key_by("key").operator_step("mine", "mine", lambda: None), "update")
    assert message == (
        "step 'mine' (mine): it runs an operator of your own, which only ministream's engine can run; Spark has none"
    )


def test_a_watermark_on_a_column_that_is_not_a_timestamp_is_refused():
    """Spark's withWatermark needs a TIMESTAMP column; a number of milliseconds must be declared as one."""
    message = refusal(lambda s: s.with_watermark("wm", "value", 0))
    assert "withWatermark needs a TIMESTAMP column and 'value' is DOUBLE" in message


def test_window_time_reads_the_window_struct_the_window_step_keeps():
    """with_window_time is Spark's window_time of the window struct, which the window step before it keeps
    beside its bounds; after a Python map (a UDF rebuilds the row and the struct is gone) it is refused."""

    def chained(stream, between=lambda s: s):
        hourly = stream.with_watermark("wm", "ts", 0).key_by("key").window("hourly", Tumbling("1 hour"), n=Count())
        return between(hourly).with_window_time("timed")

    source = compile_one(chained).source
    assert 'F.col("window").alias("_window_window_start_window_end"),' in source
    assert 'timed = hourly.withColumn("window_time", F.window_time("_window_window_start_window_end"))' in source
    message = refusal(lambda s: chained(s, lambda hourly: hourly.map("copy", dict)))
    assert message.startswith("step 'timed' (window_time): Spark's window_time reads the window struct")


def test_the_steps_after_a_process_function_read_its_declared_columns():
    """A process step's declared DDL gives the compiler its columns and types: a filter after it passes its
    UDF the declared type of ``count``, and a window over its ``event_time_column`` groups by it."""
    from ministream.tools.random_processors import KeyLatest

    source = compile_one(
        lambda s: (
            s.with_watermark("wm", "ts", 0)
            .key_by("key")
            .process("latest", KeyLatest(), time_mode="event_time", event_time_column="latest")
            .filter("busy", lambda row: row["count"] > 1, columns="count")
            .key_by("key")
            .window("per_window", Tumbling("5 seconds"), column="latest", n=Count())
        )
    ).source
    assert 'latest = processor_twin(wm, steps["latest"].spec, step_name="latest")' in source
    assert (
        'latest.filter(row_predicate(steps["busy"].spec.predicate, {"count": "BIGINT"})(F.struct("count")))' in source
    )
    assert 'busy.groupBy("key", F.window("latest", "5 seconds"))' in source


def test_an_event_time_column_not_declared_a_timestamp_is_refused():
    """Spark compares the ``eventTimeColumnName`` column with the watermark as a timestamp: a column declared
    otherwise is refused, naming its declared type."""
    from ministream.tools.random_processors import KeyLatest

    message = refusal(
        lambda s: (
            s.with_watermark("wm", "ts", 0)
            .key_by("key")
            .process("latest", KeyLatest(), time_mode="event_time", event_time_column="count")
        )
    )
    assert message.startswith("step 'latest' (process): its event_time_column 'count' is BIGINT in the declared")
    assert "rewrite: declare 'count' as TIMESTAMP" in message


def test_a_process_function_declared_by_a_struct_type_ends_the_compiled_query():
    """A schema given as a StructType goes to Spark unread: a step after the process step is refused, naming
    the DDL declaration that would let it compile; the process step itself still compiles."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    from ministream.tools.random_processors import KeyCounter

    struct = StructType([StructField("key", StringType()), StructField("count", LongType())])
    counted = lambda s: s.key_by("key").process("count", KeyCounter(), output_schema=struct)  # noqa: E731
    assert "processor_twin(" in compile_one(counted, "update").source
    message = refusal(lambda s: counted(s).filter("some", lambda row: row["count"] > 1), "update")
    assert message.startswith("step 'some' (filter): it reads the output of the process function 'count', whose")
    assert "rewrite: declare the columns of 'count' as DDL text (output_schema=\"key STRING, count BIGINT\")" in message


def test_a_declared_schema_that_is_not_ddl_is_refused():
    """A declared output schema whose column has no type cannot be read: refused, quoting it."""
    from ministream.tools.random_processors import KeyCounter

    message = refusal(
        lambda s: s.key_by("key").process("count", KeyCounter(), output_schema="key, count BIGINT"), "update"
    )
    assert message.startswith("step 'count' (process): its declared output schema cannot be read: 'key' in the schema")
