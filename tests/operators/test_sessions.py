"""Session windows (ministream/operators/sessions.py): each rule of the micro-batch model (Spark) and of the
continuous model (Flink), one test per rule, and properties checked with Hypothesis."""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ministream.core.aggregates import Avg, Count, Custom, Max, Min, Sum
from ministream.core.operator import BatchInfo, StepContext
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.models.microbatch import run_microbatch
from ministream.operators.sessions import SessionWindowAggregate
from ministream.state.keygroups import key_group_of
from ministream.time.windows import Session, merge_sessions, touches

S = 1_000  # one second in ms


def ev(second, key="a", value=1.0):
    """A row ``second`` seconds after the epoch (times are in seconds in these tests)."""
    return {"ts": round(second * S), "key": key, "value": float(value)}


def run(
    script,
    gap="10 seconds",
    delay="5 seconds",
    mode="append",
    watermark=True,
    parallelism=1,
    seed=0,
    trace=False,
    **aggregates,
):
    flow = Dataflow("sessions")
    events = flow.source("events", ScriptedSource(script))
    if watermark:
        events = events.with_watermark("watermark", "ts", delay)
    aggregates = aggregates or {"count": Count(), "sum": Sum("value")}
    gap = gap if isinstance(gap, Session) else Session(gap)
    events.key_by("key").window("sessions", gap, **aggregates).sink("output", CollectingSink())
    return run_microbatch(flow, output_mode=mode, parallelism=parallelism, seed=seed, trace=trace)


def sessions(batch):
    """The rows of one batch as sorted (key, start s, end s, count) tuples."""
    return sorted((r["key"], r["window_start"] / S, r["window_end"] / S, r["count"]) for r in batch.rows)


def emitted(result):
    return [sessions(batch) for batch in result.output()]


# -- the merge rule ----------------------------------------------------------------------------------------------


def test_an_event_opens_a_session_from_its_time_to_time_plus_gap():
    """One event at t opens the session [t, t + gap)."""
    result = run([[ev(3)]], mode="complete")
    assert emitted(result) == [[("a", 3, 13, 1)]]


def test_an_event_exactly_gap_after_the_last_joins_its_session():
    """Sessions merge when next.start <= current.end: an event exactly gap later joins, 1 ms more does not."""
    assert emitted(run([[ev(0), ev(10)]], mode="complete")) == [[("a", 0, 20, 2)]]
    assert emitted(run([[ev(0), ev(10.001)]], mode="complete")) == [[("a", 0, 10, 1), ("a", 10.001, 20.001, 1)]]
    assert touches((0, 10), (10, 20)) and not touches((0, 10), (11, 20))


def test_a_session_ends_gap_after_its_latest_event_whatever_the_arrival_order():
    """end = max(t_i + gap): out-of-order events inside a session do not shorten it."""
    assert emitted(run([[ev(7), ev(1), ev(4)]], mode="complete")) == [[("a", 1, 17, 3)]]


def test_merging_sorts_by_start_and_folds_touching_sessions():
    """merge_sessions gives the same sessions for any order of its input."""
    windows = [(20, 30), (0, 10), (5, 12), (12, 15), (40, 41)]
    assert merge_sessions(windows) == merge_sessions(reversed(windows)) == [(0, 15), (20, 30), (40, 41)]


def test_sessions_are_per_key():
    """Events of different keys never share a session, however close in time."""
    assert emitted(run([[ev(1, "a"), ev(2, "b")]], mode="complete")) == [[("a", 1, 11, 1), ("b", 2, 12, 1)]]


def test_a_row_bridging_two_stored_sessions_merges_them_across_batches():
    """A later batch's row that touches two stored sessions of its key merges the three into one."""
    result = run([[ev(0), ev(18)], [ev(9)]], delay="1 minute", mode="complete")  # [9, 19) touches both
    assert emitted(result) == [[("a", 0, 10, 1), ("a", 18, 28, 1)], [("a", 0, 28, 3)]]


def test_aggregates_of_merged_sessions_are_merged():
    """count, sum, min, max, avg and a custom aggregate with a merge give the values of the whole session."""
    spread = Custom(
        "value",
        create=lambda: None,
        add=lambda acc, v: (v, v) if acc is None else (min(acc[0], v), max(acc[1], v)),
        merge=lambda a, b: b if a is None else a if b is None else (min(a[0], b[0]), max(a[1], b[1])),
        result=lambda acc: acc[1] - acc[0],
    )
    result = run(
        [[ev(0, value=4), ev(30, value=1)], [ev(20, value=9), ev(10, value=2)]],
        delay="1 minute",
        mode="complete",
        count=Count(),
        sum=Sum("value"),
        min=Min("value"),
        max=Max("value"),
        avg=Avg("value"),
        spread=spread,
    )
    [row] = result.output()[1].rows
    assert row == {
        "key": "a",
        "window_start": 0,
        "window_end": 40 * S,
        "count": 4,
        "sum": 16.0,
        "min": 1.0,
        "max": 9.0,
        "avg": 4.0,
        "spread": 8.0,
    }


def test_an_aggregate_without_merge_is_refused():
    """Merging sessions merges accumulators, so a custom aggregate without merge is refused up front."""
    no_merge = Custom("value", create=lambda: 0, add=lambda acc, v: acc + v)
    with pytest.raises(PipelineError, match="aggregate 'total' has no merge function"):
        run([[ev(0)]], mode="complete", total=no_merge)


# -- the micro-batch model (Spark) --------------------------------------------------------------------------------


def test_a_row_is_late_when_its_session_ends_at_or_before_the_previous_batchs_watermark():
    """Late means t + gap <= WM_{k-1}: a session ending exactly on it is dropped, 1 ms later it counts."""
    # batch 0's rows set WM_1 = 30 - 5 = 25, the late rows' watermark of batch 2: there a@15 ends at 25
    # (late), b@15.001 at 25.001 (not late)
    result = run([[ev(30, "z")], [], [ev(15, "a"), ev(15.001, "b")]], mode="complete", trace=True)
    assert result.watermarks[1] == 25 * S
    assert sessions(result.output()[2]) == [("b", 15.001, 25.001, 1), ("z", 30, 40, 1)]
    [late] = result.late_rows()
    assert (late.batch_id, late.row, late.window, late.watermark) == (2, ev(15, "a"), (15 * S, 25 * S), 25 * S)
    assert (
        "its session ends at 00:00:25 (ts + gap), at or before the watermark 00:00:25 of the previous batch"
        in result.trace.format()
    )


def test_the_late_filter_runs_on_each_row_before_merging():
    """A late row is dropped even when it would touch a session that is still open (Spark filters each row
    before merging), and an old row whose own session ends after WM_{k-1} counts."""
    # WM_1 = 25: session a [20, 30) is open. In batch 2, a@14 ([14, 24), touches it) is late; a@16 is not.
    result = run([[ev(20), ev(30, "z")], [], [ev(14), ev(16)]], mode="complete")
    assert sessions(result.output()[2]) == [("a", 16, 30, 2), ("z", 30, 40, 1)]
    assert [late.row for late in result.late_rows()] == [ev(14)]


def test_append_emits_a_session_once_when_its_end_is_at_or_before_the_watermark():
    """Append emits a session in the first batch with end <= WM_k (end == WM_k included), then removes it."""
    result = run([[ev(0)], [ev(15)], [ev(16)], [ev(40, "z")]])  # WM_2 = 10: [0, 10) ends exactly on it
    assert result.watermarks == [0, 0, 10 * S, 11 * S, 35 * S]
    assert emitted(result) == [[], [], [("a", 0, 10, 1)], [], [("a", 15, 26, 2)]]


def test_a_row_after_its_session_was_emitted_opens_a_new_session_that_may_overlap_it():
    """Once emitted, a session is gone: a later, not-late row of its key starts a new session, even inside
    the old one's span."""
    # [0, 10) is emitted in batch 2 (WM_2 = 10); in batch 3 (late rows: ts + gap <= 10) a@2 is not late, and
    # opens [2, 12), which overlaps the emitted [0, 10); it is emitted after z@40 moves the watermark to 35.
    result = run([[ev(0)], [ev(15, "z")], [], [ev(2)], [ev(40, "z")]])
    assert ("a", 0, 10, 1) in sessions(result.output()[2])
    assert ("a", 2, 12, 1) in [s for batch in result.output()[3:] for s in sessions(batch)]


def test_complete_mode_emits_every_session_every_batch_and_still_drops_late_rows():
    """Complete re-emits all sessions each batch and removes none, but unlike a plain or windowed aggregation a
    session window still drops late rows (measured in Spark 4.3)."""
    result = run([[ev(0), ev(30, "z")], [], [ev(1)]], mode="complete")  # a@1 ends at 11 <= WM_1 = 25
    assert emitted(result) == [[("a", 0, 10, 1), ("z", 30, 40, 1)]] * 3
    assert len(result.late_rows()) == 1


def test_a_no_data_batch_runs_in_append_mode_when_the_watermark_advances_but_not_in_complete_mode():
    """After the script, append runs one more batch when the watermark went up, even with nothing to evict;
    complete never does."""
    script = [[ev(100)], [ev(101)]]
    assert run(script).watermarks == [0, 95 * S, 96 * S]
    assert run(script, mode="complete").watermarks == [0, 95 * S]


def test_update_mode_is_refused_with_sparks_reason():
    """A session window in update mode is refused before running, with Spark's message."""
    with pytest.raises(
        PipelineError,
        match=r"cannot run in update output mode.*This output mode is not "
        "supported for session window streaming aggregations",
    ):
        run([[ev(0)]], mode="update")


def test_append_without_a_watermark_is_refused():
    """Without a watermark no session is ever final, so append mode is refused (complete still runs)."""
    with pytest.raises(PipelineError, match="append output mode needs a watermark"):
        run([[ev(0)]], watermark=False)
    assert emitted(run([[ev(0)], [ev(100)]], watermark=False, mode="complete"))[1] == [
        ("a", 0, 10, 1),
        ("a", 100, 110, 1),
    ]


def test_a_session_window_needs_a_key_to_group_by():
    """Sessions are per key: key_by with no column is refused with Spark's message."""
    flow = Dataflow("no-key")
    events = flow.source("events", ScriptedSource([[ev(0)]])).with_watermark("watermark", "ts", "5 seconds")
    events.key_by([]).window("sessions", Session("10 seconds"), count=Count()).sink("output", CollectingSink())
    with pytest.raises(PipelineError, match="Global aggregation with session window in streaming query"):
        run_microbatch(flow)


# -- per-row gaps -------------------------------------------------------------------------------------------------


def test_a_per_row_gap_opens_a_session_of_that_rows_length():
    """With a gap computed from the row, each event opens [t, t + its own gap)."""
    per_key = Session(lambda row: {"a": "5 seconds", "b": 20_000}[row["key"]])
    assert emitted(run([[ev(0, "a"), ev(0, "b"), ev(6, "a")]], gap=per_key, mode="complete")) == [
        [("a", 0, 5, 1), ("a", 6, 11, 1), ("b", 0, 20, 1)]
    ]


def test_rows_whose_gap_is_zero_negative_or_missing_are_dropped_counted_and_traced():
    """Spark filters out rows whose gap is not positive (or null); ministream drops them too, keeps each one
    in dropped_rows and says why in the trace."""
    gaps = {"a": "10 seconds", "b": "0 seconds", "c": -5_000, "d": None}
    result = run(
        [[ev(0, key) for key in "abcd"]], gap=Session(lambda row: gaps[row["key"]]), mode="complete", trace=True
    )
    assert emitted(result) == [[("a", 0, 10, 1)]]
    [operator] = result.graph.operators("sessions")
    assert [(d.row["key"], d.gap) for d in operator.dropped_rows] == [("b", 0), ("c", -5_000), ("d", None)]
    text = result.trace.format()
    assert "its session gap is 0 seconds, not longer than zero: the row opens no session" in text
    assert "its session gap is missing (null in Spark)" in text


def test_rows_dropped_for_their_gap_still_move_the_watermark():
    """The watermark is computed before the session step, so a dropped row still advances it (as in Spark)."""
    result = run([[ev(0, "b")], [ev(100, "b")]], gap=Session(lambda row: 0 if row["key"] == "b" else 10_000))
    assert result.watermarks == [0, 0, 95 * S]


def test_a_fixed_gap_of_zero_or_less_is_refused():
    """A fixed gap <= 0 would make every session empty: refused (Spark would silently drop every row)."""
    for gap in ("0 seconds", -1):
        with pytest.raises(PipelineError, match="a session gap must be longer than zero"):
            Session(gap)


# -- the continuous model (Flink) ---------------------------------------------------------------------------------


def continuous(lateness=0, late_rows="late"):
    sessions = SessionWindowAggregate(
        ("key",), Session("10 seconds"), {"count": Count()}, allowed_lateness=lateness, late_rows=late_rows
    )
    ctx = StepContext.for_testing(model="continuous")
    sessions.open(ctx)
    return sessions, ctx


def rows_of(ctx):
    return [item for item in ctx.emitted if isinstance(item, dict)]


def test_continuous_a_session_fires_when_the_watermark_reaches_end_minus_one():
    """A session [0, 10 s) fires at watermark 9 999 ms, not at 9 998 ms, and is then dropped (no lateness)."""
    sessions, ctx = continuous()
    sessions.process([("a", ev(0)), ("a", ev(5))], 0)
    sessions.on_watermark(14_998)
    assert rows_of(ctx) == []
    sessions.on_watermark(14_999)
    assert rows_of(ctx) == [{"key": "a", "window_start": 0, "window_end": 15_000, "count": 2}]
    assert sessions.state_size() == 0


def test_continuous_a_row_merging_into_a_fired_session_fires_it_again_with_its_new_bounds():
    """Within the allowed lateness, a row that merges into a fired session fires the merged session at once."""
    sessions, ctx = continuous(lateness=20_000)
    sessions.process([("a", ev(0))], 0)
    sessions.on_watermark(12_000)  # [0, 10) fired at 9 999, kept until 9 999 + 20 000
    sessions.process([("a", ev(2))], 0)
    assert rows_of(ctx) == [
        {"key": "a", "window_start": 0, "window_end": 10_000, "count": 1},
        {"key": "a", "window_start": 0, "window_end": 12_000, "count": 2},
    ]


def test_continuous_a_row_whose_merged_session_is_past_the_lateness_goes_to_the_side_output():
    """A row is late when its merged session's end - 1 + allowed lateness <= watermark: it is kept in
    late_rows and sent to the late-rows side output."""
    sessions, ctx = continuous()
    sessions.on_watermark(20_000)
    sessions.process([("a", ev(10))], 0)  # [10, 20): 19 999 <= 20 000
    assert ("late", [ev(10)]) in ctx.emitted
    assert [late.row for late in sessions.late_rows] == [ev(10)]
    sessions.process([("a", ev(11))], 0)  # [11, 21): 20 999 > 20 000: not late; fires at 20 999
    sessions.on_watermark(20_999)
    assert rows_of(ctx) == [{"key": "a", "window_start": 11_000, "window_end": 21_000, "count": 1}]


def test_continuous_a_session_is_dropped_at_end_minus_one_plus_the_allowed_lateness():
    """A fired session stays for allowed lateness, then its state is dropped and later rows are late."""
    sessions, _ctx = continuous(lateness=5_000)
    sessions.process([("a", ev(0))], 0)
    sessions.on_watermark(14_998)
    assert sessions.state_size() == 1
    sessions.on_watermark(14_999)
    assert sessions.state_size() == 0


# -- properties ---------------------------------------------------------------------------------------------------

rows = st.lists(st.tuples(st.integers(0, 60), st.sampled_from("abc"), st.integers(1, 9)), max_size=25)


@settings(max_examples=60, deadline=None)
@given(rows)
def test_property_every_event_is_in_exactly_one_session_of_its_key(events):
    """In one batch with nothing late, each key's sessions are disjoint and do not touch, every event lies in
    exactly one of them, and the counts add up to the events."""
    script = [[ev(t, key, value) for t, key, value in events]]
    [batch] = run(script, mode="complete", delay="10 minutes").output()
    for key in "abc":
        mine = sorted((r["window_start"], r["window_end"], r["count"]) for r in batch.rows if r["key"] == key)
        times = [t * S for t, k, _ in events if k == key]
        assert sum(count for _, _, count in mine) == len(times)
        assert all(b[0] > a[1] for a, b in itertools.pairwise(mine))  # neither overlapping nor touching
        assert all(sum(start <= t < end for start, end, _ in mine) == 1 for t in times)
        assert all(end == max(t for t in times if start <= t < end) + 10 * S for start, end, _ in mine)


@settings(max_examples=40, deadline=None)
@given(rows, st.randoms(use_true_random=False))
def test_property_merging_does_not_depend_on_the_order_of_rows_in_a_batch(events, rng):
    """Shuffling the rows of a batch gives the same sessions (Spark sorts before it merges)."""
    script = [[ev(t, key, value) for t, key, value in events]]
    shuffled = [list(script[0])]
    rng.shuffle(shuffled[0])
    assert emitted(run(script, mode="complete")) == emitted(run(shuffled, mode="complete"))


@settings(max_examples=25, deadline=None)
@given(st.lists(rows, min_size=1, max_size=4), st.sampled_from([1, 2, 4]), st.integers(0, 99))
def test_property_results_do_not_depend_on_parallelism_or_seed(batches, parallelism, seed):
    """The same script gives the same batches at any parallelism and scheduler seed."""
    script = [[ev(t, key, value) for t, key, value in batch] for batch in batches]
    expected = [sorted(map(repr, batch.rows)) for batch in run(script).output()]
    got = [sorted(map(repr, batch.rows)) for batch in run(script, parallelism=parallelism, seed=seed).output()]
    assert got == expected


@settings(max_examples=40, deadline=None)
@given(rows, st.integers(1, 4), st.randoms(use_true_random=False))
def test_property_splitting_a_batch_changes_nothing_while_no_row_is_late(events, pieces, rng):
    """With a watermark far behind (nothing late, nothing evicted), the sessions after the last batch are
    the same however the rows were split into batches: merging across batches equals merging in one."""
    script = [ev(t, key, value) for t, key, value in events]
    cuts = sorted(rng.randrange(0, len(script) + 1) for _ in range(pieces - 1))
    split = [script[a:b] for a, b in zip([0] + cuts, cuts + [len(script)])]
    one = run([script], mode="complete", delay="1 hour").output()[-1]
    many = run(split, mode="complete", delay="1 hour").output()[-1]
    assert sessions(many) == sessions(one)


def test_merge_sessions_matches_a_brute_force_union_on_random_windows():
    """merge_sessions agrees with merging pairs until nothing touches, on random windows."""
    rng = random.Random(5)
    for _ in range(200):
        windows = [(s, s + rng.randint(1, 5)) for s in (rng.randint(0, 30) for _ in range(rng.randint(0, 8)))]
        naive = list(windows)
        merged_any = True
        while merged_any:
            merged_any = False
            for i in range(len(naive)):
                for j in range(i + 1, len(naive)):
                    if touches(naive[i], naive[j]):
                        a, b = naive[i], naive.pop(j)
                        naive[i] = (min(a[0], b[0]), max(a[1], b[1]))
                        merged_any = True
                        break
                if merged_any:
                    break
        assert merge_sessions(windows) == sorted(naive)


def test_the_operator_doctest_shape_is_one_accumulator_list_per_session():
    """State is {key: [(start, end, (accumulators,)), ...]} sorted by start, one entry per session; a
    checkpoint splits it by key group as {key: {(start, end): (accumulators,)}}, sharing the state's tuples, or
    with lists of its own when it copies."""
    sessions = SessionWindowAggregate(("key",), Session(10_000), {"count": Count()})
    ctx = StepContext.for_testing(output_mode="append")
    sessions.open(ctx)
    sessions.on_batch_start(BatchInfo(0, watermark=0, late_watermark=0))
    sessions.process([("a", ev(0)), ("a", ev(30)), ("a", ev(5))], 0)
    assert sessions.windows.sessions == {"a": [(0, 15_000, (2,)), (30_000, 40_000, (1,))]}
    [(group, by_key)] = sessions.windows.by_key_group().items()
    assert group == key_group_of("a") and by_key == {"a": {(0, 15_000): (2,), (30_000, 40_000): (1,)}}
    [copied] = sessions.windows.by_key_group(copy=True).values()
    assert copied == {"a": {(0, 15_000): [2], (30_000, 40_000): [1]}}
