"""Notebook 04, session windows: one window per burst of activity.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('04-session-window.ipynb', ('session-window',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, lesson_diagram, markdown

NOTEBOOK = NotebookSource(
    4,
    "session-window",
    ("session-window",),
    [
        markdown("""# 4. Session windows: one window per burst of activity

**At the end of this notebook you will be able to** predict how a key's events group into sessions (and when
one event bridges two of them), say which rows Spark drops as late for a session window and in which batch
each session is emitted, use a gap that depends on the row, and check all of it against Spark.

The tutorial page is `tutorials/04-session-window.md`; the code is `ministream/operators/sessions.py` and
`ministream/lessons/session_window.py`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row
from ministream.time.units import format_clock

lesson = get_lesson("session-window")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [f"{format_clock(row['ts'])} {row['key']}" for row in batch])"""),
        markdown("""## The dataflow

A source, a `with_watermark` step, then a keyed `window` step whose window is a `Session`: the same step as for
tumbling windows, with windows that merge instead of windows fixed in advance."""),
        lesson_diagram(),
        markdown("""## Batch by batch, with the trace

Look for the `merge` lines (batch 2: `a@12` bridges two sessions of `a`), the `late` line (batch 3: `c@4`,
whose session would end at 10:00:14, at or before the previous batch's watermark 10:00:15) and the `emit`
lines (each session once, when the watermark passes its end; batch 5 is a no-data batch)."""),
        code("""run = lesson.run(trace=True)
print(run.trace.format())"""),
        code("""print_batches(run.output(), sys.stdout)"""),
        markdown("""## The picture: events, sessions, the watermark

Each dot is an event (x: its event time, y: its key), each bar a session that was emitted, labelled with the
batch that emitted it. The cross is the late row. The dashed lines are the watermarks of batches 2, 3 and 5.
Notice `c`: the session `[10:00:03, 10:00:13)` was emitted in batch 2; `c@6`, not late, then opened a second
session that overlaps it."""),
        code("""from ministream.time.lateness import dropped_flags
from ministream.tools.plots import windows_plot

assert len(run.late_rows()) == 1
late = dropped_flags(lesson.default_script, run.late_rows())  # one flag per event, in arrival order
windows_plot(lesson.default_script, run.output(), late=late,
             watermarks={f"WM_{k}": run.watermarks[k] for k in (2, 3, 5)}, title="sessions, and the batch that emitted each")"""),
        markdown("""## A gap per row

`gap_by=key`: key `a` waits 10 s, key `b` 20 s, other keys have no gap (a `when` without `otherwise` in Spark),
and their rows are dropped: silently in Spark, counted and traced in ministream."""),
        code("""by_key = lesson.run(params={"gap_by": "key"})
print_batches(by_key.output(), sys.stdout)
[operator] = by_key.graph.operators("sessions")
for dropped in operator.dropped_rows:
    print(format_row(dropped.row), "--", dropped.rule)
assert len(operator.dropped_rows) == 4"""),
        markdown("""## Complete mode

Every session, every batch, none removed; but the late row `c@4` is still dropped: for session windows Spark's
late filter runs in every output mode."""),
        code("""print_batches(lesson.run(params={"mode": "complete"}).output()[2:4], sys.stdout)"""),
        markdown("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes a while: Spark starts)
and compares batch by batch."""),
        code("""from ministream.lessons import compare_lesson

for params in ({}, {"mode": "complete"}, {"gap_by": "key"}):
    result = compare_lesson(lesson, params=params)
    print(params or "default", "->", result.summary())
    assert result.matches, result.table()
print(compare_lesson(lesson).table())"""),
        markdown("""## Random events

`fuzz_lesson` draws random scripts aimed at the edges of sessions and compares each one with Spark
(`ministream fuzz session-window --runs 20` does more)."""),
        code("""from ministream.tools.fuzz import fuzz_lesson
from ministream.workshop.progress import progress_bar

with progress_bar(2, "fuzz session-window", unit="script") as step:
    report = fuzz_lesson(lesson, runs=2, seed=4, log=step)
assert report.matches"""),
        markdown("""## Recap

- An event opens `[ts, ts + gap)`; sessions of a key merge when `next.start <= current.end`; one event can
  bridge two sessions.
- Spark drops a row as late when `ts + gap <= WM_{k-1}`, checked on the row's own session before merging, in
  append and complete mode.
- Append emits a session once, when `end <= WM_k`; update mode is refused; rows without a positive gap are
  dropped."""),
    ],
)
