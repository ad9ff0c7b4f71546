"""One SparkSession per process, set up so that Spark's answers can be compared with ministream's.

Starting Spark costs seconds (a JVM, then Python workers), so every twin in a process shares one session.
The settings that matter for the comparison are fixed here: time in UTC (window edges are aligned on the UTC
epoch and naive datetimes would otherwise be read in local time), a small fixed number of shuffle partitions
(state is kept per partition and a checkpoint cannot change it), and enough progress reports kept to read the
watermark of every batch back. The same code runs on a cluster: pass its master URL or set
``MINISTREAM_SPARK_MASTER``.

>>> spark = spark_session()            # doctest: +SKIP
>>> spark.conf.get("spark.sql.session.timeZone")   # doctest: +SKIP
'UTC'
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys

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

SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS),
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.streaming.numRecentProgressUpdates": "1000",
    "spark.driver.memory": "1g",
    "spark.sql.streaming.stateStore.maintenanceInterval": MAINTENANCE_INTERVAL,
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.extraJavaOptions": f"-Duser.timezone=UTC {FAST_START_JVM_OPTIONS}",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
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

_session = None


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

    builder = SparkSession.builder.master(master).appName("ministream")
    local = master.startswith("local")
    for key, value in {**SETTINGS, **(LOCAL_SETTINGS if local else {})}.items():
        builder = builder.config(key, value)
    _session = builder.getOrCreate()
    _session.sparkContext.setLogLevel("ERROR")
    return _session


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
