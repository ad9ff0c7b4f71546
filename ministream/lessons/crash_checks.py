"""Crash checks: a lesson run with a crash and without, and whether the recovered output is the failure-free one.

This is what ``ministream run LESSON --crash-at N`` and the property test in ``tests/checkpoints/test_recovery.py`` do:

1. run the lesson without a crash (:func:`failure_free_outputs`): one output, or, in the continuous model
   with several inputs, every output the interleaving can give;
2. run it with checkpoints, crashed after N rows of its script, recovered (:func:`run_lesson_with_recovery`);
3. compare (:func:`same_output`): micro-batch outputs batch for batch, rows as multisets, watermarks exactly;
   continuous outputs as one multiset of rows.

>>> from ministream.lessons import get_lesson
>>> run, expected, same = check_recovery(get_lesson("running-aggregation"), crash_after_rows=4)
>>> same, [attempt.restored_from for attempt in run.attempts]
(True, [None, 0])
"""

from __future__ import annotations

from ministream.checkpoints.recovery import RecoveredRun, run_with_recovery
from ministream.core.compare import compare_batches
from ministream.core.faults import crash_at
from ministream.core.results import BatchResult, normalize_row


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
        output = lesson.run(script, params, parallelism=p, seed=s, model=model).output()
        if not any(same_output(model, output, known) for known in outputs):
            outputs.append(output)
    return outputs


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
    expected = failure_free_outputs(lesson, script, params, model=model, parallelism=parallelism, seed=seed)
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
    matching = [output for output in expected if same_output(model, run.output(), output)]
    return run, (matching or expected)[0], bool(matching)
