"""Incremental checkpoints: a chain of deltas on a full checkpoint, and how a restore reads it.

The keyed state backend knows which keys changed since its last snapshot (``state/changes.py``): that is
what a delta holds. A checkpoint asks each operator for its snapshot, full or as a delta
(:func:`snapshot_operator`); a restore finds the newest full checkpoint of a chain and applies the deltas
after it, in order (:func:`resolve`).
"""

from __future__ import annotations

import attrs

from ministream.checkpoints.serialization import collector_paused
from ministream.state.changes import StateDelta, apply_delta

DELTA_PARTS = ("keyed", "timers")
"""The parts of an operator snapshot that an incremental checkpoint writes as a ``StateDelta``: keyed state
and timers (``time/timers.py``), both laid out ``{key_group: {table: {key: value}}}``."""


def snapshot_operator(operator, delta: bool = False, sharing: bool = False) -> dict:
    """An operator's ``snapshot()`` for a checkpoint: its keyed state is where the backend counts changes
    from; with ``delta=True`` it comes as a :class:`StateDelta`, the rest of the snapshot whole. (The backend's
    ``snapshot()`` does so while ``backend.checkpointing`` is set; the operators need not know.)
    ``sharing=True`` when the checkpoint is written before the state changes again (micro-batch: at the end of
    the batch): the keyed state's values are then not copied (``backend.sharing``).

    >>> from ministream.core.aggregates import Count
    >>> from ministream.operators.aggregate import RunningAggregate
    >>> from ministream.core.operator import StepContext
    >>> counts = RunningAggregate(("key",), {"count": Count()}); counts.open(StepContext.for_testing())
    >>> counts.process([("a", {}), ("b", {})], 0); snapshot_operator(counts)
    {'keyed': {57: {'aggregate': {'b': [1]}}, 122: {'aggregate': {'a': [1]}}}}
    >>> counts.process([("a", {})], 0); snapshot_operator(counts, delta=True)
    {'keyed': StateDelta(tracked=['aggregate'], updated={122: {'aggregate': {'a': [2]}}}, removed={})}
    """
    backend = getattr(getattr(operator, "ctx", None), "state", None)
    with collector_paused():  # a snapshot makes a container per key, all kept: nothing for the collector
        if backend is None:
            return operator.snapshot()
        backend.checkpointing, backend.sharing = ("delta" if delta else "full"), sharing
        try:
            return operator.snapshot()
        finally:
            backend.checkpointing, backend.sharing = None, False


def resolve(chain: list):
    """The full checkpoint that a chain of checkpoints stands for: ``chain`` is a checkpoint and every one it is
    built on, newest first (``coordinator.Checkpoint`` objects, the last one full). Each subtask's keyed state
    and timers are the full one's with every delta applied in order; everything else is the newest
    checkpoint's.

    >>> from ministream.checkpoints.coordinator import Checkpoint
    >>> full = Checkpoint(1, "microbatch", "aligned", 1, operators={"t": {0: {"keyed": {3: {"c": {"a": 1}}}}}})
    >>> newer = Checkpoint(2, "microbatch", "aligned", 1, base=1,
    ...                    operators={"t": {0: {"keyed": StateDelta(["c"], {4: {"c": {"b": 1}}})}}})
    >>> resolve([newer, full]).operators
    {'t': {0: {'keyed': {3: {'c': {'a': 1}}, 4: {'c': {'b': 1}}}}}}
    """
    *deltas, full = chain
    if full.base is not None:
        raise ValueError(f"checkpoint {full.checkpoint_id} is incremental: the chain does not end on a full one")
    operators = full.operators
    for checkpoint in reversed(deltas):
        if checkpoint.parallelism != full.parallelism:
            raise ValueError(
                f"checkpoint {checkpoint.checkpoint_id} (parallelism {checkpoint.parallelism}) is "
                f"built on one of parallelism {full.parallelism}: deltas apply subtask by subtask"
            )
        newer: dict = {}
        for step, snapshots in checkpoint.operators.items():
            for index, snapshot in snapshots.items():
                for part in DELTA_PARTS:
                    if isinstance(snapshot.get(part), StateDelta):
                        before = operators.get(step, {}).get(index, {}).get(part, {})
                        snapshot = {**snapshot, part: apply_delta(before, snapshot[part])}
                newer.setdefault(step, {})[index] = snapshot
        operators = newer
    return attrs.evolve(chain[0], base=None, operators=operators)
