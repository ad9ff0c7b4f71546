"""Keyed process functions: your own code per key, with its own state and timers (Spark's
``transformWithState``, Flink's ``KeyedProcessFunction``).

Aggregations, windows and joins are special cases of one general tool: a function that sees a key's rows,
keeps whatever it wants in keyed state, and asks to be called back at a time. You write it as a
:class:`Processor` with four methods, as in Spark's ``StatefulProcessor``:

==============================================================  ==============================================
``init(handle)``                                                 get your state variables from the handle
``handle_input_rows(key, rows, timer_values)``                   once per key that has rows in a batch
``handle_expired_timer(key, timer_values, expired_timer_info)``  once per timer that expired
``close()``                                                      when the batch is over
==============================================================  ==============================================

The handlers return (or ``yield``) output rows. The :class:`ProcessorHandle` (``ministream.operators.processor_handle``) gives value, list and map
state scoped to the current key, each with an optional time-to-live (``ministream.state.ttl``: processing time, so
only in processing-time mode, as in Spark), and timers for
the current key in the processor's *time mode*: ``"event_time"`` (a timer fires when the watermark reaches
it), ``"processing_time"`` (when the batch timestamp reaches it) or ``"none"`` (no timers).

**A micro-batch, as Spark's ``transformWithState`` runs it** (measured on PySpark 4.3, see
``tests/operators/test_process.py`` and the tutorials for each rule):

1. in event-time mode, rows with event time ``<= WM_{k-1}`` are late and dropped (in the other modes none);
2. ``handle_input_rows`` runs once for each key that has rows, with all of them (in the query's first batch
   only, ``handle_initial_state`` first sees each row of the step's ``initial_state``, and emits nothing);
3. then the expired timers fire in expiry order: event-time timers with ``expiry <= WM_k``,
   processing-time timers with ``expiry <= batch timestamp``; a timer stays registered while its handler
   runs (``list_timers()`` there still lists it) and is deleted after it; a timer that a timer handler
   registers waits for the next batch, even if it is due already;
4. then the state entries whose time-to-live ran out are removed;
5. ``init`` runs at the start of every batch and ``close`` at its end, on a fresh copy of the processor,
   as on a Spark cluster: anything kept in the processor's own attributes is gone by the next batch. Keep it
   in the handle's state. State variables are created in ``init`` only, and not used there (no key yet),
   nor in ``close`` (no key any more): a state or timer operation there fails, as in Spark;
6. a query restarted from its checkpoint may run another processor: the state variables it asks for again
   come back, those it drops with ``handle.delete_if_exists`` go; but it keeps its time mode, its output
   mode and the kind of each state variable (Spark refuses a restart that changes them);
7. with an ``event_time_column`` (Spark's ``eventTimeColumnName``), the steps after the process step take
   that output column as their event time, under the same watermark: every row the handlers return must be
   later than ``WM_{k-1}``, and one at or before it fails the query, as it fails in Spark
   (``EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED``). A timer handler that emits the time it waited for
   is behind the watermark by then: emit a later time, or give no ``event_time_column``.

``TimerValues`` gives the batch's watermark ``WM_k`` and its processing time (the batch timestamp); both
are ``None`` in time mode ``"none"`` (Spark gives -1), and the watermark is ``None`` in a query without one
(Spark gives 0). When the watermark has gone up, a *no-data batch* runs in event-time and ``"none"`` modes
at the next trigger with no new data (a ``None`` position of the script, or after its end), so that timers
can fire. In processing-time mode Spark asks for a batch at every trigger, for ever: give the script ``None``
positions (triggers with no data) or empty batches, each with its batch timestamp, to let processing time
pass (``core/triggers.py``).

>>> from ministream import Dataflow, ScriptedSource, CollectingSink, run_microbatch
>>> class Alarm(Processor):
...     def init(self, handle):
...         self.handle = handle
...     def handle_input_rows(self, key, rows, timer_values):
...         for row in rows:
...             self.handle.register_timer(row["ts"] + 5_000)   # 5 s of event time later
...         return []
...     def handle_expired_timer(self, key, timer_values, expired_timer_info):
...         yield {"key": key, "alarm_at": expired_timer_info.expiry_time}
>>> flow = Dataflow("alarms")
>>> flow.source("events", ScriptedSource([[{"key": "a", "ts": 1_000}], [{"key": "b", "ts": 20_000}]])
...     ).with_watermark("wm", "ts", "0 seconds").key_by("key").process(
...     "alarm", Alarm(), time_mode="event_time").sink("output", CollectingSink())
>>> for batch in run_microbatch(flow, output_mode="update").output():
...     print(batch.batch_id, batch.watermark, batch.rows)
0 0 []
1 1000 []
2 20000 [{'key': 'a', 'alarm_at': 6000}]
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import ClassVar

import attrs

from ministream.core.operator import Operator, watermark_moved
from ministream.errors import PipelineError
from ministream.operators.processor_handle import EVENT_TIME, NO_TIME, PROCESSING_TIME, ProcessorHandle
from ministream.state.keygroups import key_group_of, subtask_of_key_group
from ministream.time.lateness import LateRow
from ministream.time.timers import TimerService
from ministream.time.units import format_ts


@attrs.frozen
class TimerValues:
    """What time it is for the batch being processed: its processing time (the batch timestamp) and its
    watermark ``WM_k``, in ms; ``None`` in time mode ``"none"``.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> class ShowWatermark(Processor):
    ...     def handle_input_rows(self, key, rows, timer_values):
    ...         return [{"key": key, "watermark": timer_values.watermark}]
    >>> flow = Dataflow("times")
    >>> flow.source("events", ScriptedSource([[{"key": "a", "ts": 9_000}], [{"key": "a", "ts": 10_000}]])
    ...     ).with_watermark("wm", "ts", "2 seconds").key_by("key").process(
    ...     "show", ShowWatermark(), time_mode="event_time").sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'watermark': 0}], [{'key': 'a', 'watermark': 7000}], []]
    """

    processing_time: int | None
    watermark: int | None


@attrs.frozen
class ExpiredTimerInfo:
    """Which timer fired: its expiry time in ms.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> class Reminder(Processor):
    ...     def init(self, handle):
    ...         self.handle = handle
    ...     def handle_input_rows(self, key, rows, timer_values):
    ...         self.handle.register_timer(rows[0]["ts"] + 1_000)
    ...         return []
    ...     def handle_expired_timer(self, key, timer_values, expired_timer_info):
    ...         return [{"key": key, "expiry_time": expired_timer_info.expiry_time}]
    >>> flow = Dataflow("reminders")
    >>> flow.source("events", ScriptedSource([[{"key": "a", "ts": 2_000}], [{"key": "b", "ts": 9_000}]])
    ...     ).with_watermark("wm", "ts", "0 seconds").key_by("key").process(
    ...     "remind", Reminder(), time_mode="event_time").sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[], [], [{'key': 'a', 'expiry_time': 3000}]]
    """

    expiry_time: int


class Processor:
    """Base class of a keyed process function: override the methods you need.

    >>> class Counter(Processor):
    ...     def init(self, handle):
    ...         self.count = handle.get_value_state("count", default=0)
    ...     def handle_input_rows(self, key, rows, timer_values):
    ...         self.count.update(self.count.value() + len(rows))
    ...         return [{"key": key, "count": self.count.value()}]
    >>> from ministream import Dataflow, ScriptedSource, CollectingSink, run_microbatch
    >>> flow = Dataflow("counter")
    >>> flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "a"}], [{"key": "a"}]])).key_by(
    ...     "key").process("count", Counter()).sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'count': 2}], [{'key': 'a', 'count': 3}]]
    """

    output_schema: ClassVar[str | None] = None
    """The columns of the rows the processor returns, as a Spark DDL schema (``"key STRING, count BIGINT"``):
    the engine does not need it; running the processor in Spark does (``spark/processor_adapter.py``). A step's
    ``process(..., output_schema=...)`` wins over it."""

    def init(self, handle: ProcessorHandle) -> None:
        """Create the state variables from ``handle`` (called at the start of every batch)."""

    def handle_input_rows(self, key, rows: list[dict], timer_values: TimerValues):
        """A key's rows of this batch (all of them, in arrival order); return or yield output rows."""
        return ()

    def handle_expired_timer(self, key, timer_values: TimerValues, expired_timer_info: ExpiredTimerInfo):
        """One of the key's timers expired; return or yield output rows."""
        return ()

    def handle_initial_state(self, key, initial_state: dict, timer_values: TimerValues) -> None:
        """One row of the step's ``initial_state`` (``process(..., initial_state=[...])``), before the first
        batch's rows: set the key's state from it. It emits nothing (Spark's ``handleInitialState``)."""

    def close(self) -> None:
        """The batch is over (called at the end of every batch)."""


def _rows(result) -> list[dict]:
    """A handler's output as a list: it may return a list, a generator, or ``None``."""
    return list(result) if result is not None else []


class ProcessOperator(Operator):
    """The operator of a ``process`` step: runs a :class:`Processor` for the keys of one subtask.

    State: the keyed state of the processor's variables (in ``ctx.state``), ``self.timers`` (a
    ``TimerService``), and ``self.rows_by_key``: ``{key: [row, ...]}``, the running batch's rows by key.
    Rows dropped as late are kept in ``self.late_rows`` (what ``Run.late_rows()`` reports).
    """

    keyed = True
    counts_rows = True  # each row that is not late is "handed to the processor" (what it does is its business)

    def __init__(
        self,
        processor: Processor,
        time_mode: str,
        input_time_column: str | None = None,
        output_mode: str | None = None,
        initial_state: tuple[dict, ...] | None = None,
        key_columns: tuple[str, ...] = (),
        output_time_column: str | None = None,
    ):
        self.template = processor
        self.time_mode = time_mode
        self.column = input_time_column  # the input rows' event time: a row at or before the late watermark is late
        self.output_time_column = output_time_column  # the step's event_time_column (Spark's eventTimeColumnName)
        self.output_mode = output_mode
        self.initial_state = initial_state  # rows for handle_initial_state, in the query's first batch
        self.key_columns = key_columns

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Spark's ``transformWithState`` runs in append or update mode: the processor says what to emit."""
        if output_mode == "complete":
            raise PipelineError(
                f"step {step_name!r}: a process step emits the rows its processor returns, "
                "so it runs in append or update mode, not complete (Spark refuses "
                "transformWithState in complete mode too)"
            )

    def open(self, ctx):
        super().open(ctx)
        self.timers = TimerService()
        self.rows_by_key: defaultdict = defaultdict(list)  # {key: [row, ...]}, the running batch's rows
        self.batch = None
        self.processing_time = None
        self.watermark = None  # continuous model: the step's watermark
        self.late_rows: list[LateRow] = []
        self.restored = False  # restored from a checkpoint: the initial state was applied long ago
        self.handle = ProcessorHandle(ctx.state, self.timers, self.time_mode, now=lambda: self.processing_time)
        self.processor = None
        if ctx.model == "continuous":
            self._start_processor()

    def _start_processor(self) -> None:
        """A fresh copy of the user's processor, initialized with the handle (Spark: a task per batch). In
        ``init`` the processor creates its state variables, and may not use them: there is no key yet."""
        self.processor = copy.deepcopy(self.template)
        self.handle.start_init()
        try:
            self.processor.init(self.handle)
        finally:
            self.handle.end_init()

    def timer_values(self, watermark: int | None) -> TimerValues:
        if self.time_mode == NO_TIME:
            return TimerValues(None, None)
        return TimerValues(self.processing_time, watermark)

    # --- the micro-batch model ----------------------------------------------------------------------------

    def on_batch_start(self, batch):
        self.batch = batch
        self.processing_time = batch.processing_time
        if self.time_mode == PROCESSING_TIME and self.processing_time is None:
            raise PipelineError(
                "processing-time mode needs processing time: give the run batch timestamps "
                "(run_microbatch(..., batch_timestamps=[...]))"
            )
        self.rows_by_key = defaultdict(list)
        self._start_processor()

    def process(self, pairs, input_index):
        if self.ctx.model == "continuous":
            return self._process_continuous(pairs)
        late = self.batch.late_watermark if self.time_mode == EVENT_TIME else None
        column, rows_by_key = self.column, self.rows_by_key
        if late is None:  # nothing is late: only the grouping by key, one dict operation per row
            for key, row in pairs:
                rows_by_key[key].append(row)
            return None
        for key, row in pairs:
            if row[column] > late:
                rows_by_key[key].append(row)
            else:
                rule = (
                    f"dropped: {column} {format_ts(row[column])} is at or before {format_ts(late)}, "
                    "the previous batch's watermark"
                )
                self.late_rows.append(LateRow(self.batch.batch_id, self.ctx.step_name, row, None, late, rule))
                self.ctx.explain("late", rule, row)
        return None

    def on_batch_end(self, batch):
        values = self.timer_values(batch.watermark)
        if self.initial_state is not None and batch.batch_id == 0 and not self.restored:
            self._apply_initial_state(values)
        out: list[dict] = []  # the batch's output rows, emitted together
        handled = sum(map(len, self.rows_by_key.values()))
        if handled:
            self.ctx.count("handed to the processor", handled)
        if self.ctx.tracing:
            self._handle_traced(values, batch.watermark, out)
        else:
            # Rules 2 and 3 as plain loops: a handler call per key with rows, then per expired timer, with the
            # state scoped to the key, and each fired timer deleted after its handler. (The traced run, below,
            # does the same and says why each call runs.)
            set_current_key, handle_input_rows = self.ctx.state.set_current_key, self.processor.handle_input_rows
            key = handler = None  # which handler runs, for which key: named if it fails
            try:
                handler = "handle_input_rows"
                for key, rows in self.rows_by_key.items():
                    set_current_key(key)
                    result = handle_input_rows(key, rows, values)
                    if result:  # rows, or a generator of them (None, or an empty list or tuple, adds nothing)
                        out += result
                self.rows_by_key = defaultdict(list)
                handle_expired_timer = self.processor.handle_expired_timer
                queue = self.timers.queues.get(self.time_mode)  # the time mode's timers (none in time mode "none")
                handler = "handle_expired_timer"
                for expiry, keys in self._expired_timers(batch.watermark):
                    info = ExpiredTimerInfo(expiry)  # one for all the keys due at this time: it is frozen
                    for key in keys:
                        set_current_key(key)
                        result = handle_expired_timer(key, values, info)
                        if result:
                            out += result
                    # Spark deletes a fired timer after its handler, even if re-registered. A handler sees and
                    # changes only its own key's timers, so the timers of one time are deleted together, after
                    # their handlers and before the next time's: straight from the time mode's queue
                    queue.discard_keys(expiry, keys)
            except PipelineError:
                raise
            except Exception as error:
                raise self._failed(handler, key, error) from error
        if self.output_time_column is not None:
            self._check_output_times(out, batch.late_watermark)
        self.ctx.emit(out)
        if self.processing_time is not None:
            self._clean_up(self.processing_time)
        self.handle.leave_keys()  # close() runs with no key: its state and timer operations are refused
        self.processor.close()

    def _check_output_times(self, rows: list[dict], late: int | None) -> None:
        """Rule 7: the rows of a step with an ``event_time_column`` carry the event time of the steps after it,
        under the same watermark, so none may be at or before the batch's late watermark (a row the next step
        would take as late). Spark fails the query on the first such row
        (``EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED``, ``UpdateEventTimeColumnExec``); so does ministream.
        A row without the column at all is refused too: Spark resolves the column in the output schema before
        the query starts (``UNRESOLVED_COLUMN``), which the plan checks when the schema is declared."""
        column = self.output_time_column
        for row in rows:
            if column not in row:
                raise PipelineError(
                    f"step {self.ctx.step_name!r}: the processor returned {row!r}, which has no column {column!r}, "
                    "the step's event_time_column (Spark: UNRESOLVED_COLUMN.WITH_SUGGESTION)"
                )
            if late is not None and row[column] is not None and row[column] <= late:  # a null is not compared
                raise PipelineError(
                    f"step {self.ctx.step_name!r}: the processor returned {row!r}, whose event time {column} "
                    f"{format_ts(row.get(column))} is at or before {format_ts(late)}, the previous batch's "
                    "watermark: a process step's event_time_column must be later than it (Spark fails the query: "
                    "EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED)"
                )

    def _handle_traced(self, values: TimerValues, watermark: int | None, out: list) -> None:
        """Rules 2 and 3 when the run is traced: each handler call, and each row it returns, has its line."""
        for key, rows in self.rows_by_key.items():
            why = f"{len(rows)} row{'s' if len(rows) != 1 else ''} of this batch"
            out += self._call(key, "input", why, self.processor.handle_input_rows, rows, values)
        self.rows_by_key = defaultdict(list)
        for expiry, keys in self._expired_timers(watermark):
            for key in keys:
                out += self._fire(key, expiry, values)

    def _apply_initial_state(self, values: TimerValues) -> None:
        """Rule 0: in the query's first batch (not after a restart from a checkpoint), before any input row,
        ``handle_initial_state`` sees each initial-state row of this subtask's keys; it emits nothing. A key has
        one initial state: a second row for it fails the query (Spark:
        ``STATEFUL_PROCESSOR_CANNOT_REINITIALIZE_STATE_ON_KEY``, TransformWithStateInitialStateSuite)."""
        initialized: set = set()
        for row in self.initial_state:
            key = row[self.key_columns[0]] if len(self.key_columns) == 1 else tuple(row[c] for c in self.key_columns)
            if subtask_of_key_group(key_group_of(key), self.ctx.parallelism) != self.ctx.subtask:
                continue
            if key in initialized:
                raise PipelineError(
                    f"step {self.ctx.step_name!r}: the initial state has a second row for key {key!r}: a key's "
                    "state is initialized once (Spark: STATEFUL_PROCESSOR_CANNOT_REINITIALIZE_STATE_ON_KEY)"
                )
            initialized.add(key)
            self.ctx.state.set_current_key(key)
            try:
                self.processor.handle_initial_state(key, row, values)
            except PipelineError:
                raise
            except Exception as error:
                raise self._failed("handle_initial_state", key, error) from error
            if self.ctx.tracing:
                self.ctx.explain("initial", f"key {key!r}: its initial state was set")

    def _expired_timers(self, watermark) -> list[tuple[int, list]]:
        """Rule 3: the timers due now, ``(expiry, [key, ...])`` in expiry order, found before any handler runs
        (so a timer that a handler registers waits for the next batch). They stay registered until their
        handler has run: ``list_timers()`` in a handler still lists the timer being handled."""
        if self.time_mode == EVENT_TIME:
            return self.timers.due_event_time(watermark)
        if self.time_mode == PROCESSING_TIME:
            return self.timers.due_processing_time(self.processing_time)
        return []

    def _fire(self, key, expiry: int, values: TimerValues) -> list[dict]:
        """Call the handler of one expired timer, then delete the timer; return the rows it returned."""
        why = ""
        if self.ctx.tracing:
            now = values.watermark if self.time_mode == EVENT_TIME else values.processing_time
            clock = "watermark" if self.time_mode == EVENT_TIME else "processing time"
            why = f"timer at {format_ts(expiry)} fired: it is at or before the {clock}, {format_ts(now)}"
        rows = self._call(key, "timer", why, self.processor.handle_expired_timer, values, ExpiredTimerInfo(expiry))
        self.handle.delete_timer(expiry)  # Spark deletes a fired timer after its handler, even if re-registered
        return rows

    def _call(self, key, kind: str, why: str, handler, *arguments) -> list[dict]:
        """Run ``handler(key, *arguments)`` with the state scoped to ``key`` and return its rows; ``why`` says
        why it runs, in the trace (the callers make it only when there is one)."""
        self.ctx.state.set_current_key(key)
        try:
            rows = _rows(handler(key, *arguments))
        except PipelineError:
            raise
        except Exception as error:
            raise self._failed(handler.__name__, key, error) from error
        if self.ctx.tracing:
            self.ctx.explain(kind, f"key {key!r}: {why}")
            for row in rows:
                self.ctx.explain("emit", f"key {key!r}: returned by the {kind} handler", row)
        return rows

    def _failed(self, handler: str | None, key, error: Exception) -> PipelineError:
        """One line for an error raised by the processor's own code: the step, the handler, the key and the
        error (its traceback follows, as the cause). Spark fails the query too: a Scala processor's error as
        ``TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR``, which names the handler, a Python processor's as
        ``PYTHON_EXCEPTION``. An error the engine raised itself (a ``PipelineError``: a state variable asked for
        outside ``init``...) comes out as it is, as Spark's own classified errors do (TransformWithStateSuite,
        "check that classified error is thrown from handleInputRows")."""
        return PipelineError(
            f"step {self.ctx.step_name!r}: the processor's {handler} failed for key {key!r}: "
            f"{type(error).__name__}: {error} (Spark: TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR, or "
            "PYTHON_EXCEPTION from a Python processor)"
        )

    def _clean_up(self, now: int) -> None:
        for name, key in self.handle.remove_expired_state(now):
            if self.ctx.tracing:
                self.ctx.explain(
                    "ttl",
                    f"key {key!r}: expired entries of state {name!r} removed "
                    f"(their time-to-live ran out by processing time {format_ts(now)})",
                )

    def should_run_another_batch(self, watermark):
        """Spark's ``TransformWithStateExec.shouldRunAnotherBatch``: in processing-time mode at every trigger
        (its timers follow the clock); in the other modes when the watermark went up, whether or not a timer
        is due. (After the script, ministream runs a no-data batch only when the watermark moved: the clock
        stands still there, so a processing-time one could change nothing.)"""
        if self.time_mode == PROCESSING_TIME:
            return self.batch is not None
        return watermark_moved(self.batch, watermark)

    # --- the continuous model -----------------------------------------------------------------------------

    def _process_continuous(self, pairs) -> None:
        """Continuous model: the same processor, one record at a time; nothing is dropped as late (as in a
        Flink ``KeyedProcessFunction``: lateness is the function's business)."""
        self.processing_time = self.ctx.clock.now() if self.ctx.clock is not None else None
        for key, row in pairs:
            values = self.timer_values(self.watermark)
            self.ctx.count("handed to the processor")
            rows = self._call(key, "input", "one record", self.processor.handle_input_rows, [row], values)
            self.ctx.emit(rows)

    def on_watermark(self, watermark):
        """Continuous model: fire the event-time timers the watermark reached, then pass it on."""
        self.watermark = watermark
        if self.time_mode == EVENT_TIME:
            self._fire_all(lambda: self.timers.pop_expired_event_time(watermark))
        self.ctx.emit_watermark(watermark)

    def on_processing_time(self, now: int) -> None:
        """Continuous model: the clock moved to ``now``: fire the processing-time timers it reached, then
        remove the state whose time-to-live ran out."""
        self.processing_time = now
        if self.time_mode == PROCESSING_TIME:
            self._fire_all(lambda: self.timers.pop_expired_processing_time(now))
        self._clean_up(now)

    def _fire_all(self, pop) -> None:
        # Continuous model: timers that a handler registers and that are due already fire in the same advance.
        while due := pop():
            for expiry, key in due:
                self.ctx.emit(self._fire(key, expiry, self.timer_values(self.watermark)))

    # --- checkpoints --------------------------------------------------------------------------------------

    def state_size(self) -> int:
        """State entries plus registered timers."""
        return self.ctx.state.size() + self.timers.size()

    def snapshot(self) -> dict:
        """Keyed state, timers, the watermark the processor sees (continuous model), and what a restart must
        keep: the time mode, the output mode and the kind of each state variable."""
        return {
            "keyed": self.ctx.state.snapshot(),
            "timers": self.timers.snapshot(self.ctx.state.checkpointing),  # incremental as the keyed state
            "watermark": self.watermark,
            "settings": {
                "time_mode": self.time_mode,
                "output_mode": self.output_mode,
                "variables": dict(self.handle.kinds),
            },
        }

    def restore(self, snapshot, key_groups=None) -> None:
        """Rule 6: a restarted query may run another processor (the state variables it asks for again come
        back, those it drops with ``delete_if_exists`` go, new ones start empty), but not another time mode,
        another output mode, or a state variable of another kind (Spark's
        ``STATE_STORE_INVALID_CONFIG_AFTER_RESTART`` and ``STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE``)."""
        settings = snapshot.get("settings", {})
        for setting, now in (("time_mode", self.time_mode), ("output_mode", self.output_mode)):
            if setting in settings and settings[setting] != now:
                raise PipelineError(
                    f"step {self.ctx.step_name!r} ran with {setting} {settings[setting]!r} and is restarted with "
                    f"{now!r}: a restarted query keeps the {setting.replace('_', ' ')} of its state (Spark: "
                    f"STATE_STORE_INVALID_CONFIG_AFTER_RESTART, configName {setting})"
                )
        super().restore(snapshot, key_groups)
        self.timers.restore(snapshot.get("timers", {}), key_groups)
        self.watermark = snapshot.get("watermark")
        self.handle.kinds = dict(settings.get("variables", {}))
        self.restored = True
