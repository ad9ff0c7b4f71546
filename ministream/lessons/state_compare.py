"""The state diff: a lesson's keyed state after every batch, in ministream and in Spark, compared row for row.

Comparing outputs says that two engines emitted the same rows; comparing the state says they *kept* the same
thing, batch by batch, which is where a wrong eviction or a wrong merge shows first. ministream's side is a
:class:`~ministream.models.state_history.StateHistory`; Spark's is its state data source on the twin's checkpoint
(``spark/state_reader.py``). The two engines lay state out differently, so each kind of stateful step maps its
tables onto Spark's *stores*, and both sides become rows ``{"store", "key", "value"}`` (tuples of plain values,
times in ms):

- a running aggregate (``AggregateSpec``): ministream keeps ``{key: [accumulator, ...]}``; Spark one row per
  group, ``key`` = the grouping columns, ``value`` = the aggregation buffer. The accumulators flattened are the
  buffer: ``count`` is ``[n]``, ``sum``, ``min`` and ``max`` ``[x]``, ``avg`` ``[sum, count]`` (a ministream
  ``Mean`` keeps the pair ``(sum, count)``);
- a window aggregate (``WindowSpec``): ministream ``{key: {(start, end): accumulators}}``; Spark's key is the
  grouping columns and the ``window`` struct, so a row is ``key = (key..., start, end)``;
- a session window: Spark keys a session by its start, ``key = (key..., sessionStartTime)``, and keeps the
  grouping columns and the ``session_window`` struct in the value too: ``value = (key..., start, end, buffer...)``;
- deduplication (``DedupSpec``): ministream ``{key: None}`` (or the key's expiry, within the watermark); Spark
  a row per key with a ``__dummy__`` null value (or ``expiresAtMicros``);
- a stream-stream join (``JoinSpec``): ministream keeps, per side, ``{key: [rows, matched]}`` (parallel lists); Spark four
  stores, per side ``<side>-keyToNumValues`` (``key`` -> how many rows) and ``<side>-keyWithIndexToValue``
  (``(key, index)`` -> the row and its ``matched`` flag). The diff maps ministream's lists onto both: the count is
  the list's length, and each row of the list is a ``keyWithIndexToValue`` row. The index is left out: Spark
  fills the hole a removed row leaves with its last row, so the order within a key differs, not the rows;
- ``transformWithState`` (``ProcessSpec``): each state variable is a store (``stateVarName``): a value state
  ``key -> value``, a map state ``(key, map key) -> value`` (one row per entry), a list state ``key -> element``
  (one row per element). A value with a time-to-live is ``(value, expires at)`` in ministream
  (``state/ttl.py``) and ``{value, ttlExpirationMs}`` in Spark: the same, once Spark's processing times are
  replayed (:func:`both_states`).

What Spark's reader cannot give the diff: the registered timers of ``transformWithState`` are read with
``readRegisteredTimers``, not by name (``$eventTimers_keyToTimestamp`` is refused), and ministream's timers live
outside the tables (not compared); the change feed (``readChangeFeed``) is for the stores of the
default column family only (aggregates, windows, dedup) and needs changelog checkpointing on RocksDB.
"""

from __future__ import annotations

import datetime
import tempfile

from ministream.core.compare import Comparison, compare_batches
from ministream.core.results import BatchResult
from ministream.core.steps import AggregateSpec, DedupSpec, JoinSpec, ProcessSpec, WindowSpec
from ministream.errors import PipelineError
from ministream.lessons.lesson import Lesson
from ministream.models.state_history import StateHistory
from ministream.operators.aggregate import key_columns_of
from ministream.time.windows import Session

MAPPED = (
    "running-aggregation",
    "tumbling-window",
    "sliding-window",
    "session-window",
    "late-data",
    "stream-join",
    "outer-join",
    "idle-input",
    "deduplication",
    "device-sessions",
    "state-ttl",
    "processing-time",
    "game-heartbeats",
    "state-backends",
)
"""The lessons whose state ``compare_state`` maps onto Spark's."""

LEFT_OUT = {
    "output-modes": (
        "its spread is a custom aggregate (max - min), whose accumulator ministream keeps as (min, max) and Spark's "
        "buffer as max then min; the diff maps built-in aggregates only"
    ),
    "microbatch-vs-continuous": "its point is the continuous model, which has no micro-batches to read state after",
    "checkpoint-recovery": "its runs crash and restart: the state is that of the failure-free run, as rescale's",
    "rescale": "its runs crash and restart at another parallelism",
    "barrier-alignment": "a continuous-model lesson: Spark has no barriers",
    "changelog": "its runs crash and restart; its changelog is compared with Spark's change feed instead",
    "chained-aggregations": (
        "it has two keyed steps, and Spark keeps one state store per stateful operator: the diff maps a query with one"
    ),
    "operator-state": "its point is operator state, which Spark does not have, and it has no Spark twin",
}
"""Stateful lessons the diff leaves out, and why."""


def _flat(value) -> tuple:
    """A value as a flat tuple: tuples and lists spread out, dicts by their values, the rest as it is."""
    if isinstance(value, (tuple, list)):
        return tuple(item for part in value for item in _flat(part))
    if isinstance(value, dict):
        return _flat(list(value.values()))
    return (value,)


def _key(spec_columns, key) -> tuple:
    return tuple(key_columns_of(spec_columns, key).values())


def state_rows(spec, tables: dict) -> list[dict]:
    """One keyed step's tables after a batch as the rows of Spark's stores (see the module's docstring).

    >>> from ministream.core.aggregates import Count, Sum
    >>> spec = AggregateSpec(("key",), {"count": Count(), "sum": Sum("value")})
    >>> state_rows(spec, {"aggregate": {"a": [2, 4.0]}})
    [{'store': 'default', 'key': ('a',), 'value': (2, 4.0)}]
    """
    rows = []
    if isinstance(spec, AggregateSpec):
        for key, accumulators in tables.get("aggregate", {}).items():
            rows.append({"store": "default", "key": _key(spec.key_columns, key), "value": _flat(accumulators)})
    elif isinstance(spec, WindowSpec):
        session = isinstance(spec.assigner, Session)
        for key, windows in tables.get("windows", {}).items():
            columns = _key(spec.key_columns, key)
            for (start, end), accumulators in windows.items():
                if session:
                    value = (*columns, start, end, *_flat(accumulators))
                    rows.append({"store": "default", "key": (*columns, start), "value": value})
                else:
                    rows.append({"store": "default", "key": (*columns, start, end), "value": _flat(accumulators)})
    elif isinstance(spec, DedupSpec):
        for key, expiry in tables.get("seen", {}).items():
            rows.append({"store": "default", "key": _flat(key), "value": (expiry,)})
    elif isinstance(spec, JoinSpec):
        for side in ("left", "right"):
            for key, (kept, flags) in tables.get(side, {}).items():
                rows.append({"store": f"{side}-keyToNumValues", "key": _flat(key), "value": (len(kept),)})
                for row, matched in zip(kept, flags):
                    value = (*_flat(row), matched)
                    rows.append({"store": f"{side}-keyWithIndexToValue", "key": _flat(key), "value": value})
    elif isinstance(spec, ProcessSpec):
        for name, entries in tables.items():
            for key, value in entries.items():
                if isinstance(value, dict):  # a map state: a row per entry
                    for map_key, item in value.items():
                        rows.append({"store": name, "key": (*_flat(key), *_flat(map_key)), "value": _flat(item)})
                elif isinstance(value, list):  # a list state: a row per element
                    rows += [{"store": name, "key": _flat(key), "value": _flat(item)} for item in value]
                else:
                    rows.append({"store": name, "key": _flat(key), "value": _flat(value)})
    return rows


def stores_of(spec, tables: set[str]) -> list[dict]:
    """The Spark stores to read for one keyed step: the state data source's options for each."""
    if isinstance(spec, JoinSpec):
        return [
            {"storeName": f"{side}-{store}"}
            for side in ("left", "right")
            for store in ("keyToNumValues", "keyWithIndexToValue")
        ]
    if isinstance(spec, ProcessSpec):
        return [{"stateVarName": name} for name in sorted(tables)]
    return [{}]


def _stateful_step(lesson: Lesson, values: dict, script=None):
    flow = lesson.pipeline(lesson.default_script if script is None else script, values)
    steps = [step for step in flow.steps if step.spec.keyed]
    if lesson.name in LEFT_OUT or len(steps) != 1:
        reason = LEFT_OUT.get(lesson.name, f"it has {len(steps)} keyed steps")
        raise PipelineError(f"lesson {lesson.name!r}: its state is not diffed against Spark's ({reason})")
    return steps[0]


def ministream_state_rows(
    lesson: Lesson,
    params: dict | None = None,
    state_backend=None,
    batch_timestamps: list[int] | None = None,
    script=None,
) -> list[BatchResult]:
    """The lesson's keyed state after every batch, as rows of Spark's stores (:func:`state_rows`);
    ``batch_timestamps``: the processing time of each batch (a lesson on processing time replays Spark's);
    ``script``: the events (the lesson's own when ``None``)."""
    values = lesson.resolve_params(params)
    step = _stateful_step(lesson, values, script)
    history = StateHistory()
    lesson.run(script, params, state_backend=state_backend, after_batch=history, batch_timestamps=batch_timestamps)
    return [
        BatchResult(batch_id, None, state_rows(step.spec, steps_state.get(step.name, {})))
        for batch_id, steps_state in sorted(history.batches.items())
    ]


def spark_state_rows(row: dict, options: dict) -> dict:
    """One row of Spark's state data source as a ``{"store", "key", "value"}`` row: structs spread out in their
    fields' order (Spark's ``Row``, a tuple, keeps fields of the same name apart: a count and an average's count),
    times in ms, a join's ``index`` left out, a map state's map key joined to its key.

    >>> spark_state_rows({"key": {"field0": "a", "index": 0}, "value": {"ad": "a", "matched": True}},
    ...                  {"storeName": "left-keyWithIndexToValue"})
    {'store': 'left-keyWithIndexToValue', 'key': ('a',), 'value': ('a', True)}
    """
    store = options.get("storeName") or options.get("stateVarName") or "default"
    key = row["key"]
    if store.endswith("keyWithIndexToValue"):
        fields = key.asDict() if hasattr(key, "asDict") else dict(key)  # a Row from Spark, a dict in examples
        key = {name: value for name, value in fields.items() if name != "index"}
    if "user_map_key" in row:
        return {"store": store, "key": _plain(key, row["user_map_key"]), "value": _plain(row["user_map_value"])}
    if "list_element" in row:
        return {"store": store, "key": _plain(key), "value": _plain(row["list_element"])}
    return {"store": store, "key": _plain(key), "value": _plain(row["value"])}


def _plain(*parts) -> tuple:
    out: list = []
    for part in parts:
        for value in _flat(part):
            if isinstance(value, datetime.datetime):
                value = round(value.replace(tzinfo=datetime.UTC).timestamp() * 1000)
            out.append(value)
    return tuple(out)


def both_states(
    lesson: Lesson, params: dict | None = None, state_backend=None, master: str | None = None, script=None
) -> tuple[list[BatchResult], list[BatchResult]]:
    """The state after every batch in ministream (on ``state_backend``) and in Spark, as rows of Spark's stores,
    on ``script`` (the lesson's own events when ``None``).

    Spark runs first, keeping its checkpoint; a lesson on processing time (``lesson.replay_spark_clock``) then
    runs in ministream with the processing time of each of Spark's batches, so that state written in a batch
    expires at the same time in both (a TTL'd value is ``(value, expires at)`` in ministream, and
    ``{value, ttlExpirationMs}`` in Spark). Spark's state is then read, store by store, after each batch."""
    from ministream.spark.state_reader import state_after_batches

    values = lesson.resolve_params(params)
    spec = _stateful_step(lesson, values, script).spec
    with tempfile.TemporaryDirectory(prefix="ministream-state-") as checkpoint:
        batches = lesson.run_twin(script, params, master=master, checkpoint_dir=checkpoint)
        timestamps = [batch.processing_time for batch in batches] if lesson.replay_spark_clock else None
        ours = ministream_state_rows(lesson, params, state_backend, timestamps, script)
        stores = stores_of(spec, {row["store"] for batch in ours for row in batch.rows})
        ids = [batch.batch_id for batch in ours]
        theirs = state_after_batches(checkpoint, ids, stores, spark_state_rows, master=master)
    return ours, theirs


def compare_state(
    lesson: Lesson, params: dict | None = None, state_backend=None, master: str | None = None, script=None
) -> Comparison:
    """The state after every batch in ministream (on ``state_backend``) against Spark's, read from the twin's
    checkpoint with the state data source, store by store (:func:`both_states`), on ``script`` (the lesson's
    own events when ``None``)."""
    return compare_batches(*both_states(lesson, params, state_backend, master, script))
