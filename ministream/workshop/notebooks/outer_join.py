"""Notebook 08, outer joins: why the null-padded rows wait.

>>> NOTEBOOK.name, NOTEBOOK.lessons
('08-outer-join.ipynb', ('outer-join',))
"""

from ministream.workshop.notebooks.cells import NotebookSource, code, markdown

NOTEBOOK = NotebookSource(
    8,
    "outer-join",
    ("outer-join",),
    [
        markdown("""# 8. Outer joins: why the null-padded rows wait

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
        markdown("""## Left outer: impression b comes out in batch 4

It arrived in batch 0, but "never clicked" is known only when it leaves the state, at the first watermark
past `10:00:02 + 20 s + 1 ms`."""),
        code("""run = lesson.run(trace=True)
print_batches(run.output(), sys.stdout)
print("\\n".join(line.text for line in run.trace.of_kind("emit")))"""),
        markdown("""## Every join type, side by side"""),
        code("""for how in ("left_outer", "right_outer", "full_outer", "left_semi"):
    print(how)
    print_batches(lesson.run(params={"how": how}).output(), sys.stdout)"""),
        markdown("""## Against Spark"""),
        code("""from ministream.lessons import compare_lesson

result = compare_lesson(lesson, params={"how": "full_outer"})
print(result.table())
assert result.matches"""),
        markdown("""## When Spark removes the join

A window of `max` over the impressions' columns after a left outer join: every impression reaches the
window at least once through the join, and a repeated row changes no maximum, so Spark's optimizer runs the
query without the join (its rule `EliminateOuterJoin`). Then the clicks reach nothing, not even their
watermark, which stays at 0: under the default `min` policy no window ever closes. ministream does the same
(`ministream/core/outer_join_elimination.py`)."""),
        code("""from ministream import CollectingSink, Dataflow, Max, ScriptedSource, TimeRange, Tumbling, run_microbatch
from ministream.core.outer_join_elimination import kept_side

T = 1_704_103_200_000  # 2024-01-01T10:00:00Z
flow = Dataflow("best-bid")
bids = flow.source("impressions", ScriptedSource(
    [[{"imp_ad": "a", "imp_time": T + 1_000, "bid": 2.0}], [{"imp_ad": "b", "imp_time": T + 65_000, "bid": 3.0}],
     [{"imp_ad": "c", "imp_time": T + 130_000, "bid": 1.0}]], columns=("imp_ad", "imp_time", "bid")))
clicks = flow.source("clicks", ScriptedSource([[{"click_ad": "a", "click_time": T + 5_000}], [], []],
                                              columns=("click_ad", "click_time")))
joined = bids.with_watermark("imp_wm", "imp_time", "10 seconds").key_by("imp_ad").join(
    "join", clicks.with_watermark("click_wm", "click_time", "10 seconds").key_by("click_ad"),
    how="left_outer", between=TimeRange("imp_time", "click_time", 0, 20_000))
joined.window("best", Tumbling("1 minute"), column="imp_time", best=Max("bid")).sink("output", CollectingSink())
print("Spark keeps side", kept_side(flow, flow.step("join")), "and removes the join")
for policy in ("min", "max"):
    print(policy, "policy")
    print_batches(run_microbatch(flow, watermark_policy=policy).output(), sys.stdout)"""),
        markdown("""## Recap

- An unmatched row is emitted padded with nulls when it is evicted, never earlier.
- Rows still in state when the input stops are not flushed.
- Outer and semi joins need a watermark and a range on the other side: both engines refuse them otherwise.
- Left semi emits each left row once, at its first match.
- Under a window of `max` and `min` over the preserved side, Spark removes an outer join altogether."""),
    ],
)
