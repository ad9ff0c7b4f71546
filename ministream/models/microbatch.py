"""The micro-batch model: Spark Structured Streaming's way of running a streaming query.

The driver runs the query as a sequence of small batch jobs. For batch k it:

1. fixes the batch's watermarks before any row moves: ``late_watermark`` = WM_{k-1} (rows at or before it
   are late) and ``watermark`` = WM_k (state at or before it is evicted, append output emitted); and its
   processing time, the *batch timestamp*, read once from the processing-time clock (``batch_timestamps``);
2. lets every source deliver its batch k, followed by an :class:`~ministream.core.physical.EndOfBatch` marker;
3. lets the scheduler run until every subtask has ended the batch: each stateful operator then emits what
   the output mode asks for and evicts what the watermark allows; each sink records the batch;
4. computes WM_{k+1} from the event times the ``with_watermark`` steps saw (``watermarks.MicroBatchWatermarks``).

A dataflow with several sinks is several Spark queries (``core/queries.py``): each runs on its own, with its
own batches and watermark, and the run gathers what every sink received.

Position k of the script is trigger firing k (``core/triggers.py``): it runs a batch with the data that
arrived, or, when nothing arrived (a ``None`` batch of the script), a *no-data batch* if a stateful operator
asks for one (Spark's ``shouldRunAnotherBatch``: its new watermark would let it emit or evict), or nothing.
When the script has no more batches, the driver runs one more no-data batch if the last batch moved the
watermark and an operator asks for it, and then stops. ``Trigger.once()`` and ``Trigger.available_now()``
run Spark's other two triggers.

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

import functools
from collections.abc import Callable

import attrs

from ministream.core.lineage import upstream
from ministream.core.operator import BatchInfo
from ministream.core.physical import EndOfBatch, PhysicalGraph, Scheduler
from ministream.core.plan import Dataflow, event_time_delays
from ministream.core.queries import split_queries
from ministream.core.steps import AggregateSpec, SortSpec, WatermarkSpec, WindowSpec
from ministream.core.trace import Trace
from ministream.core.triggers import Trigger
from ministream.errors import PipelineError
from ministream.models.run import Run
from ministream.models.watermark_propagation import step_watermarks
from ministream.operators.planner import check_output_mode, physical_graph
from ministream.state.backends import StateBackends, state_backends
from ministream.time.clock import ManualClock
from ministream.time.watermarks import MicroBatchWatermarks, check_policy

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
    for step in flow.steps:
        if isinstance(step.spec, SortSpec) and not (
            output_mode == "complete"
            and any(isinstance(s.spec, (AggregateSpec, WindowSpec)) for s in upstream(step) if s is not step)
        ):
            raise PipelineError(
                f"step {step.name!r}: a stream has no end to sort, so rows can be sorted only after an "
                "aggregation in complete output mode, where each batch is the whole result table. (Spark: "
                "'Sorting is not supported on streaming DataFrames/Datasets, unless it is on aggregated "
                "DataFrame/Dataset in Complete output mode'.)"
            )
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
    trigger: Trigger | None = None,
    no_data_batches: bool = True,
    process_all_available: bool = True,
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
        watermark_policy: ``"min"`` or ``"max"``: how the watermarks of several inputs combine. A run restored
            from a checkpoint keeps the policy the checkpoint recorded, as Spark does.
        trace: ``True`` (or a ``Trace``) to record why every row was emitted or dropped.
        checkpoints: Spark's checkpoint location, a ``coordinator.MicroBatchCheckpoints``: the run first
            restores its last complete checkpoint (if any) and goes on from there; each batch then logs its
            offsets before it reads, and is checkpointed and committed when it ends.
        batch_timestamps: the processing time of each script position (trigger firing) in ms (Spark's batch
            timestamps, as its checkpoint records them in ``offsets/k``): a batch run at position k runs at
            ``batch_timestamps[k]``, later ones at the last (the clock moves only when told to). ``None``: the
            run has no processing time.
        trigger: when batches run (``core/triggers.py``): ``Trigger.processing_time()`` (the default: one
            firing per script position), ``Trigger.once()`` or ``Trigger.available_now()``.
        no_data_batches: Spark's ``spark.sql.streaming.noDataMicroBatches.enabled``: whether a firing with no
            new data may run a no-data batch (``core/triggers.py`` says when one runs).
        process_all_available: after the script, run the no-data batch the last watermark asks for, as
            ``query.processAllAvailable()`` waits for it; ``False``: stop right after the script's last
            firing, as a query stopped between two ticks of its trigger does.
        state_backend: where keyed state lives: ``"memory"`` (``None``), ``"rocksdb"``, ``"redis"``, or a
            ``state.backends.StateBackends``; a store-backed state is written back at the end of every batch.
        after_batch: called with each batch and the graph once the batch has ended everywhere (before it is
            checkpointed): to look at the state after every batch (``models/state_history.py``).
    """
    check_pipeline(flow, output_mode)
    check_policy(watermark_policy)
    queries = split_queries(flow)
    if len(queries) > 1:  # one Spark query per sink (core/queries.py): each runs on its own
        if checkpoints is not None:
            sinks = ", ".join(step.name for step in flow.sinks)
            raise PipelineError(
                f"dataflow {flow.name!r} runs as {len(queries)} queries, one per sink ({sinks}), and a checkpoint "
                "location belongs to one query (Spark: one checkpointLocation per writeStream): run each query "
                "of core.queries.split_queries(flow) with its own checkpoints"
            )
        runs = [
            run_microbatch(
                query,
                output_mode=output_mode,
                parallelism=parallelism,
                seed=seed,
                watermark_policy=watermark_policy,
                trace=bool(trace),
                batch_timestamps=batch_timestamps,
                state_backend=state_backend,
                after_batch=after_batch,
                trigger=trigger,
                no_data_batches=no_data_batches,
                process_all_available=process_all_available,
            )
            for query in queries
        ]
        return Run.of_queries(runs)
    trigger = trigger if trigger is not None else Trigger.processing_time()
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

    current: dict[str, BatchInfo] = {}  # {step: the batch as that step runs it (its own watermarks)}
    for subtask in graph.subtasks:
        subtask.on_marker = lambda subtask, marker: _end_batch(subtask, current[subtask.step.name])
        if isinstance(subtask.step.spec, WatermarkSpec):
            subtask.operator.ctx.report_event_time = lambda event_time, name=subtask.step.name: watermarks.observe(
                name, event_time
            )

    sources = [(step.source, graph.by_step[step.name][0]) for step in flow.sources]
    script_length = max(len(source) for source, _ in sources)
    stateful = [subtask.operator for subtask in graph.subtasks if subtask.operator is not None]
    # The keys marked changed for an incremental checkpoint (``KeyedStateBackend.track_changes``) count only from
    # a first checkpoint: those marked before it are forgotten after every batch, not kept for every key written.
    keyed_states = [operator.ctx.state for operator in stateful if operator.ctx.state is not None]
    steps_of = {id(subtask.operator): subtask.step.name for subtask in graph.subtasks}

    @functools.lru_cache(maxsize=2)
    def per_step(watermark: int | None) -> dict[str, int | None]:
        """Each stateful step's own watermark (``watermark_propagation.py``): the global one unless a stateful
        step before it passes on a lower one. A function of the watermark alone, computed once for each: a
        batch's late watermark is the one the batch before ran with."""
        return step_watermarks(flow, graph, watermark) if watermark is not None else {}

    history: list[int | None] = []
    ran: list[BatchInfo] = []
    watermark = 0 if watermarks else None
    late_watermark = watermark
    batch_id, position = 0, 0
    if checkpoints is not None:
        restored = checkpoints.restore(graph, watermarks)
        if restored is not None:
            batch_id, position, watermark, late_watermark = restored

    def asks_for_no_data_batch() -> bool:
        own = per_step(watermark)
        return no_data_batches and any(
            operator.should_run_another_batch(own.get(steps_of[id(operator)], watermark)) for operator in stateful
        )

    while True:
        logged = checkpoints.logged(batch_id) if checkpoints is not None else None
        processing_time = None
        if logged is not None:  # planned, never committed: it runs again exactly as logged (Spark's rule)
            end = max(logged["offsets"].values(), default=position)
            has_data = end > position
            processing_time = logged.get("processing_time")
        elif trigger.kind == "once":  # one batch with everything available, never a no-data batch
            if ran or not any(source.arrived(k) for source, _ in sources for k in range(position, script_length)):
                break
            end, has_data = script_length, True
        elif position < script_length:  # the next firing: its data, or a no-data batch, or nothing
            end = position + 1
            has_data = any(source.arrived(position) for source, _ in sources)
            if not has_data and (trigger.kind == "available_now" or not asks_for_no_data_batch()):
                position = end
                continue
        elif (
            process_all_available and watermark is not None and watermark != late_watermark and asks_for_no_data_batch()
        ):
            end, has_data = position, False  # after the script: the trailing no-data batch
        else:
            break
        if clock is not None and processing_time is None:
            clock.set(batch_timestamps[min(position, len(batch_timestamps) - 1)])
        if clock is not None:
            processing_time = processing_time if processing_time is not None else clock.now()
            clock.set(processing_time)
        batch = BatchInfo(batch_id, watermark, late_watermark, has_data, processing_time, position, end)
        own, own_late = per_step(watermark), per_step(late_watermark)
        for step in flow.steps:
            name = step.name
            current[name] = (
                attrs.evolve(batch, watermark=own[name], late_watermark=own_late[name])
                if name in own and (own[name] != watermark or own_late[name] != late_watermark)
                else batch  # the step runs with the global watermarks (as most do)
            )
        if tracer:
            tracer.begin_batch(batch_id, watermark, late_watermark, has_data)
        for operator in stateful:
            operator.on_batch_start(current[steps_of[id(operator)]])
        if checkpoints is not None:
            checkpoints.begin_batch(batch)  # the offsets log: batch k is planned before it reads
        for source, subtask in sources:
            for k in range(position, end):
                subtask.output.send(source.read(k))
            subtask.output.broadcast(EndOfBatch(batch_id))
        scheduler.run_until_idle()
        for state in keyed_states:
            state.forget_untracked_changes()
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
        ran.append(batch)
        if watermarks:
            late_watermark, watermark = watermark, watermarks.advance()
            if tracer:  # what the batch's own rows will let out one batch later
                following = per_step(watermark)
                for operator in stateful:
                    name = steps_of[id(operator)]
                    operator.explain_waiting(current[name], following.get(name, watermark))
        position = end
        if checkpoints is not None:
            checkpoints.commit_batch(batch, graph, watermarks, watermark, late_watermark)
        batch_id += 1
    outputs = {step.name: step.sink.batches for step in flow.sinks}
    return Run(outputs, history, tracer, graph, graph.row_counts, batches=ran)


def _end_batch(subtask, batch: BatchInfo) -> None:
    """Every input of ``subtask`` has ended the batch: let its operator finish the batch, then pass the
    marker on."""
    if subtask.operator is not None:
        subtask.operator.on_batch_end(batch)
        if subtask.operator.ctx.state is not None:
            subtask.operator.ctx.state.flush()  # the batch's state changes, committed (state/stored.py)
    subtask.output.broadcast(EndOfBatch(batch.batch_id))
