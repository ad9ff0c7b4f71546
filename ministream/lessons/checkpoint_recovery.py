"""Lesson ``checkpoint-recovery``: a windowed count crashes while writing a micro-batch, restarts from its
checkpoint, and its output is the failure-free one, in ministream and in Spark.

Both engines checkpoint at every batch end: the batch's offsets and watermark (written before it runs), the
window state, and a commit. Here the sink fails in the middle of batch ``crash_batch``, after writing
``after_rows`` of its rows. The restarted query finds batch k planned but not committed, restores the state of
batch k-1 and runs batch k again, under the same id, with the same watermark. What the sink shows depends on
how it writes:

- ``delivery=exactly_once``: ministream's transactional sink makes a batch visible only when its checkpoint
  completes, and Spark's ``foreachBatch`` writes by batch id: the output is the failure-free one;
- ``delivery=at_least_once``: both sinks append: the rows written before the crash appear twice.

Events: ``ts``, ``key``, ``value`` (the tumbling-window lesson's script). Parameters: ``crash_batch``,
``after_rows``, ``delivery``, and the window ``size`` and watermark ``delay``.

>>> for batch in LESSON.run().output():
...     print(batch.batch_id, sorted((r["key"], r["window_start"] % 60_000, r["count"]) for r in batch.rows))
0 []
1 []
2 []
3 [('a', 0, 2), ('a', 10000, 2), ('b', 0, 2)]
4 [('a', 20000, 1)]
>>> [(attempt.restored_from, attempt.crash) for attempt in LESSON.run().attempts]
[(None, 'the sink crashed while writing batch 3, after 1 of its 3 rows'), (2, None)]
"""

from __future__ import annotations

from ministream.checkpoints.exactly_once import SinkCrash
from ministream.checkpoints.recovery import run_with_recovery
from ministream.core.aggregates import Count, Sum
from ministream.core.events import Field
from ministream.core.faults import crash_at
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import BASE_TIME, Lesson, Param
from ministream.lessons.tumbling_window import DEFAULT_SCRIPT
from ministream.lessons.window_scripts import KEYS, random_window_script
from ministream.time.units import format_duration
from ministream.time.windows import Tumbling


def pipeline(script, params) -> Dataflow:
    """ministream: a watermark on ``ts``, then a count and a sum per key and per tumbling window."""
    flow = Dataflow("checkpoint-recovery")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window("per_window", Tumbling(params["size"]), count=Count(), sum=Sum("value"))
    windows.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark: ``withWatermark``, then ``groupBy(key, window(ts, size)).agg(count, sum)``."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    windows = events.groupBy("key", F.window("ts", format_duration(params["size"]))).agg(
        F.count("*").alias("count"), F.sum("value").alias("sum")
    )
    return windows.select(
        "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count", "sum"
    )


def random_script(rng, params) -> list:
    """Random window events (``window_scripts.py``: late rows, rows on window edges and on the watermark) in
    at least ``crash_batch + 1`` batches, the last one not empty: both engines reach the batch whose sink
    crashes (Spark's twin fails when its query never gets there), and an events file keeps every batch.

    >>> import random
    >>> script = random_script(random.Random(2), LESSON.resolve_params({"crash_batch": "6"}))
    >>> len(script) >= 7 and script[-1] != []
    True
    """
    script = random_window_script(rng, params, min_batches=params["crash_batch"] + 1)
    if not script[-1]:
        latest = max((row["ts"] for batch in script for row in batch), default=BASE_TIME)
        script[-1] = [
            {
                "ts": latest + rng.randrange(0, 2 * params["size"], 1_000),
                "key": rng.choice(KEYS),
                "value": float(rng.randint(1, 9)),
            }
        ]
    return script


def crash_and_recover(flow, values: dict, *, model: str = "microbatch", output_mode: str = "append", **settings):
    """ministream: run with checkpoints, crash the sink in batch ``crash_batch`` after ``after_rows`` rows
    (continuous model, which has no batches: crash the source when it reaches that batch), recover.

    >>> values = LESSON.resolve_params({"crash_batch": "4"})
    >>> run = crash_and_recover(pipeline(DEFAULT_SCRIPT, values), values)
    >>> run.attempts[0].crash, run.attempts[1].restored_from
    ('the sink crashed while writing batch 4, after 1 of its 1 rows', 3)"""

    sink_crash = None
    if model == "microbatch":
        sink_crash = SinkCrash(values["crash_batch"], values.get("after_rows", 0))
    else:
        source = flow.sources[0].source
        rows_before = sum(len(source.batch(k)) for k in range(values["crash_batch"]))
        crash_at(flow, min(rows_before, sum(len(batch) for batch in source.batches) - 1))
    return run_with_recovery(
        flow,
        model=model,
        output_mode=output_mode,
        sink_crash=sink_crash,
        delivery=values.get("delivery", "exactly_once"),
        **settings,
    )


def spark_crash_and_restart(df, values: dict, output_mode: str = "append", **settings):
    """PySpark: the same query with a checkpoint location; ``foreachBatch`` crashes in batch ``crash_batch``
    after ``after_rows`` rows; the query restarts on the checkpoint (``ministream.spark.checkpoint``).

    >>> spark_crash_and_restart(twin_df, LESSON.resolve_params()).batch_ids   # doctest: +SKIP
    [[0, 1, 2, 3], [3, 4]]"""
    from ministream.spark.checkpoint import run_query_with_crash

    return run_query_with_crash(
        df,
        output_mode,
        crash_batch=values["crash_batch"],
        after_rows=values.get("after_rows", 0),
        idempotent=values.get("delivery", "exactly_once") == "exactly_once",
        **settings,
    )


class RecoveryLesson(Lesson):
    """A lesson whose runs crash in batch ``crash_batch`` and recover: ``run`` in ministream (a
    ``recovery.RecoveredRun``), ``run_twin`` in Spark (restarted on its checkpoint).

    >>> run = LESSON.run(parallelism=2, restore_parallelism=4)
    >>> [(attempt.parallelism, attempt.restored_from) for attempt in run.attempts]
    [(2, None), (4, 2)]"""

    def recovery_settings(self, values: dict, parallelism: int) -> dict:
        """Settings for ``recovery.run_with_recovery`` (the rescale lesson changes the parallelism)."""
        return {"parallelism": parallelism}

    def spark_settings(self, values: dict) -> dict:
        """Settings for ``spark.checkpoint.run_query_with_crash`` (the rescale lesson adds confs)."""
        return {}

    def run(
        self,
        script=None,
        params: dict | None = None,
        *,
        parallelism: int = 1,
        seed: int = 0,
        trace: bool = False,
        model: str = "microbatch",
        **settings,
    ):
        """The pipeline, crashed and recovered; ``settings`` go to ``recovery.run_with_recovery`` (a storage,
        a restore parallelism...)."""
        values = self.resolve_params(params)
        flow = self.pipeline(self.default_script if script is None else script, values)
        settings.pop("batch_timestamps", None)
        settings = {**self.recovery_settings(values, parallelism), **settings}
        return crash_and_recover(
            flow, values, model=model, output_mode=self.mode(values), seed=seed, trace=trace, **settings
        )

    def run_twin(self, script=None, params: dict | None = None, *, master: str | None = None, **settings):
        """The twin, crashed in ``foreachBatch`` and restarted on its checkpoint: the sink's batches."""
        return self.spark_recovery(script, params, master=master, **settings).batches

    def spark_recovery(
        self, script=None, params: dict | None = None, *, master: str | None = None, source: str = "auto", **settings
    ):
        """The whole Spark run (``spark.checkpoint.SparkRecoveryRun``): batches, the batch ids of each start;
        ``source`` as for ``spark.scripted_stream``; ``settings`` go to ``run_query_with_crash``
        (``checkpoint_dir`` to keep the checkpoint)."""
        from ministream.spark import scripted_stream, spark_session

        values = self.resolve_params(params)
        spark = spark_session(master)
        frame = scripted_stream(
            spark, self.spark_schema(), self.default_script if script is None else script, source=source
        )
        settings = {**self.spark_settings(values), **settings}
        return spark_crash_and_restart(
            self.twin({"events": frame}, values),
            values,
            self.mode(values),
            query_name="ministream_" + self.name.replace("-", "_"),
            **settings,
        )


LESSON = RecoveryLesson(
    name="checkpoint-recovery",
    title="Checkpoint and recovery: a windowed count crashes mid-batch, restarts, and emits exactly once",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("crash_batch", 3, "the micro-batch in which the sink crashes", kind="int"),
        Param("after_rows", 1, "how many of that batch's rows the sink writes before it crashes", kind="int"),
        Param(
            "delivery",
            "exactly_once",
            "exactly_once (a transactional or by-batch-id sink) or at_least_once (an appending sink)",
            kind="choice",
            choices=("exactly_once", "at_least_once"),
        ),
        Param("size", 10_000, "the length of each window"),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_script,
)
