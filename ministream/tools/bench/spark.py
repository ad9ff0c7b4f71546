"""Benchmarks on the Spark side: the same events through PySpark, and the cost of a workshop's comparisons.

The benchmark's events are written to Parquet in ten files. Spark reads them once as a batch query and once as
a streaming query with ``maxFilesPerTrigger=1``, so the stream runs in exactly ten micro-batches; both compute
the keyed tumbling-window count of ``tools/bench/``. (The lessons' scripted source carries its script in the query's
options, which suits a few hundred rows, not a million.)

The workshop figures time what a learner waits for: a cold ``ministream compare`` in a new process (Spark's
start included), and each further lesson's comparison in the same process.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ministream.lessons import all_lessons, compare_lesson
from ministream.tools.bench.workload import DELAY, WINDOW, timed


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
    for lesson in lessons:
        seconds, result = timed(compare_lesson, lesson)
        warm[lesson.name] = round(seconds, 1)
        say(
            f"  compare {lesson.name} in the same process: {seconds:.1f} s ({'match' if result.matches else 'DIFFERS'})"
        )
    figures["compare_warm_s_max"] = max(warm.values())
    figures["compare_warm_s_mean"] = round(sum(warm.values()) / len(warm), 2)
    figures["compare_warm_s_by_lesson"] = warm
