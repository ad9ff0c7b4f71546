"""The runtime: a dataflow turned into subtasks joined by channels, run by a seeded scheduler.

Each step of a :class:`~ministream.core.plan.Dataflow` becomes ``parallelism`` *subtasks*, each with its own
operator instance and its own keyed state. Between two steps, every upstream subtask has one *channel* (a FIFO
queue) to every downstream subtask it can send to. A channel carries two kinds of messages:

- a ``list``: a chunk of rows (a keyed step reads them as ``(key, row)`` pairs: :class:`KeyedRows`);
- a *marker*: :class:`EndOfBatch`, :class:`Watermark`, :class:`WatermarkStatus` or :class:`Barrier` (a
  checkpoint's, handled by ``checkpoints/barriers.py``), which flow with the records and so mark a point in
  each channel's sequence.

The :class:`Scheduler` picks, from a seeded random generator, which subtask runs next and from which of its
channels it reads. A subtask that has received a marker on one input but not yet on the others *holds back*
that input (alignment), so that everything before the marker is processed before everything after it, on all
inputs. Because operators only depend on what arrived before each marker, the output does not depend on the
seed, which the tests check.

Which operator a subtask runs is not the graph's business: it asks ``operator_for(step)``, which the
execution model gives it (the planner, ``operators/planner.py``). Every subtask counts the rows it receives
and emits in the graph's :class:`~ministream.core.accounting.RowCounts`, for the run's accounting.

>>> from ministream.core.operator import MapOperator
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sinks import CollectingSink, SinkOperator
>>> from ministream.core.sources import ScriptedSource
>>> flow = Dataflow("demo")
>>> flow.source("numbers", ScriptedSource([[{"n": 1}]])).map("double", lambda r: {"n": 2 * r["n"]}).sink(
...     "output", CollectingSink())
>>> operators = {"double": lambda step: MapOperator(step.spec.fn), "output": lambda step: SinkOperator(step.sink)}
>>> graph = PhysicalGraph(flow, parallelism=2, operator_for=lambda step: operators.get(step.name, lambda s: None)(step))
>>> [str(subtask) for subtask in graph.subtasks]
['numbers[0]', 'double[0]', 'output[0]']
>>> graph.by_step["numbers"][0].output.send([{"n": 1}, {"n": 2}]); Scheduler(graph).run_until_idle()
>>> graph.row_counts.rows_in, graph.row_counts.rows_out
({'double': 2, 'output': 2}, {('numbers', None): 2, ('double', None): 2})
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import Any

import attrs

from ministream.core.accounting import RowCounts
from ministream.core.bad_rows import (
    ROW_ERRORS,
    RowChecks,
    aggregated_columns,
    bad_row_error,
    checks_of,
    missing_column_error,
)
from ministream.core.operator import Operator, StepContext
from ministream.core.plan import Dataflow
from ministream.core.steps import Edge, Step
from ministream.errors import PipelineError
from ministream.state.backends import MEMORY, StateBackends
from ministream.state.keygroups import MAX_PARALLELISM, key_group_of, subtask_of_key_group
from ministream.time.watermarks import WatermarkValve


@attrs.frozen
class EndOfBatch:
    """Marker: the sender has sent every record of micro-batch ``batch_id``."""

    batch_id: int


@attrs.frozen
class Watermark:
    """Marker: the sender will send no more records with event time at or before ``time`` (continuous
    model)."""

    time: int


@attrs.frozen
class WatermarkStatus:
    """Marker: the sender goes idle (``idle=True``: leave me out of your watermark's minimum) or becomes
    active again (continuous model)."""

    idle: bool


@attrs.frozen
class Barrier:
    """Marker: checkpoint ``checkpoint_id``. What the sender sent before it belongs to the checkpoint, what it
    sends after belongs to the next one (``ministream.checkpoints.coordinator``, ``ministream.checkpoints.barriers``)."""

    checkpoint_id: int


class KeyedRows:
    """The rows of one message into a keyed step, read as ``(key, row)`` pairs, keys from the hash edge's key
    function. Each pair is made as it is read and then dropped (``zip`` even reuses it): a chunk of 10,000 rows
    does not become 10,000 tuples held in memory at once, which Python's garbage collector would then walk.
    Each key is computed as its pair is read, too: a key of several columns is a new tuple, which the operator
    then hashes while it is still in the processor's cache (a list of 100,000 of them made first would not be).

    >>> pairs = KeyedRows([{"user": "ann"}, {"user": "bob"}], lambda row: row["user"])
    >>> len(pairs), list(pairs), pairs.keys
    (2, [('ann', {'user': 'ann'}), ('bob', {'user': 'bob'})], ['ann', 'bob'])
    """

    __slots__ = ("key_fn", "rows")

    def __init__(self, rows: list, key_fn):
        self.rows = rows
        self.key_fn = key_fn

    @property
    def keys(self) -> list:
        """The key of every row, in order (computed at each call)."""
        return list(map(self.key_fn, self.rows))

    def __iter__(self):
        return zip(map(self.key_fn, self.rows), self.rows)

    def __len__(self):
        return len(self.rows)


class Channel:
    """A FIFO queue of messages from one subtask (``sender``, e.g. ``"events[0]"``) to another."""

    def __init__(self, sender: str, receiver: str, step: str = ""):
        self.sender = sender
        self.receiver = receiver
        self.step = step  # the receiving step's name
        self.name = f"{sender}->{receiver}"
        self.messages: deque = deque()

    def __repr__(self):
        return f"Channel({self.name}, {len(self.messages)} waiting)"


class Output:
    """Where one subtask sends what its operator emits: one entry per outgoing edge. It counts what it sends
    in ``counts`` under its step's name (the run's accounting)."""

    def __init__(self, step: str = "", counts: RowCounts | None = None):
        self.step = step
        self.counts = counts
        self.routes: list[tuple[str, list[Channel], Edge]] = []
        self.owners: dict[int, dict] = {}  # {route number: {key: receiving subtask}}: key groups, remembered

    def send(self, records: list, output: str | None = None) -> None:
        """Send a chunk of records along every outgoing edge of ``output`` (the main output, or a named side
        output), split by key on hash edges."""
        if not records:
            return
        if self.counts is not None:
            self.counts.sent(self.step, len(records), output)
        for number, (partition, channels, edge) in enumerate(self.routes):
            if edge.output != output:
                continue
            if partition == "hash" and len(channels) > 1:  # each row to the owner of its key's group
                owners = self.owners.setdefault(number, {})
                if len(owners) > 1 << 16:
                    owners.clear()  # a bounded memory of keys seen, not a second copy of the key space
                chunks: list[list] = [[] for _ in channels]
                assert edge.key_fn is not None, f"a hash edge from {self.step} has a key function"
                try:
                    for key, row in zip(map(edge.key_fn, records), records):
                        owner = owners.get(key)
                        if owner is None:
                            owner = owners[key] = subtask_of_key_group(key_group_of(key), len(channels))
                        chunks[owner].append(row)
                except ROW_ERRORS as error:  # a row without its key, or with one that cannot be hashed
                    found = bad_row_error(channels[0].step, records, RowChecks(edge.key_fn))
                    if found is None:
                        raise
                    raise found from error
                for channel, chunk in zip(channels, chunks):
                    if chunk:
                        channel.messages.append(chunk)
            else:  # forward, gather, or a hash edge whose one receiver owns every key group
                channels[0].messages.append(records)

    def broadcast(self, marker) -> None:
        """Send a marker on every outgoing channel, so every receiver sees it in sequence."""
        for _, channels, _ in self.routes:
            for channel in channels:
                channel.messages.append(marker)


def _no_marker_handler(subtask: Subtask, marker) -> None:
    raise RuntimeError(f"{subtask}: no model runs this graph, so nothing handles the aligned marker {marker}")


class Subtask:
    """One parallel instance of a step: an operator, its input channels and its output."""

    def __init__(
        self, step: Step, index: int, parallelism: int, operator: Operator | None, counts: RowCounts | None = None
    ):
        self.step = step
        self.index = index
        self.parallelism = parallelism
        self.operator = operator
        self.counts = counts  # the rows each step received and emitted (core/accounting.py)
        self.inputs: list[tuple[int, Channel]] = []  # (input number of the step, channel)
        self.key_fns: dict[int, Callable[[dict], Any]] = {}  # {input number: key function} of hash inputs
        self.aggregated = aggregated_columns(step.spec)  # the columns its aggregates read, looked for in each chunk
        self.output = Output(step.name, counts)
        self.held_back: set[int] = set()  # positions in self.inputs held until a marker is aligned
        # Continuous model: the valve that makes the subtask's watermark from its channels', and that watermark.
        self.valve: WatermarkValve | None = None
        self.watermark: int | None = None
        # set by the model that runs the graph: what to do when a marker is aligned on every input
        self.on_marker: Callable[[Subtask, Any], None] = _no_marker_handler
        # Set by checkpoints/barriers.py for unaligned and at-least-once checkpoints: it sees every message first and
        # takes the barriers itself (aligned barriers need no such thing: they go through align()).
        self.checkpointing = None
        # Continuous model with a store-backed state: write the state back after each message (state/stored.py).
        self.after_message: Callable[[], None] | None = None

    def __str__(self):
        return f"{self.step.name}[{self.index}]"

    def runnable_inputs(self) -> list[int]:
        """Positions of the input channels that have a message and are not held back."""
        if len(self.inputs) == 1:  # most subtasks have one input channel: no loop over them to build a list
            return [0] if self.inputs[0][1].messages and not self.held_back else []
        return [i for i, (_, channel) in enumerate(self.inputs) if channel.messages and i not in self.held_back]

    def run_one(self, position: int) -> None:
        """Take one message from input channel ``position`` and act on it."""
        input_number, channel = self.inputs[position]
        message = channel.messages.popleft()
        if self.checkpointing is not None and self.checkpointing.takes(self, position, message):
            return
        if isinstance(message, list):
            if self.counts is not None:
                self.counts.received(self.step.name, len(message))
            key_fn = self.key_fns.get(input_number)
            assert self.operator is not None, f"{self}: a source subtask has no input"
            if self.aggregated and message:  # an aggregate of a column the rows lack: refused, as Spark does
                missing = missing_column_error(self.step.name, message[0], self.aggregated)
                if missing is not None:
                    raise missing
            try:
                self.operator.process(message if key_fn is None else KeyedRows(message, key_fn), input_number)
            except PipelineError:
                raise
            except ROW_ERRORS as error:  # a row the step cannot read: name it (core/bad_rows.py), if one is to blame
                upstream = self.step.inputs[input_number].upstream if input_number < len(self.step.inputs) else None
                checks = checks_of(self.step.spec, input_number, key_fn, upstream)
                found = bad_row_error(self.step.name, message, checks)
                if found is None:
                    raise
                raise found from error
        elif isinstance(message, Watermark):
            self.on_watermark(position, message.time)
        elif isinstance(message, WatermarkStatus):
            self.on_watermark_status(position, message.idle)
        else:
            self.align(position, message)
        if self.after_message is not None:
            self.after_message()

    def align(self, position: int, marker) -> None:
        """A marker arrived on one input: hold that input back until the marker has arrived on all inputs,
        then let the model act on it (end a batch; for a ``Barrier``, snapshot the state and forward the
        barrier) and release the inputs."""
        self.held_back.add(position)
        if len(self.held_back) == len(self.inputs):
            self.held_back.clear()
            try:
                self.on_marker(self, marker)
            except PipelineError:
                raise
            except ROW_ERRORS as error:  # the batch's end failed on a row the operator held: name it, if one is
                found = self._bad_held_row()
                if found is None:
                    raise
                raise found from error

    def _bad_held_row(self) -> PipelineError | None:
        """The error naming a row the operator held until the batch's end that its step cannot read, if any."""
        held = self.operator.held_rows() if self.operator is not None else {}
        for input_number, rows in held.items():
            found = bad_row_error(self.step.name, rows, checks_of(self.step.spec, input_number))
            if found is not None:
                return found
        return None

    def on_watermark(self, position: int, time: int) -> None:
        """Continuous model: the subtask's watermark is the minimum over its active input channels
        (``watermarks.WatermarkValve``); it only goes up, and the operator hears of it (and forwards it) only
        when it does."""
        self._raise_watermark(self._valve().on_watermark(position, time))

    def on_watermark_status(self, position: int, idle: bool) -> None:
        """Continuous model: an input channel went idle (it leaves the minimum) or became active again; when
        the subtask itself goes idle or active, it tells its receivers."""
        watermark, status = self._valve().on_status(position, idle)
        self._raise_watermark(watermark)
        if status is not None:
            self.output.broadcast(WatermarkStatus(status))

    def _valve(self) -> WatermarkValve:
        if self.valve is None:
            self.valve = WatermarkValve(len(self.inputs))
        return self.valve

    def _raise_watermark(self, watermark: int | None) -> None:
        if watermark is not None:
            self.watermark = watermark
            if self.operator is not None:
                self.operator.on_watermark(watermark)
            else:
                self.output.broadcast(Watermark(watermark))


def _send_side(output: Output, name: str, records: list) -> None:
    output.send(records, name)


def _broadcast_watermark(output: Output, time: int) -> None:
    output.broadcast(Watermark(time))


class PhysicalGraph:
    """Subtasks and channels for a dataflow at a given parallelism, in topological order.

    Args:
        flow: the plan.
        parallelism: how many subtasks each keyed step runs as.
        operator_for: a new operator for one subtask of a step (``None`` for a source): the planner's
            ``operator_for``, for the run's model.
        output_mode, model, trace, clock: what every operator's context says (``StepContext``).
        state_backend: makes the keyed state of each keyed subtask (``state/backends.py``: in memory, in
            RocksDB, in Redis). A backend that keeps its tables in a store writes them back at the end of every
            batch (``flush_state``) and, in the continuous model, after every message a subtask handles.
    """

    def __init__(
        self,
        flow: Dataflow,
        parallelism: int = 1,
        *,
        operator_for: Callable[[Step], Operator | None],
        output_mode: str = "append",
        model: str = "microbatch",
        trace=None,
        clock=None,
        state_backend: StateBackends = MEMORY,
    ):
        if not 1 <= parallelism <= MAX_PARALLELISM:
            raise PipelineError(f"parallelism must be between 1 and {MAX_PARALLELISM}, got {parallelism}")
        self.flow = flow
        self.parallelism = parallelism
        self.row_counts = RowCounts()
        self.subtasks: list[Subtask] = []
        self.state_backends = state_backend
        self.by_step: dict[str, list[Subtask]] = {}
        for step in flow.steps:
            count = self._parallelism_of(step)
            subtasks = [Subtask(step, i, count, operator_for(step), self.row_counts) for i in range(count)]
            self.by_step[step.name] = subtasks
            self.subtasks.extend(subtasks)
            for edge in step.inputs:
                self._connect(edge, step, subtasks)
        for subtask in self.subtasks:
            if subtask.operator is not None:
                keyed = subtask.operator.keyed
                state = state_backend.create(subtask.step.name, subtask.index) if keyed else None
                if state is not None and state.writes_back and model == "continuous":
                    subtask.after_message = state.flush
                ctx = StepContext(
                    subtask.step.name,
                    subtask.index,
                    subtask.parallelism,
                    emit=subtask.output.send,
                    emit_side=partial(_send_side, subtask.output),
                    emit_watermark=partial(_broadcast_watermark, subtask.output),
                    state=state,
                    output_mode=output_mode,
                    model=model,
                    trace=trace,
                    clock=clock,
                )
                subtask.operator.open(ctx)

    def _parallelism_of(self, step: Step) -> int:
        if step.parallelism == "one":
            return 1
        if step.parallelism == "keyed":
            return self.parallelism
        return len(self.by_step[step.inputs[0].upstream.name])

    def _connect(self, edge: Edge, step: Step, receivers: list[Subtask]) -> None:
        input_number = step.inputs.index(edge)
        for sender in self.by_step[edge.upstream.name]:
            if edge.partition == "hash":
                targets = receivers
            elif edge.partition == "gather":
                targets = receivers[:1]
            else:
                if len(receivers) != len(self.by_step[edge.upstream.name]):
                    raise PipelineError(f"step {step.name!r}: a forward edge needs the same parallelism")
                targets = [receivers[sender.index]]
            channels = []
            for receiver in targets:
                channel = Channel(str(sender), str(receiver), step.name)
                receiver.inputs.append((input_number, channel))
                if edge.partition == "hash":
                    assert edge.key_fn is not None, f"the hash edge into {step.name!r} has a key function"
                    receiver.key_fns[input_number] = edge.key_fn
                channels.append(channel)
            sender.output.routes.append((edge.partition, channels, edge))

    def flush_state(self) -> None:
        """Write every subtask's keyed state back to where it lives (nothing to do in memory)."""
        for subtask in self.subtasks:
            if subtask.operator is not None and subtask.operator.ctx.state is not None:
                subtask.operator.ctx.state.flush()

    def operators(self, step_name: str) -> list[Operator]:
        """The operator instances of one step, one per subtask (none for a source)."""
        return [subtask.operator for subtask in self.by_step[step_name] if subtask.operator is not None]


class Scheduler:
    """Runs subtasks in an order drawn from a seeded random generator, until no message is left.

    The seed changes the interleaving (which subtask runs, from which channel), never the result: that is
    the property a correct engine must have, and the tests check it for several seeds.
    """

    def __init__(self, graph: PhysicalGraph, seed: int = 0):
        self.graph = graph
        self.random = random.Random(seed)

    def run_until_idle(self) -> None:
        """Deliver messages until every channel is empty (or held back with nothing else to do)."""
        readers = [subtask for subtask in self.graph.subtasks if subtask.inputs]  # a source has nothing to read
        choice = self.random.choice
        while True:
            ready = [(subtask, positions) for subtask in readers if (positions := subtask.runnable_inputs())]
            if not ready:
                return
            subtask, positions = choice(ready)  # a subtask with a message to read, then one of its inputs
            subtask.run_one(choice(positions))
