"""Deduplication rules in the micro-batch model, one test per rule (Spark's StreamingDeduplicateExec and
StreamingDeduplicateWithinWatermarkExec; confirmed against Spark in tests/lessons/test_deduplication.py)."""

import pytest

from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
from ministream.errors import PipelineError

S = 1000


def E(t, event_id="e"):
    """One copy of event ``event_id`` at ``t`` ms."""
    return {"id": event_id, "ts": t}


def dedup(script, columns=("id",), within=False, delay=5 * S, watermark=True):
    """The batches of a deduplication of ``script``: ``[(batch id, watermark, [(id, ts), ...])]``."""
    flow = Dataflow("dedup")
    events = flow.source("events", ScriptedSource(script))
    if watermark:
        events = events.with_watermark("watermark", "ts", delay)
    events.drop_duplicates("dedup", list(columns), within_watermark=within).sink("output", CollectingSink())
    run = run_microbatch(flow, trace=True)
    return [(b.batch_id, b.watermark, [(r["id"], r["ts"]) for r in b.rows]) for b in run.output()], run.trace


def test_the_first_row_of_a_key_is_emitted_and_its_copies_dropped():
    """Within a batch and across batches, only the first row of a key comes out."""
    out, _ = dedup([[E(1 * S), E(2 * S)], [E(3 * S)]], watermark=False)
    assert out == [(0, None, [("e", 1000)]), (1, None, [])]


def test_late_rows_are_dropped_first_whatever_their_key():
    """A row with ts <= WM_{k-1} is dropped as late, even if its key was never seen."""
    out, trace = dedup([[E(20 * S, "a")], [], [E(15 * S, "b"), E(16 * S, "c")]])
    assert out[2] == (2, 15000, [("c", 16000)])
    assert [line.row["id"] for line in trace.of_kind("late")] == ["b"]


def test_keys_without_event_time_are_never_evicted():
    """dropDuplicates(id) with a watermark keeps every key forever: a copy much later is still a copy."""
    out, trace = dedup([[E(1 * S)], [E(100 * S, "x")], [E(200 * S)]])
    assert out[2][2] == []
    assert [s.state_sizes["dedup"] for s in trace.batches][-1] == 2


def test_keys_with_event_time_leave_when_it_is_at_or_before_the_watermark():
    """dropDuplicates(id, ts): a key leaves at the end of the first batch whose watermark is >= its ts."""
    _, trace = dedup([[E(10 * S)], [E(15 * S, "x")], []], columns=("id", "ts"))
    assert [s.state_sizes["dedup"] for s in trace.batches] == [1, 2, 1]  # WM 0, 5 s, 10 s: e@10 s leaves


def test_within_watermark_keys_expire_delay_after_their_first_row():
    """dropDuplicatesWithinWatermark: a key leaves once WM >= first ts + delay; a copy stamped later is then new."""
    out, _trace = dedup([[E(10 * S)], [E(30 * S, "x")], [E(40 * S)]], within=True, delay=5 * S)
    # WM_2 = 25 s >= 10 s + 5 s, but eviction comes at the end of batch 2, after the copy was checked
    assert out[2] == (2, 25000, [])
    out, _ = dedup([[E(10 * S)], [E(30 * S, "x")], [], [E(40 * S)]], within=True, delay=5 * S)
    assert out[3] == (3, 25000, [("e", 40000)])


def test_within_watermark_needs_a_watermark():
    """dropDuplicatesWithinWatermark without a watermark is refused, as in Spark."""
    with pytest.raises(PipelineError, match="within_watermark needs a watermark"):
        dedup([[E(1)]], within=True, watermark=False)


def test_a_no_data_batch_runs_when_the_watermark_moved():
    """Spark's dedup asks for a no-data batch after the last data batch whenever the watermark advanced."""
    out, _ = dedup([[E(10 * S)], [E(20 * S, "x")]])
    assert [(batch_id, wm) for batch_id, wm, _ in out] == [(0, 0), (1, 5000), (2, 15000)]
