"""The lessons: every concept as a ministream pipeline paired with its PySpark twin.

>>> [lesson.name for lesson in all_lessons()][:1]
['running-aggregation']
>>> get_lesson("running-aggregation").title
'Running aggregation: a count and a sum per key, in update and complete mode'
"""

from __future__ import annotations

import importlib

from ministream.core.compare import Comparison, compare_batches
from ministream.errors import PipelineError
from ministream.lessons.lesson import Lesson, Param
from ministream.lessons.pipeline_file import is_pipeline_file, load_pipeline_file

LESSON_MODULES = [
    "running_aggregation",
    "tumbling_window",
    "sliding_window",
    "session_window",
    "late_data",
    "output_modes",
    "stream_join",
    "outer_join",
    "idle_input",
    "deduplication",
    "device_sessions",
    "state_ttl",
    "processing_time",
    "microbatch_vs_continuous",
    "checkpoint_recovery",
    "barrier_alignment",
    "rescale",
    "state_backends",
    "enrichment_join",
    "chained_aggregations",
    "operator_state",
    "changelog",
    "game_heartbeats",
]
"""Lesson modules in teaching order (the order of ``ministream lessons`` and of the tutorials)."""


def all_lessons() -> list[Lesson]:
    """Every lesson, in teaching order."""
    return [importlib.import_module(f"ministream.lessons.{module}").LESSON for module in LESSON_MODULES]


def get_lesson(name: str) -> Lesson:
    """The lesson called ``name``, or the lesson of a pipeline file when ``name`` is the path of a ``.py`` file
    (``lessons/pipeline_file.py``); an unknown name is refused with the list of lessons."""
    if is_pipeline_file(name):
        return load_pipeline_file(name)
    for lesson in all_lessons():
        if lesson.name == name:
            return lesson
    known = ", ".join(lesson.name for lesson in all_lessons())
    raise PipelineError(f"there is no lesson {name!r}; the lessons are: {known}")


def compare_lesson(
    lesson: Lesson,
    script=None,
    params: dict | None = None,
    *,
    parallelism: int = 1,
    seed: int = 0,
    master: str | None = None,
    output: str | None = None,
    twin_script=None,
) -> Comparison:
    """Run a lesson in ministream and in Spark on the same script and compare them batch by batch: one of its
    outputs (``output``, the first by default; a pipeline file may have several, each its own Spark query).

    A lesson that uses processing time (``lesson.replay_spark_clock``) runs Spark first, then ministream with
    the batch timestamps Spark recorded, so that both engines see the same processing time.

    ``twin_script`` gives the twin other batches than ministream's: what Spark's own JSON reader makes of an
    events file whose bad lines ministream set aside (``Lesson.read_both_ways``), to see what those lines do
    in Spark."""
    lesson = lesson.of_output(output or lesson.outputs[0])
    sink = lesson.outputs[0]
    if lesson.twin is None:
        raise PipelineError(
            f"lesson {lesson.name!r} has no Spark twin to compare with: Spark has no such concept, and the lesson "
            "is checked by properties of its own runs (its tutorial says which)"
        )
    if lesson.replay_spark_clock:
        theirs = lesson.run_twin(script if twin_script is None else twin_script, params, master=master)
        timestamps = [batch.processing_time for batch in theirs]
        run = lesson.run(script, params, parallelism=parallelism, seed=seed, batch_timestamps=timestamps)
        return compare_batches(run.output(sink), theirs)
    ours = lesson.run(script, params, parallelism=parallelism, seed=seed).output(sink)
    theirs = lesson.run_twin(script if twin_script is None else twin_script, params, master=master)
    return compare_batches(ours, theirs)


__all__ = ["Lesson", "Param", "all_lessons", "compare_lesson", "get_lesson"]
