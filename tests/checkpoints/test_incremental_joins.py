"""Incremental checkpoints of the stream-stream join and of deduplication: once a full checkpoint is taken, a
delta holds the keys whose state changed since, and nothing else."""

from ministream.checkpoints.incremental import snapshot_operator
from ministream.core.operator import BatchInfo, StepContext
from ministream.operators.dedup import Deduplicate
from ministream.operators.stream_join import JoinSide, StreamJoin, TimeRange
from ministream.state.changes import apply_delta


def written(delta, table: str) -> tuple[dict, list]:
    """A delta's entries of one table, ``{key: value}``, and its removed keys, sorted."""
    updated = {key: value for states in delta.updated.values() for key, value in states.get(table, {}).items()}
    removed = sorted(key for states in delta.removed.values() for key in states.get(table, []))
    return updated, removed


def run_batch(op, batch_id: int, watermark: int, *inputs) -> None:
    """One micro-batch: ``inputs[i]`` are the ``(key, row)`` pairs of input ``i``."""
    batch = BatchInfo(batch_id, watermark=watermark, late_watermark=0)
    op.on_batch_start(batch)
    for index, pairs in enumerate(inputs):
        op.process(pairs, index)
    op.on_batch_end(batch)


def test_a_join_delta_holds_the_keys_stored_matched_or_evicted():
    """After a full checkpoint, a join's delta writes, per side, the keys that stored a row or whose stored
    row matched, and as removed the keys whose last row was evicted; a key that lost some rows is written with
    the rest; the full checkpoint plus the deltas is the state."""
    join = StreamJoin(
        "left_outer",
        TimeRange("t", "u", lower=0, upper=10),
        JoinSide("orders", "t", ("id", "t")),
        JoinSide("payments", "u", ("pid", "u")),
    )
    join.open(StepContext.for_testing())
    run_batch(join, 0, 0, [(f"k{i}", {"id": f"k{i}", "t": 100 + i}) for i in range(100)], [])
    full = snapshot_operator(join)["keyed"]  # the full checkpoint the deltas build on

    run_batch(
        join,
        1,
        0,
        [("k50", {"id": "k50", "t": 200})],
        [("k1", {"pid": "k1", "u": 105}), ("k2", {"pid": "k2", "u": 106})],
    )
    delta = snapshot_operator(join, delta=True)["keyed"]
    assert written(delta, "left") == (
        {
            "k1": [[{"id": "k1", "t": 101}], [True]],
            "k2": [[{"id": "k2", "t": 102}], [True]],
            "k50": [[{"id": "k50", "t": 150}, {"id": "k50", "t": 200}], [False, False]],
        },
        [],
    )
    assert written(delta, "right") == (
        {"k1": [[{"pid": "k1", "u": 105}], [True]], "k2": [[{"pid": "k2", "u": 106}], [True]]},
        [],
    )
    state = apply_delta(full, delta)

    run_batch(join, 2, 0, [], [])  # nothing happens: an empty delta
    assert snapshot_operator(join, delta=True)["keyed"].entries() == 0

    run_batch(join, 3, 161)  # left rows with t <= 161 - 10 - 1 leave (k0..k49, k50's first), right ones u <= 160
    delta = snapshot_operator(join, delta=True)["keyed"]
    assert written(delta, "left") == ({"k50": [[{"id": "k50", "t": 200}], [False]]}, sorted(f"k{i}" for i in range(50)))
    assert written(delta, "right") == ({}, ["k1", "k2"])
    assert apply_delta(state, delta) == join.ctx.state.snapshot()


def test_a_join_full_checkpoint_keeps_the_matched_flag_it_saw():
    """A stored row that matches after a full checkpoint changes in place; the checkpoint still holds it
    unmatched (the table is not copy on write, so the snapshot copied it)."""
    join = StreamJoin(
        "left_outer",
        TimeRange("t", "u", lower=0, upper=10),
        JoinSide("orders", "t", ("id", "t")),
        JoinSide("payments", "u", ("pid", "u")),
    )
    join.open(StepContext.for_testing())
    run_batch(join, 0, 0, [("k", {"id": "k", "t": 100})], [])
    full = snapshot_operator(join)["keyed"]
    run_batch(join, 1, 0, [], [("k", {"pid": "k", "u": 105})])
    assert [entries["left"]["k"] for entries in full.values()] == [[[{"id": "k", "t": 100}], [False]]]


def test_a_dedup_delta_holds_the_new_keys_and_the_forgotten_ones():
    """After a full checkpoint, deduplication's delta writes the k keys seen for the first time (a duplicate
    changes nothing) and, as removed, the keys the watermark let it forget."""
    dedup = Deduplicate(("id",), event_time="ts", key_has_event_time=False, within_delay=10)
    dedup.open(StepContext.for_testing())
    run_batch(dedup, 0, 0, [(f"e{i}", {"id": f"e{i}", "ts": 100 + i}) for i in range(100)])
    full = snapshot_operator(dedup)["keyed"]

    run_batch(
        dedup,
        1,
        0,
        [
            ("e1", {"id": "e1", "ts": 101}),
            ("n1", {"id": "n1", "ts": 300}),
            ("n2", {"id": "n2", "ts": 301}),
            ("n3", {"id": "n3", "ts": 302}),
        ],
    )
    delta = snapshot_operator(dedup, delta=True)["keyed"]
    assert written(delta, "seen") == ({"n1": 310, "n2": 311, "n3": 312}, [])
    state = apply_delta(full, delta)

    run_batch(dedup, 2, 115, [])  # keys with ts + 10 <= 115 are forgotten: e0..e5
    delta = snapshot_operator(dedup, delta=True)["keyed"]
    assert written(delta, "seen") == ({}, [f"e{i}" for i in range(6)])
    assert apply_delta(state, delta) == dedup.snapshot()["keyed"]  # the operator lays out its state for a snapshot
