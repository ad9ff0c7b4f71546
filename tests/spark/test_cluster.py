"""The twins on a real Spark standalone cluster: a master and a worker on 127.0.0.1, started and stopped by
ministream, run the same twins with the same results as the local session, and leave no process behind."""

import json
import re
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from ministream.lessons import all_lessons
from ministream.spark import spark_session, stop_session
from ministream.tools.cli import main
from ministream.tools.cluster import ClusterError, cluster_processes, cluster_status, start_cluster, stop_cluster

# Every test here needs PySpark (the session is imported above); those that start a cluster are marked too.
pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "tutorials" / "cluster.md"
FREE_PORTS = ["--port", "0", "--web-ui-port", "0", "--worker-web-ui-port", "0"]


def alive(pid: int) -> bool:
    """Whether a process with this pid runs (a zombie, dead but not reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _has_watermark(lesson) -> bool:
    return any(batch.watermark is not None for batch in lesson.run().output())


def cluster_cases() -> list:
    """The lessons to run on the cluster: the first one with a watermark (state that event time evicts) and
    the first one with two inputs; while a kind has no lesson yet, running-aggregation stands in for it
    (in update mode for the first, complete mode for the second)."""
    lessons = all_lessons()
    watermarked = next((lesson for lesson in lessons if len(lesson.inputs) == 1 and _has_watermark(lesson)), None)
    two_inputs = next((lesson for lesson in lessons if len(lesson.inputs) > 1), None)
    return [
        pytest.param(watermarked.name, {}, id=watermarked.name)
        if watermarked
        else pytest.param(
            "running-aggregation", {"mode": "update"}, id="running-aggregation-update (no watermark lesson yet)"
        ),
        pytest.param(two_inputs.name, {}, id=two_inputs.name)
        if two_inputs
        else pytest.param(
            "running-aggregation", {"mode": "complete"}, id="running-aggregation-complete (no two-input lesson yet)"
        ),
    ]


def finished_tasks() -> int:
    """Tasks that the session's executors (the cluster's, not the driver) have completed so far, as Spark's own
    status store counts them (the executors' logs say nothing: they log errors only, as the driver does)."""
    executors = spark_session().sparkContext._jsc.sc().statusStore().executorList(True)
    summaries = [executors.apply(index) for index in range(executors.size())]
    return sum(summary.completedTasks() for summary in summaries if summary.id() != "driver")


# --- a cluster for the module ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A cluster started with `ministream cluster start` on free ports, stopped at the end of the module."""
    run_dir = tmp_path_factory.mktemp("cluster")
    assert main(["cluster", "start", "--run-dir", str(run_dir), *FREE_PORTS, "--timeout", "300"]) == 0
    status = cluster_status(run_dir)
    assert status.running
    yield status
    stop_cluster(run_dir)  # a no-op when the last test already stopped it


@pytest.fixture(scope="module")
def on_cluster(cluster):
    """The shared session moved to the cluster through MINISTREAM_SPARK_MASTER, as a notebook would do it;
    afterwards the session goes back to the master it had before (the local one in a test run)."""
    from pyspark.sql import SparkSession

    before = SparkSession.getActiveSession()
    before_master = before.sparkContext.master if before is not None else None
    patch = pytest.MonkeyPatch()
    patch.setenv("MINISTREAM_SPARK_MASTER", cluster.master_url)
    stop_session()
    yield {"session": spark_session(), "before": before_master}
    patch.undo()
    if before_master is not None:
        spark_session(before_master)
    else:
        stop_session()


# --- on the cluster ------------------------------------------------------------------------------------------


@pytest.mark.cluster
def test_the_session_runs_on_the_clusters_executor(cluster, on_cluster):
    """With MINISTREAM_SPARK_MASTER set, the shared session connects to the cluster and gets one executor (1 core)
    from its worker, in a JVM of its own."""
    spark = on_cluster["session"]
    assert spark.sparkContext.master == cluster.master_url
    assert spark.range(10).count() == 10  # a job can only run once an executor is there
    assert spark.sparkContext._jsc.sc().getExecutorIds().size() == 1
    with urllib.request.urlopen(f"{cluster.web_ui_url}/json/") as response:
        apps = json.load(response)["activeapps"]
    assert [(app["name"], app["cores"], app["state"]) for app in apps] == [("ministream", 1, "RUNNING")]
    executors = [pid for pid in cluster_processes(cluster.run_dir) if pid not in _daemon_pids(cluster.run_dir)]
    assert len(executors) == 1 and alive(executors[0])


@pytest.mark.cluster
@pytest.mark.parametrize("lesson, params", cluster_cases())
def test_lesson_matches_ministream_on_the_cluster(lesson, params, cluster, on_cluster, capsys):
    """`ministream compare LESSON --master URL` runs the twin's tasks on the cluster's executor, and every batch
    has the same rows and watermark as ministream."""
    tasks_before = finished_tasks()
    args = ["compare", lesson, "--master", cluster.master_url]
    for name, value in params.items():
        args += ["--param", f"{name}={value}"]
    code = main(args)
    out = capsys.readouterr().out
    assert code == 0, out
    summary = re.search(rf"^{lesson}: (\d+) of (\d+) batches match; (\d+) of (\d+) rows match$", out, re.M)
    assert summary and summary[1] == summary[2] and summary[3] == summary[4], out
    assert spark_session().sparkContext.master == cluster.master_url
    assert finished_tasks() > tasks_before, "no task ran on the cluster's executor"


@pytest.mark.cluster
def test_stop_leaves_no_process_and_later_tests_a_working_local_session(cluster, on_cluster, capsys):
    """Back on the local master the shared session works again, and `ministream cluster stop` stops the
    worker, the master and the executor: none of their processes is left."""
    from ministream.spark.session import DEFAULT_MASTER

    started = set(cluster_processes(cluster.run_dir))
    assert len(started) >= 2
    local = spark_session(on_cluster["before"] or DEFAULT_MASTER)
    assert local.sparkContext.master == (on_cluster["before"] or DEFAULT_MASTER)
    assert local.range(5).count() == 5

    assert main(["cluster", "stop", "--run-dir", str(cluster.run_dir)]) == 0
    assert capsys.readouterr().out.startswith("stopped pids ")
    assert [pid for pid in started if alive(pid)] == []
    assert cluster_processes(cluster.run_dir) == []
    assert main(["cluster", "status", "--run-dir", str(cluster.run_dir)]) == 0
    assert capsys.readouterr().out.startswith("no cluster is running")


def _daemon_pids(run_dir: Path) -> set[int]:
    return {int((run_dir / f"{name}.pid").read_text()) for name in ("master", "worker")}


# --- starting and stopping, without a running cluster ---------------------------------------------------------


def test_stop_never_signals_a_process_it_did_not_start(tmp_path):
    """A pid file whose pid now belongs to another process (here a `sleep`) is ignored by stop."""
    other = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / "cluster.json").write_text(json.dumps({"id": "abc", "master_url": "spark://127.0.0.1:1"}))
        (tmp_path / "master.pid").write_text(f"{other.pid}\n")
        (tmp_path / "worker.pid").write_text(f"{other.pid}\n")
        assert stop_cluster(tmp_path) == []
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_a_busy_port_is_refused_before_anything_starts(tmp_path):
    """A master port already in use is refused with a message naming it, and no daemon is started."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ClusterError, match=f"port {port} for the master is already in use"):
            start_cluster(tmp_path, port=port, web_ui_port=0, worker_web_ui_port=0)
    assert not (tmp_path / "master.pid").exists()


def test_status_without_a_cluster(tmp_path, capsys):
    """`ministream cluster status` on a run directory with no cluster says so."""
    assert main(["cluster", "status", "--run-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"no cluster is running from {tmp_path}\n"


@pytest.mark.cluster
def test_a_start_that_times_out_shows_the_log_and_leaves_nothing(tmp_path):
    """When the master does not answer in time, start fails with the log's path and stops what it started."""
    with pytest.raises(
        ClusterError, match=r"timed out waiting until the master answered(.|\n)*last lines of .*master\.log"
    ):
        start_cluster(tmp_path, port=0, web_ui_port=0, worker_web_ui_port=0, timeout=0.5)
    master = int((tmp_path / "master.pid").read_text())
    assert not alive(master)
    assert cluster_processes(tmp_path) == []


# --- the tutorial's recorded claims ---------------------------------------------------------------------------

RECORDED = re.compile(r"<!-- recorded: (?P<name>[\w-]+) -->\n```\w*\n(?P<body>.*?)```", re.S)


def recorded_blocks() -> dict[str, str]:
    return {match["name"]: match["body"] for match in RECORDED.finditer(TUTORIAL.read_text())}


def test_tutorial_records_the_same_summary_locally_and_on_the_cluster():
    """tutorials/cluster.md shows `compare --all` run locally and on the cluster (recorded by
    tutorials/record_cluster.py): the two summaries are the same (but for the row count of a lesson on the wall
    clock, which changes from run to run), every lesson with a twin matches, and they list exactly today's lessons (when a
    lesson is added, re-record the page)."""
    blocks = recorded_blocks()
    local, remote = blocks["compare-local"].splitlines(), blocks["compare-cluster"].splitlines()
    assert local[0] == "$ ministream compare --all"
    assert remote[0] == "$ ministream compare --all --master spark://127.0.0.1:7077"
    header = next(index for index, line in enumerate(local) if line.startswith("lesson "))
    assert local[1 : header + 1] == remote[1 : header + 1] and local[-1] == remote[-1]
    on_the_clock = {lesson.name for lesson in all_lessons() if lesson.replay_spark_clock}
    table = [line.split() for line in local[header + 1 : -1]]
    for mine, theirs in zip(table, [line.split() for line in remote[header + 1 : -1]], strict=True):
        if mine[0] in on_the_clock:  # lesson, batches matched, result
            mine, theirs = mine[:2] + mine[3:], theirs[:2] + theirs[3:]
        assert mine == theirs
    assert sorted(row[0] for row in table) == sorted(lesson.name for lesson in all_lessons()), (
        "the recorded lessons are not today's: run .venv/bin/python tutorials/record_cluster.py"
    )
    twinless = {lesson.name for lesson in all_lessons() if lesson.twin is None}
    assert all(row[-1] == "match" for row in table if row[0] not in twinless)
    assert all(" ".join(row[-3:]) == "no Spark twin" for row in table if row[0] in twinless)
    count = len(all_lessons()) - len(twinless)
    assert local[-1] == f"{count} of {count} lessons match Spark batch for batch"
    assert "spark://127.0.0.1:7077" in blocks["cluster-start"] and "stopped pids" in blocks["cluster-stop"]
