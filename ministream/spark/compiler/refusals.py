"""Refusals: what Spark cannot run, said as an error that names the step, Spark's rule and the rewrite.

The compiler never guesses. A step Spark has no operator for (a side output, allowed lateness, a
processing-time window, an operator of your own) or an order of steps Spark's analyzer refuses (a Python
function between a watermark and the stateful step that needs it, sorting outside complete mode) stops the
compilation with a :class:`CompileError`: one line, naming the step, quoting the Spark rule, and saying how to
write the pipeline so that Spark can run it, where such a rewrite exists. ``tutorials/spark-facts.md`` lists
every refusal with the Spark run that confirms it.

>>> raise refuse("per_window", "window_aggregate", "Spark has no allowed lateness", "drop allowed_lateness")
Traceback (most recent call last):
...
ministream.spark.compiler.refusals.CompileError: step 'per_window' (window_aggregate): Spark has no allowed lateness; rewrite: drop allowed_lateness
"""

from __future__ import annotations

from ministream.errors import PipelineError


class CompileError(PipelineError):
    """A step (or an order of steps) that Spark cannot run: the message names the step, the Spark rule and
    the rewrite, on one line."""


def refuse(step: str, kind: str, rule: str, rewrite: str | None = None) -> CompileError:
    """The error for step ``step`` of kind ``kind``: ``rule`` says what Spark does or refuses (quoting its
    own message where it has one), ``rewrite`` how to write it so that Spark can run it (``None``: the rule
    already says there is none)."""
    text = f"step {step!r} ({kind}): {rule}"
    return CompileError(text + (f"; rewrite: {rewrite}" if rewrite else ""))
