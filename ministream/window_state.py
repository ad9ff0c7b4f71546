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

from ministream.keygroups import key_group_of


class WindowsByWindow:
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
        return [(window, self.windows.pop(window)) for window in final]

    def size(self) -> int:
        """How many (key, window) accumulators there are."""
        return sum(map(len, self.windows.values()))

    def by_key_group(self) -> dict:
        """The checkpoint's layout: ``{key_group: {key: {window: accumulators}}}``, key groups in order."""
        groups: dict = {}
        for window, by_key in self.windows.items():
            for key, accumulators in by_key.items():
                groups.setdefault(key_group_of(key), {}).setdefault(key, {})[window] = accumulators
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it)."""
        for by_key in groups.values():
            for key, by_window in by_key.items():
                for window, accumulators in by_window.items():
                    self.windows.setdefault(window, {})[key] = accumulators


class WindowsByKey:
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
        return [(window, {key: accumulators}) for key, by_window in self.keys.items()
                for window, accumulators in by_window.items()]

    def take_final(self, watermark: int, lateness: int = 0) -> list[tuple]:
        taken = []
        for key in list(self.keys):
            by_window = self.keys[key]
            for window in [window for window in by_window if window[1] + lateness <= watermark]:
                taken.append((window, {key: by_window.pop(window)}))
            if not by_window:
                del self.keys[key]
        return taken

    def put(self, key, window, accumulators) -> None:
        """Store the accumulators of ``(key, window)`` (a session that merged others)."""
        self.keys.setdefault(key, {})[window] = accumulators

    def pop(self, key, window):
        """Remove ``(key, window)`` and return its accumulators."""
        by_window = self.keys[key]
        accumulators = by_window.pop(window)
        if not by_window:
            del self.keys[key]
        return accumulators

    def size(self) -> int:
        return sum(map(len, self.keys.values()))

    def by_key_group(self) -> dict:
        groups: dict = {}
        for key, by_window in self.keys.items():
            groups.setdefault(key_group_of(key), {})[key] = dict(by_window)
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        for by_key in groups.values():
            for key, by_window in by_key.items():
                self.keys.setdefault(key, {}).update(by_window)
