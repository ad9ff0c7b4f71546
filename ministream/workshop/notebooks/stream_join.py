"""Notebook 07, stream-stream join: impressions and their clicks.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('07-stream-join.ipynb', ('stream-join',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    7,
    "stream-join",
    ("stream-join",),
    [
        markdown("""# 7. Stream-stream join: impressions and their clicks

**At the end of this notebook you will be able to** say why a stream-stream join keeps both inputs in state,
compute each side's state watermark from the time range and the watermark (with Spark's extra millisecond),
predict in which batch a pair is emitted or a row is dropped as late, and say why a filter after the join
moves the watermarks.

The tutorial page is `tutorials/07-stream-join.md`; the code is `ministream/operators/stream_join.py` and
`ministream/lessons/stream_join.py`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

lesson = get_lesson("stream-join")
for name in lesson.inputs:
    for batch_id, batch in enumerate(lesson.default_script[name]):
        print(name, batch_id, [format_row(row) for row in batch])"""),
        markdown("""## The dataflow

Two sources, each renamed (`select`) and watermarked, then one keyed `join` step fed by two hash edges: the
rows of one ad from both inputs meet in the same subtask."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
graphviz.Source(to_dot(flow, parallelism=2))"""),
        markdown("""## The output and the trace

The trace says why each pair was emitted, which row was dropped as late, and how many rows each side keeps
after every batch."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print(run.trace.format())"""),
        markdown("""## Each side's state, batch by batch

Impressions wait until `impression_time <= WM - within - 1 ms`, clicks until `click_time <= WM - 1 ms`."""),
        code("""from ministream.operators.stream_join import state_sizes_by_side
from ministream.tools.plots import state_plot

sizes = state_sizes_by_side(run.trace, "join")
assert sizes == {"impressions": [2, 3, 4, 3, 3, 3], "clicks": [1, 5, 7, 3, 3, 1]}
state_plot(sizes, ylabel="rows in join state", title="join state, by side")"""),
        markdown("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes about 20 seconds)."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        markdown("""## A filter after the join runs before it

`campaign=a` keeps only ad a's pairs with a filter after the join. Spark's optimizer runs it below the
impressions' watermark, and, since `impression_ad = click_ad`, a copy of it on `click_ad` below the clicks'
watermark: only ad a's rows move the watermarks. The pairs are the same three; the watermarks are not."""),
        code("""from ministream.time.units import format_clock

for campaign in ("all", "a"):
    batches = lesson.run(params={"campaign": campaign}).output()
    print(campaign, [format_clock(batch.watermark) if batch.watermark else 0 for batch in batches])
campaign_flow = lesson.pipeline(lesson.default_script, lesson.resolve_params({"campaign": "a"}))
graphviz.Source(to_dot(campaign_flow))"""),
        code("""result = compare_lesson(lesson, params={"campaign": "a"})
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- A stream-stream join keeps both sides in state; watermarks and a time range bound it.
- Left state watermark `WM - upper`, right `WM + lower`, minus 1 ms for inclusive bounds.
- In a batch, left rows join first, then right rows join the left state including this batch's rows.
- Rows at or before the previous batch's watermark are dropped as late, and the trace says so.
- A filter after the join on one side's columns runs below that side's watermark in Spark, one on the key
  below both: the rows it drops never move a watermark."""),
    ],
)
