"""The engine's figures: throughput of each pipeline against a plain Python loop with the same semantics, and memory."""

from __future__ import annotations

import gc
import resource
from functools import partial

from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.storage import DirectoryStorage
from ministream.core.plan import Dataflow
from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.workload import (
    DELAY,
    WINDOW,
    best_cpu_seconds,
    in_batches,
    join_flow,
    map_filter_flow,
    rate,
    running_count_flow,
    session_flow,
    tumbling_count_flow,
)


def python_loop_tumbling_count(events: list[dict], size: int = WINDOW, delay: int = DELAY) -> dict:
    """The floor: a keyed tumbling-window count with a watermark, as a plain loop over dicts.

    The watermark is ``max event time - delay``, advanced at every event; a row whose window ended at or
    before it is late; a window is emitted (as output rows, like the engine's) and dropped when its end is at
    or before it.
    """
    windows = {}  # {window_start: {key: count}}
    watermark, late, output = -1, 0, []
    for event in events:
        ts = event["ts"]
        start = ts - ts % size
        if start + size <= watermark:
            late += 1
            continue
        counts = windows.get(start)
        if counts is None:
            counts = windows[start] = {}
        key = event["key"]
        counts[key] = counts.get(key, 0) + 1
        if ts - delay > watermark:
            watermark = ts - delay
            while windows:
                first = min(windows)
                if first + size > watermark:
                    break
                for key, count in windows.pop(first).items():
                    output.append({"key": key, "window_start": first, "window_end": first + size, "count": count})
    return {"emitted": len(output), "open": sum(map(len, windows.values())), "late": late}


def checkpointed_tumbling_count(flow: Dataflow, incremental: int | None = None) -> None:
    """The tumbling count with a checkpoint at the end of every micro-batch (every 10,000 events), written to
    a directory as a real run would (``coordinator.MicroBatchCheckpoints``); with ``incremental=k``, k deltas
    after each full checkpoint."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        run_microbatch(
            flow,
            output_mode="append",
            checkpoints=MicroBatchCheckpoints(DirectoryStorage(folder), incremental=incremental),
        )


def bench_engine(figures: dict, events: list[dict], say, repeat: int = 3) -> None:
    """Events per second of each pipeline, with parallelism 1 and 4: the best CPU time of ``repeat`` runs
    (``best_cpu_seconds``), the events built and the pipelines set up before the clock starts. The loop and the
    tumbling count, whose ratio is the target, run in turns."""
    script = in_batches(events)
    n = len(events)

    def pipeline(build, mode, parallelism=1):
        return lambda flow: run_microbatch(flow, output_mode=mode, parallelism=parallelism), lambda: build(script)

    loop, tumbling = best_cpu_seconds(
        [(python_loop_tumbling_count, lambda: events), pipeline(tumbling_count_flow, "append")], repeat
    )
    figures["python_loop_events_per_s"] = rate(n, loop)
    say(f"python loop: {figures['python_loop_events_per_s']:,} events/s")
    pipelines = {
        "map_filter": (map_filter_flow, "update"),
        "running_count": (running_count_flow, "update"),
        "tumbling_count": (tumbling_count_flow, "append"),
        "session_window": (session_flow, "append"),
        "stream_join": (join_flow, "append"),
    }
    for name, (build, mode) in pipelines.items():
        for parallelism in (1, 4):
            if (name, parallelism) == ("tumbling_count", 1):
                seconds = tumbling
            else:
                slow = name in ("session_window", "stream_join")  # tens of seconds a run: once is enough
                [seconds] = best_cpu_seconds([pipeline(build, mode, parallelism)], 1 if slow else repeat)
            suffix = "" if parallelism == 1 else f"_p{parallelism}"
            figures[f"{name}{suffix}_events_per_s"] = rate(n, seconds)
            say(f"{name} parallelism {parallelism}: {rate(n, seconds):,} events/s")
    for label, incremental in (("", None), ("_incremental", 9)):
        [seconds] = best_cpu_seconds(
            [(partial(checkpointed_tumbling_count, incremental=incremental), partial(tumbling_count_flow, script))], 1
        )
        figures[f"tumbling_count{label}_checkpoint_every_10k_events_per_s"] = rate(n, seconds)
        say(
            f"tumbling count, a{label.replace('_', 'n ')} checkpoint every 10,000 events"
            f"{' (a full one every 10)' if incremental else ''}: {rate(n, seconds):,} events/s"
        )
    figures["tumbling_count_ratio_to_loop"] = round(
        figures["tumbling_count_events_per_s"] / figures["python_loop_events_per_s"], 3
    )


def bench_memory(figures: dict, say) -> None:
    """Bytes of state per key (running count, window state) and peak RSS with 1,000,000 keys."""
    import tracemalloc

    for name, build, mode, keys in (
        ("running_count", running_count_flow, "update", 100_000),
        ("window", tumbling_count_flow, "update", 100_000),
    ):
        script = [[{"key": f"key-{i}", "ts": 1 + i % 500, "value": 1.0} for i in range(keys)]]
        gc.collect()
        tracemalloc.start()
        run = run_microbatch(build(script), output_mode=mode)
        before = tracemalloc.get_traced_memory()[0]
        for step in run.graph.flow.steps:
            if step.kind == "sink":
                step.sink.reset()
        del script
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        figures[f"state_bytes_per_key_{name}"] = round(held / keys)
        say(f"state per key, {name}: {held / keys:.0f} bytes (traced {before / keys:.0f} with output)")
    script = [[{"key": f"key-{i}", "value": 1.0, "ts": 1} for i in range(1_000_000)]]
    run_microbatch(running_count_flow(script), output_mode="update")
    figures["peak_rss_bytes_1m_keys"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    say(f"peak RSS with 1,000,000 keys: {figures['peak_rss_bytes_1m_keys'] / 2**20:.0f} MiB")
