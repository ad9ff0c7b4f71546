"""Restore: a checkpoint put back into a new physical graph, at the same parallelism or another.

A crash loses everything the process held, so a recovering run builds a new physical graph from the same
dataflow and restores it from the newest complete checkpoint (``checkpoints/recovery.py`` runs that loop):

1. every operator gets its snapshot back (:func:`restore_graph`), and, in the continuous model, every
   subtask its watermark and valve, and every channel the in-flight data of an unaligned checkpoint;
2. the sinks are wrapped again (:func:`install_sinks`): what a sink made visible outlives the crash.

**Another parallelism.** Keyed state and timers are stored by *key group* (``state/keygroups.py``), so a
checkpoint taken with 2 subtasks can be restored into 1 or 4: each new subtask takes the key groups of its
range (``keygroups.key_group_range``) from the merged snapshots of the old ones (:func:`merge_snapshots`).
*Operator state* (``state/operator_state.py``: a subtask's own lists, under ``"operator"`` in its snapshot)
is dealt out to the new subtasks as each list was declared: split evenly, or the union to every subtask.
Other state that is not laid out by key group (a window step's last eviction watermark, say) must be the same
in every old subtask to be restored elsewhere; otherwise the restore is refused, with the reason.

**Changelog mode.** A checkpoint taken with ``state.changelog.ChangelogBackends`` holds, for each subtask's keyed
state, only a position in that subtask's changelog: :func:`restore_graph` reads the state it stands for (the
snapshot, then the records up to the position) from the changelogs of the graph's backends, then restores it
as any other snapshot, and tells each new subtask's log where it goes on.
"""

from __future__ import annotations

from ministream.core.physical import PhysicalGraph
from ministream.errors import PipelineError
from ministream.state.changelog import ChangelogBackends, LogPosition, resolve_positions
from ministream.state.copy_on_write import copy_value
from ministream.state.keygroups import key_group_range
from ministream.state.operator_state import split_snapshots

KEY_GROUP_PARTS = ("keyed", "timers")
"""The parts of an operator snapshot laid out ``{key_group: ...}``, which a rescale splits by key group."""

OPERATOR_STATE = "operator"
"""The part of an operator snapshot that holds its operator state (``OperatorState.snapshot()``)."""


def install_sinks(graph: PhysicalGraph, sinks: dict) -> None:
    """Put the sink wrappers (``exactly_once.ExactlyOnceSink``...) in front of the sinks of a freshly built graph.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.checkpoints.exactly_once import ExactlyOnceSink
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("counts")
    >>> events = flow.source("events", ScriptedSource([[{"key": "a"}]]))
    >>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    >>> graph = physical_graph(flow, 1, output_mode="update")
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

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum
    >>> from ministream.checkpoints.coordinator import Checkpoint
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("totals")
    >>> events = flow.source("events", ScriptedSource([[{"key": "alice", "value": 1.0}]]))
    >>> events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    >>> checkpoint = Checkpoint(0, "microbatch", "aligned", 1, operators={"totals": {0: {"keyed": {
    ...     38: {"aggregate": {"alice": [1, 1.0]}}, 82: {"aggregate": {"bob": [2, 5.0]}}}}}})
    >>> graph = physical_graph(flow, 2, output_mode="update")
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
        saved = _read_changelogs(graph, step.name, checkpoint.checkpoint_id, saved)
        if len(saved) == len(subtasks):
            for subtask in subtasks:
                subtask.operator.restore(saved[subtask.index], None)
        else:
            old = [saved[index] for index in sorted(saved)]
            shares = split_snapshots([snapshot.get(OPERATOR_STATE, {}) for snapshot in old], len(subtasks))
            merged = merge_snapshots(step.name, [_without_operator_state(snapshot) for snapshot in old])
            has_operator_state = any(OPERATOR_STATE in snapshot for snapshot in old)
            for subtask in subtasks:
                share = copy_value(merged)
                if has_operator_state:
                    share[OPERATOR_STATE] = shares[subtask.index]
                subtask.operator.restore(share, key_group_range(subtask.index, len(subtasks)))
        if checkpoint.model == "continuous":
            _restore_watermarks(step.name, subtasks, checkpoint.subtasks)


def _without_operator_state(snapshot: dict) -> dict:
    return {part: value for part, value in snapshot.items() if part != OPERATOR_STATE}


def _read_changelogs(graph: PhysicalGraph, step: str, checkpoint_id: int, saved: dict) -> dict:
    """The step's snapshots with every changelog position replaced by the state it stands for; each new
    subtask's log then goes on after the last version restored."""
    backends = graph.state_backends
    storage = backends.storage if isinstance(backends, ChangelogBackends) else None
    resolved, versions = {}, []
    for index, snapshot in saved.items():
        if storage is None:
            if _holds_position(snapshot):
                raise PipelineError(
                    f"checkpoint {checkpoint_id} keeps the keyed state of step {step!r} in changelogs: restore it "
                    "with the ChangelogBackends (state_backend=...) that wrote them"
                )
            return saved
        resolved[index], found = resolve_positions(snapshot, storage)
        versions += [position.version for position in found]
    for subtask in graph.by_step[step]:
        state = subtask.operator.ctx.state
        if versions and state is not None and state.changelog is not None:
            state.changelog.restored(max(versions))
    return resolved


def _holds_position(value) -> bool:
    if isinstance(value, LogPosition):
        return True
    return isinstance(value, dict) and any(_holds_position(item) for item in value.values())


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
            _set_valve(
                subtask,
                first,
                lambda position, valve, subtask=subtask, by_input=by_input: by_input[subtask.inputs[position][0]],
            )


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
