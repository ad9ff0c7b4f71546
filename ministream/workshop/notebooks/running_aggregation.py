"""Notebook 01, running aggregation: state per key.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('01-running-aggregation.ipynb', ('running-aggregation',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    1,
    "running-aggregation",
    ("running-aggregation",),
    [
        markdown("""# 1. Running aggregation: state per key

**At the end of this notebook you will be able to** say what keyed state is, read which subtask holds a key, and predict what Spark's `update` and `complete` output modes emit in each micro-batch.

The tutorial page is `tutorials/01-running-aggregation.md`; the code is `ministream/lessons/running_aggregation.py`."""),
        code("""from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches
import sys

lesson = get_lesson("running-aggregation")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, batch)"""),
        markdown("""## The dataflow

A source, a keyed aggregate (`key_by("key")` routes each event by its key's key group), a sink. With parallelism 2, the aggregate runs as two subtasks, and the hash edge fans out into both."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
graphviz.Source(to_dot(flow, parallelism=2))"""),
        markdown("""## Update mode, with the trace

The trace says why each row was emitted, and how much state each step holds after every batch."""),
        code("""run = lesson.run(params={"mode": "update"}, trace=True)
print(run.trace.format())"""),
        markdown("""The state grows and never shrinks: nothing tells the engine that a key is finished."""),
        code("""from ministream.tools.plots import state_plot, state_sizes

sizes = state_sizes(run)  # {step: [entries after batch 0, after batch 1, ...]}
assert sizes == {"totals": [2, 3, 3]}
state_plot(sizes, ylabel="keys in state", title="state of step 'totals'")"""),
        markdown("""## Complete mode

Every key, every batch:"""),
        code("""print_batches(lesson.run(params={"mode": "complete"}).output(), sys.stdout)"""),
        markdown("""## The PySpark twin, on the same batches

`compare_lesson` runs the twin on a local Spark session (the first run in a kernel takes about 20 seconds: Spark starts) and compares batch by batch."""),
        code("""from ministream.lessons import compare_lesson

for mode in ("update", "complete"):
    result = compare_lesson(lesson, params={"mode": mode})
    print(mode)
    print(result.table())
    assert result.matches"""),
        markdown("""## Recap

- Keyed state lives with the subtask that owns the key's key group.
- `update` emits the keys a batch changed; `complete` re-emits every key every batch.
- Without a watermark the state of an aggregate only grows, and `append` mode is refused."""),
    ],
)
