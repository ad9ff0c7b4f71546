"""One SparkSession per process, set up so that Spark's answers can be compared with ministream's.

Starting Spark costs seconds (a JVM, then Python workers), so every twin in a process shares one session.
The settings that matter for the comparison are fixed here: time in UTC (window edges are aligned on the UTC
epoch and naive datetimes would otherwise be read in local time), a small fixed number of shuffle partitions
(state is kept per partition and a checkpoint cannot change it), and enough progress reports kept to read the
watermark of every batch back. The same code runs on a cluster: pass its master URL or set
``MINISTREAM_SPARK_MASTER``.

Spark is quiet from the moment it starts: its logging is set to errors only by ``log4j2.properties`` (shipped
beside this module, passed to the JVM with ``-Dlog4j.configurationFile``), and the few lines the JVM and
PySpark's workers print themselves (the incubator-module banner, the ``transformWithState`` worker's notes)
are held back by :func:`quiet_line` on their way to ``sys.stderr``; everything else, errors and their stacks
included, still shows. Starting takes about ten seconds, so the session says so on the ``ministream.spark``
logger (the command line prints it; :func:`report_progress` shows it anywhere else).

>>> spark = spark_session()            # doctest: +SKIP
>>> spark.conf.get("spark.sql.session.timeZone")   # doctest: +SKIP
'UTC'
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

DEFAULT_MASTER = "local[2]"
"""Two worker threads, one per core of the machines the workshop runs on."""

SHUFFLE_PARTITIONS = 2
"""State partitions per stateful operator (also the number of tasks of each stateful stage).

Spark's default (200) means 200 state stores and 200 tasks per stateful batch: seconds per batch on a laptop.
1 and 2 cost about the same per batch (``tutorials/spark-facts.md``, Costs), and 2 keeps the teaching point that
state is split by key across partitions.
"""

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
"""State store that ``transformWithState`` requires; pass ``conf=ROCKSDB_STATE_STORE`` to run_query.

It costs about the same as Spark's default store (``tutorials/spark-facts.md``, Costs); the default stays for the
other lessons, so that they show Spark as it comes.
"""

ROCKSDB_STATE_STORE = {"spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER}
"""Per-query setting selecting RocksDB state, e.g. ``run_query(df, "append", conf=ROCKSDB_STATE_STORE)``."""

FAST_START_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
"""JVM options for short runs on few cores: only the quick (C1) JIT compiler, and the single-threaded collector.

A comparison is seconds of class loading and planning on tiny data, which the optimising compiler's threads
(and G1's) slow down on few cores rather than speed up (what it saves: ``tutorials/spark-facts.md``, Costs).
"""

MAINTENANCE_INTERVAL = "1s"
"""How often Spark's background state store maintenance runs (snapshots, removal of old files); default 60 s.

The maintenance task is one per process and keeps the interval of the first stateful query that started it,
whatever later queries ask for. Set here for the whole session, so that ``spark.state_files`` (which pauses
1 s after each batch for it) shows snapshots even when other stateful queries ran before it in the process;
with the default it shows none unless the 60 s tick falls inside its run (``tutorials/spark-facts.md``,
Costs). Maintenance never changes a query's results.
"""

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
"""Spark's logging for ministream: errors only (a log4j2 configuration, shipped with the package)."""

QUIET_JAVA_OPTIONS = f'-Dlog4j.configurationFile="{LOG_CONFIG}"'
"""The JVM option that gives Spark :data:`LOG_CONFIG` before it logs its first line."""

QUIET_LINES = (
    "WARNING: Using incubator modules:",  # the JVM, for the --add-modules=jdk.incubator.vector Spark adds
    "Starting Streaming TransformWithStateInPandas Python worker",  # PySpark's transformWithState driver
    "Streaming TransformWithStateInPandas Python worker ",  # worker prints each of its steps to stdout
)
"""The beginnings of lines that the JVM and PySpark's workers print themselves, outside log4j: notes for
Spark's developers, held back from a learner's screen."""

SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.numRecentProgressUpdates": "1000",
    "spark.driver.memory": "1g",
    "spark.sql.streaming.stateStore.maintenanceInterval": MAINTENANCE_INTERVAL,
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC {FAST_START_JVM_OPTIONS} {QUIET_JAVA_OPTIONS}",
    "spark.executor.extraJavaOptions": f"-Duser.timezone=UTC {QUIET_JAVA_OPTIONS}",
}
"""Session settings shared by every twin (see the module docstring for why)."""

LOCAL_CHECKPOINT_FILES = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
"""How a query on a local master writes its checkpoint files: through Hadoop's ``FileSystem`` API.

Spark's default for ``file:`` paths goes through Hadoop's ``FileContext`` API, and Hadoop without its native
library (``libhadoop.so``, which pip's PySpark does not ship) starts a process for file operations it cannot do
in Java: ``chmod`` for every file created, ``readlink`` for every file status ``FileContext`` asks for while
renaming, ``rm -rf`` to delete a folder. The ``FileSystem`` manager renames with Java (atomic on a local disk,
as the ``FileContext`` one) and asks for no link status, so no ``readlink`` process is left (what that saves:
``tutorials/spark-facts.md``, Costs). The checkpoint's files and their content are the same. A cluster keeps
Spark's default, made for HDFS and object stores."""

LOCAL_SETTINGS = {"spark.sql.streaming.checkpointFileManagerClass": LOCAL_CHECKPOINT_FILES}
"""Settings added on a ``local[...]`` master only."""

STARTING = "starting Spark (about 10 s)"
"""What the ``ministream.spark`` logger says while a session starts."""

_session = None
_log = logging.getLogger("ministream.spark")


class SparkUnavailableError(RuntimeError):
    """Spark cannot start on this machine (for example Java is missing); the message says what to install."""


def _check_java() -> None:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.path.exists(os.path.join(java_home, "bin", "java")):
        return
    if shutil.which("java") is None:
        raise SparkUnavailableError(
            "Spark needs Java (17 or 21) and none was found: install a JDK (e.g. `apt-get install "
            "openjdk-17-jre-headless`) or set JAVA_HOME to one."
        )


def _is_live(session) -> bool:
    return session is not None and session.sparkContext._jsc is not None


def spark_session(master: str | None = None):
    """The process's shared SparkSession, started on first use (master: argument, env, or ``local[2]``).

    Without a master the live session is reused whatever its master; with a different one it is restarted.

    >>> spark = spark_session()                       # doctest: +SKIP
    >>> spark is spark_session()                      # doctest: +SKIP
    True
    """
    global _session
    if _is_live(_session):
        if master is None or master == _session.sparkContext.master:
            return _session
        _session.stop()
    _session = None
    master = master or os.environ.get("MINISTREAM_SPARK_MASTER") or DEFAULT_MASTER
    _check_java()
    # Spark's Python workers must run this interpreter (with ministream and pyarrow), and must be able to
    # connect back to the JVM on a machine whose host name may not resolve.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from pyspark.sql import SparkSession

    settings = {**SETTINGS, **(LOCAL_SETTINGS if master.startswith("local") else {})}
    _log.info(STARTING)
    _launch_quiet_jvm(master, settings)
    builder = SparkSession.builder.master(master).appName("ministream")
    for key, value in settings.items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    return _session


def quiet_line(line: str) -> bool:
    """Whether a line the JVM printed on its stderr is one of :data:`QUIET_LINES`, held back from the screen.

    >>> quiet_line("WARNING: Using incubator modules: jdk.incubator.vector")
    True
    >>> quiet_line("26/11/24 03:47:52 ERROR MicroBatchExecution: Query q terminated with error")
    False
    """
    return line.startswith(QUIET_LINES)


def _relay(pipe) -> None:
    """Copy the JVM's stderr to ``sys.stderr`` line by line, without :data:`QUIET_LINES` (nor the blank line
    each of PySpark's worker notes ends with); runs on a daemon thread for the life of the JVM."""
    after_quiet = False
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", errors="replace")
        if quiet_line(line) or (after_quiet and not line.strip()):
            after_quiet = True
            continue
        after_quiet = False
        try:
            sys.stderr.write(line)
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed (the interpreter is exiting): keep draining the pipe
            pass


def _launch_quiet_jvm(master: str, settings: dict) -> None:
    """Start Spark's JVM as PySpark would, with its stderr through :func:`_relay`; nothing to do when this
    process already has a JVM (a session started earlier, or PySpark started by ``spark-submit``)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    with SparkContext._lock:
        if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
            return
        conf = SparkConf().setMaster(master).setAppName("ministream").setAll(list(settings.items()))
        gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
        threading.Thread(target=_relay, args=(gateway.proc.stderr,), name="spark-stderr", daemon=True).start()
        SparkContext._gateway = gateway
        SparkContext._jvm = gateway.jvm


def report_progress(stream=None) -> None:
    """Show what the ``ministream`` loggers say while work goes on (``starting Spark (about 10 s)``...) as
    plain lines on ``stream``; the command line passes ``sys.stderr``, a notebook may pass ``sys.stdout``.
    Calling it again moves the lines to another stream; ``None`` stops them.

    >>> import io; seen = io.StringIO(); report_progress(seen)
    >>> logging.getLogger("ministream.spark").info(STARTING); seen.getvalue()
    'starting Spark (about 10 s)\\n'
    >>> report_progress(None)

    Args:
        stream: a text stream, or ``None``.
    """
    logger = logging.getLogger("ministream")
    for handler in [h for h in logger.handlers if getattr(h, "ministream_progress", False)]:
        logger.removeHandler(handler)
    if stream is None:
        logger.setLevel(logging.NOTSET)
        return
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.ministream_progress = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def stop_session() -> None:
    """Stop the shared session if one is running (the next spark_session() starts a new one).

    >>> stop_session()
    """
    global _session
    if _is_live(_session):
        _session.stop()
    _session = None


@contextlib.contextmanager
def session_conf(spark, conf: dict | None):
    """Set SQL settings on a session for the duration of a ``with`` block, then restore the old values.

    A streaming query copies the session's settings when it starts, so this is how one query gets, say, the
    RocksDB state store while the others keep the default.

    >>> with session_conf(spark_session(), ROCKSDB_STATE_STORE):   # doctest: +SKIP
    ...     query = df.writeStream.foreachBatch(print).start()
    """
    saved = {}
    try:
        for key, value in (conf or {}).items():
            saved[key] = spark.conf.get(key, None)
            spark.conf.set(key, str(value))
        yield spark
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
