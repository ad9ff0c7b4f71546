"""RocksDB: keyed state in an embedded log-structured merge tree on local disk.

RocksDB is a library, not a server: it runs inside the process and keeps its data in one directory. A write
goes to the **write-ahead log** (``NNNNNN.log``) and to the **memtable**, a sorted structure in memory; when
the memtable is full (64 MiB by default) it is *flushed* to an immutable, sorted **SST file** (``NNNNNN.sst``)
on level 0; background **compactions** merge SST files into larger ones on the levels below, dropping
overwritten and deleted entries. A read looks in the memtable, then in the SST files from the newest, through
the **block cache** (blocks of SST files kept in memory) and per-file Bloom filters. ``MANIFEST`` lists the
live files, ``OPTIONS`` the settings, ``LOG`` what RocksDB did (flushes, compactions).

Flink's ``EmbeddedRocksDBStateBackend`` keeps each subtask's keyed state in one such directory, and its
incremental checkpoints copy only the SST files that are new since the last checkpoint (the others are
immutable, so earlier checkpoints share them); Spark's ``RocksDBStateStoreProvider`` keeps each partition's
state store in one, and uploads its SST files to the checkpoint location (``spark/state_files.py``).

>>> import tempfile
>>> from ministream.state.stores import decode, encode
>>> store = RocksDBStore(tempfile.mkdtemp())
>>> batch = WriteBatch(); batch.put("seen", 3, encode("a"), encode(7)); store.write(batch)
>>> decode(store.get("seen", 3, encode("a"))), store.key_groups("seen"), store.tables()
(7, [3], ['seen'])
>>> store.flush_memtable(); [file["num_entries"] for file in store.sst_files()]
[1]
>>> store.close()
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import rocksdict

from ministream.state.stores import WriteBatch, prefix_of, record_key, split_record_key

MAX_KEY_GROUPS = 1 << 16
"""Key groups are 2 bytes in a record key."""


class RocksDBStore:
    """One RocksDB database in ``directory``, holding the keyed state of one subtask (``stores.KeyValueStore``).

    Args:
        directory: where RocksDB keeps its files (created if missing).
        block_cache: the block cache's size in bytes (RocksDB's default is 32 MiB; a small one shows reads
            going to the SST files).
    """

    name = "rocksdb"

    def __init__(self, directory: str, block_cache: int | None = None):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        if block_cache is not None:
            table = rocksdict.BlockBasedOptions()
            table.set_block_cache(rocksdict.Cache(block_cache))
            options.set_block_based_table_factory(table)
        self.db = rocksdict.Rdict(directory, options)

    def get(self, table: str, key_group: int, key: bytes) -> bytes | None:
        return self.db.get(record_key(table, key_group, key))

    def scan(self, table: str, key_group: int) -> Iterator[tuple[bytes, bytes]]:
        prefix = prefix_of(table, key_group)
        size = len(prefix)
        iterator = self.db.iter()
        iterator.seek(prefix)
        while iterator.valid():
            record = iterator.key()
            if not record.startswith(prefix):
                break
            yield record[size:], iterator.value()
            iterator.next()

    def key_groups(self, table: str) -> list[int]:
        """One seek per key group that holds entries: seek to the table's next group, read where it landed."""
        groups, group = [], 0
        name = table.encode("utf-8") + b"\x00"
        iterator = self.db.iter()
        while group < MAX_KEY_GROUPS:
            iterator.seek(name + group.to_bytes(2, "big"))
            if not iterator.valid() or not iterator.key().startswith(name):
                break
            found = split_record_key(iterator.key())[1]
            groups.append(found)
            group = found + 1
        return groups

    def tables(self) -> list[str]:
        names: list[str] = []
        iterator = self.db.iter()
        iterator.seek_to_first()
        while iterator.valid():
            name = split_record_key(iterator.key())[0]
            names.append(name)
            iterator.seek(name.encode("utf-8") + b"\x01")  # past every record of this table
        return names

    def write(self, batch: WriteBatch) -> None:
        writes = rocksdict.WriteBatch(raw_mode=True)
        for table, group in sorted(batch.cleared):
            writes.delete_range(prefix_of(table, group), prefix_of(table, group + 1))
        for (table, group), keys in batch.deletes.items():
            for key in keys:
                writes.delete(record_key(table, group, key))
        for (table, group), entries in batch.puts.items():
            for key, value in entries.items():
                writes.put(record_key(table, group, key), value)
        self.db.write(writes)

    # -- what a learner can look at ----------------------------------------------------------------------------

    def flush_memtable(self) -> None:
        """Write the memtable to a new SST file now (RocksDB does it by itself when the memtable is full)."""
        self.db.flush()

    def compact(self) -> None:
        """Merge every SST file into the bottom level now, dropping overwritten and deleted entries."""
        self.db.compact_range(None, None)

    def sst_files(self) -> list[dict]:
        """The live SST files: name, size, level, number of entries and of deletions (tombstones)."""
        return list(self.db.live_files())

    def memtable_bytes(self) -> int:
        """The bytes held by the memtables now."""
        return int(self.db.property_int_value("rocksdb.cur-size-all-mem-tables") or 0)

    def disk_bytes(self) -> int:
        """The bytes of every file in the directory (SST files, write-ahead log, MANIFEST, LOG...)."""
        return sum(entry.stat().st_size for entry in os.scandir(self.directory) if entry.is_file())

    def close(self) -> None:
        self.db.close()
