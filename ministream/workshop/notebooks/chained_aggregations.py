"""Notebook 20, chained aggregations: the top driver of each hour.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('20-chained-aggregations.ipynb', ('chained-aggregations',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    20,
    "chained-aggregations",
    ("chained-aggregations",),
    [
        markdown("""# 20. Chained aggregations: the top driver of each hour

**At the end of this notebook you will be able to** chain two stateful steps in one query (an hourly sum per
driver, then the top driver per hour), say which watermarks each step runs a batch with, and predict the batch
in which each step emits an hour.

The tutorial page is `tutorials/20-chained-aggregations.md`; the code is
`ministream/lessons/chained_aggregations.py` and `ministream/models/watermark_propagation.py`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

lesson = get_lesson("chained-aggregations")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [format_row(row) for row in batch])"""),
        markdown("""## The dataflow

Two keyed window steps: the hourly sums, hashed by driver, then the top driver, gathered per hour. Between
them, `with_window_time` gives each sum the time of its hour."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
graphviz.Source(to_dot(flow))"""),
        markdown("""## What each step emits, batch by batch

The trace lists each step's emissions and the late trip the first step dropped."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
for line in run.trace.of_kind("emit") + run.trace.of_kind("late"):
    print(line.batch_id, line.step, line.kind, line.text[:90])"""),
        markdown("""## Each step's watermark

Both steps run batch k with WM_k: an aggregation passes its watermark on unchanged."""),
        code("""from ministream.models.watermark_propagation import step_watermarks
from ministream.operators.planner import physical_graph
from ministream.time.units import format_clock

graph = physical_graph(flow)
for batch_id, watermark in enumerate(run.watermarks):
    own = step_watermarks(flow, graph, watermark)
    print(batch_id, {step: format_clock(value) for step, value in own.items()})"""),
        code("""from ministream.tools.plots import state_plot, state_sizes

state_plot(state_sizes(run), ylabel="windows in state", title="chained-aggregations: state after each batch")"""),
        markdown("""## The PySpark twin, on the same batches

Two `groupBy`s in append mode, the second over `window_time("window")`. The first Spark run in a kernel takes
about 20 seconds."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- Two aggregations chain in one query: the second groups the first's output by `window_time`, in append mode.
- Each stateful step has its own watermarks, passed on from the step before it: an aggregation passes its
  input watermark on unchanged, a time-range join a lower one (its state watermark).
- An hour leaves both steps in the same batch, the first whose watermark reaches the hour's end.
- A row late for the first step is dropped there; what the first step emits is never late for the second."""),
    ],
)
