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

:func:`state_after_batches` reads every store of an operator after each batch; ``lessons/state_compare.py`` says
how each kind of operator lays its stores out, and maps ministream's state onto them. A join has four stores
(``storeName``: ``left-keyToNumValues``, ``left-keyWithIndexToValue`` and the right side's), readable together per
side with ``joinSide``; ``transformWithState`` one per state variable (``stateVarName``), its timers with
``readRegisteredTimers``.
"""

from __future__ import annotations

from ministream.core.results import BatchResult
from ministream.spark.session import spark_session


def operators(checkpoint: str, master: str | None = None) -> list[dict]:
    """The stateful operators of a checkpoint (the ``state-metadata`` source), one dict each."""
    spark = spark_session(master)
    return [row.asDict(recursive=True) for row in spark.read.format("state-metadata").load(checkpoint).collect()]


def state_after_batches(
    checkpoint: str, batch_ids, stores: list[dict], convert, operator_id: int = 0, master: str | None = None
) -> list[BatchResult]:
    """The state of one operator after each batch of ``batch_ids``: one ``BatchResult`` per batch (the
    watermark left ``None``: it is the output's, not the state's) whose rows are every store's rows, each read
    with its options (``{}``: the default store; ``{"storeName": ...}``: one of a join's four stores;
    ``{"stateVarName": ...}``: a ``transformWithState`` variable) and turned into a row by
    ``convert(row, options)``, ``row`` being ``{column: value}`` with structs left as Spark's ``Row``."""
    spark = spark_session(master)
    batches = []
    for batch_id in batch_ids:
        rows = []
        for options in stores:
            reader = spark.read.format("statestore").option("batchId", batch_id).option("operatorId", operator_id)
            for name, value in options.items():
                reader = reader.option(name, value)
            rows += [convert(row.asDict(), options) for row in reader.load(checkpoint).collect()]
        batches.append(BatchResult(batch_id, None, rows))
    return batches
