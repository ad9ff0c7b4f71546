"""Benchmarks of checkpoints: time and bytes to snapshot and to restore a keyed state of 10k to 1M keys, in
full and incrementally.

The state is a running count per key (``bench.running_count_flow``) after one batch with N distinct keys. A
*snapshot* is what a checkpoint does for it: every subtask's ``snapshot()`` (a copy of its keyed state, by key
group) turned into parts (``checkpoint.Checkpoint.files``) and written to one file in a directory with a
manifest and checksums (``storage.DirectoryStorage``). A *restore* reads the newest complete checkpoint back,
verifies it, and loads it into a freshly built graph (``restore.restore_graph``).

The full snapshot and the restore are timed three times each, in CPU time (``time.process_time``, the main
figure: the machine is shared) and wall clock beside it, and the best time is kept, as
the throughput figures keep the best of their runs: other processes on the machine move a single run of about
a second by as much as half of it. Then one more batch changes 1% of the
keys, and an *incremental* checkpoint writes only those
(``state/changes.py``): its time and bytes should follow the keys changed, not N. Restoring it reads the full
checkpoint and applies the delta.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from ministream.checkpoints.coordinator import Checkpoint, load_latest
from ministream.checkpoints.incremental import snapshot_operator
from ministream.checkpoints.restore import restore_graph
from ministream.checkpoints.storage import DirectoryStorage
from ministream.core.physical import Scheduler
from ministream.models.microbatch import run_microbatch
from ministream.operators.planner import physical_graph
from ministream.tools.bench.workload import running_count_flow

KEY_COUNTS = (10_000, 100_000, 1_000_000)
CHANGED_SHARE = 0.01
"""The share of the keys the batch before the incremental checkpoint changes."""

REPEATS = 3
"""How many times the full snapshot and the restore are timed (the best is kept). The incremental checkpoint
is timed once: a delta clears the marks of what changed, so a second one would be empty."""


def _checkpoint(graph, storage, checkpoint_id: int, base: int | None = None) -> tuple[float, float]:
    """Seconds (wall, CPU) to snapshot every keyed subtask (a delta on ``base`` when given) and store the
    checkpoint."""

    started, cpu = time.perf_counter(), time.process_time()
    operators = {
        step.name: {
            subtask.index: snapshot_operator(subtask.operator, delta=base is not None)
            for subtask in graph.by_step[step.name]
        }
        for step in graph.flow.steps
        if step.parallelism == "keyed"
    }
    checkpoint = Checkpoint(checkpoint_id, "microbatch", "aligned", graph.parallelism, operators=operators, base=base)
    storage.save_files(checkpoint_id, checkpoint.files(), base=base)
    return time.perf_counter() - started, time.process_time() - cpu


def _restore(graph, storage) -> tuple[float, float, object]:
    """Seconds (wall, CPU) to load the newest checkpoint (and what it is built on) into a fresh graph; the
    graph."""

    fresh = physical_graph(graph.flow, graph.parallelism, output_mode="update")
    started, cpu = time.perf_counter(), time.process_time()
    restore_graph(fresh, load_latest(storage))
    return time.perf_counter() - started, time.process_time() - cpu, fresh


def measure(keys: int, parallelism: int = 1) -> dict:
    """Snapshot and restore times (s) and checkpoint bytes for ``keys`` keys of running-count state, full
    and incremental (after a batch that changed :data:`CHANGED_SHARE` of the keys)."""

    script = [[{"key": f"key-{i}", "value": 1.0, "ts": 1} for i in range(keys)]]
    graph = run_microbatch(running_count_flow(script), output_mode="update", parallelism=parallelism).graph
    step = max(1, round(1 / CHANGED_SHARE))
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        snapshot_s = restore_s = snapshot_cpu_s = restore_cpu_s = float("inf")
        for attempt in range(REPEATS):  # each into a new folder; the last one stays, as the delta's base
            storage = DirectoryStorage(Path(tmp) / f"checkpoints-{attempt}")
            wall, cpu = _checkpoint(graph, storage, 0)
            snapshot_s, snapshot_cpu_s = min(snapshot_s, wall), min(snapshot_cpu_s, cpu)
        size = (storage.root / "chk-0").stat().st_size
        for _ in range(REPEATS):
            wall, cpu, fresh = _restore(graph, storage)
            restore_s, restore_cpu_s = min(restore_s, wall), min(restore_cpu_s, cpu)
            restored = sum(op.state_size() for op in fresh.operators("counts"))
            assert restored == keys, f"restored {restored} keys of {keys}"
            del fresh

        graph.by_step["events"][0].output.send(
            [{"key": f"key-{i}", "value": 1.0, "ts": 2} for i in range(0, keys, step)]
        )
        Scheduler(graph).run_until_idle()
        incremental_s, incremental_cpu_s = _checkpoint(graph, storage, 1, base=0)
        incremental_size = (storage.root / "chk-1").stat().st_size
        incremental_restore_s, incremental_restore_cpu_s, fresh = _restore(graph, storage)
    counts = {
        key: accumulators[0]
        for op in fresh.operators("counts")
        for group in op.groups.values()
        for key, accumulators in group.items()
    }
    assert len(counts) == keys and counts["key-0"] == 2 and counts["key-1"] == 1, "the restored counts are wrong"
    return {
        "snapshot_s": round(snapshot_s, 3),
        "snapshot_cpu_s": round(snapshot_cpu_s, 3),
        "restore_s": round(restore_s, 3),
        "restore_cpu_s": round(restore_cpu_s, 3),
        "bytes": size,
        "incremental_s": round(incremental_s, 3),
        "incremental_cpu_s": round(incremental_cpu_s, 3),
        "incremental_restore_s": round(incremental_restore_s, 3),
        "incremental_restore_cpu_s": round(incremental_restore_cpu_s, 3),
        "incremental_bytes": incremental_size,
        "load": round((load + os.getloadavg()[0]) / 2, 2),
    }


def bench_checkpoints(figures: dict, say) -> None:
    """Snapshot and restore of 10k, 100k and 1M keys, full and incremental; the growth from 100k to 1M says
    whether it is linear."""
    changed = f"{round(CHANGED_SHARE * 100)}pct_changed"
    for keys in KEY_COUNTS:
        label = {10_000: "10k", 100_000: "100k", 1_000_000: "1m"}[keys]
        result = measure(keys)
        for name in ("snapshot_s", "snapshot_cpu_s", "restore_s", "restore_cpu_s", "bytes", "load"):
            figures[f"checkpoint_{name}_{label}_keys"] = result[name]
        for name in ("incremental_s", "incremental_cpu_s", "incremental_bytes", "incremental_restore_s"):
            figures[f"checkpoint_{name}_{label}_keys_{changed}"] = result[name]
        figures[f"checkpoint_incremental_restore_cpu_s_{label}_keys_{changed}"] = result["incremental_restore_cpu_s"]
        say(
            f"checkpoint of {keys:,} keys: snapshot {result['snapshot_cpu_s']} s CPU ({result['snapshot_s']} s "
            f"wall), restore {result['restore_cpu_s']} s CPU ({result['restore_s']} s wall), "
            f"{result['bytes'] / 2**20:.1f} MiB; incremental after {CHANGED_SHARE:.0%} changed: "
            f"{result['incremental_cpu_s']} s CPU ({result['incremental_s']} s wall), "
            f"{result['incremental_bytes'] / 2**10:.0f} KiB, restore {result['incremental_restore_cpu_s']} s CPU "
            f"({result['incremental_restore_s']} s wall); load {result['load']}"
        )
    figures["checkpoint_snapshot_growth_100k_to_1m"] = round(
        figures["checkpoint_snapshot_s_1m_keys"] / max(figures["checkpoint_snapshot_s_100k_keys"], 1e-9), 2
    )
