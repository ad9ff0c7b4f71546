"""Benchmarks of checkpoints: time and bytes to snapshot and to restore a keyed state of 10k to 1M keys.

The state is a running count per key (``bench.running_count_flow``) after one batch with N distinct keys. A
*snapshot* is what a checkpoint does for it: every subtask's ``snapshot()`` (a copy of its keyed state, by key
group) turned into files (``checkpoint.Checkpoint.files``) and written to a directory with a manifest and
checksums (``checkpoint_storage.DirectoryStorage``). A *restore* reads the newest complete checkpoint back,
verifies it, and loads it into a freshly built graph (``recovery.restore_graph``).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from ministream.bench import running_count_flow
from ministream.microbatch import run_microbatch

KEY_COUNTS = (10_000, 100_000, 1_000_000)


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def measure(keys: int, parallelism: int = 1) -> dict:
    """Snapshot and restore times (s) and checkpoint bytes for ``keys`` keys of running-count state."""
    from ministream.checkpoint import Checkpoint, load_latest
    from ministream.checkpoint_storage import DirectoryStorage
    from ministream.recovery import restore_graph
    from ministream.runtime import PhysicalGraph

    script = [[{"key": f"key-{i}", "value": 1.0, "ts": 1} for i in range(keys)]]
    run = run_microbatch(running_count_flow(script), output_mode="update", parallelism=parallelism)
    graph = run.graph
    with tempfile.TemporaryDirectory() as tmp:
        storage = DirectoryStorage(Path(tmp) / "checkpoints")
        started = time.perf_counter()
        operators = {step.name: {subtask.index: subtask.operator.snapshot()
                                 for subtask in graph.by_step[step.name]}
                     for step in graph.flow.steps if step.parallelism == "keyed"}
        checkpoint = Checkpoint(0, "microbatch", "aligned", parallelism, operators=operators)
        storage.save_files(0, checkpoint.files())
        snapshot_s = time.perf_counter() - started
        size = _folder_bytes(Path(tmp) / "checkpoints")
        fresh = PhysicalGraph(graph.flow, parallelism, output_mode="update")
        started = time.perf_counter()
        restore_graph(fresh, load_latest(storage))
        restore_s = time.perf_counter() - started
    restored = sum(op.state_size() for op in fresh.operators("counts"))
    assert restored == keys, f"restored {restored} keys of {keys}"
    return {"snapshot_s": round(snapshot_s, 3), "restore_s": round(restore_s, 3), "bytes": size}


def bench_checkpoints(figures: dict, say) -> None:
    """Snapshot and restore of 10k, 100k and 1M keys; the growth from 100k to 1M says whether it is linear."""
    for keys in KEY_COUNTS:
        label = {10_000: "10k", 100_000: "100k", 1_000_000: "1m"}[keys]
        result = measure(keys)
        for name, value in result.items():
            figures[f"checkpoint_{name}_{label}_keys"] = value
        say(f"checkpoint of {keys:,} keys: snapshot {result['snapshot_s']} s, restore {result['restore_s']} s, "
            f"{result['bytes'] / 2**20:.1f} MiB")
    figures["checkpoint_snapshot_growth_100k_to_1m"] = round(
        figures["checkpoint_snapshot_s_1m_keys"] / max(figures["checkpoint_snapshot_s_100k_keys"], 1e-9), 2)
