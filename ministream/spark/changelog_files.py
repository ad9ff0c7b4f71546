"""Spark's changelog checkpointing: the ``N.changelog`` and ``N.zip`` files of its RocksDB state store, read back.

With ``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``, the RocksDB state store of each
stateful operator and shuffle partition keeps, in ``state/<operator>/<partition>/``:

- ``<v>.changelog``, written by every batch (batch ``k`` commits version ``v = k + 1``): the batch's state writes,
  compressed with the state store's codec (LZ4 by default: lz4-java's block stream, blocks that start with
  ``LZ4Block``). Decompressed, it is a sequence of records, each ``key length (4 bytes, big-endian), key, value
  length, value``, a removed key having the value length ``-1``; a key length of ``-1`` ends the file. Keys and
  values are Spark's ``UnsafeRow`` bytes after one byte of encoding version: a null bitset (8 bytes per 64
  fields), one 8-byte word per field (a long or a double in place, little-endian; for a string, its offset from
  the row's start in the high 32 bits and its length in the low ones), then the strings' bytes;
- ``<v>.zip``, written now and then by the maintenance task (after ``minDeltasForSnapshot`` versions): a RocksDB
  checkpoint, its ``metadata`` naming the SST files (uploaded once to ``SSTs/`` and shared by later snapshots)
  and counting the keys;
- loading version ``v`` opens the newest zip at or before ``v`` and replays the changelog files after it, which is
  also what the state data source's change feed reads (``readChangeFeed``).

:func:`spark_changelog` runs a running count and sum with these settings and reads all three back; the lesson
``changelog`` compares them with ministream's own changelog (``state/changelog.py``).

>>> unsafe_row(bytes.fromhex("00" + "00" * 8 + "0100000010000000" + "61" + "00" * 7), ["string"])
('a',)
>>> records(bytes.fromhex("00000002" "6b31" "00000001" "76" "00000002" "6b32" "ffffffff" "ffffffff"))
[(b'k1', b'v'), (b'k2', None)]
"""

from __future__ import annotations

import json
import struct
import tempfile
import zipfile
from pathlib import Path

import attrs

from ministream.checkpoints.storage import folder_outline
from ministream.spark.session import spark_session

SETTINGS = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
    "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
    "spark.sql.shuffle.partitions": "1",
}
"""RocksDB with changelog checkpointing, a snapshot every 2 versions looked for 10 times a second, one partition."""


def lz4_block(source: bytes) -> bytes:
    """One LZ4 block decompressed: sequences of a token (literal length, match length), literals, then a match
    copied from ``offset`` bytes back.

    >>> lz4_block(bytes([0x44]) + b"abcd" + bytes([4, 0]))   # "abcd", then 4 + 4 bytes copied from 4 back
    b'abcdabcdabcd'"""
    out = bytearray()
    i = 0
    while i < len(source):
        token = source[i]
        i += 1
        literals, i = _length(source, i, token >> 4)
        out += source[i : i + literals]
        i += literals
        if i >= len(source):
            break  # the last sequence has literals only
        offset = source[i] | source[i + 1] << 8
        matched, i = _length(source, i + 2, token & 0x0F)
        for _ in range(matched + 4):
            out.append(out[-offset])
    return bytes(out)


def _length(source: bytes, i: int, length: int) -> tuple[int, int]:
    """A token's length, with its extra bytes when it is 15 (each 255 asks for another)."""
    if length == 15:
        while True:
            extra = source[i]
            i += 1
            length += extra
            if extra != 255:
                break
    return length, i


def lz4_stream(data: bytes) -> bytes:
    """lz4-java's block stream (Spark's ``lz4`` codec) decompressed: blocks of ``LZ4Block``, a token (method in
    the high bits: 0x10 stored, 0x20 compressed), compressed and decompressed lengths and a checksum
    (little-endian), the block; an empty block ends the stream."""
    out = bytearray()
    i = 0
    while i < len(data):
        if data[i : i + 8] != b"LZ4Block":
            raise ValueError(f"not an LZ4 block stream at byte {i}: {data[i : i + 8]!r}")
        token = data[i + 8]
        compressed, decompressed, _ = struct.unpack_from("<iii", data, i + 9)
        i += 21
        if decompressed == 0:
            break
        block = data[i : i + compressed]
        i += compressed
        out += block if token & 0xF0 == 0x10 else lz4_block(block)
    return bytes(out)


def records(data: bytes) -> list[tuple[bytes, bytes | None]]:
    """A decompressed changelog's records: ``(key, value)``, ``value`` ``None`` for a removed key."""
    out = []
    i = 0
    while True:
        (key_length,) = struct.unpack_from(">i", data, i)
        i += 4
        if key_length == -1:
            return out
        key = data[i : i + key_length]
        (value_length,) = struct.unpack_from(">i", data, i + key_length)
        i += key_length + 4
        out.append((key, None if value_length < 0 else data[i : i + value_length]))
        i += max(value_length, 0)


def unsafe_row(data: bytes, types: list[str]) -> tuple:
    """The fields of an ``UnsafeRow`` after its encoding-version byte, for fields of ``types`` (``"string"``,
    ``"long"``, ``"double"``); a null field is ``None``."""
    row = data[1:]
    bitset = (len(types) + 63) // 64 * 8
    fields = []
    for index, kind in enumerate(types):
        if row[index // 8] >> (index % 8) & 1:
            fields.append(None)
            continue
        word = row[bitset + 8 * index : bitset + 8 * index + 8]
        if kind == "long":
            fields.append(struct.unpack("<q", word)[0])
        elif kind == "double":
            fields.append(struct.unpack("<d", word)[0])
        else:
            (packed,) = struct.unpack("<Q", word)
            offset, length = packed >> 32, packed & 0xFFFFFFFF
            fields.append(row[offset : offset + length].decode("utf-8"))
    return tuple(fields)


@attrs.define
class SparkChangelog:
    """What :func:`spark_changelog` read from a checkpoint location.

    Attributes:
        outline: the location's files (``storage.folder_outline``).
        changelogs: ``{version: [(batch id, change type, *key, *value), ...]}`` decoded from each
            ``state/0/0/<v>.changelog``.
        change_feed: the same rows from the state data source's change feed.
        snapshots: ``{version: (entries of the zip, keys it counts)}`` for each ``<v>.zip``.
    """

    outline: str
    changelogs: dict
    change_feed: list
    snapshots: dict


def spark_changelog(df, key_types: list[str], value_types: list[str], master: str | None = None) -> SparkChangelog:
    """Run a streaming aggregation ``df`` (update mode) with :data:`SETTINGS` and read its changelogs back,
    file by file and through the change feed.

    >>> spark_changelog(twin_df, ["string"], ["long", "double"]).changelogs[1]   # doctest: +SKIP
    [(0, 'update', 'a', 2, 4.0), (0, 'update', 'b', 1, 10.0)]"""
    from ministream.spark.collect import run_query

    spark = spark_session(master)
    # Spark's state store maintenance thread may still be writing a snapshot into the folder as it is removed
    # (seen once in CI: "Directory not empty"): what is left then stays in the temporary folder, as run_query's
    # own checkpoints do
    with tempfile.TemporaryDirectory(prefix="ministream-changelog-", ignore_cleanup_errors=True) as checkpoint:
        run_query(df, "update", conf=SETTINGS, checkpoint_dir=checkpoint)
        folder = Path(checkpoint, "state", "0", "0")
        changelogs = {}
        for path in sorted(folder.glob("*.changelog"), key=lambda p: int(p.stem)):
            version = int(path.stem)
            changelogs[version] = sorted(
                (version - 1, "update" if value is not None else "delete", *unsafe_row(key, key_types))
                + (unsafe_row(value, value_types) if value is not None else (None,) * len(value_types))
                for key, value in records(lz4_stream(path.read_bytes()))
            )
        snapshots = {}
        for path in sorted(folder.glob("*.zip"), key=lambda p: int(p.stem)):
            with zipfile.ZipFile(path) as archive:
                metadata = json.loads(archive.read("metadata").decode().split("\n", 1)[1])
                snapshots[int(path.stem)] = (sorted(archive.namelist()), metadata["numKeys"])
        feed = (
            spark.read.format("statestore")
            .option("readChangeFeed", True)
            .option("changeStartBatchId", 0)
            .load(checkpoint)
            .collect()
        )
        change_feed = sorted(
            (row["batch_id"], row["change_type"], *row["key"], *(row["value"] or [None] * len(value_types)))
            for row in feed
        )
        return SparkChangelog(folder_outline(checkpoint), changelogs, change_feed, snapshots)
