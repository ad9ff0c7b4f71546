"""Incremental checkpoints: write only the keys that changed since the previous checkpoint.

A full checkpoint of a million keys writes a million entries, even when ten of them changed. An
*incremental* checkpoint writes a **delta**: per subtask, the entries written and the keys removed since
that subtask's previous snapshot (a :class:`StateDelta`). Its cost follows the keys that changed, not the
size of the state. Every few checkpoints a **full** one comes again, so that a restore never has a long chain
to replay. This is the model of Spark's HDFS-backed state store:

- Spark writes ``state/<operator>/<partition>/<version>.delta`` at every batch: the keys the batch updated
  and removed; every ``spark.sql.streaming.stateStore.minDeltasForSnapshot`` deltas (10 by default) its
  maintenance task also writes a ``<version>.snapshot`` with the whole partition;
- ministream writes, in each checkpoint's file ``chk-<n>``, a part ``state/<step>/<subtask>.delta.json``
  built on checkpoint ``n - 1`` (its *base*, named in the manifest), and a full ``<subtask>.json`` every
  ``incremental + 1`` checkpoints (``run_with_recovery(..., incremental=10)``).

A restore reads the newest full checkpoint of the chain and applies the deltas after it, in order
(:func:`resolve`); Spark does the same from the latest snapshot file. Flink's RocksDB backend does it the
other way round: RocksDB already keeps its data in immutable SST files, so an incremental checkpoint uploads
only the SST files that are new since the last one and *shares* the others with earlier checkpoints, counting
references to know when a file may be deleted.

**Knowing what changed.** The keyed state backend (``state/keyed.py``) keeps, per table, the keys marked changed
since the last snapshot. The state primitives (``ValueState``...) mark every write themselves. An operator
that writes a table directly marks what it writes (``KeyedStateBackend.track_changes``; ``RunningAggregate``
does; an operator that builds its table only when a checkpoint is taken may build just the marked keys for a
delta, since :func:`take_delta` reads no other). A table whose writer never said it marks its changes is
written *whole* in every delta: correctness never depends on an operator remembering to mark. Timers are
incremental the same way (``time/timers.py``: each queue marks the keys whose timers were added or removed, and
a delta holds those keys' timers, with each time domain as a table): millions of sessions waiting for a
heartbeat are millions of timers, of which a batch changes a few. The operators' other state (watermarks...)
is small and always written whole. Only a checkpoint's snapshot
(:func:`checkpoint_snapshot`, :func:`snapshot_operator`) is where the marks start again.

>>> from ministream.state.keyed import KeyedStateBackend, ValueState
>>> backend = KeyedStateBackend(); clicks = ValueState(backend, "clicks", default=0)
>>> for user in ("alice", "bob", "carol"):
...     backend.set_current_key(user); clicks.update(1)
>>> full = checkpoint_snapshot(backend)   # checkpoint 1: every key
>>> backend.set_current_key("bob"); clicks.update(2)
>>> backend.set_current_key("carol"); clicks.clear()
>>> delta = checkpoint_snapshot(backend, delta=True); delta   # checkpoint 2: alice not written
StateDelta(tracked=['clicks'], updated={82: {'clicks': {'bob': 2}}}, removed={47: {'clicks': ['carol']}})
>>> apply_delta(full, delta)
{38: {'clicks': {'alice': 1}}, 82: {'clicks': {'bob': 2}}}
"""

from __future__ import annotations

import attrs

from ministream.state.copy_on_write import copy_entries, copy_value
from ministream.state.keygroups import key_group_of


@attrs.define
class StateDelta:
    """What one subtask's keyed state changed since its previous snapshot, laid out by key group like a
    snapshot so that a rescale can still split it.

    Attributes:
        tracked: the tables whose changes were marked; a table not listed is written whole in ``updated``.
        updated: ``{key_group: {state: {key: value}}}``: the entries written since the previous snapshot
            (every entry, for a table not in ``tracked``).
        removed: ``{key_group: {state: [key, ...]}}``: the keys removed since the previous snapshot.
    """

    tracked: list
    updated: dict = attrs.field(factory=dict)
    removed: dict = attrs.field(factory=dict)

    def entries(self) -> int:
        """How many entries the delta writes or removes.

        >>> StateDelta(["t"], {3: {"t": {"a": 1, "b": 2}}}, {5: {"t": ["c"]}}).entries()
        3"""
        return sum(len(entries) for states in self.updated.values() for entries in states.values()) + sum(
            len(keys) for states in self.removed.values() for keys in states.values()
        )


def apply_delta(keyed: dict, delta: StateDelta) -> dict:
    """A snapshot's keyed state ``{key_group: {state: {key: value}}}`` brought forward by one delta: the tables
    the delta did not track replaced by its copy of them, written entries set, removed keys deleted. Changes
    ``keyed`` in place (a restore owns what it decoded) and returns it, in key group order.

    >>> apply_delta({1: {"t": {"a": 1, "b": 2}, "whole": {"x": 0}}},
    ...             StateDelta(["t"], {1: {"t": {"a": 5}}, 2: {"whole": {"y": 1}}}, {1: {"t": ["b"]}}))
    {1: {'t': {'a': 5}}, 2: {'whole': {'y': 1}}}
    """
    tracked = set(delta.tracked)
    for states in keyed.values():
        for name in [name for name in states if name not in tracked]:
            del states[name]  # written whole in the delta, if it still has entries
    for group, states in delta.updated.items():
        for name, entries in states.items():
            keyed.setdefault(group, {}).setdefault(name, {}).update(entries)
    for group, states in delta.removed.items():
        for name, keys in states.items():
            entries = keyed.get(group, {}).get(name, {})
            for key in keys:
                entries.pop(key, None)
    for group in list(keyed):
        for name in [name for name, entries in keyed[group].items() if not entries]:
            del keyed[group][name]
        if not keyed[group]:
            del keyed[group]
    return dict(sorted(keyed.items()))


def take_delta(backend) -> StateDelta:
    """What changed in a ``keyed.KeyedStateBackend`` since its last snapshot: for each table tracked since
    then, the entries of its marked keys and the marked keys that are gone; every other table whole. Like a
    snapshot, it clears the marks: the next delta counts from here. (``backend.snapshot()`` calls it while
    ``backend.checkpointing`` is ``"delta"``.)"""

    updated: dict[int, dict[str, dict]] = {}
    removed: dict[int, dict[str, list]] = {}
    for name in sorted(backend.tracked):
        table = backend.tables.get(name, {})
        shares = backend.sharing or name in backend.copy_on_write  # the snapshot may hold the values themselves
        changed = backend.changes[name]
        if sum(map(len, table.values())) <= len(changed):
            _walk_the_table(name, table, changed, shares, backend.max_parallelism, updated, removed)
            continue
        copy_one = (lambda value: value) if shares else copy_value
        for key in changed:
            group = key_group_of(key, backend.max_parallelism)
            entries = table.get(group, {})
            if key in entries:
                updated.setdefault(group, {}).setdefault(name, {})[key] = copy_one(entries[key])
            else:
                removed.setdefault(group, {}).setdefault(name, []).append(key)
    for name, groups in backend.tables.items():
        if name not in backend.tracked:
            for group, entries in groups.items():
                if entries:
                    updated.setdefault(group, {})[name] = dict(entries) if backend.sharing else copy_entries(entries)
    delta = StateDelta(sorted(backend.tracked), dict(sorted(updated.items())), dict(sorted(removed.items())))
    backend.start_counting()
    return delta


def _walk_the_table(name: str, table: dict, changed: dict, shares: bool, max_parallelism: int, updated, removed):
    """The delta of one table that holds no more entries than keys changed (a window step builds its table of
    the changed keys only, at the checkpoint): walked group by group, a group whose keys all changed taken
    whole in one ``dict()`` call instead of key by key; the changed keys not found are the removed ones."""
    found = 0
    for group, entries in table.items():
        chosen = entries if changed.keys() >= entries.keys() else {k: v for k, v in entries.items() if k in changed}
        if chosen:
            updated.setdefault(group, {})[name] = dict(chosen) if shares else copy_entries(chosen)
            found += len(chosen)
    if found < len(changed):
        for key in changed:
            group = key_group_of(key, max_parallelism)
            if key not in table.get(group, {}):
                removed.setdefault(group, {}).setdefault(name, []).append(key)


def checkpoint_snapshot(backend, delta: bool = False, sharing: bool = False):
    """What a checkpoint takes of one keyed state backend: a full snapshot (from which the backend counts
    changes) or, with ``delta=True``, a :class:`StateDelta` since the last one. ``sharing=True``: the
    checkpoint is written before the state changes again, so the snapshot need not copy values.
    :func:`snapshot_operator` does the same through an operator's ``snapshot()``."""
    backend.checkpointing, backend.sharing = ("delta" if delta else "full"), sharing
    try:
        return backend.snapshot()
    finally:
        backend.checkpointing, backend.sharing = None, False
