"""State backends: where every keyed subtask of a run keeps its state, chosen per run.

``run_microbatch(flow, state_backend="rocksdb")`` (and ``run_continuous``, ``run_with_recovery``,
``Lesson.run``) runs the same pipeline with its keyed state

- ``"memory"`` (the default): in Python dicts on the heap, as Flink's ``HashMapStateBackend`` and Spark's
  ``HDFSBackedStateStoreProvider`` keep it (``state/keyed.py``);
- ``"rocksdb"``: in one RocksDB database per subtask, in a temporary directory on local disk, as Flink's
  ``EmbeddedRocksDBStateBackend`` and Spark's ``RocksDBStateStoreProvider`` keep it (``state/rocksdb_store.py``);
- ``"redis"``: in a Redis server, an external store that ministream starts on 127.0.0.1 (``state/redis_store.py``).

The output does not depend on the backend: the tests run every lesson that keeps keyed state on all three.
How an operator's tables are backed by a store, and why that way, is ``state/stored.py``.

A :class:`StateBackends` makes the backend of each keyed subtask (``create(step, subtask)``); the physical
graph calls it once per subtask (``core/physical.py``), and each attempt of a recovering run builds new
subtasks, so a new store. A backend holds only what the run is doing: what survives a crash is the checkpoint.

>>> backends = state_backends("rocksdb")
>>> backend = backends.create("totals", 0)
>>> backend.table("seen").setdefault(3, {})["a"] = 1; backend.flush(); backend.snapshot()
{3: {'seen': {'a': 1}}}
>>> backends.describe()
'rocksdb: 1 database(s) under ministream-rocksdb-…'
>>> backends.close()
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import weakref
from typing import Protocol

import redis

from ministream.errors import PipelineError
from ministream.state.keyed import KeyedStateBackend
from ministream.state.redis_server import RedisServer, shared_server
from ministream.state.redis_store import RedisStore
from ministream.state.rocksdb_store import RocksDBStore
from ministream.state.stored import StoreBackedState

BACKENDS = ("memory", "rocksdb", "redis")
"""The names ``state_backend=`` takes."""


class StateBackends(Protocol):
    """Makes the keyed state backend of each keyed subtask of a run."""

    name: str

    def create(self, step: str, subtask: int) -> KeyedStateBackend:
        """A new, empty backend for subtask ``subtask`` of step ``step``."""

    def close(self) -> None:
        """Release every store made (close the databases, delete their keys or directories)."""


class MemoryBackends:
    """Keyed state in Python dicts (:class:`~ministream.state.keyed.KeyedStateBackend`)."""

    name = "memory"

    def create(self, step: str, subtask: int) -> KeyedStateBackend:
        return KeyedStateBackend()

    def describe(self) -> str:
        return "memory: Python dicts on the heap"

    def close(self) -> None:
        pass


MEMORY = MemoryBackends()


class RocksDBBackends:
    """Keyed state in RocksDB: one database per subtask, ``<directory>/<n>-<step>-<subtask>`` (``n`` counts the
    databases made, so each attempt of a recovering run gets new ones). ``directory``: a new temporary one,
    removed by :meth:`close` or when the process exits, unless given (then it is kept, to look at)."""

    name = "rocksdb"

    def __init__(self, directory: str | None = None, block_cache: int | None = None):
        self.keep = directory is not None
        self.directory = directory if directory is not None else tempfile.mkdtemp(prefix="ministream-rocksdb-")
        self.block_cache = block_cache
        self.stores: list[RocksDBStore] = []
        self._numbers = itertools.count()
        self._finalizer = weakref.finalize(self, _close_rocksdb, self.stores, None if self.keep else self.directory)

    def create(self, step: str, subtask: int) -> KeyedStateBackend:
        path = os.path.join(self.directory, f"{next(self._numbers)}-{step}-{subtask}")
        store = RocksDBStore(path, self.block_cache)
        self.stores.append(store)
        return StoreBackedState(store)

    def describe(self) -> str:
        where = self.directory if self.keep else os.path.basename(self.directory)[:19] + "…"
        return f"rocksdb: {len(self.stores)} database(s) under {where}"

    def close(self) -> None:
        self._finalizer()


def _close_rocksdb(stores: list, directory: str | None) -> None:
    for store in stores:
        store.close()
    stores.clear()
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)


class RedisBackends:
    """Keyed state in a Redis server (the process's own, started on first use: ``redis_server``), each subtask
    under the key prefix ``ministream:<run>:<n>:<step>:<subtask>``; :meth:`close` deletes the run's keys."""

    name = "redis"
    _runs = itertools.count()

    def __init__(self, server: RedisServer | None = None):
        self.server = server if server is not None else shared_server()
        self.prefix = f"ministream:{os.getpid()}-{next(self._runs)}"
        self.stores: list[RedisStore] = []
        self._numbers = itertools.count()
        self._finalizer = weakref.finalize(self, _drop_redis, self.stores)

    def create(self, step: str, subtask: int) -> KeyedStateBackend:
        store = RedisStore(self.server.client, f"{self.prefix}:{next(self._numbers)}:{step}:{subtask}")
        self.stores.append(store)
        return StoreBackedState(store)

    def describe(self) -> str:
        return f"redis: {len(self.stores)} namespace(s) on 127.0.0.1:{self.server.port}"

    def close(self) -> None:
        self._finalizer()


def _drop_redis(stores: list) -> None:
    for store in stores:
        with contextlib.suppress(redis.RedisError):  # the server may be gone already at exit: nothing left then
            store.drop()
    stores.clear()


def state_backends(backend: str | StateBackends | None = None) -> StateBackends:
    """The :class:`StateBackends` for ``backend``: a name of :data:`BACKENDS` (``None``: memory), or one made
    already (returned as it is).

    >>> state_backends().name, state_backends("memory") is MEMORY
    ('memory', True)
    >>> state_backends("disk")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: state backend 'disk' is unknown: use one of memory, rocksdb, redis
    """
    if backend is None or backend == "memory":
        return MEMORY
    if backend == "rocksdb":
        return RocksDBBackends()
    if backend == "redis":
        return RedisBackends()
    if isinstance(backend, str):
        raise PipelineError(f"state backend {backend!r} is unknown: use one of {', '.join(BACKENDS)}")
    return backend
