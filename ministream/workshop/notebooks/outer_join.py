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

`window=max` adds a 10-second window of the latest impression time per ad after the join. Every impression
reaches it at least once through the join, and a repeated row changes no maximum, so Spark's optimizer runs
the query without the join (its rule `EliminateOuterJoin`). Then the clicks reach nothing, not even their
watermark, which stays at 0: under the `min` policy no window ever closes. Under `max` the windows close on
the impressions' watermark, a batch earlier than with `window=count`, which keeps the join."""),
        code("""for window, policy in (("count", "min"), ("max", "min"), ("max", "max")):
    print(f"window={window} policy={policy}")
    print_batches(lesson.run(params={"window": window, "policy": policy}).output(), sys.stdout)"""),
        code(
            """graphviz.Source(to_dot(lesson.pipeline(lesson.default_script, lesson.resolve_params({"window": "max"}))))"""
        ),
        code("""result = compare_lesson(lesson, params={"window": "max", "policy": "max"})
print(result.table())
assert result.matches"""),
        markdown("""## Recap

- An unmatched row is emitted padded with nulls when it is evicted, never earlier.
- Rows still in state when the input stops are not flushed.
- Outer and semi joins need a watermark and a range on the other side: both engines refuse them otherwise.
- Left semi emits each left row once, at its first match.
- Under a window of `max` and `min` over the preserved side, Spark removes an outer join altogether."""),
    ],
)
