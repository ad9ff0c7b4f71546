"""The Spark side of every lesson: real Structured Streaming code, run batch for batch against a script.

``spark_session()`` gives the shared session, ``scripted_stream()`` a streaming DataFrame whose micro-batch k
is exactly scripted batch k, and ``run_query()`` runs a query to the end and returns one
``BatchResult(batch_id, watermark, rows)`` per micro-batch, the same shape ministream produces.

>>> from ministream.spark import spark_session, scripted_stream, run_query     # doctest: +SKIP
>>> spark = spark_session()                                                     # doctest: +SKIP
>>> df = scripted_stream(spark, "key STRING", [[{"key": "a"}, {"key": "a"}]])   # doctest: +SKIP
>>> run_query(df.groupBy("key").count(), "update")                              # doctest: +SKIP
[BatchResult(batch_id=0, watermark=None, rows=[{'key': 'a', 'count': 2}])]
"""

from ministream.spark.collect import SparkQueryError, run_query
from ministream.spark.session import (
    ROCKSDB_STATE_STORE,
    SparkUnavailableError,
    session_conf,
    spark_session,
    stop_session,
)
from ministream.spark.source import scripted_stream

__all__ = [
    "ROCKSDB_STATE_STORE",
    "SparkQueryError",
    "SparkUnavailableError",
    "run_query",
    "scripted_stream",
    "session_conf",
    "spark_session",
    "stop_session",
]
