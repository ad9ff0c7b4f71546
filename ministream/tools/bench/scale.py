"""The seed's scale, measured: millions of concurrent game sessions kept alive by processing-time heartbeats.

``ministream bench --scale`` runs the ``game-heartbeats`` lesson's processor (``lessons/game_heartbeats.py``) on
a generated workload and prints what it cost:

- *the workload* (:func:`scale_batch`): ``sessions`` game sessions, four per device, on a processing-time clock
  that moves one second per micro-batch. In the first ``OPEN_SECONDS`` batches every session starts (a
  thirtieth of them per batch); then for ``KEEP_ALIVE_SECONDS`` every session plays once every 30 s, so none
  times out and each sends a heartbeat every 30 s. One session in ``END_EVERY`` ends instead of playing, and
  one in ``SILENT_EVERY`` never plays, so that both ways of closing are exercised (and checked);
- *throughput*: events per second and timer firings per second, over the whole run (wall clock);
- *latency*: the wall-clock time of each micro-batch, p50 and p99 (source generation included, as Spark's
  batch durations include reading the source);
- *memory*: the process's resident set after the sessions are open, less the one before the run, per session,
  and the peak resident set (``ru_maxrss``);
- *checkpoints*: a full checkpoint of the state after the last batch that opens sessions, a delta (only the
  devices changed since) after the batch after it, both written to a directory as a real run writes them, their
  time and bytes; and *recovery*: the time to load the full checkpoint and the delta into a new graph.

Each size runs in a process of its own so that its peak resident set is its own; ``--sessions`` takes several
sizes (250k, 1M, 2M and 4M by default), and the command reports how the CPU time per session grows from the
smallest to the largest (1: the total cost grows linearly). Figures are
reported, never asserted: the tests check only that the workload gives the heartbeats and closures it should
(:func:`expected_counts`).
"""

from __future__ import annotations

import datetime
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from tqdm import tqdm

from ministream.checkpoints.coordinator import Checkpoint, load_latest
from ministream.checkpoints.incremental import snapshot_operator
from ministream.checkpoints.restore import restore_graph
from ministream.checkpoints.storage import DirectoryStorage
from ministream.core.plan import Dataflow
from ministream.core.sources import ScriptedSource
from ministream.lessons.game_heartbeats import LESSON, GameHeartbeats
from ministream.lessons.lesson import BASE_TIME
from ministream.models.microbatch import run_microbatch
from ministream.operators.planner import physical_graph
from ministream.state.backends import state_backends
from ministream.tools.plots import plot_figure_class, save_png

PER_DEVICE = 4
"""Sessions per device (the seed's map state: sessionId -> session state, per deviceId)."""

HEARTBEAT = 30_000
TIMEOUT = 45_000
STEP = 1_000
"""Processing time between two micro-batches (ms)."""

OPEN_SECONDS = 30
KEEP_ALIVE_SECONDS = 30
END_EVERY = 1_000
SILENT_EVERY = 1_000
SWEEP = (250_000, 1_000_000, 2_000_000)


class GeneratedSource(ScriptedSource):
    """A scripted source whose batches are made when they are read, so that a run of millions of events never
    holds more than one batch of them.

    >>> source = GeneratedSource(2, lambda k: [{"k": k}])
    >>> len(source), source.read(1)
    (2, [{'k': 1}])
    """

    def __init__(self, batches: int, make_batch):
        super().__init__([[] for _ in range(batches)])
        self.make_batch = make_batch
        self.rows_read = 0  # how many rows the run has read

    def batch(self, batch_id: int) -> list[dict]:
        return self.make_batch(batch_id) if batch_id < len(self.batches) else []

    def read(self, batch_id: int) -> list[dict]:
        rows = self.batch(batch_id)
        self.rows_read += len(rows)
        return rows


class CountingSink:
    """A sink that counts the rows of each kind and keeps none (millions of heartbeats would fill the memory).

    >>> sink = CountingSink(); sink.write(0, None, [{"kind": "heartbeat"}, {"kind": "ended"}]); sink.kinds
    {'heartbeat': 1, 'ended': 1}
    """

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        self.kinds: dict[str, int] = {}  # {kind: rows}
        self.batches: list = []

    def write(self, batch_id, watermark, rows, processing_time=None) -> None:
        for row in rows:
            self.kinds[row["kind"]] = self.kinds.get(row["kind"], 0) + 1


class CountedHeartbeats(GameHeartbeats):
    """The lesson's processor, counting its timer firings (in the class: the engine runs a fresh copy of the
    processor in every batch)."""

    fired = 0

    def handle_expired_timer(self, device, timer_values, expired_timer_info):
        type(self).fired += 1
        return super().handle_expired_timer(device, timer_values, expired_timer_info)


def batches_of(open_seconds: int = OPEN_SECONDS, keep_alive_seconds: int = KEEP_ALIVE_SECONDS) -> int:
    """How many micro-batches the workload has: one per second of processing time."""
    return open_seconds + keep_alive_seconds


def scale_batch(
    batch_id: int,
    sessions: int,
    open_seconds: int = OPEN_SECONDS,
    end_every: int = END_EVERY,
    silent_every: int = SILENT_EVERY,
) -> list[dict]:
    """The events of micro-batch ``batch_id``: session ``i`` (of device ``i // 4``) starts in batch
    ``i % open_seconds``, then plays every ``open_seconds`` batches; one in ``end_every`` ends at its first turn
    instead, one in ``silent_every`` never plays.

    >>> [(row["session"], row["kind"]) for row in scale_batch(0, 6, open_seconds=3)]
    [('s0', 'start'), ('s3', 'start')]
    >>> [(row["session"], row["kind"]) for row in scale_batch(3, 6, open_seconds=3, end_every=3, silent_every=4)]
    [('s0', 'end'), ('s3', 'end')]
    """
    turn = batch_id % open_seconds
    opening = batch_id < open_seconds
    ts = BASE_TIME + batch_id * STEP
    rows = []
    for i in range(turn, sessions, open_seconds):
        if opening:
            kind = "start"
        elif i % end_every == 0:
            if batch_id >= 2 * open_seconds:  # ended at its first turn already
                continue
            kind = "end"
        elif i % silent_every == 1:
            continue
        else:
            kind = "play"
        rows.append({"ts": ts, "device": f"d{i // PER_DEVICE}", "session": f"s{i}", "kind": kind, "value": 1.0})
    return rows


def expected_counts(sessions: int, open_seconds: int, keep_alive_seconds: int, end_every: int, silent_every: int):
    """The rows the workload must give, worked out from its definition: ``{kind: rows}``.

    A session started at second ``t`` has heartbeats at ``t + 30 k`` while open; an ending session ends at
    ``t + open_seconds`` (with the heartbeat that falls there, when the heartbeat is due then, after it: the end
    comes first); a silent one times out at ``t + TIMEOUT``.

    >>> expected_counts(4, 3, 3, 1_000, 1_000)   # s0 ends, s1 stays silent, s2 and s3 play once
    {'heartbeat': 0, 'ended': 1, 'timed_out': 0, 'play': 2}
    """
    last = open_seconds + keep_alive_seconds - 1  # the last batch's second
    counts = {"heartbeat": 0, "ended": 0, "timed_out": 0, "play": 0}
    for i in range(sessions):
        start = i % open_seconds
        if i % end_every == 0:
            end = start + open_seconds
            if end <= last:
                counts["ended"] += 1
                counts["heartbeat"] += len(range(start + 30, end, 30))
                continue
            closes = None
        elif i % silent_every == 1:
            closes = start + TIMEOUT // 1000
            if closes <= last:
                counts["timed_out"] += 1
                counts["heartbeat"] += len(range(start + 30, closes, 30))
                continue
        counts["heartbeat"] += len(range(start + 30, last + 1, 30))
        if i % silent_every != 1:
            counts["play"] += len(range(start + open_seconds, last + 1, open_seconds))
    return counts


def heartbeat_flow(sessions: int, open_seconds: int, keep_alive_seconds: int, end_every: int, silent_every: int):
    """The workload as a dataflow: generated game events, keyed by device, the lesson's processor, a counting
    sink."""
    flow = Dataflow("scale-heartbeats")
    source = GeneratedSource(
        batches_of(open_seconds, keep_alive_seconds),
        lambda k: scale_batch(k, sessions, open_seconds, end_every, silent_every),
    )
    flow.source("events", source).key_by("device").process(
        "sessions", CountedHeartbeats(HEARTBEAT, TIMEOUT), time_mode="processing_time", output_mode="update"
    ).sink("output", CountingSink())
    return flow


def rss_bytes() -> int:
    """The process's resident set now, in bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def percentile(values: list[float], share: float) -> float:
    """The ``share`` percentile of ``values`` (nearest rank).

    >>> percentile([1, 2, 3, 4], 0.5), percentile(list(range(100)), 0.99)
    (2, 98)
    """
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered)) - 1))]


def _folder_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def _checkpoint(graph, storage, checkpoint_id: int, base: int | None = None) -> float:
    """Seconds to snapshot the keyed step (a delta on ``base`` when given) and store the checkpoint."""
    started = time.perf_counter()
    operators = {
        "sessions": {s.index: snapshot_operator(s.operator, delta=base is not None) for s in graph.by_step["sessions"]}
    }
    checkpoint = Checkpoint(checkpoint_id, "microbatch", "aligned", graph.parallelism, operators=operators, base=base)
    storage.save_files(checkpoint_id, checkpoint.files(), base=base)
    return time.perf_counter() - started


def measure(
    sessions: int,
    backend: str = "memory",
    *,
    open_seconds: int = OPEN_SECONDS,
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS,
    end_every: int = END_EVERY,
    silent_every: int = SILENT_EVERY,
    checkpoints: bool = True,
    progress: bool = False,
) -> dict:
    """Run the workload once with ``sessions`` sessions on ``backend`` and return its figures."""
    CountedHeartbeats.fired = 0
    flow = heartbeat_flow(sessions, open_seconds, keep_alive_seconds, end_every, silent_every)
    count = batches_of(open_seconds, keep_alive_seconds)
    timestamps = [BASE_TIME + k * STEP for k in range(count)]
    backends = state_backends(backend)
    rss_before = rss_bytes()
    figures: dict = {"sessions": sessions, "backend": backend, "batches": count}
    durations: list[float] = []  # CPU seconds of each micro-batch
    walls: list[float] = []  # wall-clock seconds of each micro-batch
    folder = tempfile.TemporaryDirectory(prefix="ministream-scale-")
    storage = DirectoryStorage(Path(folder.name) / "checkpoints")
    bar = tqdm(
        total=count, desc=f"{sessions:,} sessions ({backend})", unit="batch", file=sys.stderr, disable=not progress
    )
    clock = [time.process_time(), time.perf_counter()]

    def after_batch(batch, graph):
        durations.append(time.process_time() - clock[0])
        walls.append(time.perf_counter() - clock[1])
        bar.update(1)
        if batch.batch_id == open_seconds - 1:
            figures["rss_open_bytes"] = rss_bytes()
            figures["open_sessions"] = sum(op.ctx.state.size("sessions") for op in graph.operators("sessions"))
            if checkpoints:
                figures["full_checkpoint_s"] = round(_checkpoint(graph, storage, 0), 3)
                figures["full_checkpoint_bytes"] = (storage.root / "chk-0").stat().st_size
        if checkpoints and batch.batch_id == open_seconds:
            figures["incremental_checkpoint_s"] = round(_checkpoint(graph, storage, 1, base=0), 3)
            figures["incremental_checkpoint_bytes"] = (storage.root / "chk-1").stat().st_size
        clock[:] = [time.process_time(), time.perf_counter()]  # checkpoints are timed apart, not in the batch

    run = run_microbatch(
        flow, output_mode="update", batch_timestamps=timestamps, state_backend=backends, after_batch=after_batch
    )
    bar.close()
    total = sum(durations)
    sink = flow.sinks[0].sink
    events = flow.sources[0].source.rows_read
    figures["events"] = events
    figures["timer_firings"] = CountedHeartbeats.fired
    figures["rows"] = dict(sink.kinds)
    figures["run_cpu_s"] = round(total, 2)
    figures["run_wall_s"] = round(sum(walls), 2)
    figures["events_per_s"] = round(events / total)
    figures["timer_firings_per_s"] = round(CountedHeartbeats.fired / total)
    figures["events_per_wall_s"] = round(events / sum(walls))
    figures["cpu_us_per_session"] = round(total / sessions * 1e6, 1)
    figures["batch_p50_s"] = round(percentile(durations, 0.5), 3)
    figures["batch_p99_s"] = round(percentile(durations, 0.99), 3)
    figures["batch_max_s"] = round(max(durations), 3)
    figures["batch_wall_p50_s"] = round(percentile(walls, 0.5), 3)
    figures["batch_wall_p99_s"] = round(percentile(walls, 0.99), 3)
    figures["memory_per_session_bytes"] = round((figures["rss_open_bytes"] - rss_before) / sessions)
    figures["peak_rss_bytes"] = peak_rss_bytes()
    if checkpoints:
        built, parallelism = run.graph.flow, run.graph.parallelism
        del run  # the run's state goes before the new graph is filled, as after a crash
        gc.collect()
        started = time.perf_counter()
        fresh = physical_graph(built, parallelism, output_mode="update", state_backend=state_backends(backend))
        restore_graph(fresh, load_latest(storage))
        figures["recovery_s"] = round(time.perf_counter() - started, 3)
        figures["restored_devices"] = sum(op.ctx.state.size("sessions") for op in fresh.operators("sessions"))
        figures["peak_rss_bytes_with_recovery"] = peak_rss_bytes()
    folder.cleanup()
    backends.close()
    return figures


def _descendants_peak_rss() -> int:
    """The peak resident sets (``VmHWM``) of every process this one started and that still runs, summed: the
    JVM of a local Spark and its Python workers."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    total, todo = 0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _descendants_cpu_s() -> float:
    """The CPU time (user and system, their own and their waited-for children's) of every process this one
    started and that still runs, summed, in seconds: the JVM of a local Spark and its Python workers (a worker
    that ended counts in the daemon that forked it)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            stats[int(entry.name)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, todo = 0, list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        total += sum(int(value) for value in stats[pid][11:15])  # utime, stime, cutime, cstime
    return total / tick


SPARK_SCALE_CONF = {"spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true"}
"""Settings of the Spark run on top of the lesson's: each batch's commit writes a changelog of its changes
instead of a whole RocksDB checkpoint (0.1 s a commit here instead of 0.7 to 2.6 s at 2,000 sessions); Spark's
documentation recommends it for large state. The rows are the same."""


def measure_spark(
    sessions: int,
    *,
    open_seconds: int = OPEN_SECONDS,
    keep_alive_seconds: int = KEEP_ALIVE_SECONDS,
    end_every: int = END_EVERY,
    silent_every: int = SILENT_EVERY,
    slower_clock: int = 1,
) -> dict:
    """The same workload through the lesson's Spark twin (``transformWithState`` in ``ProcessingTime`` mode, a
    local master): its batches, the same events, on Spark's own clock (the wall clock: each batch's timestamp is
    when it starts, so its heartbeats fall where that clock puts them). Then a restart on the same checkpoint
    with one more (empty) batch: its time is what recovery costs (Spark loads the state when the batch needs
    it).

    ``slower_clock`` multiplies the heartbeat and the timeout: Spark's batches take seconds, not one, so with the
    workload's 30 s and 45 s a session times out between two of its plays (30 batches apart); with them 20 times
    longer, the sessions stay open as in ministream's run, and each sends about one heartbeat."""
    from ministream.spark import session_conf, spark_session
    from ministream.spark.source import write_script_files

    spark = spark_session()
    count = batches_of(open_seconds, keep_alive_seconds)
    script = [scale_batch(k, sessions, open_seconds, end_every, silent_every) for k in range(count)]
    params = {"heartbeat": HEARTBEAT * slower_clock, "timeout": TIMEOUT * slower_clock}
    kinds: dict[str, int] = {}

    def sink(frame, batch_id):
        for row in frame.groupBy("kind").count().collect():
            kinds[row["kind"]] = kinds.get(row["kind"], 0) + row["count"]

    conf = {
        **LESSON.spark_conf,
        **SPARK_SCALE_CONF,
        "spark.sql.streaming.numRecentProgressUpdates": str(count + 10),
    }
    figures: dict = {"sessions": sessions, "backend": "spark (RocksDB state store)", "batches": count, **params}
    # Spark's state store maintenance may still write into the checkpoint after the query stopped: the folder
    # is then removed as far as it can be.
    scratch = tempfile.TemporaryDirectory(prefix="ministream-scale-spark-", ignore_cleanup_errors=True)
    with scratch as folder, session_conf(spark, conf):
        checkpoint, files = str(Path(folder) / "checkpoint"), Path(folder) / "script"
        # The events are read by Spark's own Parquet file source, one file per batch, in the JVM (as
        # ``scripted_stream`` does on a local master; its Python source would pickle the whole script into every
        # batch's task). The restart reads the same folder, with one more (empty) file.
        files.mkdir()
        stream = spark.readStream.schema(LESSON.spark_schema()).option("maxFilesPerTrigger", 1).parquet(str(files))
        write_script_files(stream.schema, script, str(files))
        del script  # the events are in the files now

        def start():
            frame = LESSON.twin({"events": stream}, params)
            writer = frame.writeStream.foreachBatch(sink).outputMode("update")
            return writer.option("checkpointLocation", checkpoint).start()

        bar = tqdm(total=1, desc=f"spark, {sessions:,} sessions", unit="run", file=sys.stderr)
        started, cpu = time.perf_counter(), _descendants_cpu_s()
        query = start()
        query.processAllAvailable()
        figures["run_wall_s"] = round(time.perf_counter() - started, 2)
        figures["run_cpu_s_jvm_and_workers"] = round(_descendants_cpu_s() - cpu, 2)
        figures["cpu_us_per_session"] = round(figures["run_cpu_s_jvm_and_workers"] / sessions * 1e6, 1)
        progress = [p for p in query.recentProgress if p["numInputRows"] > 0 or p["batchId"] < count]
        query.stop()
        bar.update(1)
        bar.close()
        figures["peak_rss_bytes_jvm_and_workers"] = _descendants_peak_rss()
        durations = [p["durationMs"]["triggerExecution"] / 1000 for p in progress]
        events = sum(p["numInputRows"] for p in progress)
        state = progress[open_seconds - 1]["stateOperators"][0]
        last = progress[-1]["stateOperators"][0]
        figures["events"] = events
        figures["rows"] = dict(kinds)
        metrics = last.get("customMetrics", {})
        timers = sum(p["stateOperators"][0].get("customMetrics", {}).get("numExpiredTimers", 0) for p in progress)
        # numExpiredTimers read 0 in every batch of a ProcessingTime query here (PySpark 4.3), though timers
        # fired: the firings are then not known, only the rows they emitted.
        figures["timer_firings"] = timers or None
        figures["events_per_s"] = round(events / figures["run_cpu_s_jvm_and_workers"])
        figures["events_per_wall_s"] = round(events / sum(durations))
        # the rows that timers emit (a firing emits one per session due, or none): what is known of the firings
        figures["timer_rows"] = kinds.get("heartbeat", 0) + kinds.get("timed_out", 0)
        figures["timer_firings_per_wall_s"] = round(timers / sum(durations)) if timers else None
        figures["batch_wall_p50_s"] = round(percentile(durations, 0.5), 3)
        figures["batch_wall_p99_s"] = round(percentile(durations, 0.99), 3)
        figures["batch_wall_max_s"] = round(max(durations), 3)
        figures["first_batch_wall_s"] = round(durations[0], 3)
        for name, values in (  # where a batch's time goes, median over the batches
            ("query_planning", [p["durationMs"].get("queryPlanning", 0) for p in progress]),
            ("state_updates", [p["stateOperators"][0].get("allUpdatesTimeMs", 0) for p in progress]),
            ("state_commit", [p["stateOperators"][0].get("commitTimeMs", 0) for p in progress]),
        ):
            figures[f"{name}_p50_ms"] = percentile(values, 0.5)
        figures["state_rows_after_open"] = state["numRowsTotal"]
        figures["state_memory_bytes_after_open"] = state["memoryUsedBytes"]
        figures["memory_per_session_bytes"] = round(state["memoryUsedBytes"] / sessions)
        figures["checkpoint_bytes"] = _folder_bytes(Path(checkpoint))
        figures["commit_ms_last_batch"] = last.get("commitTimeMs")
        figures["custom_metrics_last_batch"] = metrics
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as extra:
            write_script_files(stream.schema, [[]], extra)
            last = files / f"batch-{count:06d}.parquet"
            os.replace(Path(extra) / "batch-000000.parquet", last)
            os.utime(last)  # now: after every other file, so the file source reads it last
        query = start()
        query.processAllAvailable()
        figures["recovery_s"] = round(time.perf_counter() - started, 2)
        query.stop()
    return figures


# -- the command -------------------------------------------------------------------------------------------------

RESULTS = Path("tutorials/scale-figures.json")
"""Where the command keeps every run's figures, by engine and size, for the page and the plot."""

PLOT = Path("diagrams/plots/scale-cost.png")
SECTION = ("<!-- scale -->", "<!-- /scale -->")
"""The markers of the section of ``tutorials/benchmarks.md`` that this command writes (the rest is ``bench``'s)."""


def _one_run_in_a_new_process(sessions: int, backend: str, checkpoints: bool = True) -> dict:
    """Run one size in a process of its own, so that its peak resident set is its own; its bar shows here."""
    command = [sys.executable, "-m", "ministream.tools.cli", "bench", "--scale", "--one", str(sessions), backend]
    command += [] if checkpoints else ["--no-checkpoints"]
    started = _when_and_load()
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return {**json.loads(done.stdout), "measured": {**started, "load_after": _when_and_load()["load_before"]}}


def _when_and_load() -> dict:
    """When a run starts (UTC, to the minute) and the machine's 1-minute load average: a column of the table
    measured on a busy machine says so."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {"at": now, "load_before": round(os.getloadavg()[0], 1)}


def _label(figures: dict) -> str:
    """``memory``, ``rocksdb``, ``spark``, or ``spark, clock x20`` for a Spark run with a slower clock.

    >>> _label({"backend": "spark (RocksDB state store)", "heartbeat": 600_000}), _label({"backend": "memory"})
    ('spark, clock x20', 'memory')
    """
    if not figures["backend"].startswith("spark"):
        return figures["backend"]
    slower = figures.get("heartbeat", HEARTBEAT) // HEARTBEAT
    return "spark" if slower == 1 else f"spark, clock x{slower}"


def load_results(path: Path = RESULTS) -> dict:
    """``{"<engine> <sessions>": figures}`` of every run so far (empty when there is none)."""
    return json.loads(path.read_text()) if path.exists() else {}


def cost_growth(results: dict, engine: str = "memory") -> float | None:
    """CPU time per session at the largest size over that at the smallest: 1 when the cost per session does not
    grow with the number of sessions (linear total cost), more when it does.

    >>> cost_growth({"memory 10": {"backend": "memory", "sessions": 10, "cpu_us_per_session": 2.0},
    ...              "memory 40": {"backend": "memory", "sessions": 40, "cpu_us_per_session": 2.2}})
    1.1
    """
    runs = sorted((f["sessions"], f["cpu_us_per_session"]) for f in results.values() if _label(f) == engine)
    if len(runs) < 2:
        return None
    return round(runs[-1][1] / runs[0][1], 2)


def scale_plot(results: dict):
    """CPU time and memory per session against the number of sessions, per engine (a flat line: the cost grows
    linearly with the sessions); with Spark runs, a third panel for the Spark twin's CPU time per session (its
    JVM's and Python workers'), on a scale of its own (falling: its fixed cost per batch is shared by more
    sessions). Returns the figure.

    >>> figure = scale_plot({"memory 10": {"backend": "memory", "sessions": 10, "cpu_us_per_session": 2.0,
    ...                                    "memory_per_session_bytes": 400}})
    >>> [axes.get_ylabel() for axes in figure.axes]
    ['CPU µs per session', 'bytes per session']
    """
    spark = sorted((f["sessions"], f) for f in results.values() if _label(f) == "spark" and "cpu_us_per_session" in f)
    figure = plot_figure_class()(figsize=(12 if spark else 8, 3.2), layout="constrained")
    panels = figure.subplots(1, 3 if spark else 2)
    cpu, memory = panels[0], panels[1]
    for engine in ("memory", "rocksdb"):
        runs = sorted((f["sessions"], f) for f in results.values() if _label(f) == engine)
        if not runs:
            continue
        sizes = [size for size, _ in runs]
        cpu.plot(sizes, [f["cpu_us_per_session"] for _, f in runs], marker="o", label=f"ministream, {engine}")
        memory.plot(sizes, [f["memory_per_session_bytes"] for _, f in runs], marker="o", label=f"ministream, {engine}")
    sizes = sorted({f["sessions"] for f in results.values() if not _label(f).startswith("spark")})
    for axes, label in ((cpu, "CPU µs per session"), (memory, "bytes per session")):
        axes.set_xscale("log")
        axes.set_xticks(sizes, [f"{size / 1e6:g}M" for size in sizes])
        axes.minorticks_off()
        axes.set_ylim(bottom=0)
        axes.set_xlabel("concurrent sessions")
        axes.set_ylabel(label)
        axes.legend(fontsize=8)
    cpu.set_title("whole run (open + 30 s of heartbeats)", fontsize=9)
    memory.set_title("resident set after the sessions opened", fontsize=9)
    if spark:
        twin = panels[2]
        sizes = sorted({f["sessions"] for f in results.values() if _label(f).startswith("spark")})
        labels = sorted({_label(f) for f in results.values() if _label(f).startswith("spark")})
        for style, label in zip(("o-", "s--", "^:", "d-."), labels):
            runs = sorted(
                (f for f in results.values() if _label(f) == label and "cpu_us_per_session" in f),
                key=lambda f: f["sessions"],
            )
            name = "Spark twin, wall clock" if label == "spark" else f"Spark twin, {label[7:]}"
            twin.plot([f["sessions"] for f in runs], [f["cpu_us_per_session"] for f in runs], style, label=name)
        twin.set_xscale("log")
        twin.set_ylim(bottom=0)
        twin.set_xticks(sizes, [f"{size / 1e3:g}k" for size in sizes])
        twin.minorticks_off()
        twin.set_xlabel("concurrent sessions")
        twin.set_ylabel("CPU µs per session")
        twin.set_title("Spark twin, JVM + Python workers", fontsize=9)
        twin.legend(fontsize=8)
    return figure


def _mib(value) -> str:
    return f"{value / 2**20:,.0f} MiB" if isinstance(value, (int, float)) else "-"


def scale_table(results: dict) -> str:
    """The figures of every run as a Markdown table, one column per engine and size."""
    runs = sorted(results.values(), key=lambda f: (_label(f).startswith("spark"), _label(f), f["sessions"]))
    rows = [
        ("sessions", lambda f: f"{f['sessions']:,}"),
        (
            "engine, state",
            lambda f: "Spark, RocksDB" if _label(f).startswith("spark") else f"ministream, {f['backend']}",
        ),
        (
            "measured (UTC; load average before / after)",
            lambda f: (
                f"{f['measured']['at']}; {f['measured']['load_before']} / {f['measured']['load_after']}"
                if "measured" in f
                else "before 2026-11-27 12:00 (earlier code; load 9 to 20)"
            ),
        ),
        ("events", lambda f: f"{f['events']:,}"),
        (
            "timer firings",
            lambda f: (
                f"{f['timer_firings']:,}"
                if f.get("timer_firings")
                else f"not reported ({f['timer_rows']:,} rows from timers)"
                if "timer_rows" in f
                else "not reported"
            ),
        ),
        (
            "rows (heartbeat / ended / timed out)",
            lambda f: " / ".join(f"{f['rows'].get(kind, 0):,}" for kind in ("heartbeat", "ended", "timed_out")),
        ),
        ("events/s (CPU)", lambda f: f"{f['events_per_s']:,}" if "events_per_s" in f else "-"),
        ("timer firings/s (CPU)", lambda f: f"{f['timer_firings_per_s']:,}" if "timer_firings_per_s" in f else "-"),
        ("events/s (wall)", lambda f: f"{f['events_per_wall_s']:,}"),
        ("CPU µs per session (whole run)", lambda f: f.get("cpu_us_per_session", "-")),
        (
            "micro-batch p50 / p99, CPU s",
            lambda f: f"{f['batch_p50_s']} / {f['batch_p99_s']}" if "batch_p50_s" in f else "-",
        ),
        ("micro-batch p50 / p99, wall s", lambda f: f"{f['batch_wall_p50_s']} / {f['batch_wall_p99_s']}"),
        (
            "state after the opening batches",
            lambda f: (
                f"{f['state_rows_after_open']:,} rows (map entries and timers)"
                if "state_rows_after_open" in f
                else f"{f['open_sessions']:,} devices"
                if "open_sessions" in f
                else "-"
            ),
        ),
        ("memory per session (Spark: its state store's)", lambda f: f"{f['memory_per_session_bytes']:,} B"),
        ("peak RSS (run)", lambda f: _mib(f.get("peak_rss_bytes", f.get("peak_rss_bytes_jvm_and_workers")))),
        ("peak RSS (with recovery)", lambda f: _mib(f.get("peak_rss_bytes_with_recovery"))),
        (
            "full checkpoint: s, size",
            lambda f: (
                f"{f['full_checkpoint_s']} s, {_mib(f['full_checkpoint_bytes'])}"
                if "full_checkpoint_s" in f
                else _mib(f.get("checkpoint_bytes"))
            ),
        ),
        (
            "incremental checkpoint: s, size",
            lambda f: (
                f"{f['incremental_checkpoint_s']} s, {_mib(f['incremental_checkpoint_bytes'])}"
                if "incremental_checkpoint_s" in f
                else "-"
            ),
        ),
        ("recovery, s", lambda f: f.get("recovery_s", "-")),
    ]
    lines = [
        "| | " + " | ".join(f"{_label(f)}, {f['sessions']:,}" for f in runs) + " |",
        "|---" * (len(runs) + 1) + "|",
    ]
    for name, show in rows[2:]:
        lines.append(f"| {name} | " + " | ".join(str(show(f)) for f in runs) + " |")
    return "\n".join(lines)


def write_section(page: Path, text: str) -> None:
    """Put ``text`` between the scale markers of ``page`` (at its end when it has none)."""
    start, end = SECTION
    old = page.read_text() if page.exists() else ""
    block = f"{start}\n{text.rstrip()}\n{end}\n"
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end) + 1 :]
    else:
        new = old.rstrip() + "\n\n" + block
    page.write_text(new)


SCALE_TEXT = """\
## Four million sessions (`ministream bench --scale`)

The seed's gaming case: 4,000,000 concurrent game sessions, four per device, each sending a heartbeat every 30
s of processing time from a timer (`lessons/game_heartbeats.py`, its processor unchanged; `tools/bench/scale.py`,
the workload). Batches are one second of processing time apart: in the first 30 every session starts (a
thirtieth per batch); in the next 30 each plays once and sends one heartbeat, one in a thousand ends instead,
one in a thousand stays silent and times out 45 s after its start. A steady batch of the 4M run brings 133,000
events and fires 133,000 timers. Each size runs in a process of its own.

{table}

![CPU time and memory per session against the number of sessions, for each state backend ({alt}); and the Spark twin's CPU time per session at its sizes](../diagrams/plots/scale-cost.png)

**Growth.** CPU time per session, largest size over smallest (in memory): {growth}. {verdict}

**How to read the figures.**

- *CPU and wall.* The machine has 2 cores and was shared with about seven other sessions (load average 10 to
  17 during these runs): wall-clock times were 4 to 6 times the process's CPU time. CPU time (`time.process_time`,
  all the threads of the process, RocksDB's included) is what the engine costs; the wall-clock figures are what
  this machine gave, that day.
- *Micro-batch p50/p99 against the seed's ~432 ms p99 of Spark's Real-Time Mode.* They measure different
  things. Real-Time Mode runs long batches whose duration is a checkpoint interval and moves each record through
  as it arrives: 432 ms is a record's end-to-end latency, Kafka to Kafka, on a cluster. Here a micro-batch holds a
  whole second of events (133,000 at 4M sessions) and all the timers due in that second, on one core of a
  shared machine, in pure Python, at parallelism 1; a record waits for its batch to start, then for the batch
  to end. A batch's CPU time under one second means one core keeps up with 4M sessions in real time; its p99 is
  then the latency a record sees on top of the wait for the next trigger. ministream has no continuous mode for
  processing-time timers that would compare with Real-Time Mode directly.
- *Memory per session*: the resident set after the 30 opening batches less the one before the run, over the
  sessions: a device's map and its entry, the 5-tuple of figures, the session id, and the timers (a set entry
  in a bucket, a list per device). With RocksDB the map lives in the store (its memtables and block cache are
  in the resident set too), but the timers stay in the Python heap: ministream's `TimerService` is not in the
  state backend, where Spark keeps `transformWithState`'s timers in the state store.
- *RocksDB at 4M* ran with its checkpoints and recovery, as every other size; its memory per session is taken
  after the opening batches, when the store held every session; its resident set then rose to its peak once the
  keep-alive batches read and wrote the store (RocksDB's memtables and block cache, and each batch's working
  set).
- *Checkpoints* (after the last opening batch, then a delta after the next batch) are the engine's own files,
  written to a local directory. A delta writes only the devices changed since: the map state of the devices
  that played (a thirtieth of them) and the timers of the devices whose timers were registered, fired or
  deleted (`time/timers.py` marks them, as the keyed state marks its keys): about 13% of a full checkpoint.
- *Recovery*: a new graph loads the full checkpoint and applies the delta (the run's own graph is freed first,
  as after a crash); peak RSS with recovery is the process's peak over the whole run.
- *Spark*: the same events through the lesson's twin (`transformWithState`, `ProcessingTime`, RocksDB state
  store with changelog checkpointing, `local[2]`, two shuffle partitions, the Python state server), read by
  Spark's Parquet file source, one file per batch. Figures from its progress reports
  (`durationMs.triggerExecution` per batch, `memoryUsedBytes` of the state operator after the opening batches);
  CPU time and peak RSS are the JVM's and its Python workers'; recovery is a restart on the same checkpoint
  with one more (empty) batch. Spark does not report its timer firings in this mode (`numExpiredTimers` reads
  0): the table gives the rows its timers emitted.
- *Spark's clock.* Its batch timestamps are the wall clock. Its batches take 2 to 25 s here, not 1 s, so a
  session's plays (every 30 batches) come minutes apart on its clock, more than the 45 s timeout: most sessions
  time out between two plays and the next play opens them again (more `timed_out` rows than sessions). The
  events are the same as ministream's, the timer work is of the same kind (a heartbeat or a timeout per session
  due) but not the same count: compare the CPU per event, not per firing. It also means that at these sizes
  Spark's state never held every session at once (the table's state rows after the opening batches): the run
  with a slower clock below is the one where it did.
{spark}
"""


def spark_verdict(results: dict, budget_s: float = 20 * 60) -> str:
    """What the page says of the Spark twin's largest size and why it stops there: the CPU time an event costs
    it (from its two largest runs), and what the next size of the sweep would take at that rate.

    >>> runs = {f"spark {n}": {"backend": "spark", "sessions": n, "events": 2 * n, "run_cpu_s_jvm_and_workers": c,
    ...                        "run_wall_s": 2 * c, "batch_wall_p50_s": 1.0, "batch_wall_p99_s": 2.0,
    ...                        "peak_rss_bytes_jvm_and_workers": 2**30} for n, c in ((10, 20.0), (100, 200.0))}
    >>> text = spark_verdict(runs)
    >>> "45 s timeout: 100 sessions" in text, "about 1000.0 ms of CPU" in text
    (True, True)
    """
    runs = sorted(
        (f["sessions"], f) for f in results.values() if _label(f) == "spark" and "run_cpu_s_jvm_and_workers" in f
    )
    if len(runs) < 2:
        return ""
    (_, smaller), (size, largest) = runs[-2], runs[-1]
    cpu, wall = largest["run_cpu_s_jvm_and_workers"], largest["run_wall_s"]
    per_event = (cpu - smaller["run_cpu_s_jvm_and_workers"]) / (largest["events"] - smaller["events"])
    following = next((n for n in (*SWEEP, 4_000_000) if n > size), size * 4)
    cpu_next = cpu + per_event * 2 * (following - size)  # about two events per session
    wall_next = cpu_next * wall / cpu
    engine = [f for f in results.values() if _label(f) == "memory"]
    engine_us = min(f["run_cpu_s"] / f["events"] * 1e6 for f in engine) if engine else float("nan")
    text = (
        f"- **The Spark twin's largest size here, with the workload's 30 s heartbeat and 45 s timeout: {size:,} "
        f"sessions** ({wall / 60:.0f} min of wall time for the 60 "
        f"batches, {cpu:.0f} s of CPU, batch p50/p99 {largest['batch_wall_p50_s']} / "
        f"{largest['batch_wall_p99_s']} s). It stops on time, not on memory: its peak resident set stayed about "
        f"{_mib(largest['peak_rss_bytes_jvm_and_workers'])} (the state is in RocksDB, outside the JVM's heap), "
        f"but each additional event (with the timer work that comes with it) cost it about {per_event * 1e3:.1f} ms of CPU (from {smaller['sessions']:,} to "
        f"{size:,} sessions), where ministream spends {engine_us:.0f} µs (in memory, timers included). The batches' breakdown points at the "
        "Python `transformWithState` stage (`allUpdatesTimeMs`, the largest part of a batch): each device's call "
        "goes to the JVM's state server several times (read the map, write the session, list, register and "
        "delete timers), each a message on a socket. At that rate "
        f"{following:,} sessions would take about {cpu_next / 60:.0f} min of CPU and {wall_next / 60:.0f} min of "
        f"wall time on this shared machine: more than the {budget_s / 60:.0f} min a run may take here.\n"
        "- *What a Spark batch costs besides.* At 2,000 sessions (67 events a batch) a batch took 2 to 5 s: query "
        "planning 0.3 to 1 s, the Python `transformWithState` stage 1.5 to 3 s (`allUpdatesTimeMs`), the state "
        "store's commit. The Python workers start once, not per batch: PySpark's daemon forks two, which every "
        "batch reuses (at 100,000 sessions, after 7 min, the same two processes, each at about 15% of a core over "
        "its life, the JVM at 30%: the state server's side of each call costs as much as the Python side). "
        "The twin measured before read its events through ministream's Python source (the whole "
        "script pickled into every batch's task: a first batch of 59 s against 15 s from Parquet files) and "
        "committed a whole RocksDB checkpoint, synced to disk, in every batch (0.6 to 2.6 s; 0.05 to 0.2 s with "
        "changelog checkpointing): 6.9 / 11.9 s p50/p99 per batch then, "
        f"{results.get('spark 2000', {}).get('batch_wall_p50_s')} / "
        f"{results.get('spark 2000', {}).get('batch_wall_p99_s')} s now."
    )
    measured = [f for f in results.values() if _label(f).startswith("spark") and "state_updates_p50_ms" in f]
    if measured:
        f = max(measured, key=lambda f: f["sessions"])
        text += (
            f" At {f['sessions']:,} sessions ({_label(f)}), a batch's median: query planning "
            f"{f['query_planning_p50_ms']:,} ms, the state updates of the `transformWithState` stage "
            f"{f['state_updates_p50_ms']:,} ms (summed over its two partitions, which run side by side), the "
            f"commit {f['state_commit_p50_ms']:,} ms: the stage (the Python calls and the JVM's state server "
            "answering them) is nearly the whole batch."
        )
    slower = [f for f in results.values() if _label(f).startswith("spark, clock")]
    if slower:
        held = max(slower, key=lambda f: f["state_rows_after_open"])
        text += (
            f"\n- **The most sessions Spark's state held at once here: {held['state_rows_after_open']:,}**, "
            f"in the run of {held['sessions']:,} sessions on a clock {held['heartbeat'] // HEARTBEAT} times slower "
            f"({held['run_wall_s'] / 60:.0f} min of wall time, peak RSS "
            f"{_mib(held['peak_rss_bytes_jvm_and_workers'])}): memory was never the limit, time was."
        )
    for f in sorted(results.values(), key=lambda f: f["sessions"]):  # on a slower clock: do the sessions stay open?
        label = _label(f)
        if label.startswith("spark, clock"):
            budget = "within" if f["run_wall_s"] <= budget_s else "over"
            text += (
                f"\n- *{label}* (`--spark-slower-clock`: heartbeat {f['heartbeat'] // 1000} s, timeout "
                f"{f['timeout'] // 1000} s, so that Spark's slow batches do not time the sessions out between two "
                f"plays), {f['sessions']:,} sessions: {f['run_wall_s'] / 60:.0f} min of wall time ({budget} the "
                f"{budget_s / 60:.0f} min a run may take), {f['run_cpu_s_jvm_and_workers']:.0f} s of CPU "
                f"({f['events_per_s']:,} events/s, {f['cpu_us_per_session']:,} µs per session), batch p50/p99 {f['batch_wall_p50_s']} / "
                f"{f['batch_wall_p99_s']} s; its state held {f['state_rows_after_open']:,} rows after the opening "
                f"batches ({f['state_memory_bytes_after_open'] / 2**20:.0f} MiB, "
                f"{f['memory_per_session_bytes']:,} B per session); rows: "
                + ", ".join(f"{n:,} {kind}" for kind, n in sorted(f["rows"].items()))
                + (
                    " (the run was shorter than a heartbeat: no timer fired; it shows the state held, not the "
                    "timers' work)."
                    if not f["rows"].get("heartbeat")
                    else "."
                )
            )
    return "\n".join(textwrap.fill(item, 115, subsequent_indent="  ") for item in text.split("\n"))


def page_section(results: dict) -> str:
    """The scale section of ``tutorials/benchmarks.md``: the text, the table and the growth verdict."""
    growth = cost_growth(results)
    if growth is None:
        verdict = "(one size only: no verdict)"
    elif growth <= 1.5:
        verdict = (
            f"From the smallest size to the largest, the CPU time per session grew by {growth - 1:.0%}: the total "
            "cost grows about linearly with the sessions (a process of millions of small objects misses the "
            "processor's caches more often, and the machine's load changed from run to run)."
        )
    else:
        verdict = "the cost per session grows with the number of sessions: NOT linear."
    largest = max((f for f in results.values() if _label(f) == "memory"), key=lambda f: f["sessions"], default=None)
    if largest is not None:
        p50 = largest["batch_p50_s"]
        keeps_up = "keeps up" if p50 <= STEP / 1000 else f"keeps up with about {STEP / 1000 / p50:.0%} of it"
        verdict += (
            f" At {largest['sessions']:,} sessions a batch (one second of events and timers) takes {p50} s of CPU "
            f"at p50 and {largest['batch_p99_s']} s at p99 (in memory): one core {keeps_up}, in pure Python."
        )
    alt = ", ".join(
        f"CPU per session {'up' if g >= 1 else 'down'} {abs(g - 1):.0%} {where} from the smallest size to the largest"
        for engine, where in (("memory", "in memory"), ("rocksdb", "on RocksDB"))
        if (g := cost_growth(results, engine)) is not None
    )
    return SCALE_TEXT.format(
        table=scale_table(results), growth=growth, verdict=verdict, spark=spark_verdict(results), alt=alt
    )


def main(argv=None, out=None) -> int:
    """``ministream bench --scale [--sessions N ...] [--backend memory rocksdb] [--spark N] [--markdown FILE]``."""
    import argparse

    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="ministream bench --scale", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sessions", type=int, nargs="*", default=[*SWEEP, 4_000_000], help="sizes to run (none: only write the page)"
    )
    parser.add_argument("--backend", nargs="+", default=["memory", "rocksdb"], choices=["memory", "rocksdb"])
    parser.add_argument("--spark", type=int, metavar="N", help="also run the Spark twin with N sessions")
    parser.add_argument(
        "--spark-slower-clock",
        type=int,
        default=1,
        metavar="F",
        help="multiply the Spark run's heartbeat and timeout by F (its batches take seconds, not one)",
    )
    parser.add_argument("--results", default=str(RESULTS), help="the JSON file that keeps every run's figures")
    parser.add_argument("--markdown", metavar="FILE", help="write the scale section of this page, and the plot")
    parser.add_argument("--no-checkpoints", action="store_true", help="skip the checkpoints and the recovery")
    parser.add_argument("--one", nargs=2, metavar=("N", "BACKEND"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child of the sweep: one run, its figures as JSON on stdout
        figures = measure(int(args.one[0]), args.one[1], checkpoints=not args.no_checkpoints, progress=True)
        print(json.dumps(figures), file=out)
        return 0
    path = Path(args.results)
    results = load_results(path)
    for sessions in args.sessions:
        for backend in args.backend:
            figures = _one_run_in_a_new_process(sessions, backend, not args.no_checkpoints)
            results = load_results(path)  # read again: another run may have written it meanwhile
            results[f"{backend} {sessions}"] = figures
            path.write_text(json.dumps(results, indent=1) + "\n")
            print(f"{backend} {sessions:,} sessions: {json.dumps(figures)}", file=out)
    if args.spark:
        started = _when_and_load()
        figures = measure_spark(args.spark, slower_clock=args.spark_slower_clock)
        figures["measured"] = {**started, "load_after": _when_and_load()["load_before"]}
        results = load_results(path)
        results[f"spark {args.spark}" + (f" x{args.spark_slower_clock}" if args.spark_slower_clock > 1 else "")] = (
            figures
        )
        path.write_text(json.dumps(results, indent=1) + "\n")
        print(f"spark {args.spark:,} sessions: {json.dumps(figures)}", file=out)
    growth = cost_growth(results)
    print(f"CPU per session, largest over smallest size (memory): {growth}", file=out)
    if args.markdown:
        save_png(scale_plot(results), PLOT)
        write_section(Path(args.markdown), page_section(results))
    return 0
