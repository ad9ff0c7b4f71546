"""The window step itself: its aggregates, its continuous-model rules (Flink's WindowOperator with
EventTimeTrigger), the late side output, its refusals, and its state."""

from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ministream import Avg, CollectingSink, Count, Custom, Dataflow, Max, Min, ScriptedSource, Sum, run_microbatch
from ministream.checkpoints.incremental import snapshot_operator
from ministream.core.operator import BatchInfo, StepContext
from ministream.core.plan import Stream
from ministream.errors import PipelineError
from ministream.models.continuous import run_continuous
from ministream.operators.window import WindowAggregate
from ministream.time.windows import Sliding, Tumbling, sliding


def e(second: float, key: str = "a", value: float = 1.0) -> dict:
    return {"ts": round(second * 1000), "key": key, "value": float(value)}


TEN_SECOND_WINDOWS = Tumbling(10_000)


def flow_of(script, windows=TEN_SECOND_WINDOWS, delay=5_000, lateness=0, **aggregates):
    flow = Dataflow("windows")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", delay)
    per_window = events.key_by("key").window(
        "w", windows, allowed_lateness=lateness, late_rows="late", **(aggregates or {"count": Count()})
    )
    per_window.sink("output", CollectingSink())
    per_window.side_output("late").sink("late", CollectingSink())
    return flow


def shown(rows):
    return [(r["key"], r["window_start"] // 1000, r["count"]) for r in rows]


# -- aggregates -----------------------------------------------------------------------------------------------


def test_every_aggregate_over_a_window():
    """count, sum, min, max, avg and a user-defined aggregate, over the rows of one window (nulls skipped)."""
    product = Custom("value", create=lambda: 1, add=lambda acc, v: acc * v)
    script = [[e(1, value=2), e(2, value=5), {"ts": 3_000, "key": "a", "value": None}, e(20)]]
    run = run_microbatch(
        flow_of(
            script,
            count=Count(),
            values=Count("value"),
            sum=Sum("value"),
            min=Min("value"),
            max=Max("value"),
            avg=Avg("value"),
            product=product,
        ),
        output_mode="append",
    )
    [row] = run.output()[1].rows
    assert row == {
        "key": "a",
        "window_start": 0,
        "window_end": 10_000,
        "count": 3,
        "values": 2,
        "sum": 7.0,
        "min": 2.0,
        "max": 5.0,
        "avg": 3.5,
        "product": 10.0,
    }


def test_several_key_columns_come_out_as_columns():
    """key_by(["key", "region"]) gives one row per (key, region, window) with both columns."""
    flow = Dataflow("two-keys")
    events = flow.source("events", ScriptedSource([[{**e(1), "region": "eu"}, {**e(2), "region": "us"}]]))
    events.key_by(["key", "region"]).window("w", Tumbling(10_000), count=Count()).sink("output", CollectingSink())
    rows = run_microbatch(flow, output_mode="update").output()[0].rows
    assert sorted((r["key"], r["region"], r["count"]) for r in rows) == [("a", "eu", 1), ("a", "us", 1)]


# -- continuous model -----------------------------------------------------------------------------------------


def test_continuous_a_window_fires_when_the_watermark_reaches_end_minus_one():
    """Watermark = max - delay - 1 ms: a row at 14.999 s makes it 9.998 s, nothing fires; a row at 15 s makes
    it 9.999 s = end - 1 of [0, 10), which fires (so b at 3 s, after it, is late). The final +inf watermark
    fires the rest."""
    run = run_continuous(flow_of([[e(1), e(14.999), e(15), e(3, "b")]]), trace=True)
    assert shown(run.output()[0].rows) == [("a", 0, 1), ("a", 10, 2)]
    assert run.output("late")[0].rows == [e(3, "b")]
    fired = [line.text for line in run.trace.of_kind("emit")]
    assert fired[0] == "window [00:00:00, 00:00:10) of key 'a' emitted: end - 1 <= watermark 00:00:09.999"
    assert fired[1] == "window [00:00:10, 00:00:20) of key 'a' emitted: end - 1 <= watermark +∞"


def test_continuous_a_late_row_within_the_allowed_lateness_fires_its_window_again():
    """With 5 s of allowed lateness, [0, 10) is kept until the watermark reaches 14.999 s: a row for it at
    watermark 9.999 s fires it again at once with the updated count (a late firing)."""
    run = run_continuous(flow_of([[e(1), e(15), e(2), e(20), e(3)]], lateness=5_000), trace=True)
    assert shown(run.output()[0].rows) == [("a", 0, 1), ("a", 0, 2), ("a", 10, 1), ("a", 20, 1)]
    assert run.output("late")[0].rows == [e(3)]
    assert "late firing" in run.trace.of_kind("emit")[1].text


def test_continuous_a_row_too_late_for_every_window_goes_to_the_side_output():
    """Without allowed lateness, a row whose window has fired is late: it counts nowhere, is kept in
    late_rows with the rule, and reaches the late side output."""
    run = run_continuous(flow_of([[e(1), e(15), e(2)]]))
    assert shown(run.output()[0].rows) == [("a", 0, 1), ("a", 10, 1)]
    [late] = run.late_rows()
    assert late.row == e(2) and late.batch_id is None and late.window == (0, 10_000)
    assert late.rule == (
        "end - 1 + allowed lateness 0 seconds <= watermark 00:00:09.999: the window fired and its state is gone"
    )
    assert run.output("late")[0].rows == [e(2)]


def test_continuous_sliding_a_row_counts_in_the_windows_still_kept():
    """Sliding 10 s every 5 s: at watermark 9.999 s a row at 7 s is too late for [0, 10) but counts in
    [5, 15), so it is not a late row."""
    run = run_continuous(flow_of([[e(1), e(15), e(7)]], windows=Sliding(10_000, 5_000)))
    counts = {r["window_start"] // 1000: r["count"] for r in run.output()[0].rows}
    assert counts == {-5: 1, 0: 1, 5: 1, 10: 1, 15: 1} and run.late_rows() == []


def test_continuous_output_does_not_depend_on_parallelism_or_seed():
    """The multiset of fired rows and late rows is the same for parallelism 1, 2, 4 and several seeds."""
    script = [[e(1), e(2, "b"), e(14), e(3), e(9, "b"), e(30), e(12, "c"), e(4)]]

    def seen(run):
        return sorted(map(repr, run.output()[0].rows)), sorted(repr(late.row) for late in run.late_rows())

    expected = seen(run_continuous(flow_of(script, lateness=2_000)))
    for parallelism, seed in ((2, 1), (4, 2), (3, 17)):
        assert seen(run_continuous(flow_of(script, lateness=2_000), parallelism=parallelism, seed=seed)) == expected


def test_continuous_state_is_dropped_at_end_minus_one_plus_the_allowed_lateness():
    """An operator on its own: with 5 s of lateness, [0, 10) fires at watermark 9.999 s and is removed only at
    14.999 s; the watermark is passed on each time."""
    op = WindowAggregate(("key",), Tumbling(10_000), {"count": Count()}, allowed_lateness=5_000)
    ctx = StepContext.for_testing(model="continuous")
    op.open(ctx)
    op.process([("a", e(1))], 0)
    op.on_watermark(9_999)
    op.on_watermark(14_998)
    assert op.state_size() == 1
    op.on_watermark(14_999)
    assert op.state_size() == 0
    assert ctx.emitted == [
        {"key": "a", "window_start": 0, "window_end": 10_000, "count": 1},
        ("watermark", 9_999),
        ("watermark", 14_998),
        ("watermark", 14_999),
    ]


# -- refusals -------------------------------------------------------------------------------------------------


def test_a_window_step_needs_an_aggregate_and_a_non_negative_lateness():
    """No aggregate, or a negative allowed lateness, is refused when the pipeline is built."""
    keyed = Dataflow("f").source("events", ScriptedSource([])).key_by("key")
    with pytest.raises(PipelineError, match="needs at least one aggregate"):
        keyed.window("w", Tumbling(10_000))
    with pytest.raises(PipelineError, match="allowed lateness cannot be negative"):
        keyed.window("w2", Tumbling(10_000), allowed_lateness=-1, count=Count())


def test_only_a_declared_side_output_can_be_read():
    """side_output("x") of a step that has no side output x is refused, naming the ones it has."""
    flow = flow_of([])
    window_step = next(step for step in flow.steps if step.name == "w")
    with pytest.raises(PipelineError, match="has no side output 'lost'; it has: late"):
        Stream(flow, window_step).side_output("lost")


# -- state ----------------------------------------------------------------------------------------------------


def test_state_size_counts_windows_and_survives_a_snapshot():
    """state_size() counts (key, window) accumulators; a snapshot restored into a fresh operator holds the same
    windows and goes on from there."""
    op = WindowAggregate(("key",), Sliding(10_000, 5_000), {"count": Count()})
    ctx = StepContext.for_testing(output_mode="update")
    op.open(ctx)
    op.on_batch_start(BatchInfo(0, 0, 0))
    op.process([("a", e(7)), ("b", e(1))], 0)
    op.on_batch_end(BatchInfo(0, 0, 0))
    assert op.state_size() == 4
    fresh = WindowAggregate(("key",), Sliding(10_000, 5_000), {"count": Count()})
    fresh_ctx = StepContext.for_testing(output_mode="update")
    fresh.open(fresh_ctx)
    fresh.restore(op.snapshot())
    fresh.on_batch_start(BatchInfo(1, 0, 0))
    fresh.process([("a", e(8))], 0)
    fresh.on_batch_end(BatchInfo(1, 0, 0))
    assert sorted(shown(fresh_ctx.emitted)) == [("a", 0, 2), ("a", 5, 2)] and fresh.state_size() == 4


# -- the pane shortcut -------------------------------------------------------------------------------------------


@given(
    size=st.integers(1, 12),
    slide=st.integers(1, 12),
    offset=st.integers(-11, 11),
    times=st.lists(st.integers(-40, 40), max_size=30),
)
@settings(max_examples=300, deadline=None)
def test_each_row_counts_in_exactly_the_windows_that_contain_it_whatever_the_panes(size, slide, offset, times):
    """The micro-batch operator works a row's windows out once per pane; in any order of event times, with any
    size, slide and offset, every row still lands in exactly ``windows.sliding(ts, ...)``."""
    assume(slide <= size and abs(offset) < slide)
    op = WindowAggregate(("key",), Sliding(size, slide, offset), {"count": Count()})
    ctx = StepContext.for_testing(output_mode="complete")
    op.open(ctx)
    op.on_batch_start(BatchInfo(0, None, None))
    op.process([("a", {"key": "a", "ts": ts}) for ts in times], 0)
    op.on_batch_end(BatchInfo(0, None, None))
    expected = Counter(window for ts in times for window in sliding(ts, size, slide, offset))
    assert {(r["window_start"], r["window_end"]): r["count"] for r in ctx.emitted} == dict(expected)


def test_an_incremental_checkpoint_writes_only_the_keys_whose_windows_changed():
    """After a full checkpoint, a delta holds the keys that got rows (with all their windows) and, as removed,
    the keys whose last window closed; a key nothing happened to is not in it."""
    op = WindowAggregate(("key",), Tumbling(10_000), {"count": Count()})
    op.open(StepContext.for_testing(output_mode="append"))
    op.on_batch_start(BatchInfo(0, 0, 0))
    op.process([(f"k{i}", e(1, f"k{i}")) for i in range(100)] + [("idle", e(15, "idle"))], 0)
    op.on_batch_end(BatchInfo(0, 0, 0))
    snapshot_operator(op)  # the full checkpoint the deltas build on

    def written(delta):
        updated = {key: by_window for states in delta.updated.values() for key, by_window in states["windows"].items()}
        removed = sorted(key for states in delta.removed.values() for key in states["windows"])
        return updated, removed

    op.on_batch_start(BatchInfo(1, 0, 0))
    op.process([("k1", e(2, "k1")), ("k2", e(3, "k2")), ("k2", e(12, "k2"))], 0)
    op.on_batch_end(BatchInfo(1, 0, 0))
    assert written(snapshot_operator(op, delta=True)["keyed"]) == (
        {"k1": {(0, 10_000): [2]}, "k2": {(0, 10_000): [2], (10_000, 20_000): [1]}},
        [],
    )
    op.on_batch_start(BatchInfo(2, 10_000, 0))  # [0, 10) closes for every key
    op.on_batch_end(BatchInfo(2, 10_000, 0))
    updated, removed = written(snapshot_operator(op, delta=True)["keyed"])
    assert updated == {"k2": {(10_000, 20_000): [1]}} and removed == sorted(f"k{i}" for i in range(100) if i != 2)
