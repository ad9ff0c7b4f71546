"""Lesson ``changelog``: checkpoints that copy no state; each subtask logs its writes, a checkpoint records where.

A running count and sum per key, checkpointed after every micro-batch in *changelog mode*
(``state/changelog.py``): every keyed subtask appends the batch's state writes to its own log (record ``v`` is
the state store's version ``v``, the state after batch ``v - 1``), materialises its whole state every
``materialize_every`` records, and the checkpoint keeps only a position in the log. The sink crashes in batch
``crash_batch`` after writing ``after_rows`` rows, *after* the subtask has logged that batch's writes: the
restarted job restores checkpoint ``crash_batch - 1``, whose position stops one record short, so the batch's
record is not replayed, and the batch runs again and writes it again. The output is the failure-free one; so
it is for a crash at *any* record (:func:`crash_at_every_record`).

Two logs, two jobs. The **offsets log** and **commit log** are Spark's write-ahead log of *source positions*:
``offsets/k`` is written before batch ``k`` reads a row, ``commits/k`` after its state and sinks are done
(``checkpoints/coordinator.py``); a crash between them replays batch ``k`` with the same offsets. The
**changelog** is a log of *state writes*: it makes the state's side of the checkpoint cheap (a few changed
keys, not the whole state) and lets recovery rebuild the state of any committed batch from a snapshot and the
records after it. Spark's twin runs the same query on its RocksDB state store with changelog checkpointing
(``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``): ``state/0/<partition>/<v>.changelog``
per batch, a ``<v>.zip`` snapshot now and then; its change feed reads the changelog files back
(``spark/changelog_files.py``).

>>> run = LESSON.run()
>>> [(attempt.restored_from, attempt.crash) for attempt in run.attempts]
[(None, 'the sink crashed while writing batch 3, after 1 of its 2 rows'), (2, None)]
>>> [sorted((r["key"], r["count"]) for r in batch.rows) for batch in run.output()]
[[('a', 2), ('b', 1)], [('a', 3), ('c', 1)], [('b', 3)], [('a', 4), ('d', 1)], [('c', 2)], [('a', 5), ('b', 4)]]
>>> print(log_outline(run.changelogs))   # retain=2: what recovering checkpoint 4 or 5 needs
totals/0: 4.snapshot 5.changelog 6.changelog
"""

from __future__ import annotations

import attrs

from ministream.checkpoints.recovery import RecoveredRun, run_with_recovery
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.faults import crash_at
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.checkpoint_recovery import RecoveryLesson
from ministream.lessons.lesson import Param, event
from ministream.models.microbatch import run_microbatch
from ministream.state.changelog import ChangelogBackends, ChangelogStorage

DEFAULT_SCRIPT = [
    [event(1, "a", 1), event(2, "b", 10), event(3, "a", 3)],
    [event(4, "a", 5), event(5, "c", 1)],
    [event(6, "b", 2), event(7, "b", 1)],
    [event(8, "a", 2), event(9, "d", 4)],
    [event(10, "c", 3)],
    [event(11, "a", 1), event(12, "b", 5)],
]

RETAIN = 2
"""Checkpoints kept, and recoverable from the compacted logs."""

SPARK_CONF = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
}
"""The twin's state store: RocksDB, checkpointed as changelog files."""


def pipeline(script, params) -> Dataflow:
    """ministream: key by ``key``, then a running count and sum per key (checkpointed as changelogs)."""
    flow = Dataflow("changelog")
    events = flow.source("events", ScriptedSource(script))
    events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("key").agg(count, sum)`` on the RocksDB store with changelog checkpointing."""
    from pyspark.sql import functions as F

    return inputs["events"].groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


def random_script(rng, params) -> list[list[dict]]:
    """A random script for ``ministream fuzz``: at least ``crash_batch + 1`` batches of 1 to 4 events over 4
    keys, so that both engines reach the batch whose sink crashes."""
    return [
        [event(rng.randrange(60), rng.choice("abcd"), rng.randrange(1, 10)) for _ in range(rng.randrange(1, 5))]
        for _ in range(params["crash_batch"] + 1 + rng.randrange(3))
    ]


def changelog_backends(values: dict, storage: ChangelogStorage | None = None) -> ChangelogBackends:
    """The lesson's state backends: ``backend`` in changelog mode, a snapshot every ``materialize_every``
    records, logs compacted to what the last :data:`RETAIN` checkpoints need."""
    return ChangelogBackends(
        values["backend"],
        storage if storage is not None else ChangelogStorage(),
        materialize_every=values["materialize_every"],
        retain=RETAIN,
    )


@attrs.define
class ChangelogRun(RecoveredRun):
    """A recovering run in changelog mode, with the changelogs it wrote (``changelogs``)."""

    changelogs: ChangelogStorage | None = None


class ChangelogLesson(RecoveryLesson):
    """A recovery lesson whose keyed state is checkpointed as changelogs (in ministream and in Spark)."""

    def recovery_settings(self, values: dict, parallelism: int) -> dict:
        return {"parallelism": parallelism, "storage": MemoryStorage(retain=RETAIN)}

    def spark_settings(self, values: dict) -> dict:
        return {"conf": SPARK_CONF}

    def run(self, script=None, params=None, **settings):
        """The pipeline, crashed and recovered with its state in changelogs (``run.changelogs``); a
        ``state_backend`` name replaces the parameter ``backend``."""
        values = self.resolve_params(params)
        backends = settings.pop("state_backend", None)
        if not isinstance(backends, ChangelogBackends):  # a backend's name, or none: the lesson's, in changelog mode
            backends = changelog_backends(values if backends is None else {**values, "backend": backends})
        run = super().run(script, params, state_backend=backends, **settings)
        return ChangelogRun(**attrs.asdict(run, recurse=False), changelogs=backends.storage)


def log_outline(storage: ChangelogStorage) -> str:
    """The files of every log, one line per log.

    >>> storage = ChangelogStorage(); storage.write("t/0", 1, "changelog", None)
    >>> print(log_outline(storage))
    t/0: 1.changelog"""
    return "\n".join(f"{log}: {' '.join(storage.files(log))}" for log in storage.logs())


def describe_record(storage: ChangelogStorage, log: str, version: int) -> str:
    """One record of a log as the writes it holds, one line each: ``put key = value`` or ``delete key``.

    >>> run = LESSON.run()
    >>> print(describe_record(run.changelogs, "totals/0", 6))
    put 'a' = [5, 12.0]
    put 'b' = [4, 18.0]"""
    record = storage.record(log, version)
    lines = []
    for states in record.updated.values():
        for entries in states.values():
            lines += [f"put {key!r} = {value!r}" for key, value in entries.items()]
    for states in record.removed.values():
        for keys in states.values():
            lines += [f"delete {key!r}" for key in keys]
    return "\n".join(sorted(lines))


def changelog_rows(storage: ChangelogStorage, log: str, versions) -> list[tuple[int, str, str, int, float]]:
    """The records of a log as Spark's change feed shows an aggregation's changelog: ``(batch id, change
    type, key, count, sum)`` for every write, record ``v`` being batch ``v - 1``.

    >>> changelog_rows(LESSON.run().changelogs, "totals/0", [6])
    [(5, 'update', 'a', 5, 12.0), (5, 'update', 'b', 4, 18.0)]"""
    rows = []
    for version in versions:
        record = storage.record(log, version)
        for states in record.updated.values():
            for key, (count, total) in states.get("aggregate", {}).items():
                rows.append((version - 1, "update", key, count, total))
        for states in record.removed.values():
            for key in states.get("aggregate", []):
                rows.append((version - 1, "delete", key, None, None))
    return sorted(rows)


@attrs.frozen
class CrashPoint:
    """One crash of :func:`crash_at_every_record`: the source crashed before reading record ``record``; the job
    restored checkpoint ``restored_from`` (``None``: none yet), replayed ``replayed`` log records, and its
    output ``equal`` the failure-free one."""

    record: int
    restored_from: int | None
    replayed: int
    equal: bool


def crash_at_every_record(script=None, params: dict | None = None, parallelism: int = 1) -> list[CrashPoint]:
    """Crash the job once before each record of the script in turn, recover in changelog mode, and compare the
    output with the failure-free run's.

    >>> points = crash_at_every_record()
    >>> all(point.equal for point in points), len(points), max(point.replayed for point in points)
    (True, 12, 2)
    """
    values = LESSON.resolve_params(params)
    script = DEFAULT_SCRIPT if script is None else script
    expected = _by_batch(run_microbatch(pipeline(script, values), output_mode="update").output())
    points = []
    for record in range(sum(map(len, script))):
        flow = pipeline(script, values)
        crash_at(flow, record)
        storage = ChangelogStorage()
        run = run_with_recovery(
            flow,
            output_mode="update",
            parallelism=parallelism,
            storage=MemoryStorage(retain=RETAIN),
            state_backend=changelog_backends(values, storage),
        )
        points.append(
            CrashPoint(record, run.attempts[-1].restored_from, storage.replayed, _by_batch(run.output()) == expected)
        )
    return points


def checkpoint_bytes(keys: int, changed: int, batches: int, materialize_every: int = 5) -> dict[str, list[int]]:
    """What each checkpoint of a running count writes, in bytes, when batch 0 brings ``keys`` keys and each later
    batch changes ``changed`` of them: ``"full"`` checkpoints, ``"incremental"`` ones (a full one, then up to 4
    deltas), and in ``"changelog"`` mode the checkpoint's position (``"position"``) and the log's files written
    at that checkpoint, its record and, every ``materialize_every`` records, its snapshot (``"log"``).

    >>> sizes = checkpoint_bytes(keys=1_000, changed=10, batches=3, materialize_every=2)
    >>> sizes["full"], sizes["position"]
    ([21275, 21275, 21275], [128, 125, 125])
    >>> sizes["incremental"], sizes["log"]
    ([21275, 549, 549], [23408, 23747, 423])
    """
    script = [[{"key": f"k{i}", "value": 1.0} for i in range(keys)]]
    script += [
        [{"key": f"k{(b * changed + i) % keys}", "value": 1.0} for i in range(changed)] for b in range(1, batches)
    ]
    values = LESSON.resolve_params()

    def state_files(storage: MemoryStorage) -> list[int]:
        return [
            sum(len(data) for name, data in storage.files[n].items() if name.startswith("state/"))
            for n in storage.checkpoint_ids()
        ]

    out = {}
    for name, settings in (("full", {}), ("incremental", {"incremental": 4})):
        storage = MemoryStorage()
        run_with_recovery(pipeline(script, values), output_mode="update", storage=storage, **settings)
        out[name] = state_files(storage)
    storage, logs = MemoryStorage(), ChangelogStorage()
    backends = ChangelogBackends("memory", logs, materialize_every=materialize_every)
    run_with_recovery(pipeline(script, values), output_mode="update", storage=storage, state_backend=backends)
    out["position"] = state_files(storage)
    written = logs.memory["totals/0"]
    out["log"] = [
        len(written[f"{v}.changelog"]) + len(written.get(f"{v}.snapshot", b"")) for v in range(1, batches + 1)
    ]
    return out


def _by_batch(batches) -> list:
    return [(batch.batch_id, sorted(map(repr, batch.rows))) for batch in batches]


LESSON = ChangelogLesson(
    name="changelog",
    title="Changelog checkpoints: each subtask logs its state writes, a checkpoint records a log position",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("crash_batch", 3, "the micro-batch in which the sink crashes, after the state is logged", kind="int"),
        Param("after_rows", 1, "how many of that batch's rows the sink writes before it crashes", kind="int"),
        Param(
            "backend",
            "memory",
            "where keyed state lives between checkpoints: memory, rocksdb or redis",
            kind="choice",
            choices=("memory", "rocksdb", "redis"),
        ),
        Param("materialize_every", 3, "a log materialises a snapshot every this many records", kind="int"),
    ],
    output_mode="update",
    spark_conf=SPARK_CONF,
    random_script=random_script,
    doc=__doc__,
)
