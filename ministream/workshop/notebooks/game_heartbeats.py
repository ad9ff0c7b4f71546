"""Notebook 23, game heartbeats: the seed's gaming case, map state and processing-time timers per device.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('23-game-heartbeats.ipynb', ('game-heartbeats',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    23,
    "game-heartbeats",
    ("game-heartbeats",),
    [
        markdown("""# 23. Game heartbeats: sessions kept alive on the machine's clock

**At the end of this notebook you will be able to** keep, per device, a map of its game sessions, send a
heartbeat for every open session every so often of *processing time*, close a session when it ends or falls
silent, say in which batch each row comes out for any batch timestamps, and check it all against Spark's
`transformWithState` in `ProcessingTime` mode.

The tutorial page is `tutorials/23-game-heartbeats.md`; the code is `ministream/lessons/game_heartbeats.py`
(the processor), `ministream/operators/process.py` and `ministream/time/timers.py` (the timers); the scale
benchmark, four million sessions, is `ministream/tools/bench/scale.py`."""),
        markdown("""## The events

Devices send `start`, `play` and `end` events, each with its game session. ministream's batches run one second
apart from 10:00:00; the empty batches let processing time pass."""),
        code("""import sys
from ministream.lessons import get_lesson, compare_lesson
from ministream.core.results import format_row
from ministream.time.units import format_clock

game = get_lesson("game-heartbeats")
timestamps = game.batch_timestamps(game.default_script, {})
for batch_id, batch in enumerate(game.default_script):
    print(batch_id, format_clock(timestamps[batch_id]), [(r["device"], r["session"], r["kind"]) for r in batch])"""),
        markdown("""The dataflow: a hash edge by device, and the `process` step in processing-time mode."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = game.pipeline(game.default_script, game.resolve_params())
graphviz.Source(to_dot(flow, parallelism=2))"""),
        markdown("""## What comes out, and when

A heartbeat every 2 s of processing time from each session's start (the seed's is 30 s; `--param
heartbeat='30 seconds'`), an `ended` row at once for an end event, a `timed_out` row 4.5 s after a session's
last event. The trace says which timer fired for which device."""),
        code("""run = game.run(trace=True)
for batch in run.output():
    print(batch.batch_id, format_clock(batch.processing_time),
          sorted((r["kind"], r["session"], r["events"]) for r in batch.rows))
for line in run.trace.of_kind("timer")[:6]:
    print(line.batch_id, line.text)"""),
        markdown("""The state: one map per device, one entry per open session, and one timer per distinct wake-up time
(the earlier of a session's next heartbeat and its timeout)."""),
        code("""from ministream.tools.plots import state_plot, state_sizes

state_plot(state_sizes(run), ylabel="entries in state", title="game-heartbeats: state after each batch")"""),
        markdown("""## The clock decides

The same events with the batches further apart: fewer heartbeats (one per batch at most, on the session's own
rhythm), and the silent sessions time out sooner in batches."""),
        code("""start = timestamps[0]
far = [start + k * 3_000 for k in range(len(game.default_script))]
for batch in game.run(batch_timestamps=far).output():
    print(batch.batch_id, format_clock(batch.processing_time), sorted((r["kind"], r["session"]) for r in batch.rows))"""),
        markdown("""Spark's batches read the wall clock: the comparison runs Spark first, then ministream on the batch
timestamps Spark recorded (the first Spark run in a kernel takes about 20 seconds):"""),
        code("""result = compare_lesson(game)
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- Per device, a map state of its sessions; per session, a wake-up time: the earlier of its next heartbeat and
  its timeout; per device, one processing-time timer per distinct wake-up time.
- Rows first, then timers: an `end` closes its session at once; a timer closes a session silent for the
  timeout (`last_event + timeout <= now`) or sends one heartbeat (`next_beat <= now`), and the next heartbeat
  keeps the session's rhythm.
- Processing time is the batch timestamp: ministream's manual clock makes the run repeatable, and the
  comparison with Spark replays Spark's timestamps.
- At four million sessions (`ministream bench --scale`), the timers are kept in buckets by time: see
  `tutorials/benchmarks.md`."""),
    ],
)
