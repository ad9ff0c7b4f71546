"""Notebook 21, operator state: a writer's buffer across a crash and a rescale.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('21-operator-state.ipynb', ('operator-state',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    21,
    "operator-state",
    ("operator-state",),
    [
        markdown("""# 21. Operator state: a writer's buffer across a crash and a rescale

**At the end of this notebook you will be able to** tell operator state from keyed state, say why a writer that
writes in groups must checkpoint its buffer, deal a buffer out to a new number of subtasks (an even split or a
union) and say which one fits which state, and explain what Spark, which has no operator state, does instead.

The tutorial page is `tutorials/21-operator-state.md`; the code is `ministream/state/operator_state.py`,
`ministream/operators/buffered_writer.py` and `ministream/lessons/operator_state.py`. This lesson has no Spark
twin: its checks are properties of ministream's own runs."""),
        code("""from ministream.lessons import get_lesson
from ministream.lessons.operator_state import buffered, written_or_buffered

lesson = get_lesson("operator-state")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [row["trip"] for row in batch])"""),
        markdown("""## The dataflow

Trips spread by id over the writer's subtasks; each writes a group of 3 trips as soon as it has them."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params()), parallelism=2))"""),
        markdown("""## A crash in batch 2, a restore with 3 subtasks

The checkpoint of batch 1 holds the source's offset and, per subtask, the trips buffered but not yet
written."""),
        code("""from ministream.checkpoints.coordinator import load_checkpoint
from ministream.checkpoints.storage import MemoryStorage

storage = MemoryStorage()
run = lesson.run(storage=storage)
print([(attempt.parallelism, attempt.restored_from, attempt.crash) for attempt in run.attempts])
checkpoint = load_checkpoint(storage, 1)
print("source offsets:", checkpoint.sources)
print("buffers:", {i: [row["trip"] for row in saved["operator"]["buffer"]["items"]]
                   for i, saved in checkpoint.operators["writer"].items()})
for batch in run.output():
    print(batch.batch_id, [row["trips"] for row in batch.rows])
print("still buffered:", sorted(row["trip"] for row in buffered(run)))"""),
        markdown("""## Even split, union, or no operator state at all

Each trip should be written or buffered exactly once."""),
        code("""from ministream.tools.pictures import trips_written

for label, params in (("even", {}), ("union", {"redistribution": "union"}), ("plain", {"keep_in": "plain"})):
    counts = written_or_buffered(lesson.run(params=params))
    print(label, {trip: n for trip, n in counts.items() if n != 1},
          "missing:", sorted({f"t{n}" for n in range(1, 15)} - set(counts)))
trips_written()"""),
        markdown("""## What Spark does instead

Spark has no operator state: a source's offsets go to the checkpoint's offsets log, and a sink is exactly-once
by writing each batch under its batch id, so that a batch run again replaces its own earlier writes (notebook 15
runs such a sink on Spark, crashed and restarted). There is no buffer between batches to checkpoint or to deal
out."""),
        markdown("""## Recap

- Operator state belongs to a subtask, not a key: a writer's buffer, a source's offsets.
- A checkpoint must hold it, or a crash loses what was read but not yet written.
- On a rescale each list is split evenly (each item to one subtask: a buffer) or given whole to every subtask
  (union: offsets each subtask picks its own from).
- Spark has none: offsets live in the offsets log, and sinks are exactly-once by writing by batch id."""),
    ],
)
