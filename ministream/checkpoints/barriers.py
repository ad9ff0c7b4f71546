"""Barriers in the continuous model: how a checkpoint is taken while rows keep flowing.

The driver of a checkpointed continuous run (:class:`CheckpointingDriver`) is the continuous driver
(``continuous.ContinuousDriver``) plus the checkpoint coordinator (``coordinator.CheckpointCoordinator``):

1. every ``interval`` rows read (over all sources), the coordinator triggers checkpoint n: each source notes
   its offset and sends ``Barrier(n)`` on its channels, behind the rows it sent (barriers of several
   checkpoints may be in flight at once, in order; an unaligned checkpoint is skipped while another one is);
2. each subtask handles the barrier in the run's *mode*:

   - ``aligned``: ``Subtask.align`` holds back each input that delivered barrier n until all have; then the
     subtask snapshots its operator, its watermark and its valve, acknowledges, and forwards the barrier;
   - ``unaligned`` (:class:`UnalignedBarriers`): the first barrier snapshots at once and overtakes the
     records waiting in the subtask's channels, which are stored with the checkpoint as in-flight data;
   - ``at_least_once`` (:class:`AtLeastOnceBarriers`): nothing is held back; the snapshot comes when the
     barrier has arrived on every input, so it may include rows from after the barrier;

3. a sink's snapshot pre-commits its open transaction (``exactly_once.ExactlyOnceSink``); every row that reaches a
   sink is written to it at once (``sink.write(0, watermark, rows)``);
4. at the end of the input, after the final watermark, a last checkpoint commits the last rows.

``pictures=True`` keeps, each time an aligned subtask holds an input back, a DOT picture of every channel and
what waits in it (:func:`barriers_dot`): the diagram of the barrier-alignment lesson.

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
>>> from ministream.checkpoints.coordinator import CheckpointCoordinator
>>> from ministream.checkpoints.storage import MemoryStorage
>>> from ministream.time.clock import ManualClock
>>> from ministream.core.trace import Trace
>>> flow = Dataflow("counts")
>>> events = flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}, {"key": "a"}],
...                                                [{"key": "a"}, {"key": "c"}], [{"key": "b"}, {"key": "b"}]]))
>>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
>>> trace = Trace(model="continuous")
>>> from ministream.operators.planner import physical_graph
>>> graph = physical_graph(flow, 1, model="continuous", clock=ManualClock(), trace=trace)
>>> coordinator = CheckpointCoordinator(graph, MemoryStorage(), {}, "continuous")
>>> CheckpointingDriver(graph, ManualClock(), 0, None, trace, coordinator=coordinator, interval=3).run()
>>> coordinator.completed   # after rows 3 and 6 of 7, and a last one at the end of the input
[1, 2, 3]
>>> [line.text for line in trace.of_kind("barrier")][:2]
['barrier 1 injected after 3 rows (offset 3)', 'barrier 1 on input 0 (events[0]->totals[0]): aligned, snapshot taken, barrier forwarded']
"""

from __future__ import annotations

from ministream.checkpoints.coordinator import Checkpoint, CheckpointCoordinator, snapshot_subtask
from ministream.core.physical import Barrier, PhysicalGraph, Subtask
from ministream.models.continuous import ContinuousDriver

MODES = ("aligned", "unaligned", "at_least_once")


class CheckpointingDriver(ContinuousDriver):
    """The continuous driver with checkpoints: barriers, snapshots, acknowledgements, sink transactions.

    State (on top of the continuous driver's): ``self.rows_read`` (rows read from all sources, for the
    interval), ``self.rows_of = {source: rows it delivered}`` (for its crash point) and ``self.pictures``.

    Args:
        graph, clock, seed, idle_timeout, trace: as for ``continuous.ContinuousDriver``.
        coordinator: the ``coordinator.CheckpointCoordinator`` that collects acknowledgements.
        interval: rows read between two checkpoints.
        mode: ``"aligned"``, ``"unaligned"`` or ``"at_least_once"``.
        sinks: ``{sink step: sinks.AtLeastOnceSink or ExactlyOnceSink}``, the sinks' transactions.
        pictures: keep a DOT picture of the channels each time an input is held back.

    (See the module's example; ``recovery.run_with_recovery(flow, model="continuous")`` builds and runs one.)
    """

    def __init__(
        self,
        graph: PhysicalGraph,
        clock,
        seed: int,
        idle_timeout,
        trace,
        *,
        coordinator: CheckpointCoordinator,
        interval: int,
        mode: str = "aligned",
        sinks: dict | None = None,
        pictures: bool = False,
    ):
        if mode not in MODES:
            raise ValueError(f"checkpoint mode must be one of {', '.join(MODES)}, not {mode!r}")
        if interval < 1:
            raise ValueError(f"a checkpoint interval is a number of rows, at least 1, not {interval!r}")
        super().__init__(graph, clock, seed, idle_timeout, trace)
        self.coordinator, self.interval, self.mode = coordinator, interval, mode
        self.sink_writers = sinks or {}
        self.sources = {step.name: step.source for step in graph.flow.sources}
        self.rows_of = {reader.name: 0 for reader in self.readers}  # {source: rows delivered}
        self.rows_read = 0
        self.pictures: list[tuple[str, str]] | None = [] if pictures else None
        self.current_position = 0
        self._outputs = _outputs_by_sender(graph)
        for subtask in graph.subtasks:
            if subtask.operator is None:
                continue
            if mode == "aligned":
                subtask.on_marker = self._aligned
            else:
                subtask.checkpointing = (UnalignedBarriers if mode == "unaligned" else AtLeastOnceBarriers)(self)

    # -- the sources: crash points and barriers ------------------------------------------------------------

    def _read(self, reader) -> None:
        is_row = isinstance(reader.entries[reader.position], dict)
        if is_row:
            self.sources[reader.name].crash_if_due(self.rows_of[reader.name])
        super()._read(reader)
        if is_row:
            self.rows_of[reader.name] += 1
            self.rows_read += 1
            if self.rows_read % self.interval == 0:
                self.trigger()

    def trigger(self) -> int | None:
        """Step 1: start a checkpoint, each source sending its barrier behind its rows (``None``: skipped,
        because an unaligned checkpoint was in flight)."""
        if self.mode == "unaligned" and self.coordinator.in_progress():
            self._explain(
                "checkpoint",
                "skipped",
                f"after {self.rows_read} rows: an unaligned checkpoint is still in flight, and only one may be",
            )
            return None
        offsets = {
            reader.name: {
                "offset": reader.position,
                "rows": self.rows_of[reader.name],
                "idle": reader.idle,
                "last_active": reader.last_active,
            }
            for reader in self.readers
        }
        n = self.coordinator.trigger(offsets, {"clock": self.clock.now(), "rows_read": self.rows_read})
        for reader in self.readers:
            reader.subtask.output.broadcast(Barrier(n))
            rows = self.rows_of[reader.name]
            self._explain(
                reader.name,
                "barrier",
                f"barrier {n} injected after {rows} row{'s' if rows != 1 else ''} (offset {reader.position})",
            )
        return n

    def run(self) -> None:
        """Run to the end of the input, then take a last checkpoint so that the sinks commit the last rows."""
        super().run()
        self.trigger()
        self._run_until_quiet()

    def restore(self, checkpoint: Checkpoint) -> None:
        """Rewind the sources to the checkpoint's offsets, set the clock, and put the in-flight data back in
        its channels (the operators are restored by ``restore.restore_graph``)."""
        self.clock.set(checkpoint.progress["clock"])
        for reader in self.readers:
            saved = checkpoint.sources[reader.name]
            reader.position, reader.idle, reader.last_active = saved["offset"], saved["idle"], saved["last_active"]
            self.rows_of[reader.name] = saved["rows"]
        self.rows_read = checkpoint.progress["rows_read"]
        for subtask in self.graph.subtasks:
            for position, (_, channel) in enumerate(subtask.inputs):
                channel.messages.extend(checkpoint.channels.get(channel_id(subtask, position), []))

    # -- the subtasks: snapshots ---------------------------------------------------------------------------

    def take_snapshot(self, subtask: Subtask, barrier: Barrier) -> dict:
        """Step 2: a subtask's snapshot for a barrier; a sink pre-commits its transaction (step 3)."""
        sink = self.sink_writers.get(subtask.step.name)
        if sink is not None:
            sink.pre_commit(barrier.checkpoint_id)
        return snapshot_subtask(subtask, delta=self.coordinator.is_delta(barrier.checkpoint_id))

    def snapshot_and_forward(self, subtask: Subtask, barrier: Barrier, how: str = "aligned") -> None:
        """Snapshot, acknowledge, forward the barrier."""
        snapshot = self.take_snapshot(subtask, barrier)
        subtask.output.broadcast(barrier)
        self.explain_barrier(subtask, None, barrier, f"{how}, snapshot taken, barrier forwarded")
        self.coordinator.acknowledge(barrier.checkpoint_id, subtask, snapshot)

    def _aligned(self, subtask: Subtask, barrier) -> None:
        self.snapshot_and_forward(subtask, barrier, "aligned")

    def outputs_of(self, subtask: Subtask) -> list[tuple[Subtask, int, object]]:
        """Every output channel of a subtask as ``(receiver, its input position, channel)``."""
        return self._outputs.get(str(subtask), [])

    def _deliver(self, subtask: Subtask, position: int) -> None:
        queue = subtask.inputs[position][1].messages
        barrier = queue[0] if queue and isinstance(queue[0], Barrier) else None
        self.current_position = position  # the input being read: the one a barrier arrives on
        super()._deliver(subtask, position)
        if barrier is not None and position in subtask.held_back:
            self.explain_barrier(
                subtask, position, barrier, f"held back until barrier {barrier.checkpoint_id} arrives on every input"
            )
            if self.pictures is not None:
                self.pictures.append(
                    (
                        f"{subtask} holds back input {position} (barrier {barrier.checkpoint_id})",
                        barriers_dot(self.graph, f"{subtask} holds back input {position}"),
                    )
                )
        sink = self.sink_writers.get(subtask.step.name)
        if sink is not None and subtask.operator.buffer:  # every row reaching a sink is written at once
            rows, subtask.operator.buffer = subtask.operator.buffer, []
            sink.write(0, subtask.watermark, rows)

    def explain_barrier(self, subtask: Subtask, position: int | None, barrier: Barrier, text: str) -> None:
        """A trace line about a barrier at a subtask (``position=None``: when its last input delivered it)."""
        if self.trace is None:
            return
        if position is None:
            position = self.current_position
        channel = subtask.inputs[position][1].name
        self.trace.record(
            subtask.step.name,
            subtask.index,
            "barrier",
            f"barrier {barrier.checkpoint_id} on input {position} ({channel}): {text}",
        )


def _outputs_by_sender(graph: PhysicalGraph) -> dict[str, list]:
    """``{sender: [(receiver, position at the receiver, channel)]}`` for every channel of the graph."""
    receiving = {
        id(channel): (receiver, position)
        for receiver in graph.subtasks
        for position, (_, channel) in enumerate(receiver.inputs)
    }
    found: dict[str, list] = {}
    for sender in graph.subtasks:
        for _, channels, _ in sender.output.routes:
            for channel in channels:
                receiver, position = receiving[id(channel)]
                found.setdefault(str(sender), []).append((receiver, position, channel))
    return found


def channel_id(subtask: Subtask, position: int) -> str:
    """The name under which a channel's in-flight data is stored: its receiver and input position.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("counts")
    >>> events = flow.source("events", ScriptedSource([[{"key": "a"}]]))
    >>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    >>> graph = physical_graph(flow, parallelism=2)
    >>> channel_id(graph.by_step["totals"][1], 0)
    'totals[1]#0'
    """
    return f"{subtask}#{position}"


class UnalignedBarriers:
    """Unaligned checkpoints for one subtask: the first barrier n snapshots at once and overtakes.

    At the first barrier n the subtask snapshots its state and then, for each other input, either finds
    barrier n already waiting in the channel (it takes it out; the records before it are in flight) or starts
    recording what it takes from that channel until barrier n arrives (also in flight). On its outputs it puts
    barrier n in front of the records waiting there (they are in flight too, from the sender's side). Its part
    is done when barrier n has come on every input.

    State: ``self.active = {"barrier", "waiting": {input positions}, "snapshot"}`` or ``None``.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.checkpoints.recovery import run_with_recovery
    >>> from ministream.checkpoints.storage import MemoryStorage
    >>> flow = Dataflow("clicks")
    >>> web = flow.source("web", ScriptedSource([[{"key": "a"}, {"key": "b"}, {"key": "a"}, {"key": "a"}]]))
    >>> mobile = flow.source("mobile", ScriptedSource([[{"key": "b"}]]))
    >>> web.key_by("key").aggregate("totals", mobile.key_by("key"), count=Count()).sink("output", CollectingSink())
    >>> storage = MemoryStorage()
    >>> run = run_with_recovery(flow, model="continuous", mode="unaligned", seed=2, storage=storage)  # every 2 rows
    >>> {channel: len(messages) for channel, messages in Checkpoint.from_files(storage.files[1]).channels.items()}
    {'totals[0]#0': 2}
    """

    def __init__(self, driver):
        self.driver = driver
        self.active = None

    def takes(self, subtask: Subtask, position: int, message) -> bool:
        """See every message first: take the barriers, record in-flight records; ``True`` when taken."""
        if isinstance(message, Barrier):
            if self.active is None:
                self._first_barrier(subtask, position, message)
            else:
                self.active["waiting"].discard(position)
            self._finish_if_done(subtask)
            return True
        if self.active is not None and position in self.active["waiting"]:
            recorded = self.active["snapshot"]["in_flight_inputs"]
            recorded.setdefault(channel_id(subtask, position), []).append(message)
        return False

    def _first_barrier(self, subtask: Subtask, position: int, barrier: Barrier) -> None:
        snapshot = self.driver.take_snapshot(subtask, barrier)
        snapshot["in_flight_inputs"], snapshot["in_flight_outputs"] = {}, {}
        waiting = set(range(len(subtask.inputs))) - {position}
        for other in sorted(waiting):
            queue = subtask.inputs[other][1].messages
            if barrier in queue:  # the barrier is already here: overtake what is before it
                ahead = list(queue)[: list(queue).index(barrier)]
                queue.remove(barrier)
                if ahead:
                    snapshot["in_flight_inputs"][channel_id(subtask, other)] = ahead
                waiting.discard(other)
        for receiver, position_there, channel in self.driver.outputs_of(subtask):
            queue = channel.messages
            overtaken = list(queue)
            if overtaken:
                snapshot["in_flight_outputs"][channel_id(receiver, position_there)] = overtaken
            queue.appendleft(barrier)  # the barrier jumps the queue
        self.active = {"barrier": barrier, "waiting": waiting, "snapshot": snapshot}
        self.driver.explain_barrier(
            subtask,
            position,
            barrier,
            "unaligned: snapshot at once, the barrier "
            f"overtakes the records waiting on {len(waiting)} other input(s) and the outputs",
        )

    def _finish_if_done(self, subtask: Subtask) -> None:
        if self.active is not None and not self.active["waiting"]:
            active, self.active = self.active, None
            self.driver.coordinator.acknowledge(active["barrier"].checkpoint_id, subtask, active["snapshot"])


class AtLeastOnceBarriers:
    """At-least-once checkpoints for one subtask (Flink's ``CheckpointBarrierTracker``): count barrier n on
    each input without holding any input back; snapshot and forward when it has come on all of them.

    State: ``self.arrived = {checkpoint_id: {input positions that delivered its barrier}}``.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.checkpoints.recovery import run_with_recovery
    >>> from ministream.core.faults import crash_at
    >>> flow = Dataflow("clicks")
    >>> web = flow.source("web", ScriptedSource([[{"key": "a"}, {"key": "b"}, {"key": "a"}, {"key": "a"}]]))
    >>> mobile = flow.source("mobile", ScriptedSource([[{"key": "b"}]]))
    >>> web.key_by("key").aggregate("totals", mobile.key_by("key"), count=Count()).sink("output", CollectingSink())
    >>> crash_at(flow, 3)
    ('web', 3)
    >>> run = run_with_recovery(flow, model="continuous", mode="at_least_once")
    >>> {row["key"]: row["count"] for row in run.output()[0].rows}   # each key's last count
    {'b': 3, 'a': 3}

    Not 2 b's but 3: checkpoint 1 has ``web`` at offset 1, but its snapshot came when barrier 1 arrived on
    ``mobile``, after ``totals`` had counted ``web``'s "b", which the recovered run reads and counts again.
    """

    def __init__(self, driver):
        self.driver = driver
        self.arrived: dict[int, set[int]] = {}

    def takes(self, subtask: Subtask, position: int, message) -> bool:
        """Take the barriers, count them; other messages go on as usual (``False``)."""
        if not isinstance(message, Barrier):
            return False
        arrived = self.arrived.setdefault(message.checkpoint_id, set())
        arrived.add(position)
        if len(arrived) < len(subtask.inputs):
            self.driver.explain_barrier(
                subtask,
                position,
                message,
                "at least once: counted, the input is "
                "NOT held back (its next records go into the state before the snapshot)",
            )
            return True
        del self.arrived[message.checkpoint_id]
        self.driver.snapshot_and_forward(subtask, message, "at least once: now on every input")
        return True


def barriers_dot(graph: PhysicalGraph, title: str = "") -> str:
    """The physical graph as DOT, each channel labelled with what waits in it, oldest first: ``3 rows``,
    ``B1`` (a barrier), ``W`` (a watermark). A held-back channel is drawn red and dashed.

    >>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    >>> from ministream.operators.planner import physical_graph
    >>> flow = Dataflow("counts")
    >>> events = flow.source("events", ScriptedSource([[{"key": "a"}]]))
    >>> events.key_by("key").aggregate("totals", count=Count()).sink("output", CollectingSink())
    >>> graph = physical_graph(flow, parallelism=1)
    >>> graph.by_step["events"][0].output.send([{"key": "a"}]); graph.by_step["events"][0].output.broadcast(Barrier(1))
    >>> print(barriers_dot(graph).splitlines()[4])
      "events[0]" -> "totals[0]" [label="1 row | B1"];
    """
    lines = [
        'digraph "barriers" {',
        "  rankdir=LR;",
        f'  label="{title}"; labelloc=t; fontname="Helvetica";',
        '  node [shape=box, style="rounded", fontname="Helvetica"]; edge [fontname="Helvetica"];',
    ]
    for subtask in graph.subtasks:
        for position, (_, channel) in enumerate(subtask.inputs):
            sender = channel.sender
            style = ', color="red", style="dashed", fontcolor="red"' if position in subtask.held_back else ""
            held = " (held back)" if position in subtask.held_back else ""
            lines.append(f'  "{sender}" -> "{subtask}" [label="{_describe(channel.messages)}{held}"{style}];')
    lines.append(LEGEND)
    lines.append("}")
    return "\n".join(lines)


LEGEND = (
    '  "legend" [shape=plaintext, fontsize=10, label="on each arrow, what waits in that channel, oldest first:\\l'
    "  3 rows: rows not read yet\\l  B1: the barrier of checkpoint 1\\l  W: a watermark\\l"
    '  empty: nothing waits\\l  red and dashed: an input held back\\l"];'
)
"""The key to :func:`barriers_dot`'s symbols, drawn with every picture."""


def _describe(messages) -> str:
    parts, rows = [], 0
    for message in messages:
        if isinstance(message, list):
            rows += len(message)
            continue
        if rows:
            parts.append(f"{rows} row{'s' if rows != 1 else ''}")
            rows = 0
        parts.append(f"B{message.checkpoint_id}" if isinstance(message, Barrier) else type(message).__name__[0])
    if rows:
        parts.append(f"{rows} row{'s' if rows != 1 else ''}")
    return " | ".join(parts) if parts else "empty"
