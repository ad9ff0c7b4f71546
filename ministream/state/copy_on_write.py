"""Copy on write: how a snapshot copies a million keys of state without copying a million values.

A checkpoint's snapshot must be a *copy*: the operator goes on changing its state while the checkpoint is
written (in the continuous model, other subtasks have not even taken their snapshots yet). ``copy.deepcopy``
copies everything, visiting each value in Python with a memo of what it copied; a million accumulators take
seconds. Two ways to copy less:

1. **copy only what can change** (:func:`copy_entries`, :func:`copy_value`): numbers, strings and tuples of
   them never change, so a table of them is copied with one ``dict()`` call and its values are shared; a table
   of lists of numbers and strings gets a slice per value; only other values are walked one by one;
2. **copy on write**: a writer that never changes a value that a snapshot may hold lets every snapshot share
   all its values. It keeps the keys it changed since the last snapshot (it marks them for incremental
   checkpoints anyway: ``KeyedStateBackend.track_changes``); a value whose key is not marked yet may be in
   the last snapshot, so the writer copies it, changes the copy, puts it back and marks the key; later
   writes before the next snapshot change the copy in place. Flink's heap state backend does the same with a
   version number per entry (``CopyOnWriteStateMap``); ``aggregate.RunningAggregate`` does it here.

>>> from ministream.state.changes import checkpoint_snapshot
>>> from ministream.state.keyed import KeyedStateBackend
>>> backend = KeyedStateBackend()
>>> table, changed = backend.table("totals"), backend.track_changes("totals", copy_on_write=True)
>>> table[122] = {"a": [1]}; changed["a"] = None    # key "a" lives in key group 122
>>> snapshot = checkpoint_snapshot(backend)       # shares the list [1] with the table, clears the marks
>>> if "a" not in changed:                        # the writer: copy before changing, once per snapshot
...     table[122]["a"] = list(table[122]["a"]); changed["a"] = None
>>> table[122]["a"][0] += 1; snapshot, table
({122: {'totals': {'a': [1]}}}, {122: {'a': [2]}})
"""

from __future__ import annotations

import copy
from collections import deque

ATOMS = frozenset({str, int, float, bool, bytes, type(None)})
"""The types whose values never change in place: a value of one of them is frozen."""


def is_frozen(value) -> bool:
    """Whether nothing in a value can change in place: a number, a string, ``None``, or a tuple of those.

    >>> is_frozen((1, "a", None)), is_frozen((1, [2]))
    (True, False)"""
    kind = type(value)
    if kind in ATOMS:
        return True
    if kind is not tuple:
        return False
    # A map state hands out millions of small tuples of numbers: the types of a flat tuple are tested in C
    # (frozenset.issuperset walks the map), and only a tuple that holds other things is walked in Python.
    return ATOMS.issuperset(map(type, value)) or all(map(is_frozen, value))


def copy_value(value):
    """A copy of one value that shares nothing that can change with it: what ``copy.deepcopy`` does, without
    its bookkeeping, for the types state is made of (other objects do go through ``copy.deepcopy``).

    >>> window = {(0, 10): [2, 5.0]}; copied = copy_value(window); copied[(0, 10)].append(1); window
    {(0, 10): [2, 5.0]}"""
    kind = type(value)
    if kind in ATOMS:
        return value
    if kind is list:
        return [copy_value(item) for item in value]
    if kind is dict:
        return {key: copy_value(item) for key, item in value.items()}
    if kind is tuple:
        return value if is_frozen(value) else tuple(copy_value(item) for item in value)
    if kind in (set, frozenset):
        return kind(value)  # their elements are hashable, and so do not change
    return copy.deepcopy(value)


def copy_entries(entries: dict) -> dict:
    """A copy of a table's ``{key: value}`` for a snapshot, by the types it holds: frozen values are shared
    (one ``dict()`` call for the table), lists of numbers are sliced, anything else goes through
    :func:`copy_value`.

    >>> counts = {"a": [1], "b": [2]}; copied = copy_entries(counts); copied["a"].append(9); counts
    {'a': [1], 'b': [2]}"""
    kinds = set(map(type, entries.values()))
    if kinds <= ATOMS:
        return dict(entries)
    if kinds == {list} and all(set(map(type, value)) <= ATOMS for value in entries.values()):
        return {key: value[:] for key, value in entries.items()}
    return {key: copy_value(value) for key, value in entries.items()}


def copy_accumulators(entries: dict) -> dict:
    """A copy of a ``{key: [accumulator per aggregate]}`` table (a window's), each list copied: sliced when
    every accumulator in it is frozen (counts, sums: the common case, found by one look at the types present),
    else through :func:`copy_value`.

    >>> counts = {"a": [1], "b": [2.0]}; copied = copy_accumulators(counts); copied["a"][0] += 1; counts
    {'a': [1], 'b': [2.0]}"""
    items: list = []
    deque(map(items.extend, entries.values()), maxlen=0)  # every accumulator, gathered by C calls
    if ATOMS.issuperset(map(type, items)):
        return {key: accumulators[:] for key, accumulators in entries.items()}
    return {key: copy_value(accumulators) for key, accumulators in entries.items()}
