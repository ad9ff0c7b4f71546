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

from ministream.core.steps import (
    AggregateSpec,
    DedupSpec,
    FilterSpec,
    JoinSpec,
    ProcessSpec,
    SelectSpec,
    SinkSpec,
    SourceSpec,
    StaticJoinSpec,
    Step,
    UnionSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
    WindowTimeSpec,
)


@attrs.frozen
class EventTime:
    """An event time that a watermark tracks: its ``column``, the watermark's ``delay`` (ms) and the
    ``with_watermark`` step that tracks it. ``window``: when the event time is a window (a window column,
    or the window of a windowed aggregate), its ``(start, end)`` columns; ``column`` is then the end, which
    is what eviction compares with the watermark."""

    column: str
    delay: int
    step: str
    window: tuple[str, str] | None = attrs.field(default=None, repr=False)

    def __repr__(self):
        window = "" if self.window is None else f", window={self.window!r}"
        return f"EventTime(column={self.column!r}, delay={self.delay!r}, step={self.step!r}{window})"


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


def output_columns(step: Step) -> tuple[str, ...] | None:
    """The columns of ``step``'s rows when the plan knows them (``None`` when it does not): a source that
    declares its columns, a ``select``, an aggregate, a join of known inputs... A ``map``, ``flat_map`` or
    process function may return anything, so after one the columns are unknown.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> events = Dataflow("f").source("events", ScriptedSource([], columns=("key", "ts")))
    >>> output_columns(events.with_watermark("wm", "ts", 0).step), output_columns(events.map("m", dict).step)
    (('key', 'ts'), None)
    """
    spec = step.spec
    upstream = [edge.upstream for edge in step.inputs]
    if isinstance(spec, SourceSpec):
        return getattr(spec.source, "columns", None)
    if isinstance(spec, SelectSpec):
        return spec.names
    if isinstance(spec, (FilterSpec, WatermarkSpec, DedupSpec, UnionSpec, SinkSpec)):
        return output_columns(upstream[0])
    if isinstance(spec, WindowColumnSpec):
        before = output_columns(upstream[0])
        return None if before is None else before + tuple(c for c in (spec.start, spec.end) if c not in before)
    if isinstance(spec, WindowTimeSpec):
        before = output_columns(upstream[0])
        return None if before is None else before + tuple(c for c in (spec.column,) if c not in before)
    if isinstance(spec, AggregateSpec):
        return spec.key_columns + tuple(spec.aggregates)
    if isinstance(spec, WindowSpec):
        return spec.key_columns + ("window_start", "window_end") + tuple(spec.aggregates)
    if isinstance(spec, JoinSpec):
        left, right = (output_columns(up) for up in upstream)
        if spec.how == "left_semi":
            return left
        if left is None or right is None:
            return None
        if spec.using:
            return left + tuple(c for c in right if c not in spec.right_keys)
        return left + right
    if isinstance(spec, StaticJoinSpec):
        left = output_columns(upstream[0])
        return None if left is None else left + tuple(c for c in spec.table_columns() if c not in left)
    return None


def event_time_columns(step: Step) -> dict[str, EventTime]:
    """The columns of ``step``'s rows that carry an event time under a watermark (Spark: the columns with
    watermark metadata), each with its :class:`EventTime`; a window's two columns share one.

    How they flow: ``with_watermark`` marks its column; ``select`` keeps (and renames) marked columns;
    filters, maps and deduplications pass them on (a map is taken to keep the columns it does not
    replace); a window column step marks its window; an aggregate keeps the marked columns of its key, a
    windowed aggregate's output window is marked; a join keeps both sides' (a left semi join the left's); a
    union the first input's; a process function only the output column it names (``event_time_column``).

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> events = Dataflow("f").source("events", ScriptedSource([])).with_watermark("wm", "ts", "5 seconds")
    >>> event_time_columns(events.select("renamed", event_time="ts", key="key").step)
    {'event_time': EventTime(column='event_time', delay=5000, step='wm')}
    """
    spec = step.spec
    upstream = [edge.upstream for edge in step.inputs]
    if isinstance(spec, SourceSpec):
        return {}
    if isinstance(spec, WatermarkSpec):
        before = event_time_columns(upstream[0])
        kept = {name: time for name, time in before.items() if name != spec.column}
        return {**kept, spec.column: EventTime(spec.column, spec.delay, step.name)}
    if isinstance(spec, SelectSpec):
        before = event_time_columns(upstream[0])
        renamed = {old: new for new, old in spec.columns}
        kept = {}
        for new, old in spec.columns:
            time = before.get(old)
            if time is not None and time.window is not None:  # a window keeps its two columns' new names
                start, end = renamed.get(time.window[0]), renamed.get(time.window[1])
                window = (start, end) if start and end else None
                time = attrs.evolve(time, column=end or new, window=window)
            elif time is not None:  # the event time is now read from the column's new name
                time = attrs.evolve(time, column=new)
            if time is not None:
                kept[new] = time
        return kept
    if isinstance(spec, WindowColumnSpec):
        before = event_time_columns(upstream[0])
        if spec.column not in before:
            return before
        column_time = EventTime(spec.end, before[spec.column].delay, before[spec.column].step, (spec.start, spec.end))
        return {**before, spec.start: column_time, spec.end: column_time}
    if isinstance(spec, WindowTimeSpec):
        before = event_time_columns(upstream[0])
        if spec.end not in before:
            return before
        window_end = before[spec.end]
        return {**before, spec.column: EventTime(spec.column, window_end.delay, window_end.step)}
    if isinstance(spec, AggregateSpec):
        found: dict[str, EventTime] = {}
        for edge in step.inputs:
            before = event_time_columns(edge.upstream)
            found.update({name: before[name] for name in spec.key_columns if name in before and name not in found})
        return found
    if isinstance(spec, WindowSpec):
        before = event_time_columns(upstream[0])
        found = {name: before[name] for name in spec.key_columns if name in before}
        if spec.column in before:
            time = before[spec.column]
            window_time = EventTime("window_end", time.delay, time.step, ("window_start", "window_end"))
            found.update({"window_start": window_time, "window_end": window_time})
        return found
    if isinstance(spec, JoinSpec):
        left, right = (event_time_columns(up) for up in upstream)
        if spec.how == "left_semi":
            return left
        if spec.using:
            right = {name: time for name, time in right.items() if name not in spec.right_keys}
        return {**right, **left}
    if isinstance(spec, ProcessSpec):
        if spec.event_time_column is None:
            return {}
        marks = watermarks_upstream(step)
        delay = marks[0].delay if marks else 0
        return {spec.event_time_column: EventTime(spec.event_time_column, delay, step.name)}
    if isinstance(spec, UnionSpec):
        return event_time_columns(upstream[0])
    if upstream:
        return event_time_columns(upstream[0])
    return {}


def distinct_event_times(columns: dict[str, EventTime]) -> list[EventTime]:
    """The distinct event times among ``columns`` (a window's two columns count once), in column order."""
    return list(dict.fromkeys(columns.values()))
