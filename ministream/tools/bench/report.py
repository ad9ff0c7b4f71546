"""The benchmark run as one command: every figure, the machine, the targets, and the page they make."""

from __future__ import annotations

import json
import os
import platform
import sys

from tqdm import tqdm

from ministream.tools.bench.checkpoints import bench_checkpoints
from ministream.tools.bench.curves import (
    CURVE_MAX,
    OVER_FLOOR_TARGET,
    SPREAD_TARGET,
    CurvePoints,
    bench_curves,
    curve_points,
    scaling_plot,
    spread,
)
from ministream.tools.bench.engine import OPERATORS, bench_engine, bench_memory, bench_operators
from ministream.tools.bench.scale import SECTION
from ministream.tools.bench.scale import main as scale_main
from ministream.tools.bench.spark import bench_spark, bench_spark_operators
from ministream.tools.bench.state import bench_state_backends
from ministream.tools.bench.workload import BATCHES, EVENTS, make_events
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


def spark_operators_part(figures: dict, spark_events: int, events: int, say, progress=None, operators=None):
    """The part that runs every operator (or those named in ``operators``) in Spark
    (``spark.bench_spark_operators``) on the first ``spark_events`` of the bench's events, in batches of the
    engine's size (``events`` / 100)."""
    batch_size = -(-events // BATCHES)
    return lambda: bench_spark_operators(figures, make_events(spark_events), say, batch_size, progress, operators)


def operator_names(text: str | None) -> list[str] | None:
    """The operators named in a comma-separated option (``None`` for all, or when no text was given); a name
    that is no operator's raises ``ValueError`` with the operators' names.

    >>> operator_names("dedup,join_inner"), operator_names("all"), operator_names(None)
    (['dedup', 'join_inner'], None, None)
    """
    if text is None or text == "all":
        return None
    names = text.split(",")
    for name in names:
        if name not in OPERATORS:
            raise ValueError(f"no operator {name!r}: the operators are {', '.join(OPERATORS)}")
    return names


def run_parts(parts: list, stage=None) -> None:
    """Run ``(name, measure)`` parts in order; ``stage(name, done, total)`` is told as each part begins
    (``done`` parts finished) and at the end."""
    for done, (name, measure) in enumerate(parts):
        if stage is not None:
            stage(name, done, len(parts))
        measure()
    if stage is not None:
        stage("", len(parts), len(parts))


def run_benchmarks(
    *,
    events: int = EVENTS,
    spark: bool = True,
    spark_events: int | None = None,
    spark_operators=None,
    say=lambda text: None,
    stage=None,
    progress=None,
    more_parts=(),
) -> dict:
    """Every figure, in one run: engine throughput, the loop floor, memory, checkpoints, ``more_parts``
    (``(name, measure(figures))``, such as the curves), then Spark (every operator, or those of
    ``spark_operators``, on the first ``spark_events`` events, all of them by default) and the workshop path:
    the engine's parts run before Spark's, whose JVM stays busy for a while after its runs;
    ``stage(name, done, total)`` is told as each part begins (``done`` parts finished) and at the end,
    ``progress(text)`` where a long part is."""
    figures: dict = {}
    described = machine()  # before the run, so that its load average is the machine's, not the benchmark's
    data = make_events(events)
    parts = [
        ("engine", lambda: bench_engine(figures, data, say)),
        ("memory", lambda: bench_memory(figures, say)),
        ("checkpoints", lambda: bench_checkpoints(figures, say)),
    ]
    parts += [(name, lambda measure=measure: measure(figures)) for name, measure in more_parts]
    if spark:
        parts.append(("spark", lambda: bench_spark(figures, data, say)))
        parts.append(
            (
                "spark operators",
                spark_operators_part(figures, spark_events or events, events, say, progress, spark_operators),
            )
        )
    run_parts(parts, stage)
    return {"machine": described, "figures": figures}


TARGETS = {
    **{f"{name}_ratio_to_floor": ("at least 0.5", lambda value: value >= 0.5) for name in OPERATORS},
    **{
        f"{name}_spread_{axis}": (f"at most {SPREAD_TARGET}", lambda value: value <= SPREAD_TARGET)
        for name in OPERATORS
        for axis in ("run_length", "batch_size")
    },
    **{
        f"{name}_spread_batch_size_over_floor": (
            f"at most {OVER_FLOOR_TARGET}",
            lambda value: value <= OVER_FLOOR_TARGET,
        )
        for name in OPERATORS
    },
    "checkpoint_snapshot_s_1m_keys": ("under 1 s", lambda value: value < 1),
    **{
        f"tumbling_count{label}_checkpoint_ratio": ("at least 0.5", lambda value: value >= 0.5)
        for label in ("", "_incremental")
    },
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
  turns, CPU time (`time.process_time`), the best of 5 of each: the machine is shared, and a ratio of two
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
- **A checkpoint at every batch** (`tumbling_count_checkpoint_every_10k_events_per_s`, and `_incremental_`
  with a full checkpoint every 10): the operators' tumbling count, a checkpoint written to a directory at the
  end of each of its 100 batches (`MicroBatchCheckpoints(DirectoryStorage(folder))`: the offsets log, then one
  file per checkpoint, synced to disk and renamed into place), timed in turns with the same count without
  checkpoints, 3 times, CPU time; `..._ratio` is the best time without checkpoints over the best with them (the
  share of the throughput kept), `..._ratios` the same ratio run by run.
- **Memory**: `tracemalloc` of the state left after a run (per key), and the process's peak RSS.
- **Operators in Spark** (`spark_<operator>_events_per_s`, `<operator>_ratio_to_spark`): each operator's
  pipeline compiled to PySpark (`ministream/spark/compiler`; the process function runs as `transformWithState`
  through `spark/processor_adapter.py`) on the same events as the engine (the first `--spark-events` of them
  when it is given),
  cut into micro-batches of the engine's size: one Parquet
  file per batch and input, read with `maxFilesPerTrigger=1`. The session is started before (and timed apart,
  `spark_session_start_s`); each query's first batch (its start, planning, Python workers) is timed apart
  (`spark_<operator>_first_batch_s`); the rate counts the later batches, by CPU time of every process of the
  run (the JVM, Spark's Python workers, the driver: `/proc`), and by wall-clock time
  (`spark_<operator>_wall_events_per_s`). Its rows are counted in `foreachBatch` and checked against the
  engine's on the same events, batch for batch (`spark_<operator>_same_rows`; a difference is printed and the
  command exits with 1).
- **Flat cost** (`bench --curves`, `bench/curves.py`), run before the Spark parts (a JVM still busy after
  its queries slowed the first curve's runs): CPU time. The run-length curve's
  events are made batch by batch as the run reads them, the time spent making them taken out, and the output
  is counted, not kept, so that a run of 10 million events holds one batch and the state the watermark leaves
  (the process's peak resident memory is sampled at every batch). The batch-size curve's events are made once
  and held in memory; at each batch size the engine and its floor run in turns on them (the best of two
  runs each, the load beside them), their rows checked to be the same batch for batch (`<operator>_floor_spread_batch_size`,
  `<operator>_spread_batch_size_over_floor`; `figures["curves"][operator]["floor batch size"]`, `"ratio to
  floor"`, `"rows per event"` in `--json`).
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
  testing each, and a row after its key's last session (most rows) appends one; a heap of *keys* by the end
  of their first session gives the watermark the keys it closes sessions of, and it slices them off the
  front of each key's list. A heap of every session grew with the batch (the state holds about two
  batches of sessions, the watermark evicting one batch late), and each of its pops reached further.
- *Join rows sorted by time per key* (`stream_join.StreamJoin`): a new row finds the other side's rows in
  its time range by binary search in the key's times (plain numbers kept beside its rows); a heap with an
  entry per key, at its earliest row, gives eviction the keys to clean, never the others, and their due
  rows leave as a prefix. The join floor keeps its rows sorted the same way: a key holds about two batches
  of rows, and the scan it did before cost more the larger the batches. Eviction cleans each key as the
  heap gives it; with batches of 1,000 most keys leave at every eviction and come back in the next batch,
  so a key that leaves hands its emptied lists to the next new key (`self.spare`): lists made afresh each
  batch lived just long enough to reach the collector's oldest generation and set off its full
  collections. The join floor keeps three parallel lists per key (times, rows, flags), not a list per row,
  for the same reason: it is two to three times faster at 10,000 and 100,000-event batches than the floor
  with a list per row, and every join's ratio fell with it. A new row's probe joins its candidates in the loop
  itself when every candidate matches (an inner or outer join with no condition on the pair; a left semi join
  has a short loop of its own): a method call for each row that matched cost about 7% of the join's time. The
  `key IS NOT NULL` that Spark runs below each side's watermark (`watermark.KeysNotNull`) answers for a whole
  chunk in C, and tests rows one by one only when some key is null.
- *Seen keys by the second of their expiry* (`seen_keys.SeenBySecond`): when the deduplication's key holds
  the event time, a key's expiry follows from the key, so the keys are kept in small tables by second; a
  row looks its key up in its own second's table, which stays in the processor's cache where one dict of a
  100,000-event batch's keys did not (dedup at batches of 100,000 went from 1.6M to 2.8M events/s). Its
  floor keeps its keys the same way.
- *Timers in a heap* (`time/timers.TimerQueue`): a sorted set per key cost more to make than the timers it
  held.
- *A cost per key per batch as small as a cost per row* (running aggregate, process step): with batches of
  1,000 rows over 1,000 keys a key has one or two rows in a batch, so what the operator does once per key
  counts as much as what it does per row. The running aggregate finds each key's state once (one list
  comprehension over the chunk's keys), folds every key of a chunk aggregate by aggregate
  (`aggregates.add_groups`: one `map` over the keys, not a call per key;
  `count("*")` alone only counts each key's rows, `collections.Counter`, with no list of rows per key),
  keeps the touched keys' accumulator lists for the batch's end, and builds the usual row (one key column,
  one aggregate) as a dict display. Its floor counts each batch's keys with `collections.Counter` too: written
  with a dict operation per event it ran at 0.8 of the engine's speed, which made it no floor. The process
  step calls its handlers in a plain loop; `register_timer` goes straight to its time mode's queue,
  `ValueState.value` and `update` reach their table directly, the current key's group is asked of
  the cache with the key alone (half the cost of passing the number of groups too), and the timers due come
  grouped by time: one `ExpiredTimerInfo` per time, and the timers of a time deleted together after their
  handlers (`TimerQueue.discard_keys`; a handler sees only its own key's timers, so this is Spark's
  delete-after-handler). The bench's handler reads its rows' times with `max(map(itemgetter("ts"), rows))`,
  as the floor reads them in C: a generator expression over the rows cost about 5% of the run. What is left
  is the handlers' calls and their state and timer calls: with batches of 10,000, about 0.3 s per million
  events (two handler calls, two key switches, two state reads, a write, a clear, a timer added and one
  deleted per key and batch), where the floor spends about 0.1 s on the same keys and timers in dict
  operations; and the handler's reading of rows that lie scattered over the batch's (the floor reads each
  row's time in arrival order). Grouping the rows by key costs the engine what it costs the floor. Its floor
  keeps its timers by expiry (`{expiry: {key: None}}`) and pops the due ones, rather than looking through
  every key's timers at every batch: 1.25 to 1.6 times faster,
  which lowered the process step's ratio as much; it groups a batch's times with `defaultdict(list)`, not a
  new list for every row (`setdefault(key, [])`), 4% faster.
- *Less fixed cost per batch* (`core/physical.Scheduler`, `models/microbatch.py`): the scheduler looks only at
  subtasks with inputs and a one-input subtask answers without a loop (the same draws, so a seed gives the
  same interleaving); each step's watermark is worked out once per watermark value, and a step that runs
  with the global watermarks shares the batch's `BatchInfo`: 26 to 28 µs per batch instead of 37 to 39 for
  the deduplications and the tumbling count.
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
- *Accumulators in tuples* (`aggregates.tuple_table_folder`, `row_folder`): each (key, window) and each
  session holds a tuple of plain values that a fold replaces, not a list. The collector stops looking at
  such a tuple after its first pass; lists made and freed batch after batch set off full collections, each
  of which walked every row the sink held (the sliding count's cost grew with the run) and every session
  held (the session count's cost grew with the batch).
"""


def verdict(name: str, value) -> str:
    """``"<target>: met"`` or ``"<target>: NOT met"`` for a figure with a target (:data:`TARGETS`), else ``""``."""
    if name not in TARGETS or not isinstance(value, (int, float)) or isinstance(value, bool):
        return ""
    wanted, met = TARGETS[name]
    return f"{wanted}: {'met' if met(value) else 'NOT met'}"


def _number(value) -> str:
    return "" if value is None else f"{value:,}"


def operator_table(figures: dict) -> list[str]:
    """The operators side by side, as Markdown lines: ministream, its floor, their ratio, Spark, ministream
    over Spark; then Spark's wall-clock rate, its first batch, whether its rows were the engine's, and the load
    while ministream and its floor ran. A sentence before the table says what ran."""
    engine_events = figures.get("operator_events", EVENTS)
    engine_batches = figures.get("operator_batches", BATCHES)
    lines = [
        (
            f"ministream and its floor: {engine_events:,} events in {engine_batches} micro-batches of "
            f"{-(-engine_events // engine_batches):,}, CPU time, the best of {figures.get('operator_repeat', 3)} "
            "taken in turns."
        ),
    ]
    spark_events = figures.get("spark_operator_events")
    if spark_events:
        batches = figures["spark_operator_batches"]
        lines[0] += (
            " Spark: "
            + ("the same events" if spark_events == engine_events else f"the first {spark_events:,} of the same events")
            + f", in {batches} micro-batches of "
            f"{-(-spark_events // batches):,} (one Parquet file per batch, `maxFilesPerTrigger=1`), the operator's "
            "compiled query on the warm session (`local[2]`, 2 shuffle partitions), its rows counted in "
            "`foreachBatch` and checked against the engine's on the same events, batch for batch; *Spark ev/s* is "
            "by CPU time of all of Spark's processes (the JVM, its Python workers, the driver) over the batches "
            "after the first, *wall* by wall-clock time over the same batches; the first batch (the query's "
            "start, planning, Python workers) is given apart. *ministream/Spark* is ministream's events/s over "
            "Spark's (CPU time both)."
        )
    lines += [
        "",
        (
            "| operator | ministream ev/s | floor ev/s | ratio | Spark ev/s | ministream/Spark "
            "| Spark wall ev/s | Spark first batch (s) | Spark rows | load |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in OPERATORS:
        same = figures.get(f"spark_{name}_same_rows")
        rows = _number(figures.get(f"spark_{name}_rows"))
        if same is not None:
            rows += " (= engine)" if same else " (**MISMATCH**)"
        cells = [
            name,
            _number(figures[f"{name}_events_per_s"]),
            _number(figures[f"{name}_floor_events_per_s"]),
            str(figures[f"{name}_ratio_to_floor"]),
            _number(figures.get(f"spark_{name}_events_per_s")),
            _number(figures.get(f"{name}_ratio_to_spark")),
            _number(figures.get(f"spark_{name}_wall_events_per_s")),
            _number(figures.get(f"spark_{name}_first_batch_s")),
            rows,
            str(figures[f"{name}_load"]),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _spread_cell(curve: dict, target: float | None = SPREAD_TARGET) -> str:
    """A curve's spread, with ``(met)`` or ``(NOT met)`` against ``target`` when there is one."""
    if not curve:
        return ""
    value = spread(curve)
    if target is None:
        return str(value)
    return f"{value} ({'met' if value <= target else 'NOT met'})"


def curves_table(curves: dict, points: CurvePoints) -> list[str]:
    """The flat-cost curves as Markdown lines, two tables. Run length: events per second at each point, the
    spread against the target, and the peak resident memory of each run. Batch size: the engine's events per
    second at each point and its spread against the target; the floor's, and its spread; the engine's spread
    over the floor's (against its own target); the engine's ratio to its floor and the output rows per event
    at each point."""
    lengths, sizes = points.run_lengths, points.batch_sizes

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    def at(curve: dict, xs, shown=lambda value: f"{value:,}") -> list[str]:
        curve = {int(x): y for x, y in curve.items()}
        return [shown(curve[x]) if x in curve else "" for x in xs]

    run_header = ["operator", *(f"{n:,} events" for n in lengths), "spread", *(f"MiB at {n:,}" for n in lengths)]
    lines = [row(run_header), row(["---"] * len(run_header))]
    for name, by_axis in curves.items():
        run = by_axis["run length"]
        lines.append(row([name, *at(run, lengths), _spread_cell(run), *at(by_axis.get("memory", {}), lengths)]))
    batch_header = [
        "operator",
        *(f"batches of {n:,}" for n in sizes),
        "spread",
        *(f"floor, batches of {n:,}" for n in sizes),
        "floor spread",
        "spread over floor's",
        *(f"ratio at {n:,}" for n in sizes),
        *(f"rows/event at {n:,}" for n in sizes),
    ]
    lines += ["", row(batch_header), row(["---"] * len(batch_header))]
    for name, by_axis in curves.items():
        engine, floor = by_axis["batch size"], by_axis.get("floor batch size", {})
        over = ""
        if engine and floor:
            value = round(spread(engine) / spread(floor), 2)
            over = f"{value} ({'met' if value <= OVER_FLOOR_TARGET else 'NOT met'})"
        cells = [name, *at(engine, sizes), _spread_cell(engine), *at(floor, sizes), _spread_cell(floor, None), over]
        cells += at(by_axis.get("ratio to floor", {}), sizes, str) + at(by_axis.get("rows per event", {}), sizes, str)
        lines.append(row(cells))
    return lines


def curves_section(report: dict, folder: str | None) -> list[str]:
    """The flat-cost section: what ran, the plot (when one was drawn), the table."""
    figures = report["figures"]
    points = CurvePoints(**figures["curve_points"]) if "curve_points" in figures else curve_points()
    lengths = ", ".join(f"{n:,}" for n in points.run_lengths)
    sizes = ", ".join(f"{n:,}" for n in points.batch_sizes)
    lines = [
        "## Flat cost",
        "",
        (
            f"Each operator's events per second (engine, CPU time) on runs of {lengths} events in "
            f"batches of {points.run_batch:,}, and on {points.batch_events:,} events in batches of {sizes}; the "
            f"spread is a curve's fastest point over its slowest (target: at most {SPREAD_TARGET}). The run-length "
            "curve's events are made batch by batch as the run reads them (the time spent making them taken out) "
            "and the output is counted, not kept: the *MiB* columns are the process's peak resident memory during "
            "each run, which stays flat when the state is bounded by the watermark. The batch-size curve runs on "
            "the same events in memory beside the operator's floor (`tools/bench/floors.py`), the two timed in "
            "turns (the best of two runs each; one run per point of the run-length curve) and checked to give the same rows, batch for batch. The floor is not flat either: the work per "
            "event depends on the batch (an update-mode count emits a row per key changed in each batch, so "
            "smaller batches emit more rows per event; a process function sets a timer per key and batch), which "
            "*rows/event* shows. *Spread over floor's* is the engine's batch-size spread over its floor's (target: "
            f"at most {OVER_FLOOR_TARGET}: the engine adds little to the cost the batching itself imposes); *ratio* "
            "is the engine's events/s over its floor's at each batch size."
        ),
        "",
    ]
    plot = report.get("plot")
    if plot is not None:
        where = os.path.relpath(os.path.abspath(plot), folder or ".")
        lines += [f"![events per second against run length and batch size]({where})", ""]
    return lines + curves_table(figures["curves"], points) + [""]


def markdown_page(report: dict, argv, folder: str | None = None) -> str:
    """The figures as a Markdown page: the machine and its load, the command, the operators beside their
    floors and Spark, the flat-cost curves, every figure with the targets met or not, and how the figures are
    measured."""
    command = "ministream bench " + " ".join(argv or [])
    machine_line = "Machine: " + ", ".join(f"{name} {value}" for name, value in report["machine"].items())
    lines = [
        "# Benchmark figures",
        "",
        f"Produced by `{command.strip()}` (ministream/tools/bench/); re-run it to measure your machine.",
        "",
        machine_line + ". The machine is shared with other jobs: the load average says how busy it was.",
        "",
    ]
    figures = report["figures"]
    if all(f"{name}_events_per_s" in figures for name in OPERATORS):
        lines += ["## Operators against their floors and Spark", ""] + operator_table(figures) + [""]
    if "curves" in figures:
        lines += curves_section(report, folder)
    lines += ["## Every figure", "", "| figure | value | target |", "| --- | --- | --- |"]
    for name, value in figures.items():
        if isinstance(value, dict):
            continue
        shown = f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        lines.append(f"| `{name}` | {shown} | {verdict(name, value)} |")
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
    """``ministream bench [--json] [--events N] [--no-spark] [--spark-events N] [--spark-operators OPS]
    [--operators] [--curves [OPS]] [--curve-max N] [--state] [--markdown FILE]``, or ``ministream bench --scale ...`` (``bench/scale.py``)."""
    import argparse

    out = out or sys.stdout
    if argv and argv[0] == "--scale":  # millions of sessions: its options are its own (bench/scale.py)
        return scale_main(argv[1:], out)
    parser = argparse.ArgumentParser(prog="ministream bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object of named figures")
    parser.add_argument("--events", type=int, default=EVENTS, help="events in the throughput workloads")
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark figures")
    parser.add_argument(
        "--spark-events",
        type=int,
        help="events each operator runs on in Spark (the first of the engine's; all of them by default), in batches "
        "of the engine's size (--events / 100)",
    )
    parser.add_argument(
        "--spark-operators",
        metavar="OPERATORS",
        help="only these operators in Spark (comma-separated; all by default)",
    )
    parser.add_argument("--markdown", metavar="FILE", help="also write the figures as a Markdown page")
    parser.add_argument(
        "--operators",
        action="store_true",
        help="only the operators against their floors (bench/floors.py) and, unless --no-spark, in Spark",
    )
    parser.add_argument(
        "--curves",
        metavar="OPERATORS",
        nargs="?",
        const="all",
        help="also the flat-cost curves (bench/curves.py) of these operators (comma-separated; all by default)",
    )
    parser.add_argument(
        "--curve-max",
        type=int,
        default=CURVE_MAX,
        help="the curves' longest run; the other runs are 1/100 and 1/10 of it, the batch sizes 1/10,000 to 1/100",
    )
    parser.add_argument(
        "--plot", default="diagrams/plots/benchmarks.scaling.png", help="where the curves' plot is written"
    )
    parser.add_argument(
        "--state", action="store_true", help="only the state backends: memory, RocksDB, Redis (bench/state.py)"
    )
    args = parser.parse_args(argv)
    try:
        curve_names, spark_names = operator_names(args.curves), operator_names(args.spark_operators)
    except ValueError as error:
        parser.error(str(error))
    lines = sys.stderr if args.json else out
    with tqdm(desc="bench", unit="part", file=sys.stderr, leave=True) as bar:  # a bar on stderr, lines above it

        def stage(name: str, done: int, total: int) -> None:
            bar.total = total
            bar.set_description("bench" if done == total else f"bench: {name}")
            bar.update(done - bar.n)

        def progress(text: str) -> None:
            bar.set_description(f"bench: {text}")

        def say(text: str) -> None:
            bar.write(text, file=lines)

        more_parts = []  # parts given the figures, run before Spark's: the curves, a part of the bar like them
        if args.curves:

            def measure_curves(figures: dict) -> None:
                bench_curves(figures, say, curve_names, curve_max=args.curve_max, progress=progress)

            more_parts.append(("curves", measure_curves))
        if args.state or args.operators:
            report = {"machine": machine(), "figures": {}}
            figures = report["figures"]
            if args.state:
                parts = [("state backends", lambda: bench_state_backends(figures, say))]
            else:
                parts = [("operators", lambda: bench_operators(figures, make_events(args.events), say))]
            parts += [(name, lambda measure=measure: measure(figures)) for name, measure in more_parts]
            if not args.state and not args.no_spark:
                parts.append(
                    (
                        "spark operators",
                        spark_operators_part(
                            figures, args.spark_events or args.events, args.events, say, progress, spark_names
                        ),
                    )
                )
            run_parts(parts, stage)
        else:
            report = run_benchmarks(
                events=args.events,
                spark=not args.no_spark,
                spark_events=args.spark_events,
                spark_operators=spark_names,
                say=say,
                stage=stage,
                progress=progress,
                more_parts=more_parts,
            )
        if "curves" in report["figures"]:
            curves = report["figures"]["curves"]
            save_png(scaling_plot(curves, curve_points(args.curve_max)), args.plot)
            report["plot"] = args.plot
        report["machine"]["load_average_at_end"] = round(os.getloadavg()[0], 2)
    if args.markdown:
        kept = scale_section(args.markdown)
        with open(args.markdown, "w", encoding="utf-8") as page:
            page.write(markdown_page(report, argv, os.path.dirname(os.path.abspath(args.markdown))) + kept)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    else:
        print("\nfigure".ljust(44) + "value", file=out)
        for name, value in report["figures"].items():
            if isinstance(value, dict):
                continue
            shown = f"{value:,}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
            print(f"{name.ljust(43)} {shown}", file=out)
        print(f"\nmachine: {report['machine']}", file=out)
        mismatched = [name for name in OPERATORS if report["figures"].get(f"spark_{name}_same_rows") is False]
        if mismatched:
            print(f"\n!!! Spark's rows differ from the engine's for: {', '.join(mismatched)}", file=out)
            return 1
    return 0
