"""Run a streaming query to the end of its script and collect what every micro-batch emitted.

The sink is ``foreachBatch``: Spark calls a Python function on the driver with each micro-batch's output as
a DataFrame and its batch id, empty batches included, so nothing is lost or merged (the memory sink, for
instance, forgets batch ids). ``processAllAvailable()`` waits until every scripted batch ran, plus the trailing
*no-data batch* Spark runs when the last watermark advance lets a stateful operator evict state. The
watermark each batch ran with is read back from the query's progress reports, and its processing time (the
batch timestamp) from the checkpoint's offsets log.

>>> results = run_query(df.groupBy("key").count(), "update")   # doctest: +SKIP
>>> results[0]                                                  # doctest: +SKIP
BatchResult(batch_id=0, watermark=None, rows=[{'key': 'a', 'count': 2}])
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile

from ministream.core.results import BatchResult, normalize_value
from ministream.spark.session import session_conf
from ministream.spark.table import set_batch
from ministream.time.units import parse_timestamp


class SparkQueryError(RuntimeError):
    """A twin that Spark refused or that failed while running; the message is Spark's error class and text."""

    def __init__(self, message: str, error_class: str | None = None):
        super().__init__(message)
        self.error_class = error_class


def _plain(value):
    """A collected value in comparable form: structs as dicts, arrays as tuples, timestamps as int ms."""
    if isinstance(value, dict):
        return {name: _plain(item) for name, item in value.items()}
    if isinstance(value, list):
        return tuple(_plain(item) for item in value)
    return normalize_value(value)


def _collect(batch_df) -> list[dict]:
    # Through Arrow, timestamps arrive as timezone-aware UTC datetimes; Row.collect() would give naive
    # datetimes in the Python process's local zone.
    return [_plain(row) for row in batch_df.toArrow().to_pylist()]


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\]\s*")


def _describe(error: Exception) -> tuple[str, str]:
    """Spark's error class and one plain line of text for an error, without the Java stack trace.

    Spark nests errors ("[STREAM_FAILED] ... terminated with exception: [INNER_CLASS] text"): the innermost
    class names the cause. A Python exception (from a UDF, say) is named by the last line of its traceback.
    """
    error_class = error.getCondition() if hasattr(error, "getCondition") else None
    error_class = error_class or type(error).__name__
    java = getattr(error, "java_exception", None)  # a Java error PySpark did not translate (Py4JJavaError)
    message = str(java.toString()) if java is not None else str(error)
    lines = [line for line in message.splitlines() if line.strip()]
    text = lines[0].strip() if lines else ""
    for match in _ERROR_CLASS.finditer(text):
        error_class, text = match.group(1), text[match.end() :]
    if "Traceback (most recent call last):" in message:
        unindented = [line for line in lines if not line[0].isspace()]
        text = unindented[-1].strip()
    text = re.sub(r"(\s*SQLSTATE: \w+)+\s*$", "", text)
    return error_class, text


def _query_error(error: Exception, when: str) -> SparkQueryError:
    error_class, text = _describe(error)
    return SparkQueryError(f"Spark {when}: {error_class}: {text}", error_class)


def _watermarks(query) -> dict[int, int | None]:
    """The watermark of each batch id, as the first progress report of that batch gave it."""
    found = {}
    for progress in query.recentProgress:
        text = (progress["eventTime"] or {}).get("watermark")
        found.setdefault(progress["batchId"], None if text is None else parse_timestamp(text))
    return found


def _batch_timestamps(checkpoint: str) -> dict[int, int]:
    """The processing time of each batch: ``batchTimestampMs`` in the checkpoint's ``offsets/<batch id>``
    (line 1 is ``v1``, line 2 the batch's metadata as JSON, then the source offsets)."""
    found = {}
    offsets = os.path.join(checkpoint, "offsets")
    for name in os.listdir(offsets) if os.path.isdir(offsets) else []:
        if name.isdigit():
            with open(os.path.join(offsets, name)) as log:
                lines = log.read().splitlines()
            found[int(name)] = json.loads(lines[1])["batchTimestampMs"]
    return found


def run_query(
    df, output_mode: str, *, query_name: str | None = None, conf: dict | None = None, checkpoint_dir: str | None = None
) -> list[BatchResult]:
    """Run a streaming DataFrame until its input is used up and return one BatchResult per micro-batch.

    ``conf`` holds SQL settings for this query only (e.g. ``ROCKSDB_STATE_STORE``); a fresh temporary
    checkpoint is used and removed unless ``checkpoint_dir`` is given (on a cluster of several machines, give one
    on storage that every executor reaches: executors write the query's state there).

    >>> run_query(scripted_stream(spark, "key STRING", [[{"key": "a"}], []]), "append")   # doctest: +SKIP
    [BatchResult(batch_id=0, watermark=None, rows=[{'key': 'a'}]), BatchResult(batch_id=1, watermark=None, rows=[])]
    """
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    spark = df.sparkSession
    emitted: dict[int, list[dict]] = {}

    failures: list[Exception] = []

    def sink(batch_df, batch_id):
        # The batch's whole plan (source, operators, UDFs) runs here, when its rows are collected; an error is
        # kept so it can be reported as itself rather than as "the foreachBatch function failed".
        try:
            set_batch(batch_id)  # a versioned static table reads its version for this batch (spark/table.py)
            emitted[batch_id] = _collect(batch_df)
        except Exception as error:
            failures.append(error)
            raise

    temporary = checkpoint_dir is None
    checkpoint = tempfile.mkdtemp(prefix="ministream-ckpt-") if temporary else checkpoint_dir
    query = None
    try:
        with session_conf(spark, conf):
            writer = df.writeStream.foreachBatch(sink).outputMode(output_mode).option("checkpointLocation", checkpoint)
            if query_name:
                writer = writer.queryName(query_name)
            try:
                query = writer.start()
            except (PySparkException, Py4JJavaError) as error:
                raise _query_error(error, "refused the query") from None
            try:
                query.processAllAvailable()
            except (PySparkException, Py4JJavaError) as error:
                raise _query_error(failures[0] if failures else error, "failed while running the query") from None
            watermarks = _watermarks(query)
            timestamps = _batch_timestamps(checkpoint)
    finally:
        if query is not None:
            query.stop()
        if temporary:
            shutil.rmtree(checkpoint, ignore_errors=True)
    missing = sorted(set(emitted) - set(watermarks))
    if missing:
        raise SparkQueryError(
            f"no progress report kept for batches {missing}: raise "
            "spark.sql.streaming.numRecentProgressUpdates above the number of batches"
        )
    return [
        BatchResult(batch_id, watermarks[batch_id], emitted[batch_id], timestamps.get(batch_id))
        for batch_id in sorted(emitted)
    ]
