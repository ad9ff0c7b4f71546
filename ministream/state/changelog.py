"""Changelog mode: every subtask appends its state writes to a log; a checkpoint records only a log position.

A full checkpoint copies the whole state; an incremental one (``state/changes.py``) copies the keys changed
since the last one into the checkpoint. In *changelog mode* the checkpoint copies no state at all. Each keyed
subtask owns a **changelog**, an append-only log in durable storage (``<step>/<subtask>/``), and:

1. at every checkpoint it appends one record, version ``v`` (``<v>.changelog``): every key the subtask wrote
   since the previous record, with its value, and every key it removed (the writes of one micro-batch; in the
   continuous model, those since the previous barrier);
2. the checkpoint keeps only a :class:`LogPosition`: the log, its version ``v``, and the newest materialised
   snapshot at or before ``v``;
3. every ``materialize_every`` records the subtask also **materialises** its whole state as ``<v>.snapshot``,
   so that a recovery never replays a long log;
4. a **recovery** reads the snapshot the position names and replays the records after it, up to ``v`` and no
   further: a record written after the checkpoint (by a batch that crashed before it committed) is ignored,
   and overwritten when that batch runs again (:func:`read_state`);
5. **compaction** deletes the records and snapshots that no checkpoint still kept (``retain`` of them) needs:
   everything before the newest snapshot at or before the oldest such checkpoint.

This is Spark's RocksDB state store with changelog checkpointing
(``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``): each batch uploads a
``<v>.changelog`` file of its puts and deletes, and the maintenance task now and then uploads a ``<v>.zip``
snapshot; loading version ``v`` opens the newest snapshot at or before it and replays the changelog files
after it. Flink's changelog state backend does the same with a durable log of state changes (DSTL) and a
periodic materialisation; Kafka Streams keeps a store's changelog in a compacted Kafka topic. The lesson is
``lessons/changelog.py``.

>>> log = ChangelogStorage()
>>> backends = ChangelogBackends("memory", log, materialize_every=2)
>>> backend = backends.create("totals", 0)
>>> from ministream.state.keyed import ValueState
>>> counts = ValueState(backend, "count", default=0)
>>> positions = []
>>> for batch in (["a", "b"], ["a"], ["c"]):
...     for key in batch:
...         backend.set_current_key(key); counts.update(counts.value() + 1)
...     backend.checkpointing = "full"; positions.append(backend.snapshot()); backend.checkpointing = None
>>> positions[-1]
LogPosition(log='totals/0', version=3, snapshot=2)
>>> log.files("totals/0")
['1.changelog', '2.changelog', '2.snapshot', '3.changelog']
>>> log.record("totals/0", 3)
StateDelta(tracked=['count'], updated={120: {'count': {'c': 1}}}, removed={})
>>> read_state(log, positions[-1])
{57: {'count': {'b': 1}}, 120: {'count': {'c': 1}}, 122: {'count': {'a': 2}}}
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import weakref
from pathlib import Path

import attrs

from ministream.state.backends import StateBackends, state_backends
from ministream.state.changes import StateDelta, apply_delta, take_delta
from ministream.state.copy_on_write import copy_value
from ministream.state.keyed import KeyedStateBackend
from ministream.state.stores import decode, encode

_FILE = re.compile(r"(\d+)\.(changelog|snapshot)")


@attrs.frozen
class LogPosition:
    """What a checkpoint keeps of one subtask's keyed state in changelog mode: where its log stands.

    Attributes:
        log: the subtask's log, ``"<step>/<subtask>"``.
        version: the last record the checkpoint covers (records ``1..version``).
        snapshot: the newest materialised snapshot at or before ``version`` (``None``: none yet, replay from
            an empty state).
    """

    log: str
    version: int
    snapshot: int | None


class ChangelogStorage:
    """Where the changelogs live, outside the process (a crash does not lose them): per log, the records
    ``<v>.changelog`` (a :class:`~ministream.state.changes.StateDelta`) and the materialised snapshots
    ``<v>.snapshot`` (``{key_group: {table: {key: value}}}``), pickled. ``directory``: files there (kept);
    ``None``: in memory, or ``temporary=True``: in a new temporary directory removed when the object goes.

    >>> storage = ChangelogStorage(); storage.write("t/0", 1, "changelog", StateDelta([]))
    >>> storage.files("t/0"), storage.versions("t/0", "changelog")
    (['1.changelog'], [1])
    """

    def __init__(self, directory: str | None = None, temporary: bool = False):
        if temporary and directory is None:
            directory = tempfile.mkdtemp(prefix="ministream-changelog-")
            weakref.finalize(self, shutil.rmtree, directory, True)
        self.directory = directory
        self.memory: dict[str, dict[str, bytes]] = {}  # {log: {file name: bytes}} when there is no directory
        self.written = 0  # bytes written, records and snapshots
        self.deleted = 0  # files deleted by compaction
        self.replayed = 0  # records read back by recoveries

    def write(self, log: str, version: int, kind: str, value) -> None:
        """Write record or snapshot ``version`` of ``log`` (``kind``: ``"changelog"`` or ``"snapshot"``); a
        version written again (a batch that runs again after a crash) replaces the old one."""
        data = encode(value)
        self.written += len(data)
        name = f"{version}.{kind}"
        if self.directory is None:
            self.memory.setdefault(log, {})[name] = data
            return
        folder = Path(self.directory, log)
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / (name + ".part")
        part.write_bytes(data)
        os.replace(part, folder / name)  # a whole file or none: a crash never leaves half a record

    def read(self, log: str, version: int, kind: str):
        """Record or snapshot ``version`` of ``log``; ``ValueError`` when it is missing."""
        name = f"{version}.{kind}"
        if self.directory is None:
            data = self.memory.get(log, {}).get(name)
        else:
            path = Path(self.directory, log, name)
            data = path.read_bytes() if path.exists() else None
        if data is None:
            raise ValueError(f"changelog {log!r} has no {name}: it was compacted away, or never written")
        return decode(data)

    def files(self, log: str) -> list[str]:
        """The file names of ``log``, by version (a record before the snapshot of the same version)."""
        if self.directory is None:
            names = list(self.memory.get(log, {}))
        else:
            folder = Path(self.directory, log)
            names = [path.name for path in folder.iterdir()] if folder.exists() else []
        found = [match for match in map(_FILE.fullmatch, names) if match]
        return [m.group(0) for m in sorted(found, key=lambda m: (int(m.group(1)), m.group(2)))]

    def versions(self, log: str, kind: str) -> list[int]:
        """The versions of ``log`` kept as ``kind`` files, in order."""
        return [int(name.split(".")[0]) for name in self.files(log) if name.endswith("." + kind)]

    def logs(self) -> list[str]:
        """Every log that holds files, ``"<step>/<subtask>"``."""
        if self.directory is None:
            return sorted(log for log, files in self.memory.items() if files)
        root = Path(self.directory)
        return sorted(str(path.parent.relative_to(root)) for path in root.glob("*/*/*") if _FILE.fullmatch(path.name))

    def delete(self, log: str, name: str) -> None:
        self.deleted += 1
        if self.directory is None:
            self.memory.get(log, {}).pop(name, None)
        else:
            Path(self.directory, log, name).unlink(missing_ok=True)

    def record(self, log: str, version: int) -> StateDelta:
        """Record ``version`` of ``log``: what the subtask wrote in it."""
        return self.read(log, version, "changelog")


class SubtaskChangelog:
    """One subtask's side of its log: appends a record at every checkpoint, materialises every
    ``materialize_every`` records, compacts what the last ``retain`` checkpoints no longer need."""

    def __init__(self, storage: ChangelogStorage, log: str, materialize_every: int, retain: int | None):
        self.storage = storage
        self.log = log
        self.materialize_every = materialize_every
        self.retain = retain
        self.version = 0  # the last record written (or restored to)
        self.snapshot: int | None = None  # the newest snapshot at or before self.version
        self.since_snapshot = 0  # records appended since that snapshot
        self.resumed = False  # restored, and no record written since

    def checkpoint(self, backend: KeyedStateBackend) -> LogPosition:
        """Append the writes since the last record as the next version, materialise when due, compact, and
        return the position a checkpoint keeps."""
        self.version += 1
        if self.resumed:  # the marks count from the restored state, which is the log's at the restored version
            backend.tracked, self.resumed = set(backend.changes), False
        self.storage.write(self.log, self.version, "changelog", take_delta(backend))
        self.since_snapshot += 1
        if self.since_snapshot >= self.materialize_every:
            self.storage.write(self.log, self.version, "snapshot", _full_copy(backend))
            self.snapshot, self.since_snapshot = self.version, 0
        if self.retain is not None:
            self.compact(self.version - self.retain + 1)
        return LogPosition(self.log, self.version, self.snapshot)

    def restored(self, version: int) -> None:
        """The subtask was restored as of ``version``: the next record is ``version + 1``, and it materialises
        at once (its key groups may come from other subtasks' logs, after a restore at another parallelism)."""
        self.version, self.snapshot, self.since_snapshot = version, None, self.materialize_every - 1
        self.resumed = True

    def compact(self, oldest_needed: int) -> None:
        """Delete what recovering to any version ``>= oldest_needed`` does not read: the files before the
        newest snapshot at or before ``oldest_needed`` (nothing, when there is no such snapshot)."""
        base = max((v for v in self.storage.versions(self.log, "snapshot") if v <= oldest_needed), default=None)
        if base is None:
            return
        for name in self.storage.files(self.log):
            version, kind = int(name.split(".")[0]), name.split(".")[1]
            if version < base or (version == base and kind == "changelog"):
                self.storage.delete(self.log, name)


def _full_copy(backend: KeyedStateBackend) -> dict:
    """The backend's whole keyed state, read without starting a new count of changes."""
    checkpointing, backend.checkpointing = backend.checkpointing, None
    try:
        snapshot = backend.snapshot()
    finally:
        backend.checkpointing = checkpointing
    assert isinstance(snapshot, dict), "no checkpoint is being taken: the snapshot is full"
    return snapshot


def read_state(storage: ChangelogStorage, position: LogPosition) -> dict:
    """A subtask's keyed state as of a checkpoint's position: its snapshot, then the records after it up to
    ``position.version``; records written later (by a batch that never committed) are not read."""
    state = {} if position.snapshot is None else storage.read(position.log, position.snapshot, "snapshot")
    first = 1 if position.snapshot is None else position.snapshot + 1
    for version in range(first, position.version + 1):
        storage.replayed += 1
        state = apply_delta(state, copy_value(storage.record(position.log, version)))
    return state


def resolve_positions(snapshot, storage: ChangelogStorage):
    """An operator's snapshot from a checkpoint with every :class:`LogPosition` in it replaced by the state it
    stands for (:func:`read_state`), and the positions found, ``(snapshot, [position, ...])``.

    >>> storage = ChangelogStorage(); storage.write("t/0", 1, "changelog", StateDelta([], {3: {"c": {"a": 1}}}))
    >>> resolve_positions({"keyed": LogPosition("t/0", 1, None), "watermark": 5}, storage)
    ({'keyed': {3: {'c': {'a': 1}}}, 'watermark': 5}, [LogPosition(log='t/0', version=1, snapshot=None)])
    """
    found: list[LogPosition] = []

    def walk(value):
        if isinstance(value, LogPosition):
            found.append(value)
            return read_state(storage, value)
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    return walk(snapshot), found


class ChangelogBackends:
    """Keyed state backends in changelog mode: each subtask's state on the ``inner`` backend (a name of
    ``backends.BACKENDS``, or one made), with a :class:`SubtaskChangelog` in ``storage`` (a new temporary
    directory when not given). ``run_with_recovery(flow, state_backend=ChangelogBackends("rocksdb"))``.

    Args:
        materialize_every: materialise a snapshot every this many records of a log (Spark: a snapshot by the
            maintenance task after ``minDeltasForSnapshot`` versions; Flink: every
            ``state.backend.changelog.periodic-materialize.interval``).
        retain: compact the logs so that the last ``retain`` checkpoints can be recovered (``None``: never
            compact). Give the checkpoint storage the same ``retain``.
    """

    def __init__(
        self,
        inner: str | StateBackends = "memory",
        storage: ChangelogStorage | None = None,
        materialize_every: int = 4,
        retain: int | None = None,
    ):
        if materialize_every < 1:
            raise ValueError(f"materialize_every must be at least 1, got {materialize_every}")
        self.inner = state_backends(inner)
        self.name = f"changelog on {self.inner.name}"
        self.storage = storage if storage is not None else ChangelogStorage(temporary=True)
        self.materialize_every = materialize_every
        self.retain = retain

    def create(self, step: str, subtask: int) -> KeyedStateBackend:
        backend = self.inner.create(step, subtask)
        backend.changelog = SubtaskChangelog(self.storage, f"{step}/{subtask}", self.materialize_every, self.retain)
        return backend

    def describe(self) -> str:
        return f"{self.name}: {len(self.storage.logs())} log(s), materialised every {self.materialize_every} records"

    def close(self) -> None:
        self.inner.close()
