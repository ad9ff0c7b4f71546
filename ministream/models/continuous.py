"""The continuous model: rows flow one at a time and watermarks flow with them, as in Flink.

There are no batches. Each source reads its script row by row (the batches of a script are read one after
the other, as one stream), and the scheduler interleaves the sources and the subtasks in an order drawn
from the seed. What moves event time forward is the watermark markers that travel in the channels with the
rows:

1. each ``with_watermark`` subtask emits ``max event time - delay - 1`` whenever that rises (bounded
   out-of-orderness, ``watermark.WatermarkOperator``);
2. each subtask's watermark is the minimum over its active input channels and never goes down
   (``watermarks.WatermarkValve``); the operator hears of it through ``on_watermark`` (a window fires, a
   timer fires) and passes it on;
3. **idle inputs leave the minimum**: a source that has finished its script, or that has delivered no row
   for ``idle_timeout`` of processing time, tells its receivers it is idle (a
   :class:`~ministream.core.physical.WatermarkStatus`) until it delivers a row again;
4. when every source has finished, each sends the final watermark :data:`~ministream.time.watermarks.MAX_WATERMARK`
   (+∞, Flink's ``MAX_WATERMARK``), so every window fires and every event-time timer goes off.

Operators see ``ctx.model == "continuous"``. ``RunningAggregate`` emits one updated row per input row.

**Processing time.** The run's clock (``ctx.clock``, a ``ManualClock``) never reads the wall clock. It moves
only at a :class:`~ministream.time.clock.ClockStep` in a source's script: when a source reads one, every source
stops reading, the rows already read are processed to the end, and then the clock moves forward, sources
idle for ``idle_timeout`` go idle, and every operator's ``on_processing_time(now)`` fires its due
processing-time timers; then reading goes on. (In Flink the clock does not wait for rows in flight; ministream
lets a script say exactly what happened before the clock moved.)

**What may depend on the interleaving.** With one source upstream of each keyed step, each key's rows and the
watermarks reach the key's subtask in script order, so the *multiset* of output rows is the same for every
seed and parallelism (``tests/models/test_continuous.py`` checks it). With two sources feeding one step (a join, a
union), the interleaving decides which rows arrive before which watermark of the other input: a row can be
late under one seed and on time under another, in ministream as in Flink, because the two inputs' watermarks
advance independently. ministream does not hide that: run such a pipeline under several seeds to see it.
Sinks see rows of different subtasks in an order that depends on the seed too; compare multisets.

>>> from ministream.core.plan import Dataflow
>>> from ministream.core.aggregates import Count
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.core.sinks import CollectingSink
>>> flow = Dataflow("counts")
>>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}], [{"key": "a"}]]))
>>> events.key_by("key").aggregate("count_per_key", count=Count()).sink("output", CollectingSink())
>>> [batch] = run_continuous(flow).output("output")
>>> batch.batch_id, batch.watermark == MAX_WATERMARK, batch.rows
(0, True, [{'key': 'a', 'count': 1}, {'key': 'b', 'count': 1}, {'key': 'a', 'count': 2}])
"""

from __future__ import annotations

import random

import attrs

from ministream.core.operator import BatchInfo
from ministream.core.physical import PhysicalGraph, Subtask, Watermark, WatermarkStatus
from ministream.core.plan import Dataflow
from ministream.core.steps import SortSpec
from ministream.core.trace import Trace
from ministream.errors import PipelineError
from ministream.models.run import Run
from ministream.operators.planner import physical_graph
from ministream.state.backends import StateBackends, state_backends
from ministream.time.clock import ClockStep, ManualClock
from ministream.time.units import format_duration, format_ts, parse_duration
from ministream.time.watermarks import MAX_WATERMARK


@attrs.frozen
class Arrival:
    """One row reaching a sink, with the sink's watermark at that moment (``None`` before the first).

    >>> Arrival({"key": "a"}, 4_999)
    Arrival(row={'key': 'a'}, watermark=4999)
    """

    row: dict
    watermark: int | None


@attrs.define
class ContinuousRun(Run):
    """What a continuous run produced: each sink's rows as one ``BatchResult`` (batch 0, the sink's final
    watermark, rows in arrival order), plus every row's :class:`Arrival` and the clock."""

    arrivals: dict[str, list[Arrival]] = attrs.field(factory=dict)
    clock: ManualClock | None = None

    def arrivals_at(self, sink: str = "output") -> list[Arrival]:
        """The rows one sink received, in arrival order, each with the sink's watermark when it arrived.

        >>> from ministream.core.plan import Dataflow
        >>> from ministream.core.sources import ScriptedSource
        >>> from ministream.core.sinks import CollectingSink
        >>> flow = Dataflow("passthrough")
        >>> flow.source("events", ScriptedSource([[{"ts": 5_000}, {"ts": 1_000}]])).with_watermark(
        ...     "wm", "ts", "1 second").sink("output", CollectingSink())
        >>> run_continuous(flow).arrivals_at("output")
        [Arrival(row={'ts': 5000}, watermark=None), Arrival(row={'ts': 1000}, watermark=3999)]
        """
        return self.arrivals[sink]


class SourceReader:
    """One source of a continuous run: reads its script one entry at a time and says when it goes idle.

    State: ``self.entries`` (rows and ``ClockStep``\\ s, the script's batches one after the other),
    ``self.position`` (the next entry), ``self.idle`` (whether its receivers were told it is idle) and
    ``self.last_active`` (the processing time of its last row).

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> flow = Dataflow("f")
    >>> _ = flow.source("events", ScriptedSource([[{"n": 1}], [ClockStep(5), {"n": 2}]]))
    >>> reader = SourceReader(flow.step("events"), physical_graph(flow).by_step["events"][0], ManualClock())
    >>> [reader.next_entry() for _ in range(3)], reader.has_next()
    ([{'n': 1}, ClockStep(advance=5), {'n': 2}], False)
    """

    def __init__(self, step, subtask: Subtask, clock: ManualClock):
        source = step.source
        self.name = step.name
        self.subtask = subtask
        self.entries = [entry for batch_id in range(len(source)) for entry in source.batch(batch_id)]
        self.position = 0
        self.idle = False
        self.last_active = clock.now()

    def has_next(self) -> bool:
        """Whether any of the script is left to read."""
        return self.position < len(self.entries)

    def next_entry(self):
        """The next row or ``ClockStep`` of the script."""
        entry = self.entries[self.position]
        self.position += 1
        return entry

    def set_idle(self, idle: bool) -> None:
        """Tell every receiver that this source is idle (it leaves their minimum) or active again."""
        self.idle = idle
        self.subtask.output.broadcast(WatermarkStatus(idle))


class ContinuousDriver:
    """Runs a physical graph in the continuous model: reads the sources row by row, delivers messages, moves
    the clock at clock steps, and ends the input with the final watermark.

    Each scheduling step picks, from the seeded generator, one of the *actors* that can act: a source with
    script left to read (unless a clock step is waiting) or a subtask with a message to take.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> from ministream.core.sinks import CollectingSink
    >>> flow = Dataflow("f")
    >>> flow.source("events", ScriptedSource([[{"n": 1}, {"n": 2}]])).sink("output", CollectingSink())
    >>> driver = ContinuousDriver(physical_graph(flow, model="continuous"), ManualClock(), seed=0,
    ...                           idle_timeout=None, trace=None)
    >>> driver.run(); [arrival.row for arrival in driver.arrivals["output"]]
    [{'n': 1}, {'n': 2}]
    """

    def __init__(
        self, graph: PhysicalGraph, clock: ManualClock, seed: int, idle_timeout: int | None, trace: Trace | None
    ):
        self.graph = graph
        self.clock = clock
        self.random = random.Random(seed)
        self.idle_timeout = idle_timeout
        self.trace = trace
        self.readers = [SourceReader(step, graph.by_step[step.name][0], clock) for step in graph.flow.sources]
        self.sinks = {step.name: graph.by_step[step.name][0] for step in graph.flow.sinks}
        self.arrivals: dict[str, list[Arrival]] = {name: [] for name in self.sinks}  # {sink: [Arrival]}
        self.pending_clock_step: ClockStep | None = None
        self.row_counts = graph.row_counts  # what each step received and emitted (core/accounting.py)

    def run(self) -> None:
        """Run until every source has read its script and every message has been taken."""
        for reader in self.readers:
            if not reader.has_next():
                self._finished(reader)
        while True:
            self._run_until_quiet()
            if self.pending_clock_step is None:
                break
            self._move_clock(self.pending_clock_step)
            self._run_until_quiet()  # what the clock set off (timers, idle statuses) settles before reading
            self.pending_clock_step = None
        self._end_of_input()
        self._run_until_quiet()

    def _run_until_quiet(self) -> None:
        """Read and deliver until no source may read and no message is waiting."""
        while True:
            actors = (
                [] if self.pending_clock_step is not None else [reader for reader in self.readers if reader.has_next()]
            )
            actors += [
                (subtask, positions) for subtask in self.graph.subtasks if (positions := subtask.runnable_inputs())
            ]
            if not actors:
                return
            actor = actors[self.random.randrange(len(actors))]
            if isinstance(actor, SourceReader):
                self._read(actor)
            else:
                subtask, positions = actor
                self._deliver(subtask, positions[self.random.randrange(len(positions))])

    def _read(self, reader: SourceReader) -> None:
        entry = reader.next_entry()
        if isinstance(entry, ClockStep):
            self.pending_clock_step = entry
            self._explain(
                reader.name,
                "clock",
                f"clock step of {format_duration(entry.advance)}: every "
                "source stops reading until the rows already read are processed",
            )
        else:
            if reader.idle:
                reader.set_idle(False)
                self._explain(reader.name, "active", "delivers a row again: active, it rejoins the minimum")
            reader.last_active = self.clock.now()
            self._explain(reader.name, "read", f"row {reader.position} of the script", entry)
            reader.subtask.output.send([entry])
        if not reader.has_next():
            self._finished(reader)

    def _finished(self, reader: SourceReader) -> None:
        reader.set_idle(True)
        self._explain(reader.name, "idle", "finished its script: idle, it leaves its receivers' minimum")

    def _deliver(self, subtask: Subtask, position: int) -> None:
        was = (subtask.watermark, subtask.valve.idle if subtask.valve else False)
        sink = self._sink_name(subtask)
        buffered = len(subtask.operator.buffer) if sink else 0
        caused = len(self.trace.lines) if self.trace is not None else 0
        subtask.run_one(position)
        if sink:
            self.arrivals[sink].extend(Arrival(row, subtask.watermark) for row in subtask.operator.buffer[buffered:])
        if self.trace is not None:
            self._explain_watermark(subtask, *was, before=caused)

    def _sink_name(self, subtask: Subtask) -> str | None:
        name = subtask.step.name
        return name if self.sinks.get(name) is subtask else None

    def _move_clock(self, step: ClockStep) -> None:
        """Every row read so far is processed: move the clock, mark sources idle, fire processing-time
        timers."""
        now = self.clock.advance(step.advance)
        self._explain(
            "clock", "clock", f"processing time advances by {format_duration(step.advance)} to {format_ts(now)}"
        )
        if self.idle_timeout is not None:
            for reader in self.readers:
                if not reader.idle and now - reader.last_active >= self.idle_timeout:
                    reader.set_idle(True)
                    self._explain(
                        reader.name,
                        "idle",
                        f"no row for {format_duration(now - reader.last_active)}"
                        f" of processing time (idle timeout {format_duration(self.idle_timeout)}):"
                        " idle, it leaves its receivers' minimum",
                    )
        for subtask in self.graph.subtasks:
            if subtask.operator is not None:
                subtask.operator.on_processing_time(now)

    def _end_of_input(self) -> None:
        """Every source has finished: each becomes active again, and once every subtask has heard so, each
        sends the final watermark, +∞, so that everything fires. (Sent at once, +∞ could reach a step through one
        input while another input, still idle there, left its minimum: that step would jump to +∞ and take the
        rows the other input then emits, when +∞ reaches it, for late.)"""
        for reader in self.readers:
            reader.set_idle(False)
        self._run_until_quiet()
        for reader in self.readers:
            reader.subtask.output.broadcast(Watermark(MAX_WATERMARK))
            self._explain(reader.name, "watermark", "end of all input: active again to send the final watermark +∞")

    def _explain(self, step: str, kind: str, text: str, row: dict | None = None) -> None:
        if self.trace is not None:
            self.trace.record(step, 0, kind, text, row)

    def _explain_watermark(self, subtask: Subtask, watermark: int | None, idle: bool, before: int) -> None:
        """Trace a change of the subtask's watermark or idleness, placed before the lines it caused (windows
        fired, timers...), which the operator recorded while the message was being taken."""
        name, index = subtask.step.name, subtask.index
        changes = []
        if subtask.watermark != watermark:
            inputs = len(subtask.inputs)
            why = "from its input" if inputs == 1 else f"the minimum over its active inputs ({inputs} in all)"
            changes.append(("watermark", f"watermark rises to {format_ts(subtask.watermark)}: {why}"))
        now_idle = subtask.valve.idle if subtask.valve else False
        if now_idle != idle:
            changes.append(
                ("idle", "every input is idle: idle too")
                if now_idle
                else ("active", "an input is active: active again")
            )
        for kind, text in changes:
            self.trace.record(name, index, kind, text)
            self.trace.lines.insert(before, self.trace.lines.pop())  # the cause before its effects
            before += 1


def check_continuous(flow: Dataflow) -> None:
    """Refuse, before running, a dataflow that cannot run in the continuous model.

    >>> check_continuous(Dataflow("empty"))
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: dataflow 'empty' has no source
    """
    if not flow.sources:
        raise PipelineError(f"dataflow {flow.name!r} has no source")
    if not flow.sinks:
        raise PipelineError(f"dataflow {flow.name!r} has no sink: add .sink('output', CollectingSink())")
    for step in flow.steps:
        if isinstance(step.spec, SortSpec):
            raise PipelineError(
                f"step {step.name!r}: the continuous model has no batches, so no whole result to sort: "
                "sort in the micro-batch model, after an aggregation in complete mode"
            )


def run_continuous(
    flow: Dataflow,
    *,
    parallelism: int = 1,
    seed: int = 0,
    trace: bool | Trace = False,
    clock: ManualClock | None = None,
    idle_timeout=None,
    output_mode: str = "append",
    state_backend: str | StateBackends | None = None,
) -> ContinuousRun:
    """Run a dataflow row by row, as Flink runs a job, and return what the sinks received.

    >>> from ministream.core.sources import ScriptedSource
    >>> from ministream.core.sinks import CollectingSink
    >>> flow, clock = Dataflow("f"), ManualClock()
    >>> flow.source("events", ScriptedSource([[{"n": 1}, ClockStep("1 minute"), {"n": 2}]])).sink(
    ...     "output", CollectingSink())
    >>> run = run_continuous(flow, clock=clock)
    >>> clock.now(), run.output("output")[0].rows
    (60000, [{'n': 1}, {'n': 2}])

    Args:
        flow: the pipeline; its sources must be scripted (``sources.ScriptedSource``); a script may hold
            ``ClockStep`` entries between rows.
        parallelism: how many subtasks each keyed step runs as.
        seed: the scheduler's seed: it picks the interleaving of sources and subtasks.
        trace: ``True`` (or a ``Trace``) to record, per step, watermark changes, late rows and emitted rows.
        clock: the processing-time clock (a new ``ManualClock()`` at 0 when ``None``); ``ctx.clock`` in
            operators.
        idle_timeout: a duration (ms or ``"5 seconds"``): a source that delivers no row for this long in
            processing time goes idle. ``None``: only a finished source is idle.
        output_mode: what operators see as ``ctx.output_mode``. The continuous model has no batches to
            emit at, so the built-in steps do not use it; a step that was declared with a mode may check it.
        state_backend: where keyed state lives (``"memory"``, ``"rocksdb"``, ``"redis"``: ``state/backends.py``);
            a store-backed state is written back after every message a subtask handles.
    """
    check_continuous(flow)
    clock = clock if clock is not None else ManualClock()
    timeout = None if idle_timeout is None else parse_duration(idle_timeout)
    tracer = (trace if isinstance(trace, Trace) else Trace()) if trace else None
    if tracer is not None:
        tracer.model = "continuous"
        tracer.begin_batch(0, None)
    graph = physical_graph(
        flow,
        parallelism,
        output_mode=output_mode,
        model="continuous",
        trace=tracer,
        clock=clock,
        state_backend=state_backends(state_backend),
    )
    for step in flow.sinks:
        step.sink.reset()
    driver = ContinuousDriver(graph, clock, seed, timeout, tracer)
    driver.run()
    graph.flush_state()  # what processing-time timers changed after the last message
    final = {}  # {sink: its watermark at the end}
    for name, subtask in driver.sinks.items():
        final[name] = subtask.watermark
        subtask.operator.on_batch_end(BatchInfo(0, watermark=subtask.watermark))
    if tracer is not None:
        tracer.end_batch(
            {
                step.name: sum(op.state_size() for op in graph.operators(step.name))
                for step in flow.steps
                if step.parallelism == "keyed"
            }
        )
    outputs = {step.name: step.sink.batches for step in flow.sinks}
    watermarks = [final[flow.sinks[0].name]]  # one "batch": the first sink's final watermark
    return ContinuousRun(outputs, watermarks, tracer, graph, driver.row_counts, arrivals=driver.arrivals, clock=clock)
