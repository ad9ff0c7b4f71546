"""Lesson ``microbatch-vs-continuous``: one windowed count, the same events, run the way Spark runs it
(micro-batches) and the way Flink runs it (continuously), and where and why the two outputs differ.

The pipeline is the same code in both models: a watermark on ``ts``, then a count per key and per tumbling
window, emitted once the watermark says the window is complete. Only the way time moves differs:

- **micro-batch** (Spark): the watermark is computed *between* batches, from the batches before. Batch k
  filters late rows against WM_{k-1} and emits the windows with ``end <= WM_k``. A window is emitted in the
  batch *after* the row that moved the watermark past its end ("one batch late"), and a row late by the time
  it arrives still counts if the watermark of the batch before did not exclude it yet. When the input stops,
  the last windows stay open: a streaming query never ends, and no watermark passes them.
- **continuous** (Flink): the watermark moves right after each row that raises the largest event time
  (``max - delay - 1``). A window fires as soon as the watermark reaches ``end - 1``, and a row for a window
  that has fired is late. At the end of the input the final watermark (+∞) fires every window left.

So the continuous watermark is never behind the micro-batch one: every row late in micro-batch is late in the
continuous model too (its watermark already includes every earlier row), but not the other way round. With
``--param lateness=...`` (Flink's allowed lateness, continuous model only) the continuous model keeps fired
windows a while longer and *fires them again* for late rows.

Only the micro-batch side has a PySpark twin: ``ministream compare`` checks it batch for batch against Spark.
The continuous side has no twin (Spark's own "continuous processing" mode supports no aggregations); it is
checked by its rules instead (``tests/models/test_continuous.py``, ``tests/lessons/test_microbatch_vs_continuous.py``).

>>> print(window_table())
window                key  micro-batch (Spark)  continuous (Flink)
[10:00:00, 10:00:10)  a    3 in batch 2         2 after row 4
[10:00:00, 10:00:10)  b    2 in batch 2         1 after row 4
[10:00:10, 10:00:20)  a    1 in batch 3         1 after row 8
[10:00:10, 10:00:20)  b    1 in batch 3         1 after row 8
[10:00:20, 10:00:30)  a    -                    1 at the end of input
[10:00:30, 10:00:40)  b    -                    1 at the end of input
"""

from __future__ import annotations

from ministream.core.aggregates import Count
from ministream.core.events import Field
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons.lesson import Lesson, Param, event
from ministream.lessons.window_scripts import random_window_script
from ministream.time.units import format_clock, format_duration
from ministream.time.windows import Tumbling, describe_window

DEFAULT_SCRIPT = [
    [event(1, "a"), event(2, "b"), event(3, "a")],
    [event(16, "a"), event(4, "a")],
    [event(9, "b"), event(14, "b"), event(27, "a")],
    [event(8, "a"), event(31, "b")],
]


def pipeline(script, params) -> Dataflow:
    """ministream, for both models: a watermark on ``ts``, then a count per key and per tumbling window."""
    flow = Dataflow("microbatch-vs-continuous")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window(
        "per_window", Tumbling(params["size"]), allowed_lateness=params["lateness"], count=Count()
    )
    windows.sink("output", CollectingSink())
    return flow


def twin(inputs, params):
    """PySpark (micro-batch side only): ``withWatermark``, then ``groupBy(key, window(ts, size)).count()``."""
    from pyspark.sql import functions as F

    events = inputs["events"].withWatermark("ts", format_duration(params["delay"]))
    windows = events.groupBy("key", F.window("ts", format_duration(params["size"]))).agg(F.count("*").alias("count"))
    return windows.select(
        "key", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count"
    )


def run_both(script=None, params=None, *, parallelism: int = 1, seed: int = 0):
    """The lesson's pipeline run in each model on the same events: ``(micro-batch run, continuous run)``.

    >>> micro, continuous = run_both()
    >>> [batch.batch_id for batch in micro.output()], [batch.batch_id for batch in continuous.output()]
    ([0, 1, 2, 3, 4], [0])
    """
    return (
        LESSON.run(script, params, parallelism=parallelism, seed=seed),
        LESSON.run(script, params, parallelism=parallelism, seed=seed, model="continuous"),
    )


def _rows(script) -> list[tuple[int, dict]]:
    """Every row of the script with its batch id, in arrival order."""
    return [(batch_id, row) for batch_id, batch in enumerate(script) for row in batch]


def _late_ids(run) -> dict[int, object]:
    """``{id(row): batch id or None}`` for the rows the window step dropped as late."""
    return {id(late.row): late.batch_id for op in run.graph.operators("per_window") for late in op.late_rows}


def _continuous_moments(script, params, output: list[dict], late: dict) -> list[str]:
    """For each continuous output row (in arrival order at the sink), when it fired, in words.

    A window fires after the first row that lifts the watermark (``max - delay - 1``) to ``end - 1`` or
    beyond; with allowed lateness, it fires again after each later row that still joins it (a late firing).
    Without such a row, it fires at the end of input, when the watermark becomes +∞.
    """
    rows = [row for _, row in _rows(script)]
    after, top = [], None  # after[i]: the watermark once row i has been read
    for row in rows:
        top = row["ts"] if top is None else max(top, row["ts"])
        after.append(top - params["delay"] - 1)
    size = params["size"]
    moments: dict[tuple, list[str]] = {}  # {(key, window_start): what fired it, firing by firing}
    for key, start, end in dict.fromkeys((out["key"], out["window_start"], out["window_end"]) for out in output):
        members = [
            i
            for i, row in enumerate(rows)
            if id(row) not in late and row["key"] == key and row["ts"] // size * size == start
        ]  # the rows the window counted
        on_time = next((i for i, watermark in enumerate(after) if watermark >= end - 1), None)
        if on_time is None:
            moments[(key, start)] = ["at the end of input"]
            continue
        fired = [f"after row {on_time + 1}"] if members[0] <= on_time else []
        fired += [f"after row {i + 1} (late firing)" for i in members if i > on_time]
        moments[(key, start)] = fired
    return [moments[(out["key"], out["window_start"])].pop(0) for out in output]


def window_table(script=None, params=None) -> str:
    """Per key and window, what each model emitted and when: a batch id, or the row after which it fired."""
    script = LESSON.default_script if script is None else script
    values = LESSON.resolve_params(params)
    micro, continuous = run_both(script, values)
    cells: dict[tuple, dict[str, list[str]]] = {}  # {(window_start, window_end, key): {model: [texts]}}
    for batch in micro.output():
        for out in batch.rows:
            cells.setdefault((out["window_start"], out["window_end"], out["key"]), {}).setdefault("micro", []).append(
                f"{out['count']} in batch {batch.batch_id}"
            )
    output = continuous.output()[0].rows
    for out, moment in zip(output, _continuous_moments(script, values, output, _late_ids(continuous))):
        cells.setdefault((out["window_start"], out["window_end"], out["key"]), {}).setdefault("continuous", []).append(
            f"{out['count']} {moment}"
        )
    lines = [("window", "key", "micro-batch (Spark)", "continuous (Flink)")]
    for (start, end, key), by_model in sorted(cells.items()):
        lines.append(
            (
                describe_window(start, end),
                key,
                ", ".join(by_model.get("micro", ["-"])),
                ", ".join(by_model.get("continuous", ["-"])),
            )
        )
    return _table(lines)


def late_by_model(script=None, params=None) -> dict[str, list[bool]]:
    """For each model, one flag per row in arrival order: did the window step drop it as late?

    >>> late_by_model()["continuous"]
    [False, False, False, False, True, True, False, False, True, False]
    """
    script = LESSON.default_script if script is None else script
    micro, continuous = run_both(script, params)
    rows = [row for _, row in _rows(script)]
    return {
        model: [id(row) in late for row in rows]
        for model, late in (("microbatch", _late_ids(micro)), ("continuous", _late_ids(continuous)))
    }


def row_table(script=None, params=None) -> str:
    """Per row, in arrival order: its batch, and whether each model counted it or dropped it as late.

    >>> print("\\n".join(row_table().splitlines()[4:7]))
    4    a at 10:00:16  1      counted      counted
    5    a at 10:00:04  1      counted      late
    6    b at 10:00:09  2      counted      late
    """
    script = LESSON.default_script if script is None else script
    late = late_by_model(script, params)
    lines = [("row", "event", "batch", "micro-batch", "continuous")]
    for i, (batch_id, row) in enumerate(_rows(script)):
        lines.append(
            (
                str(i + 1),
                f"{row['key']} at {format_clock(row['ts'])}",
                str(batch_id),
                "late" if late["microbatch"][i] else "counted",
                "late" if late["continuous"][i] else "counted",
            )
        )
    return _table(lines)


def _table(lines: list[tuple[str, ...]]) -> str:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)


LESSON = Lesson(
    name="microbatch-vs-continuous",
    title="Micro-batch against continuous: the same windows, emitted a batch later or at the watermark",
    pipeline=pipeline,
    twin=twin,
    fields=[Field("key", str), Field("value", float)],
    default_script=DEFAULT_SCRIPT,
    params=[
        Param("size", 10_000, "the length of each window"),
        Param("delay", 5_000, "how far the watermark trails the largest event time seen"),
        Param(
            "lateness", 0, "continuous model only: how long a window is kept after it fired (Flink's allowed lateness)"
        ),
    ],
    output_mode="append",
    doc=__doc__,
    random_script=random_window_script,
)
