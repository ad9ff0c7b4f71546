"""A dataflow with several sinks runs as several Spark queries (``core/queries.py``): one per sink, each with its
own batches and watermark, but for sinks that share a stateful step (a side output of late rows, say). The same
flows against Spark, one compiled query per sink: ``tests/spark/test_compiler.py``."""

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling, run_microbatch
from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.queries import split_queries
from ministream.errors import PipelineError
from ministream.models.state_history import StateHistory


def row(second, key):
    return {"ts": second * 1000, "key": key, "value": 1.0}


SCRIPT = [[row(1, "a"), row(2, "b")], [row(20, "a")], [row(40, "a")], []]
"""b's only row is at 2 s: a watermark of b's rows alone stays at 2 s."""


def two_sinks(script=SCRIPT):
    """Windows of every row, and b's rows under their own watermark, each to its own sink."""
    flow = Dataflow("two-sinks")
    events = flow.source("events", ScriptedSource(script))
    events.with_watermark("wm", "ts", 0).key_by("key").window("counts", Tumbling("5 seconds"), n=Count()).sink(
        "output", CollectingSink()
    )
    events.filter("only_b", lambda r: r["key"] == "b", columns="key").with_watermark("b_wm", "ts", 0).key_by(
        "key"
    ).window("b_counts", Tumbling("5 seconds"), n=Count()).sink("b_output", CollectingSink())
    return flow


def one_sink():
    flow = Dataflow("one-sink")
    flow.source("events", ScriptedSource(SCRIPT)).with_watermark("wm", "ts", 0).key_by("key").window(
        "counts", Tumbling("5 seconds"), n=Count()
    ).sink("output", CollectingSink())
    return flow


def batches(run, sink):
    return [(b.batch_id, b.watermark, sorted((r["key"], r["window_start"]) for r in b.rows)) for b in run.output(sink)]


def test_a_second_sink_does_not_hold_back_the_first():
    """Each sink gets what its own query gives alone: the windows of ``output`` come out as the watermark of every
    row passes them, though b's watermark stays at 2 s; ``b_output`` waits for b's watermark, which never
    passes 5 s."""
    run = run_microbatch(two_sinks(), output_mode="append")
    alone = run_microbatch(one_sink(), output_mode="append")
    assert (
        batches(run, "output")
        == batches(alone, "output")
        == [
            (0, 0, []),
            (1, 2000, []),
            (2, 20000, [("a", 0), ("b", 0)]),
            (3, 40000, [("a", 20000)]),
        ]
    )
    assert batches(run, "b_output") == [(0, 0, []), (1, 2000, []), (2, 2000, []), (3, 2000, [])]
    assert [query.outputs.keys() for query in run.queries] == [{"output": 0}.keys(), {"b_output": 0}.keys()]
    assert run.query("b_output").watermarks == [0, 2000, 2000, 2000] and run.watermarks == [0, 2000, 20000, 40000]


def test_sinks_that_share_a_stateful_step_are_one_query():
    """A window's own sink and the sink of its late rows (a side output, which only one run can have) are one
    query, as are two sinks after one window; two sinks with no stateful step in common are two."""
    flow = Dataflow("late")
    windows = (
        flow.source("events", ScriptedSource([]))
        .with_watermark("wm", "ts", 0)
        .key_by("key")
        .window("counts", Tumbling("5 seconds"), late_rows="late", n=Count())
    )
    windows.sink("output", CollectingSink())
    windows.side_output("late").sink("late", CollectingSink())
    windows.filter("big", lambda r: r["n"] > 1, columns="n").sink("big_windows", CollectingSink())
    assert split_queries(flow) == [flow]
    assert [[step.name for step in query.sinks] for query in split_queries(two_sinks())] == [["output"], ["b_output"]]


def test_late_rows_come_from_every_query():
    """``Run.late_rows()`` lists the rows each query's watermark kept out: in batch 3, b at 1 s is late for the
    windows of every row (their window of 0 s ended before the watermark of 20 s) and not for b's own windows
    (b's watermark is 2 s), which count it."""
    script = [[row(1, "a"), row(2, "b")], [row(20, "a")], [row(21, "a")], [row(1, "a"), row(1, "b")]]
    run = run_microbatch(two_sinks(script), output_mode="append")
    assert sorted((late.step, late.row["key"]) for late in run.late_rows()) == [("counts", "a"), ("counts", "b")]
    assert run.query("b_output").late_rows() == []


def test_a_checkpoint_location_belongs_to_one_query():
    """Spark keeps one checkpoint per query: a run of several queries with one checkpoint location is refused,
    in one line naming the sinks."""
    with pytest.raises(PipelineError) as caught:
        run_microbatch(two_sinks(), output_mode="append", checkpoints=MicroBatchCheckpoints(MemoryStorage()))
    message = str(caught.value)
    assert message.startswith("dataflow 'two-sinks' runs as 2 queries, one per sink (output, b_output)")
    assert "\n" not in message


def test_the_state_history_keeps_every_querys_state_after_each_batch():
    """``after_batch`` runs after each query's batches: a ``StateHistory`` keeps the state of both queries'
    windows under each batch id (the second query's state joins the first's, it does not replace it)."""
    history = StateHistory()
    run_microbatch(two_sinks(), output_mode="append", after_batch=history)
    assert set(history.batches[0]) == {"counts", "b_counts"}
    assert list(history.batches[0]["b_counts"]["windows"]) == ["b"]
    assert sorted(history.batches[0]["counts"]["windows"]) == ["a", "b"]
