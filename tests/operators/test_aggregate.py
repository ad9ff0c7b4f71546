"""The running aggregate (ministream/operators/aggregate.py): a global aggregate, with no key, has its one row in
every batch, in update mode as in complete mode, before its first row too (the aggregates of nothing); its
accumulator lists are copied on write only while a checkpoint reads its marks, and a checkpoint or a restored
snapshot keeps its values while the state changes."""

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum, run_microbatch
from ministream.checkpoints.incremental import snapshot_operator
from ministream.core.compare import compare_batches
from ministream.core.operator import StepContext
from ministream.lessons.lesson import BASE_TIME, Lesson, Param
from ministream.operators.aggregate import RunningAggregate
from ministream.state.keygroups import key_group_of

SCRIPT = [[], [{"ts": BASE_TIME + 2_000, "value": 1.0}], [], [{"ts": BASE_TIME + 1_000, "value": 2.0}], []]
EXPECTED = [
    [{"count": 0, "sum": None}],
    [{"count": 1, "sum": 1.0}],
    [{"count": 1, "sum": 1.0}],
    [{"count": 2, "sum": 3.0}],
    [{"count": 2, "sum": 3.0}],
]


def pipeline(script, params):
    flow = Dataflow("global")
    events = flow.source("events", ScriptedSource(script))
    if params.get("delay") is not None:
        events = events.with_watermark("watermark", "ts", params["delay"])
    events.aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return flow


@pytest.mark.parametrize("mode", ["update", "complete"])
@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_global_aggregate_emits_its_row_in_every_batch(mode, parallelism):
    """Update mode emits a global aggregate's row in a batch without rows too, as complete mode does, and the
    batch before the first row emits count 0 and a null sum; one row whatever the parallelism."""
    output = run_microbatch(pipeline(SCRIPT, {}), output_mode=mode, parallelism=parallelism).output()
    assert [batch.rows for batch in output] == EXPECTED


def test_a_keyed_aggregate_still_emits_only_the_keys_a_batch_touched():
    """With a key, update mode emits only the keys of the batch's rows: a batch without rows emits nothing."""
    flow = Dataflow("keyed")
    flow.source("events", ScriptedSource([[{"key": "a"}], []])).key_by("key").aggregate("counts", count=Count()).sink(
        "output", CollectingSink()
    )
    assert [batch.rows for batch in run_microbatch(flow, output_mode="update").output()] == [
        [{"key": "a", "count": 1}],
        [],
    ]


def twin(inputs, params):
    from pyspark.sql import functions as F

    events = inputs["events"]
    if params.get("delay") is not None:
        events = events.withWatermark("ts", f"{params['delay']} milliseconds")
    return events.agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


@pytest.mark.spark
@pytest.mark.parametrize("delay", [None, 0], ids=["no-watermark", "watermark"])
def test_spark_emits_a_global_aggregate_in_every_batch_of_update_mode(delay):
    """Spark's update mode on a global aggregate: a row in every batch, data or no-data, and count 0 / null sum
    before the first row; ministream gives the same batches."""
    from ministream.core.events import Field

    delay_param = Param("delay", None, "the watermark's delay in ms (None: no watermark)", kind="int")
    lesson = Lesson(
        "global-aggregate", "", pipeline, twin, [Field("value", float)], SCRIPT, [delay_param], output_mode="update"
    )
    params = {"delay": delay}
    theirs = lesson.run_twin(SCRIPT, params)
    assert [batch.rows for batch in theirs] == EXPECTED
    assert compare_batches(lesson.run(SCRIPT, params).output(), theirs).matches


def _counts() -> RunningAggregate:
    """A running count per key, opened on a context of its own."""
    counts = RunningAggregate(("key",), {"count": Count()})
    counts.open(StepContext.for_testing(output_mode="update"))
    return counts


def test_no_mark_and_no_copy_while_nothing_reads_them():
    """Before any checkpoint, nothing reads the aggregate's marks: no key is marked, and a key's accumulator
    list is the same object batch after batch (changed in place, not copied)."""
    counts = _counts()
    counts.process([("a", {}), ("b", {})], 0)
    first = counts.groups[key_group_of("a")]["a"]
    counts.process([("a", {})], 0)
    assert counts.groups[key_group_of("a")]["a"] is first and first == [2]
    assert counts.changed == {}


@pytest.mark.parametrize("sharing", [False, True])
def test_a_checkpoint_keeps_its_values_while_the_state_changes(sharing):
    """A full checkpoint shares the lists with the state (copy on write): the lists changed after it are copies,
    so the checkpoint keeps the values of its moment, and the next delta holds only the keys changed since."""
    counts = _counts()
    counts.process([("a", {}), ("b", {}), ("a", {})], 0)
    full = snapshot_operator(counts, sharing=sharing)
    counts.process([("a", {}), ("c", {})], 0)
    delta = snapshot_operator(counts, delta=True, sharing=sharing)
    counts.process([("a", {})], 0)
    assert full == {"keyed": {57: {"aggregate": {"b": [1]}}, 122: {"aggregate": {"a": [2]}}}}
    assert delta["keyed"].updated == {120: {"aggregate": {"c": [1]}}, 122: {"aggregate": {"a": [3]}}}
    assert counts.groups[key_group_of("a")]["a"] == [4]


def test_a_restore_leaves_the_snapshot_it_read_unchanged():
    """A restored aggregate changes its lists in place until its next checkpoint: it copies them at the
    restore, so the snapshot it read (which may be restored again) keeps its values."""
    snapshot = {"keyed": {122: {"aggregate": {"a": [2]}}}}
    counts = _counts()
    counts.restore(snapshot)
    counts.process([("a", {})], 0)
    counts.on_batch_end(None)
    assert counts.ctx.emitted == [{"key": "a", "count": 3}]
    assert snapshot == {"keyed": {122: {"aggregate": {"a": [2]}}}}
