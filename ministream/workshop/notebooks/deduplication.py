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
        markdown("""## Recap

- Late rows are dropped first, then every row whose key was seen.
- `dropDuplicates(id)` remembers keys forever; with the event time in the key they leave at the watermark.
- `dropDuplicatesWithinWatermark(id)` remembers a key for the watermark delay after its first row."""),
    ],
)
