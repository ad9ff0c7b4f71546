"""Store-backed keyed state: the tables an operator works on, backed by a key-value store, written back per batch.

Operators reach their keyed state in two ways (``state/keyed.py``): through the state primitives
(``ValueState``, ``MapState``... which call ``get``/``put`` for the current key), and through **tables**, the
``{key_group: {key: value}}`` mappings that ``backend.table(name)`` returns and that an operator such as
``RunningAggregate`` reads and changes directly, marking each key it changes (``track_changes``). In memory a
table is a dict of dicts. When the state lives in a store (RocksDB, Redis), there are two ways to go:

(a) the table stays a mapping, **backed by the store**: a key that the batch has not read yet is read from the
    store (and kept in the batch's *working set*), a key the operator changes stays in the working set, and at
    the end of every batch (and before every checkpoint) the marked keys are written back to the store in one
    atomic write batch; then the working set is dropped, so the next batch reads from the store again;
(b) the operators call ``get``/``put`` for every access.

ministream takes (a). The operators stay as they are, readable as dict code in every backend, and the in-memory
backend, where a table *is* a dict, pays nothing for the store: no call, no check. It is also how the real
engines do it: Spark's state store takes a batch's updates and commits them, as a new version, at the end of
the batch (``StateStore.commit``; RocksDB's write batch is the commit); Flink's RocksDB backend reads and writes
RocksDB per access, and keeps a working copy only where it can (its ``RocksDBCachingPriorityQueueSet``). A
read of a value gives the operator a fresh copy decoded from the store, which it may change in place: the
contract that makes (a) exact is the one incremental checkpoints already rely on, *a changed value is always
under a marked key* (``state/changes.py``). A table whose writer does not mark its keys has every key of its
working set written back.

What a table costs in a store: a first read of a key in a batch is a store read (a RocksDB lookup, a Redis
round trip) and a decode; iterating a table (eviction, complete mode) scans the store; the write-back encodes
and writes each marked key once per batch, whatever the number of rows that changed it.

>>> import tempfile
>>> from ministream.state.keygroups import key_group_of
>>> from ministream.state.rocksdb_store import RocksDBStore
>>> backend = StoreBackedState(RocksDBStore(tempfile.mkdtemp()))
>>> table, changed = backend.table("totals"), backend.track_changes("totals")
>>> table.setdefault(key_group_of("a"), {})["a"] = [1]; changed["a"] = None
>>> backend.flush(); table[key_group_of("a")].cache       # written to the store; the working set is empty
{}
>>> counts = table.get(key_group_of("a"), {}); counts.get("a"), counts.cache   # read back from the store
([1], {'a': [1]})
>>> backend.snapshot()
{122: {'totals': {'a': [1]}}}
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping

from ministream.state.keyed import KeyedStateBackend
from ministream.state.keygroups import MAX_PARALLELISM
from ministream.state.stores import KeyValueStore, WriteBatch, decode, encode

_MISSING = object()


class StoredGroup(MutableMapping):
    """The ``{key: value}`` of one table's key group, backed by the store: a working set of what the batch read
    or wrote (``cache``), the keys it deleted (``deleted``), whether the working set holds every entry of the
    group (``complete``: it was scanned or replaced) and whether the group was replaced whole (``replaced``)."""

    __slots__ = ("backend", "cache", "complete", "deleted", "group", "replaced", "table")

    def __init__(self, backend: StoreBackedState, table: str, group: int):
        self.backend = backend
        self.table = table
        self.group = group
        self.reset()

    def reset(self) -> None:
        """Drop the working set (after a flush, or a read-only snapshot)."""
        self.cache: dict = {}
        self.deleted: set = set()
        self.complete = False
        self.replaced = False

    def _read(self, key):
        """The value of ``key``, from the working set or else from the store; ``_MISSING`` when it has none."""
        value = self.cache.get(key, _MISSING)
        if value is not _MISSING or self.complete or key in self.deleted:
            return value
        data = self.backend.store.get(self.table, self.group, encode(key))
        if data is None:
            return _MISSING
        value = self.cache[key] = decode(data)
        self.backend.reads += 1
        return value

    def __getitem__(self, key):
        value = self._read(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key, default=None):
        value = self._read(key)
        return default if value is _MISSING else value

    def __contains__(self, key) -> bool:
        return self._read(key) is not _MISSING

    def __setitem__(self, key, value) -> None:
        self.cache[key] = value
        self.deleted.discard(key)

    def __delitem__(self, key) -> None:
        if self._read(key) is _MISSING:
            raise KeyError(key)
        del self.cache[key]
        self.deleted.add(key)

    def setdefault(self, key, default=None):
        value = self._read(key)
        if value is _MISSING:
            value = self.cache[key] = default
            self.deleted.discard(key)
        return value

    def load(self) -> dict:
        """Read every entry of the group into the working set (once per batch); return the working set."""
        if not self.complete:
            for data, value in self.backend.store.scan(self.table, self.group):
                key = decode(data)
                if key not in self.cache and key not in self.deleted:
                    self.cache[key] = decode(value)
                    self.backend.reads += 1
            self.complete = True
        return self.cache

    def replace(self, entries: Mapping) -> None:
        """Replace every entry of the group (a restore, or ``table[group] = {...}``)."""
        self.reset()
        self.cache = dict(entries)
        self.complete = self.replaced = True

    def __iter__(self) -> Iterator:
        return iter(self.load())

    def __len__(self) -> int:
        return len(self.load())

    def keys(self):
        return self.load().keys()

    def items(self):
        return self.load().items()

    def values(self):
        return self.load().values()

    def __repr__(self) -> str:
        return f"StoredGroup({self.table!r}, {self.group}, working set {self.cache!r})"


class StoredTable(MutableMapping):
    """One table, ``{key_group: StoredGroup}``, backed by the store.

    ``get(group)``, ``table[group]`` and ``setdefault(group, {})`` return the group's :class:`StoredGroup`
    without looking at the store (an empty one reads as ``{}``); iterating the table lists the key groups that
    hold entries, in the store or in the working set.
    """

    def __init__(self, backend: StoreBackedState, name: str):
        self.backend = backend
        self.name = name
        self.groups: dict[int, StoredGroup] = {}

    def group(self, key_group: int) -> StoredGroup:
        found = self.groups.get(key_group)
        if found is None:
            found = self.groups[key_group] = StoredGroup(self.backend, self.name, key_group)
        return found

    def __getitem__(self, key_group: int) -> StoredGroup:
        return self.group(key_group)

    def get(self, key_group, default=None):
        return self.group(key_group)

    def setdefault(self, key_group, default=None):
        group = self.group(key_group)
        if default:
            for key, value in default.items():
                group.setdefault(key, value)
        return group

    def __setitem__(self, key_group: int, entries: Mapping) -> None:
        self.group(key_group).replace(entries)

    def __delitem__(self, key_group: int) -> None:
        self.group(key_group).replace({})

    def __contains__(self, key_group) -> bool:
        return bool(self.group(key_group))

    def __iter__(self) -> Iterator[int]:
        candidates = set(self.backend.store.key_groups(self.name)) | set(self.groups)
        return iter([group for group in sorted(candidates) if self.group(group)])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __repr__(self) -> str:
        return f"StoredTable({self.name!r}, {self.backend.store.name})"


class StoreBackedState(KeyedStateBackend):
    """A keyed state backend whose tables live in a key-value store (``stores.KeyValueStore``): the same
    interface as :class:`~ministream.state.keyed.KeyedStateBackend`, with the tables backed by the store and
    written back by :meth:`flush`, which the engine calls at the end of every batch (micro-batch model), after
    every message (continuous model) and before every snapshot.

    ``reads`` and ``writes`` count the entries read from and written to the store (for the benchmarks).
    """

    writes_back = True

    def __init__(self, store: KeyValueStore, max_parallelism: int = MAX_PARALLELISM):
        super().__init__(max_parallelism)
        self.store = store
        self.reads = 0
        self.writes = 0
        self.flushes = 0
        self.tables = {name: StoredTable(self, name) for name in store.tables()}  # type: ignore[misc]

    def table(self, name: str):
        found = self.tables.get(name)
        if found is None:
            found = self.tables[name] = StoredTable(self, name)  # type: ignore[assignment]
        return found

    def reads_marks(self, name: str) -> bool:
        """Always: the write-back at the end of the batch writes the marked keys (:meth:`write_batch`)."""
        return True

    def remove(self, name: str) -> None:
        """Remove the current key's value (without asking whether its key group is empty: that would scan it)."""
        table = self.tables.get(name)
        group = None if table is None else table.get(self._current_group)
        if group is not None:
            group.pop(self.current_key, None)
            self.mark_changed(name)

    def write_batch(self) -> WriteBatch:
        """What the working set changed: for each key group, the marked keys it holds (every key it holds, in a
        table whose writer does not mark, or in a group replaced whole) and the keys deleted."""
        batch = WriteBatch()
        for name, table in self.tables.items():
            if not isinstance(table, StoredTable):
                continue  # a plain table put here for a moment (a window operator's snapshot layout)
            marks = self.changes.get(name)
            for group_number, group in table.groups.items():
                if group.replaced:
                    batch.clear(name, group_number)
                for key in group.deleted:
                    batch.delete(name, group_number, encode(key))
                written = group.cache if marks is None or group.replaced else [k for k in group.cache if k in marks]
                for key in written:
                    batch.put(name, group_number, encode(key), encode(group.cache[key]))
        return batch

    def flush(self) -> None:
        """Write the working set's changes to the store in one atomic write, then drop the working set."""
        batch = self.write_batch()
        if len(batch):
            self.store.write(batch)
            self.writes += len(batch)
            self.flushes += 1
        self._drop_working_set()

    def _drop_working_set(self) -> None:
        for table in self.tables.values():
            if isinstance(table, StoredTable):
                for group in table.groups.values():
                    group.reset()

    def snapshot(self, key_groups=None):
        """Flush, then read the snapshot from the store (``KeyedStateBackend.snapshot``); the values it holds
        are decoded from the store, shared with nothing."""
        self.flush()
        try:
            return super().snapshot(key_groups)
        finally:
            self._drop_working_set()  # the snapshot only read

    def restore(self, snapshot, key_groups=None) -> None:
        """Replace the key groups of the snapshot that this subtask owns, in the store."""
        super().restore(snapshot, key_groups)
        self.flush()

    def close(self) -> None:
        self.store.close()
