"""Notebook 15, checkpoints: crash, recover, rescale.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('15-checkpoints.ipynb', ('checkpoint-recovery', 'barrier-alignment', 'rescale'))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    15,
    "checkpoints",
    ("checkpoint-recovery", "barrier-alignment", "rescale"),
    [
        markdown("""# 15-17. Checkpoints: crash, recover, rescale

**At the end of this notebook you will be able to** crash a running query in the middle of a micro-batch and
say what it does when it restarts, in ministream and in Spark; tell exactly-once from at-least-once output;
follow checkpoint barriers through a two-input step and say why an input is held back; and restore a
checkpoint with another parallelism, and explain why Spark keeps its number of state partitions.

The tutorial pages are `tutorials/15-checkpoint-recovery.md`, `16-barrier-alignment.md` and `17-rescale.md`;
the code is `ministream/checkpoints/coordinator.py`, `checkpoints/barriers.py`, `checkpoints/recovery.py`, `checkpoints/exactly_once.py`, `checkpoints/storage.py` and
`ministream/spark/checkpoint.py`."""),
        markdown("""## 15. A crash in the middle of batch 3

A count and a sum per key and per 10-second window. Both engines checkpoint at every batch end: the batch's
offsets and watermark before it runs, the window state and a commit after. The sink crashes while writing
batch 3, after one row."""),
        code("""import sys
import graphviz
from ministream.tools.cli import print_batches
from ministream.tools.diagram import to_dot
from ministream.lessons import compare_lesson, get_lesson

lesson = get_lesson("checkpoint-recovery")
graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params())))"""),
        code("""from ministream.checkpoints.storage import MemoryStorage

storage = MemoryStorage()
run = lesson.run(storage=storage, trace=True)
for attempt in run.attempts:
    print(attempt)
print(storage.offsets(3))
print(run.trace.format())"""),
        markdown("""The state is restored exactly; the sink decides whether the row written before the crash is seen twice.
Below, the rows of each batch for both sinks."""),
        code("""from ministream.tools.plots import bars_plot

exactly = [len(batch.rows) for batch in run.output()]
at_least = [len(batch.rows) for batch in lesson.run(params={"delivery": "at_least_once"}).output()]
assert (exactly, at_least) == ([0, 0, 0, 3, 1], [0, 0, 0, 4, 1])
bars_plot({"exactly once (transactional)": exactly, "at least once (appending)": at_least},
          xlabel="batch", ylabel="rows in the sink", title="rows of each batch in the sink")"""),
        markdown("""### Spark, crashed and restarted on its checkpoint

The twin runs with a `checkpointLocation`: `foreachBatch` writes one row of batch 3 and raises, the query
fails, a second query on the same checkpoint runs batch 3 again under the same id. `checkpoint_folders` runs
both engines that way, keeps their checkpoints in folders and outlines them (numbered siblings on one line).
The first run in a kernel takes a while: Spark starts."""),
        code("""from ministream.core.compare import compare_batches
from ministream.spark.checkpoint import checkpoint_folders

folders = checkpoint_folders(lesson)
print(folders.text)
print("Spark's foreachBatch saw, per start of the query:", folders.spark.batch_ids)
result = compare_batches(folders.ministream.output(), folders.spark.batches)
print(result.table())
assert folders.spark.batch_ids == [[0, 1, 2, 3], [3, 4]] and result.matches"""),
        markdown("""### Incremental checkpoints: only what changed

A full checkpoint writes every key; an *incremental* one writes a *delta*: the keys changed since the previous
checkpoint, and the keys removed. With `incremental=2`, two deltas follow each full checkpoint. A restore
applies the deltas to the full checkpoint they are built on. Spark's state store does the same with its
`N.delta` and `N.snapshot` files (tutorial 15). Which checkpoints are deltas, and what does checkpoint 4 write?"""),
        code("""from ministream.checkpoints.coordinator import Checkpoint

storage = MemoryStorage()
run = lesson.run(storage=storage, incremental=2)
for n in storage.checkpoint_ids():
    checkpoint = Checkpoint.from_files(storage.files[n])
    print(n, "full" if checkpoint.base is None else f"delta on {checkpoint.base}",
          checkpoint.operators["per_window"][0]["keyed"])
assert [Checkpoint.from_files(storage.files[n]).base for n in storage.checkpoint_ids()][:3] == [None, 0, 1]"""),
        markdown("""Batch 4 closes key `a`'s last window: checkpoint 4 writes nothing but `a`'s removal, whatever the size
of the rest of the state. Its cost follows the keys that changed."""),
        markdown("""## 16. Barriers: a consistent cut while rows flow

Two inputs, `web` and `mobile`, counted together. In the continuous model, barriers flow with the rows;
`totals` holds back the input whose barrier came first."""),
        code("""from ministream.lessons.barrier_alignment import (ALIGNMENT_SEED, AT_LEAST_ONCE_CRASH, barrier_lines,
                                                  checkpointed_run, counts)

barriers = get_lesson("barrier-alignment")
graphviz.Source(to_dot(barriers.pipeline(barriers.default_script, barriers.resolve_params())))"""),
        code("""run = checkpointed_run(seed=ALIGNMENT_SEED, pictures=True)
print("\\n".join(barrier_lines(run)[:10]))"""),
        markdown(
            """The channels at the moment `web` was held back (red, dashed); barrier 1 is still on its way on `mobile`:"""
        ),
        code("""caption, dot = run.pictures[0]
print(caption)
graphviz.Source(dot)"""),
        markdown("""Crash the same run in each mode: aligned and unaligned checkpoints restore the failure-free counts;
at-least-once checkpoints count `web` rows from after the barrier twice."""),
        code("""results = {}
for mode in ("aligned", "unaligned", "at_least_once"):
    results[mode] = counts(checkpointed_run({"mode": mode}, **AT_LEAST_ONCE_CRASH).output())
    print(mode, results[mode])
assert results == {"aligned": {"a": 6, "b": 4}, "unaligned": {"a": 6, "b": 4}, "at_least_once": {"a": 8, "b": 5}}"""),
        markdown("""The micro-batch side, against Spark:"""),
        code("""result = compare_lesson(barriers)
print(result.table())
assert result.matches"""),
        markdown("""## 17. Rescale: 2 subtasks before the crash, 4 after

Keyed state is stored by key group; each new subtask takes the groups of its range."""),
        code("""from ministream.lessons.rescale import keys_by_subtask, spark_state_partitions

rescale = get_lesson("rescale")
run = rescale.run()
for attempt in run.attempts:
    print(attempt)
print(keys_by_subtask(run.graph, "counts"))
print_batches(run.output(), sys.stdout)"""),
        markdown("""Spark, crashed with 2 shuffle partitions and restarted asking for 4, keeps 2: the number is in every
`offsets/N` of its checkpoint."""),
        code("""import tempfile

with tempfile.TemporaryDirectory() as folder:
    spark_run = rescale.spark_recovery(checkpoint_dir=folder)
    partitions = spark_state_partitions(folder)
print(partitions)
assert partitions["state folders"] == ["0", "1"]
result = compare_batches(run.output(), spark_run.batches)
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- A checkpoint is the sources' offsets plus every step's state at one cut; the last complete one is restored.
- Micro-batches cut at batch ends and rerun a crashed batch as logged; the continuous model cuts with barriers,
  holding back the faster input of a two-input step.
- Exactly-once output needs a transactional (or by-batch-id) sink; appending sinks are at least once.
- Key groups let ministream restore at any parallelism; Spark's shuffle partitions are fixed for a checkpoint's
  life."""),
    ],
)
