"""The micro-batch model: Spark Structured Streaming's way of running a streaming query.

The driver runs the query as a sequence of small batch jobs. For batch k it:

1. fixes the batch's watermarks before any row moves: ``late_watermark`` = WM_{k-1} (rows at or before it
   are late) and ``watermark`` = WM_k (state at or before it is evicted, append output emitted); and its
   processing time, the *batch timestamp*, read once from the processing-time clock (``batch_timestamps``);
2. lets every source deliver its batch k, followed by an :class:`~ministream.core.physical.EndOfBatch` marker;
3. lets the scheduler run until every subtask has ended the batch: each stateful operator then emits what
   the output mode asks for and evicts what the watermark allows; each sink records the batch;
4. computes WM_{k+1} from the event times the ``with_watermark`` steps saw (``watermarks.MicroBatchWatermarks``).

When the script has no more batches, the driver runs one more, a *no-data batch*, if a stateful operator
says the new watermark would evict something (Spark's ``shouldRunAnotherBatch``), and then stops.

>>> from ministream.core.plan import Dataflow, event_time_delays
>>> from ministream.core.aggregates import Count
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.core.sinks import CollectingSink
>>> flow = Dataflow("counts")
>>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}], [{"key": "a"}]]))
>>> events.key_by("key").aggregate("count_per_key", count=Count()).sink("output", CollectingSink())
>>> for batch in run_microbatch(flow, output_mode="update").output("output"):
...     print(batch.batch_id, sorted(batch.rows, key=str))
0 [{'key': 'a', 'count': 1}, {'key': 'b', 'count': 1}]
1 [{'key': 'a', 'count': 2}]
"""

from __future__ import annotations

from collections.abc import Callable

from ministream.core.operator import BatchInfo
from ministream.core.physical import EndOfBatch, PhysicalGraph, Scheduler
from ministream.core.plan import Dataflow, event_time_delays
from ministream.core.steps import AggregateSpec, WatermarkSpec, WindowSpec
from ministream.core.trace import Trace
from ministream.errors import PipelineError
from ministream.models.run import Run
from ministream.operators.planner import check_output_mode, physical_graph
from ministream.state.backends import StateBackends, state_backends
from ministream.time.clock import ManualClock
from ministream.time.watermarks import MicroBatchWatermarks

OUTPUT_MODES = ("append", "update", "complete")


def check_pipeline(flow: Dataflow, output_mode: str) -> None:
    """Refuse, before running, the pipelines Spark refuses, with the reason in the learner's terms."""
    if output_mode not in OUTPUT_MODES:
        raise PipelineError(f"output mode must be one of {', '.join(OUTPUT_MODES)}, not {output_mode!r}")
    if not flow.sources:
        raise PipelineError(f"dataflow {flow.name!r} has no source")
    if not flow.sinks:
        raise PipelineError(f"dataflow {flow.name!r} has no sink: add .sink('output', CollectingSink())")
    check_output_mode(flow, output_mode)
    if output_mode == "complete" and not any(isinstance(step.spec, (AggregateSpec, WindowSpec)) for step in flow.steps):
        raise PipelineError(
            "complete output mode needs an aggregation: it re-emits the whole result table every batch, "
            "and without an aggregation there is no table, only rows. (Spark: 'Complete output mode not "
            "supported when there are no streaming aggregations on streaming DataFrames/Datasets'.)"
        )


def run_microbatch(
    flow: Dataflow,
    *,
    output_mode: str = "append",
    parallelism: int = 1,
    seed: int = 0,
    watermark_policy: str = "min",
    trace: bool | Trace = False,
    batch_timestamps: list[int] | None = None,
    checkpoints=None,
    state_backend: str | StateBackends | None = None,
    after_batch: Callable[[BatchInfo, PhysicalGraph], None] | None = None,
) -> Run:
    """Run a dataflow batch by batch, as Spark runs a streaming query, and return what the sinks received.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling
    >>> flow = Dataflow("per window")
    >>> script = [[{"key": "a", "ts": 1_000}, {"key": "a", "ts": 4_000}], [{"key": "a", "ts": 12_000}]]
    >>> flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", "1 second").key_by("key").window(
    ...     "w", Tumbling("10 seconds"), n=Count()).sink("output", CollectingSink())
    >>> for batch in run_microbatch(flow, output_mode="append").output():
    ...     print(batch.batch_id, batch.watermark, batch.rows)
    0 0 []
    1 3000 []
    2 11000 [{'key': 'a', 'window_start': 0, 'window_end': 10000, 'n': 2}]

    Args:
        flow: the pipeline; its sources must be scripted (``sources.ScriptedSource``).
        output_mode: ``"append"``, ``"update"`` or ``"complete"``, with Spark's meaning.
        parallelism: how many subtasks each keyed step runs as (the result must not depend on it).
        seed: the scheduler's seed (the result must not depend on it either).
        watermark_policy: ``"min"`` or ``"max"``: how the watermarks of several inputs combine.
        trace: ``True`` (or a ``Trace``) to record why every row was emitted or dropped.
        checkpoints: Spark's checkpoint location, a ``coordinator.MicroBatchCheckpoints``: the run first
            restores its last complete checkpoint (if any) and goes on from there; each batch then logs its
            offsets before it reads, and is checkpointed and committed when it ends.
        batch_timestamps: the processing time of each batch in ms (Spark's batch timestamps, as its checkpoint
            records them in ``offsets/k``): batch k runs at ``batch_timestamps[k]``, later batches at the last
            one (the clock moves only when told to). ``None``: the run has no processing time.
        state_backend: where keyed state lives: ``"memory"`` (``None``), ``"rocksdb"``, ``"redis"``, or a
            ``state.backends.StateBackends``; a store-backed state is written back at the end of every batch.
        after_batch: called with each batch and the graph once the batch has ended everywhere (before it is
            checkpointed): to look at the state after every batch (``models/state_history.py``).
    """
    check_pipeline(flow, output_mode)
    tracer = (trace if isinstance(trace, Trace) else Trace()) if trace else None
    clock = ManualClock(batch_timestamps[0]) if batch_timestamps else None
    graph = physical_graph(
        flow,
        parallelism,
        output_mode=output_mode,
        model="microbatch",
        trace=tracer,
        clock=clock,
        state_backend=state_backends(state_backend),
    )
    scheduler = Scheduler(graph, seed)
    delays = event_time_delays(flow)
    watermarks = MicroBatchWatermarks(delays, watermark_policy) if delays else None
    if checkpoints is None:  # a recovering run keeps what its sinks hold: they live outside the process
        for step in flow.sinks:
            step.sink.reset()

    current = {"batch": None}
    for subtask in graph.subtasks:
        subtask.on_marker = lambda subtask, marker: _end_batch(subtask, current["batch"])
        if isinstance(subtask.step.spec, WatermarkSpec):
            subtask.operator.ctx.report_event_time = lambda event_time, name=subtask.step.name: watermarks.observe(
                name, event_time
            )

    sources = [(step.source, graph.by_step[step.name][0]) for step in flow.sources]
    script_length = max(len(source) for source, _ in sources)
    stateful = [subtask.operator for subtask in graph.subtasks if subtask.operator is not None]
    history: list[int | None] = []
    watermark = 0 if watermarks else None
    late_watermark = watermark
    batch_id = 0
    if checkpoints is not None:
        batch_id, watermark, late_watermark = checkpoints.restore(graph, watermarks) or (
            batch_id,
            watermark,
            late_watermark,
        )
    while True:
        has_data = batch_id < script_length
        rerun = checkpoints is not None and checkpoints.planned(batch_id)  # logged, never committed: runs again
        if (
            not has_data
            and not rerun
            and not (
                watermark is not None
                and watermark != late_watermark
                and any(operator.should_run_another_batch(watermark) for operator in stateful)
            )
        ):
            break
        processing_time = None
        if clock is not None:
            clock.set(batch_timestamps[min(batch_id, len(batch_timestamps) - 1)])
            processing_time = clock.now()
        batch = BatchInfo(batch_id, watermark, late_watermark, has_data, processing_time)
        current["batch"] = batch
        if tracer:
            tracer.begin_batch(batch_id, watermark, late_watermark, has_data)
        for operator in stateful:
            operator.on_batch_start(batch)
        if checkpoints is not None:
            checkpoints.begin_batch(batch)  # the offsets log: batch k is planned before it reads
        for source, subtask in sources:
            subtask.output.send(source.read(batch_id))
            subtask.output.broadcast(EndOfBatch(batch_id))
        scheduler.run_until_idle()
        if tracer:
            tracer.end_batch(
                {
                    step.name: sum(op.state_size() for op in graph.operators(step.name))
                    for step in flow.steps
                    if step.parallelism == "keyed"
                }
            )
        history.append(watermark)
        if after_batch is not None:
            after_batch(batch, graph)
        if watermarks:
            late_watermark, watermark = watermark, watermarks.advance()
            if tracer:  # what the batch's own rows will let out one batch later
                for operator in stateful:
                    operator.explain_waiting(batch, watermark)
        if checkpoints is not None:
            checkpoints.commit_batch(batch, graph, watermarks, watermark, late_watermark)
        batch_id += 1
    outputs = {step.name: step.sink.batches for step in flow.sinks}
    return Run(outputs, history, tracer, graph, graph.row_counts)


def _end_batch(subtask, batch: BatchInfo) -> None:
    """Every input of ``subtask`` has ended the batch: let its operator finish the batch, then pass the
    marker on."""
    if subtask.operator is not None:
        subtask.operator.on_batch_end(batch)
        if subtask.operator.ctx.state is not None:
            subtask.operator.ctx.state.flush()  # the batch's state changes, committed (state/stored.py)
    subtask.output.broadcast(EndOfBatch(batch.batch_id))
