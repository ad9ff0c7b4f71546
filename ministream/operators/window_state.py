"""Window state: the accumulators of a windowed aggregate, one per (window, key), laid out the way they are read.

A windowed aggregate keeps, for every key and every window of that key that is still open, one accumulator per
aggregate function. Two ways of reading that state matter, and each layout serves one:

- **by window** (:class:`WindowsByWindow`, tumbling and sliding windows): the watermark closes a window for every
  key at once, so eviction takes whole windows, ``{window: {key: accumulators}}``, and never looks at the others;
- **by key** (:class:`WindowsByKey`, session windows): a row's session depends on the other sessions *of its key*,
  which must be found quickly, ``{key: {window: accumulators}}``.

Neither layout is split by key group while the query runs. A checkpoint needs the state by key group (so that
it can be handed to other subtasks after a rescale, see ``keygroups``), and :meth:`by_key_group` builds that
layout when a snapshot is taken: a cost paid per checkpoint, not per row. Flink's window operator does the
same with a different split: its keyed state holds ``(key, window) -> accumulator`` per key group, and timers
(one per window end) find the windows to close.

Once a checkpoint has been taken (:meth:`count_changes`), each layout also remembers, in ``changed``, the keys
that changed since, for an incremental checkpoint (``state/changes.py``) to write again or write as removed:
the keys of the windows it closes, and the keys its writer marks (the window step marks each row's key).

>>> state = WindowsByWindow()
>>> state.keys_of((0, 10))["a"] = [1]
>>> state.keys_of((0, 10))["b"] = [2]
>>> state.keys_of((10, 20))["a"] = [3]
>>> state.size(), state.take_final(10)
(3, [((0, 10), {'a': [1], 'b': [2]})])
>>> state.by_key_group()
{122: {'a': {(10, 20): [3]}}}
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import defaultdict
from heapq import heappop, heappush
from itertools import count

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
    """``self.windows[(start, end)][key] = [accumulator per aggregate]``: windows in the order they opened,
    the keys of each in the order they came."""

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
        ``keys`` only, when given (a key without windows is left out). With ``copy=True`` each accumulator
        list is a copy (``copy_on_write.copy_accumulators``), which the state goes on without: a checkpoint
        can keep it as it is.

        Built key by key first, then split by key group: a key's group is looked up once, not once per window."""
        wanted = None if keys is None else set(keys)
        windows_of: defaultdict = defaultdict(dict)  # {key: {window: accumulators}}
        for window, by_key in self.windows.items():
            entries = by_key
            if wanted is not None and not by_key.keys() <= wanted:
                entries = {key: by_key[key] for key in by_key.keys() & wanted}
            if copy:
                entries = copy_accumulators(entries)
            for key, accumulators in entries.items():
                windows_of[key][window] = accumulators
        groups: dict = {}
        for key, by_window in windows_of.items():
            groups.setdefault(key_group_of(key), {})[key] = by_window
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it)."""
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.windows.setdefault(window, {})[key] = accumulators


class WindowsByKey(ChangedKeys):
    """The sessions of each key together, sorted by start, and an index of every session by its end.

    ``self.keys[key][(start, end)] = [accumulator per aggregate]``: a key's sessions, and

    - ``self.sorted[key] = [(start, end), ...]``, the same sessions sorted by start. A key's sessions never
      overlap or touch, so they are sorted by end too, and the sessions a new ``[start, end)`` touches are
      next to each other: a binary search finds the last one that starts at or before ``end``, and the walk
      back stops at the first one that ends before ``start``. O(log n + touched) for n sessions of the key.
    - ``self.by_end``, a heap of ``(end, n, key, start)`` (``n`` counts the sessions stored, so that two
      entries with the same end never compare their keys): the smallest end on top, so the sessions the
      watermark closes are popped from the top, O(log N) each, without looking at the others. A session that
      merged into another stays in the heap until its end comes up, then is skipped (it is no longer in
      ``keys``): cheaper than removing it from the middle of a heap.

    >>> state = WindowsByKey()
    >>> state.put("a", (0, 10), [1]); state.put("a", (20, 30), [1]); state.put("b", (5, 15), [1])
    >>> state.touching("a", (10, 20)), state.touching("a", (11, 19))
    ([(20, 30), (0, 10)], [])
    >>> state.take_final(15)
    [((0, 10), {'a': [1]}), ((5, 15), {'b': [1]})]
    """

    def __init__(self):
        self.keys: dict = {}  # {key: {(start, end): accumulators}}
        self.sorted: dict = {}  # {key: [(start, end), ...]} by start (and so by end)
        self.by_end: list = []  # heap of (end, n, key, start)
        self.stored = count()  # n of the next session stored

    def get(self, key, window):
        return self.keys[key][window]

    def windows_of(self, key) -> dict:
        """``{window: accumulators}`` of one key (empty when it has none)."""
        return self.keys.get(key, {})

    def touching(self, key, window) -> list[tuple[int, int]]:
        """The key's sessions that ``window`` overlaps or touches (``time.windows.touches``), latest first."""
        windows = self.sorted.get(key)
        if not windows:
            return []
        start, end = window
        if windows[-1][1] < start:
            return []  # after the key's last session: rows mostly come in time order
        i = bisect_right(windows, (end, _AFTER_ANY_END))  # windows[:i] start at or before `end`
        found = []
        while i > 0 and windows[i - 1][1] >= start:
            i -= 1
            found.append(windows[i])
        return found

    def items(self) -> list[tuple]:
        """Every session with its key's accumulators: ``[(window, {key: accumulators})]``, key by key."""
        return [
            (window, {key: accumulators})
            for key, by_window in self.keys.items()
            for window, accumulators in by_window.items()
        ]

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        """Remove every session with ``end + lateness <= watermark``, in end order; return them as :meth:`items`."""
        taken = []
        heap = self.by_end
        while heap and heap[0][0] + lateness <= watermark:
            end, _, key, start = heappop(heap)
            by_window = self.keys.get(key)
            if by_window is None or (start, end) not in by_window:
                continue  # merged into a longer session since
            taken.append(((start, end), {key: self.pop(key, (start, end))}))
        return taken

    def put(self, key, window, accumulators) -> None:
        """Store the accumulators of ``(key, window)`` (a session that merged others)."""
        by_window = self.keys.setdefault(key, {})
        if window not in by_window:
            windows = self.sorted.setdefault(key, [])
            if not windows or windows[-1] < window:
                windows.append(window)  # the key's latest session: the usual case
            else:
                insort(windows, window)
            heappush(self.by_end, (window[1], next(self.stored), key, window[0]))
        by_window[window] = accumulators
        self._mark(key)

    def pop(self, key, window):
        """Remove ``(key, window)`` and return its accumulators."""
        by_window = self.keys[key]
        accumulators = by_window.pop(window)
        windows = self.sorted[key]
        del windows[0 if windows[0] == window else bisect_left(windows, window)]  # the watermark takes the first
        if not by_window:
            del self.keys[key], self.sorted[key]
        self._mark(key)
        return accumulators

    def size(self) -> int:
        return sum(map(len, self.keys.values()))

    def by_key_group(self, keys: list | None = None, copy: bool = False) -> dict:
        groups: dict = {}
        for key in self.keys if keys is None else [key for key in keys if key in self.keys]:
            groups.setdefault(key_group_of(key), {})[key] = (copy_accumulators if copy else dict)(self.keys[key])
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.put(key, window, accumulators)


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

    def size(self) -> int:
        return sum(len(by_window) for _, _, by_window in self._entries())

    def count_changes(self) -> None:
        """Nothing to do: the backend clears its marks when a checkpoint takes its snapshot."""

    def changed_keys(self) -> list:
        return list(self.changed)


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
