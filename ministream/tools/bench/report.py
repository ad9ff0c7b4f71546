"""The benchmark run as one command: every figure, the machine, the targets, and the page they make."""

from __future__ import annotations

import json
import os
import platform
import sys

from tqdm import tqdm

from ministream.tools.bench.checkpoints import bench_checkpoints
from ministream.tools.bench.curves import RUN_LENGTHS, bench_curves, scaling_plot, spread
from ministream.tools.bench.engine import OPERATORS, bench_engine, bench_memory, bench_operators
from ministream.tools.bench.scale import SECTION
from ministream.tools.bench.scale import main as scale_main
from ministream.tools.bench.spark import bench_spark
from ministream.tools.bench.state import bench_state_backends
from ministream.tools.bench.workload import EVENTS, make_events
from ministream.tools.plots import save_png


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
    **{f"{name}_ratio_to_floor": ("at least 0.5", lambda value: value >= 0.5) for name in OPERATORS},
    "checkpoint_snapshot_s_1m_keys": ("under 1 s", lambda value: value < 1),
    "compare_cold_s": ("under 30 s", lambda value: value < 30),
    "compare_warm_s_max": ("under 5 s", lambda value: value < 5),
}
"""The issue's targets, checked in the page (never in a test: timings are not test material)."""


HOW_MEASURED = """\
## How the figures are measured

- **Operators against their floors** (`<operator>_events_per_s`, `<operator>_floor_events_per_s`,
  `<operator>_ratio_to_floor`): 1,000,000 events, 1,000 keys, 100 micro-batches of 10,000 events, parallelism
  1. Each operator's *floor* (`tools/bench/floors.py`) is a plain loop over dicts with the same micro-batch
  semantics (late rows against WM_{k-1}, eviction with WM_k, the no-data batch), checked to give the engine's
  rows batch for batch in every run (and by `tests/tools/test_bench_floors.py`). Engine and floor run in
  turns, CPU time (`time.process_time`), the best of 3 of each: the machine is shared, and a ratio of two
  figures measured side by side holds when the load moves; `<operator>_load` is the load average (the
  1-minute figure of `/proc/loadavg`) while they ran. The events are built, and the pipelines set up, before
  the clock starts, then frozen out of the garbage collector's sight (`gc.freeze`): they are input already in
  memory, not work. A join's rate counts the bench's events (1,000,000), though its two inputs hold 1.5
  million rows (every event is an impression; half of them are clicks too).
- **Parallelism 4** (`tumbling_count_p4_events_per_s`): all subtasks run in one Python process, so
  parallelism shows the cost of routing by key group, not a speed-up.
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

## What made the stateful operators fast (profiled with cProfile)

- *Sessions sorted per key* (`window_state.WindowsByKey`): a new row's session finds the sessions it touches
  by binary search in its key's sessions (sorted by start, and so by end, since they never touch), not by
  testing each; a heap of sessions by end gives the watermark the sessions it closes without a scan.
- *Join rows sorted by time per key* (`stream_join.StreamJoin`): a new row finds the other side's rows in
  its time range by binary search in the key's times (plain numbers kept beside its rows); a heap with an
  entry per key, at its earliest row, gives eviction the keys to clean, never the others, and their due
  rows leave as a prefix. The join floor keeps its rows sorted the same way: a key holds about two batches
  of rows, and the scan it did before cost more the larger the batches.
- *Timers in a heap* (`time/timers.TimerQueue`): a sorted set per key cost more to make than the timers it
  held.
- *No text made for a trace that is off*: deduplication and the process step built an explanation string
  (dates formatted) for every row and timer; a process step emits its rows once per batch, not once per
  key; deduplication decides each row as it arrives, with no list of the batch's rows.

## What made the window step fast (profiled with cProfile and the collector's callbacks)

- *Fold each row at once*, and work a row's windows out once per *pane* (the stretch of time between two window
  boundaries, where every instant has the same windows): consecutive rows mostly share one.
- *State by window* (`operators/window_state.py`): the watermark closes whole windows, so eviction takes them whole;
  state is split by key group only when a checkpoint is taken.
- *No object per row that outlives the row*: keyed channels carry rows, read as `(key, row)` pairs made one
  at a time (`physical.KeyedRows`). A tuple per row held for a whole batch made Python's cyclic garbage
  collector run thousands of times, and walk everything each time: it was a third of the run.
"""


def operator_table(figures: dict) -> list[str]:
    """The operators side by side, as Markdown lines: ministream, its floor, their ratio, Spark, the load."""
    lines = [
        "| operator | ministream (events/s) | floor (events/s) | ratio | Spark (events/s) | load |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in OPERATORS:
        spark = figures.get(f"spark_{name}_events_per_s")
        lines.append(
            f"| {name} | {figures[f'{name}_events_per_s']:,} | {figures[f'{name}_floor_events_per_s']:,} "
            f"| {figures[f'{name}_ratio_to_floor']} | {'' if spark is None else f'{spark:,}'} "
            f"| {figures[f'{name}_load']} |"
        )
    return lines


def curves_table(curves: dict) -> list[str]:
    """The flat-cost curves as Markdown lines: events per second at each point, and each curve's spread."""
    lengths = sorted({int(x) for by_axis in curves.values() for x in by_axis["run length"]})
    sizes = sorted({int(x) for by_axis in curves.values() for x in by_axis["batch size"]})
    lines = [
        "| operator | "
        + " | ".join(f"{n:,} events" for n in lengths)
        + " | spread | "
        + " | ".join(f"batches of {n:,}" for n in sizes)
        + " | spread |",
        "| --- |" + " --- |" * (len(lengths) + len(sizes) + 2),
    ]
    for name, by_axis in curves.items():
        cells = [name]
        for axis, points in (("run length", lengths), ("batch size", sizes)):
            curve = {int(x): y for x, y in by_axis[axis].items()}
            cells += [f"{curve[x]:,}" if x in curve else "" for x in points]
            cells.append(str(spread(curve)) if curve else "")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def markdown_page(report: dict, argv, folder: str | None = None) -> str:
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
    figures = report["figures"]
    if all(f"{name}_events_per_s" in figures for name in OPERATORS):
        lines[-2:-2] = operator_table(figures) + [""]
    if "curves" in figures:
        plot = report.get("plot")
        picture = []
        if plot is not None:
            where = os.path.relpath(os.path.abspath(plot), folder or ".")
            picture = [f"![events per second against run length and batch size]({where})", ""]
        lines[-2:-2] = ["## Flat cost", ""] + picture + curves_table(figures["curves"]) + ["", "## Every figure", ""]
    for name, value in report["figures"].items():
        if name == "curves":
            continue
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
    """``ministream bench [--json] [--events N] [--no-spark] [--operators] [--state]``, or ``ministream bench
    --scale ...`` (``bench/scale.py``)."""
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
        "--operators", action="store_true", help="only the operators against their floors (bench/floors.py)"
    )
    parser.add_argument(
        "--curves",
        metavar="OPERATORS",
        nargs="?",
        const="all",
        help="also the flat-cost curves (bench/curves.py) of these operators (comma-separated; all by default)",
    )
    parser.add_argument(
        "--run-lengths",
        default=",".join(map(str, RUN_LENGTHS)),
        help="the run lengths of the curves, comma-separated",
    )
    parser.add_argument(
        "--plot", default="diagrams/plots/benchmarks.scaling.png", help="where the curves' plot is written"
    )
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
        elif args.operators:
            report = {"machine": machine(), "figures": {}}
            bench_operators(report["figures"], make_events(args.events), say)
        else:
            report = run_benchmarks(events=args.events, spark=not args.no_spark, say=say, stage=stage)
        if args.curves:
            names = None if args.curves == "all" else args.curves.split(",")
            lengths = tuple(int(n) for n in args.run_lengths.split(","))
            bench_curves(report["figures"], say, names, run_lengths=lengths)
            save_png(scaling_plot(report["figures"]["curves"]), args.plot)
            report["plot"] = args.plot
    if args.markdown:
        kept = scale_section(args.markdown)
        with open(args.markdown, "w", encoding="utf-8") as page:
            page.write(markdown_page(report, argv, os.path.dirname(os.path.abspath(args.markdown))) + kept)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    else:
        print("\nfigure".ljust(44) + "value", file=out)
        for name, value in report["figures"].items():
            if name == "curves":
                continue
            print(f"{name.ljust(43)} {value:,}" if isinstance(value, (int, float)) else f"{name} {value}", file=out)
        print(f"\nmachine: {report['machine']}", file=out)
    return 0
