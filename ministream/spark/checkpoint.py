"""Spark's checkpoints: a query that crashes in the middle of a micro-batch, restarted from its checkpoint.

A Structured Streaming query keeps its progress in its ``checkpointLocation`` (the rules, confirmed on PySpark
4.3 by ``tests/lessons/test_checkpoint_recovery.py`` and ``tests/lessons/test_rescale.py``):

1. before batch k reads anything, Spark writes ``offsets/k``: the batch's end offsets, watermark and timestamp;
2. the batch runs and ``foreachBatch(df, k)`` receives its output; when the function returns, Spark writes
   ``commits/k``; stateful operators keep their state under ``state/<operator>/<partition>/``;
3. a query started again on the same checkpoint location finds ``offsets/k`` without ``commits/k``: it runs
   batch k again, with the same id, offsets and watermark, and then goes on;
4. ``spark.sql.shuffle.partitions`` is recorded in every ``offsets/k``: a restart keeps the checkpoint's
   number of state partitions, whatever the session asks for;
5. so ``foreachBatch`` can see batch k twice. A sink that writes *by batch id* (replacing what an earlier try
   of the batch wrote) gives exactly-once output; a sink that appends gives at-least-once output:
   the rows written before the crash appear twice.

:func:`run_query_with_crash` plays that out: the sink function writes ``after_rows`` rows of batch
``crash_batch`` and raises; the query fails; a second query on the same checkpoint finishes the run. The
crash is planned, so it is reported in one line on the ``ministream.spark`` logger (``Spark's query stopped in
batch 3 as planned: foreachBatch raised after 1 of 3 rows``), and Spark's own report of it (an ERROR line and
a Java stack of some forty lines) is silenced for that query; any other failure still shows in full.

>>> run = run_query_with_crash(df, "append", crash_batch=3)        # doctest: +SKIP
>>> run.batch_ids                                                 # doctest: +SKIP
[[0, 1, 2, 3], [3, 4]]
"""

from __future__ import annotations

import logging
import re
import shutil
import tempfile

import attrs

from ministream.checkpoints.exactly_once import row_order
from ministream.checkpoints.storage import DirectoryStorage, folder_outline
from ministream.core.results import BatchResult
from ministream.spark.collect import SparkQueryError, _collect, _query_error, _watermarks
from ministream.spark.session import session_conf

QUERY_LOGGER = "org.apache.spark.sql.execution.streaming.runtime"
"""The log4j logger of Spark's streaming query runners, which logs a query's failure as an ERROR with its stack
(``MicroBatchExecution: Query ... terminated with error``)."""

_log = logging.getLogger("ministream.spark")


class SimulatedSparkCrash(RuntimeError):
    """The crash a ``foreachBatch`` function raises on purpose, in the middle of writing a batch.

    >>> SimulatedSparkCrash("foreachBatch crashed in batch 3 after writing 1 of its 3 rows")
    SimulatedSparkCrash('foreachBatch crashed in batch 3 after writing 1 of its 3 rows')"""


@attrs.frozen
class SparkRecoveryRun:
    """What a crashed and restarted query left in its sink, and what each of its two runs saw.

    >>> SparkRecoveryRun([BatchResult(0, 0, [])], [[0], [0]], "crashed").batch_ids
    [[0], [0]]

    Attributes:
        batches: the sink's content at the end, one ``BatchResult`` per batch id, with the watermark Spark
            ran the batch with.
        batch_ids: the batch ids ``foreachBatch`` was called with, per start of the query: the first run
            ends with the crashed batch, the second begins with it.
        error: what the first run failed with, as Spark reported it.
        stopped: the planned crash in one line, as ``run_query_with_crash`` reports it.
    """

    batches: list[BatchResult]
    batch_ids: list[list[int]]
    error: str
    stopped: str = ""


def run_query_with_crash(
    df,
    output_mode: str,
    *,
    crash_batch: int,
    after_rows: int = 1,
    idempotent: bool = True,
    checkpoint_dir: str | None = None,
    query_name: str | None = None,
    conf: dict | None = None,
    restart_conf: dict | None = None,
) -> SparkRecoveryRun:
    """Run a streaming DataFrame with a ``checkpointLocation``, crash ``foreachBatch`` in batch
    ``crash_batch`` after it wrote ``after_rows`` rows (in ``exactly_once.row_order``), restart the query on the same
    checkpoint, and return what the sink holds.

    Args:
        df: the streaming DataFrame (a lesson's twin).
        output_mode: ``"append"``, ``"update"`` or ``"complete"``.
        crash_batch, after_rows: where the sink function fails, the first time only.
        idempotent: the sink writes by batch id, replacing an earlier try (exactly once); ``False``: it appends
            (at least once).
        checkpoint_dir: the checkpoint location (a temporary folder, removed at the end, when ``None``).
        query_name, conf: as for ``ministream.spark.run_query``.
        restart_conf: settings added for the restart only (the rescale lesson asks for other shuffle
            partitions there, and Spark keeps the checkpoint's).

    >>> run = run_query_with_crash(twin_df, "append", crash_batch=3, after_rows=1)   # doctest: +SKIP
    >>> run.batch_ids, len(run.batches[3].rows)                                     # doctest: +SKIP
    ([[0, 1, 2, 3], [3, 4]], 3)
    """
    from pyspark.errors import PySparkException

    table: dict[int, list[dict]] = {}  # the sink: {batch id: rows}
    calls: list[list[int]] = []
    crashed = {"done": False, "line": ""}
    saved_level: dict = {}  # the query loggers' level while a planned crash is being reported

    def write(batch_id: int, rows: list[dict]) -> None:
        if idempotent:
            table[batch_id] = rows  # replaces what an earlier try wrote
        else:
            table.setdefault(batch_id, []).extend(rows)  # appends: an earlier try's rows stay

    def sink(batch_df, batch_id):
        calls[-1].append(batch_id)
        rows = _collect(batch_df)
        if batch_id == crash_batch and not crashed["done"]:
            crashed["done"] = True
            write(batch_id, sorted(rows, key=row_order)[:after_rows])  # the same rows ministream's sink writes
            written = min(after_rows, len(rows))
            crashed["line"] = (
                f"Spark's query stopped in batch {batch_id} as planned: foreachBatch raised after {written} "
                f"of {len(rows)} row{'s' if len(rows) != 1 else ''}"
            )
            saved_level["level"] = _set_query_log_level(batch_df.sparkSession, "OFF")  # a planned failure
            raise SimulatedSparkCrash(
                f"foreachBatch crashed in batch {batch_id} after writing {written} of its {len(rows)} rows"
            )
        write(batch_id, rows)

    temporary = checkpoint_dir is None
    location = tempfile.mkdtemp(prefix="ministream-spark-ckpt-") if temporary else checkpoint_dir
    watermarks: dict[int, int | None] = {}
    error = ""
    try:
        for attempt in (1, 2):
            calls.append([])
            settings = {**(conf or {}), **(restart_conf or {})} if attempt == 2 else conf
            query = _start(df, sink, output_mode, location, query_name, settings)
            try:
                query.processAllAvailable()
            except PySparkException as failure:
                if attempt == 2 or "SimulatedSparkCrash" not in str(failure):
                    raise _query_error(failure, "failed while running the query") from None
                error = f"{type(failure).__name__}: foreachBatch raised SimulatedSparkCrash"
            finally:
                watermarks.update(_watermarks(query))  # the second run's report of a rerun batch is the one kept
                query.stop()
                if saved_level:
                    _set_query_log_level(df.sparkSession, saved_level.pop("level"))
            if attempt == 1 and not error:
                raise SparkQueryError(f"the query never reached batch {crash_batch}: nothing crashed")
            if attempt == 1:
                _log.info(crashed["line"])
    finally:
        if temporary:
            shutil.rmtree(location, ignore_errors=True)
    batches = [BatchResult(batch_id, watermarks.get(batch_id), table[batch_id]) for batch_id in sorted(table)]
    return SparkRecoveryRun(batches, calls, error, crashed["line"])


def _set_query_log_level(spark, level: str) -> str:
    """Set the log4j level of Spark's query runners (:data:`QUERY_LOGGER`); returns the level it had."""
    jvm = spark.sparkContext._jvm
    before = jvm.org.apache.logging.log4j.LogManager.getLogger(QUERY_LOGGER).getLevel().toString()
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        QUERY_LOGGER, jvm.org.apache.logging.log4j.Level.toLevel(level)
    )
    return before


def _start(df, sink, output_mode: str, location: str, query_name: str | None, conf: dict | None):
    from pyspark.errors import PySparkException

    with session_conf(df.sparkSession, conf):
        writer = df.writeStream.foreachBatch(sink).outputMode(output_mode).option("checkpointLocation", location)
        if query_name:
            writer = writer.queryName(query_name)
        try:
            return writer.start()
        except PySparkException as error:
            raise _query_error(error, "refused the query") from None


@attrs.frozen
class CheckpointFolders:
    """Both engines' checkpoint folders after the same crashed and recovered run, in outline
    (``storage.folder_outline``), with the two runs.

    >>> print(checkpoint_folders(get_lesson("checkpoint-recovery")).text)   # doctest: +SKIP
    ministream: run_with_recovery(..., storage=DirectoryStorage(folder))
      chk-{0..4}
    ..."""

    text: str
    ministream: object
    spark: SparkRecoveryRun


FOLDERS_BLOCK = re.compile(
    r"(<!-- checkpoint folders -->\n```text\n)(?P<body>.*?)(```\n<!-- /checkpoint folders -->)", re.S
)
"""Where a tutorial page shows :func:`checkpoint_folders`' text (refreshed by ``python -m ministream.tools.docs --spark``)."""


def checkpoint_folders(lesson, params: dict | None = None, *, master: str | None = None) -> CheckpointFolders:
    """Run a recovery lesson (``lessons.checkpoint_recovery.RecoveryLesson``) in both engines with their
    checkpoints in folders, and outline the two folders one after the other: what tutorial 15 shows.

    >>> checkpoint_folders(get_lesson("checkpoint-recovery")).spark.batch_ids   # doctest: +SKIP
    [[0, 1, 2, 3], [3, 4]]"""

    with tempfile.TemporaryDirectory() as ours, tempfile.TemporaryDirectory() as theirs:
        run = lesson.run(params=params, storage=DirectoryStorage(ours))
        spark = lesson.spark_recovery(params=params, master=master, checkpoint_dir=theirs)
        text = (
            f"ministream: run_with_recovery(..., storage=DirectoryStorage(folder))\n"
            f"{_indent(folder_outline(ours))}\n"
            f"Spark: writeStream.option('checkpointLocation', folder)\n{_indent(folder_outline(theirs))}\n"
        )
    return CheckpointFolders(text, run, spark)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def refresh_page(path, text: str) -> bool:
    """Put ``text`` in the checkpoint-folders block of a page; ``True`` when the page changed.

    >>> refresh_page("tutorials/15-checkpoint-recovery.md", folders.text)   # doctest: +SKIP
    False"""
    from pathlib import Path

    page = Path(path)
    old = page.read_text()
    new = FOLDERS_BLOCK.sub(lambda m: m.group(1) + text + m.group(3), old)
    page.write_text(new)
    return new != old
