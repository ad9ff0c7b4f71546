"""Lineage: what reaches a step from the steps before it: which event time, under which watermark, from
which input, with which columns.

A stateful step needs to know things its own spec does not say: a window step whether a watermark tracks its
time column (else no window is ever final), a join which column each side's watermark tracks (to drop late
rows and to know when a stored row can no longer match), a deduplication the watermark delay (to forget a key
within it). All of them are answered here, by walking the plan upstream from the step, and nowhere else.
Spark's analyzer does the same walk when it resolves ``EventTimeWatermark`` nodes below a stateful operator.

The walk along one input follows the first input of each step back to a source: a ``with_watermark`` on the
way gives the event time; a ``select`` gives the columns, when only filters and watermarks (which keep the
columns) come after it.

>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sources import ScriptedSource
>>> clicks = Dataflow("f").source("clicks", ScriptedSource([])).select("renamed", click_time="ts")
>>> watermarked = clicks.with_watermark("wm", "click_time", "5 seconds")
>>> input_lineage(watermarked.filter("recent", bool).step)
InputLineage(source='clicks', event_time=EventTime(column='click_time', delay=5000, step='wm'), columns=('click_time',))
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from ministream.core.steps import FilterSpec, SelectSpec, SourceSpec, Step, WatermarkSpec


@attrs.frozen
class EventTime:
    """An event time that a watermark tracks: its ``column``, the watermark's ``delay`` (ms) and the
    ``with_watermark`` step that tracks it."""

    column: str
    delay: int
    step: str


@attrs.frozen
class InputLineage:
    """What a step knows of one of its inputs: the ``source`` it comes from, the nearest :class:`EventTime`
    on the way (``None``: no watermark), and its ``columns`` when a ``select`` declared them (``None``:
    unknown)."""

    source: str
    event_time: EventTime | None = None
    columns: tuple[str, ...] | None = None

    @property
    def watermark_column(self) -> str | None:
        """The column the input's watermark tracks (``None`` without a watermark)."""
        return None if self.event_time is None else self.event_time.column


def upstream(step: Step) -> Iterator[Step]:
    """``step`` and every step before it, each once, nearest first along each path.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> stream = Dataflow("f").source("events", ScriptedSource([])).map("copy", dict)
    >>> [s.name for s in upstream(stream.step)]
    ['copy', 'events']
    """
    seen: set[int] = set()
    todo = [step]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo.extend(edge.upstream for edge in current.inputs)


def watermarks_upstream(step: Step) -> list[EventTime]:
    """Every event time a ``with_watermark`` step at or before ``step`` tracks, on any path.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> stream = Dataflow("f").source("events", ScriptedSource([])).with_watermark("wm", "ts", "5 seconds")
    >>> watermarks_upstream(stream.map("copy", dict).step)
    [EventTime(column='ts', delay=5000, step='wm')]
    """
    return [EventTime(s.spec.column, s.spec.delay, s.name) for s in upstream(step) if isinstance(s.spec, WatermarkSpec)]


def watermarked_columns(step: Step) -> set[str]:
    """The event-time columns that a ``with_watermark`` at or before ``step`` tracks, on any path."""
    return {event_time.column for event_time in watermarks_upstream(step)}


def input_lineage(step: Step) -> InputLineage:
    """What reaches ``step``'s output along its first input, back to the source (``step`` included)."""
    event_time = None
    columns: tuple[str, ...] | None = None
    columns_known = True
    current = step
    while True:
        spec = current.spec
        if isinstance(spec, WatermarkSpec) and event_time is None:
            event_time = EventTime(spec.column, spec.delay, current.name)
        if isinstance(spec, SelectSpec) and columns_known and columns is None:
            columns = spec.names
        elif not isinstance(spec, (WatermarkSpec, FilterSpec, SourceSpec)):
            columns_known = False
        if not current.inputs:
            return InputLineage(current.name, event_time, columns)
        current = current.inputs[0].upstream


def has_watermark(steps: list[Step]) -> bool:
    """Whether any of ``steps`` is a ``with_watermark`` step."""
    return any(isinstance(step.spec, WatermarkSpec) for step in steps)
