"""State time-to-live (TTL): keyed state that expires a fixed processing time after it was last written.

A keyed step that keeps something for every key it has ever seen grows forever. A *time-to-live* bounds it:
every write stamps the entry with ``expires_at = now + ttl``, where ``now`` is the processing time of the
batch that wrote it (Spark's *batch timestamp*). The rules, as Spark's ``transformWithState`` has them
(``TTLState.scala``, ``ValueStateImplWithTTL`` and friends), each pinned by a test in
``tests/operators/test_process.py``:

1. an entry is expired when ``now >= expires_at``;
2. a read never returns an expired entry, even before it is cleaned up;
3. only a write sets the expiry again (reading does not keep an entry alive);
4. each element of a list and each entry of a map has its own expiry (appending one element stamps only it);
5. at the end of every batch, after the timers, the expired entries are removed from the state (the
   *cleanup*): until then they still take room, but no read sees them.

TTL counts **processing time**, not event time: an entry expires because the clock moved, whatever the
events say. ministream's processing time is the batch timestamp its micro-batch driver gives each batch
(``run_microbatch(..., batch_timestamps=[...])``), so a run with TTL repeats exactly.

The three TTL states have the same methods as ``keyed.ValueState``, ``ListState`` and ``MapState``, and read
the current processing time from ``now``, a function the processor's handle passes in.

>>> from ministream.state.keyed import KeyedStateBackend
>>> backend = KeyedStateBackend(); backend.set_current_key("device-1")
>>> clock = {"now": 1_000}
>>> last_seen = TtlValueState(backend, "last_seen", ttl=5_000, now=lambda: clock["now"])
>>> last_seen.update("s1")        # written at 1000: expires at 6000
>>> clock["now"] = 5_999; last_seen.value()
's1'
>>> clock["now"] = 6_000; last_seen.value() is None, backend.size()   # expired: hidden, still stored
(True, 1)
>>> last_seen.remove_expired(now=6_000), backend.size()                # the end-of-batch cleanup
(['device-1'], 0)
"""

from __future__ import annotations

from collections.abc import Callable

from ministream.errors import PipelineError
from ministream.state.keyed import KeyedStateBackend, ListState, MapState, ValueState, checked_list, refuse_null


def is_expired(expires_at: int, now: int) -> bool:
    """Rule 1: an entry stamped ``expires_at`` is expired once processing time reaches it (Spark's
    ``StateTTL.isExpired``: ``batchTimestamp >= expirationMs``).

    >>> is_expired(6_000, now=5_999), is_expired(6_000, now=6_000)
    (False, True)
    """
    return now >= expires_at


class _Ttl:
    """What the three TTL states share: the time-to-live, the clock, and the cleanup of one state's table."""

    backend: KeyedStateBackend  # these two come from the state class a TTL state also derives from
    name: str

    def _without_expired(self, stored, now: int):
        """The stored value without its expired entries (the stored value itself when none expired, ``None``
        when all did): each TTL state says how its values expire."""
        raise NotImplementedError

    def _setup(self, ttl: int, now: Callable[[], int]) -> None:
        if ttl <= 0:
            raise PipelineError(
                f"state {self.name!r}: a time-to-live must be longer than zero, got {ttl} ms (Spark: "
                f"STATEFUL_PROCESSOR_TTL_DURATION_MUST_BE_POSITIVE, stateName={self.name})"
            )
        self.ttl = ttl
        self.now = now

    def expiry(self) -> int:
        """The ``expires_at`` stamp of an entry written now."""
        return self.now() + self.ttl

    def remove_expired(self, now: int) -> list:
        """Rule 5: remove every key's expired entries from this state; return the keys that lost any.

        This walks the whole table; Spark keeps a second index sorted by ``expires_at`` so that its cleanup
        reads only what has expired, and checks each entry again before removing it (it may have been
        written since).
        """
        touched = []
        table = self.backend.tables.get(self.name, {})  # {key_group: {key: stored value}}
        for group in list(table):
            entries = table[group]
            for key in list(entries):
                kept = self._without_expired(entries[key], now)
                if kept is entries[key]:
                    continue
                touched.append(key)
                if kept is None:
                    del entries[key]
                else:
                    entries[key] = kept
            if not entries:
                del table[group]
        return touched


class TtlValueState(_Ttl, ValueState):
    """One value per key that expires ``ttl`` ms of processing time after its last update.

    Stored as ``(value, expires_at)`` under the key: ``# {key_group: {key: (value, expires_at)}}``.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> backend = KeyedStateBackend(); backend.set_current_key("k"); now = [0]
    >>> score = TtlValueState(backend, "score", ttl=10, default=0, now=lambda: now[0])
    >>> score.update(7); now[0] = 9; score.value(), score.exists()
    (7, True)
    >>> now[0] = 10; score.value(), score.exists()
    (0, False)

    Args:
        backend: the subtask's keyed state. name: the state's name. ttl: the time-to-live in ms.
        default: what ``value()`` gives when there is no live value. now: the current processing time.
    """

    def __init__(self, backend: KeyedStateBackend, name: str, ttl: int, now: Callable[[], int], default=None):
        super().__init__(backend, name, default)
        self._setup(ttl, now)

    def value(self):
        """The current key's value, or the default when it has none or it expired (rule 2)."""
        stored = self.backend.get(self.name)
        if stored is None or is_expired(stored[1], self.now()):
            return self.default
        return stored[0]

    def exists(self) -> bool:
        """Whether the current key has a value that has not expired."""
        stored = self.backend.get(self.name)
        return stored is not None and not is_expired(stored[1], self.now())

    def update(self, value) -> None:
        """Replace the current key's value; its expiry starts again from now (rule 3)."""
        self.backend.put(self.name, (value, self.expiry()))

    def _without_expired(self, stored, now):
        return None if is_expired(stored[1], now) else stored


class TtlListState(_Ttl, ListState):
    """A list per key whose elements expire one by one, ``ttl`` ms after each was written.

    Stored as a list of ``[value, expires_at]``: ``# {key_group: {key: [[value, expires_at], ...]}}``.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> backend = KeyedStateBackend(); backend.set_current_key("k"); now = [0]
    >>> recent = TtlListState(backend, "recent", ttl=10, now=lambda: now[0])
    >>> recent.add("a"); now[0] = 5; recent.add("b"); recent.get()
    ['a', 'b']
    >>> now[0] = 10; recent.get()       # 'a' expired at 10, 'b' lives until 15 (rule 4)
    ['b']

    Args:
        backend: the subtask's keyed state. name: the state's name. ttl: the time-to-live in ms.
        now: the current processing time.
    """

    def __init__(self, backend: KeyedStateBackend, name: str, ttl: int, now: Callable[[], int]):
        super().__init__(backend, name)
        self._setup(ttl, now)

    def get(self) -> list:
        """The current key's elements that have not expired, oldest first."""
        now = self.now()
        return [value for value, expires_at in self.backend.get(self.name, ()) if not is_expired(expires_at, now)]

    def add(self, value) -> None:
        """Append one element, stamped to expire ``ttl`` from now; the others keep their stamps."""
        self.add_all([value])

    def add_all(self, values) -> None:
        """Append several elements, each stamped to expire ``ttl`` from now; the others keep their stamps."""
        expires_at = self.expiry()
        added = [[value, expires_at] for value in checked_list(self.name, values)]
        items = self.backend.get(self.name)
        if items is None:
            self.backend.put(self.name, added)
        else:
            items += added

    def update(self, values) -> None:
        """Replace the current key's list; every element is stamped to expire ``ttl`` from now."""
        expires_at = self.expiry()
        self.backend.put(self.name, [[value, expires_at] for value in checked_list(self.name, values)])

    def exists(self) -> bool:
        """Whether the current key has an element that has not expired."""
        return bool(self.get())

    def _without_expired(self, stored, now):
        kept = [item for item in stored if not is_expired(item[1], now)]
        if len(kept) == len(stored):
            return stored
        return kept or None


class TtlMapState(_Ttl, MapState):
    """A dict per key whose entries expire one by one, ``ttl`` ms after each was last put.

    Stored as ``{map_key: (value, expires_at)}``: ``# {key_group: {key: {map_key: (value, expires_at)}}}``.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> backend = KeyedStateBackend(); backend.set_current_key("device-1"); now = [0]
    >>> sessions = TtlMapState(backend, "sessions", ttl=10, now=lambda: now[0])
    >>> sessions.put("s1", 1); now[0] = 4; sessions.put("s2", 2); now[0] = 12
    >>> sessions.items(), sessions.contains("s1"), sessions.get("s2")
    ([('s2', 2)], False, 2)

    Args:
        backend: the subtask's keyed state. name: the state's name. ttl: the time-to-live in ms.
        now: the current processing time.
    """

    def __init__(self, backend: KeyedStateBackend, name: str, ttl: int, now: Callable[[], int]):
        super().__init__(backend, name)
        self._setup(ttl, now)

    def _live(self) -> dict:
        now = self.now()
        return {k: stored[0] for k, stored in (self._map() or {}).items() if not is_expired(stored[1], now)}

    def get(self, map_key, default=None):
        """The live value under ``map_key``, or ``default`` (also when it expired)."""
        refuse_null(self.name, map_key, "map key")
        return self._live().get(map_key, default)

    def put(self, map_key, value) -> None:
        """Set ``map_key``; its expiry starts again from now."""
        refuse_null(self.name, map_key, "map key")
        refuse_null(self.name, value, "map value")
        self._writable_map()[map_key] = (value, self.expiry())

    def contains(self, map_key) -> bool:
        """Whether ``map_key`` has a live value."""
        refuse_null(self.name, map_key, "map key")
        return map_key in self._live()

    def keys(self) -> list:
        """The map keys with a live value, in insertion order."""
        return list(self._live())

    def items(self) -> list[tuple]:
        """The live (map key, value) pairs, in insertion order."""
        return list(self._live().items())

    def exists(self) -> bool:
        """Whether the current key has a live entry."""
        return bool(self._live())

    def _without_expired(self, stored, now):
        kept = {k: item for k, item in stored.items() if not is_expired(item[1], now)}
        if len(kept) == len(stored):
            return stored
        return kept or None
