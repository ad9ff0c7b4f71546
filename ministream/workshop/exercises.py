"""The exercises: what the learner writes in each notebook, the cell they start from, and the check that
answers them.

An :class:`Exercise` is laid out in its notebook as three cells (``build.py`` inserts them before the recap):
a Markdown cell that states the task, a code cell with the function to write (tagged ``exercise``), and a code
cell that checks it (tagged ``check``). The solution of each is the function of the same name in
``ministream.workshop.solutions``; the check is a function of ``ministream.workshop.checks_*``.

>>> [exercise.function for exercise in EXERCISES if exercise.lesson == "tumbling-window"]
['window_of', 'next_watermark', 'pipeline']
>>> print(exercise_named("window_of").check_code())
from ministream.workshop.checks_windows import check_window_of
check_window_of(window_of)
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Exercise:
    """One exercise: the function the learner writes, where it goes, the task and the check.

    Args:
        function: the name of the function the learner defines (and of its solution).
        lesson: the lesson whose notebook holds the exercise.
        title: a few words, shown as the exercise's heading.
        task: Markdown: what to write and the rules it must follow (not the answer).
        starter: the exercise cell as the learner first sees it.
        check: ``module:function`` of the check, called with the learner's function.
    """

    function: str
    lesson: str
    title: str
    task: str
    starter: str
    check: str

    def check_code(self) -> str:
        """The check cell's code."""
        module, name = self.check.split(":")
        return f"from ministream.workshop.{module} import {name}\n{name}({self.function})"


def _starter(signature: str, docstring: str) -> str:
    return f'def {signature}:\n    """{docstring}"""\n    raise NotImplementedError  # your code here\n'


EXERCISES = [
    Exercise(
        "key_group",
        "running-aggregation",
        "the key group of a key",
        """\
Every record of a key must reach the subtask that holds the key's state, in every run, also after a restart.
Write `key_group(key)`: the key's **key group**, a number from 0 to 127 that never changes. Use a hash that is
the same in every process: `zlib.crc32` of `repr(key)` encoded as UTF-8, modulo 128 (`MAX_PARALLELISM`).
Why not Python's `hash()`? The check runs your function in a second Python process too.""",
        _starter("key_group(key)", "The key group of ``key``: a stable hash modulo 128."),
        "checks_engine:check_key_group",
    ),
    Exercise(
        "update_batch",
        "running-aggregation",
        "one batch in update mode",
        """\
Write `update_batch(totals, rows)`: add one micro-batch's `rows` (dicts with `key` and `value`) to the running
totals, the keyed state `totals = {key: (count, sum)}` (update it in place), and return the rows **update**
mode emits for this batch: dicts `{"key": ..., "count": ..., "sum": ...}`. The check feeds the lesson's batches
through it and compares each batch with what Spark emitted.""",
        _starter(
            "update_batch(totals, rows)",
            "Add ``rows`` to ``totals`` ({key: (count, sum)}); return the rows update mode emits.",
        ),
        "checks_engine:check_update_batch",
    ),
    Exercise(
        "window_of",
        "tumbling-window",
        "the window of an event",
        """\
Write `window_of(ts, size, offset=0)`: the tumbling window `(start, end)` that contains the event time `ts`
(milliseconds since the epoch), as Spark's `window(ts, size, startTime=offset)` computes it. Think about an
event exactly on a window edge, a size that does not divide a minute, an offset, and an event before 1970.
The check compares with Spark's `window()` on the lesson's events and on such edge cases.""",
        _starter("window_of(ts, size, offset=0)", "The tumbling window (start, end) that contains ``ts``."),
        "checks_windows:check_window_of",
    ),
    Exercise(
        "next_watermark",
        "tumbling-window",
        "Spark's watermark, batch by batch",
        """\
Write `next_watermark(watermark, event_times, delay)`: the watermark of batch k + 1, given the watermark of
batch k and the event times of the rows of batch k (a list, maybe empty). The check first tries a few batches
(an empty one, an out-of-order one, one near the epoch), then replays the lesson's batches and compares every
watermark with the one Spark reported.""",
        _starter("next_watermark(watermark, event_times, delay)", "The watermark of the next batch."),
        "checks_time:check_next_watermark",
    ),
    Exercise(
        "pipeline",
        "tumbling-window",
        "write the lesson's pipeline",
        """\
Write the lesson's `pipeline(script, params)` yourself, without looking at
`ministream/lessons/tumbling_window.py`: a `Dataflow` with a source of `ScriptedSource(script)`, a watermark on
`ts` with `params["delay"]`, per key and per tumbling window of `params["size"]` a `count`, a `sum` and a `max`
of `value`, and a sink named `"output"` (`CollectingSink()`). The check runs it in ministream and compares every
batch with the PySpark twin; then it runs it with another size and another delay.""",
        _starter("pipeline(script, params)", "The tumbling-window lesson's dataflow."),
        "checks_pipeline:check_pipeline",
    ),
    Exercise(
        "windows_of",
        "sliding-window",
        "every window of an event",
        """\
Write `windows_of(ts, size, slide, offset=0)`: every sliding window `(start, end)` that contains `ts`, as
Spark's `window(ts, size, slide, startTime=offset)` gives them. Try a slide that does not divide the size
(10 s every 3 s): how many windows contain 9.999 s, and how many 10 s?""",
        _starter("windows_of(ts, size, slide, offset=0)", "Every sliding window (start, end) that contains ``ts``."),
        "checks_windows:check_windows_of",
    ),
    Exercise(
        "add_event",
        "session-window",
        "merge an event into a key's sessions",
        """\
Write `add_event(sessions, ts, gap)`: a key's sessions (a list of `(start, end)`, sorted by start) after an
event at `ts` opens the session `[ts, ts + gap)`. Return the new sorted list. The check tries events that touch a
session exactly, bridge two sessions or fall inside one, then replays the lesson with your merge and compares
the sessions with the ones Spark emitted, batch by batch.""",
        _starter("add_event(sessions, ts, gap)", "The sessions after an event at ``ts`` opens [ts, ts + gap)."),
        "checks_sessions:check_add_event",
    ),
    Exercise(
        "is_late",
        "session-window",
        "when a session row is late",
        """\
Write `is_late(ts, gap, late_watermark)`: in a batch whose previous batch's watermark is `late_watermark`, is a
row of a session-window query with event time `ts` and gap `gap` dropped as late? Careful: a row older than the
watermark is not always late here. The check replays the lesson with your rule and compares the sessions with
Spark's.""",
        _starter("is_late(ts, gap, late_watermark)", "Whether the row is dropped as late."),
        "checks_sessions:check_is_late",
    ),
    Exercise(
        "counts",
        "late-data",
        "is this row late for this window?",
        """\
Write `counts(window_end, batch_id, watermarks)`: does a row that arrives in batch `batch_id` still count for
its window ending at `window_end`? `watermarks[k]` is WM_k, the watermark batch k ran with. The check replays
the lesson's rows with your rule and Spark's watermarks; the counts and sums must be the ones Spark emitted.""",
        _starter(
            "counts(window_end, batch_id, watermarks)",
            "Whether a row of batch ``batch_id`` counts for the window ending at ``window_end``.",
        ),
        "checks_windows:check_counts",
    ),
    Exercise(
        "counting_windows",
        "late-data",
        "an old row in sliding windows",
        """\
With sliding windows an old row can be late for one of its windows and count in another. Write
`counting_windows(ts, batch_id, watermarks, size, slide)`: the windows `(start, end)` that a row of batch
`batch_id` with event time `ts` counts in. Use `ministream.time.windows.sliding(ts, size, slide)` for its windows (you
wrote the same in notebook 3) and your rule from the exercise above. The check replays the sliding-window lesson:
every window's count and average must be Spark's.""",
        _starter("counting_windows(ts, batch_id, watermarks, size, slide)", "The sliding windows the row counts in."),
        "checks_windows:check_counting_windows",
    ),
    Exercise(
        "emits",
        "output-modes",
        "what each output mode emits",
        """\
Write `emits(mode, window_end, touched, watermark)`: at the end of a batch whose watermark is `watermark`, is a
window that is in state emitted, in `mode` (`"append"`, `"update"` or `"complete"`)? `touched` says whether the
batch changed the window. (Late rows and eviction are the check's job.) The check replays the lesson in the
three modes with your rule and compares every batch with Spark's.""",
        _starter(
            "emits(mode, window_end, touched, watermark)",
            "Whether a window in state is emitted at the end of the batch.",
        ),
        "checks_output:check_emits",
    ),
    Exercise(
        "join_batch",
        "stream-join",
        "the pairs one batch of a join emits",
        """\
Impressions (left) and clicks (right) are dicts with `ad_id` and `ts`; a click matches an impression of the
same ad shown at most `within` before it (`impression_time <= click_time <= impression_time + within`). Write
`join_batch(left_state, right_state, new_left, new_right, within)`: the `(impression, click)` pairs one
micro-batch emits, given the rows each side has in state and the batch's new rows. Either side may arrive first;
no pair may come out twice. The check keeps the state (late rows, eviction) and compares each batch of the
lesson with Spark's.""",
        _starter(
            "join_batch(left_state, right_state, new_left, new_right, within)",
            "The (impression, click) pairs this batch emits.",
        ),
        "checks_join:check_join_batch",
    ),
    Exercise(
        "enrich_batch",
        "enrichment-join",
        "one batch of a stream-static join",
        """\
Write `enrich_batch(trips, table, how)`: the rows one micro-batch of `trips.join(drivers, "driver", how)`
emits, where `trips` are the batch's trips (dicts with `ts`, `driver`, `fare`), `table` is the drivers table
in force at that batch (dicts with `driver` and `city`) and `how` is `"inner"` or `"left_outer"`. Each output
row is the trip with its `city`. Think about a trip with no table row, a trip without a driver, and a driver
with two rows. The check replays the lesson in both join types, with the table of each batch, and compares every
batch with Spark's.""",
        _starter("enrich_batch(trips, table, how)", "The rows this batch of the stream-static join emits."),
        "checks_enrichment:check_enrich_batch",
    ),
    Exercise(
        "top_driver",
        "chained-aggregations",
        "the top driver of an hour",
        """\
The second step of the lesson receives, for one hour, the sums the first step emitted: dicts with `driver` and
`total`. Write `top_driver(sums)`: the `(driver, total)` that Spark's `max(struct(total, driver))` picks. Think
about two drivers with the same total. The check then feeds the first step's sums of the lesson, hour by hour,
through your function, and compares each answer, and the batch it comes out in, with Spark's.""",
        _starter("top_driver(sums)", "The (driver, total) of the hour's top driver."),
        "checks_chained:check_top_driver",
    ),
    Exercise(
        "deal_out",
        "operator-state",
        "deal a rescaled operator state out",
        """\
A rescale restores the operator state of the old subtasks into a different number of new subtasks. Write
`deal_out(lists, parallelism, mode)`: `lists` holds the lists of the old subtasks, in subtask order; return one
list per new subtask (`parallelism` of them). With `mode="even"` every item goes to exactly one new subtask: put
the old lists end to end and cut them into contiguous parts whose sizes differ by at most one, the larger parts
first. With `mode="union"` every new subtask gets every item. The check tries edge cases (more subtasks than
items, one subtask), then the lesson's buffers at its restore.""",
        _starter("deal_out(lists, parallelism, mode)", "One list per new subtask."),
        "checks_operator_state:check_deal_out",
    ),
    Exercise(
        "state_watermark",
        "outer-join",
        "how long the join keeps an impression",
        """\
The join condition is `click_time >= impression_time AND click_time <= impression_time + upper` (or `<` when
`inclusive` is false). Write `state_watermark(watermark, upper, inclusive)`: impressions whose time is at or
before the value you return can match no click still to come, so the join may forget them (and emit the
unmatched ones with nulls). Careful with the millisecond. The check replays the lesson's unmatched impressions
with your bound and compares the batch of each null-padded row with Spark's.""",
        _starter(
            "state_watermark(watermark, upper, inclusive)",
            "Impressions at or before this time can leave the join state.",
        ),
        "checks_time:check_state_watermark",
    ),
    Exercise(
        "global_watermark",
        "idle-input",
        "one watermark from two inputs",
        """\
Write `global_watermark(watermark, proposals, policy)`: the next batch's watermark of a query with several
watermarked inputs, from the current `watermark` and `proposals = {input: largest event time so far - delay}`,
where an input that has produced no row yet proposes `None`. `policy` is `"min"` or `"max"`
(`spark.sql.streaming.multipleWatermarkPolicy`). The check replays the lesson under both policies and compares
every watermark with Spark's.""",
        _starter(
            "global_watermark(watermark, proposals, policy)", "The next watermark of a query with several inputs."
        ),
        "checks_time:check_global_watermark",
    ),
    Exercise(
        "forget",
        "deduplication",
        "when deduplication forgets a key",
        """\
Write `forget(first_ts, delay, watermark)`: does `dropDuplicatesWithinWatermark` forget a key whose first copy
had event time `first_ts`, at the end of a batch whose watermark is `watermark`? The check replays the lesson
(`key=within`) with your rule: every batch must let through the rows Spark let through.""",
        _starter("forget(first_ts, delay, watermark)", "Whether the key is forgotten at the end of this batch."),
        "checks_time:check_forget",
    ),
    Exercise(
        "emit_batch",
        "microbatch-vs-continuous",
        "in which batch a window comes out",
        """\
Write `emit_batch(window_end, watermarks)`: the id of the micro-batch in which append mode emits a window that
ends at `window_end`, where `watermarks[k]` is WM_k, the watermark batch k ran with; `None` if no batch emits it.
The check compares every window of this lesson's events with the batch Spark emitted it in.""",
        _starter("emit_batch(window_end, watermarks)", "The batch that emits the window, or None."),
        "checks_output:check_emit_batch",
    ),
    Exercise(
        "fires_after",
        "microbatch-vs-continuous",
        "when the continuous model fires a window",
        """\
The continuous model has no batches: its watermark moves after every row. Write
`fires_after(window_end, event_times, delay)`: rows arrive with `event_times`, in this order; after which row
(numbered from 1) does a tumbling window ending at `window_end` fire? `None` if no row makes it fire before the
end of input. Then compare with your `emit_batch`: how many rows later does micro-batch emit the same window?""",
        _starter(
            "fires_after(window_end, event_times, delay)",
            "The number (from 1) of the row after which the window fires, or None.",
        ),
        "checks_output:check_fires_after",
    ),
    Exercise(
        "due_timers",
        "device-sessions",
        "which timers fire",
        """\
Write `due_timers(timers, watermark)`: of the event-time timers `timers`, a list of `(expiry, key)` in the
order they were set, the ones that fire at the end of a batch with this watermark, in the order they fire.""",
        _starter("due_timers(timers, watermark)", "The (expiry, key) timers that fire, in firing order."),
        "checks_engine:check_due_timers",
    ),
    Exercise(
        "ttl_expired",
        "device-sessions",
        "when state expires",
        """\
Write `ttl_expired(written_at, ttl, batch_timestamp)`: has a state entry written at processing time
`written_at` (ms) with time-to-live `ttl` (ms) expired in a batch stamped `batch_timestamp`?""",
        _starter("ttl_expired(written_at, ttl, batch_timestamp)", "Whether the entry has outlived its TTL."),
        "checks_engine:check_ttl_expired",
    ),
    Exercise(
        "session_timer",
        "game-heartbeats",
        "what a device's timer does with a session",
        """\
A device's processing-time timer fired in a batch stamped `now` (ms). Write `session_timer(figures, now, heartbeat,
timeout)`: what it does with one of the device's open sessions, whose `figures` are `(started, last_event,
next_beat, events, points)` (times in ms): `"timed_out"` (it closes), `"heartbeat"` (it sends one) or `None`.""",
        _starter(
            "session_timer(figures, now, heartbeat, timeout)", '"timed_out", "heartbeat" or None for this session.'
        ),
        "checks_engine:check_session_timer",
    ),
    Exercise(
        "next_beat",
        "game-heartbeats",
        "when the next heartbeat is",
        """\
A session started at `started` just sent a heartbeat in a batch stamped `now`. Write `next_beat(started, now,
heartbeat)`: the processing time (ms) of its next heartbeat. Heartbeats keep to the session's own rhythm: every
`heartbeat` ms from its start. The check includes a batch that comes late.""",
        _starter("next_beat(started, now, heartbeat)", "The time of the session's next heartbeat."),
        "checks_engine:check_next_beat",
    ),
    Exercise(
        "restart_at",
        "checkpoint-recovery",
        "where a query goes on after a crash",
        """\
A micro-batch query's checkpoint location holds `offsets/k` (written before batch k reads anything) and
`commits/k` (written when it ended). Write `restart_at(offsets, commits)`: given the batch ids found in each
folder, return `(batch_id, rerun)`: the batch the restarted query runs first, and whether that batch runs again
(a batch that started before the crash).""",
        _starter("restart_at(offsets, commits)", "(batch id the restarted query runs first, whether it is a rerun)."),
        "checks_engine:check_restart_at",
    ),
    Exercise(
        "barrier_arrives",
        "barrier-alignment",
        "one step of barrier alignment",
        """\
A subtask with `inputs` inputs takes an aligned checkpoint. Write `barrier_arrives(held_back, position,
inputs)`: barrier n has just arrived on input `position`. Update `held_back`, the set of inputs the subtask does
not read from (in place), and return `True` when the subtask takes its snapshot now (and forwards the barrier).
The check plays arrival sequences on 1, 2 and 3 inputs, two checkpoints in a row.""",
        _starter(
            "barrier_arrives(held_back, position, inputs)",
            "Barrier n arrived on input ``position``: True when the snapshot is taken now.",
        ),
        "checks_engine:check_barrier_arrives",
    ),
    Exercise(
        "as_of",
        "state-backends",
        "a versioned count in an external store",
        """\
A job keeps a count per key in Redis, written as one version per batch so that a replayed batch rewrites its own
version instead of adding its rows again: `versions = {batch_id: count}`. Write `as_of(versions, batch_id)`: the
count as of `batch_id` (the last batch committed), which a restarted job reads back.""",
        _starter("as_of(versions, batch_id)", "The count as of ``batch_id`` ({batch id: count} versions)."),
        "checks_engine:check_as_of",
    ),
    Exercise(
        "recover",
        "changelog",
        "a subtask's state from its snapshot and its changelog",
        """\
Write `recover(snapshot, records, version)`: the state a subtask restores from checkpoint position `version`.
`snapshot` is `(snapshot_version, {key: value})`, or `None` when the log has no snapshot yet; `records` is the
subtask's changelog, `{version: {key: value}}`, a value `None` meaning the key was removed. Return the state,
`{key: value}`.""",
        _starter("recover(snapshot, records, version)", "The state as of ``version``: snapshot, then the log."),
        "checks_engine:check_recover",
    ),
]
"""Every exercise, in teaching order."""


def exercise_named(function: str) -> Exercise:
    """The exercise whose function is called ``function``."""
    for exercise in EXERCISES:
        if exercise.function == function:
            return exercise
    raise KeyError(f"no exercise writes a function called {function!r}")


def exercises_of(lessons) -> list[Exercise]:
    """The exercises of a notebook that teaches these lessons, in order."""
    return [exercise for exercise in EXERCISES if exercise.lesson in set(lessons)]
