"""Stream-stream join rules in the micro-batch model, one test per rule (Spark's StreamingSymmetricHashJoinExec;
the Spark runs that confirm them are in tests/lessons/test_stream_join.py and
tests/lessons/test_outer_join.py)."""

import pytest

from ministream import CollectingSink, Count, Dataflow, Max, ScriptedSource, Session, Tumbling, run_microbatch
from ministream.errors import PipelineError
from ministream.operators.stream_join import TimeRange, state_sizes_by_side

S = 1000  # one second, in ms
TEN_SECONDS = TimeRange("l_time", "r_time", 0, 10 * S)


def L(t, key="k"):
    """A left row at ``t`` ms."""
    return {"l_key": key, "l_time": t}


def R(t, key="k"):
    """A right row at ``t`` ms."""
    return {"r_key": key, "r_time": t}


def join_flow(
    left,
    right,
    how="inner",
    between=TEN_SECONDS,
    delay=0,
    watermarks=(True, True),
    key_time=None,
    then=None,
):
    """Left and right scripts joined on their key; both watermarked with ``delay`` unless told otherwise;
    ``then(joined)``: the steps after the join, if any."""
    flow = Dataflow("rules")
    sides = []
    for name, script, prefix, watermarked in (("left", left, "l", watermarks[0]), ("right", right, "r", watermarks[1])):
        stream = flow.source(name, ScriptedSource(script)).select(
            f"{name}_columns", **{f"{prefix}_key": f"{prefix}_key", f"{prefix}_time": f"{prefix}_time"}
        )
        if watermarked:
            stream = stream.with_watermark(f"{name}_watermark", f"{prefix}_time", delay)
        sides.append(stream.key_by(f"{prefix}_key"))
    joined = sides[0].join("join", sides[1], how=how, between=between, key_time=key_time)
    (joined if then is None else then(joined)).sink("output", CollectingSink())
    return flow


def batches(flow, **options):
    """The output as ``[(batch id, watermark, sorted rows as (left time, right time))]``."""
    out = []
    for batch in run_microbatch(flow, **options).output():
        rows = sorted(((r.get("l_time"), r.get("r_time")) for r in batch.rows), key=repr)
        out.append((batch.batch_id, batch.watermark, rows))
    return out


def test_left_rows_meet_right_state_and_right_rows_meet_this_batchs_left_rows():
    """A left and a right row of the same batch join once: right rows meet the left state, which already
    holds this batch's left rows."""
    flow = join_flow([[L(1 * S)]], [[R(2 * S)]])
    assert batches(flow)[0][2] == [(1000, 2000)]


def test_later_rows_join_the_other_sides_state():
    """Rows kept in state join rows of the other side that arrive batches later, in either direction."""
    flow = join_flow([[L(1 * S)], [], [L(20 * S)]], [[R(25 * S)], [R(5 * S)], []], delay=60 * S)
    assert [rows for _, _, rows in batches(flow)] == [[], [(1000, 5000)], [(20000, 25000)]]


def test_time_range_bounds_are_inclusive_unless_told():
    """A right row exactly ``upper`` after a left row matches; with ``upper_inclusive=False`` it does not."""
    rows = [[L(0 + S)]], [[R(11 * S), R(11 * S + 1)]]
    assert batches(join_flow(*rows))[0][2] == [(1000, 11000)]
    strict = TimeRange("l_time", "r_time", 0, 10 * S, upper_inclusive=False)
    assert batches(join_flow(*rows, between=strict))[0][2] == []


def test_late_rows_are_dropped_against_the_previous_batchs_watermark():
    """In batch k a row with event time <= WM_{k-1} is dropped before it can join, and the trace says so."""
    left = [[L(20 * S)], [], [L(5 * S)]]
    right = [[R(20 * S)], [R(10 * S)], [R(10 * S)]]  # WM_1 = 10 s: R(10 s) is late in batch 2, not in 1
    flow = join_flow(left, right, delay=10 * S, between=TimeRange("l_time", "r_time", -60 * S, 60 * S))
    run = run_microbatch(flow, trace=True)
    assert [len(batch.rows) for batch in run.output()] == [1, 1, 0]
    late = run.trace.of_kind("late")
    assert [(line.batch_id, line.row) for line in late] == [
        (2, {"l_key": "k", "l_time": 5000}),
        (2, {"r_key": "k", "r_time": 10000}),
    ]


def test_left_state_watermark_is_wm_minus_upper_minus_one_ms_for_an_inclusive_bound():
    """With ``r <= l + upper``, a left row leaves state when ``l <= WM - upper - 1 ms``: at WM = l + upper it
    stays (its null-padded row waits one more watermark step)."""
    left = [[L(10 * S), L(40 * S)], [], [L(41 * S)]]
    right = [[R(40 * S)], [], [R(41 * S)]]
    flow = join_flow(left, right, how="left_outer", delay=10 * S)
    assert batches(flow)[1] == (1, 30000, [(10000, None)])  # 10 s <= 30 s - 10 s - 1 ms: evicted
    flow = join_flow([[L(20 * S), L(40 * S)], [], [L(41 * S)]], right, how="left_outer", delay=10 * S)
    out = batches(flow)  # 20 s > 30 s - 10 s - 1 ms: kept at WM 30 s, evicted at WM 31 s
    assert [rows for _, _, rows in out] == [[(40000, 40000)], [], [(40000, 41000), (41000, 41000)], [(20000, None)]]
    assert [wm for _, wm, _ in out] == [0, 30000, 30000, 31000]


def test_strict_upper_bound_evicts_without_the_extra_millisecond():
    """With ``r < l + upper`` a left row leaves when ``l <= WM - upper`` (no -1 ms)."""
    strict = TimeRange("l_time", "r_time", 0, 10 * S, upper_inclusive=False)
    flow = join_flow([[L(20 * S), L(40 * S)]], [[R(40 * S)]], how="left_outer", delay=10 * S, between=strict)
    assert batches(flow)[1] == (1, 30000, [(20000, None)])


def test_right_state_watermark_comes_from_the_lower_bound():
    """With ``r >= l + lower`` a right row leaves when ``r <= WM + lower - 1 ms`` (right outer pads it then)."""
    flow = join_flow(
        [[L(40 * S)], [], [L(41 * S)]], [[R(30 * S), R(40 * S)], [], [R(41 * S)]], how="right_outer", delay=10 * S
    )
    out = batches(flow)
    assert [rows for _, _, rows in out] == [[(40000, 40000)], [], [(40000, 41000), (41000, 41000)], [(None, 30000)]]


def test_null_padded_rows_appear_only_when_their_row_is_evicted_unmatched():
    """An outer join emits an unmatched row with nulls at its eviction, never before; a matched row never."""
    flow = join_flow(
        [[L(1 * S, "a"), L(2 * S, "b")], [L(50 * S, "z")]],
        [[R(3 * S, "a")], [R(50 * S, "z")]],
        how="full_outer",
        delay=5 * S,
    )
    out = batches(flow)
    assert out == [(0, 0, [(1000, 3000)]), (1, 0, [(50000, 50000)]), (2, 45000, [(2000, None)])]


def test_left_semi_emits_a_left_row_once_at_its_first_match_and_does_not_keep_it():
    """Left semi: one output row per left row, however many right rows match, and only left columns; a left
    row that matches on arrival is not stored, one that matches later stays (marked matched) until evicted."""
    flow = join_flow([[L(1 * S)], [L(2 * S)]], [[R(3 * S), R(4 * S)], [R(5 * S)]], how="left_semi", delay=60 * S)
    run = run_microbatch(flow, trace=True)
    assert [batch.rows for batch in run.output()] == [
        [{"l_key": "k", "l_time": 1000}],
        [{"l_key": "k", "l_time": 2000}],
    ]
    assert state_sizes_by_side(run.trace, "join")["left"] == [1, 1]  # L(1 s) stored, L(2 s) not


# A range of 0..1 s, watermarks of 0 s; left a (4 s) in batch 0, right a (11 s) in batch 1, then new rows in
# batch 2, which runs with WM_{k-1} = 0 (nothing is late) and WM_k = 4 s: the right state watermark is 3.999 s
# (the lower bound, 0 s, is inclusive), the left one 2.999 s. Found by `ministream fuzz --pipelines` (a left
# semi join, then a session window; and a left semi join alone), and confirmed on Spark below.
ONE_SECOND = TimeRange("l_time", "r_time", 0, 1 * S)
FIRST_LEFT, FIRST_RIGHT = [[L(4 * S)], []], [[], [R(11 * S)]]
NEW_ROWS = {  # batch 2's new rows (left, right), and the left times a left semi join emits in batch 2
    "right row leaving, left row new": ([L(3_500)], [R(3_600)], []),
    "both leaving": ([L(2_900)], [R(3_000)], []),
    "right row staying, left row new": ([L(3_500)], [R(4_000)], [3_500, 4_000]),
}


def leaving_flow(case, how="left_semi"):
    left, right, _ = NEW_ROWS[case]
    return join_flow(FIRST_LEFT + [left], FIRST_RIGHT + [right], how=how, between=ONE_SECOND)


@pytest.mark.parametrize("case", sorted(NEW_ROWS))
def test_left_semi_a_right_row_leaving_in_its_batch_meets_only_earlier_left_rows(case):
    """Left semi: a new right row at or below the right state watermark of WM_k meets the left rows stored in
    earlier batches, not this batch's (Spark 4.3); one above it meets them all. An inner join's right rows
    meet this batch's left rows either way."""
    emitted = [left for left, _ in batches(leaving_flow(case))[2][2]]
    assert emitted == NEW_ROWS[case][2]
    left, right, _ = NEW_ROWS[case]
    inner = batches(leaving_flow(case, how="inner"))[2][2]
    assert (left[0]["l_time"], right[0]["r_time"]) in inner


def test_left_semi_a_right_row_leaving_in_its_batch_meets_a_left_row_of_an_earlier_batch():
    """The left row at 3.5 s stored in batch 0: the right row at 3.6 s, leaving in batch 2, matches it."""
    flow = join_flow([[L(4 * S), L(3_500)], [], []], FIRST_RIGHT + [[R(3_600)]], how="left_semi", between=ONE_SECOND)
    assert batches(flow)[2][2] == [(3500, None)]


# A left semi join within -5..1 s (watermarks of 0 s, max policy), then session windows of 5 s per key over its
# rows: the right row c (14.001 s) moves the watermark to 14.001 s, so the left state watermark is 13 s and the
# right one 9 s. Found by `ministream fuzz --pipelines` (seed 0, pipeline 15), confirmed on Spark below.
SEMI_RANGE = TimeRange("l_time", "r_time", -5 * S, 1 * S)
SESSION_ENDS = {7_000: [(7_000, 12_000)], 8_500: []}  # the left row's time: the sessions closed in batch 1


def semi_then_session_scripts(left_time):
    """Left b at ``left_time``; right c at 14.001 s and b at ``left_time``; all in batch 0."""
    return [[L(left_time, "b")]], [[R(14_001, "c"), R(left_time, "b")]]


def semi_then_session_flow(left_time):
    def sessions(joined):
        return joined.key_by("l_key").window("sessions", Session("5 seconds"), column="l_time", n=Count())

    return join_flow(*semi_then_session_scripts(left_time), how="left_semi", between=SEMI_RANGE, then=sessions)


@pytest.mark.parametrize("left_time", sorted(SESSION_ENDS))
def test_a_left_semi_joins_output_watermark_is_its_left_state_watermark(left_time):
    """A left semi join emits left rows only, so its output watermark is the left state watermark (13 s), not
    the lower right one (9 s): the session [7 s, 12 s) closes when the watermark reaches 14.001 s, the session
    [8.5 s, 13.5 s) does not."""
    output = run_microbatch(semi_then_session_flow(left_time), watermark_policy="max").output()
    assert [(row["window_start"], row["window_end"]) for row in output[1].rows] == SESSION_ENDS[left_time]


# Spark prunes a column that nothing at or after the join reads (core/pruning.py): an unbounded inner join read
# only by a window on the left time loses the right time below the join, and with it the right side's late-row
# filter. Found by a window-after-join fuzz run (seed 1), confirmed on Spark below.
PRUNED_LEFT = [[L(7 * S, "a")], [L(8 * S, "b")], [L(10 * S, "z")]]
PRUNED_RIGHT = [[R(7 * S, "a")], [], [R(5 * S, "b"), R(10 * S, "z")]]  # WM_1 = 7 s: b at 5 s is late in batch 2
PRUNED_WINDOWS = {  # the window's aggregates: the windows it emits, (start, end, count)
    "count": [(7_000, 8_000, 1), (8_000, 9_000, 1)],  # r_time is pruned: b at 5 s joins b at 8 s
    "count and max r_time": [(7_000, 8_000, 1)],  # r_time is read: b at 5 s is late
}


def pruned_flow(aggregates):
    def per_second(joined):
        settings = {"n": Count()} | ({"last": Max("r_time")} if "max" in aggregates else {})
        return joined.key_by([]).window("per_second", Tumbling("1 second"), column="l_time", **settings)

    return join_flow(PRUNED_LEFT, PRUNED_RIGHT, between=None, then=per_second)


@pytest.mark.parametrize("aggregates", sorted(PRUNED_WINDOWS))
def test_a_side_whose_event_time_nothing_reads_drops_no_late_row(aggregates):
    """The right row b at 5 s is at or before WM_1 = 7 s. When nothing after the join reads r_time, the join
    has no watermarked column on its right side (Spark prunes it) and b joins the left b at 8 s; when the
    window also takes max(r_time), the right side drops b as late."""
    run = run_microbatch(pruned_flow(aggregates), trace=True)
    windows = [(row["window_start"], row["window_end"], row["n"]) for batch in run.output() for row in batch.rows]
    assert windows == PRUNED_WINDOWS[aggregates]
    assert [line.row for line in run.trace.of_kind("late")] == ([R(5 * S, "b")] if "max" in aggregates else [])
    assert [line.row for line in run.trace.of_kind("not late")] == ([] if "max" in aggregates else [R(5 * S, "b")])


def test_state_grows_without_a_time_range_and_shrinks_with_one():
    """An inner join without a range never evicts; with one, each side's state shrinks as the watermark
    moves, and a no-data batch runs to evict after the last data."""
    left, right = [[L(1 * S)], [L(30 * S)]], [[R(2 * S)], [R(30 * S)]]
    unbounded = run_microbatch(join_flow(left, right, between=None, delay=5 * S), trace=True)
    assert state_sizes_by_side(unbounded.trace, "join") == {"left": [1, 2], "right": [1, 2]}
    bounded = run_microbatch(join_flow(left, right, delay=5 * S), trace=True)
    assert state_sizes_by_side(bounded.trace, "join") == {"left": [1, 2, 1], "right": [1, 2, 1]}


def test_an_idle_input_holds_the_watermark_at_zero_under_min_and_not_under_max():
    """With policy min an input with no row yet counts as 0; with max the other input alone moves it."""
    flow = join_flow([[L(30 * S)], [L(40 * S)], [L(60 * S)]], [[], [], []], how="left_outer", delay=5 * S)
    assert batches(flow) == [(0, 0, []), (1, 0, []), (2, 0, [])]
    assert batches(flow, watermark_policy="max") == [
        (0, 0, []),
        (1, 25000, []),
        (2, 35000, []),
        (3, 55000, [(30000, None), (40000, None)]),
    ]


def test_key_time_evicts_both_sides_when_the_key_time_is_at_or_before_the_watermark():
    """With an event-time column in the key (a window end), both sides leave when it is <= WM_k."""
    flow = join_flow(
        [[L(10 * S)], [L(30 * S)]],
        [[R(10 * S)], [R(30 * S)]],
        how="full_outer",
        between=None,
        delay=5 * S,
        key_time=("l_time", "r_time"),
    )
    run = run_microbatch(flow, trace=True)
    assert state_sizes_by_side(run.trace, "join") == {"left": [1, 2, 1], "right": [1, 2, 1]}


def test_outer_join_without_a_bound_on_the_padded_side_is_refused():
    """A left outer join needs a watermark on the right and an upper bound, as Spark requires."""
    with pytest.raises(PipelineError, match="watermark in the join keys, or a watermark on the nullable side"):
        join_flow([[]], [[]], how="left_outer", between=None)
    with pytest.raises(PipelineError, match="Stream-stream LeftOuter join"):
        join_flow([[]], [[]], how="left_outer", watermarks=(True, False))
    with pytest.raises(PipelineError, match="RightOuter"):
        join_flow([[]], [[]], how="right_outer", between=TimeRange("l_time", "r_time", None, 10))


@pytest.mark.parametrize(
    "how, spark_name", [("left_outer", "LeftOuter"), ("right_outer", "RightOuter"), ("full_outer", "FullOuter")]
)
@pytest.mark.parametrize(
    "watermarks, between",
    [((False, False), TimeRange("l_time", "r_time", 0, 10 * S)), ((True, True), None)],
    ids=["no watermarks", "no time range"],
)
def test_an_outer_join_without_watermarks_or_a_time_range_is_refused_with_the_reason(
    how, spark_name, watermarks, between
):
    """An outer join with no watermark on either side, or with watermarks but no time range, is refused: the
    message says what the join must know, what to give it, and quotes Spark's refusal."""
    padded, other = ("right", "left") if how == "right_outer" else ("left", "right")
    with pytest.raises(PipelineError) as refused:
        join_flow([[]], [[]], how=how, between=between, watermarks=watermarks)
    assert str(refused.value) == (
        f"join 'join': a {how} join must know when a {padded} row can no longer match, to emit it padded with "
        f"nulls and forget it. Give {other} a watermark and bound its time from the {padded} time "
        f"(between=TimeRange(...)), or put an event-time column in the key. (Spark: 'Stream-stream {spark_name} "
        "join between two streaming DataFrame/Datasets is not supported without a watermark in the join keys, or "
        "a watermark on the nullable side and an appropriate range condition'.)"
    )


def test_joins_run_only_in_append_mode_and_know_their_join_types():
    """Update mode and an unknown ``how`` are refused with the reason."""
    with pytest.raises(PipelineError, match="only in append output mode"):
        run_microbatch(join_flow([[]], [[]]), output_mode="update")
    with pytest.raises(PipelineError, match="how must be one of inner, left_outer"):
        join_flow([[]], [[]], how="cross")


def test_clashing_column_names_are_refused():
    """Two sides with a column of the same name must be renamed first, as in Spark."""
    flow = Dataflow("clash")
    a = flow.source("a", ScriptedSource([[{"k": 1, "t": 1}]])).key_by("k")
    b = flow.source("b", ScriptedSource([[{"k": 1, "t": 2}]])).key_by("k")
    a.join("join", b).sink("output", CollectingSink())
    with pytest.raises(PipelineError, match=r"both sides of the join have columns \['k', 't'\]"):
        run_microbatch(flow)


@pytest.mark.parametrize("parallelism,seed", [(1, 0), (2, 3), (4, 11)])
def test_output_does_not_depend_on_parallelism_or_seed(parallelism, seed):
    """The join's batches are the same at any parallelism and scheduler seed."""
    left = [[L(1 * S, "a"), L(2 * S, "b"), L(3 * S, "c")], [L(30 * S, "a")], [L(60 * S, "c")]]
    right = [[R(2 * S, "a"), R(9 * S, "c")], [R(31 * S, "b"), R(35 * S, "a")], [R(61 * S, "c")]]
    flow = join_flow(left, right, how="full_outer", delay=5 * S)
    assert batches(flow, parallelism=parallelism, seed=seed) == batches(flow)


WINDOW_LEFT = [[L(1 * S, "a"), L(12 * S, "b")], [L(25 * S, "a")], [L(3 * S, "a"), L(40 * S, "c")], [L(60 * S, "z")]]
WINDOW_RIGHT = [[R(5 * S, "a")], [R(15 * S, "b"), R(26 * S, "a")], [R(8 * S, "a"), R(41 * S, "d")], [R(61 * S, "z")]]


def window_join_flow(how):
    """Each side's rows put in 10-second tumbling windows; the join key is (key, window end)."""
    from ministream.time.windows import tumbling

    flow = Dataflow("window-join")
    sides = []
    for name, script, p in (("left", WINDOW_LEFT, "l"), ("right", WINDOW_RIGHT, "r")):
        stream = (
            flow.source(name, ScriptedSource(script))
            .with_watermark(f"{name}_watermark", f"{p}_time", 5 * S)
            .map(
                f"{name}_window",
                lambda row, p=p: {f"{p}_key": row[f"{p}_key"], f"{p}_end": tumbling(row[f"{p}_time"], 10 * S)[1]},
            )
            .select(f"{name}_columns", **{f"{p}_key": f"{p}_key", f"{p}_end": f"{p}_end"})
        )
        sides.append(stream.key_by([f"{p}_key", f"{p}_end"]))
    sides[0].join("join", sides[1], how=how, key_time=("l_end", "r_end")).sink("output", CollectingSink())
    return flow


@pytest.mark.spark
@pytest.mark.parametrize("how", ["left_outer"])
def test_a_window_in_the_join_key_matches_spark(how):
    """With a window in the key, rows are late when their window ended at or before WM_{k-1}, and both
    sides leave state (outer rows padded) when the window end is <= WM_k, as Spark does."""
    from pyspark.sql import functions as F

    from ministream.core.compare import compare_batches
    from ministream.spark import run_query, scripted_stream, spark_session

    spark = spark_session()

    def side(script, p):
        df = scripted_stream(spark, f"{p}_key STRING, {p}_time TIMESTAMP", script).withWatermark(
            f"{p}_time", "5 seconds"
        )
        return df.select(f"{p}_key", F.window(f"{p}_time", "10 seconds").alias(f"{p}_window"))

    joined = side(WINDOW_LEFT, "l").join(side(WINDOW_RIGHT, "r"), F.expr("l_key = r_key AND l_window = r_window"), how)
    twin = joined.select("l_key", F.col("l_window.end").alias("l_end"), "r_key", F.col("r_window.end").alias("r_end"))
    result = compare_batches(run_microbatch(window_join_flow(how)).output(), run_query(twin, "append"))
    assert result.matches, result.table()
    if how == "left_outer":
        assert [batch.rows for batch in run_microbatch(window_join_flow(how)).output()][-1] == [
            {"l_key": "c", "l_end": 50000, "r_key": None, "r_end": None}
        ]


def spark_side(script, prefix):
    """One side of the joins below as Spark reads it: the script as a stream of (key, time), watermarked
    0 seconds behind its time."""
    from ministream.spark import scripted_stream, spark_session

    df = scripted_stream(spark_session(), f"{prefix}_key STRING, {prefix}_time TIMESTAMP", script)
    return df.withWatermark(f"{prefix}_time", "0 seconds")


@pytest.mark.spark
@pytest.mark.parametrize("how", ["left_semi", "inner"])
@pytest.mark.parametrize("case", sorted(NEW_ROWS))
def test_a_right_row_leaving_in_its_batch_matches_spark(case, how):
    """The rows of test_left_semi_a_right_row_leaving_in_its_batch_meets_only_earlier_left_rows, in Spark: the
    same rows, batch for batch, in a left semi join and an inner join."""
    from pyspark.sql import functions as F

    from ministream.core.compare import compare_batches
    from ministream.spark import run_query

    left, right, _ = NEW_ROWS[case]
    condition = "l_key = r_key AND r_time BETWEEN l_time AND l_time + interval 1 second"
    joined = spark_side(FIRST_LEFT + [left], "l").join(spark_side(FIRST_RIGHT + [right], "r"), F.expr(condition), how)
    twin = joined.select("l_key", "l_time") if how == "left_semi" else joined
    result = compare_batches(run_microbatch(leaving_flow(case, how)).output(), run_query(twin, "append"))
    assert result.matches, result.table()


@pytest.mark.spark
@pytest.mark.parametrize("left_time", sorted(SESSION_ENDS))
def test_a_left_semi_joins_output_watermark_matches_spark(left_time):
    """The flow of test_a_left_semi_joins_output_watermark_is_its_left_state_watermark, in Spark (max policy):
    the same sessions, batch for batch."""
    from pyspark.sql import functions as F

    from ministream.core.compare import compare_batches
    from ministream.spark import run_query

    left, right = semi_then_session_scripts(left_time)
    condition = "l_key = r_key AND r_time BETWEEN l_time - interval 5 seconds AND l_time + interval 1 second"
    joined = spark_side(left, "l").join(spark_side(right, "r"), F.expr(condition), "left_semi")
    sessions = joined.groupBy("l_key", F.session_window("l_time", "5 seconds").alias("w")).agg(F.count("*").alias("n"))
    twin = sessions.select("l_key", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "n")
    ours = run_microbatch(semi_then_session_flow(left_time), watermark_policy="max").output()
    conf = {"spark.sql.streaming.multipleWatermarkPolicy": "max"}
    result = compare_batches(ours, run_query(twin, "append", conf=conf))
    assert result.matches, result.table()


@pytest.mark.spark
@pytest.mark.parametrize("aggregates", sorted(PRUNED_WINDOWS))
def test_a_pruned_event_time_matches_spark(aggregates):
    """The flows of test_a_side_whose_event_time_nothing_reads_drops_no_late_row, in Spark: the same windows,
    batch for batch, with and without max(r_time)."""
    from pyspark.sql import functions as F

    from ministream.core.compare import compare_batches
    from ministream.spark import run_query

    joined = spark_side(PRUNED_LEFT, "l").join(spark_side(PRUNED_RIGHT, "r"), F.expr("l_key = r_key"), "inner")
    results = [F.count("*").alias("n")] + ([F.max("r_time").alias("last")] if "max" in aggregates else [])
    windows = joined.groupBy(F.window("l_time", "1 second").alias("w")).agg(*results)
    twin = windows.select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "n", "*")
    twin = twin.drop("w")
    result = compare_batches(run_microbatch(pruned_flow(aggregates)).output(), run_query(twin, "append"))
    assert result.matches, result.table()


def test_a_side_whose_event_time_is_renamed_after_its_watermark_drops_late_rows_by_the_new_name():
    """A select that renames the watermarked column keeps its watermark (Spark: an alias keeps the column's
    watermark metadata): the join tests the new name, l_time, for late rows."""
    flow = Dataflow("renamed")
    left = (
        flow.source("left", ScriptedSource([[{"key": "k", "ts": 10 * S}], [], [{"key": "k", "ts": 6 * S}]]))
        .with_watermark("left_watermark", "ts", 0)
        .select("left_columns", l_key="key", l_time="ts")
    )
    right = flow.source("right", ScriptedSource([[R(10 * S)], [R(12 * S)], []])).with_watermark("rw", "r_time", 0)
    left.key_by("l_key").join("join", right.key_by("r_key"), between=TEN_SECONDS).sink("output", CollectingSink())
    run = run_microbatch(flow)
    # (10 s, 10 s), then (10 s, 12 s); in batch 2 the left row at 6 s is late: at or before 10 s, WM_1
    assert [len(batch.rows) for batch in run.output()] == [1, 1, 0]
    assert [(late.row, late.step) for late in run.late_rows()] == [({"l_key": "k", "l_time": 6 * S}, "join")]


def two_key_join(left, right, null_safe, how="inner", window=False):
    """Left rows ``{"a", "b", "t"}`` and right rows ``{"c", "d", "u"}`` joined on ``a, b = c, d`` (and on the
    5-second window of ``t`` and ``u`` when ``window``), both sides watermarked on their time."""
    flow = Dataflow("null-safe")
    sides = []
    for name, script, keys, time in (("left", left, ("a", "b"), "t"), ("right", right, ("c", "d"), "u")):
        stream = flow.source(name, ScriptedSource(script)).with_watermark(f"{name}_wm", time, 0)
        if window:
            stream = stream.with_window(f"{name}_window", Tumbling("5 seconds"), column=time, end=f"{name}_end")
            stream = stream.select(f"{name}_columns", **{c: c for c in (*keys, f"{name}_end")})
            keys = (*keys, f"{name}_end")
        sides.append(stream.key_by(list(keys)))
    joined = sides[0].join("join", sides[1], how=how, null_safe=null_safe)
    joined.sink("output", CollectingSink())
    return flow


def test_each_key_column_is_compared_with_equal_or_null_safe_equal():
    """``null_safe=["a"]``: ``a <=> c AND b = d``, as Spark's StreamingOuterJoinSuite writes its nullable-key
    joins: a null in ``a`` matches a null in ``c``, a null in ``b`` matches nothing."""
    left = [[{"a": None, "b": 1, "t": 1000}, {"a": 1, "b": None, "t": 1000}, {"a": 2, "b": 2, "t": 1000}]]
    right = [[{"c": None, "d": 1, "u": 2000}, {"c": 1, "d": None, "u": 2000}, {"c": 2, "d": 2, "u": 2000}]]
    flow = two_key_join(left, right, null_safe=["a"])
    assert flow.step("join").spec.null_safe == (True, False)
    assert flow.step("join").spec.describe()["key"] == "a <=> c AND b = d"
    rows = [row for batch in run_microbatch(flow).output() for row in batch.rows]
    assert sorted(((r["a"], r["b"]) for r in rows), key=repr) == [(2, 2), (None, 1)]
    everything = [
        row for batch in run_microbatch(two_key_join(left, right, null_safe=True)).output() for row in batch.rows
    ]
    assert len(everything) == 3


def test_an_event_time_key_compared_null_safe_carries_no_watermark():
    """Spark sees a join key's watermark only in a key compared with ``=`` (``isWatermarkInJoinKeys`` reads
    the keys after the optimizer rewrote each ``<=>`` into ``coalesce`` and ``isnull``): a left outer join on
    a window compared with ``<=>`` is refused, by Spark (tests/spark/test_compiler_refusals.py) and by the plan,
    which says why; with ``=`` on the window it runs."""
    with pytest.raises(PipelineError) as refused:
        two_key_join([[]], [[]], null_safe=True, how="left_outer", window=True)
    assert "(the key left_end carries event time, but null_safe compares it with <=>, which hides the watermark" in (
        str(refused.value)
    )
    assert "not supported without a watermark in the join keys" in str(refused.value)
    flow = two_key_join([[]], [[]], null_safe=["a", "b"], how="left_outer", window=True)
    assert flow.step("join").spec.key_time == ("left_end", "right_end")


def test_null_safe_names_key_columns_and_keeps_the_key_time_compared_with_equal():
    """``null_safe`` names key columns, of either side: another name is refused. An explicit ``key_time``
    compared with ``<=>`` is refused too, since it would carry no watermark in Spark."""
    with pytest.raises(PipelineError, match=r"null_safe names 'x', which is not a key column \(the keys are a, b"):
        two_key_join([[]], [[]], null_safe=["x"])
    flow = Dataflow("f")
    left = flow.source("l", ScriptedSource([])).with_watermark("lw", "t", 0).key_by(["a", "t"])
    right = flow.source("r", ScriptedSource([])).with_watermark("rw", "u", 0).key_by(["c", "u"])
    with pytest.raises(PipelineError, match="key_time t = u is compared with <=> \\(null_safe\\)"):
        left.join("join", right, key_time=("t", "u"), null_safe=True)


def null_key_join(how, left, right):
    """``l_key = r_key`` within 1 s, both sides watermarked 0 s behind; the output rows as (l_key, l_time, r_key,
    r_time), a padded side's as Nones."""
    flow = join_flow(left, right, how=how, between=TimeRange("l_time", "r_time", -S, S))
    columns = ("l_key", "l_time", "r_key", "r_time")
    rows = [tuple(row.get(c) for c in columns) for batch in run_microbatch(flow).output() for row in batch.rows]
    return sorted(rows, key=repr)


def test_a_null_key_meets_a_null_key_only_where_both_sides_keep_their_null_keys():
    """With ``=``, Spark drops a row whose key is null before the join on each side the join does not keep
    (its inferred ``isnotnull``); a row that reaches the join is stored, and Spark's state lookup takes a null
    key for equal to a null key. So in a full outer join (both sides kept) a null key meets a null key, measured
    on PySpark 4.3.0 (tests/spark/test_compiler.py); in a left outer join the right side's null row never
    arrives, and the left null row comes out padded."""
    left, right = [[L(1 * S, key=None)], [L(30 * S)]], [[R(1 * S, key=None)], [R(30 * S)]]
    joined, both = ("k", 30 * S, "k", 30 * S), (None, 1 * S, None, 1 * S)
    assert null_key_join("full_outer", left, right) == [joined, both]
    assert null_key_join("left_outer", left, right) == [joined, (None, 1 * S, None, None)]  # padded
    assert null_key_join("inner", left, right) == [joined]
