"""Flink's operator tests replayed in ministream's continuous model, message by message.

Flink tests its ``WindowOperator`` and ``IntervalJoinOperator`` with a *test harness*: the test hands the
operator one element (with its timestamp) or one watermark at a time, and after some of them compares the
operator's whole output queue (records and the watermarks it forwarded) with the expected one. A
:class:`FlinkCase` is such a test, written as its steps:

================================  ==========================================================================
``element(key, value, ts)``       a record reaches the window operator (``processElement``)
``left(ts)`` / ``right(ts)``      a record reaches one side of the interval join
``watermark(ts, side=None)``      a watermark (``processWatermark``, or ``processWatermark1/2`` for a side)
``processing_time(ms)``           the processing-time clock moves to ``ms`` (``setProcessingTime``)
``expect(*queue)``                the whole output queue so far: records ``(value, ts)`` and ``W(ts)``;
                                  records between two watermarks compare as a multiset
``expect_records(*pairs)``        the interval join's records so far, as a multiset of ``(left ts, right ts)``
``side_output(*records)``         the late rows so far (``None``: no late row at all)
``buffers(left, right)``          the timestamps the interval join keeps per side (its state)
``no_late_records()``             no record has a timestamp at or below a watermark forwarded before it
``fails(step, text)``             the step makes the operator fail, with an error whose message has ``text``
``snapshot()`` / ``restore()``    snapshot the operators, then a new run restored from it (a fresh queue)
``reopen(pipeline)``              a fresh harness around another operator (a test with two operators)
================================  ==========================================================================

**How ministream replays it** (:class:`FlinkReplay`). The case's ``pipeline`` is a plain ministream dataflow
(``source → with_watermark → key_by → window`` or ``join``, and sinks), built into the physical graph the
continuous model runs (``operators/planner.physical_graph(flow, model="continuous")``, the same operators
``run_continuous`` runs). The harness then plays the ``with_watermark`` step itself: it sends the test's
records and watermarks on that step's output channels, so that the window or join operator receives exactly
the sequence the Flink test gives its operator; after each message it delivers everything that message set
off, and records what reached each sink, in order, with the sink's watermark whenever it rose. That is the
output queue. A window's result row carries no timestamp; its timestamp is Flink's ``window.maxTimestamp()``
= ``window_end - 1``; a join's is its ``time`` column (the later of the two times). A snapshot is each
operator's ``snapshot()``; a restore builds a new graph and gives each operator its snapshot back (the
subtasks' watermarks are not restored, as Flink's harness does not restore them either).

Flink's late-data side output of the window operator is ministream's ``late_rows=`` side output; the interval
join has no side output in ministream, so its late rows are read from the join's ``late_rows`` (the rows
``Run.late_rows()`` lists).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import attrs

from ministream.core.physical import Watermark
from ministream.core.plan import Dataflow
from ministream.errors import PipelineError
from ministream.operators.planner import physical_graph
from ministream.state.copy_on_write import copy_value
from ministream.time.clock import ManualClock
from tests.conformance.harness import CaseFailure

# -- steps -----------------------------------------------------------------------------------------------------


@attrs.frozen
class Element:
    """A record: ``row`` reaches the input ``side`` (``None``: the only one)."""

    row: dict
    side: str | None = None


def element(key: str, value: int, ts: int) -> Element:
    """``processElement(new StreamRecord<>(new Tuple2<>(key, value), ts))``."""
    return Element({"key": key, "value": value, "ts": ts})


def left(ts: int | None) -> Element:
    """``processElement1(new StreamRecord<>(new TestElem(ts, "lhs"), ts))``: a left row of key ``"key"``."""
    return Element({"key": "key", "l": ts}, "left")


def right(ts: int | None) -> Element:
    """``processElement2(...)``: a right row of key ``"key"``."""
    return Element({"rkey": "key", "r": ts}, "right")


@attrs.frozen
class ProcessWatermark:
    ts: int
    side: str | None = None


def watermark(ts: int, side: str | None = None) -> ProcessWatermark:
    """``processWatermark(ts)`` (``side``: ``processWatermark1`` for ``"left"``, ``2`` for ``"right"``)."""
    return ProcessWatermark(ts, side)


@attrs.frozen
class SetProcessingTime:
    ms: int


def processing_time(ms: int) -> SetProcessingTime:
    """``setProcessingTime(ms)``: the clock moves to ``ms`` and the processing-time timers due fire."""
    return SetProcessingTime(ms)


@attrs.frozen
class W:
    """A watermark in an expected output queue."""

    ts: int


@attrs.frozen
class Expect:
    queue: tuple


def expect(*queue) -> Expect:
    """The whole output queue of the current harness: ``((value...), ts)`` records and ``W(ts)``."""
    return Expect(tuple(queue))


@attrs.frozen
class ExpectRecords:
    pairs: tuple


def expect_records(*pairs) -> ExpectRecords:
    """The interval join's records so far, ``(left ts, right ts)``, as a multiset (each with timestamp
    ``max(left ts, right ts)``)."""
    return ExpectRecords(tuple(pairs))


@attrs.frozen
class SideOutput:
    records: tuple | None
    side: str | None = None


def side_output(*records, side: str | None = None, none: bool = False) -> SideOutput:
    """The late rows so far, as a multiset of ``(value, ts)`` (a join side's: ``ts`` only); ``none=True``:
    the side output received nothing at all."""
    return SideOutput(None if none else tuple(records), side)


@attrs.frozen
class Buffers:
    left: tuple
    right: tuple


def buffers(left_times, right_times) -> Buffers:
    """The timestamps the interval join's state keeps, per side (``assertLeftBufferContainsOnly``...)."""
    return Buffers(tuple(left_times), tuple(right_times))


@attrs.frozen
class NoLateRecords:
    pass


def no_late_records() -> NoLateRecords:
    """``TestHarnessUtil.assertNoLateRecords``: every record's timestamp is above the last watermark before it."""
    return NoLateRecords()


@attrs.frozen
class Fails:
    step: object
    text: str


def fails(step, text: str) -> Fails:
    """``assertThatThrownBy(() -> step)``: the operator refuses the step, with ``text`` in the error's message."""
    return Fails(step, text)


@attrs.frozen
class Snapshot:
    pass


@attrs.frozen
class Restore:
    pass


def snapshot() -> Snapshot:
    """``testHarness.snapshot(0L, 0L)`` then ``close()``."""
    return Snapshot()


def restore() -> Restore:
    """A new harness around a new operator, ``initializeState(snapshot)``, ``open()``: its output queue is empty."""
    return Restore()


@attrs.frozen
class Reopen:
    pipeline: Callable[[], Dataflow]


def reopen(pipeline: Callable[[], Dataflow]) -> Reopen:
    """A fresh harness around another operator (no state, an empty queue)."""
    return Reopen(pipeline)


# -- cases -----------------------------------------------------------------------------------------------------


@attrs.frozen
class FlinkCase:
    """One Flink operator test, replayed in ministream's continuous model (see the module docstring).

    Attributes:
        suite, test, line: the test class, the test's name (with its parameter for a parametrised class) and
            its line in the Flink source the catalog read.
        pipeline: makes the dataflow: a source, ``with_watermark`` step (named in ``inputs``), the operator
            under test, a sink ``output`` and, for a late-data side output, a sink ``late``.
        inputs: ``{side: the with_watermark step the harness plays}`` (side ``None`` for one input).
        result: a result row as the Flink test's value (its window function's output).
        steps: the test's steps.
        notes: what the transcription had to decide.
    """

    suite: str
    test: str
    line: int
    pipeline: Callable[[], Dataflow]
    inputs: dict
    result: Callable[[dict], tuple]
    steps: tuple
    notes: str = ""
    spark: str = "a Flink operator test: the Spark replay does not apply"
    ci: bool = False

    @property
    def id(self) -> str:
        return f"{self.suite}: {self.test}"


def flink_case(suite, test, line, *, pipeline, inputs, result, steps, notes="") -> FlinkCase:
    return FlinkCase(suite, test, line, pipeline, inputs, result, tuple(steps), notes)


# -- the replay ------------------------------------------------------------------------------------------------


def window_time(row: dict) -> int:
    """A window result's timestamp: Flink's ``window.maxTimestamp()``."""
    return row["window_end"] - 1


class FlinkReplay:
    """Replays a :class:`FlinkCase`; :meth:`run` raises :class:`CaseFailure` at the first step whose answer
    differs from the test's."""

    def __init__(self, case: FlinkCase):
        self.case = case
        self.saved: dict | None = None
        self._open(case.pipeline)

    def _open(self, pipeline: Callable[[], Dataflow]) -> None:
        self.pipeline = pipeline
        self.flow = pipeline()
        self.clock = ManualClock()
        self.graph = physical_graph(self.flow, 1, model="continuous", output_mode="append", clock=self.clock)
        self.sinks = {step.name: self.graph.by_step[step.name][0] for step in self.flow.sinks}
        self.queues: dict[str, list] = {name: [] for name in self.sinks}  # records (row) and W(ts), in order

    def run(self) -> None:
        for number, step in enumerate(self.case.steps):
            problem = self.apply(step)
            if problem:
                raise CaseFailure(f"{self.case.id}\nstep {number} {step!r}:\n{problem}")

    # -- messages ------------------------------------------------------------------------------------------

    def _input(self, side: str | None):
        return self.graph.by_step[self.case.inputs[side]][0]

    def _drain(self) -> None:
        """Deliver every message the last one set off, in graph order; record what each sink receives."""
        while True:
            for subtask in self.graph.subtasks:
                positions = subtask.runnable_inputs()
                if positions:
                    break
            else:
                return
            sink = self.sinks.get(subtask.step.name)
            if sink is not subtask:
                subtask.run_one(positions[0])
                continue
            before, buffered = subtask.watermark, len(subtask.operator.buffer)
            subtask.run_one(positions[0])
            queue = self.queues[subtask.step.name]
            queue.extend(subtask.operator.buffer[buffered:])
            if subtask.watermark != before:
                queue.append(W(subtask.watermark))

    # -- steps ---------------------------------------------------------------------------------------------

    def apply(self, step) -> str | None:
        if isinstance(step, Element):
            self._input(step.side).output.send([dict(step.row)])
            self._drain()
        elif isinstance(step, ProcessWatermark):
            self._input(step.side).output.broadcast(Watermark(step.ts))
            self._drain()
        elif isinstance(step, SetProcessingTime):
            self.clock.set(step.ms)
            for subtask in self.graph.subtasks:
                if subtask.operator is not None:
                    subtask.operator.on_processing_time(step.ms)
            self._drain()
        elif isinstance(step, Expect):
            return self._compare_queue(step.queue)
        elif isinstance(step, ExpectRecords):
            got = Counter((row["l"], row["r"]) for row in self._records("output"))
            wrong_times = [row for row in self._records("output") if row["time"] != max(row["l"], row["r"])]
            if wrong_times:
                return f"records whose time is not the later of the two: {wrong_times}"
            if got != Counter(step.pairs):
                return f"expected records {sorted(step.pairs)}\n     got {sorted(got.elements())}"
        elif isinstance(step, SideOutput):
            return self._compare_side_output(step)
        elif isinstance(step, Buffers):
            state = self.graph.operators("join")[0].join.state
            got = tuple(
                tuple(sorted({row[column] for group in table.values() for rows in group.values() for row in rows}))
                for table, column in zip(state, ("l", "r"))
            )
            if got != (tuple(sorted(step.left)), tuple(sorted(step.right))):
                return f"expected buffers left {step.left}, right {step.right}\n     got left {got[0]}, right {got[1]}"
        elif isinstance(step, NoLateRecords):
            highest = None
            for item in self.queues["output"]:
                if isinstance(item, W):
                    highest = item.ts
                elif highest is not None and not highest < self._time(item):
                    return f"record {item} at {self._time(item)} after watermark {highest}"
        elif isinstance(step, Snapshot):
            self.saved = {
                step.name: [copy_value(operator.snapshot()) for operator in self.graph.operators(step.name)]
                for step in self.flow.steps
                if self.graph.by_step[step.name][0].operator is not None
            }
        elif isinstance(step, Restore):
            self._open(self.pipeline)
            for name, snapshots in (self.saved or {}).items():
                for operator, saved in zip(self.graph.operators(name), snapshots):
                    operator.restore(copy_value(saved))
        elif isinstance(step, Fails):
            try:
                self.apply(step.step)
            except PipelineError as error:
                return None if step.text in str(error) else f"failed with another error: {error}"
            return f"expected a failure with {step.text!r}; the step went through"
        elif isinstance(step, Reopen):
            self._open(step.pipeline)
        else:
            raise TypeError(f"unknown step {step!r}")
        return None

    def _records(self, sink: str) -> list[dict]:
        return [item for item in self.queues.get(sink, []) if not isinstance(item, W)]

    def _time(self, row: dict) -> int:
        return row["time"] if "time" in row else window_time(row)

    def _compare_queue(self, expected: tuple) -> str | None:
        """Flink's ``assertOutputEqualsSorted``: the watermarks at the same places, the records between two
        watermarks as a multiset."""

        def segments(queue):
            out, records = [], Counter()
            for item in queue:
                if isinstance(item, W):
                    out += [records, item.ts]
                    records = Counter()
                else:
                    records[item] += 1
            return [*out, records]

        got = [
            item if isinstance(item, W) else (self.case.result(item), window_time(item))
            for item in self.queues["output"]
        ]
        if segments(got) != segments(expected):
            return f"expected output {list(expected)}\n     got {got}"
        return None

    def _compare_side_output(self, step: SideOutput) -> str | None:
        if step.side is not None:  # a join side: its late rows
            column = "l" if step.side == "left" else "r"
            late = [item.row[column] for item in self.graph.operators("join")[0].late_rows if column in item.row]
        else:
            late = [((row["key"], row["value"]), row["ts"]) for row in self._records("late")]
        if step.records is None:
            return None if not late else f"expected no late rows, got {late}"
        if Counter(late) != Counter(step.records):
            return f"expected late rows {list(step.records)}\n     got {late}"
        return None


def run_flink(case: FlinkCase) -> None:
    """Replay ``case``; raise :class:`CaseFailure` if an answer differs from the Flink test's."""
    FlinkReplay(case).run()
