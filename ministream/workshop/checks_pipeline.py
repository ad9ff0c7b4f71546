"""Check of the pipeline exercise: the learner writes a lesson's ``pipeline(script, params)``.

The check runs the learner's dataflow in ministream's micro-batch model on the lesson's events and compares it
with the lesson's PySpark twin, batch by batch, row by row (``compare.compare_batches``). At the first
difference it says what differs in the words of the window rules: a watermark, a window emitted in another
batch, a window Spark did not emit, aggregates that differ, columns that are named otherwise. Then it runs the
learner's pipeline with other parameters, to see that it reads them (against the lesson's own pipeline, which
the lesson's tests compare with Spark under the same parameters).

>>> from ministream.lessons import get_lesson
>>> check_pipeline(get_lesson("tumbling-window").pipeline, against="ministream")
✓ pipeline: 5 batches match ministream's, and the pipeline follows params (size 5 seconds; delay 2 seconds)
"""

from __future__ import annotations

from ministream.core.compare import compare_batches
from ministream.core.plan import Dataflow
from ministream.core.results import format_row
from ministream.errors import PipelineError
from ministream.lessons import get_lesson
from ministream.models.microbatch import run_microbatch
from ministream.workshop.checks_windows import show_time, show_window
from ministream.workshop.feedback import ExerciseFailed, Passed, call, fail
from ministream.workshop.oracle import get_oracle

WATERMARK = (
    "the watermark comes from a with_watermark step on 'ts' with the lesson's delay (params['delay']): "
    "after each batch, the largest event time so far minus the delay"
)
NO_DATA_BATCH = (
    "after the last batch Spark runs one more, a no-data batch, when the new watermark lets a window "
    "close; ministream does the same, as long as the pipeline has a watermark and a window step"
)
APPEND = (
    "in append mode a window is emitted once, in the first batch whose watermark is at or past its end (end <= WM_k)"
)
VALUES = (
    "each window's row aggregates every row of that key and window that was not late: here count('*') as "
    "count, sum('value') as sum, max('value') as max"
)
WINDOWS = (
    "the windows are tumbling, of the lesson's size (params['size']), aligned on the epoch: Tumbling(params['size'])"
)
COLUMNS = "a window row has the key, window_start, window_end and one column per aggregate, named as in the twin"


def _run(pipeline, lesson, params: dict):
    """The learner's dataflow run in ministream, as ``Lesson.run`` runs the lesson's own."""

    flow = call("pipeline", pipeline, lesson.default_script, params)
    if not isinstance(flow, Dataflow):
        raise ExerciseFailed(
            f"pipeline: return the Dataflow you built (flow = Dataflow(...); ...; return flow), not "
            f"{type(flow).__name__}"
        )
    try:
        run = run_microbatch(flow, output_mode=lesson.mode(params), watermark_policy=lesson.policy(params))
    except PipelineError as error:
        raise ExerciseFailed(f"pipeline: ministream refused your pipeline: {error}") from None
    if "output" not in run.outputs:
        raise ExerciseFailed(
            f"pipeline: name your sink 'output' (.sink('output', CollectingSink())); it has "
            f"{', '.join(map(repr, run.outputs)) or 'no sink'}"
        )
    return run.output("output")


def _explain(ours, theirs, against: str) -> None:
    """Fail with the first difference between the learner's batches and the oracle's, in words."""
    result = compare_batches(ours, theirs)
    columns = lambda batches: {name for batch in batches for row in batch.rows for name in row}  # noqa: E731
    if ours and theirs and columns(ours) and columns(theirs) and columns(ours) != columns(theirs):
        fail(
            "pipeline",
            "the columns of your rows",
            ", ".join(sorted(columns(ours))),
            ", ".join(sorted(columns(theirs))),
            COLUMNS,
            against,
        )
    batch = next(b for b in result.batches if not b.matches)
    where = f"batch {batch.batch_id}"
    if not batch.in_ministream or not batch.in_spark:
        fail(
            "pipeline",
            where,
            "a batch" if batch.in_ministream else "no batch",
            "a batch" if batch.in_spark else "no batch",
            NO_DATA_BATCH,
            against,
        )
    if batch.watermark_ministream != batch.watermark_spark:
        shown = lambda wm: "no watermark" if wm is None else show_time(wm)  # noqa: E731
        fail(
            "pipeline",
            f"{where}, the watermark",
            shown(batch.watermark_ministream),
            shown(batch.watermark_spark),
            WATERMARK,
            against,
        )
    spark_row = dict(batch.only_spark[0]) if batch.only_spark else None
    our_row = dict(batch.only_ministream[0]) if batch.only_ministream else None
    placed = lambda row: (row.get("key"), row.get("window_start"))  # noqa: E731
    if spark_row is not None:
        same = [dict(r) for r in batch.only_ministream if placed(dict(r)) == placed(spark_row)]
        if same:
            fail(
                "pipeline",
                f"{where}, window {show_window((spark_row['window_start'], spark_row['window_end']))} of "
                f"key {spark_row['key']}",
                format_row(same[0]),
                format_row(spark_row),
                VALUES,
                against,
            )
        elsewhere = [
            b.batch_id
            for b in result.batches
            for r in b.only_ministream + b.in_both
            if placed(dict(r)) == placed(spark_row)
        ]
        window = show_window((spark_row["window_start"], spark_row["window_end"]))
        watermark = batch.watermark_spark
        rule = APPEND + f": end {show_time(spark_row['window_end'])} <= watermark {show_time(watermark)}"
        if elsewhere:
            fail(
                "pipeline",
                f"window {window} of key {spark_row['key']}",
                f"emitted in batch {elsewhere[0]}",
                f"emitted in batch {batch.batch_id}",
                rule,
                against,
            )
        fail(
            "pipeline",
            f"{where}, window {window} of key {spark_row['key']}",
            "missing",
            format_row(spark_row),
            WINDOWS if our_row and placed(our_row)[0] == spark_row["key"] else rule,
            against,
        )
    fail(
        "pipeline",
        f"{where}, window {show_window((our_row.get('window_start'), our_row.get('window_end')))} of key "
        f"{our_row.get('key')}",
        format_row(our_row),
        "not emitted in this batch",
        APPEND,
        against,
    )


def check_pipeline(
    pipeline,
    lesson: str = "tumbling-window",
    against: str = "spark",
    variations: tuple[dict, ...] = ({"size": "5 seconds"}, {"delay": "2 seconds"}),
) -> Passed:
    """Exercise: ``pipeline(script, params)`` builds the lesson's ministream dataflow (sink ``"output"``).

    Args:
        pipeline: the learner's function.
        lesson: the lesson whose pipeline it is (its twin gives the expected output).
        against: ``"spark"`` or ``"ministream"``.
        variations: parameter changes under which the learner's output must equal the lesson's own pipeline's.
    """

    oracle = get_oracle(against)
    the_lesson = get_lesson(lesson)
    ours = _run(pipeline, the_lesson, the_lesson.resolve_params())
    theirs = oracle.twin_output(lesson)
    if not compare_batches(ours, theirs).matches:
        _explain(ours, theirs, oracle.name)
    for change in variations:
        params = the_lesson.resolve_params(change)
        mine = _run(pipeline, the_lesson, params)
        reference = the_lesson.run(params=change).output()
        if not compare_batches(mine, reference).matches:
            name, text = next(iter(change.items()))
            try:
                _explain(mine, reference, "the lesson's")
            except ExerciseFailed as error:
                raise ExerciseFailed(
                    f"with params['{name}'] = {text}: {error}\n(does your pipeline read "
                    f"params['{name}'] rather than a fixed value?)"
                ) from None
    shown = "; ".join(f"{name} {text}" for change in variations for name, text in change.items())
    return Passed("pipeline", f"{len(theirs)} batches match {oracle.name}'s, and the pipeline follows params ({shown})")
