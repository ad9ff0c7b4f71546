"""The processor adapter: the very same ministream ``Processor`` class, run by Spark's ``transformWithState``.

A keyed process function is written once, as a :class:`ministream.operators.process.Processor`. The engine
runs it with its own :class:`~ministream.operators.processor_handle.ProcessorHandle`; this module runs it in
Spark: :func:`processor_twin` wraps it in :class:`ProcessorAdapter`, a PySpark ``StatefulProcessor``, and
gives it a :class:`SparkProcessorHandle`, which has the engine handle's methods and calls Spark's handle:

=========================================  ====================================================================
the processor calls (engine handle)        the adapter calls (Spark's ``StatefulProcessorHandle``)
=========================================  ====================================================================
``get_value_state(name, default, ttl)``    ``getValueState(name, "value BINARY", ttl_ms)``
``get_list_state(name, ttl)``              ``getListState(name, "value BINARY", ttl_ms)``
``get_map_state(name, ttl)``               ``getMapState(name, "key BINARY", "order BIGINT, value BINARY", ...)``
``register_timer`` / ``delete_timer``      ``registerTimer`` / ``deleteTimer``
``list_timers()``                          ``listTimers()``, sorted (earliest first, as the engine lists them)
``delete_if_exists(name)``                 ``deleteIfExists(name)``
=========================================  ====================================================================

**State travels as bytes.** Spark wants a schema for every state variable; a ministream processor keeps any
Python value (a dict of figures, a list of floats...). So each value is pickled into a ``BINARY`` column and
unpickled when read: the processor gets back what it stored, types included (a tuple stays a tuple, an int
an int). A map key is pickled too, and Spark finds an entry by the bytes of its key, so map keys must pickle
to the same bytes whenever they are equal (strings, numbers and tuples of them do). Spark lists a map's
entries in the order of those bytes, the engine in insertion order: each entry carries its insertion
number (``order``), and ``keys()`` / ``items()`` sort by it, so the processor sees the engine's order.
Putting a new key reads the key's whole map once, to number it. A list state's ``add`` / ``add_all`` /
``update`` are Spark's ``appendValue`` / ``appendList`` / ``put``; a ``None`` element, map key or value, or an
empty list, is refused before it is pickled, as the engine refuses it (``state/keyed.py``): pickled, it would
pass Spark's own check, which refuses the same (``ILLEGAL_STATE_STORE_VALUE``).

**Rows and times.** Input rows arrive as Spark ``Row`` objects and are handed to the processor as dicts, as
the engine hands them; ``TIMESTAMP`` values (in rows, in keys, in initial-state rows) become milliseconds
since the epoch, the engine's time. The rows the processor returns are checked against the output schema
(an unknown column is an error naming the step; a missing one is null) and milliseconds in ``TIMESTAMP``
columns become UTC datetimes. A key of one column is that column's value, of several a tuple (the engine's
keys); ``TimerValues`` and ``ExpiredTimerInfo`` are the engine's classes, with Spark's -1 ("no such time")
as ``None``.

**Why the row-based ``transformWithState``** (PySpark 4.1+) and not ``transformWithStateInPandas``: the row
API hands each key's rows as Python ``Row`` objects with Python values, which become exactly the engine's
dicts; the pandas API hands ``pandas.DataFrame`` chunks (cut at ``spark.sql.execution.arrow.maxRecordsPerBatch``
rows, so one key's rows may arrive in several chunks), with numpy types, ``NaN`` for a null number and
integer columns widened to float when they hold nulls. The processor would see other values than in the
engine; with rows it sees the same.

**What the adapter bridges** (each measured on PySpark 4.3, ``tutorials/spark-facts.md``):

- Spark's ``TimerValues`` give a watermark of 0 in a query without one (processing-time mode), the engine
  ``None``: the adapter gives ``None`` when the step's input has no ``withWatermark`` column (it reads the
  column metadata ``spark.watermarkDelayMs``);
- a map's entries: Spark lists them in the order of their encoded keys' bytes (shorter keys first), the
  engine in insertion order: the numbering above gives the engine's order;
- the processor's own attributes live as long as one Spark task (Spark deserializes the processor once per
  partition and batch); the adapter copies it afresh in every ``init``, as the engine does per batch.

**What it cannot map:**

- a watermark set only on another branch of the query (a join's other side) is not seen in the step's
  input: the processor then gets 0 in processing-time mode where the engine gives the query's watermark;
- Spark does not promise the order of one key's rows within a batch (the engine hands them in arrival
  order): a processor whose result depends on that order may differ;
- map keys that are equal in Python but pickle to different bytes (``0.0`` and ``-0.0``, ``1`` and ``1.0``,
  dicts in another insertion order, sets) are one key in the engine and two in Spark;
- a refusal comes from Spark's handle with Spark's error class (``INVALID_HANDLE_STATE`` for a state variable
  created outside ``init``), not with the engine's sentence; the output schema's types must be those of the
  processor's values (the engine never checks them); a state access costs a pickle, a new map key a read of
  the whole map;
- the processor's code runs in Spark's Python workers, which import ``ministream`` (the adapter and the
  ``Processor`` base class live in it): on a cluster, install ministream on the workers. A processor class
  defined outside the ``ministream`` package (a test's, a notebook's) is shipped by value.

>>> import attrs
>>> from ministream import CollectingSink, Dataflow, ScriptedSource
>>> from ministream.operators.process import Processor
>>> class Counter(Processor):
...     def init(self, handle):
...         self.count = handle.get_value_state("count", default=0)
...     def handle_input_rows(self, key, rows, timer_values):
...         self.count.update(self.count.value() + len(rows))
...         return [{"key": key, "count": self.count.value()}]
>>> flow = Dataflow("counter")
>>> flow.source("events", ScriptedSource([[{"key": "a"}]])).key_by("key").process(
...     "count", Counter(), output_schema="key STRING, count BIGINT").sink("output", CollectingSink())
>>> spec = flow.step("count").spec
>>> spec.output_schema, spark_time_mode(spec.time_mode)
('key STRING, count BIGINT', 'None')
>>> counts = processor_twin(events_df, spec, step_name="count")      # doctest: +SKIP
>>> processor_twin(None, attrs.evolve(spec, output_schema=None), step_name="count")
Traceback (most recent call last):
...
ministream.errors.PipelineError: step 'count': Spark needs the columns of the rows Counter returns: declare them, e.g. process(..., output_schema="key STRING, count BIGINT")
"""

from __future__ import annotations

import copy
import datetime
import pickle
import sys
from typing import Any

from pyspark import cloudpickle
from pyspark.sql import Row
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import (
    ArrayType,
    MapType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ministream.core.steps import ProcessSpec
from ministream.errors import PipelineError
from ministream.operators.process import ExpiredTimerInfo, Processor, TimerValues
from ministream.state.keyed import checked_list, refuse_null
from ministream.time.units import from_datetime, parse_duration, to_datetime

VALUE_SCHEMA = "value BINARY"
"""The schema of a value state and of a list state's elements: one pickled value."""
MAP_KEY_SCHEMA = "key BINARY"
"""The schema of a map state's keys: one pickled key."""
MAP_VALUE_SCHEMA = "order BIGINT, value BINARY"
"""The schema of a map state's values: the entry's insertion number, and the pickled value."""

WATERMARK_METADATA = "spark.watermarkDelayMs"
"""The metadata key ``withWatermark`` puts on its event-time column (its value: the delay in ms)."""

SPARK_TIME_MODES = {"none": "None", "eventtime": "EventTime", "processingtime": "ProcessingTime"}
"""Spark's name of each time mode, by the mode's name in lower case without underscores."""


def spark_time_mode(time_mode: str) -> str:
    """Spark's ``timeMode`` for a time mode as the engine (``"event_time"``) or Spark (``"EventTime"``,
    ``"eventTime"``) writes it.

    >>> spark_time_mode("event_time"), spark_time_mode("processingTime"), spark_time_mode("none")
    ('EventTime', 'ProcessingTime', 'None')
    """
    found = SPARK_TIME_MODES.get(time_mode.replace("_", "").lower())
    if found is None:
        raise PipelineError(f"time mode {time_mode!r}: use 'none', 'event_time' or 'processing_time'")
    return found


def _ms(value):
    """A value from Spark as the engine has it: datetimes as ms, rows as dicts, lists as lists.

    PySpark's row-based worker reads each value from Arrow (``.as_py()``): a ``TIMESTAMP`` comes as a datetime
    in the session's time zone, a ``TIMESTAMP_NTZ`` as a naive one, read here as UTC.
    """
    if isinstance(value, datetime.datetime):
        return from_datetime(value)
    if isinstance(value, Row):
        return {name: _ms(item) for name, item in value.asDict().items()}
    if isinstance(value, dict):
        return {name: _ms(item) for name, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_ms(item) for item in value)
    return value


def _from_spark(value, data_type):
    """A value of a column of ``data_type`` as the engine has it: :func:`_ms`, guided by the type where the value
    alone does not say what it was. A ``MAP`` reaches a Python processor through Arrow as a list of (key, value)
    pairs, and becomes the dict the engine hands its processor; inside arrays, maps and structs too.

    >>> from pyspark.sql.types import ArrayType, DoubleType, IntegerType, MapType, StringType, StructField
    >>> kind = StructType([StructField("k", StringType()), StructField("m", MapType(DoubleType(), IntegerType())),
    ...                    StructField("a", ArrayType(MapType(StringType(), IntegerType())))])
    >>> _from_spark(Row(k="init_1", m=[(40.0, 1)], a=[[("x", 2)]]), kind)
    {'k': 'init_1', 'm': {40.0: 1}, 'a': [{'x': 2}]}
    """
    if value is None:
        return None
    if isinstance(data_type, MapType):
        pairs = value.items() if isinstance(value, dict) else value
        return {_from_spark(k, data_type.keyType): _from_spark(v, data_type.valueType) for k, v in pairs}
    if isinstance(data_type, ArrayType):
        return [_from_spark(item, data_type.elementType) for item in value]
    if isinstance(data_type, StructType):
        items = value.asDict() if isinstance(value, Row) else value if isinstance(value, dict) else None
        if items is None:
            items = dict(zip(data_type.names, value))
        return {field.name: _from_spark(items.get(field.name), field.dataType) for field in data_type.fields}
    return _ms(value)


def _engine_key(key: tuple):
    """Spark's grouping key (a tuple) as the engine's: the value of a one-column key, a tuple otherwise."""
    values = tuple(_ms(value) for value in key)
    return values[0] if len(values) == 1 else values


def _timer_values(timer_values, watermarked: bool) -> TimerValues:
    """Spark's ``TimerValues`` as the engine's: -1 (Spark's "no such time") is ``None``, and so is the
    watermark of a query without one (Spark gives 0 there)."""
    now = timer_values.getCurrentProcessingTimeInMs()
    watermark = timer_values.getCurrentWatermarkInMs()
    return TimerValues(None if now < 0 else now, None if watermark < 0 or not watermarked else watermark)


def _to_spark(value, data_type):
    """An output value for a column of ``data_type``: ms in a timestamp column become a UTC datetime."""
    if value is None:
        return None
    if isinstance(data_type, (TimestampType, TimestampNTZType)) and isinstance(value, int):
        moment = to_datetime(value)
        return moment.replace(tzinfo=None) if isinstance(data_type, TimestampNTZType) else moment
    if isinstance(data_type, ArrayType):
        return [_to_spark(item, data_type.elementType) for item in value]
    if isinstance(data_type, MapType):
        return {_to_spark(k, data_type.keyType): _to_spark(v, data_type.valueType) for k, v in value.items()}
    if isinstance(data_type, StructType):
        items = value if isinstance(value, dict) else dict(zip(data_type.names, value))
        return Row(**{field.name: _to_spark(items.get(field.name), field.dataType) for field in data_type.fields})
    return value


def to_output_row(row: dict, schema: StructType, step_name: str) -> Row:
    """One row a processor returned, as the ``Row`` Spark's output schema wants.

    >>> from pyspark.sql.types import LongType, StructField
    >>> schema = StructType([StructField("key", LongType()), StructField("time", TimestampType())])
    >>> to_output_row({"key": 1, "time": 1500}, schema, "step")
    Row(key=1, time=datetime.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=datetime.timezone.utc))
    >>> to_output_row({"key": 1, "other": 2}, schema, "step")
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: step 'step': the processor returned column 'other', which the output schema (key, time) does not have: {'key': 1, 'other': 2}
    """
    unknown = [name for name in row if name not in schema.names]
    if unknown:
        raise PipelineError(
            f"step {step_name!r}: the processor returned column {unknown[0]!r}, which the output schema "
            f"({', '.join(schema.names)}) does not have: {row}"
        )
    return Row(**{field.name: _to_spark(row.get(field.name), field.dataType) for field in schema.fields})


# -- state: the engine's state variables over Spark's, values pickled ------------------------------------------


def _dump(value) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _load(stored) -> Any:
    return pickle.loads(bytes(stored))


class _SparkState:
    """What every state variable has: ``clear()`` and ``exists()``, on Spark's state variable, and its name
    (named in the engine's errors)."""

    def __init__(self, state, name: str = ""):
        self.state = state
        self.name = name

    def clear(self) -> None:
        """Forget the current key's value."""
        self.state.clear()

    def exists(self) -> bool:
        """Whether the current key has a value."""
        return self.state.exists()


class SparkValueState(_SparkState):
    """``ValueState`` over Spark's value state: one pickled value per key, ``default`` when there is none."""

    def __init__(self, state, name: str = "", default=None):
        super().__init__(state, name)
        self.default = default

    def value(self):
        """The current key's value, or the default when it has none."""
        stored = self.state.get()
        return self.default if stored is None else _load(stored[0])

    def update(self, value) -> None:
        """Replace the current key's value."""
        self.state.update((_dump(value),))


class SparkListState(_SparkState):
    """``ListState`` over Spark's list state: each element pickled."""

    def get(self) -> list:
        """The current key's list (empty when it has none)."""
        return [_load(item[0]) for item in self.state.get()] if self.state.exists() else []

    def add(self, value) -> None:
        """Append one value to the current key's list."""
        refuse_null(self.name, value, "list element")  # pickled, a None would pass Spark's own check
        self.state.appendValue((_dump(value),))

    def add_all(self, values) -> None:
        """Append several values to the current key's list (refused as the engine refuses them)."""
        self.state.appendList([(_dump(value),) for value in checked_list(self.name, values)])

    def update(self, values) -> None:
        """Replace the current key's list (refused as the engine refuses it: None, empty, or with a None)."""
        self.state.put([(_dump(value),) for value in checked_list(self.name, values)])


class SparkMapState(_SparkState):
    """``MapState`` over Spark's map state: keys and values pickled, each entry with its insertion number,
    so that ``keys()`` and ``items()`` come in insertion order as in the engine."""

    def _entries(self) -> list[tuple[int, Any, Any]]:
        """``[(insertion number, key, value)]`` of the current key's map, in insertion order."""
        if not self.state.exists():
            return []
        return sorted((stored[0], _load(key[0]), _load(stored[1])) for key, stored in self.state.iterator())

    def _next_order(self) -> int:
        """The insertion number of a new entry: one more than the last one's (reads the whole map)."""
        return max((order for order, _, _ in self._entries()), default=-1) + 1

    def get(self, map_key, default=None):
        """The value under ``map_key`` in the current key's map."""
        refuse_null(self.name, map_key, "map key")
        stored = self.state.getValue((_dump(map_key),))
        return default if stored is None else _load(stored[1])

    def put(self, map_key, value) -> None:
        """Set ``map_key``: an existing entry keeps its place, a new one goes last."""
        refuse_null(self.name, map_key, "map key")
        refuse_null(self.name, value, "map value")
        packed = (_dump(map_key),)
        stored = self.state.getValue(packed)
        order = stored[0] if stored is not None else self._next_order()
        self.state.updateValue(packed, (order, _dump(value)))

    def contains(self, map_key) -> bool:
        """Whether the current key's map has ``map_key``."""
        refuse_null(self.name, map_key, "map key")
        return self.state.containsKey((_dump(map_key),))

    def remove(self, map_key) -> None:
        """Delete ``map_key`` from the current key's map."""
        refuse_null(self.name, map_key, "map key")
        self.state.removeKey((_dump(map_key),))

    def keys(self) -> list:
        """The map keys of the current key, in insertion order."""
        return [key for _, key, _ in self._entries()]

    def items(self) -> list[tuple]:
        """The (map key, value) pairs of the current key, in insertion order."""
        return [(key, value) for _, key, value in self._entries()]


class SparkProcessorHandle:
    """The engine's processor handle, over Spark's ``StatefulProcessorHandle`` (the table of the module
    docstring): what a :class:`~ministream.operators.process.Processor` gets in ``init`` when Spark runs it.
    Spark scopes every state variable and timer to the current key, as the engine does; ``ttl`` is a
    duration (``"30 seconds"`` or ms) of processing time, passed to Spark as ``ttlDurationMs``."""

    def __init__(self, handle):
        self.handle = handle

    @staticmethod
    def _ttl(ttl) -> int | None:
        return None if ttl is None else parse_duration(ttl)

    def get_value_state(self, name: str, default=None, ttl=None) -> SparkValueState:
        """One value per key (``ttl``: it expires that long after its last update)."""
        return SparkValueState(self.handle.getValueState(name, VALUE_SCHEMA, self._ttl(ttl)), name, default)

    def get_list_state(self, name: str, ttl=None) -> SparkListState:
        """A list per key (``ttl``: each element expires that long after it was written)."""
        return SparkListState(self.handle.getListState(name, VALUE_SCHEMA, self._ttl(ttl)), name)

    def get_map_state(self, name: str, ttl=None) -> SparkMapState:
        """A dict per key (``ttl``: each entry expires that long after it was last put)."""
        return SparkMapState(self.handle.getMapState(name, MAP_KEY_SCHEMA, MAP_VALUE_SCHEMA, self._ttl(ttl)), name)

    def delete_if_exists(self, name: str) -> None:
        """Drop state variable ``name`` for every key, if the query had one."""
        self.handle.deleteIfExists(name)

    def register_timer(self, expiry_time: int) -> None:
        """A timer for the current key at ``expiry_time`` (ms, in the time mode's clock)."""
        self.handle.registerTimer(expiry_time)

    def delete_timer(self, expiry_time: int) -> None:
        """Cancel the current key's timer at ``expiry_time``."""
        self.handle.deleteTimer(expiry_time)

    def list_timers(self) -> list[int]:
        """The expiry times of the current key's timers, earliest first."""
        return sorted(self.handle.listTimers())


# -- the processor ---------------------------------------------------------------------------------------------


class ProcessorAdapter(StatefulProcessor):
    """A PySpark ``StatefulProcessor`` that runs a ministream :class:`Processor`: every call of Spark's is
    passed on with the engine's values (rows as dicts, times in ms, the engine's ``TimerValues``), and the
    rows the processor returns go back as ``Row`` objects of ``schema``.

    Args:
        processor: the ministream processor (a template: ``init`` runs on a fresh copy of it).
        schema: the output schema (a ``StructType``). step_name: for error messages. watermarked: whether the
        step's input has a watermark (without one, the processor sees the engine's ``None``, not Spark's 0).
        input_schema, initial_schema: the schemas of the input rows and of the initial-state rows, which say
        how to read what Spark hands over (:func:`_from_spark`: a map as a dict).
    """

    def __init__(
        self,
        processor: Processor,
        schema: StructType,
        step_name: str,
        watermarked: bool = True,
        input_schema: StructType | None = None,
        initial_schema: StructType | None = None,
    ):
        self.template = processor
        self.schema = schema
        self.step_name = step_name
        self.watermarked = watermarked
        self.input_schema = input_schema
        self.initial_schema = initial_schema
        self.processor: Processor | None = None

    def _plain(self, row, schema: StructType | None):
        """A row from Spark as the engine's dict: read by its schema when it is known."""
        return _ms(row) if schema is None else _from_spark(row, schema)

    def _rows(self, result) -> list[Row]:
        # Eagerly, as the engine does: a generator that reads or writes state runs under the current key.
        rows = list(result) if result is not None else []
        return [to_output_row(row, self.schema, self.step_name) for row in rows]

    def init(self, handle) -> None:
        self.processor = copy.deepcopy(self.template)
        self.processor.init(SparkProcessorHandle(handle))

    def handleInputRows(self, key, rows, timerValues):
        assert self.processor is not None
        plain = [self._plain(row, self.input_schema) for row in rows]
        values = _timer_values(timerValues, self.watermarked)
        result = self.processor.handle_input_rows(_engine_key(key), plain, values)
        return iter(self._rows(result))

    # Spark calls this one with keyword arguments: the parameters keep Spark's names.
    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        assert self.processor is not None
        info = ExpiredTimerInfo(expiredTimerInfo.getExpiryTimeInMs())
        values = _timer_values(timerValues, self.watermarked)
        result = self.processor.handle_expired_timer(_engine_key(key), values, info)
        return iter(self._rows(result))

    def handleInitialState(self, key, initialState, timerValues) -> None:
        assert self.processor is not None
        values = _timer_values(timerValues, self.watermarked)
        self.processor.handle_initial_state(_engine_key(key), self._plain(initialState, self.initial_schema), values)

    def close(self) -> None:
        if self.processor is not None:
            self.processor.close()


def output_schema_of(spec: ProcessSpec, step_name: str, override=None):
    """The declared schema of a process step's output rows: ``override``, else the spec's ``output_schema``,
    else the processor's class attribute ``output_schema``; none is a one-line error naming the step."""
    schema = override or spec.output_schema or getattr(spec.processor, "output_schema", None)
    if schema is None:
        raise PipelineError(
            f"step {step_name!r}: Spark needs the columns of the rows {type(spec.processor).__name__} returns: "
            'declare them, e.g. process(..., output_schema="key STRING, count BIGINT")'
        )
    return schema


def processor_twin(
    frame,
    spec: ProcessSpec,
    *,
    step_name: str = "process",
    key_columns: list[str] | None = None,
    output_schema: str | StructType | None = None,
    time_mode: str | None = None,
    output_mode: str | None = None,
    initial_state=None,
):
    """The process step ``spec`` in Spark: ``frame.groupBy(key columns).transformWithState(...)`` running the
    step's own processor through :class:`ProcessorAdapter`.

    Every setting comes from the spec (key columns, time mode, output mode, initial state, output event-time
    column, output schema); a keyword given here wins. ``frame`` is the step's input as a streaming
    DataFrame, watermarked as the pipeline watermarks it; ``initial_state`` is a DataFrame with the key
    columns (the spec's rows, with types Spark infers from them, otherwise). Spark's ``transformWithState``
    needs the RocksDB state store (``ministream.spark.ROCKSDB_STATE_STORE``).

    >>> counts = processor_twin(events_df, flow.step("count").spec, step_name="count")   # doctest: +SKIP
    """
    schema = output_schema_of(spec, step_name, output_schema)
    spark = frame.sparkSession
    if isinstance(schema, str):
        schema = spark.createDataFrame([], schema).schema
    keys = list(key_columns or spec.key_columns)
    module = type(spec.processor).__module__
    if not module.startswith("ministream.") and module in sys.modules:
        # A processor written outside the package: the workers cannot import its module, so it travels by value.
        cloudpickle.register_pickle_by_value(sys.modules[module])
    settings: dict[str, Any] = {}
    if initial_state is None and spec.initial_state is not None:
        initial_state = spark.createDataFrame([dict(row) for row in spec.initial_state])
    if initial_state is not None:
        settings["initialState"] = initial_state.groupBy(*keys)
    if spec.event_time_column is not None:
        settings["eventTimeColumnName"] = spec.event_time_column
    # withWatermark marks its column in the schema: the one sign, on a DataFrame, that the query has a watermark.
    watermarked = any(WATERMARK_METADATA in field.metadata for field in frame.schema.fields)
    return frame.groupBy(*keys).transformWithState(
        ProcessorAdapter(
            spec.processor,
            schema,
            step_name,
            watermarked,
            input_schema=frame.schema,
            initial_schema=None if initial_state is None else initial_state.schema,
        ),
        schema,
        (output_mode or spec.output_mode or "update").capitalize(),
        spark_time_mode(time_mode or spec.time_mode),
        **settings,
    )


__all__ = [
    "ProcessorAdapter",
    "SparkListState",
    "SparkMapState",
    "SparkProcessorHandle",
    "SparkValueState",
    "output_schema_of",
    "processor_twin",
    "spark_time_mode",
    "to_output_row",
]
