"""Lesson ``operator-state``: a writer that writes trips in groups of ``size`` keeps its buffer in operator
state, so that a crash neither loses nor repeats a buffered row, and a rescale deals the buffers out to the new
subtasks (split evenly, or the union to each).

Trips arrive in micro-batches, spread by id over ``before`` subtasks of a ``BufferedWriter``
(``operators/buffered_writer.py``); each subtask writes a group of ``size`` trips as soon as it has them. The
sink crashes in batch ``crash_batch``; the query is restored from the checkpoint of the batch before, with
``after`` subtasks. The rows a subtask had buffered at that checkpoint belong to no key: they are *operator
state* (``state/operator_state.py``), saved with the checkpoint (``keep_in=operator_state``) and dealt out to
the new subtasks as the list was declared (``redistribution``). Kept in a plain attribute
(``keep_in=plain``), they are lost: their offsets are behind the checkpoint, so no one reads them again.

Spark has no operator state, so this lesson has no twin: a micro-batch query keeps no buffer between batches,
its source offsets live in the checkpoint's offsets log, and a sink is made exactly-once by writing each
batch under its batch id (``tutorials/21-operator-state.md``). Its checks are properties of the crash and the
rescale instead (``tests/lessons/test_operator_state.py``): every trip written or still buffered exactly once.

>>> run = LESSON.run()
>>> [(attempt.parallelism, attempt.restored_from) for attempt in run.attempts]
[(2, None), (3, 1)]
>>> for batch in run.output():
...     print(batch.batch_id, sorted(row["trips"] for row in batch.rows))
0 []
1 ['t1 t3 t5', 't2 t4 t6']
2 ['t7 t9 t11']
3 ['t10 t12 t14']
>>> sorted(row["trip"] for row in buffered(run))
['t13', 't8']
"""

from __future__ import annotations

from collections import Counter

from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.lessons.checkpoint_recovery import RecoveryLesson
from ministream.lessons.lesson import BASE_TIME, Param, event
from ministream.operators.buffered_writer import BufferedWriter
from ministream.state.operator_state import REDISTRIBUTIONS


def trip(second: float, number: int, fare: float) -> dict:
    """Trip ``t<number>`` that cost ``fare``, ``second`` seconds after 10:00:00 on 2024-01-01 (UTC).

    >>> trip(5, 3, 12)
    {'ts': 1704103205000, 'trip': 't3', 'fare': 12.0}
    """
    return {"ts": event(second, "")["ts"], "trip": f"t{number}", "fare": float(fare)}


DEFAULT_SCRIPT = [
    [trip(1, 1, 10), trip(2, 2, 7), trip(3, 3, 4), trip(4, 4, 9)],
    [trip(11, 5, 12), trip(12, 6, 6), trip(13, 7, 8), trip(14, 8, 5)],
    [trip(21, 9, 3), trip(22, 10, 11), trip(23, 11, 2)],
    [trip(31, 12, 6), trip(32, 13, 4), trip(33, 14, 7)],
]
"""Fourteen trips in four batches; at the end of batch 1 (the checkpoint the crash goes back to) each of the
two subtasks holds one trip in its buffer (t8 and t7)."""


def random_script(rng, params) -> list:
    """Random trips (for the property tests): 2 to 6 batches after the crash batch, numbered trips, some empty
    batches.

    >>> import random
    >>> script = random_script(random.Random(1), LESSON.resolve_params())
    >>> len(script) > LESSON.resolve_params()["crash_batch"]
    True
    """
    script, number = [], 0
    for batch_id in range(params["crash_batch"] + rng.randint(2, 6)):
        rows = []
        for _ in range(rng.choice([0, 1, 2, 3, 4, 5]) if batch_id != params["crash_batch"] else rng.randint(3, 6)):
            number += 1
            rows.append({"ts": BASE_TIME + number * 1_000, "trip": f"t{number}", "fare": float(rng.randint(1, 9))})
        script.append(rows)
    return script


def pipeline(script, params) -> Dataflow:
    """ministream: trips spread by id over the writer's subtasks, each writing groups of ``size``."""
    flow = Dataflow("operator-state")
    trips = flow.source("trips", ScriptedSource(script))
    writes = trips.key_by("trip").operator_step(
        "writer",
        "buffered_writer",
        lambda: BufferedWriter(
            params["size"], id_column="trip", keep_in=params["keep_in"], redistribution=params["redistribution"]
        ),
    )
    writes.sink("output", CollectingSink())
    return flow


def buffered(run) -> list[dict]:
    """The trips still in the writers' buffers when the (last attempt of the) run ends."""
    return [row for operator in run.graph.operators("writer") for row in operator.buffer]


def written_or_buffered(run) -> Counter:
    """How many times each trip was written (in the sink's visible output) or is still buffered: each must be
    1 when nothing is lost or repeated.

    >>> sorted(set(written_or_buffered(LESSON.run()).values()))
    [1]
    """
    counts = Counter(trip for batch in run.output() for row in batch.rows for trip in row["trips"].split())
    counts.update(row["trip"] for row in buffered(run))
    return counts


class OperatorStateLesson(RecoveryLesson):
    """The recovery lesson of a buffered writer: ``before`` subtasks until the crash, ``after`` from the
    restore on; no Spark twin (Spark has no operator state)."""

    def recovery_settings(self, values, parallelism):
        return {"parallelism": values["before"], "restore_parallelism": values["after"]}

    def run_twin(self, script=None, params: dict | None = None, *, master: str | None = None, **settings):
        raise PipelineError(NO_TWIN)


NO_TWIN = (
    "lesson 'operator-state' has no Spark twin: Spark has no operator state (a micro-batch keeps no buffer "
    "between batches). Its checks are properties of the crash and the rescale: every trip written or still "
    "buffered exactly once (tests/lessons/test_operator_state.py)"
)

LESSON = OperatorStateLesson(
    name="operator-state",
    title="Operator state: a writer's buffer survives a crash and is split (or united) when the parallelism changes",
    pipeline=pipeline,
    twin=None,
    fields=[Field("trip", str), Field("fare", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("size", 3, "how many trips the writer writes at once", kind="int"),
        Param(
            "keep_in",
            "operator_state",
            "operator_state: the buffer is checkpointed; plain: it is not (a crash loses it)",
            kind="choice",
            choices=("operator_state", "plain"),
        ),
        Param(
            "redistribution",
            "even",
            "even: a rescale splits the buffers among the new subtasks; union: each gets them all",
            kind="choice",
            choices=REDISTRIBUTIONS,
        ),
        Param("before", 2, "subtasks of the writer before the crash", kind="int"),
        Param("after", 3, "subtasks of the writer after the restore", kind="int"),
        Param("crash_batch", 2, "the micro-batch in which the sink crashes", kind="int"),
        Param("after_rows", 0, "how many of that batch's writes the sink makes visible before it crashes", kind="int"),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
