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

from ministream.state.keygroups import key_group_of


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

    def by_key_group(self, keys: list | None = None) -> dict:
        """The checkpoint's layout: ``{key_group: {key: {window: accumulators}}}``, key groups in order; of
        ``keys`` only, when given (a key without windows is left out)."""
        wanted = None if keys is None else set(keys)
        groups: dict = {}
        for window, by_key in self.windows.items():
            for key in by_key if wanted is None else by_key.keys() & wanted:
                groups.setdefault(key_group_of(key), {}).setdefault(key, {})[window] = by_key[key]
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it)."""
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.windows.setdefault(window, {})[key] = accumulators


class WindowsByKey(ChangedKeys):
    """``self.keys[key][(start, end)] = [accumulator per aggregate]``: the windows of one key together."""

    def __init__(self):
        self.keys: dict = {}

    def get(self, key, window):
        return self.keys[key][window]

    def windows_of(self, key) -> dict:
        """``{window: accumulators}`` of one key (empty when it has none)."""
        return self.keys.get(key, {})

    def items(self) -> list[tuple]:
        """Every session with its key's accumulators: ``[(window, {key: accumulators})]``, key by key."""
        return [
            (window, {key: accumulators})
            for key, by_window in self.keys.items()
            for window, accumulators in by_window.items()
        ]

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        taken = []
        for key in list(self.keys):
            by_window = self.keys[key]
            for window in [window for window in by_window if window[1] + lateness <= watermark]:
                taken.append((window, {key: by_window.pop(window)}))
                self._mark(key)
            if not by_window:
                del self.keys[key]
        return taken

    def put(self, key, window, accumulators) -> None:
        """Store the accumulators of ``(key, window)`` (a session that merged others)."""
        self.keys.setdefault(key, {})[window] = accumulators
        self._mark(key)

    def pop(self, key, window):
        """Remove ``(key, window)`` and return its accumulators."""
        by_window = self.keys[key]
        accumulators = by_window.pop(window)
        if not by_window:
            del self.keys[key]
        self._mark(key)
        return accumulators

    def size(self) -> int:
        return sum(map(len, self.keys.values()))

    def by_key_group(self, keys: list | None = None) -> dict:
        groups: dict = {}
        for key in self.keys if keys is None else [key for key in keys if key in self.keys]:
            groups.setdefault(key_group_of(key), {})[key] = dict(self.keys[key])
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        for by_key in groups.values():
            for key, by_window in by_key.items():
                self.keys.setdefault(key, {}).update(by_window)
