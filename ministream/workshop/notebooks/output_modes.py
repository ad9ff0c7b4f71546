"""Notebook 06, output modes: append, update, complete.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('06-output-modes.ipynb', ('output-modes',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, lesson_diagram, lesson_events, markdown

NOTEBOOK = NotebookSource(
    6,
    "output-modes",
    ("output-modes",),
    [
        markdown("""# 6. Output modes: append, update, complete

**At the end of this notebook you will be able to** predict what each of Spark's output modes emits in every
batch for a windowed aggregate, which of them drop late rows and forget state, and write a user-defined
aggregate.

The tutorial page is `tutorials/06-output-modes.md`; the code is `ministream/operators/window.py` and
`ministream/lessons/output_modes.py`."""),
        lesson_events("output-modes"),
        markdown("""## The dataflow

The same pipeline for the three modes: the mode is a setting of the run, as in Spark's
`writeStream.outputMode(...)`. `spread` is a user-defined aggregate (`Custom`)."""),
        lesson_diagram(),
        markdown("""## The three modes, batch by batch"""),
        code("""runs = {mode: lesson.run(params={"mode": mode}) for mode in ("append", "update", "complete")}
for mode, run in runs.items():
    print("==", mode)
    print_batches(run.output(), sys.stdout)"""),
        markdown("""## Rows emitted per batch

`append` emits little and late, `update` a little every batch, `complete` the whole table every batch."""),
        code("""from ministream.tools.plots import bars_plot

counts = {mode: [len(batch.rows) for batch in run.output()] for mode, run in runs.items()}
bars_plot(counts, xlabel="batch", ylabel="rows emitted", title="rows emitted per batch, in each output mode")"""),
        markdown("""## Late rows and state

The row at 10:00:03 in batch 3 is late in `append` and `update` and counts in `complete`; only `complete`
keeps every window."""),
        code("""for mode, run in runs.items():
    state = sum(op.state_size() for op in run.graph.operators("per_window"))
    print(f"{mode:9} late rows: {len(run.late_rows())}  windows left in state: {state}")"""),
        markdown("""## The PySpark twin, in each mode"""),
        code("""from ministream.lessons import compare_lesson

for mode in ("append", "update", "complete"):
    result = compare_lesson(lesson, params={"mode": mode})
    print(mode, result.summary())
    assert result.matches"""),
        markdown("""## Recap

- `append`: each window once, when final. `update`: every change, at once. `complete`: everything, always.
- `append` and `update` drop late rows and forget windows the watermark passed; `complete` does neither.
- A user-defined aggregate is `create`, `add`, `result` (and `merge`)."""),
    ],
)
