"""Benchmarks on the Spark side: the same events through PySpark, and the cost of a workshop's comparisons.

The benchmark's events are written to Parquet in ten files. Spark reads them once as a batch query and once as
a streaming query with ``maxFilesPerTrigger=1``, so the stream runs in exactly ten micro-batches; both compute
the keyed tumbling-window count of ``tools/bench/``. (The lessons' scripted source carries its script in the query's
options, which suits a few hundred rows, not a million.)

**Every operator side by side** (:func:`bench_spark_operators`): each operator of ``engine.OPERATORS`` runs in
Spark on the same events as in the engine, cut into the same micro-batches: each batch is one Parquet file per
input (its modification time one second after the previous one's, as Spark takes files in that order), read
with ``maxFilesPerTrigger=1``. The query is the operator's pipeline compiled by ``ministream.spark.compiler``
(watermark, windows, join bounds and deduplication keys are the pipeline's own; the process function runs as
``transformWithState`` through ``spark/processor_adapter.py``). Its rows are counted batch by batch in
``foreachBatch`` and checked against the engine's rows on the same events: a figure of a query that gave other
rows would mean nothing. The session is started (and timed) before, the first batch (query start, planning,
Python workers) is timed apart, and the rate counts the batches after it, by CPU time of every process of the
run (the JVM, Spark's Python workers, this driver) and by wall time.

The workshop figures time what a learner waits for: a cold ``ministream compare`` in a new process (Spark's
start included), and each further lesson's comparison in the same process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ministream.lessons import all_lessons, compare_lesson
from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.workload import DELAY, WINDOW, in_batches, timed


def write_parquet(events: list[dict], folder: Path, files: int = 10) -> None:
    """The events as ``files`` Parquet files, in arrival order, ``ts`` as a UTC timestamp (ms)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = -(-len(events) // files)
    for index in range(files):
        part = events[index * size : (index + 1) * size]
        table = pa.table(
            {
                "key": [e["key"] for e in part],
                "ts": pa.array([e["ts"] for e in part], pa.timestamp("ms", tz="UTC")),
                "value": [e["value"] for e in part],
            }
        )
        pq.write_table(table, folder / f"part-{index:02d}.parquet")


def bench_spark(figures: dict, events: list[dict], say) -> None:
    """Spark's events per second (batch, and streaming in 10 micro-batches), per micro-batch time, and the
    workshop path."""
    from pyspark.sql import functions as F

    from ministream.spark import spark_session

    started = time.perf_counter()
    spark = spark_session()
    spark.range(1).collect()
    figures["spark_session_start_s"] = round(time.perf_counter() - started, 2)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "events"
        folder.mkdir()
        write_parquet(events, folder)
        schema = "key STRING, ts TIMESTAMP, value DOUBLE"
        window = f"{WINDOW} milliseconds"

        def batch_query():
            frame = spark.read.schema(schema).parquet(str(folder))
            return frame.groupBy("key", F.window("ts", window)).count().count()

        seconds, _ = timed(batch_query)
        figures["spark_batch_events_per_s"] = round(len(events) / seconds)
        say(f"spark batch query: {figures['spark_batch_events_per_s']:,} events/s")

        stream = (
            spark.readStream.schema(schema)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(folder))
            .withWatermark("ts", f"{DELAY} milliseconds")
            .groupBy("key", F.window("ts", window))
            .count()
        )
        rows = []
        query = (
            stream.writeStream.outputMode("append")
            .option("checkpointLocation", str(Path(tmp) / "checkpoint"))
            .foreachBatch(lambda frame, batch_id: rows.append(frame.count()))
            .start()
        )
        started = time.perf_counter()
        query.processAllAvailable()
        seconds = time.perf_counter() - started
        durations = [p["durationMs"]["triggerExecution"] / 1000 for p in query.recentProgress if p["numInputRows"] > 0]
        query.stop()
    figures["spark_streaming_events_per_s"] = round(len(events) / seconds)
    figures["spark_streaming_batches"] = len(durations)
    figures["spark_microbatch_s"] = round(sum(durations[1:]) / max(1, len(durations) - 1), 3)
    figures["spark_first_microbatch_s"] = round(durations[0], 3) if durations else None
    say(
        f"spark streaming, {len(durations)} micro-batches: {figures['spark_streaming_events_per_s']:,} events/s, "
        f"{figures['spark_microbatch_s']} s per micro-batch after the first ({figures['spark_first_microbatch_s']} s)"
    )
    bench_workshop(figures, say)


def bench_workshop(figures: dict, say) -> None:
    """A cold ``ministream compare`` in a new process, then every lesson's comparison in this process.

    The first comparison in a process pays for Spark's start and its first micro-batch (class loading, the
    JIT): it is reported apart as ``compare_first_in_process_s``, and the "later lessons" figures time every
    lesson again once the session is warm."""

    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ministream.tools.cli", "compare", "tumbling-window"], check=False, capture_output=True
    )
    figures["compare_cold_s"] = round(time.perf_counter() - started, 1)
    say(f"cold 'ministream compare tumbling-window': {figures['compare_cold_s']} s")
    lessons = all_lessons()
    seconds, _ = timed(compare_lesson, lessons[0])
    figures["compare_first_in_process_s"] = round(seconds, 1)
    say(f"  compare {lessons[0].name}, the first in this process (Spark's start included): {seconds:.1f} s")
    warm = {}
    for lesson in [lesson for lesson in lessons if lesson.twin is not None]:  # operator-state has no twin
        seconds, result = timed(compare_lesson, lesson)
        warm[lesson.name] = round(seconds, 1)
        say(
            f"  compare {lesson.name} in the same process: {seconds:.1f} s ({'match' if result.matches else 'DIFFERS'})"
        )
    figures["compare_warm_s_max"] = max(warm.values())
    figures["compare_warm_s_mean"] = round(sum(warm.values()) / len(warm), 2)
    figures["compare_warm_s_by_lesson"] = warm


def process_tree_cpu() -> dict[int, float]:
    """CPU seconds of this process and of every process under it (Spark's JVM, its Python workers), by process
    id, from ``/proc``: Spark works in other processes and threads, which ``time.process_time`` does not see."""
    tick = os.sysconf("SC_CLK_TCK")
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(value) for value in fields[11:15]) / tick  # utime stime cutime cstime
    me = os.getpid()

    def under_me(pid: int) -> bool:
        while pid > 1:
            if pid == me:
                return True
            pid = parents.get(pid, 0)
        return False

    mine = os.times()
    return {me: mine.user + mine.system} | {
        pid: seconds for pid, seconds in times.items() if pid != me and under_me(pid)
    }


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """The CPU seconds the processes of ``after`` spent since ``before`` (two :func:`process_tree_cpu`): a
    process that ended in between (an idle Python worker Spark let go) leaves its earlier seconds out of both,
    instead of making the total go down.

    >>> cpu_between({1: 2.0, 7: 5.0}, {1: 2.5, 9: 0.25})
    0.75"""
    return sum(max(0.0, seconds - before.get(pid, 0.0)) for pid, seconds in after.items())


def engine_rows_by_batch(name: str, script: list) -> dict[int, int]:
    """The rows the engine's pipeline of operator ``name`` emits in each batch on ``script`` (batches with
    none left out)."""
    benched = OPERATORS[name]
    run = run_microbatch(benched.build(benched.inputs(script)), output_mode=benched.output_mode)
    return {batch.batch_id: len(batch.rows) for batch in run.output() if batch.rows}


def spark_operator_run(spark, name: str, script: list, folder: Path, on_batch: Callable | None = None) -> dict:
    """Operator ``name`` in Spark on ``script`` (a list of batches of the bench's events): its compiled query
    over Parquet files, one per batch and input, to ``foreachBatch``. Returns the rows of each batch (batches
    with none left out), the batches run, the first batch's wall seconds (the query's start included), and
    the wall and CPU seconds of the batches after it (:func:`process_tree_cpu`, :func:`cpu_between`).
    ``on_batch(batch_id)`` is called as each batch ends."""
    from pyspark.sql.types import StructType

    from ministream.spark import session_conf
    from ministream.spark.compiler import compile_flow
    from ministream.spark.compiler.schema import ddl
    from ministream.spark.source import write_script_files

    benched = OPERATORS[name]
    data = benched.inputs(script)
    compiled = compile_flow(benched.build(data), {}, schemas=benched.columns, output_mode=benched.output_mode)
    sides = data if isinstance(data, dict) else {"events": data}
    inputs = {}
    for source, columns in benched.columns.items():
        (folder / source).mkdir(parents=True)
        write_script_files(StructType.fromDDL(ddl(columns)), sides[source], str(folder / source))
        inputs[source] = (
            spark.readStream.schema(ddl(columns)).option("maxFilesPerTrigger", 1).parquet(str(folder / source))
        )
    rows: dict[int, int] = {}
    first: list[tuple[float, dict[int, float]]] = []

    def count(frame, batch_id):
        rows[batch_id] = frame.count()
        if batch_id == 0:
            first.append((time.perf_counter(), process_tree_cpu()))
        if on_batch is not None:
            on_batch(batch_id)

    with session_conf(spark, compiled.conf):
        started = time.perf_counter()
        query = (
            compiled.twin(inputs, {})
            .writeStream.foreachBatch(count)
            .outputMode(benched.output_mode)
            .option("checkpointLocation", str(folder / "checkpoint"))
            .start()
        )
        try:
            query.processAllAvailable()
            ended, cpu = time.perf_counter(), process_tree_cpu()
            batches = len({progress["batchId"] for progress in query.recentProgress})
        finally:
            query.stop()
    [(first_ended, first_cpu)] = first
    return {
        "rows": {batch_id: n for batch_id, n in rows.items() if n},
        "batches": batches,
        "first_batch_s": first_ended - started,
        "wall_s": ended - first_ended,
        "cpu_s": cpu_between(first_cpu, cpu),
    }


def bench_spark_operators(
    figures: dict,
    events: list[dict],
    say,
    batch_size: int = 10_000,
    progress: Callable[[str], None] | None = None,
    operators: list[str] | None = None,
) -> None:
    """Every operator of ``engine.OPERATORS`` in Spark on ``events`` in batches of ``batch_size``, checked
    against the engine's rows on the same events: ``spark_<operator>_events_per_s`` (CPU time, the batches
    after the first), ``spark_<operator>_wall_events_per_s``, ``spark_<operator>_first_batch_s``,
    ``spark_<operator>_rows``, ``spark_<operator>_same_rows``, and, when the engine's figure is in
    ``figures``, ``<operator>_ratio_to_spark`` (ministream's events/s over Spark's). A query that gives
    other rows than the engine is said loudly, and its figures are kept with ``same_rows`` false.
    ``progress(text)`` is told which operator and batch runs; ``operators`` names the operators to run (every
    one by default)."""
    from ministream.spark import spark_session

    started = time.perf_counter()
    spark = spark_session()
    spark.range(1).collect()
    figures.setdefault("spark_session_start_s", round(time.perf_counter() - started, 2))
    script = in_batches(events, -(-len(events) // batch_size))
    figures["spark_operator_events"] = len(events)
    figures["spark_operator_batches"] = len(script)
    for name in OPERATORS if operators is None else operators:

        def on_batch(batch_id: int, name: str = name) -> None:
            if progress is None:
                return
            if batch_id < 0:
                progress(f"spark {name}: starting the query")
            elif batch_id < len(script):
                progress(f"spark {name}: batch {batch_id + 1} of {len(script)} done")
            else:  # the no-data batch after the last file, when the watermark moved
                progress(f"spark {name}: no-data batch {batch_id + 1} done")

        on_batch(-1)
        with tempfile.TemporaryDirectory(prefix="ministream-bench-") as tmp:
            result = spark_operator_run(spark, name, script, Path(tmp), on_batch)
        expected = engine_rows_by_batch(name, script)
        same = result["rows"] == expected
        after_first = len(events) - len(script[0])
        rate = round(after_first / result["cpu_s"]) if result["cpu_s"] > 0 else None
        figures[f"spark_{name}_events_per_s"] = rate
        figures[f"spark_{name}_wall_events_per_s"] = round(after_first / result["wall_s"])
        figures[f"spark_{name}_first_batch_s"] = round(result["first_batch_s"], 2)
        figures[f"spark_{name}_rows"] = sum(result["rows"].values())
        figures[f"spark_{name}_same_rows"] = same
        ours = figures.get(f"{name}_events_per_s")
        if ours and rate:
            figures[f"{name}_ratio_to_spark"] = round(ours / rate, 2)
        cpu_rate = f"{rate:,} events/s (CPU)" if rate else "no CPU time seen (Spark's processes are not this one's)"
        say(
            f"spark {name}: {cpu_rate}, {figures[f'spark_{name}_wall_events_per_s']:,} events/s (wall), "
            f"first batch {result['first_batch_s']:.1f} s; {figures[f'spark_{name}_rows']:,} rows in "
            f"{result['batches']} batches" + (", the engine's rows" if same else "")
        )
        if not same:
            differing = sorted(
                b for b in set(expected) | set(result["rows"]) if expected.get(b) != result["rows"].get(b)
            )
            say(
                f"!!! MISMATCH {name}: Spark emitted {sum(result['rows'].values()):,} rows, the engine "
                f"{sum(expected.values()):,}; batches that differ (batch: Spark, engine): "
                + ", ".join(f"{b}: {result['rows'].get(b, 0)}, {expected.get(b, 0)}" for b in differing[:10])
            )
