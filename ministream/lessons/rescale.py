"""Lesson ``rescale``: restore a checkpoint with another parallelism. ministream moves keyed state by key
group; Spark keeps the number of state partitions the checkpoint was started with.

A running count per user, crashed in batch ``crash_batch`` and restored. ministream stores keyed state by *key
group* (a stable hash of the key modulo 128, ``state/keygroups.py``); subtask i of n owns a contiguous range of
groups, so a checkpoint taken by ``before`` subtasks can be split among ``after`` subtasks: each takes the
groups of its new range. Spark stores state by *shuffle partition* (the key's hash modulo
``spark.sql.shuffle.partitions``), and that number is written into every ``offsets/N`` of the checkpoint: a
query restarted with another setting keeps the checkpoint's number (changing it would send keys to partitions
that do not hold their state). To change it, Spark needs a new checkpoint, and so a reprocessing.

The output is the same either way, which ``ministream compare rescale`` checks.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["user"], r["count"]) for r in batch.rows))
0 [('alice', 1), ('bob', 1), ('erin', 1), ('heidi', 1)]
1 [('alice', 2), ('bob', 2), ('heidi', 2)]
2 [('alice', 3), ('bob', 3), ('erin', 2)]
>>> [(attempt.parallelism, attempt.restored_from) for attempt in LESSON.run().attempts]
[(2, None), (4, 0)]
>>> keys_by_subtask(LESSON.run().graph, "counts")
{0: ['heidi'], 1: ['alice'], 2: ['bob'], 3: ['erin']}
"""

from __future__ import annotations

from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.checkpoint_recovery import RecoveryLesson
from ministream.lessons.lesson import BASE_TIME, Param, event
from ministream.models.microbatch import run_microbatch


def visit(second: float, user: str, value: float = 1.0) -> dict:
    """A visit of ``user``, ``second`` seconds after 10:00:00 on 2024-01-01 (UTC).

    >>> visit(5, "alice")
    {'ts': 1704103205000, 'value': 1.0, 'user': 'alice'}"""
    row = event(second, "", value)
    del row["key"]
    return {**row, "user": user}


DEFAULT_SCRIPT = [
    [visit(1, "alice"), visit(2, "bob"), visit(3, "erin"), visit(4, "heidi")],
    [visit(5, "bob"), visit(6, "alice"), visit(7, "heidi")],
    [visit(8, "erin"), visit(9, "alice"), visit(10, "bob")],
]
"""Four users whose key groups (38, 82, 106, 22) fall in four different subtasks at parallelism 4."""


USERS = ("alice", "bob", "carol", "erin", "heidi", "judy")
"""Users for random scripts: their key groups (38, 82, 47, 106, 22, 71) fall in both subtasks at parallelism
2 and in all four at parallelism 4, so a restore moves some of them and leaves others where they were."""


def random_script(rng, params) -> list:
    """Random visits (for ``ministream fuzz``): a few users in 2 to 4 batches more than ``crash_batch``, so
    that both engines reach the batch whose sink crashes and run on after the restore; some batches are
    empty, the last one is not (an events file keeps every batch).

    >>> import random
    >>> script = random_script(random.Random(1), LESSON.resolve_params())
    >>> len(script) >= 3 and script[-1] != [] and {row["user"] for batch in script for row in batch} <= set(USERS)
    True
    """
    script, now = [], BASE_TIME
    length = rng.randint(params["crash_batch"] + 2, params["crash_batch"] + 4)
    for batch_id in range(length):
        rows = []
        if batch_id == length - 1 or rng.random() >= 0.15:  # else an empty batch
            for _ in range(rng.randint(1, 4)):
                now += rng.choice([0, 1_000, 2_000])
                rows.append({"ts": now, "value": float(rng.randint(1, 9)), "user": rng.choice(USERS)})
        script.append(rows)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: a running count and sum of visits per user."""
    flow = Dataflow("rescale")
    visits = flow.source("visits", ScriptedSource(script))
    visits.key_by("user").aggregate("counts", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``groupBy("user").agg(count, sum)``."""
    from pyspark.sql import functions as F

    return inputs["events"].groupBy("user").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


def keys_by_subtask(graph, step: str) -> dict[int, list]:
    """Which keys each subtask of a keyed step holds in its state (``{subtask: [keys]}``)."""
    return {subtask.index: sorted(subtask.operator.ctx.state.keys("aggregate")) for subtask in graph.by_step[step]}


def keys_moved(params: dict | None = None) -> tuple[dict[int, list], dict[int, list]]:
    """Which keys each subtask of ``counts`` holds in the checkpoint the recovering run restores (``before``
    subtasks, after the batches it covers), and at the end of that run (``after`` subtasks).

    >>> keys_moved()
    ({0: ['alice', 'heidi'], 1: ['bob', 'erin']}, {0: ['heidi'], 1: ['alice'], 2: ['bob'], 3: ['erin']})
    """
    values = LESSON.resolve_params(params)
    run = LESSON.run(params=params)
    restored = run.attempts[-1].restored_from  # checkpoint k: the state after batch k
    checkpointed = run_microbatch(
        pipeline(LESSON.default_script[: restored + 1], values), output_mode="update", parallelism=values["before"]
    )
    return keys_by_subtask(checkpointed.graph, "counts"), keys_by_subtask(run.graph, "counts")


def spark_state_partitions(checkpoint_dir) -> dict:
    """What a Spark checkpoint says about its partitions: the state partition folders of its operator and
    the ``spark.sql.shuffle.partitions`` recorded in each ``offsets/N``.

    >>> spark_state_partitions(folder)   # doctest: +SKIP
    {'state folders': ['0', '1'], 'shuffle partitions by batch': {0: '2', 1: '2', 2: '2'}}
    """
    import json
    from pathlib import Path

    root = Path(checkpoint_dir)
    folders = sorted(p.name for p in (root / "state" / "0").iterdir() if p.is_dir() and p.name.isdigit())
    recorded = {}
    for path in sorted((root / "offsets").iterdir(), key=lambda p: p.name):
        if path.name.isdigit():
            metadata = json.loads(path.read_text().splitlines()[1])
            recorded[int(path.name)] = metadata["conf"]["spark.sql.shuffle.partitions"]
    return {"state folders": folders, "shuffle partitions by batch": dict(sorted(recorded.items()))}


class RescaleLesson(RecoveryLesson):
    """The recovery lesson with another parallelism after the crash: ``before`` then ``after`` subtasks in
    ministream; in Spark, ``before`` shuffle partitions, then a restart that asks for ``after``.

    >>> LESSON.recovery_settings(LESSON.resolve_params(), 1), LESSON.spark_settings(LESSON.resolve_params())
    ({'parallelism': 2, 'restore_parallelism': 4}, {'conf': {'spark.sql.shuffle.partitions': 2}, 'restart_conf': {'spark.sql.shuffle.partitions': 4}})"""

    def recovery_settings(self, values, parallelism):
        return {"parallelism": values["before"], "restore_parallelism": values["after"]}

    def spark_settings(self, values):
        return {
            "conf": {"spark.sql.shuffle.partitions": values["before"]},
            "restart_conf": {"spark.sql.shuffle.partitions": values["after"]},
        }


LESSON = RescaleLesson(
    name="rescale",
    title="Rescale: restore a checkpoint with more subtasks (key groups move); Spark keeps its partitions",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("user", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("before", 2, "parallelism (Spark: shuffle partitions) before the crash", kind="int"),
        Param("after", 4, "parallelism (Spark: shuffle partitions asked for) after it", kind="int"),
        Param("crash_batch", 1, "the micro-batch in which the sink crashes", kind="int"),
    ],
    output_mode="update",
    doc=__doc__,
    random_script=random_script,
)
