"""Recovery: after a crash, restore the last complete checkpoint, rewind the sources, and go on.

A crash loses everything the process held. A recovering run starts again from the same dataflow, as a
restarted job does, with new operators and empty channels, and then:

1. loads the newest complete checkpoint (``coordinator.load_latest``: torn and corrupt ones are skipped and
   reported); none means starting from the beginning;
2. restores every operator from its snapshot (:func:`restore_graph`), and, in the continuous model, every
   subtask's watermark and valve, and the in-flight data of an unaligned checkpoint;
3. rewinds each source to the checkpoint's offset: rows after it are read again (micro-batch: the batch
   after the checkpoint runs again, with its logged id, watermarks and offsets);
4. tells the sinks which checkpoint it restored: a transactional sink aborts what came later
   (``exactly_once.ExactlyOnceSink``); an at-least-once sink keeps it, and the replay writes it a second time.

How a checkpoint goes back into the new graph, at the same parallelism or another, is ``restore.py``.

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, run_microbatch
>>> from ministream.core.faults import crash_at
>>> def running_counts():
...     flow = Dataflow("counts")
...     events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}, {"key": "a"}],
...                                                    [{"key": "a"}, {"key": "c"}], [{"key": "b"}, {"key": "b"}]]))
...     events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
...     return flow
>>> flow = running_counts()
>>> crash_at(flow, 4)       # the script's 5th row (batch 1, second row) will not be read: a crash comes first
('events', 4)
>>> run = run_with_recovery(flow, output_mode="update", parallelism=2, restore_parallelism=4)
>>> run.attempts
[Attempt(parallelism=2, restored_from=None, crash='source crashed after delivering 4 of its records (crash_after=4)'), Attempt(parallelism=4, restored_from=0, crash=None)]
>>> run.output() == run_microbatch(running_counts(), output_mode="update").output()   # the failure-free output
True
"""

from __future__ import annotations

import attrs

from ministream.checkpoints.barriers import CheckpointingDriver
from ministream.checkpoints.coordinator import CheckpointCoordinator, MicroBatchCheckpoints, load_latest
from ministream.checkpoints.exactly_once import DELIVERIES
from ministream.checkpoints.restore import install_sinks, restore_graph
from ministream.checkpoints.storage import CheckpointStorage, MemoryStorage
from ministream.core.faults import SimulatedCrash
from ministream.core.physical import PhysicalGraph
from ministream.core.results import BatchResult
from ministream.core.trace import Trace
from ministream.models.continuous import check_continuous
from ministream.models.microbatch import run_microbatch
from ministream.operators.planner import physical_graph
from ministream.state.backends import StateBackends, state_backends
from ministream.time.clock import ManualClock
from ministream.time.units import parse_duration

# -- a run that crashes and recovers ------------------------------------------------------------------------


@attrs.frozen
class Attempt:
    """One try of a recovering run: its parallelism, the checkpoint it started from (``None``: the
    beginning), and the crash that ended it (``None``: it ran to the end).

    >>> Attempt(parallelism=2, restored_from=None, crash="the sink crashed while writing batch 3")
    Attempt(parallelism=2, restored_from=None, crash='the sink crashed while writing batch 3')"""

    parallelism: int
    restored_from: int | None
    crash: str | None


@attrs.define
class RecoveredRun:
    """What a recovering run produced: the visible output of every sink, each attempt, the checkpoints
    skipped as torn or corrupt (with the file), the trace, and the last attempt's graph.

    >>> run = RecoveredRun("microbatch", {"output": [BatchResult(0, None, [{"n": 1}]),
    ...                                             BatchResult(0, None, [{"n": 1}])]}, [], [], None)
    >>> run.output()   # an at-least-once sink wrote batch 0 twice
    [BatchResult(batch_id=0, watermark=None, rows=[{'n': 1}, {'n': 1}])]"""

    model: str
    outputs: dict
    attempts: list[Attempt]
    problems: list[str]
    trace: Trace | None
    graph: PhysicalGraph | None = None
    pictures: list = attrs.field(factory=list)
    """``(caption, DOT)`` of the channels each time an aligned subtask held an input back (``pictures=True``)."""

    def output(self, sink: str = "output") -> list[BatchResult]:
        """The batches one sink made visible, one per batch id (a batch written twice, by an at-least-once
        sink, holds both writes' rows). Continuous model: all its rows as one batch 0, in the order they became
        visible, with the sink's final watermark (as ``run_continuous`` reports it)."""
        batches = self.outputs[sink]
        if self.model == "microbatch":
            merged: dict[int, BatchResult] = {}
            for batch in batches:
                if batch.batch_id in merged:
                    batch = attrs.evolve(batch, rows=merged[batch.batch_id].rows + batch.rows)
                merged[batch.batch_id] = batch
            return [merged[batch_id] for batch_id in sorted(merged)]
        final = self.graph.by_step[sink][0].watermark if self.graph is not None else None
        return [BatchResult(0, final, [row for batch in batches for row in batch.rows])]

    @property
    def crashes(self) -> int:
        return sum(attempt.crash is not None for attempt in self.attempts)


def run_with_recovery(
    flow,
    *,
    model: str = "microbatch",
    output_mode: str = "append",
    parallelism: int = 1,
    restore_parallelism: int | None = None,
    seed: int = 0,
    watermark_policy: str = "min",
    storage: CheckpointStorage | None = None,
    interval: int = 2,
    mode: str = "aligned",
    delivery: str = "exactly_once",
    sink_crash=None,
    trace: bool | Trace = False,
    batch_timestamps: list[int] | None = None,
    idle_timeout=None,
    pictures: bool = False,
    max_restarts: int = 10,
    incremental: int | None = None,
    state_backend: str | StateBackends | None = None,
    after_batch=None,
) -> RecoveredRun:
    """Run a dataflow with checkpoints; each time it crashes, recover from the last complete checkpoint.

    Args:
        flow: the pipeline; make it crash with ``faults.crash_at(flow, n)``, ``ScriptedSource(crash_after=...)``
            or ``sink_crash``.
        model: ``"microbatch"`` (a checkpoint at each batch end) or ``"continuous"`` (barriers).
        output_mode, watermark_policy, seed, batch_timestamps: as for ``run_microbatch``.
        parallelism: of the first attempt; ``restore_parallelism``: of the attempts that recover.
        storage: where checkpoints go (``MemoryStorage()`` by default); if it holds checkpoints already,
            the run goes on from them, as Spark goes on from a checkpoint location.
        interval, mode, idle_timeout, pictures: continuous model: rows between checkpoints, ``"aligned"``,
            ``"unaligned"`` or ``"at_least_once"``, the idle timeout, DOT pictures of held-back inputs.
        delivery: ``"exactly_once"`` (transactional sinks) or ``"at_least_once"``.
        sink_crash: a ``exactly_once.SinkCrash``, to crash one sink while it writes a micro-batch.
        trace: ``True`` (or a ``Trace``) to record every attempt, with the barriers and the restores.
        incremental: ``None``: full checkpoints; ``k``: up to ``k`` incremental checkpoints (deltas of the keys
            changed) after each full one (``state/changes.py``).
        state_backend: where keyed state lives (``"memory"``, ``"rocksdb"``, ``"redis"``: ``state/backends.py``);
            each attempt starts with new, empty stores and fills them from the checkpoint it restores.
        after_batch: micro-batch model: called after every batch of every attempt, as ``run_microbatch`` calls it
            (a ``models/state_history.StateHistory`` then holds the state after each batch of the last run of it).

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, run_microbatch
    >>> from ministream.core.faults import crash_at
    >>> def running_counts():
    ...     flow = Dataflow("counts")
    ...     events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}], [{"key": "a"}, {"key": "c"}]]))
    ...     events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    ...     return flow
    >>> flow = running_counts()
    >>> crash_at(flow, 2)
    ('events', 2)
    >>> run = run_with_recovery(flow, output_mode="update")
    >>> run.crashes, run.output() == run_microbatch(running_counts(), output_mode="update").output()
    (1, True)
    """
    storage = storage if storage is not None else MemoryStorage()
    crashing = sink_crash and (sink_crash.sink or flow.sinks[0].name)
    sinks = {
        step.name: DELIVERIES[delivery](step.sink, crash=sink_crash if step.name == crashing else None)
        for step in flow.sinks
    }
    for sink in sinks.values():
        sink.reset()
    tracer = (trace if isinstance(trace, Trace) else Trace(model=model)) if trace else None
    attempts, problems, graph, pictures_taken = [], [], None, []
    current = parallelism
    backends = state_backends(state_backend)
    while True:
        restored = {"id": None}
        try:
            if model == "microbatch":
                graph = _microbatch_attempt(
                    flow,
                    current,
                    seed,
                    output_mode,
                    watermark_policy,
                    storage,
                    sinks,
                    tracer,
                    batch_timestamps,
                    restored,
                    incremental,
                    backends,
                    after_batch,
                )
            else:
                graph = _continuous_attempt(
                    flow,
                    current,
                    seed,
                    storage,
                    sinks,
                    interval,
                    mode,
                    tracer,
                    idle_timeout,
                    restored,
                    pictures_taken if pictures else None,
                    incremental,
                    backends,
                )
            attempts.append(Attempt(current, restored["id"], None))
            break
        except SimulatedCrash as crash:
            attempts.append(Attempt(current, restored["id"], str(crash)))
            if tracer is not None:
                tracer.record("recovery", 0, "crash", f"{crash}: the process is gone, its memory with it")
            if len(attempts) > max_restarts:
                raise
            current = restore_parallelism or current
        finally:
            problems += [str(problem) for problem in storage.problems if str(problem) not in problems]
    outputs = {name: list(sink.batches) for name, sink in sinks.items()}
    return RecoveredRun(model, outputs, attempts, problems, tracer, graph, pictures_taken)


def _microbatch_attempt(
    flow,
    parallelism,
    seed,
    output_mode,
    policy,
    storage,
    sinks,
    tracer,
    timestamps,
    restored,
    incremental,
    backends,
    after_batch,
):

    def on_restore(checkpoint, resume) -> None:
        restored["id"] = None if checkpoint is None else checkpoint.checkpoint_id
        _explain_restore(tracer, checkpoint, storage, resume and f"batch {resume[0]} runs next")

    hook = MicroBatchCheckpoints(storage, sinks, incremental, on_restore=on_restore)
    extra = {} if timestamps is None else {"batch_timestamps": timestamps}
    return run_microbatch(
        flow,
        output_mode=output_mode,
        parallelism=parallelism,
        seed=seed,
        watermark_policy=policy,
        trace=tracer if tracer is not None else False,
        checkpoints=hook,
        state_backend=backends,
        after_batch=after_batch,
        **extra,
    ).graph


def _continuous_attempt(
    flow,
    parallelism,
    seed,
    storage,
    sinks,
    interval,
    mode,
    tracer,
    idle_timeout,
    restored,
    pictures,
    incremental,
    backends,
):

    check_continuous(flow)
    clock = ManualClock()
    graph = physical_graph(flow, parallelism, model="continuous", trace=tracer, clock=clock, state_backend=backends)
    install_sinks(graph, sinks)
    checkpoint = load_latest(storage)
    coordinator = CheckpointCoordinator(
        graph,
        storage,
        sinks,
        "continuous",
        mode,
        next_id=max(storage.checkpoint_ids(), default=0) + 1,
        incremental=incremental,
    )
    timeout = None if idle_timeout is None else parse_duration(idle_timeout)
    driver = CheckpointingDriver(
        graph,
        clock,
        seed,
        timeout,
        tracer,
        coordinator=coordinator,
        interval=interval,
        mode=mode,
        sinks=sinks,
        pictures=pictures is not None,
    )
    for sink in sinks.values():
        sink.recover(None if checkpoint is None else checkpoint.checkpoint_id)
    if checkpoint is not None:
        restored["id"] = checkpoint.checkpoint_id
        restore_graph(graph, checkpoint)
        driver.restore(checkpoint)
    _explain_restore(tracer, checkpoint, storage, checkpoint and "the sources read on from its offsets")
    try:
        driver.run()
    finally:
        if pictures is not None:
            pictures.extend(driver.pictures)
    graph.flush_state()
    return graph


def _explain_restore(tracer, checkpoint, storage, what_next) -> None:
    if tracer is None:
        return
    for problem in storage.problems:
        tracer.record("recovery", 0, "skip", str(problem))
    if checkpoint is not None:
        offsets = ", ".join(f"{name} at {saved['offset']}" for name, saved in checkpoint.sources.items())
        tracer.record(
            "recovery",
            0,
            "restore",
            f"restored checkpoint {checkpoint.checkpoint_id} (sources: {offsets}); {what_next}",
        )
