"""Window state: the accumulators of a windowed aggregate, one per (window, key), laid out the way they are read.

A windowed aggregate keeps, for every key and every window of that key that is still open, one accumulator per
aggregate function, in a tuple (a fold makes a new one). Two ways of reading that state matter, and each layout
serves one:

- **by window** (:class:`WindowsByWindow`, tumbling and sliding windows): the watermark closes a window for every
  key at once, so eviction takes whole windows, ``{window: {key: accumulators}}``, and never looks at the others;
- **by key** (:class:`WindowsByKey`, session windows): a row's session depends on the other sessions *of its key*,
  which must be found quickly, ``{key: [(start, end, accumulators), ...]}`` sorted by start.

Neither layout is split by key group while the query runs. A checkpoint needs the state by key group (so that
it can be handed to other subtasks after a rescale, see ``keygroups``), and :meth:`by_key_group` builds that
layout when a snapshot is taken: a cost paid per checkpoint, not per row. Flink's window operator does the
same with a different split: its keyed state holds ``(key, window) -> accumulator`` per key group, and timers
(one per window end) find the windows to close.

Once a checkpoint has been taken (:meth:`count_changes`), each layout also remembers, in ``changed``, the keys
that changed since, for an incremental checkpoint (``state/changes.py``) to write again or write as removed:
the keys of the windows it closes, and the keys its writer marks (the window step marks each row's key).

>>> state = WindowsByWindow()
>>> state.keys_of((0, 10))["a"] = (1,)
>>> state.keys_of((0, 10))["b"] = (2,)
>>> state.keys_of((10, 20))["a"] = (3,)
>>> state.size(), state.take_final(10)
(3, [((0, 10), {'a': (1,), 'b': (2,)})])
>>> state.by_key_group()
{122: {'a': {(10, 20): (3,)}}}
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from heapq import heappop, heappush
from itertools import count
from operator import itemgetter

from ministream.state.copy_on_write import copy_accumulators
from ministream.state.keygroups import key_group_of
from ministream.time.windows import touches


class ChangedKeys:
    """What both layouts remember for incremental checkpoints: ``self.changed``, ``{key: None}`` of the keys
    changed since the last checkpoint (``None`` until there was one)."""

    changed: dict | None = None

    def count_changes(self) -> None:
        """A checkpoint was taken: from now on, remember the keys that change, until the next one."""
        self.changed = {}

    def changed_keys(self) -> list:
        """The keys marked or closed since the last checkpoint, in the order they changed."""
        return list(self.changed or ())

    def _mark(self, key) -> None:
        if self.changed is not None:
            self.changed[key] = None


class WindowsByWindow(ChangedKeys):
    """``self.windows[(start, end)][key] = (accumulator per aggregate)``: windows in the order they opened,
    the keys of each in the order they came. The accumulators are a tuple that each fold replaces
    (``aggregates.tuple_table_folder``): a tuple of plain values is dropped from the garbage collector's
    sight after its first pass, so a state of many (key, window) pairs adds nothing to a full collection."""

    def __init__(self):
        self.windows: dict[tuple[int, int], dict] = {}

    def keys_of(self, window) -> dict:
        """The ``{key: accumulators}`` table of one window, made empty the first time."""
        by_key = self.windows.get(window)
        if by_key is None:
            by_key = self.windows[window] = {}
        return by_key

    def get(self, key, window):
        """The accumulators of ``(key, window)``; ``KeyError`` when there are none."""
        return self.windows[window][key]

    def items(self) -> list[tuple]:
        """Every window with the accumulators of its keys: ``[(window, {key: accumulators})]``."""
        return list(self.windows.items())

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        """Remove every window with ``end + lateness <= watermark``; return them as :meth:`items` does."""
        final = [window for window in self.windows if window[1] + lateness <= watermark]
        final = [(window, self.windows.pop(window)) for window in final]
        if self.changed is not None:
            for _, by_key in final:
                self.changed.update(dict.fromkeys(by_key))
        return final

    def size(self) -> int:
        """How many (key, window) accumulators there are."""
        return sum(map(len, self.windows.values()))

    def by_key_group(self, keys: list | None = None, copy: bool = False) -> dict:
        """The checkpoint's layout: ``{key_group: {key: {window: accumulators}}}``, key groups in order; of
        ``keys`` only, when given (a key without windows is left out). The accumulators are the state's own
        tuples, which a fold replaces and never changes, so a checkpoint written at once can share them; with
        ``copy=True`` they are copied as lists (``copy_on_write.copy_accumulators``: an accumulator that is not a
        plain value is copied too), which the state goes on without.

        Built key by key first, then split by key group: a key's group is looked up once, not once per window.
        A window all of whose keys are wanted (every key changed, as in most batches) is walked as it is."""
        wanted = None if keys is None else set(keys)
        windows_of: defaultdict = defaultdict(dict)  # {key: {window: accumulators}}
        for window, by_key in self.windows.items():
            if wanted is not None and not wanted.issuperset(by_key):
                by_key = {key: by_key[key] for key in by_key.keys() & wanted}
            for key, accumulators in by_key.items():
                windows_of[key][window] = accumulators
        groups: dict = {}
        for key, by_window in windows_of.items():
            groups.setdefault(key_group_of(key), {})[key] = _copied(by_window) if copy else by_window
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it)."""
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.windows.setdefault(tuple(window), {})[key] = tuple(accumulators)


class WindowsByKey(ChangedKeys):
    """The sessions of each key in a list sorted by start, and a heap that says which key's first session
    ends first.

    ``self.sessions[key] = [(start, end, accumulators), ...]``, ``accumulators`` a tuple, one per aggregate
    (``aggregates.row_folder``: folding a row makes a new one). A session is a tuple of plain values: the
    garbage collector stops walking it after its first pass, so the sessions a large batch holds cost no
    collection. A key's sessions never overlap or touch, so sorted by start they are sorted by end too, and

    - a row after the key's last session (rows mostly come in time order) appends a session: O(1);
    - the sessions a new ``[start, end)`` touches are next to each other: a binary search finds the last one
      that starts at or before ``end``, the walk back stops at the first one that ends before ``start``:
      O(log n + touched) for n sessions of the key;
    - the sessions the watermark closes are at the front of each list: a slice takes them.

    ``self.by_end``, a heap of ``(end, n, key)``, holds one entry per key: the end of the key's first session
    when the entry was pushed (``n`` counts the entries pushed, so that two entries with the same end never
    compare their keys). ``self.first_end[key]`` is the end of that entry. The watermark pops the keys whose
    entry is at or below it, takes each one's closed sessions off the front of its list, and pushes the key
    again with the end of its new first session: O(log K) per key it closes sessions of, for K keys, whatever
    the number of sessions. A key's first session only ends *later* when it merges (its entry is then early,
    and pushed again when popped), and ends earlier only when a session is put before it (then a new entry is
    pushed; the old one no longer matches ``first_end`` and is skipped when popped).

    The heap holds keys, not sessions: its size follows the keys, not the rows of a batch (a heap of every
    session grew with the batch, and each of its pops reached further into memory).

    >>> state = WindowsByKey()
    >>> state.put("a", (0, 10), (1,)); state.put("a", (20, 30), (1,)); state.put("b", (5, 15), (1,))
    >>> state.touching("a", (10, 20)), state.touching("a", (11, 19))
    ([(20, 30), (0, 10)], [])
    >>> state.put_new("a", 40, 50, (1,)), state.put_new("a", 45, 55, (1,))   # the second touches [40, 50)
    (True, False)
    >>> state.take_closed(15)
    [('a', [(0, 10, (1,))]), ('b', [(5, 15, (1,))])]
    >>> state.sessions
    {'a': [(20, 30, (1,)), (40, 50, (1,))]}
    """

    def __init__(self):
        self.sessions: dict = {}  # {key: [(start, end, accumulators), ...]} by start (and so by end)
        self.by_end: list = []  # heap of (end, n, key): one entry per key with sessions
        self.first_end: dict = {}  # {key: the end of its entry in by_end}, at or before its first session's end
        self.pushed = count()  # n of the next entry pushed

    def _schedule(self, key, end: int) -> None:
        """Make sure the heap pops ``key`` by ``end``, the end of the key's (new) first session."""
        first = self.first_end.get(key)
        if first is None or end < first:
            heappush(self.by_end, (end, next(self.pushed), key))
            self.first_end[key] = end

    def get(self, key, window):
        """The accumulators of ``(key, window)``; ``KeyError`` when there are none."""
        for start, end, accumulators in self.sessions.get(key, ()):
            if (start, end) == window:
                return accumulators
        raise KeyError((key, window))

    def windows_of(self, key) -> dict:
        """``{window: accumulators}`` of one key (empty when it has none)."""
        return {(start, end): accumulators for start, end, accumulators in self.sessions.get(key, ())}

    def put_new(self, key, start: int, end: int, accumulators: tuple) -> bool:
        """Store ``[start, end)`` as a new session of ``key`` when it touches none of the key's sessions, and
        say so; ``False`` (nothing stored) when it touches one: it must be merged (:meth:`touching`)."""
        sessions = self.sessions.get(key)
        if sessions is None:  # the key's only session: the heap pops the key by its end
            self.sessions[key] = [(start, end, accumulators)]
            self.first_end[key] = end
            heappush(self.by_end, (end, next(self.pushed), key))
        elif sessions[-1][1] < start:  # after the key's last session: the usual case
            sessions.append((start, end, accumulators))
        else:
            i = bisect_right(sessions, (end, _AFTER_ANY_END))  # sessions[:i] start at or before `end`
            if i and sessions[i - 1][1] >= start:
                return False
            sessions.insert(i, (start, end, accumulators))
            if i == 0:
                self._schedule(key, end)
        if self.changed is not None:
            self.changed[key] = None
        return True

    def touching(self, key, window) -> list[tuple[int, int]]:
        """The key's sessions that ``window`` overlaps or touches (``time.windows.touches``), latest first."""
        sessions = self.sessions.get(key)
        if not sessions:
            return []
        start, end = window
        if sessions[-1][1] < start:
            return []  # after the key's last session: rows mostly come in time order
        i = bisect_right(sessions, (end, _AFTER_ANY_END))  # sessions[:i] start at or before `end`
        found = []
        while i > 0 and sessions[i - 1][1] >= start:
            i -= 1
            found.append(sessions[i][:2])
        return found

    def put(self, key, window, accumulators) -> None:
        """Store the accumulators of ``(key, window)`` (a session that merged others), in start order."""
        start, end = window
        sessions = self.sessions.setdefault(key, [])
        i = bisect_left(sessions, (start,))  # the first session that starts at or after `start`
        if i < len(sessions) and sessions[i][0] == start:
            sessions[i] = (start, end, accumulators)
        else:
            sessions.insert(i, (start, end, accumulators))
        if i == 0:
            self._schedule(key, end)
        self._mark(key)

    def pop(self, key, window):
        """Remove ``(key, window)`` and return its accumulators."""
        sessions = self.sessions[key]
        i = bisect_left(sessions, (window[0],))
        start, end, accumulators = sessions[i]
        if (start, end) != window:
            raise KeyError((key, window))
        del sessions[i]
        if not sessions:  # its heap entry stays, and is skipped when popped
            del self.sessions[key], self.first_end[key]
        self._mark(key)
        return accumulators

    def take_closed(self, watermark: int) -> list[tuple]:
        """Remove every session with ``end <= watermark``: ``[(key, [(start, end, accumulators), ...])]``,
        keys in the order of their first session's end, each key's sessions in order."""
        closed = []
        heap, sessions_of, first_end = self.by_end, self.sessions, self.first_end
        while heap and heap[0][0] <= watermark:
            end, _, key = heappop(heap)
            if first_end.get(key) != end:
                continue  # an entry pushed again since, or a key whose sessions all went
            sessions = sessions_of[key]
            if sessions[-1][1] <= watermark:  # every session of the key closes: the key goes
                closed.append((key, sessions))
                del sessions_of[key], first_end[key]
                self._mark(key)
                continue
            n = bisect_right(sessions, watermark, key=_END)  # they are in end order: the first n close
            if n:
                closed.append((key, sessions[:n]))
                del sessions[:n]
                self._mark(key)
            first_end[key] = sessions[0][1]  # the key's new first session: the heap pops the key by its end
            heappush(heap, (sessions[0][1], next(self.pushed), key))
        return closed

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        """Remove every session with ``end + lateness <= watermark``, in end order; return them as :meth:`items`."""
        taken = [
            ((start, end), {key: accumulators})
            for key, sessions in self.take_closed(watermark - lateness)
            for start, end, accumulators in sessions
        ]
        taken.sort(key=lambda item: item[0][1])
        return taken

    def sessions_by_key(self) -> list[tuple]:
        """Every session, as :meth:`take_closed` gives them: ``[(key, [(start, end, accumulators), ...])]``."""
        return [(key, list(sessions)) for key, sessions in self.sessions.items()]

    def items(self) -> list[tuple]:
        """Every session with its key's accumulators: ``[(window, {key: accumulators})]``, key by key."""
        return [
            ((start, end), {key: accumulators})
            for key, sessions in self.sessions.items()
            for start, end, accumulators in sessions
        ]

    def size(self) -> int:
        return sum(map(len, self.sessions.values()))

    def by_key_group(self, keys: list | None = None, copy: bool = False) -> dict:
        """The checkpoint's layout, ``{key_group: {key: {window: accumulators}}}``, as ``WindowsByWindow`` gives it."""
        groups: dict = {}
        for key in self.sessions if keys is None else [key for key in keys if key in self.sessions]:
            by_window = {(start, end): accumulators for start, end, accumulators in self.sessions[key]}
            groups.setdefault(key_group_of(key), {})[key] = _copied(by_window) if copy else by_window
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.put(key, tuple(window), tuple(accumulators))


def _copied(by_window: dict) -> dict:
    """``{window: accumulators}`` with each window's accumulators a list of copies: a checkpoint's own."""
    return copy_accumulators({window: list(accumulators) for window, accumulators in by_window.items()})


_END = itemgetter(1)
"""The end of a ``(start, end, accumulators)`` session."""

_AFTER_ANY_END = float("inf")
"""Sorts after every end: ``(t, _AFTER_ANY_END)`` comes after every window that starts at ``t``."""


class WindowsInState:
    """The windows kept in the step's keyed state itself, the table ``"windows"``: ``{key_group: {key: {window:
    accumulators}}}``, the layout a checkpoint takes. A window step uses it when its keyed state lives in a store
    (``state/stored.py``: RocksDB, Redis), so that the windows live there too; in memory the two layouts above
    are faster, and the checkpoint's layout is built only at checkpoints.

    It reads and writes as the two others do (a row's ``keys_of(window)`` table, a key's ``windows_of(key)``);
    reading every window (``items``, ``take_final``) scans the table, as Spark's state store iterates its
    entries to evict the ones the watermark passed. Every key it changes is marked in the backend
    (``track_changes``), which writes it back at the end of the batch.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> state = WindowsInState(KeyedStateBackend())
    >>> state.keys_of((0, 10))["a"] = [1]; state.put("b", (0, 10), [2]); state.put("a", (10, 20), [3])
    >>> state.size(), state.take_final(10)
    (3, [((0, 10), {'a': [1], 'b': [2]})])
    >>> state.table, state.changed_keys()
    ({122: {'a': {(10, 20): [3]}}}, ['a', 'b'])
    """

    def __init__(self, backend):
        self.table = backend.table("windows")
        self.changed = backend.track_changes("windows")

    def _windows_of(self, key, create: bool = False) -> dict | None:
        """The stored ``{window: accumulators}`` of ``key`` (made empty when ``create``), ``None`` when none."""
        group = self.table.get(key_group_of(key))
        found = None if group is None else group.get(key)
        if found is None and create:
            found = self.table.setdefault(key_group_of(key), {}).setdefault(key, {})
        return found

    def keys_of(self, window) -> _KeysOfWindow:
        """A ``{key: accumulators}`` view of one window, which a row's fold reads and writes."""
        return _KeysOfWindow(self, window)

    def get(self, key, window):
        """The accumulators of ``(key, window)``; ``KeyError`` when there are none."""
        return (self._windows_of(key) or {})[window]

    def windows_of(self, key) -> dict:
        """``{window: accumulators}`` of one key (empty when it has none)."""
        return self._windows_of(key) or {}

    def touching(self, key, window) -> list[tuple[int, int]]:
        """The key's sessions that ``window`` overlaps or touches (a scan of the key's sessions)."""
        return [session for session in self.windows_of(key) if touches(session, window)]

    def put_new(self, key, start: int, end: int, accumulators: list) -> bool:
        """Store ``[start, end)`` as a new session of ``key`` unless it touches one (as ``WindowsByKey`` does)."""
        if self.touching(key, (start, end)):
            return False
        self.put(key, (start, end), accumulators)
        return True

    def put(self, key, window, accumulators) -> None:
        windows = self._windows_of(key, create=True)
        assert windows is not None
        windows[window] = accumulators
        self.changed[key] = None

    def pop(self, key, window):
        group = self.table.get(key_group_of(key))
        by_window = group[key]
        accumulators = by_window.pop(window)
        if not by_window:
            del group[key]
            if not group:
                del self.table[key_group_of(key)]
        self.changed[key] = None
        return accumulators

    def _entries(self) -> list[tuple]:
        """Every ``(key group, key, {window: accumulators})``, by key group."""
        return [(group, key, by_window) for group in list(self.table) for key, by_window in self.table[group].items()]

    def items(self) -> list[tuple]:
        """Every window with the accumulators of its keys, windows in order: ``[(window, {key: accumulators})]``."""
        windows: dict = {}
        for _, key, by_window in self._entries():
            for window, accumulators in by_window.items():
                windows.setdefault(window, {})[key] = accumulators
        return sorted(windows.items(), key=lambda item: item[0])

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        """Remove every window with ``end + lateness <= watermark``; return them as :meth:`items` does."""
        taken: dict = {}
        for group, key, by_window in self._entries():
            final = [window for window in by_window if window[1] + lateness <= watermark]
            for window in final:
                taken.setdefault(window, {})[key] = by_window.pop(window)
            if final:
                self.changed[key] = None
                if not by_window:
                    del self.table[group][key]
                    if not self.table[group]:
                        del self.table[group]
        return sorted(taken.items(), key=lambda item: item[0])

    def take_closed(self, watermark: int) -> list[tuple]:
        """Sessions: remove every one with ``end <= watermark``, by key as ``WindowsByKey.take_closed`` gives them."""
        return _by_key(self.take_final(watermark))

    def sessions_by_key(self) -> list[tuple]:
        """Sessions: every one, by key as ``WindowsByKey.sessions_by_key`` gives them."""
        return _by_key(self.items())

    def size(self) -> int:
        return sum(len(by_window) for _, _, by_window in self._entries())

    def count_changes(self) -> None:
        """Nothing to do: the backend clears its marks when a checkpoint takes its snapshot."""

    def changed_keys(self) -> list:
        return list(self.changed)


def _by_key(windows: list[tuple]) -> list[tuple]:
    """``[(window, {key: accumulators})]`` as ``[(key, [(start, end, accumulators), ...])]``, sessions by start."""
    by_key: dict = {}
    for (start, end), accumulators_of in windows:
        for key, accumulators in accumulators_of.items():
            by_key.setdefault(key, []).append((start, end, accumulators))
    return [(key, sorted(sessions, key=lambda session: session[0])) for key, sessions in by_key.items()]


class _KeysOfWindow:
    """``{key: accumulators}`` of one window of a :class:`WindowsInState`, as much of a dict as a fold uses."""

    __slots__ = ("state", "window")

    def __init__(self, state: WindowsInState, window):
        self.state = state
        self.window = window

    def get(self, key, default=None):
        return (self.state._windows_of(key) or {}).get(self.window, default)

    def __getitem__(self, key):
        return self.state.get(key, self.window)

    def __setitem__(self, key, accumulators) -> None:
        self.state.put(key, self.window, accumulators)
