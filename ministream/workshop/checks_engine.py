"""Checks of the engine exercises: key groups, keyed state in update mode, timers, TTL, barrier alignment.

- ``key_group(key)``: which key group a key belongs to, the same in every process;
- ``update_batch(totals, rows)``: a running count and sum per key, and the rows update mode emits;
- ``due_timers(timers, watermark)``: the event-time timers that fire at the end of a batch, in order;
- ``ttl_expired(written_at, ttl, batch_timestamp)``: whether a state entry has outlived its time-to-live;
- ``session_timer(figures, now, heartbeat, timeout)`` and ``next_beat(started, now, heartbeat)``: what a
  game device's processing-time timer does with a session, and when its next heartbeat is;
- ``barrier_arrives(held_back, position, inputs)``: one step of aligning a checkpoint barrier;
- ``restart_at(offsets, commits)``: where a micro-batch query goes on after a crash, from its checkpoint.

>>> def key_group(key):
...     import zlib
...     return zlib.crc32(repr(key).encode("utf-8")) % 128
>>> check_key_group(key_group)
✓ key_group: 8 keys in the same key group as ministream.state.keygroups, in this process and in a fresh one
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import zlib

from ministream.core.results import normalize_row
from ministream.lessons import get_lesson
from ministream.lessons.game_heartbeats import due_rows
from ministream.state.changelog import ChangelogStorage, LogPosition, read_state
from ministream.state.changes import StateDelta
from ministream.state.keygroups import key_group_of
from ministream.state.ttl import is_expired
from ministream.time.timers import TimerService
from ministream.workshop.checks_windows import show_time
from ministream.workshop.feedback import Case, ExerciseFailed, Passed, call, check_cases, fail
from ministream.workshop.oracle import get_oracle

KEYS = ["a", "b", "c", "alice", "bob", 1, "1", ("bob", 0)]

SALTED = (
    "a key group must come from a hash that is the same in every process: Python's hash(str) is salted per "
    "process (PYTHONHASHSEED), so after a restart key {key!r} would go to another subtask and find no state. "
    "Use a stable hash such as zlib.crc32"
)
RECIPE = (
    "a key group is a stable hash of the key modulo the maximum parallelism, 128: here "
    "zlib.crc32(repr(key).encode('utf-8')) % 128"
)
REPR = "hash repr(key), not str(key): 1 and '1' are different keys and must be free to land in different groups"


def _in_another_process(fn, keys: list) -> list:
    """``[fn(key) for key in keys]`` computed by a fresh Python process with another hash seed."""
    from pyspark import cloudpickle

    payload = base64.b64encode(cloudpickle.dumps((fn, keys))).decode()
    program = (
        "import base64, pickle, sys; fn, keys = pickle.loads(base64.b64decode(sys.argv[1])); "
        "print(repr([fn(key) for key in keys]))"
    )
    env = dict(os.environ, PYTHONHASHSEED="12345" if os.environ.get("PYTHONHASHSEED") != "12345" else "54321")
    done = subprocess.run(
        [sys.executable, "-c", program, payload], capture_output=True, check=False, text=True, env=env, timeout=120
    )
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no message"]
        raise ExerciseFailed(f"key_group: your function failed in a fresh process: {last[0]}")
    return eval(done.stdout.strip(), {})  # a list of ints printed by repr


def check_key_group(key_group) -> Passed:
    """Exercise: ``key_group(key)`` is the key's key group: ``crc32(repr(key)) % 128``, the same in every
    process. Checked against ``ministream.state.keygroups`` (Spark partitions state by a Murmur3 hash instead, for
    the same reason: it is the same in every process).

    Args:
        key_group: the learner's function.
    """
    here = [call("key_group", key_group, key) for key in KEYS]
    there = _in_another_process(key_group, KEYS)
    for key, mine, theirs in zip(KEYS, here, there):
        if mine != theirs:
            fail(
                "key_group",
                f"key {key!r} in this process and in a fresh one",
                f"{mine} here and {theirs} there",
                "the same group in both",
                SALTED.format(key=key),
                "a stable hash",
            )
    with_str = [zlib.crc32(str(key).encode("utf-8")) % 128 for key in KEYS]
    expected = [key_group_of(key) for key in KEYS]
    if here == with_str and here != expected:
        key = next(key for key, mine, want in zip(KEYS, here, expected) if mine != want)
        fail("key_group", f"key {key!r}", str(here[KEYS.index(key)]), str(key_group_of(key)), REPR, "ministream")
    cases = [Case((key,), RECIPE, f"key {key!r}") for key in KEYS]
    check_cases("key_group", key_group, cases, lambda case: key_group_of(case.args[0]), against="ministream")
    return Passed(
        "key_group",
        f"{len(KEYS)} keys in the same key group as ministream.state.keygroups, in this process and in a fresh one",
    )


# -- running totals in update mode -------------------------------------------------------------------------

ONLY_TOUCHED = "update mode emits only the keys the batch touched; emitting every key, every batch, is complete mode"
CARRY_OVER = (
    "keyed state carries over from batch to batch: the row of a key is its count and sum over every "
    "batch so far, not over this batch"
)
ONE_PER_KEY = "one row per key the batch touched, with the key's totals after the whole batch (not one per event)"
EVERY_TOUCHED = "every key the batch touched is emitted, with its new totals"


def spark_update_batch(totals: dict, rows: list[dict]) -> list[dict]:
    """The rule: add the batch's rows to ``totals`` (``{key: (count, sum)}``, updated in place), then emit one
    row per key the batch touched.

    >>> totals = {"a": (2, 4.0)}
    >>> spark_update_batch(totals, [{"key": "a", "value": 5.0}, {"key": "c", "value": 1.0}]), totals["a"]
    ([{'key': 'a', 'count': 3, 'sum': 9.0}, {'key': 'c', 'count': 1, 'sum': 1.0}], (3, 9.0))
    """
    touched = []
    for row in rows:
        count, total = totals.get(row["key"], (0, 0.0))
        totals[row["key"]] = (count + 1, total + row["value"])
        touched.append(row["key"])
    return [{"key": key, "count": totals[key][0], "sum": totals[key][1]} for key in dict.fromkeys(touched)]


def check_update_batch(update_batch, lesson: str = "running-aggregation", against: str = "spark") -> Passed:
    """Exercise: ``update_batch(totals, rows)`` adds one batch's rows to the running totals (``{key: (count,
    sum)}``, the keyed state, updated in place) and returns the rows update mode emits for the batch.

    The lesson's batches are fed through it in order; each batch's rows must be the ones Spark's
    ``groupBy("key").agg(count, sum)`` emitted in update mode.

    >>> check_update_batch(spark_update_batch, against="ministream")
    ✓ update_batch: the 3 batches of running-aggregation emit ministream's rows in update mode

    Args:
        update_batch: the learner's function.
        lesson: the running-aggregation lesson.
        against: ``"spark"`` or ``"ministream"``.
    """

    oracle = get_oracle(against)
    the_lesson = get_lesson(lesson)
    batches = oracle.twin_output(lesson, {"mode": "update"})
    totals: dict = {}  # {key: (count, sum)}
    for batch in batches:
        rows = the_lesson.default_script[batch.batch_id]
        mine = call("update_batch", update_batch, totals, [dict(row) for row in rows])
        try:
            mine = [{"key": row["key"], "count": row["count"], "sum": row["sum"]} for row in mine or []]
        except (KeyError, TypeError):
            raise ExerciseFailed(
                f"update_batch: return a list of rows like {{'key': 'a', 'count': 2, 'sum': 4.0}}, not {mine!r}"
            ) from None
        ours = sorted(normalize_row(row) for row in mine)
        theirs = sorted(normalize_row(row) for row in batch.rows)
        if ours == theirs:
            continue
        touched = {row["key"] for row in rows}
        keys = [row["key"] for row in mine]
        spark_of = {row["key"]: row for row in batch.rows}
        where = f"batch {batch.batch_id} (events {', '.join(row['key'] for row in rows)})"
        if any(key not in touched for key in keys):
            key = next(key for key in keys if key not in touched)
            fail("update_batch", f"{where}, key {key}", "a row", "no row", ONLY_TOUCHED, oracle.name)
        if len(keys) != len(set(keys)):
            key = next(key for key in keys if keys.count(key) > 1)
            fail("update_batch", f"{where}, key {key}", f"{keys.count(key)} rows", "one row", ONE_PER_KEY, oracle.name)
        missing = [key for key in spark_of if key not in keys]
        if missing:
            fail("update_batch", f"{where}, key {missing[0]}", "no row", "a row", EVERY_TOUCHED, oracle.name)
        row = next(row for row in mine if normalize_row(row) != normalize_row(spark_of[row["key"]]))
        spark_row = spark_of[row["key"]]
        fail(
            "update_batch",
            f"{where}, key {row['key']}",
            f"count {row['count']}, sum {row['sum']}",
            f"count {spark_row['count']}, sum {spark_row['sum']}",
            CARRY_OVER,
            oracle.name,
        )
    return Passed("update_batch", f"the {len(batches)} batches of {lesson} emit {oracle.name}'s rows in update mode")


# -- timers and time-to-live ---------------------------------------------------------------------------------

TIMER_DUE = (
    "an event-time timer fires at the end of the first batch whose watermark is at or past it: "
    "expiry <= WM_k, inclusive"
)
TIMER_ORDER = "due timers fire in expiry order (ties in key order), whatever order they were set in"
TTL_RULE = (
    "an entry expires once the batch timestamp reaches its write time plus the TTL: batch_timestamp >= "
    "written_at + ttl, inclusive (Spark's StateTTL.isExpired); the TTL counts processing time, not event time"
)


def timer_cases() -> list[Case]:
    """``due_timers(timers, watermark)`` cases; timers are ``(expiry, key)`` pairs."""
    timers = [(30_000, "b"), (10_000, "a"), (20_000, "a"), (10_000, "c")]
    raw = [(5_000, TIMER_DUE), (10_000, TIMER_DUE), (19_999, TIMER_ORDER), (30_000, TIMER_ORDER)]
    return [
        Case(
            (list(timers), watermark),
            rule,
            f"timers {sorted(timers)} (set in the order {timers}), watermark {show_time(watermark)}",
        )
        for watermark, rule in raw
    ]


def check_due_timers(due_timers) -> Passed:
    """Exercise: ``due_timers(timers, watermark)`` returns the ``(expiry, key)`` timers that fire at the end of
    a batch with this watermark, in firing order. Checked against ``ministream.time.timers`` (the rule of Spark's
    ``transformWithState``, measured in tests/operators/test_process.py).

    >>> check_due_timers(lambda timers, wm: sorted(t for t in timers if t[0] <= wm))
    ✓ due_timers: 4 cases agree with ministream.time.timers

    Args:
        due_timers: the learner's function.
    """

    def expected(case):
        service = TimerService()
        for expiry, key in case.args[0]:
            service.register_event_time_timer(key, expiry)
        return service.pop_expired_event_time(case.args[1])

    def same(got, want):
        try:
            return [tuple(timer) for timer in got] == want
        except TypeError:
            return False

    return check_cases(
        "due_timers",
        lambda timers, watermark: due_timers(list(timers), watermark),
        timer_cases(),
        expected,
        against="ministream.time.timers",
        show=repr,
        same=same,
    )


def check_ttl_expired(ttl_expired) -> Passed:
    """Exercise: ``ttl_expired(written_at, ttl, batch_timestamp)`` says whether a state entry written at
    processing time ``written_at`` with time-to-live ``ttl`` has expired in a batch stamped ``batch_timestamp``.

    >>> check_ttl_expired(lambda written_at, ttl, now: now >= written_at + ttl)
    ✓ ttl_expired: 3 cases agree with ministream.state.ttl

    Args:
        ttl_expired: the learner's function.
    """

    raw = [(1_000, 2_000, 2_500), (1_000, 2_000, 3_000), (1_000, 2_000, 3_001)]
    cases = [
        Case(args, TTL_RULE, f"written at {args[0]} ms, TTL {args[1]} ms, batch timestamp {args[2]} ms") for args in raw
    ]
    return check_cases(
        "ttl_expired",
        ttl_expired,
        cases,
        lambda case: is_expired(case.args[0] + case.args[1], case.args[2]),
        against="ministream.state.ttl",
        show=lambda answer: "expired" if answer else "alive",
    )


# -- game heartbeats -------------------------------------------------------------------------------------------

CLOSE_FIRST = (
    "a session with no event for the timeout closes: last_event + timeout <= now, inclusive; it closes instead "
    "of sending a heartbeat, even when one is due"
)
BEAT_DUE = "a heartbeat is due when the batch timestamp reaches it: next_beat <= now, inclusive"
NOTHING_DUE = "a session whose heartbeat and timeout are both after now does nothing"
ON_THE_GRID = (
    "heartbeats keep the session's rhythm: the next one is started + k * heartbeat, the first strictly after "
    "now, so a late batch sends one heartbeat, not a burst, and the rhythm does not drift"
)


def _what_the_lesson_does(figures, now, heartbeat, timeout):
    """``(kind of row or None, next_beat after it)``: the lesson's ``due_rows`` on one session."""
    rows, changed, _ = due_rows("d", {"s": figures}, now, heartbeat, timeout)
    return (rows[0]["kind"] if rows else None), changed.get("s", figures)[2]


def check_session_timer(session_timer) -> Passed:
    """Exercise: ``session_timer(figures, now, heartbeat, timeout)`` says what a device's timer does with one
    session: ``"timed_out"``, ``"heartbeat"`` or ``None``; checked against ``lessons/game_heartbeats.due_rows``,
    which Spark's twin runs too.

    >>> check_session_timer(lambda f, now, hb, to: "timed_out" if f[1] + to <= now else
    ...                     ("heartbeat" if f[2] <= now else None))
    ✓ session_timer: 5 cases agree with lessons/game_heartbeats.py
    """
    raw = [  # (figures, now), heartbeat 30 s, timeout 45 s
        (((0, 0, 30_000, 1, 0.0), 10_000), NOTHING_DUE),
        (((0, 20_000, 30_000, 2, 1.0), 30_000), BEAT_DUE),
        (((0, 0, 30_000, 1, 0.0), 45_000), CLOSE_FIRST),
        (((0, 0, 60_000, 1, 0.0), 44_999), NOTHING_DUE),
        (((0, 15_000, 60_000, 2, 0.0), 60_000), CLOSE_FIRST),
    ]
    cases = [
        Case((figures, now, 30_000, 45_000), rule, f"session {figures}, batch timestamp {now} ms")
        for (figures, now), rule in raw
    ]
    return check_cases(
        "session_timer",
        session_timer,
        cases,
        lambda case: _what_the_lesson_does(*case.args)[0],
        against="lessons/game_heartbeats.py",
    )


def check_next_beat(next_beat) -> Passed:
    """Exercise: ``next_beat(started, now, heartbeat)``: the next heartbeat of a session started at ``started``
    that sent one at ``now``; checked against ``lessons/game_heartbeats.due_rows``.

    >>> check_next_beat(lambda started, now, hb: started + ((now - started) // hb + 1) * hb)
    ✓ next_beat: 3 cases agree with lessons/game_heartbeats.py
    """
    raw = [(5_000, 35_000), (5_000, 36_000), (5_000, 100_000)]  # on time, a second late, three beats late
    cases = [
        Case((started, now, 30_000), ON_THE_GRID, f"started at {started} ms, heartbeat sent at {now} ms")
        for started, now in raw
    ]
    return check_cases(
        "next_beat",
        next_beat,
        cases,
        lambda case: _what_the_lesson_does(
            (case.args[0], case.args[1], case.args[1], 1, 0.0), case.args[1], case.args[2], 10**9
        )[1],
        against="lessons/game_heartbeats.py",
    )


# -- barrier alignment ----------------------------------------------------------------------------------------

HOLD = (
    "an input that delivered barrier n is held back: what it sends after the barrier belongs to the next "
    "checkpoint, so it must wait until the snapshot is taken"
)
SNAPSHOT_WHEN_ALL = (
    "an aligned checkpoint snapshots when barrier n has arrived on every input, not before "
    "(snapshotting earlier is the at-least-once or unaligned mode)"
)
RELEASE = "once the snapshot is taken (and the barrier forwarded) every input is released: nothing is held back"


def barrier_cases() -> list[tuple[int, list[int], list[tuple[set, bool]]]]:
    """Arrival sequences: ``(inputs, positions in arrival order, [(held back after each, snapshot now)])``."""
    return [
        (1, [0], [(set(), True)]),
        (2, [1, 0], [({1}, False), (set(), True)]),
        (3, [0, 2, 1], [({0}, False), ({0, 2}, False), (set(), True)]),
        (2, [0, 1, 1, 0], [({0}, False), (set(), True), ({1}, False), (set(), True)]),
    ]


def check_barrier_arrives(barrier_arrives) -> Passed:
    """Exercise: ``barrier_arrives(held_back, position, inputs)``: barrier n arrives on input ``position`` of a
    subtask with ``inputs`` inputs; update ``held_back`` (the set of held-back inputs, in place) and return
    ``True`` when the subtask snapshots now. Checked against ``Subtask.align`` in ``ministream.core.physical`` (Flink's
    aligned checkpoints; Spark's micro-batches need no barriers).

    >>> def barrier_arrives(held_back, position, inputs):
    ...     held_back.add(position)
    ...     if len(held_back) == inputs:
    ...         held_back.clear()
    ...         return True
    ...     return False
    >>> check_barrier_arrives(barrier_arrives)
    ✓ barrier_arrives: 4 arrival sequences agree with ministream.core.physical's alignment

    Args:
        barrier_arrives: the learner's function.
    """
    for inputs, arrivals, expected in barrier_cases():
        held_back: set = set()
        for step, (position, (want_held, want_snapshot)) in enumerate(zip(arrivals, expected)):
            snapshot = call("barrier_arrives", barrier_arrives, held_back, position, inputs)
            later = " (the next checkpoint's barrier after the first snapshot)" if step >= inputs else ""
            where = f"{inputs} inputs, barriers arriving on inputs {arrivals[: step + 1]}{later}"
            if bool(snapshot) != want_snapshot or set(held_back) != want_held:
                rule = SNAPSHOT_WHEN_ALL if bool(snapshot) != want_snapshot else RELEASE if not want_held else HOLD
                fail(
                    "barrier_arrives",
                    where,
                    f"held back {sorted(held_back)}, snapshot {bool(snapshot)}",
                    f"held back {sorted(want_held)}, snapshot {want_snapshot}",
                    rule,
                    "ministream",
                )
    return Passed(
        "barrier_arrives", f"{len(barrier_cases())} arrival sequences agree with ministream.core.physical's alignment"
    )


# -- restarting from a checkpoint -------------------------------------------------------------------------------

RERUN = (
    "a batch in the offsets log without a commit started and did not finish: the restarted query runs it "
    "again, with the same id, offsets and watermark"
)
GO_ON = "when the last logged batch is committed, the restarted query goes on with the next batch id"
FRESH = "an empty checkpoint location starts at batch 0"


def check_restart_at(restart_at) -> Passed:
    """Exercise: ``restart_at(offsets, commits)``: a query restarts on a checkpoint whose ``offsets/`` holds the
    batch ids ``offsets`` and whose ``commits/`` holds ``commits``; return ``(batch_id, rerun)``: the batch it
    runs first and whether that batch runs again. Checked against ministream's ``MicroBatchCheckpoints`` (the
    rule Spark follows, confirmed in tests/lessons/test_checkpoint_recovery.py).

    >>> def restart_at(offsets, commits):
    ...     if not offsets:
    ...         return 0, False
    ...     last = max(offsets)
    ...     return (last, True) if last not in commits else (last + 1, False)
    >>> check_restart_at(restart_at)
    ✓ restart_at: 5 cases agree with the checkpoint protocol

    Args:
        restart_at: the learner's function.
    """
    raw = [
        ([], [], FRESH),
        ([0, 1, 2], [0, 1, 2], GO_ON),
        ([0, 1, 2, 3], [0, 1, 2], RERUN),
        ([0], [], RERUN),
        ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4], GO_ON),
    ]
    cases = [
        Case((offsets, commits), rule, f"offsets/ {offsets}, commits/ {commits}") for offsets, commits, rule in raw
    ]

    def expected(case):
        offsets, commits = case.args
        if not offsets:
            return (0, False)
        last = max(offsets)
        return (last, True) if last not in commits else (last + 1, False)

    def same(got, want):
        try:
            return (int(got[0]), bool(got[1])) == want
        except (TypeError, ValueError, IndexError):
            return False

    return check_cases(
        "restart_at",
        lambda offsets, commits: restart_at(list(offsets), list(commits)),
        cases,
        expected,
        against="the checkpoint protocol",
        show=lambda answer: repr(tuple(answer)) if isinstance(answer, (tuple, list)) else repr(answer),
        same=same,
    )


AS_OF_LATER = "a version written after the batch asked for (a batch that never committed) is not read"
AS_OF_EQUAL = "the version of the batch itself counts: the latest version at or before it"
AS_OF_NONE = "a key with no version at or before the batch has the count 0"


def check_as_of(as_of) -> Passed:
    """Exercise: ``as_of(versions, batch_id)``: a count kept in an external store as one version per batch,
    ``versions = {batch id: count}``; the count as of ``batch_id`` is the latest version at or before it (0 when
    none). Checked against the rule of ``lessons/state_backends.external_store_crash``'s versioned writes.

    >>> check_as_of(lambda versions, batch_id: max(((b, c) for b, c in versions.items() if b <= batch_id), default=(0, 0))[1])
    ✓ as_of: 4 cases agree with versioned writes
    """
    cases = [
        Case(({0: 2, 1: 3}, 1), AS_OF_EQUAL, "versions {0: 2, 1: 3}, as of batch 1"),
        Case(({0: 2, 1: 3, 2: 5}, 1), AS_OF_LATER, "versions {0: 2, 1: 3, 2: 5}, as of batch 1"),
        Case(({1: 4}, 3), AS_OF_EQUAL, "versions {1: 4}, as of batch 3"),
        Case(({2: 1}, 1), AS_OF_NONE, "versions {2: 1}, as of batch 1"),
    ]

    def expected(case):
        versions, batch_id = case.args
        before = [version for version in versions if version <= batch_id]
        return versions[max(before)] if before else 0

    return check_cases(
        "as_of", lambda versions, batch_id: as_of(dict(versions), batch_id), cases, expected, against="versioned writes"
    )


RECOVER_BEYOND = (
    "replay the records up to the checkpoint's version and not one more: a later record was written by a batch "
    "that never committed, and it runs again"
)
RECOVER_BEFORE = "start from the snapshot: compaction deleted the records before it, which it holds already"
RECOVER_DELETE = "a record's None removes the key"
RECOVER_EMPTY = "with no snapshot, replay every record from version 1 on an empty state"


def check_recover(recover) -> Passed:
    """Exercise: ``recover(snapshot, records, version)``: a subtask's state as of a checkpoint's ``version`` from
    its changelog: ``snapshot`` is ``(snapshot version, {key: value})`` or ``None``, ``records`` is ``{version:
    {key: value, or None for a removed key}}``. Checked against ministream's ``state/changelog.read_state``.

    >>> from ministream.workshop.solutions import recover
    >>> check_recover(recover)
    ✓ recover: 4 cases agree with ministream's changelog recovery
    """
    records = {1: {"a": 1, "b": 1}, 2: {"a": 2}, 3: {"b": None, "c": 1}, 4: {"a": 3}, 5: {"c": 2}}
    compacted = {version: writes for version, writes in records.items() if version > 3}
    cases = [
        Case(((2, {"a": 2, "b": 1}), records, 4), RECOVER_BEYOND, "snapshot 2, checkpoint at version 4, log up to 5"),
        Case((None, records, 2), RECOVER_EMPTY, "no snapshot, checkpoint at version 2"),
        Case(((2, {"a": 2, "b": 1}), records, 3), RECOVER_DELETE, "snapshot 2, checkpoint at version 3"),
        Case(((3, {"a": 2, "c": 1}), compacted, 4), RECOVER_BEFORE, "snapshot 3, records 4 and 5, checkpoint at 4"),
    ]

    def expected(case):
        snapshot, logged, version = case.args
        storage = ChangelogStorage()
        for number, writes in logged.items():
            updated: dict = {}
            removed: dict = {}
            for key, value in writes.items():
                if value is None:
                    removed.setdefault(key_group_of(key), {}).setdefault("t", []).append(key)
                else:
                    updated.setdefault(key_group_of(key), {}).setdefault("t", {})[key] = value
            storage.write("t/0", number, "changelog", StateDelta(["t"], updated, removed))
        if snapshot is not None:
            laid_out: dict = {}
            for key, value in snapshot[1].items():
                laid_out.setdefault(key_group_of(key), {}).setdefault("t", {})[key] = value
            storage.write("t/0", snapshot[0], "snapshot", laid_out)
        state = read_state(storage, LogPosition("t/0", version, None if snapshot is None else snapshot[0]))
        return {key: value for states in state.values() for key, value in states.get("t", {}).items()}

    def same(got, want):
        return isinstance(got, dict) and dict(got) == want

    return check_cases(
        "recover",
        lambda snapshot, logged, version: recover(snapshot, {v: dict(w) for v, w in logged.items()}, version),
        cases,
        expected,
        against="ministream's changelog recovery",
        show=lambda answer: repr(dict(sorted(answer.items()))) if isinstance(answer, dict) else repr(answer),
        same=same,
    )
