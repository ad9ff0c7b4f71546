"""Write notebooks 02, 03, 05 and 06 (tumbling and sliding windows, late data, output modes) with nbformat:
``python notebooks/build_window_notebooks.py``.

The notebooks only call the package; this script only lays out their cells, so they can be rebuilt after an
edit here instead of by hand in Jupyter. tests/test_notebooks.py executes them under a real kernel.
"""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def notebook(name: str, cells: list) -> None:
    nb = new_notebook(cells=[new_markdown_cell(c[1]) if c[0] == "md" else new_code_cell(c[1]) for c in cells])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, HERE / name)


def md(text):
    return ("md", text.strip())


def code(text):
    return ("code", text.strip())


def events_cell(lesson: str) -> tuple:
    return code(f"""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

lesson = get_lesson("{lesson}")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [format_row(row) for row in batch])""")


def diagram_cell(params: str = "") -> tuple:
    return code(f"""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params({params}))
graphviz.Source(to_dot(flow))""")


PLOT = """from ministream.tools.plots import event_time_plot, watermarks_at_arrival
from ministream.operators.window import dropped_flags

params = lesson.resolve_params()
watermarks = watermarks_at_arrival(lesson.default_script, params["delay"], model="microbatch")
dropped = dropped_flags(lesson.default_script, run.late_rows())
event_time_plot(lesson.default_script, watermarks, late=dropped, title=TITLE)"""


notebook(
    "02-tumbling-window.ipynb",
    [
        md("""# 2. Tumbling windows: aggregates that become final

**At the end of this notebook you will be able to** find the window of any event, compute Spark's watermark
batch by batch, and predict in which micro-batch an `append` query emits each window (and why it looks one
batch late).

The tutorial page is `tutorials/02-tumbling-window.md`; the code is `ministream/time/windows.py`,
`ministream/operators/window.py` and `ministream/lessons/tumbling_window.py`."""),
        events_cell("tumbling-window"),
        md("""## Which window?

A 10-second tumbling window is `[start, start + 10 s)`, with start rounded down to a multiple of 10 seconds
from the Unix epoch."""),
        code("""from ministream.time.windows import tumbling, describe_window

for row in lesson.default_script[1]:
    print(format_row(row), "->", describe_window(*tumbling(row["ts"], size=10_000)))"""),
        md("""## The dataflow

A source, a watermark step (it tracks the largest event time), and a keyed window step: one accumulator per
key and per window."""),
        diagram_cell(),
        md("""## The output and the trace

Every emitted window comes with the reason: its end is at or before the batch's watermark."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print()
print(run.trace.format())"""),
        md("""## Event time against arrival order

Each dot is an event, in the order it arrived; the orange steps are the watermark the events of each batch
are judged against (the previous batch's). Nothing is late here: every window an event belongs to was still
open when it arrived."""),
        code("TITLE = 'tumbling-window: events and the watermark they arrive under'\n" + PLOT),
        md("""## State is bounded by the watermark

Windows enter state as events arrive and leave it when the watermark passes their end."""),
        code("""from matplotlib.figure import Figure

sizes = [summary.state_sizes["per_window"] for summary in run.trace.batches]
figure = Figure(figsize=(4, 2.5), layout="constrained")
axes = figure.add_subplot()
axes.step(range(len(sizes)), sizes, where="mid")
axes.set_xlabel("batch"); axes.set_ylabel("windows in state"); axes.set_title("state of step 'per_window'")
assert sizes == [2, 3, 4, 2, 1]
figure"""),
        md("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes a while: Spark
starts) and compares rows and watermarks batch by batch, the no-data batch included."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        md("""## Recap

- A tumbling window is `[start, start + size)`, aligned on the epoch; each event is in exactly one.
- Spark's watermark for batch k is the newest event time of the batches before it minus the delay.
- `append` emits a window once, when the watermark passes its end, and then forgets it."""),
    ],
)


notebook(
    "03-sliding-window.ipynb",
    [
        md("""# 3. Sliding windows: one event, several windows

**At the end of this notebook you will be able to** list the windows an event belongs to for any size, slide
and offset, and explain why an old event can be dropped from one of its windows and still count in another.

The tutorial page is `tutorials/03-sliding-window.md`; the code is `ministream/time/windows.py` and
`ministream/lessons/sliding_window.py`."""),
        events_cell("sliding-window"),
        md("""## The windows of one event

10-second windows starting every 5 seconds: two per event. With an offset, every start moves."""),
        code("""from ministream.time.windows import Sliding, describe_window

event = lesson.default_script[1][2]
for windows in (Sliding("10 seconds", "5 seconds"), Sliding("10 seconds", "5 seconds", offset="2 seconds"),
                Sliding("7 seconds", "3 seconds")):
    print(windows.describe(), "->", [describe_window(*w) for w in windows.assign(event["ts"])])"""),
        md("""## The dataflow"""),
        diagram_cell(),
        md("""## The output, and the late event

`a` at 10:00:08 arrives in the last batch: too late for `[10:00:00, 10:00:10)`, in time for
`[10:00:05, 10:00:15)`."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
for late in run.late_rows():
    print("late:", format_row(late.row), "for", describe_window(*late.window), "-", late.rule)"""),
        md("""The red cross marks the event dropped from one of its windows."""),
        code("TITLE = 'sliding-window: the event at 10:00:08 is late for one of its two windows'\n" + PLOT),
        md("""## The PySpark twin, with and without an offset"""),
        code("""from ministream.lessons import compare_lesson

for params in ({}, {"offset": "2 seconds"}):
    result = compare_lesson(lesson, params=params)
    print(params, result.summary())
    assert result.matches"""),
        md("""## Recap

- Sliding windows of `size` start every `slide` (plus `offset`); an event is in every window containing it.
- Late data is dropped per window: the watermark closes each window by its own end.
- Spark refuses `slide > size` and `|offset| >= slide`, and so does ministream."""),
    ],
)


notebook(
    "05-late-data.ipynb",
    [
        md("""# 5. Late data: what the watermark drops, and what it does not

**At the end of this notebook you will be able to** tell, for any event, whether Spark counts it or drops
it (`window end <= watermark of the previous batch`), and find every dropped event in ministream's trace,
in `run.late_rows()` and in the `late` side output.

The tutorial page is `tutorials/05-late-data.md`; the code is `ministream/operators/window.py` and
`ministream/lessons/late_data.py`."""),
        events_cell("late-data"),
        md("""## The dataflow: a side output for late rows

The window step's `late_rows="late"` output is sunk like any stream (Spark has no side output)."""),
        diagram_cell(),
        md("""## The trace

Each late row comes with the rule that dropped it; each batch says how many rows it dropped."""),
        code("""run = lesson.run(trace=True)
print(run.trace.format())"""),
        md("""## Late rows, counted and kept"""),
        code("""for late in run.late_rows():
    print(late.batch_id, format_row(late.row), "-", late.rule)
print("side output:", [len(batch.rows) for batch in run.output("late")])
assert len(run.late_rows()) == 2"""),
        md("""## Every row accounted for

Nothing is dropped silently: `run.accounting()` says where each row the run read went, step by step (rows
in = kept + late + dropped on purpose), and checks every sum (`ministream run late-data --accounting`)."""),
        code("""accounting = run.accounting()
print(accounting.format())
assert accounting.balanced and accounting.step("per_window").outcomes["late"] == 2"""),
        md("""## The picture

The orange line is the watermark each row is judged against: the previous batch's. The rows at 10:00:09 and
10:00:04 in batch 3 are under it and dropped. The row at 10:00:10 lies exactly on it and still counts: it is
its window's end (10:00:20) that is compared with the watermark, not its own time. And 10:00:09.999 in
batch 2 counts although batch 2's own watermark is already 10:00:10: it is judged against 10:00:02."""),
        code("TITLE = 'late-data: the red crosses are the rows dropped by the watermark'\n" + PLOT),
        md("""## The delay is the trade-off"""),
        code("""for delay in ("0 seconds", "5 seconds", "6 seconds", "20 seconds"):
    other = lesson.run(params={"delay": delay})
    print(delay, "late:", len(other.late_rows()), "rows out:", sum(len(b.rows) for b in other.output()))"""),
        md("""## The PySpark twin

Spark drops the same rows (silently): the outputs match batch for batch."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        md("""## Recap

- Late in batch k: the row's window ends at or before WM_{k-1}; the edge is inclusive.
- Old rows in open windows count; a row is judged against the previous batch's watermark.
- ministream shows every dropped row: trace, `run.late_rows()`, side output."""),
    ],
)


notebook(
    "06-output-modes.ipynb",
    [
        md("""# 6. Output modes: append, update, complete

**At the end of this notebook you will be able to** predict what each of Spark's output modes emits in every
batch for a windowed aggregate, which of them drop late rows and forget state, and write a user-defined
aggregate.

The tutorial page is `tutorials/06-output-modes.md`; the code is `ministream/operators/window.py` and
`ministream/lessons/output_modes.py`."""),
        events_cell("output-modes"),
        md("""## The dataflow

The same pipeline for the three modes: the mode is a setting of the run, as in Spark's
`writeStream.outputMode(...)`. `spread` is a user-defined aggregate (`Custom`)."""),
        diagram_cell(),
        md("""## The three modes, batch by batch"""),
        code("""runs = {mode: lesson.run(params={"mode": mode}) for mode in ("append", "update", "complete")}
for mode, run in runs.items():
    print("==", mode)
    print_batches(run.output(), sys.stdout)"""),
        md("""## Rows emitted per batch

`append` emits little and late, `update` a little every batch, `complete` the whole table every batch."""),
        code("""from matplotlib.figure import Figure

figure = Figure(figsize=(6, 3), layout="constrained")
axes = figure.add_subplot()
for offset, (mode, run) in zip((-0.25, 0, 0.25), runs.items()):
    counts = [len(batch.rows) for batch in run.output()]
    axes.bar([i + offset for i in range(len(counts))], counts, width=0.25, label=mode)
axes.set_xlabel("batch"); axes.set_ylabel("rows emitted"); axes.legend()
figure"""),
        md("""## Late rows and state

The row at 10:00:03 in batch 3 is late in `append` and `update` and counts in `complete`; only `complete`
keeps every window."""),
        code("""for mode, run in runs.items():
    state = sum(op.state_size() for op in run.graph.operators("per_window"))
    print(f"{mode:9} late rows: {len(run.late_rows())}  windows left in state: {state}")"""),
        md("""## The PySpark twin, in each mode"""),
        code("""from ministream.lessons import compare_lesson

for mode in ("append", "update", "complete"):
    result = compare_lesson(lesson, params={"mode": mode})
    print(mode, result.summary())
    assert result.matches"""),
        md("""## Recap

- `append`: each window once, when final. `update`: every change, at once. `complete`: everything, always.
- `append` and `update` drop late rows and forget windows the watermark passed; `complete` does neither.
- A user-defined aggregate is `create`, `add`, `result` (and `merge`)."""),
    ],
)
