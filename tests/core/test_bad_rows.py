"""Bad input (``core/bad_rows.py``): a row that a step cannot read stops the run with one line that names the
step, the row and what is wrong with it, in both execution models and whatever the parallelism; a failure no
row is to blame for is raised as it was."""

import pytest

from ministream import (
    CollectingSink,
    Count,
    Custom,
    Dataflow,
    ScriptedSource,
    Session,
    Sum,
    TimeRange,
    Tumbling,
    run_continuous,
    run_microbatch,
)
from ministream.errors import PipelineError


def windows(source):
    return source.with_watermark("wm", "ts", 0).key_by("key").window("counts", Tumbling("5 seconds"), n=Count())


def totals(source):
    return source.key_by("key").aggregate("totals", total=Sum("value"))


def only_big(source):
    return source.filter("big", lambda row: row["value"] > 10)


def unique(source):
    return source.drop_duplicates("unique", ["key"])


def error_of(build, script, model: str = "microbatch", parallelism: int = 1) -> str:
    flow = Dataflow("bad")
    build(flow.source("events", ScriptedSource(script))).sink("output", CollectingSink())
    run = run_microbatch if model == "microbatch" else run_continuous
    options = {"output_mode": "update"} if model == "microbatch" else {}
    with pytest.raises(PipelineError) as caught:
        run(flow, parallelism=parallelism, **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


CASES = [
    (
        windows,
        [[{"key": "a", "ts": 1_000}], [{"ts": 2_000}]],
        "step 'counts': the row {'ts': 2000} has no key column 'key' (its columns: ts)",
    ),
    (
        windows,
        [[{"key": "a", "ts": 1_000}, {"key": "b", "ts": "2024-01-01T10:00:00Z"}]],
        (
            "step 'wm': the row {'key': 'b', 'ts': '2024-01-01T10:00:00Z'} has the event time '2024-01-01T10:00:00Z' "
            "in column 'ts', a str: an event time is whole milliseconds since the epoch, an int (None when it is "
            "unknown)"
        ),
    ),
    (
        windows,
        [[{"key": ["a", "b"], "ts": 1_000}]],
        (
            "step 'counts': the row {'key': ['a', 'b'], 'ts': 1000} has the key ['a', 'b'], a list, which cannot be "
            "a key (a key is a string, a number, a tuple of them, or None)"
        ),
    ),
    (
        windows,
        [[{"key": "a", "ts": 1_000}, "a,1000"]],
        "step 'wm': the row 'a,1000' is not a row but a str: a row is a dict of column values",
    ),
    (
        totals,
        [[{"key": "a", "value": 1}, {"key": "a", "value": "2"}]],
        "step 'totals': the row {'key': 'a', 'value': '2'} has '2' in column 'value', a str: sum adds up numbers",
    ),
    (  # a sum's first value is kept, not added: a string there is caught all the same
        totals,
        [[{"key": "a", "value": "2"}]],
        "step 'totals': the row {'key': 'a', 'value': '2'} has '2' in column 'value', a str: sum adds up numbers",
    ),
    (
        only_big,
        [[{"value": 12}, {"amount": 3}]],
        "step 'big': the row {'amount': 3} makes the step's function raise KeyError: 'value'",
    ),
    (
        unique,
        [[{"key": {"id": 1}}]],
        (
            "step 'unique': the row {'key': {'id': 1}} has the key {'id': 1}, a dict, which cannot be a key (a key "
            "is a string, a number, a tuple of them, or None)"
        ),
    ),
]


@pytest.mark.parametrize("build, script, expected", CASES, ids=[expected.split(":")[1][:40] for *_, expected in CASES])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_bad_row_is_named_with_its_step_and_what_is_wrong_with_it(build, script, expected, parallelism):
    """With three subtasks, the key is computed where the rows are sent (each row to its key's subtask): the
    error names the keyed step all the same."""
    assert error_of(build, script, parallelism=parallelism) == expected


@pytest.mark.parametrize("build, script, expected", CASES[:4] + CASES[6:])
def test_the_continuous_model_names_the_same_row(build, script, expected):
    """The continuous model runs the same physical graph (``totals`` aside: a running sum is a micro-batch
    aggregation in Spark, and its Flink twin is a window)."""
    assert error_of(build, script, model="continuous") == expected


def test_a_join_side_names_its_own_event_time_column():
    """A time-range join reads the left rows' ``ts`` and the right rows' ``click_time``: a bad right row is named
    against ``click_time``."""
    flow = Dataflow("join")
    left = flow.source("impressions", ScriptedSource([[{"key": "a", "ts": 1_000}]]))
    clicks = [[{"click_key": "a", "click_time": 1_500}, {"click_key": "a", "click_time": "x"}]]
    right = flow.source("clicks", ScriptedSource(clicks))
    left.key_by("key").join("joined", right.key_by("click_key"), between=TimeRange("ts", "click_time", 0, 1_000)).sink(
        "output", CollectingSink()
    )
    with pytest.raises(
        PipelineError,
        match=r"^step 'joined': the row \{'click_key': 'a', 'click_time': 'x'\} has the event time 'x' in column 'click_time'",
    ):
        run_microbatch(flow, output_mode="append")


def test_a_failure_no_row_is_to_blame_for_is_raised_as_it_was():
    """Every row is well formed, and the aggregate of your own divides by zero: its ``ZeroDivisionError`` comes
    out unchanged, not dressed up as a bad row."""
    flow = Dataflow("divide")
    flow.source("events", ScriptedSource([[{"key": "a", "value": 0}]])).key_by("key").aggregate(
        "inverse", inverse=Custom("value", lambda: 0.0, lambda total, value: total + 1 / value)
    ).sink("output", CollectingSink())
    with pytest.raises(ZeroDivisionError):
        run_microbatch(flow, output_mode="update")


def test_well_formed_rows_run_as_before():
    """The checks cost nothing until a step fails: a float event time and a null one are not errors (the null
    one is dropped by the window, and counted)."""
    script = [[{"key": "a", "ts": 1_000.0}, {"key": "a", "ts": None}, {"key": "b", "ts": 7_000}]]
    flow = Dataflow("fine")
    windows(flow.source("events", ScriptedSource(script))).sink("output", CollectingSink())
    run = run_microbatch(flow, output_mode="append")
    assert [row["key"] for batch in run.output() for row in batch.rows] == ["a"]


@pytest.mark.parametrize("model", ["microbatch", "continuous"])
def test_an_aggregate_of_a_column_the_rows_lack_is_refused(model):
    """A misspelt column in an aggregate would read as null in every row (a sum of nothing, null) without a
    word; Spark refuses the query (it cannot resolve the column), and so does ministream, at the first row."""
    flow = Dataflow("typo")
    flow.source("events", ScriptedSource([[{"key": "a", "ts": 1_000, "value": 4}]])).with_watermark(
        "wm", "ts", 0
    ).key_by("key").window("totals", Tumbling("5 seconds"), total=Sum("valeu")).sink("output", CollectingSink())
    run = run_microbatch if model == "microbatch" else run_continuous
    with pytest.raises(PipelineError) as caught:
        run(flow)
    assert str(caught.value) == (
        "step 'totals': the rows have no column 'valeu' for sum(valeu); a row has key, ts, value. "
        "(Spark: 'Cannot resolve column name \"valeu\"'.)"
    )


def test_something_else_than_an_aggregate_is_refused_when_the_step_is_added():
    """``n="count"`` where ``n=Count()`` goes is a mistake the plan can see: refused at once, in one line."""
    flow = Dataflow("words")
    events = flow.source("events", ScriptedSource([[{"key": "a"}]])).key_by("key")
    with pytest.raises(PipelineError, match=r"^aggregate 'counts': n='count' is not an aggregate: give Count\(\)"):
        events.aggregate("counts", n="count")


@pytest.mark.parametrize(
    "script, expected",
    [
        (
            [{"key": "a", "ts": 1_000}, {"key": "b", "ts": 2_000}],
            "ScriptedSource: batch 0 is a dict ({'key': 'a', 'ts': 1000}), not a list of rows",
        ),
        ("a,1000", "ScriptedSource: the script is a str, not a list of batches"),
        ([[{"key": "a", "ts": 1_000}], 7], "ScriptedSource: batch 1 is an int (7), not a list of rows"),
    ],
)
def test_a_script_that_is_not_a_list_of_batches_of_rows_is_refused(script, expected):
    """A list of rows given as the script (its batch forgotten) would be read as batches of column names:
    refused when the source is made, saying how a script is written."""
    with pytest.raises(PipelineError) as caught:
        ScriptedSource(script)
    assert str(caught.value).startswith(expected + ": a script is a list of batches, each a list of rows, like [[")


def test_a_script_may_be_any_iterable_of_batches():
    """A generator of batches is read once, into a list; ``None`` (no data at that trigger) stays."""
    source = ScriptedSource(batch for batch in ([{"key": "a", "ts": 1}], None, []))
    assert source.positions == [[{"key": "a", "ts": 1}], None, []]


def test_a_session_gap_computed_from_the_row_names_the_row_it_fails_on():
    """A gap of each row's own: b's row has no ``gap`` column, and the session step names it."""
    flow = Dataflow("gaps")
    rows = [[{"key": "a", "ts": 1_000, "gap": 5}, {"key": "b", "ts": 1_000}]]
    flow.source("events", ScriptedSource(rows)).key_by("key").window(
        "sessions", Session(lambda row: row["gap"] * 1_000), n=Count()
    ).sink("output", CollectingSink())
    with pytest.raises(PipelineError) as caught:
        run_microbatch(flow, output_mode="complete")
    assert str(caught.value) == (
        "step 'sessions': the row {'key': 'b', 'ts': 1000} makes the step's function raise KeyError: 'gap'"
    )


def test_a_deduplication_names_a_row_without_the_event_time_its_plan_carries():
    """A map that leaves out the event-time column of a window's rows (the plan takes a map to keep it) made a
    deduplication after it fail with a bare ``KeyError``; the error now names the row, the column, and why."""
    flow = Dataflow("dropped-time")
    events = flow.source("e", ScriptedSource([[{"ts": 1000, "key": "a"}], [{"ts": 20_000, "key": "a"}], []]))
    windows = events.with_watermark("wm", "ts", 0).key_by("key").window("w", Tumbling("5 seconds"), n=Count())
    windows.map("drop", lambda row: {"key": row["key"], "n": row["n"]}).drop_duplicates("d", ["key", "n"]).sink(
        "o", CollectingSink()
    )
    with pytest.raises(PipelineError) as failed:
        run_microbatch(flow, output_mode="append")
    assert str(failed.value).startswith(
        "step 'd': the row {'key': 'a', 'n': 1} has no column 'window_end', the event time the plan says its rows "
        "carry (its columns: key, n)"
    )
