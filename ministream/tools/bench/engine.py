"""The engine's figures: throughput of each operator against its floor (a plain loop with the same semantics,
``floors.py``), checkpoints during a run, and memory."""

from __future__ import annotations

import gc
import os
import resource
import tempfile
from collections.abc import Callable
from functools import partial

import attrs

from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.storage import DirectoryStorage
from ministream.core.plan import Dataflow
from ministream.core.steps import JOIN_TYPES
from ministream.models.microbatch import run_microbatch
from ministream.state.keygroups import key_group_of
from ministream.tools.bench import floors
from ministream.tools.bench.workload import (
    BATCHES,
    EVENT_COLUMNS,
    JOIN_COLUMNS,
    best_cpu_seconds,
    dedup_flow,
    dedup_within_watermark_flow,
    in_batches,
    join_flow,
    join_inputs,
    make_events,
    map_filter_flow,
    process_flow,
    rate,
    running_count_flow,
    session_flow,
    sliding_count_flow,
    tumbling_count_flow,
)


def checkpointed_tumbling_count(flow: Dataflow, incremental: int | None = None) -> None:
    """The tumbling count with a checkpoint at the end of every micro-batch (every 10,000 events), written to
    a directory as a real run would (``coordinator.MicroBatchCheckpoints``); with ``incremental=k``, k deltas
    after each full checkpoint."""
    with tempfile.TemporaryDirectory() as folder:
        run_microbatch(
            flow,
            output_mode="append",
            checkpoints=MicroBatchCheckpoints(DirectoryStorage(folder), incremental=incremental),
        )


@attrs.frozen
class Benched:
    """An operator as the bench runs it: its pipeline over the bench's events, the output mode, and its floor
    (``floors.py``); ``inputs`` makes both one's input from the script (the join's two sides, for a join);
    ``columns`` gives each source's columns and their Spark types (its Spark twin's input, ``spark.py``)."""

    build: Callable
    output_mode: str
    floor: Callable
    inputs: Callable = lambda script: script
    columns: dict = attrs.field(factory=lambda: {"events": EVENT_COLUMNS})


OPERATORS = {
    "running_count": Benched(running_count_flow, "update", floors.running_count),
    "tumbling_count": Benched(tumbling_count_flow, "append", floors.tumbling_count),
    "sliding_count": Benched(sliding_count_flow, "append", floors.sliding_count),
    "session_count": Benched(session_flow, "append", floors.session_count),
    **{
        f"join_{how}": Benched(
            partial(join_flow, how=how), "append", partial(floors.join, how=how), join_inputs, JOIN_COLUMNS
        )
        for how in JOIN_TYPES
    },
    "dedup": Benched(dedup_flow, "append", floors.dedup),
    "dedup_within_watermark": Benched(dedup_within_watermark_flow, "append", floors.dedup_within_watermark),
    "process_timers": Benched(process_flow, "update", floors.flush_every_second),
}
"""Every stateful operator the bench measures against its floor, by the name its figures carry."""


def load_average() -> float:
    """The machine's load over the last minute (``/proc/loadavg``), written beside each figure."""
    return round(os.getloadavg()[0], 2)


def bench_operator(name: str, script: list, repeat: int = 3) -> dict:
    """Events per second of one operator and of its floor, timed in turns (``best_cpu_seconds``), and
    whether they gave the same rows: ``{"engine", "floor", "ratio", "same_rows", "load"}``. A run that
    gives other rows than its floor raises: its figure would mean nothing."""
    benched = OPERATORS[name]
    data = benched.inputs(script)
    results: dict = {}

    def engine(flow):
        results["engine"] = run_microbatch(flow, output_mode=benched.output_mode)

    def floor(data):
        results["floor"] = benched.floor(data)

    load = load_average()
    engine_s, floor_s = best_cpu_seconds([(engine, lambda: benched.build(data)), (floor, lambda: data)], repeat)
    emitted = [batch.rows for batch in results["engine"].output()]
    if not floors.same_rows(emitted, results["floor"]):
        raise AssertionError(f"{name}: the engine and its floor gave different rows")
    events = sum(map(len, script))
    return {
        "engine": rate(events, engine_s),
        "floor": rate(events, floor_s),
        "ratio": round(floor_s / engine_s, 3),
        "same_rows": True,
        "load": round((load + load_average()) / 2, 2),
    }


OPERATOR_REPEAT = 5
"""Runs of each operator and of its floor, in turns, of which the bench keeps the best: on a shared machine
more runs make the ratio of the two steadier."""


def bench_operators(
    figures: dict, events: list[dict], say, repeat: int = OPERATOR_REPEAT, batches: int = BATCHES
) -> None:
    """Every operator of :data:`OPERATORS` against its floor, on ``events`` in ``batches`` micro-batches:
    ``<operator>_events_per_s``, ``<operator>_floor_events_per_s``, ``<operator>_ratio_to_floor`` and the
    load average while it ran, ``<operator>_load``; the size of the run, ``operator_events`` and
    ``operator_batches``, and the runs of each kept the best of, ``operator_repeat``."""
    script = in_batches(events, batches)
    figures["operator_events"] = len(events)
    figures["operator_batches"] = len(script)
    figures["operator_repeat"] = repeat
    for name in OPERATORS:
        result = bench_operator(name, script, repeat)
        figures[f"{name}_events_per_s"] = result["engine"]
        figures[f"{name}_floor_events_per_s"] = result["floor"]
        figures[f"{name}_ratio_to_floor"] = result["ratio"]
        figures[f"{name}_load"] = result["load"]
        say(
            f"{name}: {result['engine']:,} events/s, floor {result['floor']:,} events/s, ratio {result['ratio']} "
            f"(same rows; load {result['load']})"
        )


def bench_engine(
    figures: dict, events: list[dict], say, repeat: int = 3, operator_repeat: int = OPERATOR_REPEAT
) -> None:
    """The operators against their floors (:func:`bench_operators`, the best of ``operator_repeat`` runs
    each); a stateless pipeline, and the tumbling count at parallelism 4 (every subtask in this process: the
    cost of routing by key group); the tumbling count with a checkpoint at every batch (these run ``repeat``
    times each)."""
    bench_operators(figures, events, say, operator_repeat)
    script = in_batches(events)
    n = len(events)

    def pipeline(build, mode, parallelism=1):
        return lambda flow: run_microbatch(flow, output_mode=mode, parallelism=parallelism), lambda: build(script)

    for name, build, mode, parallelism in (
        ("map_filter", map_filter_flow, "update", 1),
        ("tumbling_count_p4", tumbling_count_flow, "append", 4),
    ):
        [seconds] = best_cpu_seconds([pipeline(build, mode, parallelism)], repeat)
        figures[f"{name}_events_per_s"] = rate(n, seconds)
        say(f"{name}: {rate(n, seconds):,} events/s")
    bench_checkpointed(figures, script, say, repeat)


def bench_checkpointed(figures: dict, script: list, say, repeat: int = 3) -> None:
    """The tumbling count with a checkpoint at the end of every batch, full and incremental (a full one every
    10), in turns with the same count without checkpoints (:func:`checkpointed_tumbling_count`):
    ``tumbling_count{,_incremental}_checkpoint_every_10k_events_per_s``, the best of ``repeat`` runs, and
    ``..._ratio``, the run without checkpoints' best time over it (the share of its throughput kept); each
    run's ratio (without checkpoints over with, run by run) is in ``..._ratios`` and said."""
    n = sum(map(len, script))
    variants = (("", None), ("_incremental", 9))
    build = partial(tumbling_count_flow, script)

    def plain(flow):
        run_microbatch(flow, output_mode="append")

    candidates = [(plain, build)] + [
        (partial(checkpointed_tumbling_count, incremental=incremental), build) for _, incremental in variants
    ]
    load = load_average()
    runs = [best_cpu_seconds(candidates, 1) for _ in range(repeat)]  # each run in turns, all three kept
    best = [min(times) for times in zip(*runs)]
    figures["tumbling_count_checkpoint_load"] = round((load + load_average()) / 2, 2)
    for position, (label, incremental) in enumerate(variants, start=1):
        name = f"tumbling_count{label}_checkpoint"
        figures[f"{name}_every_10k_events_per_s"] = rate(n, best[position])
        figures[f"{name}_ratio"] = round(best[0] / best[position], 3)
        figures[f"{name}_ratios"] = [round(times[0] / times[position], 3) for times in runs]
        say(
            f"tumbling count, a{label.replace('_', 'n ')} checkpoint every 10,000 events"
            f"{' (a full one every 10)' if incremental else ''}: {rate(n, best[position]):,} events/s, "
            f"{figures[f'{name}_ratio']} of the {rate(n, best[0]):,} events/s without checkpoints "
            f"(run by run: {', '.join(map(str, figures[f'{name}_ratios']))}; "
            f"load {figures['tumbling_count_checkpoint_load']})"
        )


def state_bytes(name: str, events: list[dict], batches: int) -> int:
    """The bytes an operator's run still holds after its last batch, its output left out (``tracemalloc``):
    its state as the last watermark left it (no no-data batch runs to empty it), and the graph around it.
    The events are made before the count starts, so they are not in it."""
    import tracemalloc

    benched = OPERATORS[name]
    data = benched.inputs(in_batches(events, batches))
    flow = benched.build(data)
    gc.collect()
    tracemalloc.start()
    try:
        run = run_microbatch(flow, output_mode=benched.output_mode, no_data_batches=False)
        run.outputs.clear()  # the output, which the run and the sink both hold
        key_group_of.cache_clear()  # a cache of every key's group, which is not state
        for step in run.graph.flow.steps:
            if step.kind == "sink":
                step.sink.reset()
        gc.collect()
        return tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def bench_operator_memory(figures: dict, say, keys: int = 1_000) -> None:
    """Bytes of state per key of every operator after 100k and 200k of the bench's events over ``keys``
    keys, in batches of 10,000 (``<operator>_state_bytes_per_key``); their ratio
    (``<operator>_state_growth_100k_to_200k``) is about 1 when no copy of a row outlives its folding or its
    eviction: the state follows the keys and the watermark, not the events seen."""
    for name in OPERATORS:
        small, large = (
            state_bytes(name, make_events(count, keys=keys), count // 10_000) for count in (100_000, 200_000)
        )
        figures[f"{name}_state_bytes_per_key"] = round(large / keys)
        figures[f"{name}_state_growth_100k_to_200k"] = round(large / small, 2)
        say(f"state per key, {name}: {large / keys:,.0f} bytes; from 100k to 200k events x{large / small:.2f}")


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
    bench_operator_memory(figures, say)
    script = [[{"key": f"key-{i}", "value": 1.0, "ts": 1} for i in range(1_000_000)]]
    run_microbatch(running_count_flow(script), output_mode="update")
    figures["peak_rss_bytes_1m_keys"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    say(f"peak RSS with 1,000,000 keys: {figures['peak_rss_bytes_1m_keys'] / 2**20:.0f} MiB")
