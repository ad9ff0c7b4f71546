"""Recovery: after a crash, restore the last complete checkpoint, rewind the sources, and go on.

A crash loses everything the process held. A recovering run starts again from the same dataflow, as a
restarted job does, with new operators and empty channels, and then:

1. loads the newest complete checkpoint (``checkpoint.load_latest``: torn and corrupt ones are skipped and
   reported); none means starting from the beginning;
2. restores every operator from its snapshot (:func:`restore_graph`), and, in the continuous model, every
   subtask's watermark and valve, and the in-flight data of an unaligned checkpoint;
3. rewinds each source to the checkpoint's offset: rows after it are read again (micro-batch: the batch
   after the checkpoint runs again, with its logged id, watermarks and offsets);
4. tells the sinks which checkpoint it restored: a transactional sink aborts what came later
   (``sinks.ExactlyOnceSink``); an at-least-once sink keeps it, and the replay writes it a second time.

**Another parallelism.** Keyed state and timers are stored by *key group* (``keygroups``), so a checkpoint
taken with 2 subtasks can be restored into 1 or 4: each new subtask takes the key groups of its range
(``keygroups.key_group_range``) from the merged snapshots of the old ones. State that is not laid out by key
group (a window step's last eviction watermark, say) must be the same in every old subtask to be restored
elsewhere; otherwise the restore is refused, with the reason.

>>> from ministream.faults import crash_at
>>> from ministream.lessons import get_lesson
>>> lesson = get_lesson("running-aggregation")
>>> flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
>>> crash_at(flow, 4)       # the script's 5th row (batch 1, second row) will not be read: a crash comes first
('events', 4)
>>> run = run_with_recovery(flow, output_mode="update", parallelism=2, restore_parallelism=4)
>>> run.attempts
[Attempt(parallelism=2, restored_from=None, crash='source crashed after delivering 4 of its records (crash_after=4)'), Attempt(parallelism=4, restored_from=0, crash=None)]
>>> run.output() == lesson.run().output()
True
"""

from __future__ import annotations

import attrs

from ministream.checkpoint import CheckpointCoordinator, MicroBatchCheckpoints, load_latest
from ministream.checkpoint_storage import CheckpointStorage, MemoryStorage
from ministream.copy_on_write import copy_value
from ministream.faults import SimulatedCrash
from ministream.keygroups import key_group_range
from ministream.operators import PipelineError
from ministream.results import BatchResult
from ministream.runtime import PhysicalGraph
from ministream.sinks import DELIVERIES
from ministream.trace import Trace

KEY_GROUP_PARTS = ("keyed", "timers")
"""The parts of an operator snapshot laid out ``{key_group: ...}``, which a rescale splits by key group."""


def install_sinks(graph: PhysicalGraph, sinks: dict) -> None:
    """Put the sink wrappers (``sinks.ExactlyOnceSink``...) in front of the sinks of a freshly built graph.

    >>> from ministream.lessons import get_lesson
    >>> from ministream.sinks import ExactlyOnceSink
    >>> lesson = get_lesson("running-aggregation")
    >>> graph = PhysicalGraph(lesson.pipeline(lesson.default_script, {}), 1, output_mode="update")
    >>> install_sinks(graph, {"output": ExactlyOnceSink()}); type(graph.by_step["output"][0].operator.sink).__name__
    'ExactlyOnceSink'"""
    for step in graph.flow.sinks:
        if step.name in sinks:
            graph.by_step[step.name][0].operator.sink = sinks[step.name]


def merge_snapshots(step: str, snapshots: list[dict]) -> dict:
    """The snapshots of all subtasks of a step as one: key-group parts united (their key groups are
    disjoint), nested snapshots merged the same way, other parts kept once, and refused when the subtasks
    disagree on them.

    >>> merge_snapshots("totals", [{"keyed": {3: {"aggregate": {"a": [1]}}}, "evicted_with": 5},
    ...                            {"keyed": {90: {"aggregate": {"b": [2]}}}, "evicted_with": 5}])
    {'keyed': {3: {'aggregate': {'a': [1]}}, 90: {'aggregate': {'b': [2]}}}, 'evicted_with': 5}
    """
    merged: dict = {}
    for snapshot in snapshots:
        for part, value in snapshot.items():
            if part in KEY_GROUP_PARTS:
                merged.setdefault(part, {}).update(value)
            elif part not in merged:
                merged[part] = value
            elif isinstance(value, dict) and isinstance(merged[part], dict) and merged[part] != value:
                merged[part] = merge_snapshots(step, [merged[part], value])  # a nested snapshot (a join's)
            elif merged[part] != value:
                raise PipelineError(
                    f"step {step!r} cannot be restored at another parallelism: its subtasks keep different "
                    f"values of {part!r} ({merged[part]!r}, {value!r}), state that is not laid out by key group, "
                    "so there is no way to split or merge it"
                )
    return merged


def restore_graph(graph: PhysicalGraph, checkpoint) -> None:
    """Load a checkpoint into a freshly built graph: each operator's snapshot (split by key group when the
    parallelism changed) and, in the continuous model, each subtask's watermark and valve.

    >>> from ministream.checkpoint import Checkpoint
    >>> from ministream.lessons import get_lesson
    >>> lesson = get_lesson("running-aggregation")
    >>> checkpoint = Checkpoint(0, "microbatch", "aligned", 1, operators={"totals": {0: {"keyed": {
    ...     38: {"aggregate": {"alice": [1, 1.0]}}, 82: {"aggregate": {"bob": [2, 5.0]}}}}}})
    >>> graph = PhysicalGraph(lesson.pipeline(lesson.default_script, {}), 2, output_mode="update")
    >>> restore_graph(graph, checkpoint)   # taken with 1 subtask, restored into 2: bob's group 82 moves
    >>> [subtask.operator.groups for subtask in graph.by_step["totals"]]
    [{38: {'alice': [1, 1.0]}}, {82: {'bob': [2, 5.0]}}]"""
    if checkpoint.base is not None:
        raise PipelineError(
            f"checkpoint {checkpoint.checkpoint_id} holds deltas on checkpoint {checkpoint.base}: "
            "load it with checkpoint.load_checkpoint or load_latest, which apply them"
        )
    if checkpoint.channels and checkpoint.parallelism != graph.parallelism:
        raise PipelineError(
            f"checkpoint {checkpoint.checkpoint_id} is unaligned: its in-flight data belongs to "
            f"the channels of parallelism {checkpoint.parallelism}, and ministream restores it "
            f"only there, not at {graph.parallelism}"
        )
    for step in graph.flow.steps:
        subtasks, saved = graph.by_step[step.name], checkpoint.operators.get(step.name)
        if not saved or subtasks[0].operator is None:
            continue
        if len(saved) == len(subtasks):
            for subtask in subtasks:
                subtask.operator.restore(saved[subtask.index], None)
        else:
            merged = merge_snapshots(step.name, [saved[index] for index in sorted(saved)])
            for subtask in subtasks:
                subtask.operator.restore(copy_value(merged), key_group_range(subtask.index, len(subtasks)))
        if checkpoint.model == "continuous":
            _restore_watermarks(step.name, subtasks, checkpoint.subtasks)


def _restore_watermarks(step: str, subtasks: list, saved_subtasks: dict) -> None:
    """A step's subtasks get back their watermark and their valve. A subtask whose input channels are as they
    were gets each channel's state back by position; otherwise (its step or an upstream step changed its
    parallelism) each channel gets the state the old channels of the same input had (``_shared_state``)."""
    saved = {name: state for name, state in saved_subtasks.items() if name.rpartition("[")[0] == step}
    shared = None
    for subtask in subtasks:
        state = saved.get(str(subtask))
        if (
            state is not None
            and len(saved) == len(subtasks)
            and state["inputs"] == [number for number, _ in subtask.inputs]
        ):
            _set_valve(subtask, state, lambda position, valve: valve["channels"][position])
        elif saved:
            shared = shared or _shared_state(list(saved.values()))
            first, by_input = shared
            _set_valve(subtask, first, lambda position, valve, subtask=subtask: by_input[subtask.inputs[position][0]])


def _shared_state(saved: list[dict]) -> tuple[dict, dict]:
    """The state to give every new subtask of a step, and ``{input number: the state of its channels}``.

    After an aligned checkpoint all old subtasks agree (each saw the same watermarks before the barrier). An
    at-least-once checkpoint is not aligned, so they may not: then the lowest watermark is taken, which only
    holds windows and timers back until the replay brings the watermarks up again.
    """
    watermarks = [state["watermark"] for state in saved]
    valves = [state["valve"] for state in saved if state["valve"] is not None]
    first = {"watermark": _lowest(watermarks), "valve": None}
    if valves:
        first["valve"] = {
            "watermark": _lowest([valve["watermark"] for valve in valves]),
            "idle": all(valve["idle"] for valve in valves),
        }
    by_input: dict = {}  # {input number: [the states of every old channel of that input]}
    for state in saved:
        if state["valve"] is not None:
            for position, channel in state["valve"]["channels"].items():
                by_input.setdefault(state["inputs"][position], []).append(channel)
    merged = {
        number: {
            "watermark": _lowest([c["watermark"] for c in channels]),
            "active": any(c["active"] for c in channels),
            "aligned": all(c["aligned"] for c in channels),
        }
        for number, channels in by_input.items()
    }
    return first, merged


def _lowest(watermarks: list):
    """The lowest watermark; ``None`` (no watermark yet) is lower than any."""
    return None if None in watermarks else min(watermarks, default=None)


def _set_valve(subtask, state: dict, channel_state) -> None:
    subtask.watermark = state["watermark"]
    if state["valve"] is None:
        return
    valve = subtask._valve()
    valve.watermark, valve.idle = state["valve"]["watermark"], state["valve"]["idle"]
    for position in valve.channels:
        valve.channels[position] = dict(channel_state(position, state["valve"]))


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
        sink_crash: a ``sinks.SinkCrash``, to crash one sink while it writes a micro-batch.
        trace: ``True`` (or a ``Trace``) to record every attempt, with the barriers and the restores.
        incremental: ``None``: full checkpoints; ``k``: up to ``k`` incremental checkpoints (deltas of the keys
            changed) after each full one (``incremental.py``).

    >>> from ministream.faults import crash_at
    >>> from ministream.lessons import get_lesson
    >>> lesson = get_lesson("running-aggregation")
    >>> flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    >>> crash_at(flow, 2)
    ('events', 2)
    >>> run = run_with_recovery(flow, output_mode="update")
    >>> run.crashes, run.output() == lesson.run().output()
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
    flow, parallelism, seed, output_mode, policy, storage, sinks, tracer, timestamps, restored, incremental
):
    from ministream.microbatch import run_microbatch

    hook = MicroBatchCheckpoints(storage, sinks, incremental)
    original = hook.restore

    def restore(graph, watermarks):
        resume = original(graph, watermarks)
        restored["id"] = None if hook.restored is None else hook.restored.checkpoint_id
        _explain_restore(tracer, hook.restored, storage, resume and f"batch {resume[0]} runs next")
        return resume

    hook.restore = restore
    extra = {} if timestamps is None else {"batch_timestamps": timestamps}
    return run_microbatch(
        flow,
        output_mode=output_mode,
        parallelism=parallelism,
        seed=seed,
        watermark_policy=policy,
        trace=tracer if tracer is not None else False,
        checkpoints=hook,
        **extra,
    ).graph


def _continuous_attempt(
    flow, parallelism, seed, storage, sinks, interval, mode, tracer, idle_timeout, restored, pictures, incremental
):
    from ministream.barriers import CheckpointingDriver
    from ministream.clock import ManualClock
    from ministream.continuous import check_continuous
    from ministream.times import parse_duration

    check_continuous(flow)
    clock = ManualClock()
    graph = PhysicalGraph(flow, parallelism, model="continuous", trace=tracer, clock=clock)
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
