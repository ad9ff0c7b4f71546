"""Where Spark's optimizer runs a condition, and so which rows move a watermark (``operators/pushdown.py``):
filters after a join move into the side the join type lets them, and a condition on one join key is copied
to the other side's key. Each case is a pipeline file as a data engineer writes it, run in ministream (the
watermark of batch 1 says which rows counted), and against its compiled twin in Spark."""

import json
from datetime import UTC, datetime

import pytest

from ministream.core.plan import Dataflow
from ministream.core.sources import ScriptedSource
from ministream.lessons import compare_lesson
from ministream.lessons.pipeline_file import pipeline_lesson
from ministream.operators.planner import optimizer_notes
from ministream.operators.pushdown import into_join_side, pushed_below_watermark
from ministream.time.ranges import TimeRange

HEAD = """
from ministream import Count, TimeRange, Tumbling
from ministream.core.steps import RowCondition

FIELDS = {"key": str, "value": float}
INPUTS = ("left", "right")
OUTPUT_MODE = "append"


def pipeline(left, right):
    left = left.select("left_columns", l_key="key", l_ts="ts", l_value="value")
    left = left.with_watermark("left_watermark", "l_ts", "0 seconds")
    right = right.select("right_columns", r_key="key", r_ts="ts", r_value="value")
    right = right.with_watermark("right_watermark", "r_ts", "0 seconds")
"""
BIG = 'lambda row: row["{0}"] is not None and row["{0}"] > 2, columns=("{0}",)'
NOT_B = 'lambda row: row["{0}"] != "b", columns=("{0}",)'


def pipeline_text(how: str, then: str = "joined", before: str = "", where: str = "") -> str:
    """Both sides watermarked 0 seconds behind, joined on their keys within 1 second; ``then`` the rest."""
    join = (
        f'    joined = left.key_by("l_key").join("join", right.key_by("r_key"), how="{how}", '
        f'between=TimeRange("l_ts", "r_ts", 0, 1000){where})\n'
    )
    return HEAD + before + join + f"    return {then}\n"


def after(condition: str, column: str) -> str:
    return f'joined.filter("f", {condition.format(column)})'


CASES = {  # name: (pipeline, events, the watermark of batch 1 in seconds after 10:00)
    # a filter after the join moves into a side the join type lets it (rule 3)...
    "inner, l_value": (pipeline_text("inner", after(BIG, "l_value")), "A", 10),
    "inner, r_value": (pipeline_text("inner", after(BIG, "r_value")), "A", 10.5),
    "left outer, l_value": (pipeline_text("left_outer", after(BIG, "l_value")), "A", 10),
    "right outer, r_value": (pipeline_text("right_outer", after(BIG, "r_value")), "A", 10.5),
    "left semi, l_value": (pipeline_text("left_semi", after(BIG, "l_value")), "A", 10),
    "inner, select then r_value": (
        pipeline_text("inner", 'joined.select("s", l_key="l_key", v="r_value").filter("f", ' + BIG.format("v") + ")"),
        "A",
        10.5,
    ),
    "inner, past a filter of the whole row": (
        pipeline_text("inner", 'joined.filter("any", lambda row: True).filter("f", ' + BIG.format("r_value") + ")"),
        "A",
        10.5,
    ),
    # ... and not into a side an outer join pads with nulls, nor when it reads both sides
    "left outer, r_value": (pipeline_text("left_outer", after(BIG, "r_value")), "A", 90),
    "right outer, l_value": (pipeline_text("right_outer", after(BIG, "l_value")), "A", 90),
    "full outer, l_value": (pipeline_text("full_outer", after(BIG, "l_value")), "A", 90),
    "inner, both sides": (
        pipeline_text(
            "inner",
            'joined.filter("f", lambda row: (row["l_value"] or 0) > (row["r_value"] or 0) - 10, '
            'columns=("l_value", "r_value"))',
        ),
        "A",
        90,
    ),
    # a condition on one key holds for the other side's key too (rule 4)
    "inner, l_key": (pipeline_text("inner", after(NOT_B, "l_key")), "B", 10.5),
    "left outer, l_key": (pipeline_text("left_outer", after(NOT_B, "l_key")), "B", 10.5),
    "left semi, l_key": (pipeline_text("left_semi", after(NOT_B, "l_key")), "B", 10.5),
    "right outer, r_key": (pipeline_text("right_outer", after(NOT_B, "r_key")), "A", 10),
    "right outer, l_key": (pipeline_text("right_outer", after(NOT_B, "l_key")), "A", 90),
    "inner, left_where on l_key": (
        pipeline_text(
            "inner", where=", left_where=RowCondition(" + NOT_B.format("l_key").replace(", columns=", ", ") + ")"
        ),
        "B",
        10.5,
    ),
    "left outer, left_where on l_key": (
        pipeline_text(
            "left_outer", where=", left_where=RowCondition(" + NOT_B.format("l_key").replace(", columns=", ", ") + ")"
        ),
        "A",
        10.5,
    ),
    "inner, a filter on l_key before the watermark": (
        pipeline_text("inner").replace(
            '    left = left.with_watermark("left_watermark"',
            '    left = left.filter("pre", '
            + NOT_B.format("l_key")
            + ')\n    left = left.with_watermark("left_watermark"',
        ),
        "B",
        10.5,
    ),
    "inner, a filter on l_key before a static table": (
        pipeline_text("inner").replace(
            '    left = left.with_watermark("left_watermark", "l_ts", "0 seconds")\n',
            '    left = left.with_watermark("left_watermark", "l_ts", "0 seconds")\n'
            '    left = left.filter("pre", ' + NOT_B.format("l_key") + ")"
            '.join_static("ads", [{"ad": ad} for ad in "abcdy"], on={"l_key": "ad"})\n',
        ),
        "B",
        10.5,
    ),
    # a window on the time of the side an outer join pads drops the padded rows: Spark runs an inner join
    # (a full outer join: an outer join of the other side), and the filters move as in that join
    "right outer, l_key, then a window on l_ts": (
        pipeline_text(
            "right_outer",
            after(NOT_B, "l_key") + '.key_by("l_key").window("w", Tumbling("1 second"), column="l_ts", n=Count())',
        ),
        "A",
        10,
    ),
    # and so does an inner join with a static table on the padded side's key (a null key matches nothing)
    "left outer, r_value, then a static table on r_key": (
        pipeline_text(
            "left_outer",
            'joined.join_static("ads", [{"ad": ad} for ad in "abcdy"], on={"r_key": "ad"}).filter("f", '
            + BIG.format("r_value")
            + ")",
        ),
        "A",
        10.5,
    ),
    "full outer, r_key, then a window on r_ts": (
        pipeline_text(
            "full_outer",
            after(NOT_B, "r_key") + '.key_by("r_key").window("w", Tumbling("1 second"), column="r_ts", n=Count())',
        ),
        "A",
        10,
    ),
}
"""Events A: left a@10 s and b@100 s, right a@10.5 s and b@90 s in batch 0; the b rows fail every condition
(value 0, key b). Events B: the same with the left b at 5 s, so that only the right b can hold the
watermark up. Then c at 50 s on both sides (late unless a b row was left out) and d at 95 s, and y at 200 s."""

EVENTS = {
    "A": [
        (0, 10, "left", "a", 5.0),
        (0, 100, "left", "b", 0.0),
        (0, 10.5, "right", "a", 5.0),
        (0, 90, "right", "b", 0.0),
    ],
    "B": [
        (0, 100, "left", "a", 5.0),
        (0, 5, "left", "b", 0.0),
        (0, 10.5, "right", "a", 5.0),
        (0, 90, "right", "b", 0.0),
    ],
}
LATER = [
    (1, 50, "left", "c", 5.0),
    (1, 50.5, "right", "c", 5.0),
    (1, 95, "left", "d", 5.0),
    (1, 95.5, "right", "d", 5.0),
]
LATER += [(2, 200, "left", "y", 5.0), (2, 200.5, "right", "y", 5.0)]
TEN_O_CLOCK = datetime(2024, 1, 1, 10, tzinfo=UTC).timestamp()


def case_lesson(name: str, tmp_path):
    """The case's pipeline file as a lesson, and its events read from a JSON Lines file."""
    text, events, _ = CASES[name]
    lesson = pipeline_lesson(text, "pushdown_case.py")
    path = tmp_path / "events.jsonl"
    with path.open("w") as out:
        for batch, second, stream, key, value in EVENTS[events] + LATER:
            ts = datetime.fromtimestamp(TEN_O_CLOCK + second, UTC).isoformat(timespec="milliseconds")
            row = {"batch": batch, "ts": ts.replace("+00:00", "Z"), "stream": stream, "key": key, "value": value}
            out.write(json.dumps(row) + "\n")
    return lesson, lesson.read_script(path)


@pytest.mark.parametrize("name", list(CASES))
def test_the_rows_a_moved_condition_drops_do_not_move_the_watermark(name, tmp_path):
    """The watermark of batch 1 is the smaller of the two sides' latest times in batch 0, counting only the
    rows that the conditions Spark moves below each side's watermark keep."""
    lesson, script = case_lesson(name, tmp_path)
    watermarks = [batch.watermark for batch in lesson.run(script).output()]
    assert watermarks[1] == TEN_O_CLOCK * 1000 + CASES[name][2] * 1000


@pytest.mark.spark
@pytest.mark.parametrize("name", list(CASES))
def test_a_moved_condition_matches_spark(name, tmp_path):
    """Spark 4.3 runs each case's compiled twin with the same watermarks and rows, batch for batch."""
    lesson, script = case_lesson(name, tmp_path)
    result = compare_lesson(lesson, script)
    assert result.matches, result.table()


def test_which_conditions_a_join_side_gets():
    """The conditions each side of an inner join gets: key IS NOT NULL, a filter after the join on its own
    value, and the other side's condition on its key, copied to its own key."""
    flow = Dataflow("f")
    left = flow.source("l", ScriptedSource([], columns=("l_key", "l_ts", "l_value")))
    right = flow.source("r", ScriptedSource([], columns=("r_key", "r_ts", "r_value")))
    joined = left.key_by("l_key").join("join", right.key_by("r_key"), how="inner")
    joined.filter("big", lambda row: row["r_value"] > 2, columns="r_value").filter(
        "not_b", lambda row: row["l_key"] != "b", columns="l_key"
    )
    sides = [into_join_side(flow, flow.step("join"), side) for side in (0, 1)]
    assert [(c.columns, c.origin) for c in sides[0]] == [(("l_key",), None), (("l_key",), "filter 'not_b'")]
    assert [(c.columns, c.origin) for c in sides[1]] == [
        (("r_key",), None),
        (("r_value",), "filter 'big'"),
        (("r_key",), "filter 'not_b', copied from l_key to r_key,"),
    ]
    row = {"r_key": "b", "r_ts": 1, "r_value": 5}
    assert [condition.predicate(row) for condition in sides[1]] == [True, True, False]


def test_a_key_compared_null_safe_gets_no_not_null_and_passes_no_condition_across():
    """With ``null_safe=["l_a"]`` (``l_a <=> r_a AND l_b = r_b``) a side gets ``IS NOT NULL`` of ``l_b`` only,
    and a condition on the other side's key is copied across ``=`` keys only: Spark infers from ``=``, not
    from ``<=>`` (``InferFiltersFromConstraints``)."""
    flow = Dataflow("f")
    left = flow.source("l", ScriptedSource([], columns=("l_a", "l_b", "l_ts")))
    right = flow.source("r", ScriptedSource([], columns=("r_a", "r_b", "r_ts")))
    joined = left.key_by(["l_a", "l_b"]).join("join", right.key_by(["r_a", "r_b"]), how="inner", null_safe=["l_a"])
    joined.filter("a_not_x", lambda row: row["r_a"] != "x", columns="r_a").filter(
        "b_not_y", lambda row: row["r_b"] != "y", columns="r_b"
    )
    left_side = into_join_side(flow, flow.step("join"), 0)
    assert [(c.columns, c.origin) for c in left_side] == [
        (("l_b",), None),
        (("l_b",), "filter 'b_not_y', copied from r_b to l_b,"),
    ]
    assert [condition.predicate({"l_a": None, "l_b": "y"}) for condition in left_side] == [True, False]


def test_a_join_made_inner_by_a_static_join_infers_the_conditions_of_its_written_type():
    """A right outer join, then an inner join with a static table on ``l_key``, runs as an inner join (the
    static join rejects a null ``l_key``), but Spark infers that after it has inferred the join's own
    conditions, as for a right outer join: ``l_key IS NOT NULL`` on the left, nothing on the right (measured on
    PySpark 4.3.0: the right side's plan has no filter, and a right row with a null key moves its watermark)."""
    flow = Dataflow("f")
    left = flow.source("l", ScriptedSource([], columns=("l_key", "l_ts"))).with_watermark("lw", "l_ts", 0)
    right = flow.source("r", ScriptedSource([], columns=("r_key", "r_ts"))).with_watermark("rw", "r_ts", 0)
    joined = left.key_by("l_key").join(
        "join", right.key_by("r_key"), how="right_outer", between=TimeRange("l_ts", "r_ts", 0, 1000)
    )
    joined.join_static("regions", [{"t_key": "a"}], on={"l_key": "t_key"})
    sides = [into_join_side(flow, flow.step("join"), side) for side in (0, 1)]
    assert {c.columns for c in sides[0]} == {("l_key",)} and sides[1] == []


def test_a_watermark_read_by_two_steps_keeps_every_row():
    """A filter after a join does not move below a watermark whose rows also go elsewhere."""
    flow = Dataflow("f")
    left = flow.source("l", ScriptedSource([])).with_watermark("lw", "l_ts", 0)
    right = flow.source("r", ScriptedSource([])).with_watermark("rw", "r_ts", 0)
    left.key_by("l_key").join("join", right.key_by("r_key"), how="inner").filter(
        "not_b", lambda row: row["r_key"] != "b", columns="r_key"
    )
    right.filter("other", lambda row: True)
    assert pushed_below_watermark(flow, flow.step("rw")) == []
    assert len(pushed_below_watermark(flow, flow.step("lw"))) == 2  # key IS NOT NULL, and r_key's copied


def test_a_watermark_says_which_moved_filters_run_below_it(tmp_path):
    """The planner's notes (on diagram labels, above `ministream compare`'s table) name each filter Spark
    runs below a watermark, a copied one with the keys it was copied between; not key IS NOT NULL."""
    lesson, script = case_lesson("inner, l_key", tmp_path)
    flow = lesson.pipeline(script, lesson.resolve_params())
    notes = {name: optimizer_notes(flow, flow.step(name)) for name in ("left_watermark", "right_watermark")}
    tail = "runs below it (Spark moves it there): only the rows it keeps move this watermark"
    assert notes == {
        "left_watermark": [f"filter 'f' {tail}"],
        "right_watermark": [f"filter 'f', copied from l_key to r_key, {tail}"],
    }


UNION = """
FIELDS = {"key": str, "value": float}
INPUTS = ("left", "right")
OUTPUT_MODE = "append"


def pipeline(left, right):
    left = left.with_watermark("left_watermark", "ts", "0 seconds")
    right = right.with_watermark("right_watermark", "ts", "0 seconds")
    both = left.union("both", right)
    return both.filter("f", lambda row: row["value"] > 2, columns=("value",))
"""
"""Both inputs watermarked on ``ts``, then a union and a filter on the value."""


def test_a_filter_after_a_union_runs_below_each_inputs_watermark(tmp_path):
    """Spark moves a filter after a union into each of its inputs, below their watermarks: with events A,
    the left b@100 s and the right b@90 s fail it, and the watermark of batch 1 is 10 s (left a), not 90 s."""
    lesson = pipeline_lesson(UNION, "union_case.py")
    script = case_lesson("inner, l_value", tmp_path)[1]
    watermarks = [batch.watermark for batch in lesson.run(script).output()]
    assert watermarks[1] == TEN_O_CLOCK * 1000 + 10_000


@pytest.mark.spark
def test_a_filter_after_a_union_matches_spark(tmp_path):
    """The union case in Spark 4.3: the same watermarks and rows, batch for batch."""
    lesson = pipeline_lesson(UNION, "union_case.py")
    result = compare_lesson(lesson, case_lesson("inner, l_value", tmp_path)[1])
    assert result.matches, result.table()


def keyed(step: str, then: str = 'lambda row: row["key"] != "b", columns=("key",)', mode: str = "append") -> str:
    """One input watermarked 0 seconds behind, ``step`` per key, then a filter ``then``."""
    return f'''
from ministream import Count, Session, Sliding, Tumbling

FIELDS = {{"key": str, "value": float}}
OUTPUT_MODE = "{mode}"


def pipeline(events):
    counts = events.with_watermark("wm", "ts", "0 seconds").key_by("key").{step}
    return counts.filter("f", {then})
'''


AGGREGATED = {  # name: (pipeline, the watermark of batch 1 in seconds after 10:00)
    "tumbling, key": (keyed('window("w", Tumbling("10 seconds"), n=Count())'), 5),
    "sliding, key": (keyed('window("w", Sliding("10 seconds", "5 seconds"), n=Count())'), 5),
    "session, key": (keyed('window("w", Session("5 seconds"), n=Count())'), 5),
    "running count, key": (keyed('aggregate("agg", n=Count())', mode="update"), 5),
    "tumbling, count": (
        keyed('window("w", Tumbling("10 seconds"), n=Count())', 'lambda row: row["n"] > 0, columns=("n",)'),
        90,
    ),
    "tumbling, window start": (
        keyed(
            'window("w", Tumbling("10 seconds"), n=Count())',
            'lambda row: row["window_start"] is not None, columns=("window_start",)',
        ),
        90,
    ),
    "window columns, then key": (
        """
from ministream import Count, Tumbling

FIELDS = {"key": str, "value": float}
OUTPUT_MODE = "append"


def pipeline(events):
    events = events.with_watermark("wm", "ts", "0 seconds").with_window("ww", Tumbling("10 seconds"))
    kept = events.filter("f", lambda row: row["key"] != "b", columns=("key",))
    return kept.key_by(["key", "window_start", "window_end"]).aggregate("agg", n=Count())
""",
        5,
    ),
}
"""A filter on the key after an aggregation runs below it and below the watermark, and so does one after the
window columns of ``with_window`` (Spark's ``select(window(...))``); one on what the aggregation computes (a
count, a window's bounds) stays after it."""

KEYED_EVENTS = [[(5, "a"), (90, "b")], [(15, "a"), (25, "c")], [(40, "a")]]
"""(second after 10:00, key) by batch: b@90 s is the only row of key b."""


def keyed_script():
    return [
        [{"ts": int((TEN_O_CLOCK + second) * 1000), "key": key, "value": 1.0} for second, key in batch]
        for batch in KEYED_EVENTS
    ]


@pytest.mark.parametrize("name", list(AGGREGATED))
def test_a_filter_on_the_key_runs_below_an_aggregation(name):
    """Spark moves a filter on the grouping key below the aggregation, and below the watermark: b@90 s then
    never moves it, and the watermark of batch 1 is 5 s (a), not 90 s; a filter on a count or on a window's
    bounds stays after the aggregation."""
    lesson = pipeline_lesson(AGGREGATED[name][0], "aggregated_case.py")
    watermarks = [batch.watermark for batch in lesson.run(keyed_script()).output()]
    assert watermarks[1] == (TEN_O_CLOCK + AGGREGATED[name][1]) * 1000


@pytest.mark.spark
@pytest.mark.parametrize("name", list(AGGREGATED))
def test_a_filter_after_an_aggregation_matches_spark(name):
    """The aggregation cases in Spark 4.3: the same watermarks and rows, batch for batch."""
    result = compare_lesson(pipeline_lesson(AGGREGATED[name][0], "aggregated_case.py"), keyed_script())
    assert result.matches, result.table()


def static(on: str, then: str = "", how: str = "inner") -> str:
    """One input watermarked 0 seconds behind, joined with a static table of regions on ``on``, then ``then``."""
    return f'''
from ministream import Count, Tumbling

FIELDS = {{"key": str, "value": float}}
OUTPUT_MODE = "append"
KEYS = [{{"{on}": key, "region": "us" if key == "b" else "eu"}} for key in "abc"]


def pipeline(events):
    events = events.with_watermark("wm", "ts", "0 seconds")
    joined = events.join_static("regions", KEYS, on={{"key": "{on}"}}, how="{how}")
    return joined{then}
'''


def static_filter(column: str, condition: str) -> str:
    return f'.filter("f", lambda row: {condition.format(f"row[{column!r}]")}, columns=("{column}",))'


STATIC = {  # name: (pipeline, events, the watermark of batch 1 in seconds after 10:00)
    "inner, value": (static("key", static_filter("value", "{} > 2")), "b", 5),
    "left outer, value": (static("key", static_filter("value", "{} > 2"), "left_outer"), "b", 5),
    "inner, key": (static("key", static_filter("key", '{} != "b"')), "b", 5),
    "inner, the table's key": (static("k", static_filter("k", '{} != "b"')), "b", 5),
    "inner, the table's key renamed": (
        static("k", '.select("s", kk="k", ts="ts").filter("f", lambda row: row["kk"] != "b", columns=("kk",))'),
        "b",
        5,
    ),
    "inner, null key": (static("key"), "null", 5),
    "inner, value, then a window": (
        static(
            "key", static_filter("value", "{} > 2") + '.key_by("key").window("w", Tumbling("10 seconds"), n=Count())'
        ),
        "b",
        5,
    ),
    # a condition the stream's rows cannot be tested on before the join stays after it
    "inner, a table column": (static("key", static_filter("region", '{} == "eu"')), "b", 90),
    "left outer, the table's key": (static("k", static_filter("k", '{} != "b"'), "left_outer"), "b", 90),
    "left outer, null key": (static("key", how="left_outer"), "null", 90),
}
"""Spark's stream-static join as a join whose left side is the stream: a filter after it on the stream's
columns runs below the stream's watermark (both join types keep the stream's rows), an inner join adds
``key IS NOT NULL`` there, and a condition on the table's key is copied to the stream's key it equals."""

STATIC_EVENTS = {
    "b": [[(5, "a", 5.0), (90, "b", 0.0)], [(15, "a", 5.0), (25, "c", 5.0)], [(40, "a", 5.0)]],
    "null": [[(5, "a", 5.0), (90, None, 5.0)], [(15, "a", 5.0), (25, "c", 5.0)], [(40, "a", 5.0)]],
}
"""(second after 10:00, key, value) by batch: the row at 90 s (key b with value 0, or no key) is the only one
that a moved condition drops; with it left out, c@25 s is not late in batch 1."""


def static_script(events: str) -> list[list[dict]]:
    return [
        [{"ts": int((TEN_O_CLOCK + second) * 1000), "key": key, "value": value} for second, key, value in batch]
        for batch in STATIC_EVENTS[events]
    ]


@pytest.mark.parametrize("name", list(STATIC))
def test_a_filter_after_a_static_join_runs_below_the_streams_watermark(name):
    """The watermark of batch 1 is 5 s when the row at 90 s fails a condition Spark runs below the watermark,
    and 90 s when nothing Spark moves there drops it."""
    text, events, second = STATIC[name]
    lesson = pipeline_lesson(text, "static_case.py")
    watermarks = [batch.watermark for batch in lesson.run(static_script(events)).output()]
    assert watermarks[1] == (TEN_O_CLOCK + second) * 1000


@pytest.mark.spark
@pytest.mark.parametrize("name", list(STATIC))
def test_a_filter_after_a_static_join_matches_spark(name):
    """The stream-static cases in Spark 4.3: the same watermarks and rows, batch for batch."""
    text, events, _ = STATIC[name]
    result = compare_lesson(pipeline_lesson(text, "static_case.py"), static_script(events))
    assert result.matches, result.table()


def test_a_filter_on_the_tables_key_says_it_is_copied():
    """The watermark's note names the filter on the table's key as copied to the stream's key."""
    flow = pipeline_lesson(STATIC["inner, the table's key"][0], "static_case.py").pipeline(static_script("b"), {})
    tail = "runs below it (Spark moves it there): only the rows it keeps move this watermark"
    assert optimizer_notes(flow, flow.step("wm")) == [f"filter 'f', copied from k to key, {tail}"]
