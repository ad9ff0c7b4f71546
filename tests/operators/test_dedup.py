"""Deduplication rules in the micro-batch model, one test per rule (Spark's StreamingDeduplicateExec and
StreamingDeduplicateWithinWatermarkExec; confirmed against Spark in tests/lessons/test_deduplication.py)."""

import random

import pytest

from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
from ministream.core.operator import BatchInfo, StepContext
from ministream.errors import PipelineError
from ministream.operators.dedup import Deduplicate
from ministream.operators.seen_keys import SeenBySecond, SeenKeys

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


# Spark prunes a column that nothing at or after the deduplication reads (core/pruning.py): dropDuplicates(id)
# followed by a select without ts loses ts below the deduplication, and with it the late-row filter.
PRUNED_SCRIPT = [[E(10 * S, "a")], [], [E(5 * S, "b")]]  # WM_1 = 10 s: b at 5 s is late in batch 2
PRUNED_SELECTS = {"id": ["a", "b"], "id, ts": ["a"]}  # the columns kept after it: the ids it emits


def pruned_dedup(columns: str):
    flow = Dataflow("pruned")
    events = flow.source("events", ScriptedSource(PRUNED_SCRIPT)).with_watermark("watermark", "ts", 0)
    kept = {column: column for column in columns.split(", ")}
    events.drop_duplicates("dedup", ["id"]).select("kept", **kept).sink("output", CollectingSink())
    return flow


@pytest.mark.parametrize("columns", sorted(PRUNED_SELECTS))
def test_a_deduplication_whose_event_time_nothing_reads_drops_no_late_row(columns):
    """b at 5 s is at or before WM_1 = 10 s: late when ts is kept after the deduplication, emitted when it is
    not (Spark prunes ts below dropDuplicates(id), which then sees no watermarked column)."""
    run = run_microbatch(pruned_dedup(columns), trace=True)
    assert [row["id"] for batch in run.output() for row in batch.rows] == PRUNED_SELECTS[columns]
    assert [line.row["id"] for line in run.trace.of_kind("late")] == ([] if columns == "id" else ["b"])
    assert [line.row["id"] for line in run.trace.of_kind("not late")] == (["b"] if columns == "id" else [])


@pytest.mark.spark
@pytest.mark.parametrize("columns", sorted(PRUNED_SELECTS))
def test_a_pruned_event_time_matches_spark(columns):
    """The flows of test_a_deduplication_whose_event_time_nothing_reads_drops_no_late_row, in Spark: the same
    rows, batch for batch."""
    from ministream.core.compare import compare_batches
    from ministream.spark import run_query, scripted_stream, spark_session

    events = scripted_stream(spark_session(), "id STRING, ts TIMESTAMP", PRUNED_SCRIPT).withWatermark("ts", "0 seconds")
    twin = events.dropDuplicates(["id"]).select(*columns.split(", "))
    result = compare_batches(run_microbatch(pruned_dedup(columns)).output(), run_query(twin, "append"))
    assert result.matches, result.table()


@pytest.mark.parametrize("within", [False, True])
def test_keys_by_second_give_the_rows_and_evictions_of_one_flat_dict(within):
    """A key that holds the event time is kept in the table of its expiry's second (seen_keys.SeenBySecond):
    over 30 random batches (copies, disorder across second boundaries, late rows, watermarks inside and on the
    edge of a second), it emits the same rows and forgets the same keys, in the micro-batch and the continuous
    model, as the same deduplication with every key in one flat dict (seen_keys.SeenKeys), and marks the same
    keys changed for a checkpoint."""
    rng = random.Random(11)
    batches = [
        [(f"k{rng.randrange(5)}", batch * 700 + 50 * rng.randrange(-8, 14)) for _ in range(rng.randrange(40))]
        for batch in range(30)
    ]
    watermarks = [k * 700 - rng.choice([0, 1, 299]) for k in range(30)]  # inside a second, or on its edge
    results = []
    for seen in (None, SeenKeys):
        for model in ("microbatch", "continuous"):
            operator = Deduplicate(("id", "ts"), "ts", key_has_event_time=True, within_delay=300 if within else None)
            ctx = StepContext.for_testing(model=model)
            operator.open(ctx)
            if seen is not None:
                operator.seen = seen()
            assert isinstance(operator.seen, SeenBySecond if seen is None else SeenKeys)
            ctx.state.checkpointing = "full"
            ctx.state.snapshot()  # a checkpoint was taken: the keys stored and forgotten are marked from now on
            forgotten = []
            operator._mark = forgotten.append  # the keys each store and each eviction marks
            for k, rows in enumerate(batches):
                watermark, late = watermarks[k], watermarks[k - 1] if k else 0
                operator.on_batch_start(BatchInfo(k, watermark=watermark, late_watermark=late))
                operator.process([((i, t), {"id": i, "ts": t}) for i, t in rows], 0)
                if model == "continuous":
                    operator.on_watermark(watermark)
                else:
                    operator.on_batch_end(BatchInfo(k, watermark=watermark, late_watermark=late))
            results.append((model, ctx.emitted, [sorted(keys) for keys in forgotten]))
    assert results[:2] == results[2:]
