"""The state diff: a lesson's keyed state after every batch, in ministream and in Spark, compared row for row.

Comparing outputs says that two engines emitted the same rows; comparing the state says they *kept* the same
thing, batch by batch, which is where a wrong eviction or a wrong merge shows first. ministream's side is a
:class:`~ministream.models.state_history.StateHistory`; Spark's is its state data source on the twin's checkpoint
(``spark/state_reader.py``). The two engines lay state out differently, so each kind of step maps its table to
Spark's rows:

- a running aggregate (``AggregateSpec``): ministream keeps ``{key: [accumulator, ...]}``; Spark keeps one row per
  group, ``key`` = the grouping columns and ``value`` = the aggregation buffer. For ``count``, ``sum``, ``min`` and
  ``max`` the buffer is the result, so the row is ``{key columns..., name: result}`` (an ``avg`` would differ:
  Spark's buffer holds its sum and its count).

Other steps are not mapped yet (:data:`MAPPED`): windows (Spark's key holds a ``window`` struct), joins (Spark
keeps four stores per side, ``keyToNumValues`` and ``keyWithIndexToValue`` with their ``-v``... variants, against
ministream's ``{key: [[row, matched], ...]}``), deduplication and ``transformWithState`` state variables.
"""

from __future__ import annotations

import tempfile

from ministream.core.aggregates import results
from ministream.core.compare import Comparison, compare_batches
from ministream.core.results import BatchResult
from ministream.core.steps import AggregateSpec
from ministream.errors import PipelineError
from ministream.lessons.lesson import Lesson
from ministream.models.state_history import StateHistory
from ministream.operators.aggregate import key_columns_of

MAPPED = ("running-aggregation", "state-backends")
"""The lessons whose state ``compare_state`` maps onto Spark's."""


def ministream_state_rows(lesson: Lesson, params: dict | None = None, state_backend=None) -> list[BatchResult]:
    """The lesson's running-aggregate state after every batch, as Spark's state data source shows it."""
    values = lesson.resolve_params(params)
    flow = lesson.pipeline(lesson.default_script, values)
    steps = [step for step in flow.steps if step.parallelism == "keyed"]
    if len(steps) != 1 or not isinstance(steps[0].spec, AggregateSpec):
        raise PipelineError(
            f"lesson {lesson.name!r}: its state is not mapped onto Spark's yet (the mapped lessons: {', '.join(MAPPED)})"
        )
    spec = steps[0].spec
    history = StateHistory()
    lesson.run(params=params, state_backend=state_backend, after_batch=history)
    names, functions = list(spec.aggregates), list(spec.aggregates.values())
    batches = []
    for batch_id, steps_state in sorted(history.batches.items()):
        table = steps_state[steps[0].name].get("aggregate", {})
        rows = [
            {**key_columns_of(spec.key_columns, key), **results(accumulators, names, functions)}
            for key, accumulators in table.items()
        ]
        batches.append(BatchResult(batch_id, None, rows))
    return batches


def compare_state(
    lesson: Lesson, params: dict | None = None, state_backend=None, master: str | None = None
) -> Comparison:
    """The state after every batch in ministream (on ``state_backend``) against Spark's, read from the twin's
    checkpoint with the state data source."""
    from ministream.spark.state_reader import state_after_batches

    ours = ministream_state_rows(lesson, params, state_backend)
    with tempfile.TemporaryDirectory(prefix="ministream-state-") as checkpoint:
        lesson.run_twin(params=params, master=master, checkpoint_dir=checkpoint)
        theirs = state_after_batches(checkpoint, [batch.batch_id for batch in ours], master=master)
    return compare_batches(ours, theirs)
