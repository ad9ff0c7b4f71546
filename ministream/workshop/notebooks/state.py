"""Notebook 18, state: where keyed state lives (memory, RocksDB, Redis) and how changelogs checkpoint it.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('18-state.ipynb', ('state-backends', 'changelog'))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    18,
    "state",
    ("state-backends", "changelog"),
    [
        markdown("""# 18-19. Where state lives: backends and changelogs

**At the end of this notebook you will be able to** run a pipeline with its keyed state in memory, in RocksDB
and in Redis and say what each costs; explain why a crash between a write to an external store and a
checkpoint counts a batch twice, and how versioned writes prevent it; diff ministream's state against what
Spark's state data source reads, batch by batch; and checkpoint state as a changelog, recover it from a snapshot
and the records after it, and say why a record written after the last checkpoint must not be replayed.

The tutorial pages are `tutorials/18-state-backends.md` and `22-changelog.md`; the code is
`ministream/state/backends.py`, `state/stored.py`, `state/changelog.py`, `lessons/state_compare.py` and
`ministream/spark/changelog_files.py`."""),
        markdown("""## 18. One pipeline, three backends

A running count and sum per key. The parameter `backend` says where its state lives: `memory` (Python
dicts), `rocksdb` (a RocksDB database per subtask on local disk) or `redis` (a Redis server that ministream
starts on 127.0.0.1)."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.tools.cli import print_batches

lesson = get_lesson("state-backends")
outputs = {}
for backend in ("memory", "rocksdb", "redis"):
    run = lesson.run(params={"backend": backend})
    outputs[backend] = [sorted((r["key"], r["count"], r["sum"]) for r in batch.rows) for batch in run.output()]
    print(backend, outputs[backend])
assert outputs["memory"] == outputs["rocksdb"] == outputs["redis"]"""),
        markdown("""`ministream state state-backends --state-backend rocksdb` prints the state after each batch; here as a
plot, the same on every backend:"""),
        code("""from ministream.models.state_history import StateHistory
from ministream.tools.plots import state_plot

keys = {}
for backend in ("memory", "rocksdb", "redis"):
    history = StateHistory()
    lesson.run(params={"backend": backend}, after_batch=history)
    keys[backend] = [len(steps["totals"].get("aggregate", {})) for _, steps in sorted(history.batches.items())]
assert keys["memory"] == keys["rocksdb"] == keys["redis"] == [2, 3, 3]
state_plot(keys, ylabel="keys in state", title="keys in state after each batch, per backend")"""),
        markdown("""### A crash between a state write and a checkpoint

A job that writes each batch's counts to Redis, then commits the batch, crashes in batch 1 between the two. It
restarts from the last commit and runs batch 1 again. With naive increments the batch counts twice; with writes
versioned by batch id the replay rewrites the same version."""),
        code("""from ministream.lessons.state_backends import external_store_crash

naive, versioned = external_store_crash(versioned=False), external_store_crash(versioned=True)
print("naive    ", naive)
print("versioned", versioned)
assert naive == {"a": 4, "b": 3, "c": 2} and versioned == {"a": 3, "b": 3, "c": 1}"""),
        markdown("""### The state, diffed against Spark's

`ministream compare LESSON --state` runs the twin with a checkpoint location, reads Spark's state after every
batch with its state data source (`spark.read.format("statestore")`) and compares it with ministream's, row
for row. The first Spark run in a kernel takes a while: Spark starts."""),
        code("""from ministream.lessons.state_compare import compare_state

result = compare_state(lesson, state_backend="rocksdb")
print(result.table())
assert result.matches"""),
        markdown("""## 22. Changelogs: a checkpoint that copies no state

In changelog mode each subtask appends its batch's state writes to its own log (`<v>.changelog`), materialises
a snapshot every `materialize_every` records (`<v>.snapshot`), and a checkpoint keeps only a position in the
log. The lesson's sink crashes in batch 3 *after* batch 3's writes were logged."""),
        code("""from ministream.lessons.changelog import describe_record, log_outline

changelog = get_lesson("changelog")
run = changelog.run()
for attempt in run.attempts:
    print(attempt)
print(log_outline(run.changelogs))
print(describe_record(run.changelogs, "totals/0", 6))
print_batches(run.output(), sys.stdout)"""),
        markdown("""The logs of a run at parallelism 2 without a crash, and the positions its last two checkpoints keep (an
arrow to the last record each covers, a dashed one to the snapshot a recovery starts from):"""),
        code("""import graphviz
from ministream.tools.diagram import changelog_diagram

graphviz.Source(changelog_diagram())"""),
        markdown("""### A crash at every record

Crash the job before each record of the script in turn; each time, recovery reads a snapshot and replays the
records after it, up to the checkpoint's position, and the output must be the failure-free one. How many
records does each recovery replay?"""),
        code("""from ministream.lessons.changelog import crash_at_every_record
from ministream.tools.plots import bars_plot

points = crash_at_every_record()
assert all(point.equal for point in points)
bars_plot({"records replayed": [point.replayed for point in points]}, xlabel="crash before record",
          ylabel="log records replayed", title="what each recovery replays (a snapshot every 3 records)")"""),
        markdown("""## Recap

- Where state lives changes what it costs, never what it computes: memory is fastest, RocksDB holds more than
  the heap on local disk, an external store pays a network round trip per key.
- A write to an external store outlives a crash: without versions by checkpoint, a replayed batch counts twice.
- Spark's state data source reads an operator's state after any batch; ministream's state maps onto it.
- A changelog checkpoint records a log position; recovery reads the snapshot and the records after it up to
  that position, never further; compaction deletes what no retained checkpoint needs. Spark's RocksDB store
  does the same with `N.changelog` files and `N.zip` snapshots."""),
    ],
)
