"""Notebook 10, deduplication: the first copy, and when to forget it.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('10-deduplication.ipynb', ('deduplication',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    10,
    "deduplication",
    ("deduplication",),
    [
        markdown("""# 10. Deduplication: the first copy, and when to forget it

**At the end of this notebook you will be able to** predict which copies `dropDuplicates` drops, say when its
state can shrink, choose between a key with the event time and `dropDuplicatesWithinWatermark`, and say why
a late row passes when nothing after the deduplication reads the event time.

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
        markdown("""## Three keys, three state sizes"""),
        code("""from ministream.tools.plots import state_plot, state_sizes

sizes = {}
for key in ("id", "id_and_time", "within"):
    run = lesson.run(params={"key": key}, trace=True)
    sizes[key] = state_sizes(run)["dedup"]
    print(key)
    print_batches(run.output(), sys.stdout)
state_plot(sizes, ylabel="keys in state", title="state of step 'dedup', for each key")"""),
        markdown("""## The trace of `within`: late rows first, then copies, then expiry"""),
        code("""print(lesson.run(params={"key": "within"}, trace=True).trace.format())"""),
        markdown("""## Against Spark"""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson, params={"key": "within"})
print(result.table())
assert result.matches"""),
        markdown("""## When nothing reads `ts` after the deduplication

In batch 3, e2's copy and the new e7 are late: `dropDuplicates(["event_id"])` drops both before it looks at
their keys. `keep=id` keeps only `event_id` after the deduplication (`select("event_id")`). Then no step after
it reads `ts`, so Spark's optimizer prunes the column below it, and the deduplication drops no late row: e7
comes out, and e2's copy is dropped as a copy. The trace says why each of them is kept."""),
        code("""for keep in ("all", "id"):
    print(f"keep={keep}")
    print_batches(lesson.run(params={"key": "id", "keep": keep}).output()[3:4], sys.stdout)
for line in lesson.run(params={"key": "id", "keep": "id"}, trace=True).trace.of_kind("not late"):
    print(line.batch_id, line.text)"""),
        code(
            """graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params({"keep": "id"}))))"""
        ),
        code("""result = compare_lesson(lesson, params={"key": "id", "keep": "id"})
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- Late rows are dropped first, then every row whose key was seen.
- `dropDuplicates(id)` remembers keys forever; with the event time in the key they leave at the watermark.
- `dropDuplicatesWithinWatermark(id)` remembers a key for the watermark delay after its first row.
- When nothing after `dropDuplicates(id)` reads the event time, Spark prunes it and no row is late."""),
    ],
)
