"""Notebook 05, late data: what the watermark drops, and what it does not.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('05-late-data.ipynb', ('late-data',))
"""

from ministream.workshop.notebooks.cells import (
    NotebookSource,
    code,
    event_time_plot,
    lesson_diagram,
    lesson_events,
    markdown,
)

NOTEBOOK = NotebookSource(
    5,
    "late-data",
    ("late-data",),
    [
        markdown("""# 5. Late data: what the watermark drops, and what it does not

**At the end of this notebook you will be able to** tell, for any event, whether Spark counts it or drops
it (`window end <= watermark of the previous batch`), and find every dropped event in ministream's trace,
in `run.late_rows()` and in the `late` side output.

The tutorial page is `tutorials/05-late-data.md`; the code is `ministream/operators/window.py` and
`ministream/lessons/late_data.py`."""),
        lesson_events("late-data"),
        markdown("""## The dataflow: a side output for late rows

The window step's `late_rows="late"` output is sunk like any stream (Spark has no side output)."""),
        lesson_diagram(),
        markdown("""## The trace

Each late row comes with the rule that dropped it; each batch says how many rows it dropped."""),
        code("""run = lesson.run(trace=True)
print(run.trace.format())"""),
        markdown("""## Late rows, counted and kept"""),
        code("""for late in run.late_rows():
    print(late.batch_id, format_row(late.row), "-", late.rule)
print("side output:", [len(batch.rows) for batch in run.output("late")])
assert len(run.late_rows()) == 2"""),
        markdown("""## Every row accounted for

Nothing is dropped silently: `run.accounting()` says where each row the run read went, step by step (rows
in = kept + late + dropped on purpose), and checks every sum (`ministream run late-data --accounting`)."""),
        code("""accounting = run.accounting()
print(accounting.format())
assert accounting.balanced and accounting.step("per_window").outcomes["late"] == 2"""),
        markdown("""## The picture

The orange line is the watermark each row is judged against: the previous batch's. The rows at 10:00:09 and
10:00:04 in batch 3 are under it and dropped. The row at 10:00:10 lies exactly on it and still counts: it is
its window's end (10:00:20) that is compared with the watermark, not its own time. And 10:00:09.999 in
batch 2 counts although batch 2's own watermark is already 10:00:10: it is judged against 10:00:02."""),
        event_time_plot("late-data: the red crosses are the rows dropped by the watermark"),
        markdown("""## The delay is the trade-off"""),
        code("""for delay in ("0 seconds", "5 seconds", "6 seconds", "20 seconds"):
    other = lesson.run(params={"delay": delay})
    print(delay, "late:", len(other.late_rows()), "rows out:", sum(len(b.rows) for b in other.output()))"""),
        markdown("""## The PySpark twin

Spark drops the same rows (silently): the outputs match batch for batch."""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson)
print(result.table())
assert result.matches"""),
        markdown("""## Bad lines: set aside here, read with nulls by Spark

Read from an events file, a line ministream cannot read whole is set aside as a dead letter, with its reason
(`ministream run late-data --events F --dead-letters D`). Spark has no dead letters: its JSON reader, in its
default mode `PERMISSIVE`, reads every line, with a null in each field it cannot read. Here is a file with
four bad lines, each beside what Spark's own reader makes of it (`ministream/spark/permissive.py`):"""),
        code("""import pathlib
import tempfile

import graphviz
from ministream.lessons.late_data import BAD_LINES
from ministream.tools.diagram import bad_lines_dot

path = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
path.write_text("\\n".join(BAD_LINES) + "\\n")
print(path.read_text())
both = lesson.read_both_ways(path)
for reading in both.readings:
    print(reading)
graphviz.Source(bad_lines_dot(both, path.name))"""),
        markdown("""What those rows do in Spark: the twin runs on Spark's reading of every line, ministream on the lines it
kept. The row without a key is counted under the null key; the row whose value is not a number counts for
key `a` but adds nothing to its sum; the two rows without an event time are in no window, and not among the
late rows either; and the good times of lines 4 and 5 move Spark's watermark (10:00:01 after batch 0, where
ministream's is 09:59:56). None of it raises an error or shows in a count
(`ministream compare late-data --events F --spark-reading`)."""),
        code("""result = compare_lesson(lesson, both.script, twin_script=both.spark_script)
print(result.table())
assert [len(batch.only_spark) for batch in result.batches] == [0, 0, 2] and not result.matches"""),
        markdown("""## Recap

- Late in batch k: the row's window ends at or before WM_{k-1}; the edge is inclusive.
- Old rows in open windows count; a row is judged against the previous batch's watermark.
- ministream shows every dropped row: trace, `run.late_rows()`, side output.
- A bad line of an events file is a dead letter in ministream, and a row with nulls in Spark, which then
  counts under a null key, in no window, or without its value, silently."""),
    ],
)
