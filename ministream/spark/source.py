"""A scripted streaming source for Spark: micro-batch k holds exactly scripted batch k.

Two sources give that. On a local master (the workshop, the tests) the script is written as one Parquet file
per scripted batch and read by Spark's own file source with ``maxFilesPerTrigger=1``: each micro-batch takes
the next file (files are taken oldest first, and file k is given modification time base + k seconds), an
empty file still moves the offset, and everything runs in the JVM. On a cluster, whose executors do not see
the driver's temporary files, the Python streaming data source below is used instead; it gives the same
batches but costs a Python process per input per query, started before the first batch, and a Python task per
batch (``tutorials/spark-facts.md``, Costs).

Spark decides what goes into a micro-batch by asking each source for its *latest offset*: the batch reads
everything between the previous batch's end offset and that one. Ordinary sources (files, Kafka) answer
"everything that has arrived", so batch boundaries depend on timing. The Python source counts its offset in
scripted batches and answers ``start + 1`` every time it is asked, so each micro-batch reads exactly one
scripted batch (an empty scripted batch still moves the offset, so it still runs as a batch). A query with
two scripted inputs asks both once per micro-batch, so they advance in lockstep.

The script travels inside the source's options as JSON, so the executors that read it need no shared files:
the same code runs on a cluster. Timestamps are int milliseconds (UTC) in the script and are turned into
timezone-aware UTC datetimes before Spark sees them (a naive datetime would be read in local time).

>>> df = scripted_stream(spark, "key STRING, ts TIMESTAMP",
...                      [[{"key": "a", "ts": 1000}], [], [{"key": "b", "ts": 2500}]])   # doctest: +SKIP
>>> df.isStreaming                                                                      # doctest: +SKIP
True
"""

from __future__ import annotations

import atexit
import datetime as _dt
import json
import os
import shutil
import sys
import tempfile
import weakref

from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import DoubleType, FloatType, StructType, TimestampNTZType, TimestampType

SOURCE_NAME = "ministream_script"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_registered = weakref.WeakSet()

# Ship this module's classes to Spark's Python workers by value: a cluster's executors need no ministream.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _converter(data_type):
    """How a script value becomes the Python value Spark expects for a column of this type."""
    if isinstance(data_type, TimestampType):
        return lambda ms: None if ms is None else _EPOCH + _dt.timedelta(milliseconds=ms)
    if isinstance(data_type, TimestampNTZType):
        return lambda ms: None if ms is None else _EPOCH_NAIVE + _dt.timedelta(milliseconds=ms)
    if isinstance(data_type, (DoubleType, FloatType)):
        return lambda x: None if x is None else float(x)
    return lambda x: x


def _arrow_converter(data_type):
    """How a script value becomes the value written to Parquet: timestamps as exact int microseconds."""
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return lambda ms: None if ms is None else ms * 1000
    return _converter(data_type)


class ScriptPartition(InputPartition):
    """The scripted batches ``first`` (inclusive) to ``end`` (exclusive) that one Spark task reads."""

    def __init__(self, first: int, end: int):
        super().__init__((first, end))
        self.first, self.end = first, end


class ScriptStreamReader(DataSourceStreamReader):
    """Offsets are ``{"batch": k}``: the number of scripted batches handed to Spark so far."""

    def __init__(self, schema: StructType, options: dict):
        self.batches = json.loads(options["script"])
        self.columns = [(field.name, _converter(field.dataType)) for field in schema.fields]

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict, limit) -> dict:
        # The heart of the source: one more scripted batch per micro-batch, never more.
        return {"batch": min(start["batch"] + 1, len(self.batches))}

    def partitions(self, start: dict, end: dict):
        if end["batch"] <= start["batch"]:
            return []
        return [ScriptPartition(start["batch"], end["batch"])]

    def read(self, partition: ScriptPartition):
        for k in range(partition.first, partition.end):
            for row in self.batches[k]:
                yield tuple(convert(row.get(name)) for name, convert in self.columns)

    def commit(self, end: dict) -> None:
        pass  # the script is immutable: nothing to release


class ScriptDataSource(DataSource):
    """The ``ministream_script`` streaming source; options ``script`` (JSON list of batches) and ``schema``."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> str:
        return self.options["schema"]

    def streamReader(self, schema: StructType) -> ScriptStreamReader:
        return ScriptStreamReader(schema, self.options)


def register_source(spark) -> None:
    """Register the ``ministream_script`` source with a session (done once per session).

    >>> register_source(spark)      # doctest: +SKIP
    """
    if spark not in _registered:
        spark.dataSource.register(ScriptDataSource)
        _registered.add(spark)


def _check_script(schema: StructType, batches) -> None:
    names = {field.name: field.dataType for field in schema.fields}
    if not isinstance(batches, list) or not all(isinstance(batch, list) for batch in batches):
        raise TypeError("a script is a list of batches, each a list of row dicts")
    for k, batch in enumerate(batches):
        for row in batch:
            unknown = set(row) - set(names)
            if unknown:
                raise ValueError(f"batch {k}: columns {sorted(unknown)} are not in the schema {sorted(names)}")
            for name, value in row.items():
                if (
                    isinstance(names[name], (TimestampType, TimestampNTZType))
                    and value is not None
                    and (not isinstance(value, int) or isinstance(value, bool))
                ):
                    raise TypeError(
                        f"batch {k}: column {name!r} is a timestamp: give int milliseconds "
                        f"since the epoch (UTC), not {value!r}"
                    )


_script_root = None


def _script_folder() -> str:
    """A new folder for one script's files, under a temporary folder removed when the process exits (a query
    may run, or restart from its checkpoint, long after ``scripted_stream`` returned)."""
    global _script_root
    if _script_root is None:
        _script_root = tempfile.mkdtemp(prefix="ministream-scripts-")
        atexit.register(shutil.rmtree, _script_root, True)
    return tempfile.mkdtemp(dir=_script_root)


def write_script_files(schema: StructType, batches, folder: str) -> None:
    """Write scripted batch k as ``folder/batch-<k>.parquet`` with modification time base + k seconds, so that
    Spark's file source, taking the oldest unread file first, reads them in script order.

    >>> from pyspark.sql.types import StringType, StructField
    >>> folder = tempfile.mkdtemp()
    >>> write_script_files(StructType([StructField("key", StringType()), StructField("ts", TimestampType())]),
    ...                    [[{"key": "a", "ts": 1_500}, {"key": "b", "ts": 2_000}], []], folder)
    >>> import pyarrow.parquet as pq
    >>> [pq.read_metadata(os.path.join(folder, name)).num_rows for name in sorted(os.listdir(folder))]
    [2, 0]
    >>> pq.read_table(os.path.join(folder, "batch-000000.parquet")).column("ts").cast("int64").to_pylist()
    [1500000, 2000000]
    >>> shutil.rmtree(folder)
    """
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    columns = [(field.name, _arrow_converter(field.dataType)) for field in schema.fields]
    base = int(_dt.datetime.now().timestamp()) - len(batches)
    for k, batch in enumerate(batches):
        arrays = [
            pa.array([convert(row.get(name)) for row in batch], arrow_field.type)
            for (name, convert), arrow_field in zip(columns, arrow_schema)
        ]
        path = os.path.join(folder, f"batch-{k:06d}.parquet")
        pq.write_table(pa.Table.from_arrays(arrays, schema=arrow_schema), path)
        os.utime(path, (base + k, base + k))


def _is_local(spark) -> bool:
    return spark.sparkContext.master.startswith("local")


def scripted_stream(spark, schema: str, batches: list[list[dict]], source: str = "auto"):
    """A streaming DataFrame whose micro-batch k holds exactly the rows of ``batches[k]``.

    ``schema`` is a DDL string; timestamp columns hold int milliseconds since the epoch (UTC) in the rows.
    On a local master the script is read from Parquet files by Spark's file source, one file per micro-batch;
    on a cluster by the Python data source ``ministream_script`` (see the module docstring). ``source``:
    ``"auto"`` (that choice), ``"files"`` or ``"python"`` (either, on any master: the tests check that both
    give the same batches; the Python source keeps no log under the checkpoint's ``sources/`` and its offsets
    read ``{"batch": k}``).

    >>> df = scripted_stream(spark, "key STRING, ts TIMESTAMP, value DOUBLE",
    ...                      [[{"key": "a", "ts": 1_000, "value": 1.0}], []])   # doctest: +SKIP
    """
    if source not in ("auto", "files", "python"):
        raise ValueError(f"source is 'auto', 'files' or 'python', not {source!r}")
    if source == "files" or (source == "auto" and _is_local(spark)):
        folder = _script_folder()
        df = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(folder)
        _check_script(df.schema, batches)
        write_script_files(df.schema, batches, folder)
        return df
    register_source(spark)
    df = (
        spark.readStream.format(SOURCE_NAME)
        .schema(schema)
        .option("schema", schema)
        .option("script", json.dumps(batches))
        .load()
    )
    _check_script(df.schema, batches)
    return df
