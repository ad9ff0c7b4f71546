"""The state backends: every lesson gives the same output with its keyed state in memory, in RocksDB and in Redis,
in both models and across a crash; the store really holds the state; the working set is written back per batch."""

import itertools
import tempfile

import pytest

from ministream.core.compare import compare_batches
from ministream.errors import PipelineError
from ministream.lessons import all_lessons, get_lesson
from ministream.lessons.crash_checks import check_recovery
from ministream.lessons.lesson import event
from ministream.state import redis_server
from ministream.state.backends import RedisBackends, RocksDBBackends, state_backends
from ministream.state.changelog import ChangelogBackends, ChangelogStorage
from ministream.state.keygroups import key_group_of
from ministream.state.rocksdb_store import RocksDBStore
from ministream.state.stored import StoreBackedState
from ministream.state.stores import entries_of

STORES = ("rocksdb", "redis")
NO_KEYED_STATE = ["enrichment-join", "operator-state"]
"""Lessons whose steps keep no keyed state: a stream-static join holds only its table, and the buffered writer
keeps operator state (a subtask's own list, not the backend's)."""
KEYED_LESSONS = [
    lesson.name
    for lesson in all_lessons()
    if lesson.name not in NO_KEYED_STATE
    and any(
        step.parallelism == "keyed" for step in lesson.pipeline(lesson.default_script, lesson.resolve_params()).steps
    )
]


def test_every_lesson_keeps_keyed_state():
    """Every lesson but those that keep no keyed state is run on every backend below."""
    assert [lesson.name for lesson in all_lessons() if lesson.name not in KEYED_LESSONS] == NO_KEYED_STATE


@pytest.mark.parametrize("backend", STORES)
@pytest.mark.parametrize("name", KEYED_LESSONS)
def test_lesson_output_is_the_same_on_every_backend(name, backend):
    """Batch for batch, the same rows and watermarks as the in-memory run, at parallelism 2."""
    lesson = get_lesson(name)
    expected = lesson.run(parallelism=2).output()
    backends = state_backends(backend)
    try:
        run = lesson.run(parallelism=2, state_backend=backends)
        comparison = compare_batches(run.output(), expected)
        assert comparison.matches, comparison.table()
        states = [s.operator.ctx.state for s in run.graph.subtasks if s.operator and s.operator.ctx.state]
        assert all(isinstance(state, StoreBackedState) for state in states)
        assert sum(state.writes for state in states) > 0  # the state went through the store
    finally:
        backends.close()


@pytest.mark.parametrize("backend", STORES)
def test_continuous_model_on_every_backend(backend):
    """The continuous model writes the state back after every message: the same multiset of rows."""
    lesson = get_lesson("microbatch-vs-continuous")
    expected = sorted(map(repr, lesson.run(model="continuous").output()[0].rows))
    backends = state_backends(backend)
    try:
        rows = lesson.run(model="continuous", parallelism=2, state_backend=backends).output()[0].rows
        assert sorted(map(repr, rows)) == expected
    finally:
        backends.close()


@pytest.mark.parametrize("backend", STORES)
@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("checkpoint-recovery", "microbatch"),
        ("stream-join", "microbatch"),
        ("running-aggregation", "continuous"),
        ("session-window", "microbatch"),
    ],
)
def test_recovery_on_every_backend(name, model, backend):
    """A crash loses the attempt's stores; the next attempt fills new ones from the checkpoint: same output."""
    backends = state_backends(backend)
    try:
        run, _, same = check_recovery(get_lesson(name), crash_after_rows=5, model=model, state_backend=backends)
        assert run.crashes == 1 and same
    finally:
        backends.close()


def _recovery_backends(backend: str):
    """The state backends of a recovery run: a store's, or in-memory state with a changelog that materialises a
    snapshot every second record (so that a recovery crosses one)."""
    if backend == "changelog":
        return ChangelogBackends("memory", ChangelogStorage(), materialize_every=2)
    return state_backends(backend)


@pytest.mark.parametrize("backend", ["memory", *STORES, "changelog"])
@pytest.mark.parametrize("key", ["id", "id_and_time", "within"])
def test_deduplication_recovers_on_every_backend(key, backend):
    """Deduplication keeps its keys in memory (flat, or by the second of their expiry when the key holds the
    event time: ``id_and_time``) and in the table ``"seen"`` in a store, and lays them out by key group for a
    checkpoint: a crash at any of several points, recovered from full and incremental
    checkpoints (or a changelog), at another parallelism, gives the failure-free output."""
    lesson = get_lesson("deduplication")
    for crash, settings in itertools.product(
        (2, 4, 6), ({}, {"incremental": 2}, {"parallelism": 2, "restore_parallelism": 3})
    ):
        backends = _recovery_backends(backend)
        try:
            run, _, same = check_recovery(
                lesson, params={"key": key}, crash_after_rows=crash, state_backend=backends, **settings
            )
            assert run.crashes == 1 and same, (crash, settings)
        finally:
            backends.close()


RUNNING_SCRIPT = [
    [event(10 * batch + i, key, batch + i) for i, key in enumerate(keys)]
    for batch, keys in enumerate(["aab", "ca", "bdb", "a", "eec", "ba", "dde", "abc"])
]
"""Eight batches over five keys, each key changed again in later batches: a delta after a full checkpoint, and
a list shared by a checkpoint then changed, both happen."""


@pytest.mark.parametrize("backend", ["memory", *STORES, "changelog"])
@pytest.mark.parametrize("mode", ["update", "complete"])
def test_running_aggregation_recovers_on_every_backend(mode, backend):
    """The running aggregate changes its accumulator lists in place while no checkpoint reads its marks (before
    the first checkpoint), and copies them on write after one and after a restore: a crash at
    any of several points, recovered from full and incremental checkpoints (or a changelog), at another
    parallelism, in both models, gives the failure-free output."""
    lesson = get_lesson("running-aggregation")
    for crash, settings in itertools.product(
        (3, 7, 11),
        ({}, {"incremental": 2}, {"parallelism": 2, "restore_parallelism": 3}, {"model": "continuous", "interval": 3}),
    ):
        backends = _recovery_backends(backend)
        try:
            run, _, same = check_recovery(
                lesson,
                RUNNING_SCRIPT,
                {"mode": mode},
                crash_after_rows=crash,
                state_backend=backends,
                **settings,
            )
            assert run.crashes == 1 and same, (crash, settings)
        finally:
            backends.close()


def test_the_store_holds_the_state_after_the_run():
    """Running aggregation on RocksDB: the store's table is the in-memory run's table."""
    lesson = get_lesson("running-aggregation")
    memory = lesson.run().graph.by_step["totals"][0].operator.ctx.state.snapshot()
    backends = RocksDBBackends()
    try:
        state = lesson.run(state_backend=backends).graph.by_step["totals"][0].operator.ctx.state
        stored = entries_of(state.store, "aggregate")
        assert stored == {group: tables["aggregate"] for group, tables in memory.items()}
        assert state.reads > 0 and state.flushes == len(lesson.default_script)
    finally:
        backends.close()


def _backend():
    return StoreBackedState(RocksDBStore(tempfile.mkdtemp(prefix="ministream-test-")))


def test_a_marked_key_is_written_back_and_an_unmarked_one_is_not():
    """A tracked table writes back only its marked keys: a value changed in place without a mark is lost, which is
    why the contract 'a changed value is always under a marked key' makes the store exact."""
    backend = _backend()
    table, marks = backend.table("t"), backend.track_changes("t")
    group = key_group_of("a")
    table.setdefault(group, {})["a"] = [1]
    table.setdefault(key_group_of("b"), {})["b"] = [1]
    marks["a"] = marks["b"] = None
    backend.flush()
    table[group]["a"].append(2)  # changed in place and marked
    marks["a"] = None
    table[key_group_of("b")]["b"].append(2)  # changed in place, marked before but not now: still marked
    backend.flush()
    assert entries_of(backend.store, "t") == {group: {"a": [1, 2]}, key_group_of("b"): {"b": [1, 2]}}
    backend.checkpointing = "full"
    backend.snapshot()  # a checkpoint clears the marks
    backend.checkpointing = None
    table[group]["a"].append(3)  # not marked: the working set is dropped, the change with it
    backend.flush()
    assert entries_of(backend.store, "t")[group] == {"a": [1, 2]}


def test_an_untracked_table_writes_back_its_whole_working_set():
    """A table whose writer marks nothing is written back whole: a value changed in place still reaches the store."""
    backend = _backend()
    table = backend.table("u")
    table.setdefault(7, {})["x"] = {"n": 1}
    backend.flush()
    table[7]["x"]["n"] = 2  # read, then changed in place: no marks to say so, so every read key is written
    backend.flush()
    assert entries_of(backend.store, "u") == {7: {"x": {"n": 2}}}


def test_deletes_and_replaced_key_groups_reach_the_store():
    """Deleted keys and a deleted key group are deleted in the store at the next write-back."""
    backend = _backend()
    table = backend.table("t")
    table[1] = {"a": 1, "b": 2}
    table[2] = {"c": 3}
    backend.flush()
    del table[1]["a"]
    del table[2]
    assert list(table) == [1] and dict(table[1]) == {"b": 2}
    backend.flush()
    assert entries_of(backend.store, "t") == {1: {"b": 2}}


def test_restore_into_a_store_takes_only_the_owned_key_groups():
    """A restore writes into the store only the key groups the subtask owns."""
    backend = _backend()
    backend.restore({1: {"t": {"a": 1}}, 100: {"t": {"z": 26}}}, key_groups=range(64))
    assert entries_of(backend.store, "t") == {1: {"a": 1}}


def test_redis_backends_start_a_server_on_loopback_and_drop_their_keys():
    """The Redis backends start redis-server on 127.0.0.1 and remove their keys when closed."""
    backends = RedisBackends()
    backend = backends.create("step", 0)
    backend.table("t").setdefault(3, {})["k"] = 1
    backend.flush()
    client = backends.server.client
    assert client.connection_pool.connection_kwargs["host"] == "127.0.0.1"
    assert list(client.scan_iter(match=f"{backends.prefix}:*"))
    backends.close()
    assert not list(client.scan_iter(match=f"{backends.prefix}:*"))


def test_a_missing_redis_server_says_what_to_install(monkeypatch):
    """Without redis-server, the error says what to install."""
    monkeypatch.setattr(redis_server.shutil, "which", lambda name: None)
    with pytest.raises(PipelineError, match="apt-get install -y redis-server"):
        redis_server.RedisServer()


def test_an_unknown_backend_is_refused():
    """An unknown backend name is refused with the names that exist."""
    with pytest.raises(PipelineError, match="use one of memory, rocksdb, redis"):
        get_lesson("running-aggregation").run(state_backend="cassandra")


WINDOWED_LESSONS = ["tumbling-window", "sliding-window", "session-window"]
"""The windowed aggregations: tumbling and sliding windows keep their state by window
(``window_state.WindowsByWindow``), sessions by key (``WindowsByKey``); each builds the table ``"windows"`` only
for a snapshot."""

QUIET_KEY_SCRIPT = [
    [event(1, "z"), event(1, "a")],
    *([event(second, "a")] for second in range(2, 7)),
    [event(7, "z"), event(7, "a")],
    [event(100, "b")],
    [event(200, "b")],
]
"""Key ``z`` opens its window in the first batch and is not touched again until the seventh: the checkpoints
between (incremental ones, and changelog records that materialise the whole state) must keep it."""


@pytest.mark.parametrize("backend", ["memory", "changelog", "changelog on rocksdb"])
@pytest.mark.parametrize("name", WINDOWED_LESSONS)
def test_windowed_aggregations_recover_on_every_backend(name, backend):
    """A windowed aggregation lays its windows out by key group for a checkpoint: a crash at every row, recovered
    from full checkpoints, from incremental ones (a delta after each full one), or from a changelog that
    materialises its whole state every 2 records (at every delta, then), at another parallelism too, and in the
    continuous model (a checkpoint every row), gives the failure-free output, with a key that no batch touches
    across several checkpoints. Some recoveries restore a checkpoint after the first materialisation."""
    lesson = get_lesson(name)
    restored_from = set()
    for script in (lesson.default_script, QUIET_KEY_SCRIPT):
        rows = sum(map(len, script))
        for crash, settings in itertools.product(
            range(1, rows),
            (
                {},
                {"incremental": 1},
                {"parallelism": 2, "restore_parallelism": 3, "incremental": 1},
                {"model": "continuous", "interval": 1, "incremental": 1},
            ),
        ):
            if backend.endswith("rocksdb") and "model" in settings:
                continue  # the store writes back after every row there: slow, and the same WindowsInState code
            storage = ChangelogStorage()
            if backend.startswith("changelog"):
                inner = backend.split(" on ")[1] if " on " in backend else "memory"
                backends = ChangelogBackends(inner, storage, materialize_every=2)
            else:
                backends = state_backends(backend)
            try:
                run, _, same = check_recovery(
                    lesson, script, crash_after_rows=crash, state_backend=backends, **settings
                )
                assert run.crashes == 1 and same, (crash, settings)
                restored_from.update(attempt.restored_from for attempt in run.attempts)
                if backend.startswith("changelog"):  # the changelog materialised the state at least once
                    assert any(storage.versions(log, "snapshot") for log in storage.logs())
            finally:
                backends.close()
    assert max(checkpoint for checkpoint in restored_from if checkpoint is not None) >= 2
