"""Notebook 19, enrichment join: a stream joined with a table that changes between batches.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('19-enrichment-join.ipynb', ('enrichment-join',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    19,
    "enrichment-join",
    ("enrichment-join",),
    [
        markdown("""# 19. Enrichment join: a stream joined with a table

**At the end of this notebook you will be able to** join a stream with a static table, inner and left outer,
say in which batch each row comes out (its own, or never), predict what a change of the table does to the rows
that follow and to those already emitted, and explain why this join needs no state while a stream-stream join
does.

The tutorial page is `tutorials/19-enrichment-join.md`; the code is `ministream/operators/static_join.py` and
`ministream/lessons/enrichment_join.py`."""),
        code("""import sys
from ministream.lessons import get_lesson
from ministream.lessons.enrichment_join import CHANGES, DRIVERS
from ministream.tools.cli import print_batches
from ministream.core.results import format_row

lesson = get_lesson("enrichment-join")
for batch_id, batch in enumerate(lesson.default_script):
    print(batch_id, [format_row(row) for row in batch])
print("table:", DRIVERS)
print("from batch 2:", CHANGES[2])"""),
        markdown("""## The dataflow

One step between the source and the sink: the join holds the table, whole, in every subtask. No `key_by`, no
watermark."""),
        code("""import graphviz
from ministream.tools.diagram import to_dot

flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
graphviz.Source(to_dot(flow))"""),
        markdown("""## Inner and left outer, batch by batch

Every trip comes out in its own batch or never. From batch 2 the new table applies: d1 is in Nice, d3 is known.
The trips of batches 0 and 1 are not joined again."""),
        code("""for how in ("inner", "left_outer"):
    print(how)
    print_batches(lesson.run(params={"how": how}).output(), sys.stdout)"""),
        markdown("""## Where every trip went

The accounting counts the trips the inner join dropped; the join's operator holds no state."""),
        code("""run = lesson.run()
print(run.accounting().format())
print("state entries in the join:", [operator.state_size() for operator in run.graph.operators("with_drivers")])"""),
        code("""from ministream.tools.plots import bars_plot

counts = {how: [len(batch.rows) for batch in lesson.run(params={"how": how}).output()] for how in ("inner", "left_outer")}
bars_plot(counts, xlabel="batch", ylabel="rows emitted", title="enrichment-join: rows per batch")"""),
        markdown("""## A filter after the join runs before it

`min_fare=5` gives the trips a watermark on `ts` (0 seconds behind) and keeps the trips whose fare is above 5,
with a filter written after the join. Spark runs it before the join, and before the watermark: the trips it
drops (d3@3 with fare 4, d3@22 with fare 5) never move the watermark. d4@15 does, though the inner join drops
it. The watermark step's label says which filter runs below it."""),
        code("""from ministream.operators.planner import optimizer_notes
from ministream.time.units import format_clock

batches = lesson.run(params={"min_fare": 5}).output()
print([format_clock(batch.watermark) if batch.watermark else 0 for batch in batches])
print_batches(batches, sys.stdout)
fares = lesson.pipeline(lesson.default_script, lesson.resolve_params({"min_fare": 5}))
print(optimizer_notes(fares, fares.step("trips_watermark")))
graphviz.Source(to_dot(fares))"""),
        markdown("""## The PySpark twin, on the same batches

Spark reads the static side again in every micro-batch; the twin's table follows the batch Spark is running
(`ministream/spark/table.py`). The first Spark run in a kernel takes about 20 seconds."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson, params={"how": "left_outer"})
print(result.table())
assert result.matches"""),
        markdown("""The filter after the join, in Spark: the same watermarks, batch for batch."""),
        code("""result = compare_lesson(lesson, params={"min_fare": 5})
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- A stream-static join joins each row as it arrives: an unmatched row is dropped (inner) or padded with nulls
  (left outer) in its own batch.
- The table is complete whenever a row arrives, so nothing waits in state and no watermark is needed; a
  stream-stream join keeps both sides because a match can still come.
- Spark reads the table again in every micro-batch: a change applies from the next batch on, and rows already
  emitted are never joined again.
- Only inner and left outer joins with the stream on the left are allowed.
- A filter after the join on the stream's columns runs before it in Spark, below the watermark: the rows it
  drops never move the watermark."""),
    ],
)
