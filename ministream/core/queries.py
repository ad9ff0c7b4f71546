"""Queries: a dataflow with several sinks is several Spark queries.

In Spark each ``writeStream...start()`` is a query of its own: its own micro-batches, its own watermark (from
the ``withWatermark`` steps that feed *it*), its own no-data batches and its own state, even when two queries
read the same source, or the same aggregation: each query runs every step that feeds its sink, stateful ones
included, with state of its own. A ministream dataflow may end in several sinks; in the micro-batch model it
runs as Spark would run it, one query per sink, so that what a sink receives does not depend on the other
sinks: a stateful step that feeds two sinks runs in both queries, each time with its own state.

Two things Spark does not have keep sinks in one query: a step's side output (a window's late rows, lesson
5), which belongs to the one run that dropped them, and an operator of your own (``OperatorSpec``), whose
effects outside the engine must happen once. The sinks that read such a step run in one query. The
continuous model is Flink's, where a job with several sinks is one job: it runs the whole dataflow at once.

The split below: the windows of ``output`` would wait for the slower ``b`` rows if ``only_b``'s watermark
counted for them; as two queries, each has its own watermark.

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling
>>> flow = Dataflow("two-queries")
>>> events = flow.source("events", ScriptedSource([]))
>>> events.with_watermark("wm", "ts", 0).key_by("key").window(
...     "counts", Tumbling("5 seconds"), n=Count()).sink("output", CollectingSink())
>>> events.filter("only_b", lambda row: row["key"] == "b", columns="key").with_watermark(
...     "b_wm", "ts", 0).sink("b_rows", CollectingSink())
>>> [[step.name for step in query.steps] for query in split_queries(flow)]
[['events', 'wm', 'counts', 'output'], ['events', 'only_b', 'b_wm', 'b_rows']]
"""

from __future__ import annotations

from ministream.core.lineage import upstream
from ministream.core.plan import Dataflow
from ministream.core.steps import OperatorSpec, Step
from ministream.errors import PipelineError


def split_queries(flow: Dataflow) -> list[Dataflow]:
    """The queries of ``flow``, one per sink, each a dataflow of the steps that feed its sink, in the flow's
    order, named after the flow (and its first sink, when there are several queries); but sinks that read the
    same step, when one of them takes that step's side output or the step is an operator of your own, run
    together (:func:`_binding_steps`). A flow with one query comes back as it is."""
    groups: list[tuple[list[Step], set[int], set[int]]] = []  # [(sinks, steps feeding them, steps binding them)]
    for sink in flow.sinks:
        steps = list(upstream(sink))
        feeding = {id(step) for step in steps}
        binding = _binding_steps(steps)
        joined = [group for group in groups if binding & group[1] or group[2] & feeding]
        sinks = [sink]
        for group in joined:
            groups.remove(group)
            sinks = group[0] + sinks
            feeding |= group[1]
            binding |= group[2]
        groups.append((sinks, feeding, binding))
    if len(groups) <= 1:
        return [flow]
    groups.sort(key=lambda group: flow.steps.index(group[0][0]))
    return [
        Dataflow(f"{flow.name}:{sinks[0].name}", [step for step in flow.steps if id(step) in steps])
        for sinks, steps, _ in groups
    ]


def _binding_steps(steps: list[Step]) -> set[int]:
    """Of the steps that feed a sink, those whose sinks must share one run: a step whose side output is on the
    way (its late rows belong to the run that dropped them), and an operator of your own."""
    binding = {id(step) for step in steps if isinstance(step.spec, OperatorSpec)}
    for step in steps:
        binding |= {id(edge.upstream) for edge in step.inputs if edge.output is not None}
    return binding


def query_of(flow: Dataflow, sink: str) -> Dataflow:
    """The query of ``flow`` that feeds the sink named ``sink`` (:func:`split_queries`): what Spark runs for
    that one ``writeStream``, and what ministream runs when a command is asked for one output.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> flow = Dataflow("two-sinks")
    >>> events = flow.source("events", ScriptedSource([]))
    >>> events.key_by("key").aggregate("counts", n=Count()).sink("totals", CollectingSink())
    >>> events.filter("only_b", lambda row: row["key"] == "b", columns="key").sink("b_rows", CollectingSink())
    >>> [step.name for step in query_of(flow, "b_rows").steps]
    ['events', 'only_b', 'b_rows']
    >>> query_of(flow, "counts")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: dataflow 'two-sinks' has no sink 'counts'; its sinks are: totals, b_rows
    """
    for query in split_queries(flow):
        if any(step.name == sink for step in query.sinks):
            return query
    raise PipelineError(
        f"dataflow {flow.name!r} has no sink {sink!r}; its sinks are: {', '.join(step.name for step in flow.sinks)}"
    )
