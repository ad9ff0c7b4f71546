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
        markdown("""## Several sinks, several watermarks

One watermark per *query*: a dataflow with two sinks is two Spark queries, each with its own watermark and
batches, and ministream runs it so (`ministream/core/queries.py`). The windows of every row do not wait for b's
watermark, stuck at 2 s."""),
        code("""from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling, run_microbatch

script = [[{"ts": 1_000, "key": "a"}, {"ts": 2_000, "key": "b"}], [{"ts": 20_000, "key": "a"}],
          [{"ts": 21_000, "key": "a"}], [{"ts": 1_000, "key": "b"}]]
flow = Dataflow("two-sinks")
events = flow.source("events", ScriptedSource(script))
events.with_watermark("wm", "ts", 0).key_by("key").window(
    "counts", Tumbling("5 seconds"), n=Count()).sink("output", CollectingSink())
events.filter("only_b", lambda row: row["key"] == "b", columns="key").with_watermark(
    "b_wm", "ts", 0).sink("b_rows", CollectingSink())
two = run_microbatch(flow, output_mode="append")
for sink in ("output", "b_rows"):
    print(sink, [(batch.batch_id, format_clock(batch.watermark) if batch.watermark else 0, len(batch.rows))
                 for batch in two.output(sink)])
graphviz.Source(to_dot(flow))"""),
        markdown("""Each sink's query, compiled alone and run by Spark, against ministream's sink:"""),
        code("""from ministream.core.compare import compare_batches
from ministream.core.events import Field
from ministream.spark import run_query, scripted_stream, spark_session
from ministream.spark.compiler import compile_flow

fields = {"events": [Field("key", str)]}
for sink in ("output", "b_rows"):
    compiled = compile_flow(flow, fields, output_mode="append", sink=sink)
    events_df = scripted_stream(spark_session(), "ts TIMESTAMP, key STRING", script)
    theirs = run_query(compiled.twin({"events": events_df}, {}), "append", conf=compiled.conf)
    result = compare_batches(two.output(sink), theirs)
    print(sink, result.summary())
    assert result.matches, result.table()"""),
        markdown("""### Which query dropped a row

b's row at 1 s, in batch 3, comes after the windows' query has emitted its window (0 to 5 s, closed by the
watermark of 20 s): that query drops it as late. The `b_rows` query has no stateful step, and passes it on.
`run.late_rows()` gathers the late rows of every query and names the query of each by its first sink
(`late.query`)."""),
        code("""for late in two.late_rows():
    print(late.query, "| batch", late.batch_id, "| step", late.step, "|", late.row, "|", late.rule)
print("b_rows:", [batch.rows for batch in two.output("b_rows")])"""),
        markdown("""## Recap

- Two watermarked inputs give one watermark: the minimum (default) or the maximum of their proposals.
- An input with no row yet proposes 0: under `min` nothing is evicted and outer joins stay silent.
- `max` does not wait: the slower input's rows become late and are dropped.
- One watermark per query: a dataflow with several sinks is several queries, and a row may be late for one
  of them only (`late.query` says which)."""),
    ],
)
