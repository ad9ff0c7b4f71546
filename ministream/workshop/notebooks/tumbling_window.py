"""Notebook 02, tumbling windows: aggregates that become final.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('02-tumbling-window.ipynb', ('tumbling-window',))
"""

from ministream.workshop.notebooks.cells import (
    NotebookSource,
    code,
    event_time_plot,
    lesson_diagram,
    lesson_events,
    markdown,
)

NOTEBOOK = NotebookSource(
    2,
    "tumbling-window",
    ("tumbling-window",),
    [
        markdown("""# 2. Tumbling windows: aggregates that become final

**At the end of this notebook you will be able to** find the window of any event, compute Spark's watermark
batch by batch, and predict in which micro-batch an `append` query emits each window (and why it looks one
batch late).

The tutorial page is `tutorials/02-tumbling-window.md`; the code is `ministream/time/windows.py`,
`ministream/operators/window.py` and `ministream/lessons/tumbling_window.py`."""),
        lesson_events("tumbling-window"),
        markdown("""## Which window?

A 10-second tumbling window is `[start, start + 10 s)`, with start rounded down to a multiple of 10 seconds
from the Unix epoch."""),
        code("""from ministream.time.windows import tumbling, describe_window

for row in lesson.default_script[1]:
    print(format_row(row), "->", describe_window(*tumbling(row["ts"], size=10_000)))"""),
        markdown("""## The dataflow

A source, a watermark step (it tracks the largest event time), and a keyed window step: one accumulator per
key and per window."""),
        lesson_diagram(),
        markdown("""## The output and the trace

Every emitted window comes with the reason: its end is at or before the batch's watermark."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print()
print(run.trace.format())"""),
        markdown("""## Event time against arrival order

Each dot is an event, in the order it arrived; the orange steps are the watermark the events of each batch
are judged against (the previous batch's). Nothing is late here: every window an event belongs to was still
open when it arrived."""),
        event_time_plot("tumbling-window: events and the watermark they arrive under"),
        markdown("""## State is bounded by the watermark

Windows enter state as events arrive and leave it when the watermark passes their end."""),
        code("""from ministream.tools.plots import state_plot, state_sizes

sizes = state_sizes(run)  # {step: [entries after batch 0, after batch 1, ...]}
assert sizes == {"per_window": [2, 3, 4, 2, 1]}
state_plot(sizes, ylabel="windows in state", title="state of step 'per_window'")"""),
        markdown("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes a while: Spark
starts) and compares rows and watermarks batch by batch, the no-data batch included."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        markdown("""## The twin written by hand, and the twin the compiler writes

The twin above was written by hand, the way a Spark user would. ministream's compiler
(`ministream/spark/compiler/`) writes one from the pipeline itself, a statement per step: the code below is
exactly what runs. `ministream twin tumbling-window` prints it at the command line, `--hand-written` the other."""),
        code("""import attrs
from ministream.spark.compiler import compiled_lesson_twin

print(lesson.twin_code())
compiled = compiled_lesson_twin(lesson)
print(compiled.source)
result = compare_lesson(attrs.evolve(lesson, twin=compiled.twin))
print(result.summary())
assert result.matches"""),
        markdown("""## Recap

- A tumbling window is `[start, start + size)`, aligned on the epoch; each event is in exactly one.
- Spark's watermark for batch k is the newest event time of the batches before it minus the delay.
- `append` emits a window once, when the watermark passes its end, and then forgets it."""),
    ],
)
