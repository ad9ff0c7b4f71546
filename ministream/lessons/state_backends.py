"""Lesson ``state-backends``: one pipeline, its keyed state in memory, in RocksDB and in Redis, the same output.

A running count and sum per key, whose state lives where the parameter ``backend`` says (``state/backends.py``):

- ``memory``: Python dicts on the heap (Spark's ``HDFSBackedStateStoreProvider`` keeps a hash map per partition
  too, and writes each batch's changes to ``N.delta`` files);
- ``rocksdb``: a RocksDB database per subtask on local disk (Spark's ``RocksDBStateStoreProvider``, the twin's
  provider for this value);
- ``redis``: an external Redis server that ministream starts on 127.0.0.1 (Spark has no external state store;
  the twin keeps its default provider).

The output is the same on all three: where state lives changes what it costs (``ministream bench --state``),
never what it computes. Why local stores won is the crash that :func:`external_store_crash` plays: a job that
writes its state straight to an external store and crashes between that write and its checkpoint replays the
batch on restart and counts it twice; with writes *versioned by checkpoint* (the batch id), the replay rewrites
the same version and the restart reads the state as of its checkpoint.

>>> for backend in ("memory", "rocksdb", "redis"):
...     print(backend, [sorted((r["key"], r["count"]) for r in b.rows) for b in LESSON.run(params={"backend": backend}).output()])
memory [[('a', 2), ('b', 1)], [('a', 3), ('c', 1)], [('b', 3)]]
rocksdb [[('a', 2), ('b', 1)], [('a', 3), ('c', 1)], [('b', 3)]]
redis [[('a', 2), ('b', 1)], [('a', 3), ('c', 1)], [('b', 3)]]
>>> external_store_crash(versioned=False)      # batch 1 (a and c) counted twice
{'a': 4, 'b': 3, 'c': 2}
>>> external_store_crash(versioned=True)
{'a': 3, 'b': 3, 'c': 1}
"""

from __future__ import annotations

import itertools

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.state.redis_server import shared_server

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(2, "b", 10), event(3, "a", 3)],
    [event(4, "a", 5), event(5, "c", 1)],
    [event(6, "b", 2), event(7, "b", 1)],
]

SPARK_PROVIDERS = {
    "memory": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    "redis": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
}
"""The twin's state store for each backend: Spark ships the two local ones, and no external one."""


def pipeline(script, params) -> Dataflow:
    """ministream: key by ``key``, then a running count and sum per key (its state where ``backend`` says)."""
    flow = Dataflow("state-backends")
    events = flow.source("events", ScriptedSource(script))
    events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("key").agg(count, sum)``; the state store provider is the lesson's ``spark_conf``."""
    from pyspark.sql import functions as F

    return inputs["events"].groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


def random_script(rng, params) -> list[list[dict]]:
    """A random script for ``ministream fuzz``: 3 to 5 batches of up to 6 events over 4 keys (only keys and values
    matter to a running count)."""
    return [
        [event(rng.randrange(60), rng.choice("abcd"), rng.randrange(1, 10)) for _ in range(rng.randrange(7))]
        for _ in range(rng.randrange(3, 6))
    ]


def spark_conf(params) -> dict:
    """Spark's state store provider for the lesson's backend."""
    return {"spark.sql.streaming.stateStore.providerClass": SPARK_PROVIDERS[params["backend"]]}


_runs = itertools.count()


def external_store_crash(versioned: bool, script=None, crash_in_batch: int = 1) -> dict:
    """Counts per key kept in Redis by a job that writes each batch's state to the store, then commits the batch
    (its checkpoint: the offsets it read). It crashes in batch ``crash_in_batch`` after the state write and
    before the commit, restarts from the last committed batch and runs the rest again, as Spark and Flink do.

    - naive writes (``versioned=False``): ``HINCRBY`` adds the batch's counts to the store; the replayed batch
      adds them a second time;
    - versioned writes: the state of batch ``b`` is written as version ``b`` (one field per version in the key's
      hash, computed from the latest version before ``b``); a replay rewrites the same version, and a reader
      takes the latest version at or before the last committed batch. Spark's state store does this with its
      ``N.delta`` files: a replayed batch writes version N again.

    Returns the counts the store holds (as of the last commit, for versioned writes) once the job has finished.
    """
    script = DEFAULT_SCRIPT if script is None else script
    client = shared_server().client
    prefix = f"ministream:crash:{next(_runs)}"

    def write_state(batch_id: int, rows: list) -> None:
        counts: dict = {}
        for row in rows:
            counts[row["key"]] = counts.get(row["key"], 0) + 1
        pipe = client.pipeline(transaction=True)
        for key, added in counts.items():
            if versioned:
                pipe.hset(f"{prefix}:{key}", str(batch_id), _as_of(client, f"{prefix}:{key}", batch_id - 1) + added)
            else:
                pipe.hincrby(prefix, key, added)
        pipe.execute()

    committed = -1
    for batch_id, rows in enumerate(script):  # the first attempt: crashes after the state write of one batch
        write_state(batch_id, rows)
        if batch_id == crash_in_batch:
            break  # the crash: the state is written, the batch is not committed
        committed = batch_id
    for batch_id in range(committed + 1, len(script)):  # the restart: from the batch after the last commit
        write_state(batch_id, script[batch_id])
        committed = batch_id
    try:
        if not versioned:
            return {key.decode(): int(value) for key, value in sorted(client.hgetall(prefix).items())}
        keys = sorted(name.decode()[len(prefix) + 1 :] for name in client.scan_iter(match=f"{prefix}:*"))
        return {key: _as_of(client, f"{prefix}:{key}", committed) for key in keys}
    finally:
        names = [prefix, *client.scan_iter(match=f"{prefix}:*")]
        client.delete(*names)


def _as_of(client, name: str, batch_id: int) -> int:
    """A versioned count as of ``batch_id``: its latest version at or before it (0 when none)."""
    versions = {int(version): int(value) for version, value in client.hgetall(name).items()}
    before = [version for version in versions if version <= batch_id]
    return versions[max(before)] if before else 0


LESSON = Lesson(
    name="state-backends",
    title="State backends: the same running count with its state in memory, in RocksDB and in Redis",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "backend",
            "rocksdb",
            "where keyed state lives: memory, rocksdb (Spark: RocksDBStateStoreProvider) or redis",
            kind="choice",
            choices=("memory", "rocksdb", "redis"),
        )
    ],
    output_mode="update",
    spark_conf=spark_conf,
    random_script=random_script,
    state_backend=lambda params: params["backend"],
    doc=__doc__,
)
