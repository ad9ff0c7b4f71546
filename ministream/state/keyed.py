"""Keyed state: values that an operator keeps per key, stored per key group.

A keyed step sees one key at a time. Its state primitives are *scoped to the current key*: ``count.value()``
reads the count of whatever key the step is processing now, as in Flink's and Spark's keyed state. Under the
hood every state lives in one :class:`KeyedStateBackend` per subtask, laid out by key group so that a
checkpoint can hand each key group to whichever subtask owns it after a rescale (see ``keygroups``).

Five primitives:

- :class:`ValueState`: one value per key;
- :class:`ListState`: a list per key;
- :class:`MapState`: a dict per key;
- :class:`ReducingState`: one value per key, folded with a function as values are added;
- :class:`AggregatingState`: an accumulator per key with ``create``/``add``/``result`` (an :class:`Aggregate`).

A list holds no null element and is never set empty, and a dict has no null key or value: Spark's state
refuses them (``ILLEGAL_STATE_STORE_VALUE.NULL_VALUE``, ``.EMPTY_LIST_VALUE``; TransformWithListStateSuite and
TransformWithMapStateSuite), and so do :class:`ListState` and :class:`MapState` (:func:`refuse_null`).

>>> backend = KeyedStateBackend()
>>> clicks = ValueState(backend, "clicks", default=0)
>>> backend.set_current_key("alice")
>>> clicks.update(clicks.value() + 1)
>>> backend.set_current_key("bob")
>>> clicks.value()
0
>>> backend.set_current_key("alice")
>>> clicks.value()
1
>>> backend.snapshot()
{38: {'clicks': {'alice': 1}}}

**Snapshots and changes.** A snapshot copies only what can change (``state/copy_on_write.py``). The backend keeps
the keys changed since the last checkpoint, which an incremental checkpoint writes (``state/changes.py``): the
primitives mark their writes (and reads that hand out a list or a dict, which the caller may change in place);
an operator that writes a table directly marks what it writes (:meth:`KeyedStateBackend.track_changes`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from ministream.errors import PipelineError
from ministream.state.changes import StateDelta, take_delta
from ministream.state.copy_on_write import ATOMS, copy_entries, is_frozen
from ministream.state.keygroups import MAX_PARALLELISM, key_group_of

_MISSING = object()


class KeyedStateBackend:
    """The store behind every keyed state of one subtask: tables of ``{key: value}`` per key group.

    Layout: ``self.tables[state_name][key_group][key] = value``. The current key is set by the operator
    before it calls user code; the state primitives read and write under that key.

    Changes: ``self.changes[state_name] = {key: None}``, the keys written or removed since the last snapshot
    in the tables whose writers mark them (:meth:`track_changes`); ``self.tracked``: the tables marked since
    the last snapshot began; ``self.copy_on_write``: the tables whose writers copy a value before changing it.

    Checkpoints: ``self.checkpointing`` is ``"full"`` or ``"delta"`` while a checkpoint takes the snapshot;
    ``self.sharing`` is true when that checkpoint is written before the state changes again (a micro-batch
    checkpoint, written at the end of its batch): its snapshot may then share every value with the state.
    """

    def __init__(self, max_parallelism: int = MAX_PARALLELISM):
        self.max_parallelism = max_parallelism
        # a key's group: asked of the cache with the key alone when the number of groups is the default (twice
        # as quick as with the number too), the choice made once rather than at every set_current_key
        self._key_group_of = (
            key_group_of
            if max_parallelism == MAX_PARALLELISM
            else partial(key_group_of, max_parallelism=max_parallelism)
        )
        # {state_name: {key_group: {key: value}}}
        self.tables: dict[str, dict[int, dict]] = {}
        self.current_key = None
        self._current_group = 0  # the key group of current_key (set_current_key sets both)
        self.changes: dict[str, dict] = {}  # {state_name: {key: None}}, in the order keys changed
        self.tracked: set[str] = set()
        self.copy_on_write: set[str] = set()
        self.checkpointing = None  # "full" or "delta" while a checkpoint takes its snapshot (state/changes.py)
        self.sharing = False  # while a checkpoint written before the state changes again takes its snapshot
        self.changelog: Any = None  # in changelog mode, the subtask's changelog.SubtaskChangelog

    writes_back = False
    """Whether the tables live elsewhere and must be written back by :meth:`flush` (``state/stored.py``)."""

    def flush(self) -> None:
        """Write the batch's changes to where the state lives: nothing to do here, where the tables are the
        state (a store-backed backend writes its working set back: ``state/stored.py``)."""

    def close(self) -> None:
        """Release what the state holds outside the process (nothing, in memory)."""

    def set_current_key(self, key) -> None:
        """Scope every state primitive to ``key`` until the next call."""
        self.current_key = key
        self._current_group = self._key_group_of(key)

    def table(self, name: str) -> dict[int, dict]:
        """The per-key-group table of one state, created empty on first use."""
        return self.tables.setdefault(name, {})

    def track_changes(self, name: str, copy_on_write: bool = False) -> dict:
        """Promise to mark every change of table ``name``; returns the ``{key: None}`` dict to mark keys in.
        An incremental checkpoint then writes only the marked keys of the table (and the whole table until
        the first snapshot after this call).

        ``copy_on_write=True`` promises more: a value whose key is not marked yet is never changed in place,
        but copied, changed and put back, then marked (Flink's copy-on-write state map does this). A
        snapshot may then share the table's values instead of copying them: one ``dict()`` call per key group.
        Only a counted checkpoint shares them, and the table is tracked from then on, so the promise need hold
        only while :meth:`reads_marks` (a writer may change values in place before that; values restored from
        a snapshot are shared with it, and the writer copies them first).

        >>> backend = KeyedStateBackend(); changed = backend.track_changes("totals")
        >>> backend.table("totals").setdefault(key_group_of("a"), {})["a"] = 5; changed["a"] = None
        >>> backend.snapshot(); backend.changes           # a snapshot for no checkpoint: the marks stay
        {122: {'totals': {'a': 5}}}
        {'totals': {'a': None}}
        >>> backend.checkpointing = "full"; _ = backend.snapshot(); backend.changes
        {'totals': {}}
        """
        if copy_on_write:
            self.copy_on_write.add(name)
        return self.changes.setdefault(name, {})

    def reads_marks(self, name: str) -> bool:
        """Whether anything will read the marks of table ``name``: a checkpoint that counts its changes (the
        table is tracked since the last snapshot), or a changelog, which records them at every checkpoint. A
        writer that marks whole batches of keys may skip marking while nothing will (the marks would only be
        cleared at the end of the batch: :meth:`forget_untracked_changes`).

        >>> backend = KeyedStateBackend(); _ = backend.track_changes("seen"); backend.reads_marks("seen")
        False
        >>> backend.checkpointing = "full"; _ = backend.snapshot(); backend.reads_marks("seen")
        True
        """
        return name in self.tracked or self.changelog is not None

    def reads_only_marked(self, name: str) -> bool:
        """Whether the snapshot being taken reads only the marked keys of table ``name``: an incremental
        checkpoint, of a table tracked since the last one (a changelog's checkpoints also materialise the
        whole state now and then: they read every key). An operator that builds the table only for a snapshot
        may then build just the marked keys.

        >>> backend = KeyedStateBackend(); _ = backend.track_changes("seen"); backend.tracked = {"seen"}
        >>> backend.checkpointing = "delta"; backend.reads_only_marked("seen"), backend.reads_only_marked("other")
        (True, False)
        """
        return self.checkpointing == "delta" and self.changelog is None and name in self.tracked

    def mark_changed(self, name: str) -> None:
        """Mark the current key of table ``name`` changed (nothing happens if the table is not tracked)."""
        changes = self.changes.get(name)
        if changes is not None:
            changes[self.current_key] = None

    def get(self, name: str, default=None):
        """The current key's value of state ``name``, or ``default``."""
        table = self.tables.get(name)
        group = table.get(self._current_group) if table is not None else None
        if group is None:
            return default
        return group.get(self.current_key, default)

    def put(self, name: str, value) -> None:
        """Set the current key's value of state ``name``. (A handler calls it for every key of a batch: it
        reaches the table and the marks directly, without calling :meth:`table` and :meth:`mark_changed`.)"""
        table = self.tables.get(name)
        if table is None:
            table = self.table(name)
        group = table.get(self._current_group)
        if group is None:
            group = table[self._current_group] = {}
        group[self.current_key] = value
        changes = self.changes.get(name)
        if changes is not None:
            changes[self.current_key] = None

    def remove(self, name: str) -> None:
        """Remove the current key's value of state ``name`` (nothing happens if there is none)."""
        table = self.tables.get(name)
        group = None if table is None else table.get(self._current_group)
        if table is not None and group is not None:
            group.pop(self.current_key, None)
            changes = self.changes.get(name)
            if changes is not None:
                changes[self.current_key] = None
            if not group:
                del table[self._current_group]

    def keys(self, name: str) -> list:
        """Every key that has a value in state ``name``, in a stable order (by key group, then insertion)."""
        return [key for group in sorted(self.tables.get(name, {})) for key in self.tables[name][group]]

    def size(self, name: str | None = None) -> int:
        """How many (key, value) entries state ``name`` holds, or all states together."""
        names = [name] if name is not None else list(self.tables)
        return sum(len(group) for n in names for group in self.tables.get(n, {}).values())

    def snapshot(self, key_groups=None) -> dict[int, dict[str, dict]] | StateDelta:
        """A copy of the state, laid out by key group first: ``{key_group: {state_name: {key: value}}}``.

        Laid out this way a snapshot can be split by key group and handed to other subtasks on restore. One
        that a checkpoint takes (``self.checkpointing``) is where changes are counted from: the marks are
        cleared and copy-on-write values shared; a delta checkpoint gets ``changes.take_delta`` instead. In
        changelog mode a checkpoint gets a ``changelog.LogPosition``: the writes go to the log, not into the
        checkpoint.
        """
        if self.checkpointing is not None and self.changelog is not None:
            return self.changelog.checkpoint(self)
        if self.checkpointing == "delta":
            return take_delta(self)
        counting = self.checkpointing == "full" and key_groups is None
        out: dict[int, dict[str, dict]] = {}
        for name, groups in self.tables.items():
            shares = self.sharing or name in self.copy_on_write
            copy_table = dict if counting and shares else copy_entries
            for group, entries in groups.items():
                if entries and (key_groups is None or group in key_groups):
                    out.setdefault(group, {})[name] = copy_table(entries)
        if counting:
            self.start_counting()
        return dict(sorted(out.items()))

    def start_counting(self) -> None:
        """A snapshot (or a delta) was taken: clear the marks; every table tracked now counts from here."""
        for changes in self.changes.values():
            changes.clear()
        self.tracked = set(self.changes)

    def forget_untracked_changes(self) -> None:
        """Clear the marks of the tables that no checkpoint counts changes from (those not in ``self.tracked``):
        a delta writes such a table whole and never reads its marks. Called after every micro-batch, it keeps
        them from growing with every key ever written until a first checkpoint, which may never come. A
        copy-on-write table then copies a value again at its first change, as after a snapshot: more copies,
        never fewer. (Not in changelog mode: its first record after a restore reads the marks since.)

        >>> backend = KeyedStateBackend(); changed = backend.track_changes("seen"); changed["a"] = None
        >>> backend.forget_untracked_changes(); backend.changes
        {'seen': {}}
        >>> changed["b"] = None; backend.tracked = {"seen"}; backend.forget_untracked_changes(); backend.changes
        {'seen': {'b': None}}
        """
        if self.changelog is not None:
            return
        for name, changes in self.changes.items():
            if name not in self.tracked:
                changes.clear()

    def restore(self, snapshot: dict[int, dict[str, dict]], key_groups=None) -> None:
        """Load the key groups of a snapshot that this subtask owns (``key_groups``; all when ``None``).

        The restored state is no snapshot of this backend: until the next one, no table counts as tracked
        (a delta would write them whole), and copy-on-write tables share values with ``snapshot`` safely."""
        for group, states in snapshot.items():
            if key_groups is not None and group not in key_groups:
                continue
            for name, entries in states.items():
                self.table(name)[group] = dict(entries) if name in self.copy_on_write else copy_entries(entries)
        self.start_counting()
        self.tracked = set()  # the marks were cleared, but no checkpoint counts from the restored state


class _KeyedState:
    """Shared plumbing: a named state in a backend, read and written under the backend's current key."""

    marks_every_change = False
    """Set in a class's *own* body when every change it makes goes through ``put``, ``remove`` or
    ``mark_changed``: its table is then tracked for incremental checkpoints. A subclass is not trusted by
    inheritance, since it may change the table some other way (``state/ttl.py``'s cleanup deletes entries itself):
    until it says so too, its table is written whole in every incremental checkpoint."""

    def __init__(self, backend: KeyedStateBackend, name: str):
        self.backend = backend
        self.name = name
        if type(self).__dict__.get("marks_every_change", False):
            backend.track_changes(name)

    def _handing_out(self, *values) -> None:
        """The caller gets these stored values: one that can change in place (a list, a dict) counts as a
        change of the current key, since the caller may change it without writing it back."""
        if not all(map(is_frozen, values)):
            self.backend.mark_changed(self.name)

    def clear(self) -> None:
        """Forget the current key's value."""
        self.backend.remove(self.name)

    def exists(self) -> bool:
        """Whether the current key has a value."""
        return self.backend.get(self.name, _MISSING) is not _MISSING


class ValueState(_KeyedState):
    """One value per key.

    >>> backend = KeyedStateBackend(); backend.set_current_key("k")
    >>> last_seen = ValueState(backend, "last_seen")
    >>> last_seen.value() is None, last_seen.exists()
    (True, False)
    >>> last_seen.update(42); last_seen.value()
    42
    """

    marks_every_change = True

    def __init__(self, backend: KeyedStateBackend, name: str, default=None):
        super().__init__(backend, name)
        self.default = default

    def value(self):
        """The current key's value, or the default when it has none."""
        # backend.get written out: a handler reads its values millions of times
        backend = self.backend
        table = backend.tables.get(self.name)
        group = None if table is None else table.get(backend._current_group)
        value = self.default if group is None else group.get(backend.current_key, self.default)
        if type(value) not in ATOMS and not is_frozen(value):  # a list or a dict the caller may change in place:
            backend.mark_changed(self.name)  # a change of the key (ATOMS first: a count needs no call)
        return value

    def update(self, value) -> None:
        """Replace the current key's value."""
        # backend.put written out, as value() is: a handler writes its values millions of times
        backend = self.backend
        table = backend.tables.get(self.name)
        group = None if table is None else table.get(backend._current_group)
        if group is None:
            backend.put(self.name, value)  # the first value of the key group: put creates the table or group
            return
        group[backend.current_key] = value
        changes = backend.changes.get(self.name)
        if changes is not None:
            changes[backend.current_key] = None


def refuse_null(name: str, value, what: str = "value") -> None:
    """Refuse a null value for state ``name``, as Spark's state does: a list element, a list, a map key or value.

    >>> refuse_null("seen", None, "list element")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: state 'seen': a list element may not be None (Spark: ILLEGAL_STATE_STORE_VALUE.NULL_VALUE)
    """
    if value is None:
        raise PipelineError(f"state {name!r}: a {what} may not be None (Spark: ILLEGAL_STATE_STORE_VALUE.NULL_VALUE)")


def checked_list(name: str, values) -> list:
    """``values`` as a list for state ``name``, refused as Spark refuses it: ``None``, empty (clear the state
    instead: Spark's ``EMPTY_LIST_VALUE``), or holding a ``None``.

    >>> checked_list("seen", ("a", "b"))
    ['a', 'b']
    >>> checked_list("seen", [])
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: state 'seen': a list state is never set to an empty list: call clear() to empty it (Spark: ILLEGAL_STATE_STORE_VALUE.EMPTY_LIST_VALUE)
    """
    refuse_null(name, values, "list")
    values = list(values)
    if not values:
        raise PipelineError(
            f"state {name!r}: a list state is never set to an empty list: call clear() to empty it "
            "(Spark: ILLEGAL_STATE_STORE_VALUE.EMPTY_LIST_VALUE)"
        )
    for value in values:
        refuse_null(name, value, "list element")
    return values


class ListState(_KeyedState):
    """A list per key (Spark's ``ListState``: ``add`` is its ``appendValue``, ``add_all`` its ``appendList``,
    ``update`` its ``put``), with no ``None`` in it and never set empty (:func:`checked_list`).

    >>> backend = KeyedStateBackend(); backend.set_current_key("k")
    >>> seen = ListState(backend, "seen")
    >>> seen.add("a"); seen.add_all(["b", "c"]); seen.get()
    ['a', 'b', 'c']
    """

    marks_every_change = True

    def get(self) -> list:
        """The current key's list (a copy; empty when it has none)."""
        items = list(self.backend.get(self.name, ()))
        self._handing_out(*items)
        return items

    def add(self, value) -> None:
        """Append one value to the current key's list."""
        refuse_null(self.name, value, "list element")
        items = self.backend.get(self.name)
        if items is None:
            self.backend.put(self.name, [value])
        else:
            items.append(value)
            self.backend.mark_changed(self.name)

    def add_all(self, values) -> None:
        """Append several values to the current key's list, in order."""
        values = checked_list(self.name, values)
        items = self.backend.get(self.name)
        if items is None:
            self.backend.put(self.name, values)
        else:
            items += values
            self.backend.mark_changed(self.name)

    def update(self, values) -> None:
        """Replace the current key's list."""
        self.backend.put(self.name, checked_list(self.name, values))


class MapState(_KeyedState):
    """A dict per key: for example, per device, the open sessions by session id. A map key or value is never
    ``None`` (:func:`refuse_null`).

    >>> backend = KeyedStateBackend(); backend.set_current_key("device-1")
    >>> sessions = MapState(backend, "sessions")
    >>> sessions.put("s1", 3); sessions.put("s2", 5); sessions.get("s1"), sorted(sessions.keys())
    (3, ['s1', 's2'])
    >>> sessions.remove("s1"); sessions.items()
    [('s2', 5)]
    """

    marks_every_change = True

    def _map(self) -> dict | None:
        """The current key's dict, ``None`` when it has none."""
        return self.backend.get(self.name)

    def _writable_map(self) -> dict:
        """The current key's dict, created empty when it has none."""
        found = self.backend.get(self.name)
        if found is None:
            found = {}
            self.backend.put(self.name, found)
        return found

    def get(self, map_key, default=None):
        """The value under ``map_key`` in the current key's dict."""
        refuse_null(self.name, map_key, "map key")
        value = (self._map() or {}).get(map_key, default)
        self._handing_out(value)
        return value

    def put(self, map_key, value) -> None:
        """Set ``map_key`` in the current key's dict."""
        refuse_null(self.name, map_key, "map key")
        refuse_null(self.name, value, "map value")
        self._writable_map()[map_key] = value
        self.backend.mark_changed(self.name)

    def contains(self, map_key) -> bool:
        """Whether the current key's dict has ``map_key``."""
        refuse_null(self.name, map_key, "map key")
        return map_key in (self._map() or {})

    def remove(self, map_key) -> None:
        """Delete ``map_key`` from the current key's dict; an empty dict is removed."""
        refuse_null(self.name, map_key, "map key")
        found = self._map()
        if found is not None:
            found.pop(map_key, None)
            self.backend.mark_changed(self.name)
            if not found:
                self.clear()

    def keys(self) -> list:
        """The map keys of the current key, in insertion order."""
        return list(self._map() or {})

    def items(self) -> list[tuple]:
        """The (map key, value) pairs of the current key, in insertion order."""
        pairs = list((self._map() or {}).items())
        self._handing_out(*(value for _, value in pairs))
        return pairs


class ReducingState(_KeyedState):
    """One value per key, combined with ``reduce(old, new)`` as values are added.

    >>> backend = KeyedStateBackend(); backend.set_current_key("k")
    >>> biggest = ReducingState(backend, "biggest", max)
    >>> for v in (3, 9, 4): biggest.add(v)
    >>> biggest.get()
    9
    """

    marks_every_change = True

    def __init__(self, backend: KeyedStateBackend, name: str, reduce: Callable[[Any, Any], Any]):
        super().__init__(backend, name)
        self.reduce = reduce

    def get(self):
        """The reduced value of the current key, or ``None`` when nothing was added."""
        value = self.backend.get(self.name)
        self._handing_out(value)
        return value

    def add(self, value) -> None:
        """Fold one value into the current key's reduced value."""
        old = self.backend.get(self.name, _MISSING)
        self.backend.put(self.name, value if old is _MISSING else self.reduce(old, value))


@attrs.frozen
class Aggregate:
    """An aggregate function in three parts: ``create()`` an accumulator, ``add(acc, value)`` returns the
    new accumulator, ``result(acc)`` reads the answer. ``merge(a, b)`` combines two accumulators (used to merge
    session windows).

    >>> mean = Aggregate(create=lambda: (0, 0), add=lambda acc, v: (acc[0] + v, acc[1] + 1),
    ...                  result=lambda acc: acc[0] / acc[1], merge=lambda a, b: (a[0] + b[0], a[1] + b[1]))
    >>> acc = mean.create()
    >>> for v in (1, 2, 6): acc = mean.add(acc, v)
    >>> mean.result(acc)
    3.0
    """

    create: Callable[[], Any]
    add: Callable[[Any, Any], Any]
    result: Callable[[Any], Any]
    merge: Callable[[Any, Any], Any] | None = None


class AggregatingState(_KeyedState):
    """An accumulator per key, driven by an :class:`Aggregate`.

    >>> backend = KeyedStateBackend(); backend.set_current_key("k")
    >>> total = AggregatingState(backend, "total", Aggregate(lambda: 0, lambda a, v: a + v, lambda a: a))
    >>> total.add(2); total.add(5); total.get()
    7
    """

    marks_every_change = True

    def __init__(self, backend: KeyedStateBackend, name: str, aggregate: Aggregate):
        super().__init__(backend, name)
        self.aggregate = aggregate

    def get(self):
        """The aggregate's result for the current key, or ``None`` when nothing was added."""
        acc = self.backend.get(self.name, _MISSING)
        result = None if acc is _MISSING else self.aggregate.result(acc)
        self._handing_out(result)
        return result

    def add(self, value) -> None:
        """Add one value to the current key's accumulator."""
        acc = self.backend.get(self.name, _MISSING)
        if acc is _MISSING:
            acc = self.aggregate.create()
        self.backend.put(self.name, self.aggregate.add(acc, value))
