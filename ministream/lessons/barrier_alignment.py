"""Lesson ``barrier-alignment``: a step with two inputs holds back the input whose checkpoint barrier came
first, so that its snapshot is a consistent cut; unaligned and at-least-once checkpoints, for contrast.

Two sources, ``web`` and ``mobile``, feed one running count per key (Spark's
``web.union(mobile).groupBy("key").agg(...)``). In the continuous model, every ``interval`` rows the
coordinator triggers checkpoint n and each source sends ``Barrier(n)`` behind the rows it has sent. The
``totals`` subtasks have two inputs: when barrier n comes on one of them first, that input is *held back*
(its next rows wait) until barrier n comes on the other; then ``totals`` snapshots its counts and forwards the
barrier. The snapshot counts exactly the rows before the barriers, on both inputs: the sources' offsets.

The lesson's ``mode`` changes that (``checkpoints/barriers.py``): ``unaligned`` holds nothing back and stores the rows the
barrier overtook as in-flight data; ``at_least_once`` holds nothing back and stores nothing in flight, so rows
from after the barrier on the fast input are counted in the snapshot, and counted again after a crash.

In the micro-batch model there are no barriers: the end of a batch is the cut. That part is compared with
Spark (``ministream compare barrier-alignment``).

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["key"], r["count"]) for r in batch.rows))
0 [('a', 3), ('b', 2)]
1 [('a', 4), ('b', 3)]
2 [('a', 6), ('b', 4)]
>>> run = checkpointed_run(seed=ALIGNMENT_SEED)
>>> print("\\n".join(barrier_lines(run)[:7]))
web: barrier 1 injected after 0 rows (offset 0)
mobile: barrier 1 injected after 2 rows (offset 2)
totals[0]: barrier 1 on input 0 (web[0]->totals[0]): held back until barrier 1 arrives on every input
web: barrier 2 injected after 2 rows (offset 2)
mobile: barrier 2 injected after 2 rows (offset 2)
totals[0]: barrier 1 on input 1 (mobile[0]->totals[0]): aligned, snapshot taken, barrier forwarded
output[0]: barrier 1 on input 0 (totals[0]->output[0]): aligned, snapshot taken, barrier forwarded
"""

from __future__ import annotations

from ministream.checkpoints.recovery import run_with_recovery
from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.faults import crash_at
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event

DEFAULT_SCRIPT = {
    "web": [
        [event(1, "a"), event(2, "b"), event(3, "a"), event(4, "a")],
        [event(5, "b"), event(6, "a")],
        [event(7, "a"), event(8, "b")],
    ],
    "mobile": [[event(2, "b")], [], [event(9, "a")]],
}
"""``web`` is the busy input (8 rows), ``mobile`` the quiet one (2 rows)."""

ALIGNMENT_SEED = 0
"""A scheduler seed under which ``web``'s barrier 1 comes first (the scheduler read ``mobile``'s two rows
first, so ``web`` had sent none) and ``web`` is held back."""

AT_LEAST_ONCE_CRASH = {"seed": 1, "crash_after_rows": 7}
"""A run in which ``at_least_once`` checkpoints count rows twice: the snapshot of checkpoint 1 is taken when
its barrier comes on ``mobile``, after ``totals`` counted ``web`` rows from after ``web``'s barrier."""


def pipeline(script, params) -> Dataflow:
    """ministream: both inputs keyed by ``key`` into one running count and sum."""
    flow = Dataflow("barrier-alignment")
    web = flow.source("web", ScriptedSource(script["web"]))
    mobile = flow.source("mobile", ScriptedSource(script["mobile"]))
    totals = web.key_by("key").aggregate("totals", mobile.key_by("key"), count=Count(), sum=Sum("value"))
    totals.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: the union of both inputs, then ``groupBy("key").agg(count, sum)``."""
    from pyspark.sql import functions as F

    events = inputs["web"].unionByName(inputs["mobile"])
    return events.groupBy("key").agg(F.count("*").alias("count"), F.sum("value").alias("sum"))


def checkpointed_run(
    params: dict | None = None,
    *,
    seed: int = 0,
    crash_after_rows: int | None = None,
    parallelism: int = 1,
    pictures: bool = False,
    storage=None,
):
    """The continuous model with checkpoints in the lesson's ``mode`` every ``interval`` rows, traced; with
    ``crash_after_rows``, crashed there and recovered (``recovery.RecoveredRun``).

    >>> run = checkpointed_run({"mode": "unaligned"}, seed=2, crash_after_rows=7)
    >>> [attempt.restored_from for attempt in run.attempts], counts(run.output())
    ([None, 1], {'a': 6, 'b': 4})"""

    values = LESSON.resolve_params(params)
    flow = pipeline(LESSON.default_script, values)
    if crash_after_rows is not None:
        crash_at(flow, crash_after_rows)
    return run_with_recovery(
        flow,
        model="continuous",
        interval=values["interval"],
        mode=values["mode"],
        seed=seed,
        parallelism=parallelism,
        trace=True,
        pictures=pictures,
        storage=storage,
    )


def barrier_lines(run) -> list[str]:
    """The trace lines about barriers, each as ``step[subtask]: text`` (sources without a subtask).

    >>> barrier_lines(checkpointed_run(seed=ALIGNMENT_SEED))[0]
    'web: barrier 1 injected after 0 rows (offset 0)'"""
    return [
        f"{line.step}{'' if line.step in LESSON.inputs else f'[{line.subtask}]'}: {line.text}"
        for line in run.trace.lines
        if line.kind == "barrier"
    ]


def counts(output) -> dict:
    """The final count of each key in a continuous run's output (its last row for the key).

    >>> counts(LESSON.run(model="continuous").output())
    {'a': 6, 'b': 4}"""
    last = {}
    for row in output[0].rows:
        last[row["key"]] = row["count"]
    return dict(sorted(last.items()))


LESSON = Lesson(
    name="barrier-alignment",
    title="Barrier alignment: a two-input step holds back the faster input so its snapshot is consistent",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param(
            "mode",
            "aligned",
            "continuous model checkpoints: aligned, unaligned or at_least_once",
            kind="choice",
            choices=("aligned", "unaligned", "at_least_once"),
        ),
        Param("interval", 2, "continuous model: rows read between two checkpoints", kind="int"),
    ],
    inputs=("web", "mobile"),
    output_mode="update",
    doc=__doc__,
)
