"""Notebook 14, micro-batch against continuous: the same windows, two ways of moving time.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('14-microbatch-vs-continuous.ipynb', ('microbatch-vs-continuous',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    14,
    "microbatch-vs-continuous",
    ("microbatch-vs-continuous",),
    [
        markdown("""# 14. Micro-batch against continuous: the same windows, two ways of moving time

**At the end of this notebook you will be able to** say when a window is emitted in Spark's micro-batch model and when it fires in a continuous engine such as Flink, predict which rows each model drops as late, and explain why the last windows are emitted in one model and not in the other.

The tutorial page is `tutorials/14-microbatch-vs-continuous.md`; the code is `ministream/lessons/microbatch_vs_continuous.py` (the runners: `ministream/models/microbatch.py` and `ministream/models/continuous.py`)."""),
        code("""import sys
from IPython.display import display
from ministream.lessons import get_lesson
from ministream.lessons.microbatch_vs_continuous import late_by_model, row_table, run_both, window_table

lesson = get_lesson("microbatch-vs-continuous")
params = lesson.resolve_params()
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [f"{row['key']}@{row['ts'] // 1000 % 60}s" for row in batch])"""),
        markdown("""## One dataflow, two runners

The pipeline is written once: a watermark 5 seconds behind the largest event time, then a count per key and per 10-second tumbling window. `lesson.run()` runs it batch by batch (Spark's model); `lesson.run(model="continuous")` row by row (Flink's)."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, params)))"""),
        markdown("""## The picture: event time against arrival order

Each dot is a row, in the order it arrives; the orange steps are the watermark that row is judged against; red crosses are the rows the window step dropped as late. In micro-batch the watermark moves only between batches (dotted lines), and batch k is judged against the watermark of batch k-1. In the continuous model it moves right after every row that raises the largest event time."""),
        code("""from ministream.tools.plots import event_time_plot, watermarks_at_arrival

script, late = lesson.default_script, late_by_model()
micro_plot = event_time_plot(script, watermarks_at_arrival(script, params["delay"], "microbatch"),
                             late=late["microbatch"], title="micro-batch (Spark): 1 row late")
continuous_plot = event_time_plot(script, watermarks_at_arrival(script, params["delay"], "continuous"),
                                  late=late["continuous"], title="continuous (Flink): 3 rows late")
display(micro_plot, continuous_plot)
assert (sum(late["microbatch"]), sum(late["continuous"])) == (1, 3)"""),
        markdown("""## When each window comes out

Row 4 (`a@16s`) closes the window `[10:00:00, 10:00:10)`. Micro-batch learns of it only after batch 1, so the window is emitted at the end of batch 2: one batch late. The continuous model fires it right after row 4."""),
        code("""print(window_table())"""),
        markdown("""## Which rows are late

Rows 5 and 6 come after the window fired: late in the continuous model. Micro-batch filters them against the watermark of the batch before, which does not exclude them yet, so they count. Row 9 is late in both. The reverse never happens: a row late in micro-batch is late in the continuous model too."""),
        code("""print(row_table())"""),
        markdown("""## The continuous trace, per step

The continuous model has no batches, so its trace is read per step; `#n` numbers what happened in order across the dataflow. Here the window step: the watermark rising, the windows it fires, the state it drops, the rows it finds late."""),
        code("""run = lesson.run(model="continuous", trace=True)
for line in run.trace.lines:
    if line.step == "per_window" and line.kind != "evict":
        print(f"{line.kind}: {line.text}")
assert len(run.trace.of_kind("late")) == 3"""),
        markdown("""## The end of input

Micro-batch's last batch (a no-data batch) runs with watermark 10:00:26: the windows `[10:00:20, 10:00:30)` and `[10:00:30, 10:00:40)` stay open, never emitted, because a streaming query does not end. The continuous model ends a bounded input with the watermark +∞, which fires them."""),
        code("""from ministream.tools.cli import print_arrivals, print_batches

micro, continuous = run_both()
print_batches(micro.output(), sys.stdout)
print_arrivals(continuous, sys.stdout)"""),
        markdown("""## Allowed lateness (continuous only)

Flink can keep a window after it fired and fire it again for each late row. Spark has no such setting."""),
        code("""print(window_table(params={"lateness": "10 seconds"}))"""),
        markdown("""## The micro-batch side against Spark

`compare_lesson` runs the PySpark twin on a local Spark session (the first run in a kernel takes about 20 seconds: Spark starts) and compares batch by batch. Only the micro-batch side has a twin: Spark's continuous processing mode runs no aggregations, so the continuous side is checked against Flink's rules by the tests instead."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- Micro-batch computes the watermark between batches: windows come out a batch after the row that closes them, late rows are filtered against the previous batch's watermark, and the last windows wait forever.
- The continuous model moves the watermark after each row: windows fire at once, more rows are late, and the end of input fires everything.
- The same pipeline runs in both; the micro-batch side is checked against Spark, the continuous side against Flink's rules."""),
    ],
)
