"""Timers: a keyed step's requests to be called back at a time, in event time or in processing time.

A keyed step (a process function, a window) often needs to act when *time* passes rather than when a row
arrives: close a session 30 seconds after its last event, send a heartbeat every minute. It registers a
*timer* for the current key at a timestamp, and the engine calls it back when time reaches the timestamp:

- an **event-time timer** fires when the watermark reaches it: ``timestamp <= watermark``, inclusive, as in
  Flink (``InternalTimerServiceImpl.advanceWatermark``) and in Spark's ``transformWithState``;
- a **processing-time timer** fires when the processing-time clock reaches it: ``timestamp <= now`` (the
  clock is a ``ministream.time.clock.ManualClock``, moved by the test or the script).

Rules, each pinned by a test in ``tests/time/test_timers.py``:

1. at most one timer per (key, timestamp) in each time domain: registering it again changes nothing;
2. timers fire in timestamp order; timers with the same timestamp fire in key order, a null key first (Flink
   leaves ties in any order; ministream sorts them so that every run is the same: :func:`in_key_order`);
3. a fired timer is removed; deleting a timer that does not exist does nothing;
4. timers belong to their key's key group, like keyed state, so a snapshot can be split by key group and
   restored into a different number of subtasks;
5. in Spark's ``transformWithState`` a timer stays registered while its handler runs (``listTimers()`` in
   the handler still lists it) and is deleted after it: the ``due_*`` methods find the timers due without
   removing them, for the operator to delete each one after its handler.

Keys must be comparable with each other (strings, numbers, tuples of them, any of them null), because ties
are broken by key.

>>> timers = TimerService()
>>> timers.register_event_time_timer("b", 10_000)
>>> timers.register_event_time_timer("a", 10_000)
>>> timers.register_event_time_timer("a", 10_000)   # the same (key, timestamp): still one timer
>>> timers.register_event_time_timer("a", 30_000)
>>> timers.pop_expired_event_time(watermark=10_000)
[(10000, 'a'), (10000, 'b')]
>>> timers.event_time_timers("a"), timers.size()
([30000], 1)
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable

from sortedcontainers import SortedList

from ministream.state.changes import StateDelta
from ministream.state.keygroups import MAX_PARALLELISM, key_group_of

EVENT_TIME = "event_time"
PROCESSING_TIME = "processing_time"
DOMAINS = (EVENT_TIME, PROCESSING_TIME)


def in_key_order(keys) -> list:
    """The keys sorted, a null key (or a null part of a key of several columns) before any other value, as
    Spark sorts nulls first: a grouping key may be null, and Python's ``None`` compares with nothing. Plain
    ``sorted`` first, since nulls are rare and it is the quicker.

    >>> in_key_order(["b", None, "a"]), in_key_order([("a", 2), ("a", None)])
    ([None, 'a', 'b'], [('a', None), ('a', 2)])
    """
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=_nulls_first)


def _nulls_first(key):
    if key is None:
        return (0,)
    if isinstance(key, tuple):
        return (1, tuple(map(_nulls_first, key)))
    return (1, key)


class TimerQueue:
    """The timers of one time domain, kept in firing order and findable by key: a *bucket queue*.

    Many timers share a timestamp (a heartbeat every 30 s for millions of sessions opened in the same few
    batches), so the queue keeps one bucket per distinct timestamp, the keys whose timer is due then, and an
    ordered index of the bucket times (a calendar queue with one bucket per instant, Brown 1988). Adding or
    removing a timer is a set operation, O(1), plus O(log B) when a bucket appears or empties (B distinct
    timestamps, B << n); firing takes the earliest buckets and sorts each one's keys (rule 2: ties in key
    order). A sorted set of ``(timestamp, key)`` pairs would pay O(log n) and a tuple per timer, and a
    ``SortedSet`` per key (a set and a sorted list) costs about a kilobyte per key; a key has a handful of
    timers, so a plain sorted list per key is enough.

    State: ``self.buckets``, ``{timestamp: {key, ...}}``, every timer by its time; ``self.times``, a
    ``SortedList`` of the timestamps that have a bucket, in firing order; ``self.by_key``, ``{key: [timestamps,
    earliest first]}``, the same timers looked up by key; ``self.count``, how many timers there are;
    ``self.changed``, ``{key: None}``, the keys whose timers were added or removed since the last checkpoint
    (``None`` until a checkpoint starts the count: :meth:`TimerService.snapshot`).

    >>> queue = TimerQueue()
    >>> queue.add("b", 3); queue.add("a", 5); queue.add("a", 3)
    >>> sorted(queue.buckets[3]), list(queue.times), queue.timestamps("a")
    (['a', 'b'], [3, 5], [3, 5])
    >>> queue.pop_until(3), queue.next_timestamp()
    ([(3, 'a'), (3, 'b')], 5)
    """

    def __init__(self):
        self.buckets: dict[int, set] = {}  # {timestamp: {key, ...}}
        self.times: SortedList = SortedList()  # the timestamps of self.buckets, earliest first
        self.by_key: dict = {}  # {key: [timestamps, earliest first]}
        self.count = 0
        self.changed: dict | None = None  # {key: None} changed since the last checkpoint, once one counts

    def add(self, key, timestamp: int) -> None:
        """Add the timer (key, timestamp) unless it is already there. Cost: O(1), O(log B) for a new bucket."""
        bucket = self.buckets.get(timestamp)
        if bucket is None:
            bucket = self.buckets[timestamp] = set()
            self.times.add(timestamp)
        elif key in bucket:
            return
        bucket.add(key)
        stamps = self.by_key.get(key)
        if stamps is None:
            self.by_key[key] = [timestamp]
        else:
            insort(stamps, timestamp)
        self.count += 1
        if self.changed is not None:
            self.changed[key] = None

    def discard(self, key, timestamp: int) -> None:
        """Remove the timer (key, timestamp) if it is there. Cost: O(1), O(log B) when its bucket empties."""
        self.discard_keys(timestamp, (key,))

    def discard_keys(self, timestamp: int, keys) -> None:
        """Remove the timers at ``timestamp`` of ``keys``, those that are there, with the bucket looked up once
        (a micro-batch deletes the timers of one time together, after their handlers). Cost: O(k) for k keys,
        O(log B) when the bucket empties.

        >>> queue = TimerQueue(); queue.add("a", 3); queue.add("b", 3); queue.add("b", 5)
        >>> queue.discard_keys(3, ["a", "b", "c"]); list(queue.times), queue.timestamps("b"), len(queue)
        ([5], [5], 1)
        """
        bucket = self.buckets.get(timestamp)
        if bucket is None:
            return
        by_key, changed = self.by_key, self.changed
        for key in keys:
            if key not in bucket:
                continue
            bucket.remove(key)
            stamps = by_key[key]
            if len(stamps) == 1:  # the key's last timer
                del by_key[key]
            else:
                stamps.remove(timestamp)
            self.count -= 1
            if changed is not None:
                changed[key] = None
        if not bucket:
            del self.buckets[timestamp]
            self.times.remove(timestamp)

    def timestamps(self, key) -> list[int]:
        """The timestamps of ``key``'s timers, earliest first."""
        return list(self.by_key.get(key, ()))

    def due(self, time: int) -> list[tuple[int, list]]:
        """Every timer with ``timestamp <= time``, in firing order (by timestamp, then key), left in place, as
        ``(timestamp, [key, ...])``: the keys due at one time come together, as a bucket holds them. Cost:
        O(k log k) for k due.

        >>> queue = TimerQueue(); queue.add("b", 3); queue.add("a", 3); queue.add("c", 9)
        >>> queue.due(5), len(queue)
        ([(3, ['a', 'b'])], 3)
        """
        return [(timestamp, in_key_order(self.buckets[timestamp])) for timestamp in self.times.irange(maximum=time)]

    def pop_until(self, time: int) -> list[tuple[int, object]]:
        """Remove and return, in firing order, every timer with ``timestamp <= time``, as ``(timestamp, key)``."""
        fired = [(timestamp, key) for timestamp, keys in self.due(time) for key in keys]
        for timestamp, key in fired:
            self.discard(key, timestamp)
        return fired

    def next_timestamp(self) -> int | None:
        """The earliest timestamp of any timer, or ``None`` when there is none."""
        return self.times[0] if self.times else None

    def __len__(self):
        return self.count


class TimerService:
    """The event-time and processing-time timers of one subtask of a keyed step.

    State: one :class:`TimerQueue` per time domain, ``self.queues = {"event_time": ..., "processing_time": ...}``.
    The firing methods only *return* the due timers; the operator that owns the service calls its user's
    ``on_timer`` for each, with the key set. A callback may register new timers that are due already: call
    ``pop_expired_*`` again until it returns nothing to fire those too (Flink fires them in the same
    watermark advance).

    >>> timers = TimerService()
    >>> timers.register_processing_time_timer("device-1", 60_000)
    >>> timers.pop_expired_processing_time(now=59_999), timers.next_processing_time()
    ([], 60000)
    >>> timers.pop_expired_processing_time(now=60_000)
    [(60000, 'device-1')]

    Args:
        max_parallelism: the number of key groups (the engine's ``MAX_PARALLELISM`` by default).
    """

    def __init__(self, max_parallelism: int = MAX_PARALLELISM):
        self.max_parallelism = max_parallelism
        self.queues = {EVENT_TIME: TimerQueue(), PROCESSING_TIME: TimerQueue()}

    # --- event time ---------------------------------------------------------------------------------------

    def register_event_time_timer(self, key, ts: int) -> None:
        """Ask for a call back for ``key`` when the watermark reaches ``ts`` (once per key and timestamp).

        >>> timers = TimerService(); timers.register_event_time_timer("a", 5_000); timers.event_time_timers("a")
        [5000]
        """
        self.queues[EVENT_TIME].add(key, whole_ms(ts))

    def delete_event_time_timer(self, key, ts: int) -> None:
        """Cancel ``key``'s event-time timer at ``ts``; nothing happens if there is none.

        >>> timers = TimerService(); timers.register_event_time_timer("a", 5_000)
        >>> timers.delete_event_time_timer("a", 5_000); timers.delete_event_time_timer("a", 7_000)
        >>> timers.event_time_timers("a")
        []
        """
        self.queues[EVENT_TIME].discard(key, ts)

    def event_time_timers(self, key) -> list[int]:
        """The timestamps of ``key``'s event-time timers, earliest first.

        >>> timers = TimerService()
        >>> for ts in (9_000, 2_000): timers.register_event_time_timer("a", ts)
        >>> timers.event_time_timers("a"), timers.event_time_timers("b")
        ([2000, 9000], [])
        """
        return self.queues[EVENT_TIME].timestamps(key)

    def pop_expired_event_time(self, watermark: int) -> list[tuple[int, object]]:
        """Remove and return the event-time timers with ``ts <= watermark``, as ``(ts, key)`` in firing order.

        >>> timers = TimerService()
        >>> for key, ts in (("b", 7), ("a", 7), ("a", 3), ("c", 8)): timers.register_event_time_timer(key, ts)
        >>> timers.pop_expired_event_time(7)
        [(3, 'a'), (7, 'a'), (7, 'b')]
        """
        return self.queues[EVENT_TIME].pop_until(watermark)

    def due_event_time(self, watermark: int) -> list[tuple[int, list]]:
        """The event-time timers with ``ts <= watermark``, as ``(ts, [key, ...])`` in firing order, left
        registered (a micro-batch fires them and deletes them after their handlers: rule 5).

        >>> timers = TimerService(); timers.register_event_time_timer("a", 7)
        >>> timers.due_event_time(7), timers.event_time_timers("a")
        ([(7, ['a'])], [7])
        """
        return self.queues[EVENT_TIME].due(watermark)

    def next_event_time(self) -> int | None:
        """The earliest event-time timer's timestamp, or ``None``.

        >>> timers = TimerService(); timers.register_event_time_timer("a", 4); timers.next_event_time()
        4
        """
        return self.queues[EVENT_TIME].next_timestamp()

    # --- processing time ----------------------------------------------------------------------------------

    def register_processing_time_timer(self, key, ts: int) -> None:
        """Ask for a call back for ``key`` when the processing-time clock reaches ``ts`` (once per key and
        timestamp).

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.processing_time_timers("a")
        [1000]
        """
        self.queues[PROCESSING_TIME].add(key, whole_ms(ts))

    def delete_processing_time_timer(self, key, ts: int) -> None:
        """Cancel ``key``'s processing-time timer at ``ts``; nothing happens if there is none.

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.delete_processing_time_timer("a", 1_000); timers.size()
        0
        """
        self.queues[PROCESSING_TIME].discard(key, ts)

    def processing_time_timers(self, key) -> list[int]:
        """The timestamps of ``key``'s processing-time timers, earliest first.

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.processing_time_timers("a"), timers.event_time_timers("a")
        ([1000], [])
        """
        return self.queues[PROCESSING_TIME].timestamps(key)

    def pop_expired_processing_time(self, now: int) -> list[tuple[int, object]]:
        """Remove and return the processing-time timers with ``ts <= now``, as ``(ts, key)`` in firing order.

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.pop_expired_processing_time(999), timers.pop_expired_processing_time(1_000)
        ([], [(1000, 'a')])
        """
        return self.queues[PROCESSING_TIME].pop_until(now)

    def due_processing_time(self, now: int) -> list[tuple[int, list]]:
        """The processing-time timers with ``ts <= now``, as ``(ts, [key, ...])`` in firing order, left
        registered.

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.due_processing_time(1_000), timers.size()
        ([(1000, ['a'])], 1)
        """
        return self.queues[PROCESSING_TIME].due(now)

    def next_processing_time(self) -> int | None:
        """The earliest processing-time timer's timestamp, or ``None``.

        >>> TimerService().next_processing_time() is None
        True
        """
        return self.queues[PROCESSING_TIME].next_timestamp()

    # --- size, snapshot, restore --------------------------------------------------------------------------

    def size(self) -> int:
        """How many timers are registered, both domains together.

        >>> timers = TimerService(); timers.register_event_time_timer("a", 1)
        >>> timers.register_processing_time_timer("a", 1); timers.size()
        2
        """
        return sum(len(queue) for queue in self.queues.values())

    def snapshot(self, checkpointing: str | None = None) -> dict[int, dict[str, dict]] | StateDelta:
        """The timers as plain data, by key group: ``{key_group: {domain: {key: [timestamps]}}}``.

        Laid out like ``KeyedStateBackend.snapshot`` so that a checkpoint hands each key group's timers to
        the subtask that owns the group after a restore, with its state. A checkpoint's snapshot
        (``checkpointing`` is ``"full"`` or ``"delta"``, the keyed state backend's flag) is where the queues
        count changed keys from; a ``"delta"`` one is incremental, like keyed state (``state/changes.py``): a
        ``StateDelta`` with the timers of each key whose timers changed since the last checkpoint, the domains
        as its tables, and the keys left without timers as removed. Until a checkpoint has counted, a delta
        holds every timer (``tracked`` is empty: the restore replaces them all).

        >>> timers = TimerService()
        >>> timers.register_event_time_timer("alice", 5_000); timers.register_processing_time_timer("bob", 9)
        >>> timers.snapshot("full")
        {38: {'event_time': {'alice': [5000]}}, 82: {'processing_time': {'bob': [9]}}}
        >>> timers.register_event_time_timer("alice", 7_000); timers.delete_processing_time_timer("bob", 9)
        >>> timers.snapshot("delta")
        StateDelta(tracked=['event_time', 'processing_time'], updated={38: {'event_time': {'alice': [5000, 7000]}}}, removed={82: {'processing_time': ['bob']}})
        """
        if checkpointing == "delta" and all(queue.changed is not None for queue in self.queues.values()):
            snapshot: dict | StateDelta = self._delta()
        else:
            snapshot = self._whole()
            if checkpointing == "delta":
                snapshot = StateDelta([], snapshot)
        if checkpointing is not None:
            for queue in self.queues.values():
                queue.changed = {}  # a checkpoint: changes count from here
        return snapshot

    def _whole(self) -> dict[int, dict[str, dict]]:
        out: dict[int, dict[str, dict]] = {}  # {key_group: {domain: {key: [timestamps]}}}
        for domain in DOMAINS:
            by_key = self.queues[domain].by_key
            for key in in_key_order(by_key):
                group = key_group_of(key, self.max_parallelism)
                out.setdefault(group, {}).setdefault(domain, {})[key] = list(by_key[key])
        return dict(sorted(out.items()))

    def _delta(self) -> StateDelta:
        """The timers of the keys changed since the last checkpoint, as a ``StateDelta`` by key group."""
        updated: dict[int, dict[str, dict]] = {}
        removed: dict[int, dict[str, list]] = {}
        for domain in DOMAINS:
            queue = self.queues[domain]
            assert queue.changed is not None
            for key in in_key_order(queue.changed):
                group = key_group_of(key, self.max_parallelism)
                stamps = queue.by_key.get(key)
                if stamps:
                    updated.setdefault(group, {}).setdefault(domain, {})[key] = list(stamps)
                else:
                    removed.setdefault(group, {}).setdefault(domain, []).append(key)
        return StateDelta(list(DOMAINS), dict(sorted(updated.items())), dict(sorted(removed.items())))

    def restore(self, snapshot: dict[int, dict[str, dict]], key_groups: Iterable[int] | None = None) -> None:
        """Add the timers of the key groups in ``key_groups`` (every group when ``None``) from a snapshot (a
        full one: a restore reads deltas applied, ``checkpoints/incremental.resolve``). No checkpoint counts
        from the restored timers: until the next one, a delta would hold them all.

        >>> old = TimerService(); old.register_event_time_timer("alice", 5_000)
        >>> old.register_event_time_timer("bob", 6_000)
        >>> new = TimerService(); new.restore(old.snapshot(), key_groups=range(0, 64))  # alice is in 38
        >>> new.pop_expired_event_time(10_000)
        [(5000, 'alice')]
        """
        wanted = None if key_groups is None else set(key_groups)
        for group, domains in snapshot.items():
            if wanted is not None and group not in wanted:
                continue
            for domain, timers in domains.items():
                for key, stamps in timers.items():
                    for ts in stamps:
                        self.queues[domain].add(key, ts)
        for queue in self.queues.values():
            queue.changed = None

    def __repr__(self):
        return (
            f"TimerService({len(self.queues[EVENT_TIME])} event-time, "
            f"{len(self.queues[PROCESSING_TIME])} processing-time timers)"
        )


def whole_ms(ts) -> int:
    """``ts`` itself when it is whole milliseconds (an int, not a bool); else a ``ValueError``.

    >>> whole_ms(5_000)
    5000
    """
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise ValueError(f"a timer's timestamp is whole milliseconds (an int), got {ts!r}")
    return ts
