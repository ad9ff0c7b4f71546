"""The one error every layer raises: a pipeline that cannot run as written.

A :class:`PipelineError` is raised as soon as the mistake can be seen (when a step is added, or when the run
starts), with a message that names the step and says what Spark or Flink would say, so that a learner reads
the rule rather than a traceback.

>>> raise PipelineError("step 'counts': a window needs at least one aggregate, e.g. count=Count()")
Traceback (most recent call last):
...
ministream.errors.PipelineError: step 'counts': a window needs at least one aggregate, e.g. count=Count()
"""

from __future__ import annotations


class PipelineError(ValueError):
    """A pipeline that cannot run as written: the message says why, in the terms Spark or Flink would use.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("counts")
    >>> flow.source("events", ScriptedSource([[{"key": "a"}]])).key_by("key").aggregate(
    ...     "n", n=Count()).sink("output", CollectingSink())
    >>> run_microbatch(flow, output_mode="append")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: step 'n': append output mode cannot be used with an aggregation without a ...
    """
