"""Random pipelines (ministream/tools/pipeline_generator.py): plans drawn by seed, valid for Spark by construction,
written as pipeline files that load back into lessons the engine runs."""

import random
from collections import Counter

import attrs
import pytest

from ministream.tools.fuzz import random_script
from ministream.tools.pipeline_generator import (
    AFTER_JOIN,
    STATEFUL_KINDS,
    RandomPlan,
    Stateful,
    Stateless,
    StaticTable,
    modes_for,
    pipeline_source,
    plan_lesson,
    random_plan,
    valid_chain,
)

PLANS = [random_plan(random.Random(f"pipelines:0:{index}")) for index in range(300)]


def test_a_seed_gives_the_same_plan_and_events():
    """Plan i of seed s is the same every time, and so is the pipeline file and each of its scripts."""
    again = random_plan(random.Random("pipelines:0:7"))
    assert again == PLANS[7] and pipeline_source(again) == pipeline_source(PLANS[7])
    lesson = plan_lesson(again, "p")
    assert random_script(lesson, random.Random("s"), {}) == random_script(lesson, random.Random("s"), {})
    assert len({pipeline_source(plan) for plan in PLANS[:50]}) > 40  # other seeds, other plans


@pytest.mark.parametrize("index", range(0, 300, 3))
def test_every_plan_is_valid_and_runs_in_the_engine(index):
    """Each plan's output mode is one Spark accepts for its stateful steps, append mode over windows has a
    watermark, and its pipeline file loads and runs on its random events without a refusal."""
    plan = PLANS[index]
    assert plan.output_mode in modes_for(plan.stateful)
    if plan.output_mode == "append" and any(step.kind in ("tumbling", "sliding", "session") for step in plan.stateful):
        assert plan.delays[0] is not None
    if any(step.kind == "join" for step in plan.stateful):
        assert plan.inputs == ("left", "right") and plan.output_mode == "append"
        assert valid_chain(plan.stateful, 2)
    if plan.stateful[-1].kind in AFTER_JOIN and plan.stateful[0].kind == "join":
        assert None not in plan.delays  # the window closes by the join's output watermark: both sides have one
    lesson = plan_lesson(plan, f"p{index}")
    assert lesson.doc == plan.describe() and lesson.mode({}) == plan.output_mode
    for number in range(2):
        script = random_script(lesson, random.Random(f"pipelines:0:{index}:{number}"), {})
        output = lesson.run(script).output()
        assert len(output) >= 1


def test_the_plans_cover_every_kind_mode_and_shape():
    """Over 300 seeds: every stateful kind, every output mode, one and two inputs, one and two stateful steps
    (dedup before an aggregate, a window, a session or a join; a window or a session after a join or a process
    step, a dedup or a join after a process step), every join type, and stateless steps."""
    kinds = Counter(plan.stateful[0].kind for plan in PLANS)
    assert set(kinds) == set(STATEFUL_KINDS)
    assert {plan.output_mode for plan in PLANS} == {"append", "update", "complete"}
    assert {len(plan.inputs) for plan in PLANS} == {1, 2} and {len(plan.stateful) for plan in PLANS} == {1, 2, 3}
    chains = {tuple(step.kind for step in plan.stateful) for plan in PLANS if len(plan.stateful) == 2}
    assert chains == {("dedup", kind) for kind in ("aggregate", "tumbling", "sliding", "session", "join")} | {
        ("join", kind) for kind in ("tumbling", "sliding", "session")
    } | {("process", kind) for kind in ("tumbling", "sliding", "session", "dedup", "join")}
    longer = {tuple(step.kind for step in plan.stateful) for plan in PLANS if len(plan.stateful) == 3}
    assert longer and {chain[:2] for chain in longer} == {("process", "join")}  # KeyLatest, a join, a window
    assert {step.how for plan in PLANS for step in plan.stateful if step.kind == "join"} == {
        "inner",
        "left_outer",
        "right_outer",
        "full_outer",
        "left_semi",
    }
    assert {step.kind for plan in PLANS for steps in plan.stateless for step in steps} == {"filter", "map", "select"}
    windows = [(plan.stateful[0].how, plan.stateful[1].side) for plan in PLANS if chains_after_join(plan)]
    assert {side for _, side in windows} == {"l", "r"}  # over either side's columns...
    assert ("left_semi", "r") not in windows  # ...but a left semi join emits left rows only


def chains_after_join(plan):
    return len(plan.stateful) == 2 and plan.stateful[0].kind == "join" and plan.stateful[1].kind in AFTER_JOIN


def test_a_plan_is_written_as_a_pipeline_file():
    """A dedup then a window, in append mode: the file has its FIELDS, mode, watermark and both steps."""
    plan = RandomPlan(
        stateful=(Stateful("dedup", dedup="key_ts"), Stateful("tumbling", size=5_000, aggregates=("count", "sum"))),
        delays=(2_000,),
    )
    assert pipeline_source(plan).splitlines()[-4:] == [
        "def pipeline(events):",
        '    events = events.with_watermark("events_watermark", "ts", "2 seconds")',
        '    events = events.drop_duplicates("dedup", ["key", "ts"])',
        '    return events.key_by("key").window("tumbling_1", Tumbling("5 seconds"), count=Count(), sum=Sum("value"))',
    ]


def test_a_window_after_a_join_is_written_over_the_left_rows_and_runs_in_the_engine():
    """A left outer join then a tumbling window per l_key: the window names l_ts, the join's left event time,
    and sums l_value. Run on three batches: a left row that finds no match is emitted padded with nulls once
    the watermark passes its range, and the window counts it with the matched pair when the join's output
    watermark closes it (the window step runs with the join's output watermark, not the global one)."""
    join = Stateful("join", how="left_outer", lower=0, upper=1_000)
    plan = RandomPlan(
        stateful=(join, Stateful("tumbling", size=5_000, aggregates=("count", "sum"))),
        inputs=("left", "right"),
        delays=(0, 0),
        stateless=((), ()),
    )
    assert plan.describe() == (
        "A random pipeline: watermark 0 seconds on left; watermark 0 seconds on right; left_outer join on key "
        "within [0, 1000] ms; tumbling 5 seconds windows per key of the joined rows (append mode, min watermark "
        "policy)."
    )
    c = {"ts": 30_000, "key": "c", "value": 1.0}  # c and b move the watermark past the window
    b = {"ts": 20_000, "key": "b", "value": 1.0}
    assert pipeline_source(plan).splitlines()[-2:] == [
        (
            '    left = left.key_by("l_key").join("join", right.key_by("r_key"), how="left_outer", '
            'between=TimeRange("l_ts", "r_ts", lower=0, upper=1000))'
        ),
        (
            '    return left.key_by("l_key").window("tumbling_1", Tumbling("5 seconds"), column="l_ts", '
            'count=Count(), sum=Sum("l_value"))'
        ),
    ]
    script = {
        "left": [[{"ts": 1_000, "key": "a", "value": 2.0}, {"ts": 2_000, "key": "a", "value": 3.0}], [], [c]],
        "right": [[{"ts": 1_500, "key": "a", "value": 1.0}], [{"ts": 4_000, "key": "b", "value": 1.0}], [b]],
    }
    rows = [row for batch in plan_lesson(plan, "joined").run(script).output() for row in batch.rows]
    # the pair (1 s, 1.5 s) and the left row at 2 s, padded with nulls, in the window [0 s, 5 s) of key a
    assert [(row["l_key"], row["window_start"], row["count"], row["sum"]) for row in rows] == [("a", 0, 2, 5.0)]


def test_a_window_over_the_right_rows_of_a_left_outer_join_is_written_and_runs_in_the_engine():
    """A left outer join then a global tumbling window of max(r_value) over r_ts (the side the join does not
    preserve: Spark turns the join into an inner one, and keeps it): the left row that finds no match is
    padded with a null r_ts, and falls in no window."""
    join = Stateful("join", how="left_outer", lower=0, upper=1_000)
    window = Stateful("tumbling", keyed=False, size=5_000, aggregates=("max",), side="r")
    plan = RandomPlan(stateful=(join, window), inputs=("left", "right"), delays=(0, 0), stateless=((), ()))
    assert valid_chain(plan.stateful, 2) and not valid_chain((attrs.evolve(join, how="left_semi"), window), 2)
    assert "tumbling 5 seconds windows of the joined rows (right columns)" in plan.describe()
    c = {"ts": 30_000, "key": "c", "value": 1.0}  # moves the watermark past the window, on both sides
    assert pipeline_source(plan).splitlines()[-1] == (
        '    return left.key_by([]).window("tumbling_1", Tumbling("5 seconds"), column="r_ts", max=Max("r_value"))'
    )
    script = {
        "left": [[{"ts": 1_000, "key": "a", "value": 2.0}, {"ts": 2_000, "key": "b", "value": 3.0}], [], [c]],
        "right": [[{"ts": 1_500, "key": "a", "value": 4.0}], [], [c]],
    }
    rows = [row for batch in plan_lesson(plan, "right_rows").run(script).output() for row in batch.rows]
    assert [(row["window_start"], row["max"]) for row in rows] == [(0, 4.0)]


def test_process_steps_are_drawn_with_every_processor_and_a_watermark_for_event_time():
    """Over 300 seeds, process steps are drawn with each processor of tools/random_processors.py, in append or
    update mode; the quiet-key counter (event-time timers) and KeyLatest (an output event time) always have a
    watermark; a window or a deduplication after KeyLatest runs in append mode (Spark chains stateful steps in
    append mode only), a KeyLatest before a join runs on either side, and a filter on the count may follow a
    process step alone."""
    steps = [(plan, plan.stateful[0]) for plan in PLANS if plan.stateful[0].kind == "process"]
    assert {step.processor for _, step in steps} == {"counter", "quiet", "latest"}
    assert {plan.output_mode for plan, _ in steps} == {"append", "update"}
    side = {"l": 0, "r": 1}  # a process step before a join runs on one side: that side's watermark
    assert all(
        plan.delays[side[step.side]] is not None for plan, step in steps if step.processor in ("quiet", "latest")
    )
    assert {step.side for plan, step in steps if len(plan.inputs) == 2} == {"l", "r"}
    chained = [plan for plan, _ in steps if len(plan.stateful) == 2]
    assert chained and {plan.output_mode for plan in chained} == {"append"}
    assert all(plan.stateful[0].processor == "latest" for plan in chained)
    assert {plan.stateful[1].kind for plan in chained} == {"tumbling", "sliding", "session", "dedup", "join"}
    assert {plan.stateful[1].dedup for plan in chained if plan.stateful[1].kind == "dedup"} <= {"key", "row", "within"}
    assert any(plan.after_keyed and plan.after_keyed[0].column == "count" for plan, _ in steps)


def test_a_deduplication_within_the_watermark_after_key_latest_reads_its_output_event_time():
    """A deduplication by key within the watermark after KeyLatest keeps a key's row until the watermark
    passes its ``latest`` by the delay: a's second row (batch 1) is a duplicate, and its third (batch 4) is
    not, as the watermark of 15 s (batch 3, after b at 20 s) dropped a's row of 1 s."""
    plan = RandomPlan(
        stateful=(Stateful("process", processor="latest"), Stateful("dedup", dedup="within")), delays=(5_000,)
    )
    assert pipeline_source(plan).splitlines()[-1] == (
        '    return events.drop_duplicates("dedup_1", "key", within_watermark=True)'
    )
    script = [[{"ts": ts, "key": key, "value": 1.0}] for ts, key in ((1_000, "a"), (2_000, "a"), (20_000, "b"))]
    script += [[], [{"ts": 21_000, "key": "a", "value": 1.0}]]
    rows = [
        [(row["key"], row["count"], row["latest"]) for row in batch.rows]
        for batch in plan_lesson(plan, "d").run(script).output()
    ]
    assert rows == [[("a", 1, 1_000)], [], [("b", 1, 20_000)], [], [("a", 3, 21_000)], []]


def test_a_window_after_key_latest_reads_its_output_event_time():
    """A window after a KeyLatest step names ``latest`` as its event-time column, and runs in the engine: the
    window of 0 s holds the two batches of key a (one row per key and batch that has rows), emitted once the
    watermark passes 5 s."""
    plan = RandomPlan(
        stateful=(Stateful("process", processor="latest"), Stateful("tumbling", size=5_000, aggregates=("count",))),
        delays=(0,),
    )
    source = pipeline_source(plan)
    assert "from ministream.tools.random_processors import KeyCounter, KeyLatest, QuietKeyCounter" in source
    assert source.splitlines()[-2:] == [
        (
            '    events = events.key_by("key").process("process", KeyLatest(), time_mode="event_time", '
            'event_time_column="latest")'
        ),
        '    return events.key_by("key").window("tumbling_1", Tumbling("5 seconds"), column="latest", count=Count())',
    ]
    script = [
        [{"ts": 1_000, "key": "a", "value": 1.0}],
        [{"ts": 2_000, "key": "a", "value": 2.0}],
        [{"ts": 9_000, "key": "b", "value": 1.0}],
    ]
    rows = [batch.rows for batch in plan_lesson(plan, "latest").run(script).output()]
    assert rows == [[], [], [], [{"key": "a", "window_start": 0, "window_end": 5_000, "count": 2}]]


def test_a_quiet_key_counter_plan_is_written_and_runs_in_the_engine():
    """A process step is written as key_by(...).process(...) with the processor imported from the package, and
    the quiet-key counter emits each key's count once the watermark passes its latest row + the gap (batch k
    runs under the watermark of batch k-1)."""
    plan = RandomPlan(stateful=(Stateful("process", size=2_000, processor="quiet"),), delays=(0,))
    source = pipeline_source(plan)
    assert "from ministream.tools.random_processors import KeyCounter, KeyLatest, QuietKeyCounter" in source
    assert source.splitlines()[-1] == (
        '    return events.key_by("key").process("process", QuietKeyCounter(2000), time_mode="event_time")'
    )
    script = [
        [{"ts": 1_000, "key": "a", "value": 1.0}, {"ts": 2_000, "key": "a", "value": 2.0}],
        [{"ts": 3_000, "key": "b", "value": 1.0}],
        [{"ts": 10_000, "key": "b", "value": 1.0}],
    ]
    rows = [batch.rows for batch in plan_lesson(plan, "quiet").run(script).output()]
    # a's timer (4 s) fires in the no-data batch 3, under the watermark 10 s; b's (12 s) never does
    assert rows == [[], [], [], [{"key": "a", "count": 2, "last": 2_000}]]


def test_some_plans_join_a_static_table_and_filter_after_it():
    """About a quarter of the plans join a static table, inner or left outer, on one input's key or on either
    side's key after a join (the left's only after a left semi join), the table naming its key as the stream
    does or its own way, then filter on a stream column, the table's key or the region."""
    statics = [plan for plan in PLANS if plan.static is not None]
    assert 50 <= len(statics) <= 100
    assert {plan.static.how for plan in statics} == {"inner", "left_outer"}
    assert {plan.static.column for plan in statics} == {"key", "l_key", "r_key"}
    assert {plan.static.table_key == plan.static.column for plan in statics} == {True, False}
    assert {step.column for plan in statics for step in plan.static.filters} >= {
        "value",
        "key",
        "t_key",
        "region",
        "l_value",
        "r_value",
        "l_key",
    }
    semi = [plan for plan in statics if plan.stateful[0].kind == "join" and plan.stateful[0].how == "left_semi"]
    assert semi and all(plan.static.column == "l_key" for plan in semi)


def test_a_static_table_is_written_before_the_stateful_steps_and_runs_in_the_engine():
    """One input: the join with the static table and its filters come after the watermark and before the
    aggregation; the rows without a key in the table are dropped (inner), and the filter on the region drops
    the keys of the north."""
    plan = RandomPlan(
        stateful=(Stateful("aggregate", aggregates=("count",)),),
        output_mode="update",
        static=StaticTable("inner", "key", "t_key", ("a", "b"), (Stateless("filter", 0, "region"),)),
    )
    static_line = (
        "    events = events.join_static(\"regions\", [{'t_key': 'a', 'region': 'north'}, {'t_key': 'b', 'region': "
        '\'south\'}], on={"key": "t_key"}, how="inner").filter("enriched_filter_0", lambda row: row["region"] '
        '!= "north", columns=["region"])'
    )
    assert pipeline_source(plan).splitlines()[-3:] == [
        "def pipeline(events):",
        static_line,
        '    return events.key_by("key").aggregate("aggregate", count=Count())',
    ]
    script = [[{"ts": 1_000, "key": key, "value": 1.0} for key in "abc"]]
    assert plan_lesson(plan, "p").run(script).output()[0].rows == [{"key": "b", "count": 1}]
    assert "inner join with a static table of keys a, b on key = t_key; region != north" in plan.describe()


def test_a_static_table_may_join_one_side_before_the_join_or_change_between_batches():
    """Half the static tables of two-input plans join one side's rows before the stream-stream join (their
    filters then read that side's columns only), and some tables of every shape change once, from batch 1 or
    2 on, to other keys (maybe none)."""
    statics = [plan for plan in PLANS if plan.static is not None]
    before = [plan for plan in statics if plan.static.before_join]
    assert before and all(len(plan.inputs) == 2 for plan in before)
    assert {plan.static.column for plan in before} == {"l_key", "r_key"}
    for plan in before:
        side = plan.static.column[:2]
        assert all(step.column[:2] == side for step in plan.static.filters if step.column.endswith("_value"))
    assert any(len(plan.inputs) == 2 and not plan.static.before_join for plan in statics)
    changing = [plan for plan in statics if plan.static.changes]
    assert {len(plan.inputs) for plan in changing} == {1, 2}
    assert {batch_id for plan in changing for batch_id, _ in plan.static.changes} == {1, 2}
    assert () in {keys for plan in changing for _, keys in plan.static.changes}  # a table emptied


def test_a_static_table_before_the_join_is_written_on_its_side_and_runs_in_the_engine():
    """A table of key a joined to the right side before an inner join, from batch 1 on of key b: the right
    row of key a in batch 0 and the one of key b in batch 1 find the table, so each joins its left rows; the
    right row of key a in batch 1 no longer finds it and is dropped before the join, so the left row of key a
    in batch 1 meets only the right row of batch 0, kept in state. The joined rows carry the table's region."""
    join = Stateful("join", how="inner")
    static = StaticTable("inner", "r_key", "r_key", ("a",), before_join=True, changes=((1, ("b",)),))
    plan = RandomPlan(
        stateful=(join,), inputs=("left", "right"), delays=(None, None), stateless=((), ()), static=static
    )
    assert plan.describe() == (
        "A random pipeline: inner join with a static table of keys a on r_key before the join; the table has keys b "
        "from batch 1 on; inner join on key (append mode, min watermark policy)."
    )
    assert pipeline_source(plan).splitlines()[-2:] == [
        (
            "    right = right.join_static(\"regions\", [{'r_key': 'a', 'region': 'north'}], on={\"r_key\": \"r_key\"}, "
            "how=\"inner\", changes={1: [{'r_key': 'b', 'region': 'north'}]})"
        ),
        '    return left.key_by("l_key").join("join", right.key_by("r_key"), how="inner")',
    ]
    script = {
        "left": [[{"ts": 1_000, "key": "a", "value": 1.0}], [{"ts": 2_000, "key": k, "value": 2.0} for k in "ab"]],
        "right": [[{"ts": 1_000, "key": "a", "value": 5.0}], [{"ts": 2_000, "key": k, "value": 6.0} for k in "ab"]],
    }
    batches = [batch.rows for batch in plan_lesson(plan, "before").run(script).output()]
    pairs = [[(row["l_key"], row["l_ts"], row["r_ts"], row["region"]) for row in rows] for rows in batches]
    # batch 1: left a@2 meets right a@1 (kept in state from batch 0), left b@2 meets right b@2; right a@2 is dropped
    assert [sorted(rows) for rows in pairs] == [
        [("a", 1_000, 1_000, "north")],
        [("a", 2_000, 1_000, "north"), ("b", 2_000, 2_000, "north")],
    ]


def key_latest_before_a_join(side: str) -> RandomPlan:
    """KeyLatest on one side (``"l"`` or ``"r"``), then an inner join within a second, watermarks of 0 s."""
    join = Stateful("join", how="inner", lower=0, upper=1_000)
    process = Stateful("process", processor="latest", side=side)
    return RandomPlan(stateful=(process, join), inputs=("left", "right"), delays=(0, 0), stateless=((), ()))


def rows_of_key_a(rows: dict) -> dict:
    """A two-input script of key a's rows: ``{side: [[(ts, value), ...] per batch]}``."""
    return {
        side: [[{"ts": ts, "key": "a", "value": value} for ts, value in batch] for batch in batches]
        for side, batches in rows.items()
    }


def test_key_latest_before_a_join_is_written_on_the_left_side_and_runs_in_the_engine():
    """KeyLatest on the left side, then an inner join within a second: the left rows are the processor's (one
    per key and batch: the batch's latest time and value sum), renamed l_key, l_ts and l_value, and l_ts, its
    output event time, is the join's left event time. a's row of batch 0 (2 s, 1 + 2) meets the right row at
    2.5 s, not the one at 1.5 s (before it); a's row of batch 1 (9 s) meets the right row at 9 s."""
    plan = key_latest_before_a_join("l")
    assert pipeline_source(plan).splitlines()[-6:-3] == [
        '    left = left.with_watermark("left_watermark", "ts", "0 seconds")',
        (
            '    left = left.key_by("key").process("process", KeyLatest(), time_mode="event_time", '
            'event_time_column="latest")'
        ),
        '    left = left.select("left_columns", l_key="key", l_ts="latest", l_value="value")',
    ]
    rows = {
        "left": [[(1_000, 1.0), (2_000, 2.0)], [(9_000, 4.0)]],
        "right": [[(2_500, 5.0), (1_500, 6.0)], [(9_000, 7.0)]],
    }
    script = rows_of_key_a(rows)
    output = [batch.rows for batch in plan_lesson(plan, "latest_join").run(script).output()]
    pairs = [[(row["l_ts"], row["l_value"], row["r_ts"]) for row in batch] for batch in output]
    assert pairs == [[(2_000, 3.0, 2_500)], [(9_000, 4.0, 9_000)], []]


def test_key_latest_on_the_right_side_of_a_join_runs_in_the_engine():
    """KeyLatest on the right side, then an inner join within a second: the right rows are the processor's (one
    per key and batch: the batch's latest time and value sum), renamed r_key, r_ts and r_value, and r_ts, its
    output event time, is the join's right event time. The left row at 1.5 s meets a's right row of batch 0
    (2 s, 1 + 2), not the left row at 0.5 s (more than a second before it); the left row at 9 s meets a's
    right row of batch 1 (9.5 s)."""
    plan = key_latest_before_a_join("r")
    assert pipeline_source(plan).splitlines()[-4:-1] == [
        '    right = right.with_watermark("right_watermark", "ts", "0 seconds")',
        (
            '    right = right.key_by("key").process("process", KeyLatest(), time_mode="event_time", '
            'event_time_column="latest")'
        ),
        '    right = right.select("right_columns", r_key="key", r_ts="latest", r_value="value")',
    ]
    assert "process on right: rows per key so far and the batch's latest time, as r_key, r_ts and r_value" in (
        plan.describe()
    )
    rows = {
        "left": [[(500, 5.0), (1_500, 6.0)], [(9_000, 7.0)]],
        "right": [[(1_000, 1.0), (2_000, 2.0)], [(9_500, 4.0)]],
    }
    script = rows_of_key_a(rows)
    output = [batch.rows for batch in plan_lesson(plan, "latest_right").run(script).output()]
    pairs = [[(row["l_ts"], row["r_ts"], row["r_value"]) for row in batch] for batch in output]
    assert pairs == [[(1_500, 2_000, 3.0)], [(9_000, 9_500, 4.0)], []]


def test_second_outputs_are_drawn_in_a_mode_spark_accepts():
    """Over 300 seeds, plans draw a second output of every kind the generator has for it (an aggregation, a
    window of each kind, a deduplication), each in an output mode Spark accepts for it alone, a window in append
    mode and a deduplication within the watermark only under a watermark (the first input's); plans of two
    inputs too, over the left side's rows as the join reads them (deduplicated, when the join's sides are)."""
    seconds = [plan for plan in PLANS if plan.second_output is not None]
    assert {plan.second_output.kind for plan in seconds} == {"aggregate", "tumbling", "sliding", "session", "dedup"}
    assert {len(plan.inputs) for plan in seconds} == {1, 2}
    assert all(plan.output_mode in modes_for([plan.second_output]) for plan in seconds)
    windowed_in_append = [
        plan for plan in seconds if plan.output_mode == "append" and plan.second_output.kind != "dedup"
    ]
    assert windowed_in_append and all(plan.delays[0] is not None for plan in windowed_in_append)
    assert all(plan.delays[0] is not None for plan in seconds if plan.second_output.dedup == "within")
    joined = [plan for plan in seconds if len(plan.inputs) == 2]
    assert [plan for plan in joined if plan.stateful[0].kind == "dedup"]  # over the left side's deduplicated rows


JOIN_WITH_A_SECOND_OUTPUT = RandomPlan(
    stateful=(Stateful("join", how="inner", lower=-1_000, upper=1_000),),
    inputs=("left", "right"),
    delays=(0, 5_000),
    stateless=((), ()),
    output_mode="append",
    policy="min",
    second_output=Stateful("tumbling", size=5_000, aggregates=("count",)),
)
"""An inner join within a second, and a tumbling count of the left rows as a second output; the right side's
watermark is 5 s behind the left's."""


def test_a_second_output_of_a_join_plan_is_its_own_query_over_the_left_rows():
    """In a plan of two inputs, the second output reads the left side's rows as the join does (l_key, l_ts,
    l_value) and is a query of its own, under the left side's watermark alone: its window [0 s, 5 s) closes in
    the no-data batch 2, at the left watermark 9 s, where the join's query, under the lower of both watermarks
    (4.5 s: the right's delay is 5 s), would still wait."""
    plan = JOIN_WITH_A_SECOND_OUTPUT
    assert plan.describe().endswith(
        "; a second output of the left rows: tumbling 5 seconds windows per key (append mode, min watermark policy)."
    )
    assert (
        '    second = left.key_by("l_key").window("second_tumbling", Tumbling("5 seconds"), column="l_ts", '
        "count=Count())"
    ) in pipeline_source(plan).splitlines()
    script = rows_of_key_a(
        {"left": [[(1_000, 1.0), (2_000, 2.0)], [(9_000, 3.0)]], "right": [[(1_500, 1.0)], [(9_500, 2.0)]]}
    )
    run = plan_lesson(plan, "joined_two").run(script)
    joined = [[(row["l_ts"], row["r_ts"]) for row in batch.rows] for batch in run.output("output")]
    assert joined == [[(1_000, 1_500), (2_000, 1_500)], [(9_000, 9_500)], []]
    assert [batch.watermark for batch in run.output("output")] == [0, 0, 4_500]
    second = run.output("second")
    assert [batch.watermark for batch in second] == [0, 2_000, 9_000]
    assert [batch.rows for batch in second][2] == [{"l_key": "a", "window_start": 0, "window_end": 5_000, "count": 2}]


def test_a_second_output_is_a_second_sink_over_the_same_rows():
    """A tumbling count with a deduplication by key as its second output: the pipeline returns both, and each
    output runs as its own query in the engine. The count emits its window once the watermark passes it (the
    no-data batch 3, after 9 s); the deduplication emits each key's first row as it comes, and runs the same
    no-data batch, its watermark having moved too (a deduplication under a watermark is a stateful step, and
    its query runs a batch without data when the watermark moves, as Spark's deduplication asks for one)."""
    plan = RandomPlan(
        stateful=(Stateful("tumbling", size=5_000, aggregates=("count",)),),
        delays=(0,),
        second_output=Stateful("dedup", dedup="key"),
    )
    lines = pipeline_source(plan).splitlines()
    assert lines[-2:] == [
        '    second = events.drop_duplicates("second_dedup", "key")',
        (
            '    return {"output": events.key_by("key").window("tumbling", Tumbling("5 seconds"), count=Count()), '
            '"second": second}'
        ),
    ]
    assert plan.describe().endswith("; a second output: dedup by key (append mode).")
    script = [
        [{"ts": ts, "key": key, "value": 1.0} for ts, key in batch]
        for batch in ([(1_000, "a"), (2_000, "a")], [(3_000, "b")], [(9_000, "a")])
    ]
    run = plan_lesson(plan, "two").run(script)
    counts = [[(row["key"], row["count"]) for row in batch.rows] for batch in run.output("output")]
    firsts = [[(row["key"], row["ts"]) for row in batch.rows] for batch in run.output("second")]
    assert counts == [[], [], [], [("a", 2), ("b", 1)]]
    assert firsts == [[("a", 1_000)], [("b", 3_000)], [], []]
