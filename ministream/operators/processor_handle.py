"""The processor's handle: state variables and timers, each scoped to the key being processed.

A keyed process function (``ministream.operators.process``) gets a :class:`ProcessorHandle` in ``init`` and asks it
for its state variables: value, list and map state (``ministream.state.keyed``), each with an optional
time-to-live (``ministream.state.ttl``). It keeps them as attributes and uses them in its handlers. They are
*scoped to the current key*: before it calls a handler, the engine sets the key, and every read and write
goes to that key's entry. The same goes for timers: ``register_timer`` sets a timer for the current key, in
the processor's time mode (event time or processing time). This is Spark's ``StatefulProcessorHandle`` with
its "implicit grouping key".

There is a current key only while the handlers run. In ``init()`` there is none yet, and none in ``close()``
any more: a state or timer operation there is refused (Spark's handle states ``PRE_INIT`` and ``CLOSED``, and
its "implicit key not found"), rather than reading or writing under whichever key ran last.
"""

from __future__ import annotations

from ministream.errors import PipelineError
from ministream.state.keyed import ListState, MapState, ValueState
from ministream.state.ttl import TtlListState, TtlMapState, TtlValueState
from ministream.time.timers import TimerService, whole_ms
from ministream.time.units import parse_duration

NO_TIME, EVENT_TIME, PROCESSING_TIME = "none", "event_time", "processing_time"
TIME_MODES = (NO_TIME, EVENT_TIME, PROCESSING_TIME)
"""A processor's time modes, Spark's ``TimeMode.None``, ``EventTime`` and ``ProcessingTime``: which clock its
timers follow (and, for processing time, its state's time-to-live)."""


class ProcessorHandle:
    """What a processor gets in ``init``: keyed state variables and the timers of the current key.

    Every state variable reads and writes under the key being processed, which the engine sets before it
    calls a handler. ``ttl`` is a duration (``"30 seconds"`` or ms) of processing time.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> from ministream.time.timers import TimerService
    >>> backend, timers = KeyedStateBackend(), TimerService()
    >>> handle = ProcessorHandle(backend, timers, "event_time")
    >>> sessions = handle.get_map_state("sessions")
    >>> backend.set_current_key("device-1")
    >>> sessions.put("s1", {"events": 1}); handle.register_timer(30_000); handle.list_timers()
    [30000]
    >>> backend.set_current_key("device-2")
    >>> sessions.items(), handle.list_timers()
    ([], [])

    Args:
        backend: the subtask's keyed state. timers: the subtask's timers. time_mode: ``"none"``,
        ``"event_time"`` or ``"processing_time"``. now: the current processing time (for TTL).
    """

    def __init__(self, backend, timers: TimerService, time_mode: str, now=lambda: None):
        self.backend = backend
        self.timers = timers
        self.time_mode = time_mode
        self.timer_queue = timers.queues.get(time_mode)  # the TimerQueue of the time mode's timers, None without one
        self.queue = self.timer_queue  # the same while there is a current key, else None (register_timer says why)
        self.now = now
        self.states: dict[str, object] = {}  # {state name: state variable}, for the end-of-batch TTL cleanup
        self.kinds: dict[str, str] = {}  # {state name: its kind}, as the checkpoint recorded them
        self.in_init = False  # the processor's init() is running: there is no current key
        self.initialized = False  # init() has run: no more state variables may be created
        self.has_key = True  # the handlers may run: the engine sets the current key before each call
        self.scoped: list[_KeyScoped] = []  # the state variables handed out, which keep their methods once keyed

    def start_init(self) -> None:
        """``init()`` begins: state variables may be created, and nothing may be read or written (no key)."""
        self.states, self.scoped = {}, []
        self.in_init, self.initialized, self.queue = True, False, None

    def end_init(self) -> None:
        """``init()`` is over: the handlers run next, each with its key."""
        self.in_init, self.initialized = False, True
        self.enter_keys()

    def enter_keys(self) -> None:
        """The handlers run: the engine sets the current key before each call (Spark's implicit key)."""
        self.has_key, self.queue = True, self.timer_queue

    def leave_keys(self) -> None:
        """The handlers are over (``close()`` runs next): no current key, so every state or timer operation is
        refused until the next ``init()``. The state variables forget the methods they kept, and check again."""
        self.has_key, self.queue = False, None
        for scoped in self.scoped:
            scoped.forget_methods()

    def _state(self, name: str, kind: type, ttl, make_plain, make_ttl):
        if name in self.states:
            existing = self.states[name]
            if not isinstance(existing, kind):
                raise PipelineError(f"state {name!r} is a {type(existing).__name__}, not a {kind.__name__}")
            return _KeyScoped(existing, self)
        if self.initialized:
            raise PipelineError(
                f"state {name!r} is created outside init(): a processor creates its state variables in init() "
                "(Spark: STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_HANDLE_STATE, 'invalid handle "
                "state')"
            )
        recorded = self.kinds.get(name)
        if recorded is not None and recorded != kind.__name__:
            raise PipelineError(
                f"state {name!r} was a {recorded} when the query last ran, and is now asked for as a "
                f"{kind.__name__}: a restarted query keeps its state variables' types (Spark: "
                "STATE_STORE_INVALID_VARIABLE_TYPE_CHANGE)"
            )
        self.kinds[name] = kind.__name__
        if ttl is None:
            state = make_plain()
        elif self.time_mode != PROCESSING_TIME:
            raise PipelineError(
                f"state {name!r}: a time-to-live counts processing time, so it needs time_mode="
                f"'processing_time', not {self.time_mode!r} (Spark: STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_"
                f"ASSIGN_TTL, 'Cannot use TTL for state={name} in timeMode=...')"
            )
        else:
            state = make_ttl(parse_duration(ttl))
        self.states[name] = state
        return _KeyScoped(state, self)

    def delete_if_exists(self, name: str) -> None:
        """Drop state variable ``name`` for every key, if the query had one (Spark's ``deleteIfExists``): a
        restarted query whose processor no longer needs a variable drops it in ``init``.

        >>> from ministream.state.keyed import KeyedStateBackend
        >>> backend = KeyedStateBackend(); handle = ProcessorHandle(backend, TimerService(), "none")
        >>> backend.set_current_key("a"); handle.get_value_state("count").update(3)
        >>> handle.delete_if_exists("count"); backend.tables
        {}
        """
        for key in self.backend.keys(name):
            self.backend.changes.get(name, {})[key] = None  # removed, for an incremental checkpoint
        self.backend.tables.pop(name, None)
        self.states.pop(name, None)
        self.kinds.pop(name, None)

    def check_key(self, operation: str, name: str | None = None) -> None:
        """Refuse a state or timer operation when there is no current key: while ``init()`` runs (no key yet),
        or after the handlers (``close()``: no key any more). ``name``: the state variable's."""
        if self.in_init:
            raise PipelineError(
                f"{operation} in init(): state is scoped to a key, and init() runs before any key; use state "
                "in the handlers (Spark: STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_HANDLE_STATE, "
                "handle state PRE_INIT)"
            )
        if not self.has_key:
            raise PipelineError(
                f"{operation} with no current key{f' (state {name!r})' if name else ''}: state and timers are "
                "scoped to a key, and only the handlers run with one, not close() (Spark: INTERNAL_ERROR_TWS, "
                f"'Implicit key not found in state store for stateName={name or ''}')"
            )

    def get_value_state(self, name: str, default=None, ttl=None) -> ValueState:
        """One value per key (``ttl``: it expires that long after its last update)."""
        return self._state(
            name,
            ValueState,
            ttl,
            lambda: ValueState(self.backend, name, default),
            lambda ms: TtlValueState(self.backend, name, ms, self._now, default),
        )

    def get_list_state(self, name: str, ttl=None) -> ListState:
        """A list per key (``ttl``: each element expires that long after it was written)."""
        return self._state(
            name,
            ListState,
            ttl,
            lambda: ListState(self.backend, name),
            lambda ms: TtlListState(self.backend, name, ms, self._now),
        )

    def get_map_state(self, name: str, ttl=None) -> MapState:
        """A dict per key (``ttl``: each entry expires that long after it was last put)."""
        return self._state(
            name,
            MapState,
            ttl,
            lambda: MapState(self.backend, name),
            lambda ms: TtlMapState(self.backend, name, ms, self._now),
        )

    def _now(self) -> int:
        now = self.now()
        if now is None:
            raise PipelineError(
                "state with a time-to-live needs processing time: give the run batch "
                "timestamps (run_microbatch(..., batch_timestamps=[...]))"
            )
        return now

    def register_timer(self, expiry_time: int) -> None:
        """Ask for ``handle_expired_timer`` for the current key at ``expiry_time`` (ms, in the time mode's
        clock); registering the same time twice makes one timer."""
        if self.queue is not None:  # straight into the time mode's queue: a handler registers millions of timers
            # an int goes in as it is (type(True) is bool, not int); whole_ms refuses anything else
            ms = expiry_time if type(expiry_time) is int else whole_ms(expiry_time)
            self.queue.add(self.backend.current_key, ms)
        else:  # no queue: no time mode, or no current key (self.queue is None then)
            self._check_timers("register_timer")

    def _check_timers(self, operation: str) -> None:
        """Refuse a timer operation without a time mode, or without a current key (Spark's
        ``verifyTimerOperations``: the time mode, then the handle state)."""
        if self.time_mode == NO_TIME:
            raise PipelineError(
                f"{operation}: timers need a time mode: process(..., time_mode='event_time' or "
                "'processing_time') (Spark: STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_TIME_MODE, "
                "'Cannot use timers with timeMode=None')"
            )
        if self.in_init or not self.has_key:
            when = "in init(), before any key" if self.in_init else "after the handlers, in close(): no key"
            raise PipelineError(
                f"{operation} {when}: a timer belongs to a key, and only the handlers run with one (Spark: "
                "STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_HANDLE_STATE, handle state "
                f"{'CREATED' if self.in_init else 'TIMER_PROCESSED'})"
            )

    def delete_timer(self, expiry_time: int) -> None:
        """Cancel the current key's timer at ``expiry_time``; nothing happens if there is none."""
        self._check_timers("delete_timer")
        key = self.backend.current_key
        if self.time_mode == EVENT_TIME:
            self.timers.delete_event_time_timer(key, expiry_time)
        else:
            self.timers.delete_processing_time_timer(key, expiry_time)

    def list_timers(self) -> list[int]:
        """The expiry times of the current key's timers, earliest first."""
        self._check_timers("list_timers")
        key = self.backend.current_key
        if self.time_mode == PROCESSING_TIME:
            return self.timers.processing_time_timers(key)
        return self.timers.event_time_timers(key)

    def remove_expired_state(self, now: int) -> list[tuple[str, object]]:
        """The end-of-batch TTL cleanup: drop every expired entry; return ``(state name, key)`` pairs."""
        removed = []
        for name, state in self.states.items():
            if hasattr(state, "remove_expired"):
                removed += [(name, key) for key in state.remove_expired(now)]
        return removed


class _KeyScoped:
    """A state variable as a processor gets it: every operation needs a current key, so none is allowed
    while ``init()`` runs, nor after the handlers (the handle says when). Everything else is the state
    variable's own.

    >>> from ministream.state.keyed import KeyedStateBackend
    >>> handle = ProcessorHandle(KeyedStateBackend(), TimerService(), "none")
    >>> handle.start_init(); count = handle.get_value_state("count"); count.exists()
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: ValueState.exists in init(): state is scoped to a key, and init() runs before any key; use state in the handlers (Spark: STATEFUL_PROCESSOR_CANNOT_PERFORM_OPERATION_WITH_INVALID_HANDLE_STATE, handle state PRE_INIT)
    >>> handle.end_init(); count.exists(), handle.leave_keys()
    (False, None)
    >>> count.exists()
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: ValueState.exists with no current key (state 'count'): state and timers are scoped to a key, and only the handlers run with one, not close() (Spark: INTERNAL_ERROR_TWS, 'Implicit key not found in state store for stateName=count')
    """

    def __init__(self, state, handle: ProcessorHandle):
        self._state = state
        self._handle = handle
        handle.scoped.append(self)

    def __getattr__(self, name):
        attribute = getattr(self._state, name)
        if not callable(attribute):
            return attribute
        handle, operation = self._handle, f"{type(self._state).__name__}.{name}"
        if handle.has_key and not handle.in_init:
            # the handlers run, each with a key: from now on the state's own method, kept as an attribute, so that
            # __getattr__ (only called for a missing attribute) runs once per method and not at every call, and no
            # wrapper runs either: a processor calls its state millions of times. When the handlers are over, the
            # handle makes the variable forget it (forget_methods), and every call is checked again.
            self.__dict__[name] = attribute
            return attribute

        def scoped(*args, **kwargs):
            if handle.in_init or not handle.has_key:
                handle.check_key(operation, getattr(self._state, "name", None))
            return attribute(*args, **kwargs)

        return scoped  # not kept: once there is a key, the next use takes the state's own method

    def forget_methods(self) -> None:
        """Drop the methods kept while there was a key: the next call goes through ``__getattr__`` again."""
        for name in [name for name in self.__dict__ if name not in ("_state", "_handle")]:
            del self.__dict__[name]

    def __repr__(self):
        return repr(self._state)
