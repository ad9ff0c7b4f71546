"""Notebook 09, an idle input holds the watermark.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('09-idle-input.ipynb', ('idle-input',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    9,
    "idle-input",
    ("idle-input",),
    [
        markdown("""# 9. An idle input holds the watermark

**At the end of this notebook you will be able to** compute the watermark of a query with two inputs under
the `min` and `max` policies, explain why an idle input stalls a join under `min`, and say what `max` loses.

The tutorial page is `tutorials/09-idle-input.md`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches

lesson = get_lesson("idle-input")
for name in lesson.inputs:
    print(name, lesson.default_script[name])"""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params())))"""),
        markdown("""## The watermark under both policies"""),
        code("""from ministream.time.units import format_clock
from ministream.tools.plots import watermark_plot

runs = {policy: lesson.run(params={"policy": policy}, trace=True) for policy in ("min", "max")}
marks = {policy: [batch.watermark for batch in run.output()] for policy, run in runs.items()}
for policy, watermarks in marks.items():
    print(policy, [format_clock(m) for m in watermarks])
watermark_plot(marks, title="the watermark under each policy (still at 1970: not drawn)")"""),
        markdown("""## `min`: right, but silent while the clicks are idle"""),
        code("""print_batches(runs["min"].output(), sys.stdout)"""),
        markdown("""## `max`: on time, but click a is late and impression a is padded with nulls"""),
        code("""print_batches(runs["max"].output(), sys.stdout)
print([line.text for line in runs["max"].trace.of_kind("late")])"""),
        markdown("""## Against Spark (`spark.sql.streaming.multipleWatermarkPolicy`)"""),
        code("""from ministream.lessons import compare_lesson

for policy in ("min", "max"):
    result = compare_lesson(lesson, params={"policy": policy})
    print(policy, result.summary())
    assert result.matches, result.table()"""),
        markdown("""## Recap

- Two watermarked inputs give one watermark: the minimum (default) or the maximum of their proposals.
- An input with no row yet proposes 0: under `min` nothing is evicted and outer joins stay silent.
- `max` does not wait: the slower input's rows become late and are dropped."""),
    ],
)
