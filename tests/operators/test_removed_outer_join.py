"""Outer join elimination (core/outer_join_elimination.py, operators/removed_outer_join.py): an outer join under a
window of max and min over its preserved side's columns is run as Spark's optimizer runs it, without the join.
Each shape runs in the engine and, marked spark, against its PySpark twin. Found by `ministream fuzz --pipelines`
with a window after a join (tutorials/differential-testing.md)."""

import pytest

from ministream import CollectingSink, Count, Dataflow, Max, Min, ScriptedSource, Session, Sliding, Tumbling
from ministream.core.outer_join_elimination import kept_side, removed_watermarks, spark_join_type
from ministream.models.microbatch import run_microbatch
from ministream.time.ranges import TimeRange

S = 1000
WITHIN = TimeRange("l_time", "r_time", 0, 1 * S)  # a right row within 1 s after its left row


def row(prefix, key, t, value):
    return {f"{prefix}_key": key, f"{prefix}_time": t, f"{prefix}_value": value}


LEFT = [[row("l", "a", 10 * S, 1.0)], [row("l", "b", 20 * S, 3.0)], [row("l", "c", 30 * S, 4.0)], []]
RIGHT = [[row("r", "a", 10_500, 2.0)], [], [], [row("r", "c", 40 * S, 5.0)]]

SHAPES = {  # name: (join type, window, aggregates, the side the window reads, whether Spark removes the join)
    "left outer, tumbling max": ("left_outer", Tumbling(1 * S), ("max",), "l", True),
    "left outer, tumbling max and min": ("left_outer", Tumbling(1 * S), ("max", "min"), "l", True),
    "left outer, tumbling max and count": ("left_outer", Tumbling(1 * S), ("max", "count"), "l", False),
    "left outer, sliding max": ("left_outer", Sliding(2 * S, 1 * S), ("max",), "l", False),
    "left outer, sliding max, slide = size": ("left_outer", Sliding(2 * S, 2 * S), ("max",), "l", True),
    "left outer, tumbling max of the right side": ("left_outer", Tumbling(1 * S), ("max",), "r", False),
    "full outer, session max": ("full_outer", Session(1 * S), ("max",), "l", True),
    "right outer, tumbling max of the right side": ("right_outer", Tumbling(1 * S), ("max",), "r", True),
}
AGGREGATES = {"max": Max, "min": Min, "count": lambda column: Count()}


def shape_flow(shape, right_also_sinks=False, declared=("left", "right")):
    how, window, aggregates, side, _ = SHAPES[shape]
    flow = Dataflow("removed")
    streams = []
    for name, script, prefix in (("left", LEFT, "l"), ("right", RIGHT, "r")):
        columns = tuple(f"{prefix}_{column}" for column in ("key", "time", "value"))  # what the rule needs to know
        stream = flow.source(name, ScriptedSource(script, columns=columns if name in declared else None))
        stream = stream.with_watermark(f"{name}_wm", f"{prefix}_time", 0)
        streams.append(stream.key_by(f"{prefix}_key"))
        if name == "right" and right_also_sinks:
            stream.sink("right_rows", CollectingSink())
    joined = streams[0].join("join", streams[1], how=how, between=WITHIN)
    settings = {name: AGGREGATES[name](f"{side}_value") for name in aggregates}
    windows = joined.key_by(f"{side}_key").window("w", window, column=f"{side}_time", **settings)
    windows.sink("output", CollectingSink())
    return flow


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_spark_removes_the_join_of_these_shapes_only(shape):
    """kept_side says which side Spark keeps for the shapes it removes (as measured), and None for the others."""
    removed = SHAPES[shape][-1]
    flow = shape_flow(shape)
    assert kept_side(flow, flow.step("join")) == ({"l": 0, "r": 1}[SHAPES[shape][3]] if removed else None)


@pytest.mark.parametrize("policy", ["min", "max"])
def test_without_the_join_the_left_rows_reach_the_window_and_the_right_watermark_stays_at_zero(policy):
    """Under min the right input's watermark, which never moves, holds the query's at 0: no window closes.
    Under max the left input's alone moves it: each left row's window closes, in the batch after the one
    whose watermark passes its end, and the right rows are dropped at the join, counted."""
    run = run_microbatch(shape_flow("left outer, tumbling max"), watermark_policy=policy, trace=True)
    windows = [(r["l_key"], r["window_start"], r["max"]) for batch in run.output() for r in batch.rows]
    assert windows == ([] if policy == "min" else [("a", 10 * S, 1.0), ("b", 20 * S, 3.0)])
    assert [batch.watermark for batch in run.output()] == (
        [0, 0, 0, 0] if policy == "min" else [0, 10_000, 20_000, 30_000]
    )
    assert len(run.trace.of_kind("removed")) == 2
    assert "2 dropped (join removed by Spark (EliminateOuterJoin))" in run.accounting().format()


@pytest.mark.spark
@pytest.mark.parametrize("policy", ["min", "max"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_matches_spark(shape, policy):
    """The same rows as Spark's, batch for batch, whether Spark removes the join or keeps it."""
    from pyspark.sql import functions as F

    from ministream.core.compare import compare_batches
    from ministream.spark import run_query, scripted_stream, spark_session

    how, window, aggregates, side, _ = SHAPES[shape]
    sides = []
    for script, prefix in ((LEFT, "l"), (RIGHT, "r")):
        schema = f"{prefix}_key STRING, {prefix}_time TIMESTAMP, {prefix}_value DOUBLE"
        sides.append(scripted_stream(spark_session(), schema, script).withWatermark(f"{prefix}_time", "0 seconds"))
    condition = "l_key = r_key AND r_time BETWEEN l_time AND l_time + interval 1 second"
    joined = sides[0].join(sides[1], F.expr(condition), how)
    time = f"{side}_time"
    if window.kind == "session":
        column = F.session_window(time, f"{window.gap} milliseconds")
    elif window.kind == "sliding":
        column = F.window(time, f"{window.size} milliseconds", f"{window.slide} milliseconds")
    else:
        column = F.window(time, f"{window.size} milliseconds")
    results = {
        "max": F.max(f"{side}_value").alias("max"),
        "min": F.min(f"{side}_value").alias("min"),
        "count": F.count("*").alias("count"),
    }
    grouped = joined.groupBy(f"{side}_key", column.alias("w")).agg(*(results[name] for name in aggregates))
    twin = grouped.select(
        f"{side}_key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), *aggregates
    )
    ours = run_microbatch(shape_flow(shape), watermark_policy=policy).output()
    conf = {"spark.sql.streaming.multipleWatermarkPolicy": policy}
    result = compare_batches(ours, run_query(twin, "append", conf=conf))
    assert result.matches, result.table()


@pytest.mark.parametrize("right_also_sinks", [False, True])
def test_a_watermark_whose_rows_also_go_elsewhere_keeps_moving(right_also_sinks):
    """Only a with_watermark step whose rows lead nowhere but into the removed side stays at 0: when the right
    stream also goes to a sink of its own, its rows still run for that sink, and move the watermark."""
    flow = shape_flow("left outer, tumbling max", right_also_sinks)
    assert removed_watermarks(flow) == (set() if right_also_sinks else {"right_wm"})


@pytest.mark.parametrize("declared", [("left", "right"), ("left",), ("right",), ()])
def test_the_join_is_removed_when_the_plan_knows_either_sides_columns(declared):
    """To tell that the window reads only left columns, ministream needs one side's columns: the left's (all
    read columns among them) or the right's (none read). Knowing neither, it keeps the join."""
    flow = shape_flow("left outer, tumbling max", declared=declared)
    assert kept_side(flow, flow.step("join")) == (0 if declared else None)


@pytest.mark.parametrize(
    ("how", "window_side", "becomes"),
    [
        ("left_outer", "r", "inner"),
        ("left_outer", "l", "left_outer"),
        ("right_outer", "l", "inner"),
        ("full_outer", "l", "left_outer"),
        ("full_outer", "r", "right_outer"),
    ],
)
def test_a_window_on_the_padded_sides_time_makes_the_outer_join_inner(how, window_side, becomes):
    """Spark's window drops rows whose time is null, so under a window on the time of a side the outer join
    pads with nulls Spark runs an inner join (a full outer join becomes an outer join of the window's side);
    measured for tumbling, sliding and session windows (tutorials/spark-facts.md, "Where a condition runs")."""
    flow = Dataflow("f")
    left = flow.source("left", ScriptedSource([], columns=("l_key", "l_ts"))).with_watermark("lw", "l_ts", 0)
    right = flow.source("right", ScriptedSource([], columns=("r_key", "r_ts"))).with_watermark("rw", "r_ts", 0)
    joined = left.key_by("l_key").join(
        "join", right.key_by("r_key"), how=how, between=TimeRange("l_ts", "r_ts", 0, 1_000)
    )
    renamed = joined.select("renamed", k=f"{window_side}_key", t=f"{window_side}_ts")
    renamed.key_by("k").window("w", Tumbling(1_000), column="t", n=Count()).sink("out", CollectingSink())
    assert spark_join_type(flow, flow.step("join")) == becomes


@pytest.mark.parametrize(
    ("how", "key_side", "static_how", "becomes"),
    [
        ("left_outer", "r", "inner", "inner"),
        ("left_outer", "l", "inner", "left_outer"),
        ("left_outer", "r", "left_outer", "left_outer"),
        ("right_outer", "l", "inner", "inner"),
        ("full_outer", "r", "inner", "right_outer"),
    ],
)
def test_an_inner_join_with_a_static_table_on_the_padded_sides_key_makes_the_outer_join_inner(
    how, key_side, static_how, becomes
):
    """An inner join with a static table drops the rows whose key is null (a null key matches nothing), so
    Spark adds ``isnotnull`` of that key above the join, and on the padded side's key it runs an inner join
    (measured: tests/operators/test_pushdown.py, "left outer, r_value, then a static table on r_key"); a left
    outer join with the table keeps those rows, and changes nothing."""
    flow = Dataflow("f")
    left = flow.source("left", ScriptedSource([], columns=("l_key", "l_ts"))).with_watermark("lw", "l_ts", 0)
    right = flow.source("right", ScriptedSource([], columns=("r_key", "r_ts"))).with_watermark("rw", "r_ts", 0)
    joined = left.key_by("l_key").join(
        "join", right.key_by("r_key"), how=how, between=TimeRange("l_ts", "r_ts", 0, 1_000)
    )
    table = [{"ad": "a", "name": "first"}]
    joined.join_static("ads", table, on={f"{key_side}_key": "ad"}, how=static_how).sink("out", CollectingSink())
    assert spark_join_type(flow, flow.step("join")) == becomes
