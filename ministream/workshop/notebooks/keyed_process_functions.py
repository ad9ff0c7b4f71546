"""Notebook 11, keyed process functions: state, timers and time-to-live.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('11-keyed-process-functions.ipynb', ('device-sessions', 'state-ttl', 'processing-time'))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    11,
    "keyed-process-functions",
    ("device-sessions", "state-ttl", "processing-time"),
    [
        markdown("""# 11\N{EN DASH}13. Keyed process functions: state, timers and time-to-live

**At the end of this notebook you will be able to** write a processor that keeps map state per key and sets
event-time timers, say in which micro-batch a timer fires and which rows are dropped as late, see state expire
by its time-to-live, and test processing-time timers with a manual clock, checking all three against Spark's
`transformWithState`.

The tutorial pages are `tutorials/11-device-sessions.md`, `tutorials/12-state-ttl.md` and
`tutorials/13-processing-time.md`; the code is `ministream/operators/process.py`, `ministream/operators/processor_handle.py`,
`ministream/state/ttl.py` and the three lessons in `ministream/lessons/`."""),
        markdown("""## 11. Device sessions: map state and event-time timers

Devices send game events, each with its game session; per device, a map from session id to the session's
figures. Every 30 s of event time each open session sends a heartbeat; a session silent for 30 s closes."""),
        code("""import sys
from ministream.lessons import get_lesson, compare_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

sessions = get_lesson("device-sessions")
for batch_id, batch in enumerate(sessions.default_script):
    print(batch_id, [format_row(row) for row in batch])"""),
        markdown(
            """The dataflow: a watermark, a hash edge by device, and the `process` step, here at parallelism 2."""
        ),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = sessions.pipeline(sessions.default_script, sessions.resolve_params())
graphviz.Source(to_dot(flow, parallelism=2))"""),
        markdown("""The trace: the late row of batch 3, the input handler of every device with rows, every timer that fired
and what it returned. Batch 6 is a no-data batch: the watermark rose after the script ended."""),
        code("""run = sessions.run(trace=True)
print(run.trace.format())"""),
        markdown("""A row comes out when the watermark reaches its time, not before: every heartbeat or timeout (dots) is
at or below the watermark of the batch that emits it (the line)."""),
        code("""from ministream.tools.plots import watermark_plot

batches = run.output()
assert all(r["time"] <= b.watermark for b in batches for r in b.rows)
emitted = {kind: [(b.batch_id, r["time"]) for b in batches for r in b.rows if r["kind"] == kind]
           for kind in ("heartbeat", "closed")}
watermark_plot({"watermark WM_k": [b.watermark for b in batches]}, emitted,
               title="heartbeats and timeouts, at the batch that emits them")"""),
        markdown("""The PySpark twin, on the same batches (the first Spark run in a kernel takes about 20 seconds):"""),
        code("""result = compare_lesson(sessions)
print(result.table())
assert result.matches"""),
        markdown("""That twin is `DeviceSessions` written a second time, against Spark's handle. The processor adapter
(`ministream/spark/processor_adapter.py`) runs the very same `DeviceSessions` class inside Spark's
`transformWithState` instead: the lesson's `adapter_twin` hands it the pipeline's own process step. Swap the
twin and compare again:"""),
        code("""import attrs
from ministream.lessons import device_sessions

result = compare_lesson(attrs.evolve(sessions, twin=device_sessions.adapter_twin))
print(result.summary())
assert result.matches"""),
        markdown("""### A window after the process step

With `event_time_column="time"` (Spark's `eventTimeColumnName`) the processor's rows carry the event time of
the steps after it: `per_window="30 seconds"` counts them per kind in tumbling windows over `time`, in append
mode. Every row must be later than the previous batch's watermark (`WM_{k-1}`), or the query fails, in Spark
and in ministream; a heartbeat or a close comes from the timer that waited for it, so it is. The window of
10:00:30 comes out in batch 6, when the watermark passes 10:01:00."""),
        code("""from ministream.time.units import format_clock

windowed = sessions.run(params={"per_window": "30 seconds"}).output()
for batch in windowed:
    print(batch.batch_id, format_clock(batch.watermark) if batch.watermark else 0,
          sorted((r["kind"], format_clock(r["window_start"]), r["rows"]) for r in batch.rows))
previous = [None] + [b.watermark for b in run.output()][:-1]
assert all(r["time"] > (wm or 0) for b, wm in zip(run.output(), previous) for r in b.rows)
graphviz.Source(to_dot(sessions.pipeline(sessions.default_script, sessions.resolve_params({"per_window": 30_000}))))"""),
        code("""result = compare_lesson(sessions, params={"per_window": "30 seconds"})
print(result.table())
assert result.matches"""),
        markdown("""## 12. State TTL: state that expires

A time-to-live counts processing time: the batch timestamp. ministream's batches run one second apart here;
a user's visits are forgotten two seconds after the last write."""),
        code("""ttl = get_lesson("state-ttl")
run = ttl.run(trace=True)
print_batches(run.output(), sys.stdout)
for line in run.trace.of_kind("ttl"):
    print(line.batch_id, line.text)"""),
        markdown("""A read misses an expired entry at once; the cleanup at the end of the batch frees its room. The state
size shows the cleanups of batches 3 and 4."""),
        code("""from ministream.tools.plots import state_plot, state_sizes

sizes = state_sizes(run)
assert sizes == {"visits": [4, 4, 4, 2, 2]}
state_plot(sizes, ylabel="state entries", title="state of step 'visits'")"""),
        markdown("""Spark's batches read the wall clock, so the comparison runs Spark first and then ministream on the batch
timestamps Spark wrote in its checkpoint:"""),
        code("""result = compare_lesson(ttl)
print(result.table())
assert result.matches"""),
        markdown("""## 13. Processing time: a manual clock

A watchdog reports a sensor silent for 2.5 s of processing time. Give the batches other timestamps and other
alerts come out; give them the same and the same do: the clock moves only when told to."""),
        code("""from ministream.time.units import format_clock

watchdog = get_lesson("processing-time")
start = watchdog.batch_timestamps(watchdog.default_script, {})[0]
for name, timestamps in (("one second apart", None),
                         ("0.3 s apart", [start + k * 300 for k in range(7)]),
                         ("a stall before batch 2", [start, start + 1_000] + [start + 9_000 + k * 100 for k in range(5)])):
    alerts = [(b.batch_id, r["key"], format_clock(r["alert_time"]))
              for b in watchdog.run(batch_timestamps=timestamps).output() for r in b.rows]
    print(f"{name}: {alerts}")"""),
        markdown("""Spark, in processing-time mode, would ask for another batch for ever; the twin runs with no-data batches
off, and ministream replays Spark's batch timestamps:"""),
        code("""result = compare_lesson(watchdog)
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- A processor keeps value, list and map state per key and sets timers per key; the engine sets the key.
- Per micro-batch: late rows dropped (`ts <= WM_{k-1}`, event-time mode), input handlers, then timers
  (`expiry <= WM_k` or `<= batch timestamp`) in order, then TTL cleanup; a timer set by a timer handler waits
  for the next batch.
- With an `event_time_column`, a window can follow the processor (append mode); each row it returns must be
  later than the previous batch's watermark.
- A time-to-live counts processing time: reads hide expired state at once, the cleanup frees it.
- Processing time is not in the events: ministream's manual clock makes it repeatable, and the comparison
  with Spark replays Spark's batch timestamps."""),
    ],
)
