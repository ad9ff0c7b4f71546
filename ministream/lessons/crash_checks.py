"""Crash checks: a lesson run with a crash and without, and whether the recovered output is the failure-free one.

This is what ``ministream run LESSON --crash-at N`` and the property test in ``tests/checkpoints/test_recovery.py`` do:

1. run the lesson without a crash (:func:`failure_free_outputs`): one output, or, in the continuous model
   with several inputs, every output the interleaving can give; in the micro-batch model, also the output of
   a query stopped and restarted at the checkpoint the recovery restored (:func:`restarted_output`: a restart
   forgets each input's own watermark, as Spark's does);
2. run it with checkpoints, crashed after N rows of its script, recovered (:func:`run_lesson_with_recovery`);
3. compare (:func:`same_output`): micro-batch outputs batch for batch, rows as multisets, watermarks exactly;
   continuous outputs as one multiset of rows.

>>> from ministream.lessons import get_lesson
>>> run, expected, same = check_recovery(get_lesson("running-aggregation"), crash_after_rows=4)
>>> same, [attempt.restored_from for attempt in run.attempts]
(True, [None, 0])
"""

from __future__ import annotations

from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.recovery import RecoveredRun, run_with_recovery
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.compare import compare_batches
from ministream.core.faults import crash_at
from ministream.core.results import BatchResult, normalize_row
from ministream.lessons.lesson import Lesson
from ministream.models.microbatch import run_microbatch


def run_lesson_with_recovery(
    lesson,
    script=None,
    params: dict | None = None,
    *,
    crash_after_rows: int | None,
    model: str = "microbatch",
    **settings,
) -> RecoveredRun:
    """A lesson's pipeline, crashed after ``crash_after_rows`` rows of its script (``None``: no crash) and
    recovered: ``ministream run LESSON --crash-at N``. ``settings`` go to :func:`run_with_recovery`.

    >>> from ministream.lessons import get_lesson
    >>> run = run_lesson_with_recovery(get_lesson("deduplication"), crash_after_rows=3)
    >>> [attempt.restored_from for attempt in run.attempts]
    [None, 0]"""
    values = lesson.resolve_params(params)
    script = lesson.default_script if script is None else script
    flow = lesson.pipeline(script, values)
    if crash_after_rows is not None:
        crash_at(flow, crash_after_rows)
    if model == "microbatch":
        settings.setdefault("output_mode", lesson.mode(values))
        settings.setdefault("watermark_policy", lesson.policy(values))
        timestamps = getattr(lesson, "batch_timestamps", None)
        if timestamps is not None and settings.get("batch_timestamps") is None:
            settings["batch_timestamps"] = timestamps(script, values)
    return run_with_recovery(flow, model=model, **settings)


def same_output(model: str, ours: list[BatchResult], expected: list[BatchResult]) -> bool:
    """Whether a recovered run's output is the failure-free one: batch for batch, row multisets and
    watermarks (micro-batch); the same multiset of rows (continuous: their order depends on the interleaving).

    >>> ours = [BatchResult(0, None, [{"n": 1}, {"n": 2}])]
    >>> same_output("microbatch", ours, [BatchResult(0, None, [{"n": 2}, {"n": 1}])])
    True
    >>> same_output("microbatch", ours, [BatchResult(0, None, [{"n": 1}, {"n": 2}, {"n": 2}])])
    False"""
    from collections import Counter

    if model == "microbatch":
        return compare_batches(ours, expected).matches
    return Counter(normalize_row(row) for batch in ours for row in batch.rows) == Counter(
        normalize_row(row) for batch in expected for row in batch.rows
    )


def failure_free_outputs(
    lesson, script=None, params: dict | None = None, *, model: str = "microbatch", parallelism: int = 1, seed: int = 0
) -> list[list[BatchResult]]:
    """What a lesson outputs without a crash: one output; but in the continuous model with several sources
    the output depends on the interleaving (``models/continuous.py``), so then every output of seeds 0 to 7 at
    parallelism 1, 2 and 4 (a recovered run interleaves differently and may give any of them).

    >>> from ministream.lessons import get_lesson
    >>> len(failure_free_outputs(get_lesson("stream-join"), model="continuous"))   # two inputs: 2 outcomes
    2"""
    flow = lesson.pipeline(lesson.default_script if script is None else script, lesson.resolve_params(params))
    runs = [(parallelism, seed)]
    if model == "continuous" and len(flow.sources) > 1:
        runs += [(p, s) for p in (1, 2, 4) for s in range(8)]
    outputs = []
    for p, s in runs:
        # Lesson.run itself: a plain run, not the crash a recovery lesson's own run makes
        output = Lesson.run(lesson, script, params, parallelism=p, seed=s, model=model).output(lesson.outputs[0])
        if not any(same_output(model, output, known) for known in outputs):
            outputs.append(output)
    return outputs


def restarted_output(
    lesson, script=None, params: dict | None = None, *, after_batch: int, parallelism: int = 1, seed: int = 0
) -> list[BatchResult]:
    """What a micro-batch lesson outputs when its query stops after batch ``after_batch`` and starts again from
    its checkpoint, without a crash (the batches of the lesson's output, both runs together).

    It is the failure-free output, unless the pipeline has several watermarks: a restarted Spark query gets
    back its global watermark but not each input's (``coordinator.MicroBatchCheckpoints.restore``), so until
    every input's own watermark has passed the restored one, the global watermark waits where it was. A run
    that crashed in batch k and recovered from checkpoint k - 1 must give this output with ``after_batch = k -
    1`` (or the failure-free one, when batch k was a no-data batch: it runs again as logged).

    >>> from ministream.lessons import get_lesson
    >>> lesson = get_lesson("idle-input")
    >>> len(restarted_output(lesson, after_batch=3)), len(lesson.run().output())   # no trailing no-data batch
    (5, 6)
    """
    values = lesson.resolve_params(params)
    script = lesson.default_script if script is None else script
    length = max(len(batches) for batches in script.values()) if isinstance(script, dict) else len(script)
    if after_batch + 1 >= length:
        return Lesson.run(lesson, script, params, parallelism=parallelism, seed=seed).output(lesson.outputs[0])
    if isinstance(script, dict):
        cut = {name: batches[: after_batch + 1] for name, batches in script.items()}
    else:
        cut = script[: after_batch + 1]
    settings = {
        "output_mode": lesson.mode(values),
        "watermark_policy": lesson.policy(values),
        "parallelism": parallelism,
        "seed": seed,
    }
    timestamps = getattr(lesson, "batch_timestamps", None)
    if timestamps is not None:
        settings["batch_timestamps"] = timestamps(script, values)
    storage = MemoryStorage()
    first, second = lesson.pipeline(cut, values), lesson.pipeline(script, values)
    run_microbatch(first, checkpoints=MicroBatchCheckpoints(storage), no_data_batches=False, **settings)
    run_microbatch(second, checkpoints=MicroBatchCheckpoints(storage), **settings)
    sink = lesson.outputs[0]  # the lesson's output, of the sinks of its query
    return [
        batch for flow in (first, second) for step in flow.sinks if step.name == sink for batch in step.sink.batches
    ]


def recovered_outputs(
    lesson, run: RecoveredRun, script=None, params: dict | None = None, *, model: str = "microbatch", **settings
) -> list[list[BatchResult]]:
    """The outputs a recovered run may rightly give: the failure-free ones (:func:`failure_free_outputs`) and,
    in the micro-batch model, the output of a query restarted from the checkpoint the run restored
    (:func:`restarted_output`), which differs when the pipeline has several watermarks."""
    expected = failure_free_outputs(lesson, script, params, model=model, **settings)
    restored = [attempt.restored_from for attempt in run.attempts if attempt.restored_from is not None]
    if model == "microbatch" and restored:
        restarted = restarted_output(lesson, script, params, after_batch=restored[-1], **settings)
        if not any(same_output(model, restarted, known) for known in expected):
            expected.append(restarted)
    return expected


def check_recovery(
    lesson,
    script=None,
    params: dict | None = None,
    *,
    crash_after_rows: int,
    model: str = "microbatch",
    parallelism: int = 1,
    seed: int = 0,
    **settings,
) -> tuple[RecoveredRun, list[BatchResult], bool]:
    """Run a lesson crashed after ``crash_after_rows`` rows and recovered, and without a crash: returns the
    recovered run, the failure-free output it equals (or the first one), and whether it equals one
    (:func:`same_output`, :func:`failure_free_outputs`).

    >>> from ministream.lessons import get_lesson
    >>> run, expected, same = check_recovery(get_lesson("tumbling-window"), crash_after_rows=5, model="continuous")
    >>> run.crashes, same
    (1, True)"""
    run = run_lesson_with_recovery(
        lesson,
        script,
        params,
        crash_after_rows=crash_after_rows,
        model=model,
        parallelism=parallelism,
        seed=seed,
        **settings,
    )
    expected = recovered_outputs(lesson, run, script, params, model=model, parallelism=parallelism, seed=seed)
    matching = [output for output in expected if same_output(model, run.output(lesson.outputs[0]), output)]
    return run, (matching or expected)[0], bool(matching)
