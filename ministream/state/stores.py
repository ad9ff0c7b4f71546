"""Key-value stores: where a store-backed keyed state keeps its entries, as bytes, laid out by key group.

A keyed state backend (``state/keyed.py``) holds tables of ``{key_group: {key: value}}``. A *store* keeps the
same tables outside Python's heap: each entry becomes one record whose key is the table's name, the key group
and the key, and whose value is the value, all encoded as bytes. Two stores implement this interface:

- ``rocksdb_store.RocksDBStore``: RocksDB, an embedded log-structured merge tree on local disk (memtable,
  write-ahead log, SST files, block cache, compactions), as Flink's ``EmbeddedRocksDBStateBackend`` and Spark's
  ``RocksDBStateStoreProvider`` use it;
- ``redis_store.RedisStore``: Redis, an external in-memory server reached over a socket, one hash per table
  and key group.

The interface is small on purpose: a store reads one entry, scans one key group, lists the key groups that hold
entries, and applies a :class:`WriteBatch` (the puts and deletes of one flush) atomically. Everything else (the
working set of a batch, which keys changed, snapshots) is the backend's (``state/stored.py``).

**The record key.** ``table name, 0x00, key group (2 bytes, big-endian), encoded key``: the records of one
table and key group are contiguous, and key groups come in order, so a key group is one range scan and a
rescale can hand whole ranges to another subtask. Flink's RocksDB backend lays its keys out the same way
(``key group | key | namespace``, one column family per state).

>>> record_key("aggregate", 38, encode("alice"))[:12]
b'aggregate\\x00\\x00&'
>>> decode(encode(("alice", (0, 10)))), prefix_of("aggregate", 38) < prefix_of("aggregate", 39)
(('alice', (0, 10)), True)
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Iterator
from typing import Protocol

import attrs

PICKLE_PROTOCOL = 5


def encode(value) -> bytes:
    """A key or a value as bytes: pickle, which keeps tuples apart from lists and handles every value that state
    holds (rows, accumulators, windows as tuples). The same value always encodes to the same bytes, which a key
    needs: it is looked up by its bytes."""
    return pickle.dumps(value, protocol=PICKLE_PROTOCOL)


def decode(data: bytes):
    """The value that :func:`encode` made these bytes from (a fresh copy every time)."""
    return pickle.loads(data)


def prefix_of(table: str, key_group: int) -> bytes:
    """The bytes every record key of one table and key group starts with."""
    return table.encode("utf-8") + b"\x00" + key_group.to_bytes(2, "big")


def record_key(table: str, key_group: int, key: bytes) -> bytes:
    """The store's key of one entry: :func:`prefix_of` then the encoded key."""
    return prefix_of(table, key_group) + key


def split_record_key(record: bytes) -> tuple[str, int, bytes]:
    """``(table, key group, encoded key)`` of a record key.

    >>> split_record_key(record_key("seen", 5, b"k"))
    ('seen', 5, b'k')
    """
    name, _, rest = record.partition(b"\x00")
    return name.decode("utf-8"), int.from_bytes(rest[:2], "big"), rest[2:]


@attrs.define
class WriteBatch:
    """What one flush writes: per table and key group, the entries put and the keys deleted, and the key
    groups cleared first (a restore replaces whole key groups). A store applies it in one atomic write
    (RocksDB's ``WriteBatch``, a Redis ``MULTI``/``EXEC`` transaction), so a crash never leaves half of it.

    >>> batch = WriteBatch(); batch.put("seen", 3, encode("a"), encode(1)); batch.delete("seen", 3, encode("b"))
    >>> len(batch), batch.tables()
    (2, ['seen'])
    """

    puts: dict[tuple[str, int], dict[bytes, bytes]] = attrs.field(factory=dict)
    deletes: dict[tuple[str, int], set[bytes]] = attrs.field(factory=dict)
    cleared: set[tuple[str, int]] = attrs.field(factory=set)

    def put(self, table: str, key_group: int, key: bytes, value: bytes) -> None:
        self.puts.setdefault((table, key_group), {})[key] = value
        self.deletes.get((table, key_group), set()).discard(key)

    def delete(self, table: str, key_group: int, key: bytes) -> None:
        self.deletes.setdefault((table, key_group), set()).add(key)
        self.puts.get((table, key_group), {}).pop(key, None)

    def clear(self, table: str, key_group: int) -> None:
        """Delete every entry of one table's key group before the puts."""
        self.cleared.add((table, key_group))
        self.puts.pop((table, key_group), None)
        self.deletes.pop((table, key_group), None)

    def tables(self) -> list[str]:
        return sorted({table for table, _ in [*self.puts, *self.deletes, *self.cleared]})

    def __len__(self) -> int:
        return sum(map(len, self.puts.values())) + sum(map(len, self.deletes.values())) + len(self.cleared)


class KeyValueStore(Protocol):
    """What a store-backed keyed state needs from a store (``state/stored.py``). Keys and values are bytes
    (:func:`encode`); ``key_group`` numbers as in ``keygroups``."""

    name: str
    """``"rocksdb"`` or ``"redis"``: for messages and benchmarks."""

    def get(self, table: str, key_group: int, key: bytes) -> bytes | None:
        """One entry's value, ``None`` when the key has none."""

    def scan(self, table: str, key_group: int) -> Iterator[tuple[bytes, bytes]]:
        """Every ``(key, value)`` of one table's key group."""

    def key_groups(self, table: str) -> list[int]:
        """The key groups of one table that hold entries, in order."""

    def tables(self) -> list[str]:
        """The names of the tables that hold entries."""

    def write(self, batch: WriteBatch) -> None:
        """Apply a batch of puts and deletes, atomically."""

    def close(self) -> None:
        """Release the store (files stay where they are; a directory or a server is removed by its owner)."""


def entries_of(store: KeyValueStore, table: str, key_groups: Iterable[int] | None = None) -> dict[int, dict]:
    """One table of a store decoded into ``{key_group: {key: value}}``: what ``ministream state`` prints.

    >>> entries_of(_ListStore({("seen", 3): {encode("a"): encode(7)}}), "seen")
    {3: {'a': 7}}
    """
    groups = store.key_groups(table) if key_groups is None else key_groups
    out = {}
    for group in groups:
        entries = {decode(key): decode(value) for key, value in store.scan(table, group)}
        if entries:
            out[group] = entries
    return out


class _ListStore:
    """A store in a dict, for the examples of this module: ``{(table, key_group): {key: value}}``."""

    name = "dict"

    def __init__(self, data: dict):
        self.data = data

    def scan(self, table: str, key_group: int) -> Iterator[tuple[bytes, bytes]]:
        return iter(sorted(self.data.get((table, key_group), {}).items()))

    def key_groups(self, table: str) -> list[int]:
        return sorted(group for name, group in self.data if name == table)
