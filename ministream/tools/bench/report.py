"""The benchmark run as one command: every figure, the machine, the targets, and the page they make."""

from __future__ import annotations

import json
import os
import platform
import sys

from tqdm import tqdm

from ministream.tools.bench.checkpoints import bench_checkpoints
from ministream.tools.bench.engine import bench_engine, bench_memory
from ministream.tools.bench.scale import SECTION
from ministream.tools.bench.scale import main as scale_main
from ministream.tools.bench.spark import bench_spark
from ministream.tools.bench.state import bench_state_backends
from ministream.tools.bench.workload import EVENTS, make_events


def machine() -> dict:
    """A description of the machine the figures come from."""
    model = ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        pass
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "load_average_at_start": round(os.getloadavg()[0], 2),
    }


def run_benchmarks(*, events: int = EVENTS, spark: bool = True, say=lambda text: None, stage=None) -> dict:
    """Every figure, in one run: engine throughput, the loop floor, memory, checkpoints, Spark, the workshop
    path; ``stage(name, done, total)`` is told as each part begins (``done`` parts finished) and at the end."""
    figures: dict = {}
    described = machine()  # before the run, so that its load average is the machine's, not the benchmark's
    data = make_events(events)
    parts = [
        ("engine", lambda: bench_engine(figures, data, say)),
        ("memory", lambda: bench_memory(figures, say)),
        ("checkpoints", lambda: bench_checkpoints(figures, say)),
    ]
    if spark:
        parts.append(("spark", lambda: bench_spark(figures, data, say)))
    for done, (name, measure) in enumerate(parts):
        if stage is not None:
            stage(name, done, len(parts))
        measure()
    if stage is not None:
        stage("", len(parts), len(parts))
    return {"machine": described, "figures": figures}


TARGETS = {
    "tumbling_count_ratio_to_loop": ("at least 0.5", lambda value: value >= 0.5),
    "checkpoint_snapshot_s_1m_keys": ("under 2 s", lambda value: value < 2),
    "compare_cold_s": ("under 30 s", lambda value: value < 30),
    "compare_warm_s_max": ("under 5 s", lambda value: value < 5),
}
"""The issue's targets, checked in the page (never in a test: timings are not test material)."""


HOW_MEASURED = """\
## How the figures are measured

- **Engine throughput** (`*_events_per_s`): 1,000,000 events, 1,000 keys, 100 micro-batches of 10,000 events,
  at parallelism 1 and 4 (all subtasks run in one Python process: parallelism shows the cost of routing by
  key group, not a speed-up). CPU time (`time.process_time`), the best of 3 runs (1 for sessions and joins),
  so that other processes on the machine weigh as little as possible. The events are built, and the
  pipelines set up, before the clock starts, then frozen out of the garbage collector's sight (`gc.freeze`):
  they are input already in memory, not work.
- **The floor** (`python_loop_events_per_s`): a plain loop over dicts doing the same keyed tumbling-window
  count with the same watermark (`python_loop_tumbling_count`), run in turns with the engine's tumbling count
  under the same conditions; `tumbling_count_ratio_to_loop` is the ratio of the two.
- **Checkpoints**: running-count state of 10k, 100k and 1M keys, snapshotted (every subtask's `snapshot()`,
  encoded, written to a directory with checksums and renamed into place) and restored into a new graph,
  wall-clock, the best of 3 of each; incremental checkpoints write only the keys changed since the previous
  one (timed once: a delta clears the marks it is made of).
- **Memory**: `tracemalloc` of the state left after a run (per key), and the process's peak RSS.
- **Spark**: the same events through PySpark, as a batch query and as a stream of 10 micro-batches
  (wall-clock), and the workshop path: a cold `ministream compare` in a new process, then every lesson's
  comparison in one process. device-sessions is the first lesson whose twin runs Python code inside Spark
  (a `transformWithState` processor): it pays Spark's one-off start of its Python workers, and each
  `transformWithState` query starts a Python process on the driver while planning; run again in the same
  process it took 3.4 to 4.6 s. `make setup` puts compiled bytecode in the zips those Python processes import
  PySpark from (`ministream/spark/precompile.py`): each of them started 0.7 s sooner. On a local master Spark
  writes checkpoint files through Hadoop's `FileSystem` API, which took a third to a half off the comparisons
  (`tutorials/spark-facts.md`, *Costs*).

## What made the window step fast (profiled with cProfile and the collector's callbacks)

- *Fold each row at once*, and work a row's windows out once per *pane* (the stretch of time between two window
  boundaries, where every instant has the same windows): consecutive rows mostly share one.
- *State by window* (`operators/window_state.py`): the watermark closes whole windows, so eviction takes them whole;
  state is split by key group only when a checkpoint is taken.
- *No object per row that outlives the row*: keyed channels carry rows, read as `(key, row)` pairs made one
  at a time (`physical.KeyedRows`). A tuple per row held for a whole batch made Python's cyclic garbage
  collector run thousands of times, and walk everything each time: it was a third of the run.
"""


def markdown_page(report: dict, argv) -> str:
    """The figures as a Markdown page: the machine, the command, a table, the targets met or not, and how the
    figures are measured."""
    command = "ministream bench " + " ".join(argv or [])
    lines = [
        "# Benchmark figures",
        "",
        f"Produced by `{command.strip()}` (ministream/tools/bench/); re-run it to measure your machine.",
        "",
        "Machine: " + ", ".join(f"{name} {value}" for name, value in report["machine"].items()),
        "",
        "| figure | value | target |",
        "| --- | --- | --- |",
    ]
    for name, value in report["figures"].items():
        target = ""
        if name in TARGETS and isinstance(value, (int, float)):
            wanted, met = TARGETS[name]
            target = f"{wanted}: {'met' if met(value) else 'NOT met'}"
        shown = f"{value:,}" if isinstance(value, (int, float)) else str(value)
        lines.append(f"| `{name}` | {shown} | {target} |")
    return "\n".join(lines) + "\n\n" + HOW_MEASURED


def scale_section(path) -> str:
    """The section that ``bench --scale`` wrote in the page at ``path`` (kept when ``bench`` rewrites it)."""
    start, end = SECTION
    try:
        with open(path, encoding="utf-8") as page:
            text = page.read()
    except OSError:
        return ""
    if start not in text or end not in text:
        return ""
    return "\n" + text[text.index(start) : text.index(end) + len(end)] + "\n"


def main(argv=None, out=None) -> int:
    """``ministream bench [--json] [--events N] [--no-spark] [--state]``, or ``ministream bench --scale ...``
    (``bench/scale.py``)."""
    import argparse

    out = out or sys.stdout
    if argv and argv[0] == "--scale":  # millions of sessions: its options are its own (bench/scale.py)
        return scale_main(argv[1:], out)
    parser = argparse.ArgumentParser(prog="ministream bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object of named figures")
    parser.add_argument("--events", type=int, default=EVENTS, help="events in the throughput workloads")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark figures")
    parser.add_argument("--markdown", metavar="FILE", help="also write the figures as a Markdown page")
    parser.add_argument(
        "--state", action="store_true", help="only the state backends: memory, RocksDB, Redis (bench/state.py)"
    )
    args = parser.parse_args(argv)
    lines = sys.stderr if args.json else out
    with tqdm(desc="bench", unit="part", file=sys.stderr, leave=True) as bar:  # a bar on stderr, lines above it

        def stage(name: str, done: int, total: int) -> None:
            bar.total = total
            bar.set_description("bench" if done == total else f"bench: {name}")
            bar.update(done - bar.n)

        def say(text: str) -> None:
            bar.write(text, file=lines)

        if args.state:
            report = {"machine": machine(), "figures": {}}
            bench_state_backends(report["figures"], say)
        else:
            report = run_benchmarks(events=args.events, spark=not args.no_spark, say=say, stage=stage)
    if args.markdown:
        kept = scale_section(args.markdown)
        with open(args.markdown, "w", encoding="utf-8") as page:
            page.write(markdown_page(report, argv) + kept)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    else:
        print("\nfigure".ljust(44) + "value", file=out)
        for name, value in report["figures"].items():
            print(f"{name.ljust(43)} {value:,}" if isinstance(value, (int, float)) else f"{name} {value}", file=out)
        print(f"\nmachine: {report['machine']}", file=out)
    return 0
