"""The conformance harness: a case of Spark's own streaming tests, replayed batch by batch in ministream and in
Spark, each answer checked against the rows the Spark test asserts.

A :class:`Case` is one test of a Spark suite (named exactly as its runner names it; storage-only variants of
the same test, such as its state store provider, are one case), written as Spark's ``StreamTest`` writes it:
a list of *steps*. The steps are Spark's:

==============================  ===========================================================================
``AddData(input, *rows)``       rows arrive on one input (``MultiAddData``: on several inputs at once); the
                                query then catches up, as ``processAllAvailable`` does: a data batch, then
                                the no-data batch Spark's rule asks for, if any
``CheckAnswer(*rows)``          every row the sink holds (complete mode: the last batch's), as a multiset
``CheckNewAnswer(*rows)``       the rows written since the previous check
``CheckLastBatch(*rows)``       the rows of the last batch (``ordered=True``: in this order)
``StartStream(...)``            (re)start the query from its checkpoint: trigger, manual clock, another query
``StopStream()``                stop it: its state and its sink stay; data may be added while it is stopped
``AdvanceManualClock(ms)``      with a manual clock, the trigger fires at the new time and runs a batch
``ClearSink()``                 forget the rows the sink holds (Spark's tests clear the memory sink)
``ExpectFailure(text)``         the query fails (or is refused) with an error whose message has ``text``
``CheckWatermark(ms)``          the watermark the last batch ran with
``NewStream(...)``              a second ``testStream`` in the same test: a new sink and a new checkpoint
==============================  ===========================================================================

**In ministream** (:func:`run_engine`) the steps become scripts: each input is a ``ScriptedSource`` whose
position k is trigger firing k (``core/triggers.py``). ``AddData`` is a position with the rows, followed by a
``None`` position (nothing new: the catch-up, which runs a no-data batch if a step asks); with a manual clock
a position is a clock tick instead, at the clock's time. A ``StopStream`` ends a run of ``run_microbatch``
with ``MicroBatchCheckpoints``; the next start is a new run on the same checkpoint storage and the script so
far. Each check takes the batches of the positions before it (``Run.batches`` says which position ran which
batch).

**In Spark** (``spark_replay.py``) the same steps drive the case's PySpark twin: each ``AddData`` writes one
Parquet file that the query's file source reads as one micro-batch, then ``processAllAvailable()``; the
inputs of a case are one source, split by an input column, so that rows added to several inputs at once land
in one batch.

Rows are written as the Spark test writes them: a scalar for a one-column input or output, a list
otherwise, in the column order of ``inputs`` and ``output``.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs

from ministream.checkpoints.coordinator import MicroBatchCheckpoints
from ministream.checkpoints.storage import MemoryStorage
from ministream.core.ddl import ddl_schema
from ministream.core.plan import Dataflow
from ministream.core.results import normalize_value
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.core.triggers import Trigger
from ministream.models.microbatch import run_microbatch
from ministream.spark.session import ROCKSDB_STATE_STORE

# -- steps -----------------------------------------------------------------------------------------------------


ROCKSDB = ROCKSDB_STATE_STORE
"""The Spark setting the suites' ``withSQLConf(STATE_STORE_PROVIDER_CLASS -> RocksDBStateStoreProvider)`` makes."""

MANUAL_CLOCK = "a manual clock (Spark's StreamManualClock is a class of its tests, out of PySpark's reach)"
"""Why a case that drives Spark's manual clock has no Spark replay."""


@attrs.frozen
class AddData:
    """Rows arrive: ``{input: rows}`` (several inputs: Spark's ``MultiAddData``, one batch)."""

    rows: dict[str, tuple]


def add(input_name: str, *rows) -> AddData:
    """``AddData(input, rows...)``."""
    return AddData({input_name: rows})


def add_many(**rows) -> AddData:
    """``MultiAddData``: rows for several inputs, in one batch."""
    return AddData({name: tuple(values) for name, values in rows.items()})


@attrs.frozen
class Check:
    """A check of the sink: ``kind`` is ``"all"`` (CheckAnswer), ``"new"`` (CheckNewAnswer) or ``"last"``
    (CheckLastBatch)."""

    kind: str
    rows: tuple
    ordered: bool = False
    as_set: bool = False
    """Compare sets of rows, not multisets (PySpark's tests compare ``set(batch.collect())``)."""


def check_answer(*rows, as_set: bool = False) -> Check:
    return Check("all", rows, as_set=as_set)


def check_new(*rows, as_set: bool = False) -> Check:
    return Check("new", rows, as_set=as_set)


def check_last(*rows, ordered: bool = False, as_set: bool = False) -> Check:
    return Check("last", rows, ordered, as_set)


@attrs.frozen
class StartStream:
    """(Re)start the query: ``query`` names one of the case's queries (default: the current one); ``trigger``;
    ``manual_clock`` (Spark's ``StreamManualClock``: batches run only when the clock is advanced);
    ``checkpoint`` (a name: queries that share it share their checkpoint); ``conf``: Spark settings of this
    start (``noDataMicroBatches`` and ``multipleWatermarkPolicy`` are read by ministream too)."""

    query: str | None = None
    trigger: Trigger = attrs.field(factory=Trigger.processing_time)
    manual_clock: bool = False
    checkpoint: str | None = None
    conf: dict = attrs.field(factory=dict)


@attrs.frozen
class StopStream:
    """Stop the query; its checkpoint, its sink and the inputs stay."""


@attrs.frozen
class AdvanceManualClock:
    """Move the manual clock forward: the trigger fires once, at the new time."""

    ms: int


@attrs.frozen
class ClearSink:
    """Forget what the sink holds (Spark's tests clear the memory sink between runs)."""


@attrs.frozen
class ExpectFailure:
    """The query fails, or is refused: ministream raises an error (a ``PipelineError`` when it refuses the
    plan) whose message contains ``engine`` (a regular expression); Spark an error whose text contains
    ``spark``."""

    engine: str
    spark: str | None = None


@attrs.frozen
class CheckWatermark:
    """The watermark (ms) the last batch ran with (Spark: ``lastProgress.eventTime.watermark``)."""

    ms: int


@attrs.frozen
class CheckBatches:
    """How many batches the sink received since the stream started (Spark's tests count ``foreachBatch``
    calls)."""

    count: int


@attrs.frozen
class Assert:
    """An assertion on the query rather than on its output (Spark's ``Assert`` / ``AssertOnQuery``): ``engine``
    gets the case's inputs as ministream streams of a fresh plan, ``spark`` (when the Spark replay runs it)
    the inputs as DataFrames; each raises ``AssertionError`` when the query is not as the test says."""

    what: str
    engine: Callable[[dict], None]
    spark: Callable[[dict], None] | None = None


@attrs.frozen
class NewStream:
    """A second ``testStream(...)`` in the same test: a new sink, a new checkpoint, and ``query`` (default: the
    current one). ``keep_data``: the inputs keep the rows added so far (a new query then reads them all in
    its first batch); by default they start empty, as after Spark's ``inputData.reset()`` or new memory
    streams."""

    query: str | None = None
    keep_data: bool = False


# -- cases -----------------------------------------------------------------------------------------------------


class Inputs(dict):
    """A query's inputs by name (ministream streams, or Spark DataFrames), and ``memory``: a dict that lives
    as long as the replay, for a query that must remember something across restarts (a failure injected
    only the first time, as Spark's tests do with a singleton)."""

    def __init__(self, streams: dict, memory: dict):
        super().__init__(streams)
        self.memory = memory


@attrs.frozen
class Query:
    """One query of a case: the ministream ``pipeline`` (``inputs -> Stream``: it gets each input as a
    ``Stream`` and returns the stream to write), its PySpark ``twin`` (``inputs -> DataFrame``, the query as
    the Spark test writes it; ``None`` when it has none), the output mode, Spark settings (``conf``), and its
    output columns when they are not the case's (``output``)."""

    pipeline: Callable[[dict], Any]
    twin: Callable[[dict], Any] | None
    output_mode: str = "append"
    conf: dict = attrs.field(factory=dict)
    output: tuple[str, ...] | None = None
    """This query's output columns, when they are not the case's."""


@attrs.frozen
class Case:
    """One test of a Spark suite as ministream replays it (see the module docstring).

    Attributes:
        suite, test, line: the suite class, the exact test name its runner prints (the first of its storage
            variants), and the line of the test in the Spark source the catalog read.
        inputs: ``{input name: Spark DDL of its columns}``, in the order of the test's tuples.
        output: the output columns, in the order of the test's expected rows.
        queries: ``{name: Query}``; the first is the one a case starts with.
        steps: the test's actions.
        variants: how many test names the runner generates for this case (storage variants).
        spark: ``None`` when the Spark replay runs the case; otherwise why it cannot (a test-only Spark class).
        ci: whether CI runs the Spark replay of this case (the others run with ``MINISTREAM_CONFORMANCE=all``).
        notes: what the transcription had to decide, in a sentence or two.
        files: the test's input is files (one batch per file, even for files added while the query is
            stopped), not ``MemoryStreams (whose rows added while stopped make one batch).
        differs: empty when ministream gives every answer the test asserts; otherwise why it does not, a
            difference found and explained (``tests/conformance/test_conformance.py`` checks that it still
            differs, so that a fix shows; the page lists it).
    """

    suite: str
    test: str
    line: int
    inputs: dict[str, str]
    output: tuple[str, ...]
    queries: dict[str, Query]
    steps: tuple
    variants: int = 1
    spark: str | None = None
    ci: bool = False
    notes: str = ""
    files: bool = False
    differs: str = ""

    @property
    def id(self) -> str:
        return f"{self.suite}: {self.test}"

    def columns(self, input_name: str) -> tuple[str, ...]:
        """The column names of one input, from its DDL."""
        return ddl_names(self.inputs[input_name])


def case(
    suite: str,
    test: str,
    line: int,
    *,
    inputs: dict[str, str],
    output: tuple[str, ...] | str,
    steps: list,
    pipeline: Callable | None = None,
    twin: Callable | None = None,
    output_mode: str = "append",
    conf: dict | None = None,
    queries: dict[str, Query] | None = None,
    **settings,
) -> Case:
    """A :class:`Case` with a single query (``pipeline``, ``twin``, ``output_mode``, ``conf``), or several."""
    if queries is None:
        queries = {"query": Query(pipeline, twin, output_mode, conf or {})}
    output = (output,) if isinstance(output, str) else tuple(output)
    return Case(suite, test, line, inputs, output, queries, tuple(steps), **settings)


@attrs.frozen
class NotExpressible:
    """A test of a suite that the harness does not replay, and why: it needs Spark internals (old checkpoint
    files, state schema checks, plan inspection...) rather than anything a query can say."""

    suite: str
    test: str
    line: int
    reason: str
    variants: int = 1

    @property
    def id(self) -> str:
        return f"{self.suite}: {self.test}"


def ddl_names(ddl: str) -> tuple[str, ...]:
    """The column names of a Spark DDL schema (``"value INT, tags ARRAY<INT>"``), as the compiler reads them.

    >>> ddl_names("key STRING, pair STRUCT<a: INT, b: INT>, n BIGINT")
    ('key', 'pair', 'n')
    """
    return tuple(ddl_schema(ddl))


def as_dict(columns: tuple[str, ...], row) -> dict:
    """A test's input row as a dict: a scalar for one column, a list for several."""
    if len(columns) == 1 and not isinstance(row, (list, tuple)):
        return {columns[0]: row}
    return dict(zip(columns, row))


def plain(value):
    """A value as the checks compare it: timestamps as ms, floats rounded (``normalize_value``), and a struct
    (a dict, as Spark returns one) or a list as a tuple of its values.

    >>> plain({"_1": {"_1": "a", "_2": "a"}, "_2": "a"}), plain([1.0, 2.5])
    ((('a', 'a'), 'a'), (1, 2.5))
    """
    if isinstance(value, dict):
        return tuple(plain(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return tuple(plain(item) for item in value)
    return normalize_value(value)


def as_tuple(columns: tuple[str, ...], row: dict) -> tuple:
    """An output row in the test's column order, values normalized (:func:`plain`)."""
    return tuple(plain(row.get(column)) for column in columns)


def expected_tuple(row) -> tuple:
    """An expected row of the test as a tuple."""
    values = row if isinstance(row, (list, tuple)) else (row,)
    return tuple(plain(v) for v in values)


def compare(check: Check, got: list[tuple]) -> str | None:
    """``None`` when the rows are the expected ones (as a multiset, or in order), else what differs."""
    want = [expected_tuple(row) for row in check.rows]
    if check.as_set:
        want, got = sorted(set(want), key=repr), sorted(set(got), key=repr)
    if check.ordered:
        return None if got == want else f"expected, in order, {want}, got {got}"
    missing, extra = Counter(want) - Counter(got), Counter(got) - Counter(want)
    if not missing and not extra:
        return None
    return f"missing {sorted(missing.elements(), key=repr)}, unexpected {sorted(extra.elements(), key=repr)}"


class CaseFailure(AssertionError):
    """A step of a case gave another answer than the Spark test asserts."""


# -- ministream ------------------------------------------------------------------------------------------------


@attrs.define
class _Timeline:
    """The script of one checkpoint: ``ticks[k]`` is trigger firing k, ``{input: rows}`` or ``None`` (nothing
    arrived); ``times[k]`` its processing time; and the checkpoint storage."""

    ticks: list = attrs.field(factory=list)
    times: list = attrs.field(factory=list)
    storage: MemoryStorage = attrs.field(factory=MemoryStorage)


@attrs.define
class _Batch:
    rows: list[tuple]
    watermark: int | None
    position: int
    trailing: bool


class EngineReplay:
    """Replays a case's steps with ministream (see the module docstring); :meth:`run` raises
    :class:`CaseFailure` at the first step whose answer differs from the test's."""

    def __init__(self, case: Case):
        self.case = case
        self.query_name = next(iter(case.queries))
        self.timelines: dict[str, _Timeline] = {}
        self.checkpoint = "default"
        self.stream_number = 0
        self.sink = CollectingSink()
        self.batches: list[_Batch] = []  # what the sink received, with the position that ran each batch
        self.read = 0  # batches seen by the previous check (CheckNewAnswer)
        self.running = False
        self.start: StartStream | None = None
        self.segment_checks: list = []  # (step number, step, position) waiting for the run of the segment
        self.pending: list[dict] = []  # rows added while stopped or before the next tick: one firing's worth,
        # or one per AddData when the inputs are files (Case.files)
        self.clock = 0
        self.cleared = 0  # batches before this one were cleared from the sink (ClearSink)
        self.memory: dict = {}  # Inputs.memory

    @property
    def timeline(self) -> _Timeline:
        return self.timelines.setdefault(self.checkpoint, _Timeline())

    def run(self) -> None:
        for number, step in enumerate(planned_steps(self.case)):
            self._step(number, step)
        self._end_segment()

    def _step(self, number: int, step) -> None:
        if isinstance(step, StartStream):
            self._end_segment()
            self._start(step)
        elif isinstance(step, AddData):
            self._add(step)
            if self.running and not self.start.manual_clock and self.start.trigger.kind == "processing_time":
                self._flush(catch_up=True)
        elif isinstance(step, AdvanceManualClock):
            self.clock += step.ms
            if self.running:
                self._flush(catch_up=False)
        elif isinstance(step, StopStream):
            self._end_segment()
        elif isinstance(step, NewStream):
            self._end_segment()
            self._new_stream(step)
        elif isinstance(step, ClearSink):
            self._end_segment()
            self.read = self.cleared = len(self.batches)
        elif isinstance(step, (Check, CheckWatermark, ExpectFailure, CheckBatches)):
            self.segment_checks.append((number, step, len(self.timeline.ticks)))
        elif isinstance(step, Assert):
            flow = Dataflow("assert")
            streams = {
                name: flow.source(name, ScriptedSource([], columns=self.case.columns(name)))
                for name in self.case.inputs
            }
            try:
                step.engine(Inputs(streams, self.memory))
            except AssertionError as error:
                raise CaseFailure(f"step {number} ({step.what}): {error}") from error
        else:
            raise TypeError(f"case {self.case.id!r}: unknown step {step!r}")

    # -- the script ----------------------------------------------------------------------------------------

    def _add(self, step: AddData) -> None:
        unknown = set(step.rows) - set(self.case.inputs)
        if unknown:
            raise ValueError(f"case {self.case.id!r}: no input named {sorted(unknown)}")
        if not self.pending or self.case.files:
            self.pending.append({})
        for name, rows in step.rows.items():
            columns = self.case.columns(name)
            self.pending[-1].setdefault(name, []).extend(as_dict(columns, row) for row in rows)

    def _flush(self, catch_up: bool) -> None:
        """The pending rows become trigger firings (one firing, ``None``, when there are none); ``catch_up``
        adds the firing after them with nothing new (the query catching up, as ``processAllAvailable`` makes
        it). Without a manual clock, processing time moves on by a second per firing with data."""
        manual = self.start is not None and self.start.manual_clock
        for firing in self.pending or [None]:
            if not manual and firing is not None:
                self.clock += 1_000
            self.timeline.ticks.append(firing)
            self.timeline.times.append(self.clock)
        self.pending = []
        if catch_up:
            self.timeline.ticks.append(None)
            self.timeline.times.append(self.clock)

    # -- runs ----------------------------------------------------------------------------------------------

    def _start(self, step: StartStream) -> None:
        if step.query is not None:
            self.query_name = step.query
        if step.checkpoint is not None:
            self.checkpoint = step.checkpoint
        self.start = step
        self.running = True
        self.segment_start = len(self.timeline.ticks)
        if step.manual_clock:
            self._flush(catch_up=False)  # the trigger fires as the query starts
        elif self.pending and step.trigger.kind == "processing_time":
            self._flush(catch_up=True)
        elif self.pending:
            self._flush(catch_up=False)
        if step.trigger.kind != "processing_time":  # Once, AvailableNow: run now, then the query stops
            self._end_segment()

    def _end_segment(self) -> None:
        if not self.running:
            self._evaluate([])
            return
        self.running = False
        start, self.start = self.start, None
        storage = self.timeline.storage
        before = copy.deepcopy(storage)  # the checkpoints as the segment starts: see below
        new, failure = self._run(start, len(self.timeline.ticks), storage)
        checked = [position for _, step, position in self.segment_checks if not isinstance(step, ExpectFailure)]
        if failure is not None and checked and not isinstance(self.segment_checks[0][1], ExpectFailure):
            # A test that checks batches, then expects the failure of a later one (a timer that fails when it
            # fires): the checks are made on the run of the ticks up to the last of them, from the same
            # checkpoints (the engine is deterministic: it runs them as the whole segment did). If that run
            # fails too, the query failed before the checks.
            new, early = self._run(start, max(checked), before)
            self.batches.extend(new)
            self._evaluate(new, early or failure, failed_before_checks=early is not None)
            return
        self.batches.extend(new)
        self._evaluate(new, failure)

    def _run(self, start: StartStream, ticks_run: int, storage: MemoryStorage) -> tuple[list[_Batch], Exception | None]:
        """Run the query on the first ``ticks_run`` trigger firings of the timeline, from the checkpoints in
        ``storage``: the batches it ran, and the error it failed with (``None`` if it did not)."""
        query = self.case.queries[self.query_name]
        conf = {**query.conf, **start.conf}
        ticks = self.timeline.ticks[:ticks_run]
        new: list[_Batch] = []
        try:
            flow = Dataflow(self.case.test[:40])
            streams = {}
            for name in self.case.inputs:
                script = [None if tick is None or name not in tick else tick[name] for tick in ticks]
                streams[name] = flow.source(name, ScriptedSource(script, columns=self.case.columns(name)))
            result = query.pipeline(Inputs(streams, self.memory))
            output = CollectingSink()
            result.sink("sink", output)
            times = self.timeline.times[:ticks_run]
            run = run_microbatch(
                flow,
                output_mode=query.output_mode,
                watermark_policy=conf.get("spark.sql.streaming.multipleWatermarkPolicy", "min"),
                checkpoints=MicroBatchCheckpoints(storage),
                trigger=start.trigger,
                no_data_batches=str(conf.get("spark.sql.streaming.noDataMicroBatches.enabled", "true")) == "true",
                batch_timestamps=times or None,
                process_all_available=not start.manual_clock,
            )
            columns = query.output or self.case.output
            for info, batch in zip(run.batches, output.batches):
                rows = [as_tuple(columns, row) for row in batch.rows]
                new.append(_Batch(rows, batch.watermark, info.position, info.position >= len(ticks)))
        except Exception as error:  # a refused plan, or a query that failed while running (the checks say which)
            return new, error
        return new, None

    def _evaluate(self, new: list[_Batch], failure: Exception | None = None, failed_before_checks: bool = True) -> None:
        """Make the segment's checks on its batches ``new``. A ``failure`` must be met by an ``ExpectFailure``;
        before it, a check fails on it unless the batches it checks ran before the failure
        (``failed_before_checks=False``)."""
        checks, self.segment_checks = self.segment_checks, []
        for number, step, position in checks:
            if isinstance(step, ExpectFailure):
                if failure is None:
                    raise CaseFailure(f"step {number}: expected a failure matching {step.engine!r}, the query ran")
                if not re.search(step.engine, str(failure)):
                    raise CaseFailure(f"step {number}: expected a failure matching {step.engine!r}, got: {failure}")
                failure = None
                continue
            if failure is not None and failed_before_checks:
                raise CaseFailure(f"step {number}: the query failed: {failure}") from failure
            self._check(number, step, position, len(new))
        if failure is not None:
            raise CaseFailure(f"the query failed: {failure}") from failure

    def _check(self, number: int, step, position: int, _new: int) -> None:
        end = len(self.timeline.ticks)
        visible = [
            i
            for i, batch in enumerate(self.batches)
            if i >= self.cleared and (batch.position < position or (batch.trailing and position >= end))
        ]
        upto = (visible[-1] + 1) if visible else self.cleared
        if isinstance(step, CheckBatches):
            if len(visible) != step.count:
                raise CaseFailure(f"step {number}: expected {step.count} batches, the sink received {len(visible)}")
            return
        if isinstance(step, CheckWatermark):
            watermark = self.batches[visible[-1]].watermark if visible else None
            if watermark != step.ms:
                raise CaseFailure(f"step {number}: expected watermark {step.ms}, the last batch ran with {watermark}")
            return
        mode = self.case.queries[self.query_name].output_mode
        if step.kind == "new":
            got = [row for batch in self.batches[self.read : upto] for row in batch.rows]
        elif step.kind == "last" or mode == "complete":
            got = list(self.batches[visible[-1]].rows) if visible else []
        else:
            got = [row for i in visible for row in self.batches[i].rows]
        self.read = max(self.read, upto)
        problem = compare(step, got)
        if problem is not None:
            raise CaseFailure(f"step {number} ({step.kind} answer): {problem}")

    def _new_stream(self, step: NewStream) -> None:
        old = self.timeline
        self.stream_number += 1
        self.checkpoint = f"stream {self.stream_number}"
        if step.query is not None:
            self.query_name = step.query
        self.batches, self.read, self.cleared = [], 0, 0
        if step.keep_data:  # a new query reads what the inputs hold: in one batch (files: one per file)
            firings = [tick for tick in old.ticks if tick is not None] + self.pending
            if not self.case.files:
                merged: dict = {}
                for firing in firings:
                    for name, rows in firing.items():
                        merged.setdefault(name, []).extend(rows)
                firings = [merged] if merged else []
            self.pending = firings
        else:
            self.pending = []


def planned_steps(case: Case) -> list:
    """The case's steps with the starts Spark's ``StreamTest`` adds: a ``testStream`` block (the steps up to a
    ``NewStream``) with no ``StartStream`` before its first step that needs a running query starts with one."""
    blocks, block = [], []
    for step in case.steps:
        if isinstance(step, NewStream):
            blocks.append(block)
            block = [step]
        else:
            block.append(step)
    blocks.append(block)
    steps = []
    for block in blocks:
        must_run = [i for i, step in enumerate(block) if _needs_a_running_query(step)]
        first = must_run[0] if must_run else len(block)
        if not any(isinstance(step, StartStream) for step in block[:first]):
            block.insert(1 if block and isinstance(block[0], NewStream) else 0, StartStream())
        steps += block
    return steps


def _needs_a_running_query(step) -> bool:
    """Spark's ``StreamMustBeRunning`` actions: a check, a clock advance, an expected failure."""
    return isinstance(step, (Check, CheckWatermark, CheckBatches, ExpectFailure, AdvanceManualClock))


def run_engine(case: Case) -> None:
    """Replay ``case`` in ministream; raise :class:`CaseFailure` if an answer differs from the test's."""
    EngineReplay(case).run()
