"""The processor's handle: state variables and timers, each scoped to the key being processed.

A keyed process function (``ministream.operators.process``) gets a :class:`ProcessorHandle` in ``init`` and asks it
for its state variables: value, list and map state (``ministream.state.keyed``), each with an optional
time-to-live (``ministream.state.ttl``). It keeps them as attributes and uses them in its handlers. They are
*scoped to the current key*: before it calls a handler, the engine sets the key, and every read and write
goes to that key's entry. The same goes for timers: ``register_timer`` sets a timer for the current key, in
the processor's time mode (event time or processing time). This is Spark's ``StatefulProcessorHandle`` with
its "implicit grouping key".
"""

from __future__ import annotations

from ministream.errors import PipelineError
from ministream.state.keyed import ListState, MapState, ValueState
from ministream.state.ttl import TtlListState, TtlMapState, TtlValueState
from ministream.time.timers import TimerService
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
        self.now = now
        self.states: dict[str, object] = {}  # {state name: state variable}, for the end-of-batch TTL cleanup

    def _state(self, name: str, kind: type, ttl, make_plain, make_ttl):
        if name in self.states:
            existing = self.states[name]
            if not isinstance(existing, kind):
                raise PipelineError(f"state {name!r} is a {type(existing).__name__}, not a {kind.__name__}")
            return existing
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
        return state

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
        key = self.backend.current_key
        if self.time_mode == EVENT_TIME:
            self.timers.register_event_time_timer(key, expiry_time)
        elif self.time_mode == PROCESSING_TIME:
            self.timers.register_processing_time_timer(key, expiry_time)
        else:
            raise PipelineError(
                "timers need a time mode: process(..., time_mode='event_time' or "
                "'processing_time') (Spark: 'Cannot use timers with timeMode=None')"
            )

    def delete_timer(self, expiry_time: int) -> None:
        """Cancel the current key's timer at ``expiry_time``; nothing happens if there is none."""
        key = self.backend.current_key
        if self.time_mode == EVENT_TIME:
            self.timers.delete_event_time_timer(key, expiry_time)
        elif self.time_mode == PROCESSING_TIME:
            self.timers.delete_processing_time_timer(key, expiry_time)

    def list_timers(self) -> list[int]:
        """The expiry times of the current key's timers, earliest first."""
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
