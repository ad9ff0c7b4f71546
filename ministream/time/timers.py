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
2. timers fire in timestamp order; timers with the same timestamp fire in key order (Flink leaves ties in
   any order; ministream sorts them so that every run is the same);
3. a fired timer is removed; deleting a timer that does not exist does nothing;
4. timers belong to their key's key group, like keyed state, so a snapshot can be split by key group and
   restored into a different number of subtasks;
5. in Spark's ``transformWithState`` a timer stays registered while its handler runs (``listTimers()`` in
   the handler still lists it) and is deleted after it: the ``due_*`` methods find the timers due without
   removing them, for the operator to delete each one after its handler.

Keys must be comparable with each other (strings, numbers, tuples of them), because ties are broken by key.

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

from collections.abc import Iterable
from heapq import heappop, heappush

from ministream.state.keygroups import MAX_PARALLELISM, key_group_of

EVENT_TIME = "event_time"
PROCESSING_TIME = "processing_time"
DOMAINS = (EVENT_TIME, PROCESSING_TIME)


class TimerQueue:
    """The timers of one time domain, kept in firing order and findable by key.

    State: ``self.queue``, a heap of ``(timestamp, key)``: the next timer to fire on top, O(log n) to add
    one or to take the top; and ``self.by_key``, ``{key: {timestamp, ...}}``, the timers that are
    registered, looked up by key. A deleted timer stays in the heap until it comes to the top, where it is
    skipped, since ``by_key`` no longer has it: removing it from the middle of a heap would cost O(n).

    >>> queue = TimerQueue()
    >>> queue.add("a", 5); queue.add("a", 3); queue.add("b", 3)
    >>> queue.due(4), queue.timestamps("a")
    ([(3, 'a'), (3, 'b')], [3, 5])
    >>> queue.pop_until(3), queue.next_timestamp(), len(queue)
    ([(3, 'a'), (3, 'b')], 5, 1)
    """

    def __init__(self):
        self.queue: list = []  # heap of (timestamp, key), deleted timers included until they come to the top
        self.by_key: dict = {}  # {key: {timestamp, ...}}: the registered timers
        self.registered = 0  # how many timers by_key holds

    def add(self, key, timestamp: int) -> None:
        """Add the timer (key, timestamp) unless it is already there. Cost: O(log n)."""
        stamps = self.by_key.setdefault(key, set())
        if timestamp not in stamps:
            stamps.add(timestamp)
            self.registered += 1
            heappush(self.queue, (timestamp, key))

    def discard(self, key, timestamp: int) -> None:
        """Remove the timer (key, timestamp) if it is there (its heap entry goes when it reaches the top).
        Cost: O(1)."""
        stamps = self.by_key.get(key)
        if stamps is not None and timestamp in stamps:
            stamps.discard(timestamp)
            self.registered -= 1
            if not stamps:
                del self.by_key[key]

    def _is_registered(self, timestamp: int, key) -> bool:
        return timestamp in self.by_key.get(key, ())

    def _drop_deleted_on_top(self) -> None:
        """Pop the heap's top entries whose timer was deleted (or that repeat one already popped)."""
        while self.queue and not self._is_registered(*self.queue[0]):
            heappop(self.queue)

    def timestamps(self, key) -> list[int]:
        """The timestamps of ``key``'s timers, earliest first."""
        return sorted(self.by_key.get(key, ()))

    def pop_until(self, time: int) -> list[tuple[int, object]]:
        """Remove and return, in firing order, every timer with ``timestamp <= time``. Cost: O(k log n)."""
        fired = []
        self._drop_deleted_on_top()
        while self.queue and self.queue[0][0] <= time:
            timestamp, key = heappop(self.queue)
            self.discard(key, timestamp)
            fired.append((timestamp, key))
            self._drop_deleted_on_top()
        return fired

    def due(self, time: int) -> list[tuple[int, object]]:
        """Every timer with ``timestamp <= time``, in firing order, left registered: taken off the heap in
        order, then put back. Cost: O(k log n).

        >>> queue = TimerQueue(); queue.add("a", 3); queue.add("b", 9)
        >>> queue.due(5), len(queue)
        ([(3, 'a')], 2)
        """
        found: dict = {}  # {(timestamp, key): None}, in firing order; a timer's repeated entries once
        self._drop_deleted_on_top()
        while self.queue and self.queue[0][0] <= time:
            entry = heappop(self.queue)
            if self._is_registered(*entry):
                found[entry] = None
            self._drop_deleted_on_top()
        for entry in found:
            heappush(self.queue, entry)
        return list(found)

    def next_timestamp(self) -> int | None:
        """The earliest timestamp of any timer, or ``None`` when there is none."""
        self._drop_deleted_on_top()
        return self.queue[0][0] if self.queue else None

    def __len__(self):
        return self.registered


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
        self.queues[EVENT_TIME].add(key, _whole_ms(ts))

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

    def due_event_time(self, watermark: int) -> list[tuple[int, object]]:
        """The event-time timers with ``ts <= watermark``, as ``(ts, key)`` in firing order, left registered (a
        micro-batch fires them and deletes each after its handler: rule 5).

        >>> timers = TimerService(); timers.register_event_time_timer("a", 7)
        >>> timers.due_event_time(7), timers.event_time_timers("a")
        ([(7, 'a')], [7])
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
        self.queues[PROCESSING_TIME].add(key, _whole_ms(ts))

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

    def due_processing_time(self, now: int) -> list[tuple[int, object]]:
        """The processing-time timers with ``ts <= now``, in firing order, left registered.

        >>> timers = TimerService(); timers.register_processing_time_timer("a", 1_000)
        >>> timers.due_processing_time(1_000), timers.size()
        ([(1000, 'a')], 1)
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

    def snapshot(self) -> dict[int, dict[str, dict]]:
        """The timers as plain data, by key group: ``{key_group: {domain: {key: [timestamps]}}}``.

        Laid out like ``KeyedStateBackend.snapshot`` so that a checkpoint hands each key group's timers to
        the subtask that owns the group after a restore, with its state.

        >>> timers = TimerService()
        >>> timers.register_event_time_timer("alice", 5_000); timers.register_processing_time_timer("bob", 9)
        >>> timers.snapshot()
        {38: {'event_time': {'alice': [5000]}}, 82: {'processing_time': {'bob': [9]}}}
        """
        out: dict[int, dict[str, dict]] = {}  # {key_group: {domain: {key: [timestamps]}}}
        for domain in DOMAINS:
            by_key = self.queues[domain].by_key
            for key in sorted(by_key):
                group = key_group_of(key, self.max_parallelism)
                out.setdefault(group, {}).setdefault(domain, {})[key] = sorted(by_key[key])
        return dict(sorted(out.items()))

    def restore(self, snapshot: dict[int, dict[str, dict]], key_groups: Iterable[int] | None = None) -> None:
        """Add the timers of the key groups in ``key_groups`` (every group when ``None``) from a snapshot.

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

    def __repr__(self):
        return (
            f"TimerService({len(self.queues[EVENT_TIME])} event-time, "
            f"{len(self.queues[PROCESSING_TIME])} processing-time timers)"
        )


def _whole_ms(ts) -> int:
    if isinstance(ts, bool) or not isinstance(ts, int):
        raise ValueError(f"a timer's timestamp is whole milliseconds (an int), got {ts!r}")
    return ts
