"""Write notebooks 07 to 10 (joins, idle input, deduplication) with nbformat: ``python notebooks/build_join_notebooks.py``.

The notebooks only call the package; this script only lays out their cells, so they can be rebuilt after an
edit here instead of by hand in Jupyter. It writes the authors' cells only: run
``python -m ministream.workshop build`` afterwards to put the workshop's exercise cells back in.
tests/test_notebooks.py executes them under a real kernel.
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


notebook(
    "07-stream-join.ipynb",
    [
        md("""# 7. Stream-stream join: impressions and their clicks

**At the end of this notebook you will be able to** say why a stream-stream join keeps both inputs in state,
compute each side's state watermark from the time range and the watermark (with Spark's extra millisecond),
and predict in which batch a pair is emitted or a row is dropped as late.

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
        md("""## The dataflow

Two sources, each renamed (`select`) and watermarked, then one keyed `join` step fed by two hash edges: the
rows of one ad from both inputs meet in the same subtask."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
graphviz.Source(to_dot(flow, parallelism=2))"""),
        md("""## The output and the trace

The trace says why each pair was emitted, which row was dropped as late, and how many rows each side keeps
after every batch."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print(run.trace.format())"""),
        md("""## Each side's state, batch by batch

Impressions wait until `impression_time <= WM - within - 1 ms`, clicks until `click_time <= WM - 1 ms`."""),
        code("""import matplotlib.pyplot as plt
from ministream.operators.stream_join import state_sizes_by_side

sizes = state_sizes_by_side(run.trace, "join")
fig, ax = plt.subplots(figsize=(5, 2.5))
for side, values in sizes.items():
    ax.step(range(len(values)), values, where="mid", label=side)
ax.set_xlabel("batch"); ax.set_ylabel("rows in join state"); ax.legend()
assert sizes == {"impressions": [2, 3, 4, 3, 3, 3], "clicks": [1, 5, 7, 3, 3, 1]}"""),
        md("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes about 20 seconds)."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        md("""## Recap

- A stream-stream join keeps both sides in state; watermarks and a time range bound it.
- Left state watermark `WM - upper`, right `WM + lower`, minus 1 ms for inclusive bounds.
- In a batch, left rows join first, then right rows join the left state including this batch's rows.
- Rows at or before the previous batch's watermark are dropped as late, and the trace says so."""),
    ],
)

notebook(
    "08-outer-join.ipynb",
    [
        md("""# 8. Outer joins: why the null-padded rows wait

**At the end of this notebook you will be able to** predict the batch in which an outer join emits an
unmatched row padded with nulls, explain why rows still waiting at the end of a script never come out, and
tell a left semi join from an inner one.

The tutorial page is `tutorials/08-outer-join.md`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches

lesson = get_lesson("outer-join")
for name in lesson.inputs:
    print(name, lesson.default_script[name])"""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params())))"""),
        md("""## Left outer: impression b comes out in batch 4

It arrived in batch 0, but "never clicked" is known only when it leaves the state, at the first watermark
past `10:00:02 + 20 s + 1 ms`."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print("\\n".join(line.text for line in run.trace.of_kind("emit")))"""),
        md("""## Every join type, side by side"""),
        code("""for how in ("left_outer", "right_outer", "full_outer", "left_semi"):
    print(how)
    print_batches(lesson.run(params={"how": how}).output(), sys.stdout)"""),
        md("""## Against Spark"""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson, params={"how": "full_outer"})
print(result.table())
assert result.matches"""),
        md("""## Recap

- An unmatched row is emitted padded with nulls when it is evicted, never earlier.
- Rows still in state when the input stops are not flushed.
- Outer and semi joins need a watermark and a range on the other side: both engines refuse them otherwise.
- Left semi emits each left row once, at its first match."""),
    ],
)

notebook(
    "09-idle-input.ipynb",
    [
        md("""# 9. An idle input holds the watermark

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
        md("""## The watermark under both policies"""),
        code("""import matplotlib.pyplot as plt
from ministream.lessons.lesson import BASE_TIME
from ministream.time.units import format_clock

runs = {policy: lesson.run(params={"policy": policy}, trace=True) for policy in ("min", "max")}
fig, ax = plt.subplots(figsize=(5, 2.5))
for policy, run in runs.items():
    marks = [batch.watermark for batch in run.output()]
    print(policy, [format_clock(m) for m in marks])
    # seconds after 10:00:00; a watermark still at 1970 (0) is left out of the plot
    ax.plot(range(len(marks)), [(m - BASE_TIME) / 1000 if m else float("nan") for m in marks], "o-", label=policy)
ax.set_xlabel("batch"); ax.set_ylabel("watermark, s after 10:00"); ax.legend()"""),
        md("""## `min`: right, but silent while the clicks are idle"""),
        code("""print_batches(runs["min"].output(), sys.stdout)"""),
        md("""## `max`: on time, but click a is late and impression a is padded with nulls"""),
        code("""print_batches(runs["max"].output(), sys.stdout)
print([line.text for line in runs["max"].trace.of_kind("late")])"""),
        md("""## Against Spark (`spark.sql.streaming.multipleWatermarkPolicy`)"""),
        code("""from ministream.lessons import compare_lesson

for policy in ("min", "max"):
    result = compare_lesson(lesson, params={"policy": policy})
    print(policy, result.summary())
    assert result.matches, result.table()"""),
        md("""## Recap

- Two watermarked inputs give one watermark: the minimum (default) or the maximum of their proposals.
- An input with no row yet proposes 0: under `min` nothing is evicted and outer joins stay silent.
- `max` does not wait: the slower input's rows become late and are dropped."""),
    ],
)

notebook(
    "10-deduplication.ipynb",
    [
        md("""# 10. Deduplication: the first copy, and when to forget it

**At the end of this notebook you will be able to** predict which copies `dropDuplicates` drops, say when its
state can shrink, and choose between a key with the event time and `dropDuplicatesWithinWatermark`.

The tutorial page is `tutorials/10-deduplication.md`; the code is `ministream/operators/dedup.py`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches

lesson = get_lesson("deduplication")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, batch)"""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params()), parallelism=2))"""),
        md("""## Three keys, three state sizes"""),
        code("""import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(5, 2.5))
for key in ("id", "id_and_time", "within"):
    run = lesson.run(params={"key": key}, trace=True)
    sizes = [summary.state_sizes["dedup"] for summary in run.trace.batches]
    ax.step(range(len(sizes)), sizes, where="mid", label=key)
    print(key)
    print_batches(run.output(), sys.stdout)
ax.set_xlabel("batch"); ax.set_ylabel("keys in state"); ax.legend()"""),
        md("""## The trace of `within`: late rows first, then copies, then expiry"""),
        code("""print(lesson.run(params={"key": "within"}, trace=True).trace.format())"""),
        md("""## Against Spark"""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson, params={"key": "within"})
print(result.table())
assert result.matches"""),
        md("""## Recap

- Late rows are dropped first, then every row whose key was seen.
- `dropDuplicates(id)` remembers keys forever; with the event time in the key they leave at the watermark.
- `dropDuplicatesWithinWatermark(id)` remembers a key for the watermark delay after its first row."""),
    ],
)
