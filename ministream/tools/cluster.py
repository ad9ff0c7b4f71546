"""A Spark standalone cluster on this machine: one master and one worker on 127.0.0.1, from the installed PySpark.

A twin is real Structured Streaming code, so it runs unchanged on a cluster: only the *master URL* the session
connects to changes. This module starts the smallest real cluster, the one Spark's own scripts would start:

- a **master** (``org.apache.spark.deploy.master.Master``) that keeps the list of workers and hands their cores
  to applications; it listens on ``spark://127.0.0.1:PORT`` and reports its state as JSON on its web UI;
- one **worker** (``org.apache.spark.deploy.worker.Worker``) with 1 core and 1 GiB that registers with the
  master and, when an application (a twin's session) arrives, starts an *executor* JVM for it, which in turn
  starts Python workers to run the scripted source.

Both daemons run from PySpark's own ``bin/spark-class``, write their logs into a run directory (``.cluster/``
by default) and are recorded there by pid, so that :func:`stop_cluster` stops exactly them and nothing else.
Each start tags its daemons with a fresh id (``-Dministream.cluster=ID`` on their Java command line): a pid file
left from a crashed cluster can then never make ``stop`` kill an unrelated process that reused the pid.

Waiting here uses the wall clock (the cluster is outside the engine, whose time is always scripted):

>>> cluster = start_cluster(".cluster")                      # doctest: +SKIP
>>> cluster.master_url                                       # doctest: +SKIP
'spark://127.0.0.1:7077'
>>> stop_cluster(".cluster")                                 # doctest: +SKIP
[12346, 12345]
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import attrs

RUN_DIR = ".cluster"
"""Where ``ministream cluster start`` keeps logs, pid files and the worker's directories (ignored by git)."""

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
HOST = "127.0.0.1"
STATE_FILE = "cluster.json"

_children: dict[int, subprocess.Popen] = {}  # {pid: Popen} for daemons this process started (to reap them)


class ClusterError(RuntimeError):
    """The cluster could not start, or stop, or be found; the message says why and shows the log's last lines."""


@attrs.frozen
class Cluster:
    """A running standalone cluster: where to connect, where its web UI and logs are, and its daemons' pids.

    >>> Cluster("spark://127.0.0.1:7077", "http://127.0.0.1:8080", Path(".cluster"), 101, 102).master_url
    'spark://127.0.0.1:7077'
    """

    master_url: str
    web_ui_url: str
    run_dir: Path
    master_pid: int
    worker_pid: int


@attrs.frozen
class ClusterStatus:
    """What a run directory's cluster is doing: which daemons are alive and what the master reports.

    >>> print(ClusterStatus(Path(".cluster"), None, None, False, False, None).describe())
    no cluster is running from .cluster
    """

    run_dir: Path
    master_url: str | None
    web_ui_url: str | None
    master_running: bool
    worker_running: bool
    master_state: dict | None  # the master's /json/ report, or None when it does not answer

    @property
    def running(self) -> bool:
        return self.master_running and self.worker_running

    def describe(self) -> str:
        """The status in a few lines, as ``ministream cluster status`` prints it."""
        if not (self.master_running or self.worker_running):
            return f"no cluster is running from {self.run_dir}"
        lines = [
            f"master {self.master_url} ({'running' if self.master_running else 'stopped'}), web UI {self.web_ui_url}",
            f"worker {'running' if self.worker_running else 'stopped'}",
        ]
        if self.master_state is not None:
            state = self.master_state
            apps = ", ".join(app["name"] for app in state.get("activeapps", [])) or "none"
            lines.append(
                f"{state['aliveworkers']} alive worker(s), {state['cores']} core(s), "
                f"{state['memory']} MiB; running applications: {apps}"
            )
        return "\n".join(lines)


# --- starting ------------------------------------------------------------------------------------------------


def spark_class() -> Path:
    """The ``bin/spark-class`` launcher of the installed PySpark (the same jars the local session uses).

    >>> spark_class().name
    'spark-class'
    """
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the system picks it).

    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _check_free(port: int, what: str) -> None:
    with socket.socket() as probe:
        try:
            probe.bind((HOST, port))
        except OSError:
            raise ClusterError(
                f"port {port} for the {what} is already in use on {HOST}: stop what uses it "
                f"(`ministream cluster status`, `ss -ltnp`) or choose another port"
            ) from None


def _daemon_env(cluster_id: str) -> dict:
    """The daemons' environment: this PySpark's jars, loopback, this interpreter for Python workers, UTC."""
    import pyspark

    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": str(Path(pyspark.__file__).parent),  # not another Spark the user may have installed
            "SPARK_LOCAL_IP": HOST,
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "TZ": "UTC",
            # The tag that lets stop() recognise our daemons; no port retries, so a busy port fails loudly.
            "SPARK_DAEMON_JAVA_OPTS": f"-Dministream.cluster={cluster_id} -Dspark.port.maxRetries=0",
        }
    )
    return env


def _launch(run_dir: Path, name: str, args: list[str], env: dict) -> subprocess.Popen:
    """Start one daemon in its own process group, its output in ``NAME.log``, its pid in ``NAME.pid``."""
    with open(run_dir / f"{name}.log", "wb") as log:
        process = subprocess.Popen(
            [str(spark_class()), *args],
            cwd=run_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    # spark-class ends with `exec java ...`, so this pid is the daemon's JVM itself.
    _children[process.pid] = process
    (run_dir / f"{name}.pid").write_text(f"{process.pid}\n")
    return process


def _master_json(web_ui_url: str) -> dict | None:
    """The master's state from its web UI (``/json/``), or None when it does not answer (yet)."""
    try:
        with urllib.request.urlopen(f"{web_ui_url}/json/", timeout=2) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _log_tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        return "(no log)"
    return "\n".join("    " + line for line in text[-lines:])


def _wait_until(ready, processes: dict, run_dir: Path, what: str, deadline: float):
    """Poll ``ready()`` until it returns a value; fail early with the log tail if a daemon exits."""
    while True:
        for name, process in processes.items():
            if process.poll() is not None:
                raise ClusterError(
                    f"the Spark {name} exited (status {process.returncode}) before {what}; "
                    f"last lines of {run_dir / (name + '.log')}:\n{_log_tail(run_dir / (name + '.log'))}"
                )
        value = ready()
        if value:
            return value
        if time.monotonic() > deadline:
            logs = "\n".join(
                f"last lines of {run_dir / (n + '.log')}:\n{_log_tail(run_dir / (n + '.log'))}" for n in processes
            )
            raise ClusterError(f"timed out waiting until {what}\n{logs}")
        time.sleep(0.2)


def start_cluster(
    run_dir: str | os.PathLike = RUN_DIR,
    *,
    port: int = 7077,
    web_ui_port: int = 8080,
    worker_web_ui_port: int = 8081,
    cores: int = 1,
    memory: str = "1g",
    timeout: float = 120.0,
) -> Cluster:
    """Start a master and one worker on 127.0.0.1 and return once the worker has registered with the master.

    A port of 0 means "any free port". On failure (a busy port, a daemon that exits, the timeout) whatever was
    started is stopped again and :class:`ClusterError` shows the logs' last lines.

    >>> start_cluster(".cluster", port=0, web_ui_port=0, worker_web_ui_port=0).master_url   # doctest: +SKIP
    'spark://127.0.0.1:41235'
    """
    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    if _recorded_daemons(run_dir):
        raise ClusterError(f"a cluster is already running from {run_dir}: `ministream cluster stop` first")
    port, web_ui_port, worker_web_ui_port = (p or free_port() for p in (port, web_ui_port, worker_web_ui_port))
    for number, what in ((port, "master"), (web_ui_port, "master's web UI"), (worker_web_ui_port, "worker's web UI")):
        _check_free(number, what)
    cluster_id = uuid.uuid4().hex
    master_url, web_ui_url = f"spark://{HOST}:{port}", f"http://{HOST}:{web_ui_port}"
    (run_dir / STATE_FILE).write_text(
        json.dumps({"id": cluster_id, "master_url": master_url, "web_ui_url": web_ui_url}, indent=2) + "\n"
    )
    env = _daemon_env(cluster_id)
    deadline = time.monotonic() + timeout
    started = {}
    try:
        started["master"] = _launch(
            run_dir,
            "master",
            [MASTER_CLASS, "--host", HOST, "--port", str(port), "--webui-port", str(web_ui_port)],
            env,
        )

        def master_alive():
            state = _master_json(web_ui_url)
            return state if state and state.get("status") == "ALIVE" else None

        _wait_until(master_alive, started, run_dir, f"the master answered on {web_ui_url}", deadline)
        started["worker"] = _launch(
            run_dir,
            "worker",
            [
                WORKER_CLASS,
                master_url,
                "--host",
                HOST,
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(worker_web_ui_port),
                "--work-dir",
                str(run_dir / "work"),
            ],
            env,
        )

        def worker_registered():
            state = _master_json(web_ui_url) or {}
            ours = f"http://{HOST}:{worker_web_ui_port}"
            return any(w["state"] == "ALIVE" and w["webuiaddress"] == ours for w in state.get("workers", []))

        _wait_until(worker_registered, started, run_dir, f"the worker registered with {master_url}", deadline)
    except BaseException:
        _abandon(started.values())
        raise
    return Cluster(master_url, web_ui_url, run_dir, started["master"].pid, started["worker"].pid)


# --- finding our processes and stopping them -----------------------------------------------------------------


def _command_line(pid: int) -> list[str] | None:
    """A live process's command line, or None when it is gone (a zombie, dead but not yet reaped, is gone)."""
    if os.path.isdir("/proc/self"):
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return None
        return None if state == "Z" else [w.decode(errors="replace") for w in words if w]
    found = subprocess.run(
        ["ps", "-o", "stat=", "-o", "command=", "-p", str(pid)], capture_output=True, check=False, text=True
    )
    fields = found.stdout.split()
    return None if not fields or fields[0].startswith("Z") else fields[1:]


def _is_ours(pid: int, cluster_id: str, role_class: str) -> bool:
    """Whether ``pid`` is still the daemon we started: a live JVM running that class with our tag."""
    words = _command_line(pid) or []
    return f"-Dministream.cluster={cluster_id}" in words and role_class in words


def _read_state(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / STATE_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _recorded_daemons(run_dir: Path) -> dict[str, int]:
    """The daemons recorded in a run directory that are still running: {"worker": pid, "master": pid}."""
    cluster_id = _read_state(run_dir).get("id")
    alive = {}
    for name, role_class in (("worker", WORKER_CLASS), ("master", MASTER_CLASS)):
        try:
            pid = int((run_dir / f"{name}.pid").read_text())
        except (FileNotFoundError, ValueError):
            continue
        if cluster_id and _is_ours(pid, cluster_id, role_class):
            alive[name] = pid
    return alive


def _executors(run_dir: Path) -> list[int]:
    """Executor JVMs the worker started and that outlived it (their directory is in our ``work/``); Linux only."""
    work = str(run_dir / "work") + os.sep
    found = []
    for entry in Path("/proc").glob("[0-9]*") if os.path.isdir("/proc/self") else []:
        try:
            in_work = os.readlink(entry / "cwd").startswith(work)
        except OSError:
            continue
        if in_work and EXECUTOR_CLASS in (_command_line(int(entry.name)) or []):
            found.append(int(entry.name))
    return found


def cluster_processes(run_dir: str | os.PathLike = RUN_DIR) -> list[int]:
    """Every running process of the run directory's cluster: the two daemons and any executor left behind.

    >>> cluster_processes("/nonexistent")
    []
    """
    run_dir = Path(run_dir).resolve()
    return sorted(set(_recorded_daemons(run_dir).values()) | set(_executors(run_dir)))


def _gone(pid: int) -> bool:
    if pid in _children:  # our own child: reap it, or it stays a zombie
        if _children[pid].poll() is None:
            return False
        del _children[pid]
        return True
    return _command_line(pid) is None


def _terminate(pids: list[int], timeout: float) -> None:
    """SIGTERM (Spark's daemons then stop their executors), and SIGKILL what is still there after ``timeout``."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        alive = [pid for pid in pids if not _gone(pid)]
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while any(not _gone(pid) for pid in alive) and time.monotonic() < deadline:
            time.sleep(0.1)


def _abandon(processes) -> None:
    """Stop daemons of a start that failed: our own children, perhaps still in spark-class's launcher, so
    their whole process group (the session they lead) is signalled."""
    for process in processes:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue
        _children.pop(process.pid, None)


def stop_cluster(run_dir: str | os.PathLike = RUN_DIR, *, timeout: float = 30.0) -> list[int]:
    """Stop the run directory's cluster (worker, then master, then any executor left) and return their pids.

    Only processes this module started are signalled: a pid whose process is not our tagged daemon is left
    alone. Raises :class:`ClusterError` if one of them is still there afterwards.

    >>> stop_cluster("/nonexistent")
    []
    """
    run_dir = Path(run_dir).resolve()
    stopped = []
    for pid in _recorded_daemons(run_dir).values():  # worker first: it stops its executors
        _terminate([pid], timeout)
        stopped.append(pid)
    leftovers = _executors(run_dir)
    _terminate(leftovers, timeout)
    stopped += leftovers
    still = [pid for pid in stopped if not _gone(pid)]
    if still:
        raise ClusterError(f"these cluster processes did not stop: {still}")
    for name in ("master", "worker"):
        (run_dir / f"{name}.pid").unlink(missing_ok=True)
    return stopped


def cluster_status(run_dir: str | os.PathLike = RUN_DIR) -> ClusterStatus:
    """Which of the run directory's daemons are alive, and what the master reports about its workers.

    >>> cluster_status("/nonexistent").running
    False
    """
    run_dir = Path(run_dir).resolve()
    state, daemons = _read_state(run_dir), _recorded_daemons(run_dir)
    web_ui_url = state.get("web_ui_url")
    report = _master_json(web_ui_url) if "master" in daemons and web_ui_url else None
    return ClusterStatus(run_dir, state.get("master_url"), web_ui_url, "master" in daemons, "worker" in daemons, report)
