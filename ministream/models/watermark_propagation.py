"""Per-step watermarks in a micro-batch: each stateful step's watermark, passed on from the steps before it.

A query may chain stateful steps: an hourly sum per driver, then the top driver of each hour; a join, then a
window over the pairs. Spark (3.4 and later, ``spark.sql.streaming.statefulOperator.allowMultiple``, on by
default) gives every stateful operator its own *input watermark*, propagated through the plan from the
query's global watermark (``WatermarkPropagator``): a ``with_watermark`` step outputs the global watermark, a
stateless step passes on the smallest of its inputs', and a stateful step passes on its *output watermark*
(``Operator.output_watermark``): an aggregation its input watermark (what it emits is never behind it), a
stream-stream join the smallest of its two state watermarks and its input watermark (a row it emits when
evicting it can be that old).

Each stateful step then runs batch k with two of them, as every stateful step does with the global one:
rows at or before its input watermark propagated from WM_{k-1} are late, and state at or before its input
watermark propagated from WM_k is evicted. So the windows a first aggregation emits in batch k, whose end is
after WM_{k-1}, are not late for the second one, which aggregates them and, with the same WM_k, can emit in
the same batch. A window after a time-range join waits for the join's lower output watermark, which is why
the rows the join emits late (an unmatched row padded with nulls) still count.

A stateful step with no watermark on any path before it keeps the global watermark (Spark gives it none;
ministream's operators then treat their column as not watermarked, as before).

>>> from ministream.core.aggregates import Count
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sinks import CollectingSink
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.operators.planner import physical_graph
>>> from ministream.time.ranges import TimeRange
>>> from ministream.time.windows import Tumbling
>>> flow = Dataflow("join-then-window")
>>> left = flow.source("l", ScriptedSource([])).select("ls", lt="ts", lk="k").with_watermark("lw", "lt", 0)
>>> right = flow.source("r", ScriptedSource([])).select("rs", rt="ts", rk="k").with_watermark("rw", "rt", 0)
>>> pairs = left.key_by("lk").join("join", right.key_by("rk"), how="inner", between=TimeRange("lt", "rt", 0, 40_000))
>>> pairs.key_by([]).window("per_window", Tumbling(30_000), column="lt", n=Count()).sink("output", CollectingSink())
>>> step_watermarks(flow, physical_graph(flow), 100_000)
{'join': 100000, 'per_window': 59999}
"""

from __future__ import annotations

from ministream.core.physical import PhysicalGraph
from ministream.core.plan import Dataflow
from ministream.core.steps import SourceSpec, WatermarkSpec


def step_watermarks(flow: Dataflow, graph: PhysicalGraph, watermark: int | None) -> dict[str, int | None]:
    """``{stateful step: its input watermark}`` when the query's global watermark is ``watermark``.

    State: ``outputs = {step: the watermark it passes on, or None}``, filled in plan order (a step comes after
    its inputs)."""
    outputs: dict[str, int | None] = {}
    inputs: dict[str, int | None] = {}
    for step in flow.steps:
        if isinstance(step.spec, SourceSpec):
            outputs[step.name] = None
            continue
        if isinstance(step.spec, WatermarkSpec):
            outputs[step.name] = watermark
            continue
        upstream = [outputs[edge.upstream.name] for edge in step.inputs]
        known = [value for value in upstream if value is not None]
        given = min(known) if known else None
        if step.parallelism != "keyed":
            outputs[step.name] = given
            continue
        inputs[step.name] = watermark if given is None else given
        operator = graph.operators(step.name)[0]
        outputs[step.name] = None if given is None else operator.output_watermark(given)
    return inputs
