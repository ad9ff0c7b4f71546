"""Joins in the continuous model, one test per rule (Flink's IntervalJoinOperator and window join)."""

import pytest

from ministream import CollectingSink, Dataflow, ScriptedSource
from ministream.core.operator import StepContext
from ministream.errors import PipelineError
from ministream.operators.interval_join import IntervalJoin, WindowJoin, continuous_join
from ministream.operators.stream_join import JoinSide, TimeRange

SIDES = (JoinSide("left", "t"), JoinSide("right", "u"))


def interval(lower=-5, upper=10, **inclusive):
    return IntervalJoin(TimeRange("t", "u", lower, upper, **inclusive), *SIDES), StepContext.for_testing(
        model="continuous"
    )


def test_rows_join_on_arrival_within_inclusive_bounds_with_the_later_time():
    """A pair joins when it is complete, if ``t + lower <= u <= t + upper``; its time is the later one."""
    join, ctx = interval()
    join.process([("k", {"t": 100})], 0, ctx)
    join.process([("k", {"u": 95}), ("k", {"u": 94}), ("k", {"u": 110}), ("k", {"u": 111})], 1, ctx)
    assert ctx.emitted == [{"t": 100, "u": 95, "time": 100}, {"t": 100, "u": 110, "time": 110}]


def test_exclusive_bounds_move_by_one_millisecond():
    """Flink adds 1 ms to an exclusive lower bound and takes 1 ms from an exclusive upper bound."""
    join, ctx = interval(lower_inclusive=False, upper_inclusive=False)
    join.process([("k", {"t": 100})], 0, ctx)
    join.process([("k", {"u": 95}), ("k", {"u": 96}), ("k", {"u": 109}), ("k", {"u": 110})], 1, ctx)
    assert [row["u"] for row in ctx.emitted] == [96, 109]


def test_rows_before_the_watermark_are_late_and_the_watermark_itself_is_not():
    """A row is late when its time < the watermark (strict), not when it equals it."""
    join, ctx = interval()
    join.on_watermark(100, ctx)
    join.process([("k", {"t": 99}), ("k", {"t": 100})], 0, ctx)
    assert join.sizes() == {"left": 1, "right": 0}


def test_state_is_cleaned_when_the_watermark_reaches_each_sides_cleanup_time():
    """Left rows leave at ``t + upper``, right rows at ``u - lower`` (with lower < 0)."""
    join, ctx = interval(lower=-5, upper=10)
    join.process([("k", {"t": 100})], 0, ctx)
    join.process([("k", {"u": 100})], 1, ctx)
    join.on_watermark(104, ctx)
    assert join.sizes() == {"left": 1, "right": 1}
    join.on_watermark(105, ctx)
    assert join.sizes() == {"left": 1, "right": 0}
    join.on_watermark(110, ctx)
    assert join.sizes() == {"left": 0, "right": 0}


def test_window_join_pairs_a_windows_rows_when_it_fires():
    """Both sides' rows of one key and window are paired when the watermark reaches ``end - 1``."""
    join, ctx = WindowJoin(("end", "end_r"), *SIDES), StepContext.for_testing(model="continuous")
    join.process([(("k", 10), {"t": 1, "end": 10}), (("k", 10), {"t": 2, "end": 10})], 0, ctx)
    join.process([(("k", 10), {"u": 5, "end_r": 10})], 1, ctx)
    join.on_watermark(8, ctx)
    assert ctx.emitted == []
    join.on_watermark(9, ctx)
    assert [(row["t"], row["u"], row["time"]) for row in ctx.emitted] == [(1, 5, 9), (2, 5, 9)]
    join.process([(("k", 10), {"u": 6, "end_r": 10})], 1, ctx)  # its window has fired: late
    assert join.sizes() == {"left": 0, "right": 0}


def test_outer_joins_and_open_ranges_are_refused_in_the_continuous_model():
    """Flink's interval and window joins are inner joins with both bounds."""
    with pytest.raises(PipelineError, match="joins only with how='inner'"):
        continuous_join("left_outer", TimeRange("t", "u", 0, 1), *SIDES, None)
    with pytest.raises(PipelineError, match="needs both bounds"):
        continuous_join("inner", TimeRange("t", "u", 0, None), *SIDES, None)


def test_a_continuous_run_of_an_interval_join():
    """The same dataflow runs in the continuous model: pairs appear as rows arrive, with their time."""
    from ministream.models.continuous import run_continuous

    flow = Dataflow("interval")
    left = flow.source("left", ScriptedSource([[{"k": "a", "t": 1000}, {"k": "b", "t": 2000}]]))
    right = flow.source("right", ScriptedSource([[{"k2": "a", "u": 1500}, {"k2": "b", "u": 9000}]]))
    left = left.with_watermark("lw", "t", "1 minute").key_by("k")
    right = right.with_watermark("rw", "u", "1 minute").key_by("k2")
    left.join("join", right, between=TimeRange("t", "u", 0, 5000)).sink("output", CollectingSink())
    [batch] = run_continuous(flow).output()
    assert batch.rows == [{"k": "a", "t": 1000, "k2": "a", "u": 1500, "time": 1500}]
