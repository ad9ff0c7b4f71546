"""Incremental checkpoints: a full checkpoint plus deltas restores the same state as a full checkpoint, a delta
costs what changed, and a damaged delta or base is recognized."""

import random

import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource
from ministream.checkpoints.coordinator import Checkpoint, load_checkpoint, load_latest
from ministream.checkpoints.incremental import snapshot_operator
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.restore import restore_graph
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.physical import PhysicalGraph, Scheduler
from ministream.lessons import get_lesson
from ministream.lessons.crash_checks import (
    recovered_outputs,
    run_lesson_with_recovery,
    same_output,
)
from ministream.operators.planner import physical_graph
from ministream.state.changes import StateDelta, apply_delta, checkpoint_snapshot
from ministream.state.keyed import KeyedStateBackend, ListState, MapState, ValueState
from ministream.state.keygroups import key_group_of
from ministream.state.ttl import TtlValueState
from tests.checkpoints.test_recovery import CASES, PER_SUBTASK_OUTPUT, SETTINGS


def _deltas(storage) -> list[int]:
    """The ids of the incremental checkpoints in a storage."""
    return [n for n in storage.checkpoint_ids() if Checkpoint.from_files(storage.files[n]).base is not None]


@pytest.mark.parametrize("name, model, rows", CASES)
def test_snapshot_plus_deltas_restores_what_a_full_checkpoint_restores(name, model, rows):
    """Crashed at the same point with the same settings, a run with incremental checkpoints stores, for every
    checkpoint id, the state a run with full checkpoints stores (once its deltas are applied to the full
    checkpoint they are built on), and recovers to the failure-free output."""
    lesson = get_lesson(name)
    settings = dict(random.Random(f"{name}/{model}/{rows}").choice(SETTINGS))
    if model == "microbatch":
        settings.pop("mode", None), settings.pop("interval", None)
    if name in PER_SUBTASK_OUTPUT:
        settings.pop("restore_parallelism", None)
    full, incremental = MemoryStorage(), MemoryStorage()
    run_lesson_with_recovery(lesson, crash_after_rows=rows, model=model, storage=full, **settings)
    run = run_lesson_with_recovery(
        lesson, crash_after_rows=rows, model=model, storage=incremental, incremental=2, **settings
    )
    assert incremental.checkpoint_ids() == full.checkpoint_ids()
    for checkpoint_id in full.checkpoint_ids():
        assert load_checkpoint(incremental, checkpoint_id) == load_checkpoint(full, checkpoint_id), checkpoint_id
    if len(full.checkpoint_ids()) > 2:
        assert _deltas(incremental)
    expected = recovered_outputs(lesson, run, model=model, parallelism=settings.get("parallelism", 1))
    assert any(same_output(model, run.output(), output) for output in expected)


def test_removed_keys_stay_removed():
    """A key removed after the full checkpoint is listed as removed in the delta, and a restore from the full
    checkpoint plus the delta does not bring it back."""
    backend = KeyedStateBackend()
    last = ValueState(backend, "last")
    for key in ("a", "b", "c"):
        backend.set_current_key(key)
        last.update(1)
    storage = MemoryStorage()
    full = Checkpoint(1, "microbatch", "aligned", 1, operators={"s": {0: {"keyed": checkpoint_snapshot(backend)}}})
    storage.save_files(1, full.files())
    backend.set_current_key("b")
    last.clear()
    delta = checkpoint_snapshot(backend, delta=True)
    assert delta.removed and delta.updated == {}
    storage.save_files(
        2, Checkpoint(2, "microbatch", "aligned", 1, base=1, operators={"s": {0: {"keyed": delta}}}).files(), base=1
    )
    restored = KeyedStateBackend()
    restored.restore(load_latest(storage).operators["s"][0]["keyed"])
    assert sorted(restored.keys("last")) == ["a", "c"]


def test_a_lesson_with_removals_restores_without_them():
    """device-sessions removes closed sessions from its map state: its deltas list removed keys, and every
    checkpoint restores what the full run's does."""
    lesson = get_lesson("device-sessions")
    full, incremental = MemoryStorage(), MemoryStorage()
    run_lesson_with_recovery(lesson, crash_after_rows=None, model="continuous", interval=1, storage=full)
    run_lesson_with_recovery(
        lesson, crash_after_rows=None, model="continuous", interval=1, storage=incremental, incremental=3
    )
    removed = [
        n
        for n in _deltas(incremental)
        if Checkpoint.from_files(incremental.files[n]).operators["sessions"][0]["keyed"].removed
    ]
    assert removed
    for checkpoint_id in full.checkpoint_ids():
        assert load_checkpoint(incremental, checkpoint_id) == load_checkpoint(full, checkpoint_id)


def _incremental_storage():
    """A running-aggregation run with checkpoints 0 (full), 1 and 2 (deltas on 0 and on 1)."""
    lesson = get_lesson("running-aggregation")
    storage = MemoryStorage()
    run_with_recovery(
        lesson.pipeline(lesson.default_script, lesson.resolve_params()),
        output_mode="update",
        storage=storage,
        incremental=5,
    )
    assert _deltas(storage) == [1, 2]
    return storage


def test_a_corrupt_delta_is_skipped_and_reported():
    """A delta file whose sha256 differs from the manifest's makes its checkpoint corrupt: the previous one is
    restored, and the problem names the file."""
    storage = _incremental_storage()
    storage.files[2]["state/totals/0.delta.json"] += b" "
    assert load_latest(storage).checkpoint_id == 1
    assert [str(p) for p in storage.problems] == [
        "checkpoint 2 skipped: chk-2/state/totals/0.delta.json is corrupt (its sha256 differs from the manifest's)"
    ]


def test_a_torn_delta_is_skipped():
    """A delta checkpoint without its manifest is torn, like any other."""
    storage = _incremental_storage()
    del storage.files[2]["manifest.json"]
    assert load_latest(storage).checkpoint_id == 1


def test_deltas_on_a_corrupt_base_are_skipped_and_say_why():
    """When the full checkpoint under a chain is corrupt, every delta built on it is skipped too, each naming
    the damaged file, and recovery starts from the beginning."""
    storage = _incremental_storage()
    storage.files[0]["state/totals/0.json"] += b" "
    assert load_latest(storage) is None
    assert [str(p) for p in storage.problems] == [
        f"checkpoint {n} skipped: chk-0/state/totals/0.json is corrupt (its sha256 differs from the manifest's), "
        f"and checkpoint {n} is incremental: it needs checkpoint 0 whole"
        for n in (2, 1)
    ] + ["checkpoint 0 skipped: chk-0/state/totals/0.json is corrupt (its sha256 differs from the manifest's)"]


def test_a_base_stored_again_breaks_the_chain():
    """A checkpoint stored again under its id (a rerun batch) is not the base its deltas were built on: they
    are skipped."""
    storage = _incremental_storage()
    files = {path: data for path, data in storage.files[1].items() if path != "manifest.json"}
    files["checkpoint.json"] = files["checkpoint.json"].replace(b'"model":', b'"model" :', 1)
    storage.save_files(1, files, base=0)
    assert load_latest(storage).checkpoint_id == 1
    assert "is not the one checkpoint 2 was built on (checkpoint 1 was stored again since)" in str(storage.problems[0])


def test_retention_keeps_the_checkpoints_deltas_are_built_on():
    """``retain=1`` keeps the newest checkpoint and the chain under it; a new full checkpoint frees the old
    chain."""
    lesson = get_lesson("tumbling-window")
    storage = MemoryStorage(retain=1)
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    run_with_recovery(flow, model="continuous", interval=1, storage=storage, incremental=3)
    ids = storage.checkpoint_ids()
    chain = [n for n, _ in storage.latest_chain()]
    assert sorted(chain) == ids and Checkpoint.from_files(storage.files[ids[0]]).base is None
    assert load_latest(storage) is not None


def _counts_graph(keys: int) -> PhysicalGraph:
    """A running count of ``keys`` keys (``key-00000``...) after one batch."""
    script = [[{"key": f"key-{i:05}"} for i in range(keys)]]
    flow = Dataflow("counts")
    flow.source("events", ScriptedSource(script)).key_by("key").aggregate("counts", count=Count()).sink(
        "output", CollectingSink()
    )
    graph = physical_graph(flow, 1, output_mode="update")
    _send(graph, script[0])
    return graph


def _send(graph: PhysicalGraph, rows: list[dict]) -> None:
    """Rows from the source, through the count, to the sink."""
    graph.by_step["events"][0].output.send(rows)
    Scheduler(graph).run_until_idle()


def _delta_file(graph) -> tuple[StateDelta, int]:
    """The delta of the count step and the bytes of its file."""
    delta = snapshot_operator(graph.by_step["counts"][0].operator, delta=True)
    files = Checkpoint(1, "microbatch", "aligned", 1, base=0, operators={"counts": {0: delta}}).files()
    return delta["keyed"], len(files["state/counts/0.delta.json"])


def test_a_delta_costs_what_changed_not_the_size_of_the_state():
    """After a full snapshot, changing k of N keys gives a delta of exactly k entries, whose file has the same
    bytes whatever N is, about 19 per key plus the head of a line per key group it touches."""
    sizes = {}
    for keys in (1_000, 10_000):
        graph = _counts_graph(keys)
        snapshot_operator(graph.by_step["counts"][0].operator)  # the full checkpoint
        for k in (10, 100, 1_000):
            _send(graph, [{"key": f"key-{i:05}"} for i in range(k)])
            delta, sizes[keys, k] = _delta_file(graph)
            assert delta.entries() == k
    for k in (10, 100, 1_000):
        assert sizes[1_000, k] == sizes[10_000, k]
        assert 15 * k <= sizes[10_000, k] <= 25 * k + 30 * min(k, 128) + 300, (k, sizes[10_000, k])


def test_a_copy_on_write_snapshot_does_not_change_when_the_state_does():
    """A snapshot shares the aggregate's accumulator lists, and so does a restore from it; the operator copies
    a list before it changes it, so the snapshot keeps the values it was taken with."""

    def counts(snapshot_or_operator) -> dict:
        groups = (
            snapshot_or_operator.groups.values()
            if hasattr(snapshot_or_operator, "groups")
            else [states["aggregate"] for states in snapshot_or_operator["keyed"].values()]
        )
        return {key: accumulators[0] for group in groups for key, accumulators in group.items()}

    graph = _counts_graph(3)
    snapshot = snapshot_operator(graph.by_step["counts"][0].operator)
    _send(graph, [{"key": "key-00000"}, {"key": "key-00000"}])
    restored = physical_graph(graph.flow, 1, output_mode="update")
    restore_graph(restored, Checkpoint(0, "microbatch", "aligned", 1, operators={"counts": {0: snapshot}}))
    _send(restored, [{"key": "key-00001"}])
    assert counts(snapshot) == {"key-00000": 1, "key-00001": 1, "key-00002": 1}
    assert counts(graph.by_step["counts"][0].operator) == {"key-00000": 3, "key-00001": 1, "key-00002": 1}
    assert counts(restored.by_step["counts"][0].operator) == {"key-00000": 1, "key-00001": 2, "key-00002": 1}


def test_primitives_mark_changes_made_in_place():
    """Appending to a list state, putting into a map state, and reading a mutable value (which the caller may
    change) all mark the key; reading a number does not."""
    backend = KeyedStateBackend()
    seen, sessions, count = ListState(backend, "seen"), MapState(backend, "sessions"), ValueState(backend, "n")
    box = ValueState(backend, "box")
    for key in ("a", "b", "c", "d"):
        backend.set_current_key(key)
        seen.add(1), sessions.put("s", 1), count.update(1), box.update({"x": 1})
    checkpoint_snapshot(backend)
    backend.set_current_key("a")
    seen.add(2)
    backend.set_current_key("b")
    sessions.put("t", 2)
    backend.set_current_key("c")
    count.value()
    backend.set_current_key("d")
    box.value()["x"] = 2
    delta = checkpoint_snapshot(backend, delta=True)
    changed = {(name, key) for states in delta.updated.values() for name, entries in states.items() for key in entries}
    assert changed == {("seen", "a"), ("sessions", "b"), ("box", "d")}


def test_a_table_whose_writer_does_not_mark_is_written_whole():
    """A TTL state's cleanup deletes entries itself: its table is not tracked, and every delta holds it whole
    (so a key the cleanup removed is gone after a restore)."""
    backend, now = KeyedStateBackend(), [0]
    score = TtlValueState(backend, "score", ttl=10, now=lambda: now[0])
    for key in ("a", "b"):
        backend.set_current_key(key)
        score.update(1)
    base = checkpoint_snapshot(backend)
    now[0] = 5
    backend.set_current_key("a")
    score.update(2)
    now[0] = 12
    score.remove_expired(12)  # b expired at 10; a lives until 15
    delta = checkpoint_snapshot(backend, delta=True)
    assert "score" not in delta.tracked
    assert apply_delta(base, delta) == {key_group_of("a"): {"score": {"a": (2, 15)}}}


def _continuous_join(**settings):
    """A continuous-model join step (interval join; window join with ``key_time``), opened on a context."""
    from ministream.core.operator import StepContext
    from ministream.operators.interval_join import ContinuousJoin
    from ministream.operators.stream_join import JoinSide, TimeRange

    between = None if settings else TimeRange("t", "u", lower=0, upper=10)
    join = ContinuousJoin("inner", between, JoinSide("a", "t"), JoinSide("b", "u"), settings.get("key_time"))
    join.open(StepContext.for_testing(model="continuous"))
    return join


def _removed_keys(delta: StateDelta) -> dict:
    return {
        name: sorted(key for states in delta.removed.values() for key in states.get(name, [])) for name in delta.tracked
    }


def test_a_continuous_interval_join_writes_the_keys_it_stored_or_cleaned_and_its_rows_once():
    """Flink's interval join (continuous model): after a full checkpoint, a delta holds the keys that got a row
    and the keys the watermark cleaned, nothing else; no snapshot carries a second copy of the rows."""
    join = _continuous_join()
    join.process([(f"k{i}", {"t": 100 + i}) for i in range(50)], 0)
    full = snapshot_operator(join)
    assert full["continuous"] == {"watermark": None}
    assert sum(len(states["left"]) for states in full["keyed"].values()) == 50
    join.process([("k5", {"u": 112})], 1)  # joins k5's left row, and is stored on the right
    assert join.ctx.emitted == [{"t": 105, "u": 112, "time": 112}]
    join.join.on_watermark(111, join.ctx)  # cleans the left rows of k0 and k1 (t + 10 <= 111)
    delta = snapshot_operator(join, delta=True)
    assert delta["continuous"] == {"watermark": 111}
    keyed = delta["keyed"]
    assert keyed.tracked == ["left", "right"] and keyed.entries() == 3
    assert keyed.updated == {key_group_of("k5"): {"right": {"k5": [{"u": 112}]}}}
    assert _removed_keys(keyed) == {"left": ["k0", "k1"], "right": []}
    restored = _continuous_join()
    restored.restore({"keyed": apply_delta(full["keyed"], keyed), "continuous": delta["continuous"]})
    assert restored.join.state == join.join.state and restored.state_sizes() == {"a": 48, "b": 1}
    assert restored.join.watermark == 111


def test_a_continuous_window_join_writes_the_windows_it_stored_or_fired():
    """Flink's window join: a delta holds the windows that got a row and the windows that fired."""
    join = _continuous_join(key_time=("t", "u"))
    join.process([(("k", end), {"t": end}) for end in (10, 20, 30)], 0)
    full = snapshot_operator(join)
    join.process([(("k", 30), {"u": 30})], 1)
    join.join.on_watermark(19, join.ctx)  # fires the windows ending at 10 and 20
    keyed = snapshot_operator(join, delta=True)["keyed"]
    assert keyed.tracked == ["windows"] and keyed.entries() == 3
    assert [entries for states in keyed.updated.values() for entries in states.values()] == [
        {("k", 30): ([{"t": 30}], [{"u": 30}])}
    ]
    assert _removed_keys(keyed) == {"windows": [("k", 10), ("k", 20)]}
    restored = _continuous_join(key_time=("t", "u"))
    restored.restore({"keyed": apply_delta(full["keyed"], keyed), "continuous": {"watermark": 19}})
    assert restored.join.state == join.join.state


@pytest.mark.spark
def test_spark_keeps_deltas_and_snapshots_as_the_tutorial_shows():
    """Spark's state store writes a ``.delta`` per batch and, with ``minDeltasForSnapshot=2``, a ``.snapshot``
    now and then: a short query shows both, and so does tutorial 15's recorded listing."""
    from pathlib import Path

    from ministream.spark.state_files import BLOCK, state_files

    outline = state_files()
    assert ".delta" in outline and ".snapshot" in outline, outline
    page = Path(__file__).resolve().parents[2] / "tutorials" / "15-checkpoint-recovery.md"
    shown = BLOCK.search(page.read_text()).group(2)
    assert ".delta" in shown and ".snapshot" in shown, "run .venv/bin/python -m ministream.tools.docs --spark"


def test_a_delta_checkpoint_read_alone_is_not_restored():
    """A delta checkpoint read from its files alone (without the checkpoints it is built on) is refused by
    ``restore_graph``, which says how to load it."""
    from ministream.errors import PipelineError

    storage = _incremental_storage()
    lesson = get_lesson("running-aggregation")
    graph = physical_graph(lesson.pipeline(lesson.default_script, {}), 1, output_mode="update")
    with pytest.raises(PipelineError, match="checkpoint 2 holds deltas on checkpoint 1: load it with"):
        restore_graph(graph, Checkpoint.from_files(storage.files[2]))
    restore_graph(graph, load_checkpoint(storage, 2))


def test_a_window_snapshot_keeps_its_values_when_the_state_changes_unless_written_at_once():
    """A checkpoint of a window step copies each accumulator once (``by_key_group(copy=True)``): rows folded
    after the snapshot do not change it. A micro-batch checkpoint, written before the state changes again,
    shares them (``sharing=True``): no copy is made."""
    from ministream.core.operator import BatchInfo, StepContext
    from ministream.operators.window import WindowAggregate
    from ministream.time.windows import Tumbling

    counts = WindowAggregate(("key",), Tumbling(10_000), {"count": Count()})
    counts.open(StepContext.for_testing(output_mode="update"))
    counts.on_batch_start(BatchInfo(0, watermark=0, late_watermark=0))
    counts.process([("a", {"key": "a", "ts": 1_000})], 0)
    copied = snapshot_operator(counts)
    counts.process([("a", {"key": "a", "ts": 2_000})], 0)
    group = key_group_of("a")
    assert copied["keyed"][group]["windows"]["a"][(0, 10_000)] == [1]
    shared = snapshot_operator(counts, delta=True, sharing=True)
    assert shared["keyed"].updated[group]["windows"]["a"][(0, 10_000)] is counts.windows.get("a", (0, 10_000))
