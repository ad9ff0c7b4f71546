"""Seen keys: what a deduplication remembers, ``{key: expires}``, and an index by expiry to forget keys with.

A deduplication (``operators/dedup.py``) asks two questions of its state. For every row: *was this key seen?*
For every watermark: *which keys may be forgotten now?* Each layout below serves both:

- **in memory, expiry in the key** (:class:`SeenBySecond`): when the key holds the event-time column
  (``dropDuplicates(["key", "ts"])``), a key's expiry follows from the key itself, so the keys can be grouped by
  the second of their expiry, ``{second: {key: expires}}``. A row looks its key up in the table of its own
  second; event times rise with the stream, so consecutive rows use the same table or two, small tables that
  stay in the processor's cache, where one dict of a whole large batch's keys would not. The watermark drops
  the tables of the seconds it has passed whole, and looks key by key only into the second it falls inside.
- **in memory** (:class:`SeenKeys`, for ``dropDuplicatesWithinWatermark`` or keys kept forever): one flat
  dict ``{key: expires}``, where a row's question is one lookup,
  and an **index by expiry** for the watermark's: the keys each batch stored, with the least and the greatest
  of their expiries (a *run*). The watermark forgets a run whose greatest expiry it has reached whole, skips
  a run whose least expiry it has not reached, and looks key by key only into the runs it falls inside. Event
  times rise with the stream, so the runs of a batch or two are due at a time: eviction touches what
  expires, not every key kept. A key kept forever (``expires`` is ``None``) is in no run.
- **in a store** (:class:`SeenInState`, RocksDB, Redis: ``state/stored.py``): the keyed state table
  ``"seen"`` itself, ``{key_group: {key: expires}}``, which eviction scans, as Spark's state store iterates
  its entries to evict.

Neither layout in memory is split by key group while the query runs: a checkpoint needs that split (a restore at
another parallelism hands key groups to other subtasks, ``state/keygroups.py``), and ``by_key_group``
builds it when a snapshot is taken, a cost paid per checkpoint and not per row. The window step does the same
(``operators/window_state.py``). Spark's deduplication keeps its keys in the state store of each partition
and finds the expired ones by iterating the store (``removeKeysOlderThanWatermark``), as :class:`SeenInState`
does.

>>> seen = SeenKeys()
>>> for key, expires in (("a", 10), ("b", 30), ("c", None)):
...     seen.expires[key] = expires
>>> seen.index(["a", "b", "c"], [10, 30, None]); seen.runs
[(['a', 'b'], [10, 30], 10, 30)]
>>> seen.evict(20), seen.expires, seen.runs
(['a'], {'b': 30, 'c': None}, [(['b'], [30], 30, 30)])
>>> seen.by_key_group()
{57: {'b': 30}, 120: {'c': None}}
>>> by_second = SeenBySecond()
>>> for key, expires in ((("a", 900), 900), (("b", 1_500), 1_500), (("a", 2_100), 2_100)):
...     by_second.table(expires // 1_000)[key] = expires
>>> by_second.evict(1_000), by_second.seconds
([('a', 900)], {1: {('b', 1500): 1500}, 2: {('a', 2100): 2100}})
"""

from __future__ import annotations

from ministream.state.keygroups import key_group_of


class SeenKeys:
    """The seen keys in memory: ``self.expires``, ``{key: expires}`` (the event time at which a key may be
    forgotten, ``None`` for never), and ``self.runs``, the index by expiry: one ``(keys, expiries, least,
    greatest)`` per batch that stored keys, ``keys`` and ``expiries`` side by side, in the order stored.

    Costs: a row's lookup and a store are one dict operation each; :meth:`index` is a step per key stored;
    :meth:`evict` a step per run, plus a step per key of the runs the watermark falls inside (each key is in
    such a run for the batches that its own run's expiries span: one or two when event time rises with the
    stream), plus a step per key forgotten."""

    def __init__(self):
        self.expires: dict = {}
        self.runs: list[tuple[list, list, int, int]] = []

    def index(self, keys: list, expiries: list) -> None:
        """Add the keys a batch stored (in ``self.expires`` already) to the index, as one run, with their
        expiries side by side; a key kept forever is left out."""
        if None in expiries:
            keys = [key for key, at in zip(keys, expiries) if at is not None]
            expiries = [at for at in expiries if at is not None]
        if keys:
            self.runs.append((keys, expiries, min(expiries), max(expiries)))

    def evict(self, watermark: int) -> list:
        """Forget every key whose expiry the watermark has reached (``expires <= watermark``); return them."""
        forgotten: list = []
        kept = []
        for run in self.runs:
            keys, expiries, least, greatest = run
            if least > watermark:  # nothing due in this run yet
                kept.append(run)
            elif greatest <= watermark:  # all of it due
                forgotten += keys
            else:  # the watermark falls inside the run: split it
                rest_keys, rest_expiries = [], []
                for key, at in zip(keys, expiries):
                    if at <= watermark:
                        forgotten.append(key)
                    else:
                        rest_keys.append(key)
                        rest_expiries.append(at)
                kept.append((rest_keys, rest_expiries, min(rest_expiries), greatest))
        self.runs = kept
        expires = self.expires
        for key in forgotten:
            del expires[key]
        return forgotten

    def size(self) -> int:
        return len(self.expires)

    def by_key_group(self, keys=None) -> dict:
        """The checkpoint's layout, ``{key_group: {key: expires}}``, key groups in order; of ``keys`` only, when
        given (a key no longer seen is left out)."""
        expires = self.expires
        groups: dict = {}
        for key in expires if keys is None else [key for key in keys if key in expires]:
            groups.setdefault(key_group_of(key), {})[key] = expires[key]
        return dict(sorted(groups.items()))

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it), indexed as one run."""
        for entries in groups.values():
            self.expires.update(entries)
        self.index(
            [key for entries in groups.values() for key in entries],
            [at for entries in groups.values() for at in entries.values()],
        )


class SeenBySecond:
    """The seen keys in memory when a key's expiry follows from the key (the key holds the event-time
    column): ``self.seconds``, ``{second: {key: expires}}``, each key in the table of the second of its expiry
    (``expires // 1000``, event time in ms; a key kept forever in the table ``None``).

    Costs: a row's lookup and a store are one dict operation each in a table of one second's keys (plus a
    lookup of that table when the second changes from one row to the next); :meth:`evict` a step per second
    kept, plus a step per key of the one second the watermark falls inside, plus a step per key forgotten."""

    def __init__(self):
        self.seconds: dict = {}

    def table(self, second) -> dict:
        """The table ``{key: expires}`` of one second (made empty the first time)."""
        table = self.seconds.get(second)
        if table is None:
            table = self.seconds[second] = {}
        return table

    def evict(self, watermark: int) -> list:
        """Forget every key whose expiry the watermark has reached (``expires <= watermark``); return them."""
        forgotten: list = []
        due_seconds = sorted(second for second in self.seconds if second is not None and second * 1_000 <= watermark)
        for second in due_seconds:  # in time order, each second's keys in the order stored
            table = self.seconds[second]
            if (second + 1) * 1_000 <= watermark:  # the whole second is due (every expiry in it is before)
                forgotten += table
                del self.seconds[second]
            else:  # the watermark falls inside the second
                due = [key for key, at in table.items() if at <= watermark]
                for key in due:
                    del table[key]
                forgotten += due
        return forgotten

    def size(self) -> int:
        return sum(map(len, self.seconds.values()))

    def by_key_group(self, keys=None) -> dict:
        """The checkpoint's layout, ``{key_group: {key: expires}}``, as :meth:`SeenKeys.by_key_group` makes it."""
        flat = SeenKeys()
        for table in self.seconds.values():
            flat.expires.update(table)
        return flat.by_key_group(keys)

    def load(self, groups: dict) -> None:
        """Add the entries of a checkpoint's layout (as :meth:`by_key_group` makes it), each to its second."""
        for entries in groups.values():
            for key, at in entries.items():
                self.table(None if at is None else at // 1_000)[key] = at


class SeenInState:
    """The seen keys kept in the keyed state table ``"seen"``, ``{key_group: {key: expires}}``, for a state
    that lives in a store (``state/stored.py``): the store writes back, at the end of each batch, the keys the
    operator marks changed. The same interface as :class:`SeenKeys`: ``expires`` answers ``key in`` and
    ``expires[key] = ...`` through the key's group; :meth:`evict` scans the table.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> state = KeyedStateBackend(); seen = SeenInState(state.table("seen"))
    >>> seen.expires["a"] = 10; seen.expires["b"] = 30; seen.index(["a", "b"], [10, 30])
    >>> "a" in seen.expires, seen.evict(20), state.tables
    (True, ['a'], {'seen': {57: {'b': 30}}})
    """

    def __init__(self, table):
        self.table = table
        self.expires = _ByKeyGroup(table)

    def index(self, keys: list, expiries: list) -> None:
        """Nothing to do: the table is its own index, which :meth:`evict` scans."""

    def evict(self, watermark: int) -> list:
        """Forget every key whose expiry the watermark has reached: a scan of every key group."""
        forgotten = []
        for number in list(self.table):
            group = self.table[number]
            due = [key for key, at in group.items() if at is not None and at <= watermark]
            for key in due:
                del group[key]
            if not group:
                del self.table[number]
            forgotten += due
        return forgotten

    def size(self) -> int:
        return sum(len(group) for group in self.table.values())


class _ByKeyGroup:
    """``{key: expires}`` read and written through a table split by key group: ``key in`` and ``[key] =``."""

    def __init__(self, table):
        self.table = table

    def __contains__(self, key) -> bool:
        group = self.table.get(key_group_of(key))
        return group is not None and key in group

    def __setitem__(self, key, expires) -> None:
        number = key_group_of(key)
        group = self.table.get(number)
        if group is None:
            group = self.table[number] = {}
        group[key] = expires
