"""State backends measured side by side: access latency, throughput, state size on disk and in memory, recovery.

``ministream bench --state`` fills in the table that local and external stores are usually compared with
(latency, scalability, shareability, fault-tolerance complexity) with figures measured on this machine, for the
three backends of ``state/backends.py``:

- *access latency*: a read of a key the batch has not read yet (a dict lookup; a RocksDB lookup and a decode; a
  Redis round trip and a decode), and a write back of one changed key (part of the end-of-batch write batch);
- *throughput*: a running count per key (``RunningAggregate``) and a tumbling-window count, in events per second;
- *size*: the state's bytes in Python's heap after a batch (the working set, for a store), on disk (RocksDB's
  files) and in the server (Redis's ``MEMORY USAGE``);
- *recovery*: the time to load a checkpoint's state into a new backend (what a restart costs: a local store is
  filled again; an external store would keep its state, and :func:`lessons.state_backends` shows what that costs
  exactly-once).

Wall-clock seconds, the best of ``repeat`` runs; figures vary from run to run and machine to machine, and are
reported, never asserted.
"""

from __future__ import annotations

import random
import sys
import time
from functools import partial

from ministream.core.aggregates import Count
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.models.microbatch import run_microbatch
from ministream.state.backends import BACKENDS, state_backends
from ministream.state.keygroups import key_group_of
from ministream.tools.bench.workload import in_batches, make_events, tumbling_count_flow

STATE_EVENTS = 100_000
STATE_KEYS = 10_000
LATENCY_KEYS = 10_000


def deep_size(value, seen: set | None = None) -> int:
    """The bytes a value takes in Python's heap, its contents included (each object counted once).

    >>> deep_size({}) == sys.getsizeof({}), deep_size([1.0, 1.0]) > deep_size([])
    (True, True)
    """
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        size += sum(deep_size(key, seen) + deep_size(item, seen) for key, item in value.items())
    elif isinstance(value, (list, tuple, set)):
        size += sum(deep_size(item, seen) for item in value)
    return size


def _heap_bytes(state) -> int:
    """The bytes the backend's tables hold in the heap: the tables themselves in memory, the working sets of a
    store-backed backend."""
    if not state.writes_back:
        return deep_size(state.tables)
    return sum(deep_size(group.cache) for table in state.tables.values() for group in table.groups.values())


def _store_bytes(states) -> tuple[int, int]:
    """``(bytes on disk, bytes in a server)`` of the stores behind some backends."""
    disk = server = 0
    for state in states:
        store = getattr(state, "store", None)
        if store is None:
            continue
        if store.name == "rocksdb":
            store.flush_memtable()  # what RocksDB would write anyway once its memtable filled up
            disk += store.disk_bytes()
        else:
            server += store.memory_bytes()
    return disk, server


def running_count_flow(script) -> Dataflow:
    flow = Dataflow("bench-running-count")
    flow.source("events", ScriptedSource(script)).key_by("key").aggregate("counts", count=Count()).sink(
        "output", CollectingSink()
    )
    return flow


def _best(repeat: int, run) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def bench_latency(backend: str, keys: int = LATENCY_KEYS) -> tuple[float, float]:
    """Microseconds per first read of a key in a batch, and per key written back at the end of a batch."""
    backends = state_backends(backend)
    try:
        state = backends.create("bench", 0)
        table, marks = state.table("counts"), state.track_changes("counts")
        names = [f"k{i}" for i in range(keys)]
        start = time.perf_counter()
        for name in names:
            table.setdefault(key_group_of(name), {})[name] = [1]
            marks[name] = None
        state.flush()
        write = time.perf_counter() - start
        random.Random(0).shuffle(names)
        start = time.perf_counter()
        for name in names:
            table.get(key_group_of(name), {}).get(name)
        read = time.perf_counter() - start
        state.flush()
        return read / keys * 1e6, write / keys * 1e6
    finally:
        backends.close()


def bench_backend(figures: dict, backend: str, repeat: int, say) -> None:
    """Every figure of one backend, named ``state_<backend>_...``."""
    read, write = bench_latency(backend)
    figures[f"state_{backend}_read_us"] = round(read, 2)
    figures[f"state_{backend}_write_back_us"] = round(write, 2)
    events = make_events(STATE_EVENTS, keys=STATE_KEYS)
    script = in_batches(events, 10)
    for name, make_flow, mode in (
        ("running_count", running_count_flow, "update"),
        ("tumbling_count", tumbling_count_flow, "append"),
    ):
        runs = []

        def run_once(make_flow=make_flow, mode=mode, runs=runs):
            backends = state_backends(backend)
            runs.append((backends, run_microbatch(make_flow(script), output_mode=mode, state_backend=backends)))

        seconds = _best(repeat, run_once)
        figures[f"state_{backend}_{name}_events_per_s"] = round(len(events) / seconds)
        if name == "running_count":
            backends, run = runs[-1]
            states = [subtask.operator.ctx.state for subtask in run.graph.by_step["counts"]]
            figures[f"state_{backend}_heap_bytes_after_batch"] = sum(map(_heap_bytes, states))
            disk, server = _store_bytes(states)
            figures[f"state_{backend}_disk_bytes"] = disk
            figures[f"state_{backend}_server_bytes"] = server
            snapshot = states[0].snapshot()
            figures[f"state_{backend}_restore_s"] = round(_best(repeat, partial(_restore, backend, snapshot)), 4)
            figures[f"state_{backend}_snapshot_s"] = round(_best(repeat, states[0].snapshot), 4)
        for backends, _ in runs:
            backends.close()
    say(f"state backend {backend}: {figures[f'state_{backend}_running_count_events_per_s']:,} events/s")


def _restore(backend: str, snapshot: dict) -> None:
    backends = state_backends(backend)
    try:
        backends.create("bench", 0).restore(snapshot)
    finally:
        backends.close()


def bench_state_backends(figures: dict, say=lambda text: None, repeat: int = 3) -> None:
    """The figures of every backend: ``STATE_EVENTS`` events over ``STATE_KEYS`` keys in 10 micro-batches."""
    for backend in BACKENDS:
        bench_backend(figures, backend, repeat, say)
