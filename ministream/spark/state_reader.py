"""Spark's state, read back: the state data source on a query's checkpoint location, batch by batch.

Spark versions each stateful operator's state per batch, and reads any version back as a DataFrame:

- ``spark.read.format("state-metadata").load(checkpoint)``: the stateful operators (``operatorId``,
  ``operatorName`` such as ``stateStoreSave``, the store names, partitions, the batches kept);
- ``spark.read.format("statestore").option("batchId", N).load(checkpoint)``: the state after batch ``N``, one row
  per key: ``key`` (a struct of the grouping columns), ``value`` (a struct of the state's columns: for an
  aggregation, its buffer, ``count`` and ``sum`` for a count and a sum), ``partition_id``;
- ``.option("readChangeFeed", True).option("changeStartBatchId", N)``: what each batch changed (``batch_id``,
  ``change_type``...). Measured here: it reads the HDFS-backed store's ``N.delta`` files; on the RocksDB store it
  needs the ``N.changelog`` files of changelog checkpointing
  (``spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled``), and fails without them.

:func:`state_after_batches` flattens each row into ``{**key, **value}``, the shape ministream's state takes
once mapped (``lessons/state_compare.py``).
"""

from __future__ import annotations

from ministream.core.results import BatchResult
from ministream.spark.session import spark_session


def operators(checkpoint: str, master: str | None = None) -> list[dict]:
    """The stateful operators of a checkpoint (the ``state-metadata`` source), one dict each."""
    spark = spark_session(master)
    return [row.asDict(recursive=True) for row in spark.read.format("state-metadata").load(checkpoint).collect()]


def state_after_batches(
    checkpoint: str, batch_ids, operator_id: int = 0, master: str | None = None
) -> list[BatchResult]:
    """The state of one operator after each batch of ``batch_ids``: one ``BatchResult`` per batch whose rows
    are ``{**key, **value}`` (the watermark is left ``None``: it is the output's, not the state's)."""
    spark = spark_session(master)
    batches = []
    for batch_id in batch_ids:
        frame = (
            spark.read.format("statestore")
            .option("batchId", batch_id)
            .option("operatorId", operator_id)
            .load(checkpoint)
        )
        rows = [row.asDict(recursive=True) for row in frame.collect()]
        batches.append(BatchResult(batch_id, None, [{**row["key"], **row["value"]} for row in rows]))
    return batches
