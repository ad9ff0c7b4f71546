"""A dataflow with several sinks runs as several Spark queries (``core/queries.py``): one per sink, each with its
own batches, watermark and state, but for sinks that read a step's side output (late rows) or an operator of
your own. The same flows against Spark, one compiled query per sink: ``tests/spark/test_compiler.py``."""

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling, run_microbatch
from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.queries import split_queries
from ministream.errors import PipelineError
from ministream.models.state_history import StateHistory
from ministream.operators.buffered_writer import BufferedWriter


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


def test_the_sinks_of_a_step_with_a_side_output_are_one_query():
    """A window's own sink and the sink of its late rows (a side output, which only one run can have) are one
    query, and so is a third sink after the same window; so are two sinks after an operator of your own (its
    effects happen once); two sinks with no such step in common are two."""
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
    flow = Dataflow("writer")
    writes = (
        flow.source("events", ScriptedSource([]))
        .key_by("key")
        .operator_step("writer", "buffered_writer", lambda: BufferedWriter(2, id_column="key"))
    )
    writes.sink("writes", CollectingSink())
    writes.filter("full", lambda r: r["rows"] == 2, columns="rows").sink("full_writes", CollectingSink())
    assert split_queries(flow) == [flow]


LEFT = [[row(1, "a"), row(2, "b")], [row(20, "a")], [row(40, "a")], []]
RIGHT = [[row(1, "a")], [], [], []]
"""The right input has one row, at 1 s: under a delay of 10 s its watermark stays at 0."""


def join_the_right(flow: Dataflow, firsts, right) -> None:
    """Join ``firsts`` with a second input, ``right`` (its columns renamed ``r_key`` and ``r_ts``, its watermark
    10 s behind), into the sink ``joined``."""
    rights = (
        flow.source("right", ScriptedSource(right))
        .select("r", r_key="key", r_ts="ts")
        .with_watermark("r_wm", "r_ts", "10 seconds")
    )
    firsts.key_by("key").join("joined_rows", rights.key_by("r_key"), how="inner").sink("joined", CollectingSink())


def shared_deduplication(left=LEFT, right=RIGHT, join: bool = True) -> Dataflow:
    """The first row of each key of ``left``, to two sinks: its windows (``output``), and its inner join with
    ``right`` (``joined``), whose watermark is 10 s behind."""
    flow = Dataflow("shared-deduplication")
    firsts = flow.source("left", ScriptedSource(left)).with_watermark("wm", "ts", 0).drop_duplicates("firsts", "key")
    firsts.key_by("key").window("counts", Tumbling("5 seconds"), n=Count()).sink("output", CollectingSink())
    if join:
        join_the_right(flow, firsts, right)
    return flow


def shared_within(left=LEFT, right=RIGHT) -> Dataflow:
    """The first row of each key of ``left`` within the watermark, to two sinks: as it comes (``output``), and
    joined with ``right`` (``joined``), whose watermark is 10 s behind."""
    flow = Dataflow("shared-within")
    firsts = (
        flow.source("left", ScriptedSource(left))
        .with_watermark("wm", "ts", 0)
        .drop_duplicates("firsts", "key", within_watermark=True)
    )
    firsts.sink("output", CollectingSink())
    join_the_right(flow, firsts, right)
    return flow


def test_sinks_that_share_a_stateful_step_are_queries_of_their_own_each_with_its_state():
    """Two sinks after one deduplication, with no side output between them, are two queries, as two
    ``writeStream`` of one Spark DataFrame are: each runs the deduplication with state of its own, under its own
    watermark. The windows' query has the left watermark alone, and closes a's and b's first window in batch 2
    (at 20 s) as the flow without the join does; in one query with the join, the right side's watermark (0 s,
    under the lower of both) would hold them back for ever."""
    queries = split_queries(shared_deduplication())
    assert [[step.name for step in query.steps] for query in queries] == [
        ["left", "wm", "firsts", "counts", "output"],
        ["left", "wm", "firsts", "right", "r", "r_wm", "joined_rows", "joined"],
    ]
    run = run_microbatch(shared_deduplication(), output_mode="append")
    alone = run_microbatch(shared_deduplication(join=False), output_mode="append")
    assert batches(run, "output") == batches(alone, "output")
    assert batches(run, "output")[2] == (2, 20_000, [("a", 0), ("b", 0)])
    assert run.query("joined").watermarks == [0, 0, 0, 0]
    assert [[(r["key"], r["r_ts"]) for r in batch.rows] for batch in run.output("joined")] == [
        [("a", 1_000)],
        [],
        [],
        [],
    ]


def test_late_rows_come_from_every_query():
    """``Run.late_rows()`` lists the rows each query's watermark kept out: in batch 3, b at 1 s is late for the
    windows of every row (their window of 0 s ended before the watermark of 20 s) and not for b's own windows
    (b's watermark is 2 s), which count it."""
    script = [[row(1, "a"), row(2, "b")], [row(20, "a")], [row(21, "a")], [row(1, "a"), row(1, "b")]]
    run = run_microbatch(two_sinks(script), output_mode="append")
    assert sorted((late.query, late.step, late.row["key"]) for late in run.late_rows()) == [
        ("output", "counts", "a"),
        ("output", "counts", "b"),
    ]
    assert run.query("b_output").late_rows() == []


def test_a_step_in_two_queries_drops_late_rows_under_each_querys_watermark():
    """A deduplication within the watermark that feeds two sinks runs in both queries: in batch 3, c at 5 s
    is late for both, e at 15 s only for the query of ``output``, whose watermark (the left input's alone, 20 s
    in batch 2) is ahead of the join's (the lower of both, 10 s); ``LateRow.query`` says which query dropped
    it."""
    left = [[row(1, "a"), row(2, "b")], [row(20, "a")], [row(40, "a")], [row(5, "c"), row(15, "e")]]
    right = [[row(1, "a")], [row(20, "z")], [], []]  # its watermark: 10 s from batch 2 on
    run = run_microbatch(shared_within(left, right), output_mode="append")
    assert run.watermarks[2] == 20_000 and run.query("joined").watermarks[2] == 10_000
    assert sorted((late.query, late.batch_id, late.row["key"], late.watermark) for late in run.late_rows()) == [
        ("joined", 3, "c", 10_000),
        ("output", 3, "c", 20_000),
        ("output", 3, "e", 20_000),
    ]
    assert [late.query for late in run.query("joined").late_rows()] == [None]  # one query's run names none


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


def test_a_step_in_two_queries_shows_the_state_of_each():
    """A deduplication within the watermark that feeds two sinks runs in both queries, and forgets its keys as
    each query's own watermark passes them: after batch 2 the query of ``output`` (left watermark, 20 s) keeps only
    a's row at 40 s, the join's (right watermark 0 s, under the lower of both) still a and b's first rows. The
    ``StateHistory`` keeps both, the second named after its query's sink; the same state would be kept once."""
    history = StateHistory()
    run_microbatch(shared_within(), output_mode="append", after_batch=history)
    assert history.batches[2]["firsts"] == {"seen": {"a": 40_000}}
    assert history.batches[2]["firsts (in the query of 'joined')"] == {"seen": {"a": 1_000, "b": 2_000}}
    assert [name for name in history.batches[0] if name.startswith("firsts")] == ["firsts"]
