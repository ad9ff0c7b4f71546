"""Compiled twins run in Spark (``spark/compiler``): for every lesson the compiler can express, ministream and
the twin compiled from the lesson's own pipeline agree batch for batch on the default script (one Spark run per
lesson), and the compiled twin gives the columns, of the same types, as the hand-written one; a few flows of
the steps no lesson uses (Python maps, filters and flat maps, unions, stream-static joins, a key from a
function, joins with conditions and USING keys, per-row session gaps, event times renamed after their watermark)
agree too."""

import attrs
import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum
from ministream.core.aggregates import Custom
from ministream.core.compare import compare_batches
from ministream.core.events import Field
from ministream.core.steps import RowCondition
from ministream.lessons import all_lessons, compare_lesson, get_lesson
from ministream.lessons.lesson import BASE_TIME, event
from ministream.models.microbatch import run_microbatch
from ministream.spark.compiler import CompileError, compile_flow, compiled_lesson_twin
from ministream.spark.compiler.schema import ddl, source_schema
from ministream.time.ranges import TimeRange
from ministream.tools.random_processors import KeyLatest
from tests.core.test_queries import shared_deduplication, two_sinks

pytestmark = pytest.mark.spark

REFUSED = {
    "operator-state": "step 'writer' (buffered_writer): it runs an operator of your own, which only ministream's "
    "engine can run; Spark has none",
}
"""The lessons the compiler refuses, each with the reason its CompileError gives (operator-state has no Spark
twin at all: Lesson.twin is None)."""

COMPILED = [lesson for lesson in all_lessons() if lesson.name not in REFUSED]


def test_the_refused_lessons_are_refused_with_their_reason():
    """A lesson whose pipeline Spark cannot run (an operator of your own) is refused by the compiler with a
    CompileError naming the step and Spark's rule; every other lesson compiles (the tests below)."""
    for name, reason in REFUSED.items():
        with pytest.raises(CompileError) as caught:
            compiled_lesson_twin(get_lesson(name))
        assert str(caught.value) == reason


def with_compiled_twin(lesson, params=None):
    """A copy of the lesson whose twin (and Spark settings) are the compiled ones."""
    compiled = compiled_lesson_twin(lesson, params)
    return attrs.evolve(lesson, twin=compiled.twin, spark_conf=compiled.conf), compiled


@pytest.mark.parametrize("lesson", COMPILED, ids=lambda lesson: lesson.name)
def test_the_compiled_twin_agrees_with_ministream(lesson):
    """ministream and the twin compiled from the lesson's pipeline give the same rows and watermarks, batch for
    batch (the hand-written twin agrees with ministream in the lesson's own test)."""
    copy, _ = with_compiled_twin(lesson)
    result = compare_lesson(copy)
    assert result.matches, result.table()
    if lesson.name != "processing-time":  # its alerts depend on the wall-clock gaps between Spark's batches
        assert result.rows_total > 0


def _frames(spark, lesson):
    from ministream.spark import scripted_stream

    return {name: scripted_stream(spark, lesson.spark_schema(), [[]]) for name in lesson.inputs}


@pytest.mark.parametrize("lesson", COMPILED, ids=lambda lesson: lesson.name)
def test_the_compiled_twin_has_the_hand_written_twins_columns(lesson, spark):
    """The compiled twin's output has the hand-written twin's columns with the same types (Spark's analysis
    only, no query run)."""
    params = lesson.resolve_params()
    hand = lesson.twin(_frames(spark, lesson), params)
    compiled = compiled_lesson_twin(lesson).twin(_frames(spark, lesson), params)

    def columns(df):
        return sorted((field.name, field.dataType.simpleString()) for field in df.schema.fields)

    assert columns(compiled) == columns(hand)


def test_per_row_session_gaps_are_a_udf_column():
    """session-window with a gap per key (Session(lambda row: ...)): the gap is a UDF giving Spark's gap text,
    null (the row dropped) for keys with none."""
    copy, compiled = with_compiled_twin(get_lesson("session-window"), {"gap_by": "key"})
    assert "session_gap(" in compiled.source
    result = compare_lesson(copy, params={"gap_by": "key"})
    assert result.matches, result.table()


def test_compare_compiled_runs_the_compiled_twin(capsys):
    """``ministream compare LESSON --compiled`` compares ministream with the compiled twin, exit 0 on a match."""
    from ministream.tools.cli import main

    assert main(["compare", "deduplication", "--compiled", "--param", "key=within"]) == 0
    out = capsys.readouterr().out
    assert "deduplication: ministream against the twin compiled from its pipeline, batch by batch" in out
    assert "deduplication: 6 of 6 batches match" in out


def run_both(flow, fields, output_mode="append", sink="output"):
    """ministream's batches and the compiled twin's, on the scripts of the flow's sources."""
    from ministream.spark import run_query, scripted_stream, spark_session

    compiled = compile_flow(flow, fields, output_mode=output_mode, sink=sink)
    spark = spark_session()
    frames = {}
    for step in flow.sources:
        frames[step.name] = scripted_stream(spark, ddl(source_schema(fields[step.name])), step.spec.source.batches)
    theirs = run_query(compiled.twin(frames, {}), output_mode, conf=compiled.conf)
    ours = run_microbatch(flow, output_mode=output_mode).output(sink)
    return compare_batches(ours, theirs), compiled


FIELDS = [Field("key", str), Field("value", float)]


def test_python_steps_unions_and_a_static_join_agree():
    """Python map, filter and flat_map as UDFs (a timestamp through them and back), a union, a stream-static
    left outer join and a running aggregate keyed by a function with a custom whole-row aggregate agree."""
    web = [[event(1, "a", 1), event(2, "b", 5)], [event(3, "c", 2)], [event(4, "a", 7)]]
    mobile = [[event(1, "b", 3)], [], [event(5, "a", 1), event(6, "b", 0)]]
    flow = Dataflow("python-steps")
    one = flow.source("web", ScriptedSource(web)).map(
        "doubled", lambda row: {"ts": row["ts"] + 1000, "key": row["key"], "value": 2 * row["value"]}
    )
    two = flow.source("mobile", ScriptedSource(mobile)).filter(
        "not_zero", lambda row: row["value"] != 0, columns="value"
    )
    both = one.union("both", two).flat_map(
        "split", lambda row: [{**row, "part": part} for part in range(int(row["value"]) % 3)]
    )
    named = both.join_static(
        "names", [{"key": "a", "name": "ann"}, {"key": "b", "name": "bob"}], on="key", how="left_outer"
    )
    spread = Custom(None, lambda: 0, lambda acc, row: acc + row["part"])
    named.key_by(lambda row: row["name"] or "nobody").aggregate(
        "per_name", rows=Count(), total=Sum("value"), parts=spread
    ).sink("output", CollectingSink())
    result, compiled = run_both(flow, {"web": FIELDS, "mobile": FIELDS}, "update")
    assert result.matches, result.table()
    assert "F.inline(flat_map_rows(" in compiled.source and ".unionByName(" in compiled.source


def test_a_using_outer_join_with_conditions_agrees():
    """A full outer USING join with a time range and a condition on each side (in the ON clause, as both sides
    are kept) agrees: the key appears once, from the side that has it."""
    left = [[{**event(1, "a"), "lv": 1}, {**event(2, "b"), "lv": 5}], [{**event(30, "c"), "lv": 2}], []]
    right = [[{**event(2, "a"), "rv": 3}], [{**event(3, "b"), "rv": 1}], [{**event(40, "d"), "rv": 9}]]
    flow = Dataflow("using-join")
    lefts = (
        flow.source("left", ScriptedSource(left))
        .select("l", key="key", lt="ts", lv="lv")
        .with_watermark("lw", "lt", "2 seconds")
    )
    rights = (
        flow.source("right", ScriptedSource(right))
        .select("r", key="key", rt="ts", rv="rv")
        .with_watermark("rw", "rt", "2 seconds")
    )
    lefts.key_by("key").join(
        "join",
        rights.key_by("key"),
        how="full_outer",
        between=TimeRange("lt", "rt", lower=0, upper=5000),
        left_where=RowCondition(lambda row: row["lv"] < 5, ("lv",)),
        right_where=RowCondition(lambda row: row["rv"] > 0, ("rv",)),
        using=True,
    ).sink("output", CollectingSink())
    fields = {"left": [*FIELDS, Field("lv", int)], "right": [*FIELDS, Field("rv", int)]}
    result, compiled = run_both(flow, fields)
    assert result.matches, result.table()
    assert 'F.coalesce("L.key", "R.key").alias("key")' in compiled.source


def key_latest(flow: Dataflow, source: str, script: list):
    """A source of ``script`` with a 2-second watermark, then ``KeyLatest`` per key in append mode, its output
    event time ``latest`` (the chain the tests of steps after a process function start from)."""
    return (
        flow.source(source, ScriptedSource(script))
        .with_watermark(f"{source}_watermark", "ts", "2 seconds")
        .key_by("key")
        .process("latest", KeyLatest(), time_mode="event_time", output_mode="append", event_time_column="latest")
    )


def test_steps_after_a_process_function_agree():
    """A process step's declared columns are known to the compiler: a filter on its count, then a window over
    its output event time (``event_time_column``, Spark's ``eventTimeColumnName``) in append mode, agree with
    ministream batch for batch (the steps after it run under the query's watermark, chained as in Spark)."""
    from ministream import Tumbling

    script = [
        [event(1, "a", 1), event(2, "a", 2), event(3, "b", 5)],
        [event(9, "b", 1), event(4, "a", 3)],
        [event(12, "a", 4)],
        [event(30, "c", 1)],
        [],
    ]
    flow = Dataflow("after-process")
    latest = key_latest(flow, "events", script)
    latest.filter("busy", lambda row: row["count"] > 1, columns="count").key_by("key").window(
        "per_window", Tumbling("5 seconds"), column="latest", batches=Count(), total=Sum("value")
    ).sink("output", CollectingSink())
    result, compiled = run_both(flow, {"events": FIELDS})
    assert result.matches, result.table()
    assert result.rows_matched == 3, result.table()
    assert 'busy.groupBy("key", F.window("latest", "5 seconds"))' in compiled.source


def test_a_process_function_emitting_rows_behind_the_watermark_fails_in_both():
    """A timer handler that emits the time it waited for, as the output event time: by then the watermark is
    past it, and Spark fails the query (EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED); ministream raises the
    same rule, naming the row (``operators/process.py``, rule 7)."""
    from ministream import Tumbling
    from ministream.errors import PipelineError
    from ministream.spark import SparkQueryError
    from ministream.tools.random_processors import QuietKeyCounter

    flow = Dataflow("quiet-then-window")
    flow.source("events", ScriptedSource([[event(1, "a")], [event(9, "a")], [], [event(20, "b")], []])).with_watermark(
        "wm", "ts", 0
    ).key_by("key").process("quiet", QuietKeyCounter(1000), time_mode="event_time", event_time_column="last").key_by(
        "key"
    ).window("per_window", Tumbling("5 seconds"), column="last", n=Count()).sink("output", CollectingSink())
    with pytest.raises(PipelineError, match=r"the processor returned \{'key': 'a', 'count': 2, 'last': \d+\}"):
        run_microbatch(flow, output_mode="append")
    with pytest.raises(SparkQueryError, match="EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED"):
        run_both(flow, {"events": FIELDS})


def test_each_sink_is_its_own_query_with_its_own_watermark():
    """Two sinks of one source are two Spark queries, each compiled alone: the windows of every row and the
    windows of b's rows under b's own watermark. Each agrees with ministream's sink batch for batch: the first
    query's windows come out as its watermark passes them, though b's stays at 2 s (ministream runs a flow of
    several queries one query at a time, ``core/queries.py``)."""
    script = [[event(1, "a"), event(2, "b")], [event(20, "a")], [event(40, "a")], []]
    flow = two_sinks(script)
    every, compiled = run_both(flow, {"events": FIELDS}, sink="output")
    assert every.matches, every.table()
    assert every.rows_matched == 3
    assert "The sink 'b_output' is another query, not compiled here." in compiled.source
    only_b, _ = run_both(flow, {"events": FIELDS}, sink="b_output")
    assert only_b.matches, only_b.table()
    assert only_b.rows_matched == 0 and len(only_b.batches) == 4


def test_two_sinks_after_one_deduplication_are_two_queries_each_with_its_state():
    """Two sinks after one deduplication: its windows, and its join with a right input whose watermark is 10 s
    behind. Spark runs each ``writeStream`` as a query with its own deduplication state and its own watermark,
    and so does ministream (``core/queries.py``): both queries agree batch for batch, the windows closing in
    batch 2 under the left watermark alone (in one query with the join's they would wait for ever)."""
    flow = shared_deduplication()
    fields = {"left": FIELDS, "right": FIELDS}
    windows, compiled = run_both(flow, fields, sink="output")
    assert windows.matches, windows.table()
    assert windows.rows_matched == 2 and "The sink 'joined' is another query, not compiled here." in compiled.source
    joined, _ = run_both(flow, fields, sink="joined")
    assert joined.matches, joined.table()
    assert joined.rows_matched == 1


def test_a_join_after_a_process_function_agrees():
    """A left outer join of a process step's rows, by their output event time (``event_time_column``), with
    another input within a second agrees batch for batch: the join keeps the process step's rows under the
    query's watermark, pads those no right row matched once the watermark passes them, as after any input."""
    from ministream import TimeRange

    left = [[event(1, "a"), event(2, "b")], [event(8, "a")], [event(20, "a")], [event(40, "b")], []]
    right = [[event(2, "a")], [event(9, "b"), event(8, "a")], [event(21, "a")], [], [event(41, "b")]]
    flow = Dataflow("join-after-process")
    latest = key_latest(flow, "left", left)
    rights = (
        flow.source("right", ScriptedSource(right))
        .select("r", r_key="key", r_ts="ts")
        .with_watermark("rw", "r_ts", "2 seconds")
    )
    latest.key_by("key").join(
        "joined", rights.key_by("r_key"), how="left_outer", between=TimeRange("latest", "r_ts", lower=-1000, upper=1000)
    ).sink("output", CollectingSink())
    result, compiled = run_both(flow, {"left": FIELDS, "right": FIELDS})
    assert result.matches, result.table()
    assert result.rows_matched == 5
    assert "latest.join(" in compiled.source


def test_event_times_renamed_after_their_watermarks_agree():
    """A ``select`` that renames a watermarked column keeps its watermark under the new name, as Spark's alias
    keeps the column's watermark metadata: a deduplication within the watermark of the renamed left side, then
    a full outer join of the two renamed sides (only possible when the join sees both renamed columns as event
    times, to evict its state), agree with Spark batch for batch, late rows dropped by the new names."""
    left = [
        [event(1, "a"), event(2, "b"), event(2, "a")],
        [event(9, "a"), event(1, "c"), event(10, "a")],
        [event(20, "b")],
        [event(40, "a"), event(41, "a"), event(3, "b")],
        [],
    ]
    right = [
        [event(2, "a")],
        [event(3, "b"), event(10, "a")],
        [event(2, "c"), event(21, "b")],
        [event(4, "a")],
        [event(41, "a")],
    ]
    flow = Dataflow("renamed-event-times")
    lefts = (
        flow.source("left", ScriptedSource(left))
        .with_watermark("lw", "ts", "2 seconds")
        .select("l", l_key="key", l_ts="ts", l_value="value")
        .drop_duplicates("once", "l_key", within_watermark=True)
    )
    rights = (
        flow.source("right", ScriptedSource(right))
        .with_watermark("rw", "ts", "2 seconds")
        .select("r", r_key="key", r_ts="ts")
    )
    lefts.key_by("l_key").join(
        "joined", rights.key_by("r_key"), how="full_outer", between=TimeRange("l_ts", "r_ts", lower=-1000, upper=1000)
    ).sink("output", CollectingSink())
    result, compiled = run_both(flow, {"left": FIELDS, "right": FIELDS})
    assert result.matches, result.table()
    assert result.rows_matched == 6, result.table()  # a's rows at 2, 9, 10 and 41 s are duplicates
    assert "dropDuplicatesWithinWatermark" in compiled.source
    late = run_microbatch(flow, output_mode="append").late_rows()  # in batch 3, behind WM_2 = 10:00:08
    assert sorted((row.step, row.row.get("l_ts", row.row.get("r_ts"))) for row in late) == [
        ("joined", event(4, "a")["ts"]),
        ("once", event(3, "b")["ts"]),
    ]


def null_safe_window_join(script_left, script_right, null_safe):
    """A left outer join on ``key`` and the 10-second window of each side's time (keyed by both its bounds,
    which the twin joins as the window struct), ``null_safe`` as given."""
    from ministream import Tumbling

    flow = Dataflow("null-safe-window-join")
    sides = []
    for name, script in (("left", script_left), ("right", script_right)):
        rows = flow.source(name, ScriptedSource(script)).select(f"{name}_columns", **{f"{name}_key": "key", name: "ts"})
        rows = rows.with_watermark(f"{name}_wm", name, 0).with_window(
            f"{name}_window", Tumbling("10 seconds"), column=name, start=f"{name}_start", end=f"{name}_end"
        )
        sides.append(rows.select(f"{name}_keys", **{c: c for c in (f"{name}_key", f"{name}_start", f"{name}_end")}))
    left, right = (
        side.key_by([f"{name}_key", f"{name}_start", f"{name}_end"]) for side, name in zip(sides, ("left", "right"))
    )
    left.join("join", right, how="left_outer", null_safe=null_safe).sink("output", CollectingSink())
    return flow


def test_a_null_safe_key_beside_a_window_compared_with_equal_agrees(spark):
    """``null_safe=["left_key"]``: ``left_key <=> right_key AND left_window = right_window``, as Spark's
    StreamingOuterJoinSuite writes its nullable-key joins: a null key meets a null key, and the window carries
    the watermark, so unmatched left rows come out padded as it passes. The compiled twin agrees batch for
    batch."""
    left = [[{**event(1, None)}, {**event(2, "a")}], [{**event(30, "b")}], [{**event(60, "c")}]]
    right = [[{**event(3, None)}], [{**event(31, "x")}], [{**event(61, "y")}]]
    flow = null_safe_window_join(left, right, ["left_key"])
    result, compiled = run_both(flow, {"left": FIELDS, "right": FIELDS})
    assert result.matches, result.table()
    assert "left_key <=> right_key AND" in compiled.source and "<=> right_window" not in compiled.source
    rows = [row for batch in run_microbatch(flow).output() for row in batch.rows]
    assert {(row["left_key"], row["right_key"]) for row in rows} == {(None, None), ("a", None), ("b", None)}


def test_a_window_compared_null_safe_is_refused_by_spark_and_the_plan(spark):
    """The same join with ``<=>`` on the window too: Spark's analyzer finds no watermark in the join keys (its
    ``<=>`` keys become ``coalesce`` and ``isnull`` expressions, no longer columns) and refuses the outer
    join; the plan refuses it first and says why."""
    from pyspark.sql import functions as F

    from ministream.errors import PipelineError
    from ministream.spark import SparkQueryError, run_query, scripted_stream

    with pytest.raises(PipelineError, match="null_safe compares it with <=>, which hides the watermark"):
        null_safe_window_join([[]], [[]], True)
    frames = []
    for name in ("left", "right"):
        rows = scripted_stream(spark, "ts TIMESTAMP, key STRING, value DOUBLE", [[event(1, "a")], [event(30, "b")]])
        rows = rows.select(F.col("key").alias(f"{name}_key"), F.col("ts").alias(name)).withWatermark(name, "0 seconds")
        frames.append(rows.select(f"{name}_key", F.window(name, "10 seconds").alias(f"{name}_window")))
    joined = frames[0].join(frames[1], F.expr("left_key <=> right_key AND left_window <=> right_window"), "left_outer")
    with pytest.raises(
        SparkQueryError, match="LeftOuter join between two streaming DataFrame/Datasets is not supported"
    ):
        run_query(joined, "append")


def null_key_outer_join(how: str, left: list, right: list, static_on_left_key: bool = False) -> Dataflow:
    """``l_key = r_key`` within 1 s, each side watermarked 0 s behind on its time; with ``static_on_left_key``,
    then an inner join with a static table on ``l_key``."""
    flow = Dataflow("null-keys")
    sides = []
    for name, script in (("left", left), ("right", right)):
        p = name[0]
        rows = flow.source(name, ScriptedSource(script)).select(
            f"{name}_columns", **{f"{p}_key": "key", f"{p}_ts": "ts"}
        )
        sides.append(rows.with_watermark(f"{name}_wm", f"{p}_ts", 0).key_by(f"{p}_key"))
    joined = sides[0].join("join", sides[1], how=how, between=TimeRange("l_ts", "r_ts", -1000, 1000))
    if static_on_left_key:
        joined = joined.join_static("regions", [{"t_key": "a", "region": "north"}], on={"l_key": "t_key"})
    joined.sink("output", CollectingSink())
    return flow


def test_null_keys_in_outer_joins_agree(spark):
    """Two things ``ministream fuzz --pipelines`` found once its scripts had null keys (seed 8): Spark's
    stream-stream join finds a key's rows in its state, where a null key equals a null key, so a full outer join
    (whose sides keep their null keys) joins two null keys even with ``=``; and a right outer join that a later
    static join on the left key makes inner gets ``isnotnull`` of the left key only, inferred before the join
    became inner, so the right row with a null key still moves the right watermark."""
    null_at_14 = [[], [{"ts": BASE_TIME + 14_000, "key": None, "value": 6.0}]]
    full = null_key_outer_join("full_outer", null_at_14, [null_at_14[1], []])
    result, _ = run_both(full, {"left": FIELDS, "right": FIELDS})
    assert result.matches, result.table()
    assert [len(batch.rows) for batch in run_microbatch(full).output()] == [0, 1, 0]  # one joined row, not two padded
    left = [[{"ts": BASE_TIME + 6_000, "key": "a", "value": 3.0}]]
    right = [[{"ts": BASE_TIME + 7_000, "key": None, "value": 4.0}]]
    eliminated = null_key_outer_join("right_outer", left, right, static_on_left_key=True)
    result, _ = run_both(eliminated, {"left": FIELDS, "right": FIELDS})
    assert result.matches, result.table()
    assert [batch.watermark for batch in run_microbatch(eliminated).output()] == [0, BASE_TIME + 6_000]
