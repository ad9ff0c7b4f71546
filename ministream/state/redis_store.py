"""Redis: keyed state in an external in-memory store, reached over a socket.

An *external* store is a server of its own (Redis, Cassandra, TiKV): every read that misses the working set is
a round trip over the network, and the state outlives the streaming job, which a crash then leaves half
written unless the writes are versioned (``lessons/state_backends.py`` shows both). Here every subtask's state
lives under its own key prefix (``<namespace>:``): one Redis **hash** per table and key group
(``<namespace>:<table>:<key group>``), whose fields are the encoded keys; a flush is one ``MULTI``/``EXEC``
transaction, so Redis applies it whole or not at all.

>>> from ministream.state.redis_server import shared_server
>>> from ministream.state.stores import decode, encode
>>> store = RedisStore(shared_server().client, "doc")
>>> batch = WriteBatch(); batch.put("seen", 3, encode("a"), encode(7)); store.write(batch)
>>> decode(store.get("seen", 3, encode("a"))), store.key_groups("seen"), store.tables()
(7, [3], ['seen'])
>>> store.drop(); store.tables()
[]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import redis

from ministream.state.stores import WriteBatch


class RedisStore:
    """The keyed state of one subtask in a Redis server, under the key prefix ``namespace``
    (``stores.KeyValueStore``)."""

    name = "redis"

    def __init__(self, client: redis.Redis, namespace: str):
        self.client = client
        self.namespace = namespace

    def _hash(self, table: str, key_group: int) -> str:
        return f"{self.namespace}:{table}:{key_group}"

    def get(self, table: str, key_group: int, key: bytes) -> bytes | None:
        return self.client.hget(self._hash(table, key_group), key)  # type: ignore[return-value]

    def scan(self, table: str, key_group: int) -> Iterator[tuple[bytes, bytes]]:
        entries = cast(dict[bytes, bytes], self.client.hgetall(self._hash(table, key_group)))
        return iter(sorted(entries.items()))

    def _names(self) -> list[tuple[str, int]]:
        found = []
        for name in self.client.scan_iter(match=f"{self.namespace}:*", count=1000):
            table, _, group = name.decode("utf-8")[len(self.namespace) + 1 :].rpartition(":")
            found.append((table, int(group)))
        return sorted(found)

    def key_groups(self, table: str) -> list[int]:
        return [group for name, group in self._names() if name == table]

    def tables(self) -> list[str]:
        return sorted({name for name, _ in self._names()})

    def write(self, batch: WriteBatch) -> None:
        pipe = self.client.pipeline(transaction=True)
        for table, group in sorted(batch.cleared):
            pipe.delete(self._hash(table, group))
        for (table, group), keys in batch.deletes.items():
            if keys:
                pipe.hdel(self._hash(table, group), *keys)
        for (table, group), entries in batch.puts.items():
            if entries:
                pipe.hset(self._hash(table, group), mapping=entries)  # type: ignore[arg-type]
        pipe.execute()

    def drop(self) -> None:
        """Delete every key of this store's namespace."""
        names = list(self.client.scan_iter(match=f"{self.namespace}:*", count=1000))
        if names:
            self.client.delete(*names)

    def memory_bytes(self) -> int:
        """The bytes Redis says this store's hashes take (``MEMORY USAGE`` of each)."""
        return sum(
            int(self.client.memory_usage(name) or 0)
            for name in self.client.scan_iter(match=f"{self.namespace}:*", count=1000)
        )

    def close(self) -> None:
        """Nothing to release: the connection is the server's, shared by every store of the process."""
