"""A static table that changes between micro-batches, for Spark's stream-static joins.

A stream-static join (``stream.join(static_df, "key")``) reads its static side again in every micro-batch: a
table that someone updates between two batches is joined in its new version from the next batch on, and the
rows already joined are not joined again. To show that batch for batch, ``versioned_table`` gives a batch
DataFrame (the Python data source ``ministream_table``) whose rows are the version of the table in force at
the micro-batch that reads it: ``run_query`` writes the id of the batch it is about to collect into a *batch
clock* file before the batch's plan runs, and the reader reads the clock when Spark reads the table.

The clock is a file on the driver's disk, so this works on a local master (the workshop, the tests), where
Spark's Python workers see the same files.

>>> df = versioned_table(spark, "driver STRING, city STRING",
...                      {0: [{"driver": "d1", "city": "Lyon"}], 2: [{"driver": "d1", "city": "Nice"}]})  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import tempfile
import weakref

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceReader
from pyspark.sql.types import StructType

from ministream.spark.source import _converter

TABLE_SOURCE = "ministream_table"
_clock_path: str | None = None
_registered: weakref.WeakSet = weakref.WeakSet()

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def version_at(versions: dict, batch_id: int) -> list[dict]:
    """The rows in force at ``batch_id``: the version with the largest start batch at or before it.

    >>> version_at({0: ["old"], 2: ["new"]}, 1), version_at({0: ["old"], 2: ["new"]}, 5)
    (['old'], ['new'])
    """
    starts = [start for start in versions if int(start) <= batch_id]
    return versions[max(starts, key=int)] if starts else []


def batch_clock() -> str:
    """The batch clock's file (made at first use, removed when the process exits)."""
    global _clock_path
    if _clock_path is None:
        handle, _clock_path = tempfile.mkstemp(prefix="ministream-batch-clock-")
        os.close(handle)
        atexit.register(os.remove, _clock_path)
        set_batch(0)
    return _clock_path


def set_batch(batch_id: int) -> None:
    """Say which micro-batch is about to run (``run_query`` calls it for every batch); a no-op until a
    versioned table exists."""
    if _clock_path is not None:
        with open(_clock_path, "w") as clock:
            clock.write(str(batch_id))


class VersionedTableReader(DataSourceReader):
    """Reads the clock, then yields the rows of the version in force at that batch."""

    def __init__(self, schema: StructType, options: dict):
        self.versions = json.loads(options["versions"])
        self.clock = options["clock"]
        self.columns = [(field.name, _converter(field.dataType)) for field in schema.fields]

    def read(self, partition):
        with open(self.clock) as clock:
            batch_id = int(clock.read() or 0)
        for row in version_at(self.versions, batch_id):
            yield tuple(convert(row.get(name)) for name, convert in self.columns)


class VersionedTableSource(DataSource):
    """The ``ministream_table`` batch source; options ``versions`` (JSON ``{start batch: rows}``), ``schema``
    and ``clock``."""

    @classmethod
    def name(cls) -> str:
        return TABLE_SOURCE

    def schema(self) -> str:
        return self.options["schema"]

    def reader(self, schema: StructType) -> VersionedTableReader:
        return VersionedTableReader(schema, self.options)


def versioned_table(spark, schema: str, versions: dict[int, list[dict]]):
    """A batch DataFrame whose rows are ``versions[k]`` from micro-batch ``k`` on (until the next version):
    a table updated between batches, as a stream-static join sees it."""
    if spark not in _registered:
        spark.dataSource.register(VersionedTableSource)
        _registered.add(spark)
    return (
        spark.read.format(TABLE_SOURCE)
        .option("schema", schema)
        .option("versions", json.dumps({str(k): rows for k, rows in versions.items()}))
        .option("clock", batch_clock())
        .load()
    )
