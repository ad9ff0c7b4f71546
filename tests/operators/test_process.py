"""Keyed process functions: the timer, state-scoping and time-to-live rules of Spark's transformWithState,
as ministream's micro-batch model runs them (each measured on PySpark 4.3.0, see tutorials/11-device-sessions.md),
and the same processor in the continuous model."""

import pytest

from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
from ministream.errors import PipelineError
from ministream.models.continuous import run_continuous
from ministream.operators.planner import physical_graph
from ministream.operators.process import Processor
from ministream.time.clock import ClockStep


def run(processor, script, time_mode="event_time", delay=0, timestamps=None, **options):
    """Run ``processor`` keyed by ``key`` (after a watermark with ``delay`` ms, unless ``delay`` is None)."""
    flow = Dataflow("rules")
    events = flow.source("events", ScriptedSource(script))
    if delay is not None:
        events = events.with_watermark("watermark", "ts", delay)
    events.key_by("key").process("p", processor, time_mode=time_mode).sink("output", CollectingSink())
    return run_microbatch(flow, output_mode="update", batch_timestamps=timestamps, **options)


def rows_per_batch(result, *columns):
    return [sorted(tuple(row[c] for c in columns) for row in batch.rows) for batch in result.output()]


class TimerPerRow(Processor):
    """Echoes each row, and sets an event-time timer ``after`` ms after each row's time."""

    def __init__(self, after=5_000):
        self.after = after

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        for row in rows:
            self.handle.register_timer(row["ts"] + self.after)
            yield {"key": key, "kind": "row", "t": row["ts"], "wm": timer_values.watermark}

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        yield {"key": key, "kind": "timer", "t": expired_timer_info.expiry_time, "wm": timer_values.watermark}


def row(key, second):
    return {"key": key, "ts": second * 1000}


# The script of the measurement (see the tutorial): watermark delay 10 s.
MEASURED = [
    [row("a", 1), row("b", 2)],
    [row("a", 20), row("a", 3)],
    [row("b", 5)],
    [row("b", 9), row("b", 10), row("b", 11)],
    [row("a", 40)],
]


def test_event_time_batch_matches_the_measured_spark_run():
    """Late rows, input then timers, inclusive firing and the no-data batch are as PySpark 4.3 ran them."""
    result = run(TimerPerRow(), MEASURED, delay=10_000)
    assert rows_per_batch(result, "key", "kind", "t", "wm") == [
        [("a", "row", 1000, 0), ("b", "row", 2000, 0)],
        [("a", "row", 3000, 0), ("a", "row", 20000, 0)],
        [
            ("a", "timer", 6000, 10000),
            ("a", "timer", 8000, 10000),
            ("b", "row", 5000, 10000),
            ("b", "timer", 7000, 10000),
            ("b", "timer", 10000, 10000),
        ],
        [("b", "row", 11000, 10000)],
        [("a", "row", 40000, 10000)],
        [("a", "timer", 25000, 30000), ("b", "timer", 16000, 30000)],
    ]


def test_event_time_timer_fires_when_the_watermark_reaches_it_inclusive():
    """An event-time timer fires in the first batch whose watermark WM_k is >= its expiry (expiry == WM_k fires)."""
    result = run(TimerPerRow(after=9_000), [[row("a", 1)], [row("z", 20)], []], delay=10_000)
    assert [b.watermark for b in result.output()] == [0, 0, 10000]
    assert rows_per_batch(result, "kind", "t") == [[("row", 1000)], [("row", 20000)], [("timer", 10000)]]


def test_timer_registered_by_the_input_handler_in_the_past_fires_in_the_same_batch():
    """Timers fire after the input handlers, so a timer set at or before WM_k by an input handler fires at once."""
    result = run(TimerPerRow(), MEASURED, delay=10_000)
    assert ("b", "timer", 10000) in [(r["key"], r["kind"], r["t"]) for r in result.output()[2].rows]


def test_timers_fire_in_expiry_order():
    """Within a subtask, expired timers fire earliest first, whatever order they were registered in."""
    result = run(TimerPerRow(after=0), [[row("a", 9), row("b", 3), row("c", 6)], [row("z", 30)]], delay=0)
    assert [r["t"] for r in result.output()[1].rows if r["kind"] == "timer"] == [3000, 6000, 9000]


class Chain(Processor):
    """Key ``a``: a timer at 1 s, whose handler registers a timer that is already due."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        if key == "a":
            self.handle.register_timer(1_000)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        if expired_timer_info.expiry_time == 1_000:
            self.handle.register_timer(1_001)
        yield {"key": key, "t": expired_timer_info.expiry_time}


def test_timer_registered_by_a_timer_handler_waits_for_the_next_batch():
    """A timer set by a timer handler does not fire in the same batch even when due (measured: it fired a batch later)."""
    result = run(Chain(), [[row("a", 1), row("z", 10)], [row("z", 11)], [row("z", 12)]], delay=0)
    assert [b.watermark for b in result.output()] == [0, 10000, 11000, 12000]
    assert rows_per_batch(result, "t") == [[], [(1000,)], [(1001,)], []]


def test_no_data_batch_needs_a_watermark_rise_not_a_due_timer():
    """A timer left due after the last batch fires only if the watermark rises again (no-data batches follow it)."""
    result = run(Chain(), [[row("a", 1), row("z", 10)]], delay=0)
    assert rows_per_batch(result, "t") == [[], [(1000,)]]  # batch 1 is the no-data batch; 1001 never fires


class Reregister(Processor):
    """Key ``a``: a timer at 1 s, whose handler registers its own expiry time again."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        if key == "a":
            self.handle.register_timer(1_000)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        self.handle.register_timer(expired_timer_info.expiry_time)
        yield {"key": key, "timers": self.handle.list_timers()}


def test_a_fired_timer_is_deleted_after_its_handler_even_if_registered_again():
    """Spark deletes a fired timer after its handler ran, so registering the same expiry in the handler is undone."""
    result = run(Reregister(), [[row("a", 1), row("z", 10)], [row("z", 20)]], delay=0)
    # The handler sees its re-registered timer, but it is gone after the handler: it never fires again.
    assert [b.rows for b in result.output()] == [[], [{"key": "a", "timers": [1000]}], []]


class TwoTimers(Processor):
    """Keys ``a`` and ``b``: timers at 1.5 s and 2 s each; every timer handler reports the key's timers."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        if key in ("a", "b"):
            self.handle.register_timer(1_500)
            self.handle.register_timer(2_000)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        yield {"key": key, "t": expired_timer_info.expiry_time, "timers": tuple(self.handle.list_timers())}


def test_timers_due_together_are_each_deleted_before_the_next_time_fires():
    """Two keys with two timers each, all due in one batch: the handlers run by time, then key, and each
    sees its own timer being handled and the later ones, never a timer that fired before it (deleted after
    its handler, as Spark deletes each fired timer). The engine deletes the timers of one time together,
    after their handlers: a handler sees only its own key's timers, so no handler can tell."""
    result = run(TwoTimers(), [[row("a", 1), row("b", 1), row("z", 10)], [row("z", 20)]], delay=0)
    assert [(r["key"], r["t"], r["timers"]) for r in result.output()[1].rows] == [
        ("a", 1500, (1500, 2000)),
        ("b", 1500, (1500, 2000)),
        ("a", 2000, (2000,)),
        ("b", 2000, (2000,)),
    ]


class Collect(Processor):
    """Emits, per call of the input handler, the key and the times of its rows."""

    def init(self, handle):
        self.calls = handle.get_value_state("calls", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.calls.update(self.calls.value() + 1)
        yield {
            "key": key,
            "times": tuple(r["ts"] for r in rows),
            "call": self.calls.value(),
            "timer_values": (timer_values.processing_time, timer_values.watermark),
        }


def test_input_handler_runs_once_per_key_with_all_its_rows_of_the_batch():
    """handle_input_rows is called once per key that has rows in a batch, with all of them; keys without rows are
    not called."""
    result = run(Collect(), [[row("a", 1), row("b", 2), row("a", 3)], [row("b", 4)]], time_mode="none", delay=None)
    assert rows_per_batch(result, "key", "times", "call") == [
        [("a", (1000, 3000), 1), ("b", (2000,), 1)],
        [("b", (4000,), 2)],
    ]


def test_late_rows_are_dropped_only_in_event_time_mode():
    """Event-time mode drops rows with ts <= WM_{k-1} (and keeps them in Run.late_rows()); time mode "none" keeps
    them even with a watermark."""
    script = [[row("a", 20)], [row("a", 5)], [row("a", 10), row("a", 11)]]  # WM_1 = WM_2 = 10 s
    event_time = run(Collect(), script, time_mode="event_time", delay=10_000)
    no_time = run(Collect(), script, time_mode="none", delay=10_000)
    assert [r["times"] for b in event_time.output() for r in b.rows] == [(20000,), (5000,), (11000,)]
    assert [r["times"] for b in no_time.output() for r in b.rows] == [(20000,), (5000,), (10000, 11000)]
    assert [(late.batch_id, late.row["ts"], late.watermark) for late in event_time.late_rows()] == [(2, 10000, 10000)]


def test_timer_values_are_the_batch_watermark_and_timestamp():
    """TimerValues hold WM_k and the batch timestamp; in time mode "none" both are None (Spark: -1)."""
    script = [[row("a", 20)], [row("a", 30)]]
    event_time = run(Collect(), script, time_mode="event_time", delay=10_000, timestamps=[500, 900])
    no_time = run(Collect(), script, time_mode="none", delay=10_000, timestamps=[500, 900])
    assert [r["timer_values"] for b in event_time.output() for r in b.rows] == [(500, 0), (900, 10000)]
    assert [r["timer_values"] for b in no_time.output() for r in b.rows] == [(None, None), (None, None)]


def test_no_data_batch_runs_when_the_watermark_rises_even_without_timers():
    """In event-time and "none" modes a no-data batch follows a watermark rise, with or without timers."""
    for mode in ("event_time", "none"):
        result = run(Collect(), [[row("a", 1)], [row("a", 40)]], time_mode=mode, delay=10_000)
        assert [b.watermark for b in result.output()] == [0, 0, 30000]


def test_timers_need_a_time_mode():
    """Registering a timer in time mode "none" is refused, as Spark refuses it."""
    with pytest.raises(PipelineError, match="timers need a time mode"):
        run(TimerPerRow(), [[row("a", 1)]], time_mode="none", delay=None)


def test_event_time_mode_needs_a_watermark():
    """A process step in event-time mode without a with_watermark step upstream is refused when it is built."""
    with pytest.raises(PipelineError, match="event-time mode needs a watermark"):
        run(TimerPerRow(), [[row("a", 1)]], time_mode="event_time", delay=None)


class Watchdog(Processor):
    """Processing time: a timer ``after`` ms after each batch that had rows of the key; deletes the old one."""

    def __init__(self, after):
        self.after = after

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        for expiry in self.handle.list_timers():
            self.handle.delete_timer(expiry)
        self.handle.register_timer(timer_values.processing_time + self.after)
        return []

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        yield {"key": key, "expiry": expired_timer_info.expiry_time, "now": timer_values.processing_time}


def test_processing_time_timer_fires_when_the_batch_timestamp_reaches_it():
    """A processing-time timer fires in the first batch whose timestamp is >= its expiry; a deleted one never."""
    script = [[row("a", 1)], [row("a", 2)], [], [], []]
    result = run(
        Watchdog(after=1_000), script, time_mode="processing_time", delay=None, timestamps=[0, 600, 1_500, 1_599, 1_600]
    )
    assert rows_per_batch(result, "expiry", "now") == [[], [], [], [], [(1600, 1600)]]


def test_processing_time_mode_runs_the_script_batches_only():
    """ministream runs no processing-time no-data batches (Spark would ask for them for ever); empty batches in
    the script let processing time pass, and later batches keep the last timestamp."""
    result = run(Watchdog(after=1_000), [[row("a", 1)], []], time_mode="processing_time", delay=None, timestamps=[0])
    assert [(b.batch_id, b.processing_time, b.rows) for b in result.output()] == [(0, 0, []), (1, 0, [])]


def test_processing_time_mode_needs_batch_timestamps():
    """Without batch timestamps a run has no processing time, so processing-time mode is refused."""
    with pytest.raises(PipelineError, match="needs processing time"):
        run(Watchdog(after=1_000), [[row("a", 1)]], time_mode="processing_time", delay=None)


class Scoped(Processor):
    """Writes the key into value, list and map state, and reports what it reads back."""

    def init(self, handle):
        self.last = handle.get_value_state("last")
        self.seen = handle.get_list_state("seen")
        self.by_time = handle.get_map_state("by_time")
        self.counter = 0  # NOT state: a plain attribute of the processor

    def handle_input_rows(self, key, rows, timer_values):
        before = (self.last.value(), self.seen.get(), self.by_time.items())
        for r in rows:
            self.last.update(r["ts"])
            self.seen.add(r["ts"])
            self.by_time.put(r["ts"], key)
        self.counter += len(rows)
        yield {"key": key, "before": before, "counter": self.counter}


def test_state_is_scoped_to_the_current_key():
    """Value, list and map state read and write under the key being processed: keys never see each other's."""
    result = run(Scoped(), [[row("a", 1), row("b", 2)], [row("a", 3), row("b", 4)]], time_mode="none", delay=None)
    batch1 = {r["key"]: r["before"] for r in result.output()[1].rows}
    assert batch1 == {"a": (1000, [1000], [(1000, "a")]), "b": (2000, [2000], [(2000, "b")])}


def test_processor_attributes_do_not_survive_a_batch_but_state_does():
    """Each batch runs a fresh copy of the processor (init, handlers, close), as Spark's tasks do: only state lasts."""
    result = run(Scoped(), [[row("a", 1), row("a", 2)], [row("a", 3)]], time_mode="none", delay=None)
    assert [r["counter"] for b in result.output() for r in b.rows] == [2, 1]
    assert result.output()[1].rows[0]["before"][1] == [1000, 2000]


def test_results_do_not_depend_on_parallelism_or_seed():
    """The batches of a process step are the same at parallelism 1, 2 and 4 and for any seed."""

    def rows(parallelism, seed):
        result = run(TimerPerRow(), MEASURED, delay=10_000, parallelism=parallelism, seed=seed)
        return [sorted(map(repr, b.rows)) for b in result.output()]

    expected = rows(1, 0)
    assert all(rows(p, s) == expected for p in (1, 2, 4) for s in (0, 3, 11))


def test_snapshot_and_restore_keep_state_and_timers_by_key_group():
    """A process step's snapshot holds its state and its timers by key group; restoring it into more subtasks
    hands each key's state and timers to the key's new subtask."""
    from ministream.state.keygroups import key_group_range

    flow = Dataflow("snap")
    flow.source("events", ScriptedSource([[row("a", 1), row("b", 2)]])).with_watermark("wm", "ts", 0).key_by(
        "key"
    ).process("p", TimerPerRow(), time_mode="event_time").sink("output", CollectingSink())
    result = run_microbatch(flow, output_mode="update", parallelism=2)
    snapshots = [op.snapshot() for op in result.graph.operators("p")]
    restored = physical_graph(flow, parallelism=4)
    for index, operator in enumerate(restored.operators("p")):
        for snapshot in snapshots:
            operator.restore(snapshot, key_group_range(index, 4))
    timers = sorted(t for op in restored.operators("p") for t in op.timers.pop_expired_event_time(10_000))
    assert timers == [(6000, "a"), (7000, "b")]


class Remember(Processor):
    """Processing-time mode with TTL: value, list and map state, each with a 1 s time-to-live."""

    def init(self, handle):
        self.last = handle.get_value_state("last", ttl="1 second")
        self.seen = handle.get_list_state("seen", ttl=1_000)
        self.by_time = handle.get_map_state("by_time", ttl=1_000)

    def handle_input_rows(self, key, rows, timer_values):
        before = (self.last.value(), self.seen.get(), self.by_time.items())
        for r in rows:
            if r.get("write", True):
                self.last.update(r["ts"])
                self.seen.add(r["ts"])
                self.by_time.put(r["ts"] % 2, r["ts"])
        yield {"key": key, "before": before}


def ttl_run(script, timestamps, trace=False):
    return run(Remember(), script, time_mode="processing_time", delay=None, timestamps=timestamps, trace=trace)


def test_ttl_entry_expires_when_processing_time_reaches_its_expiry():
    """An entry written at batch timestamp t with TTL d is visible while now < t + d and gone once now >= t + d."""
    result = ttl_run([[row("a", 1)], [row("a", 2)], [row("a", 3)]], [0, 999, 1_999 + 1_000])
    befores = [b.rows[0]["before"][0] for b in result.output()]
    assert befores == [None, 1000, None]  # at 999 the first write lives; at 2999 the second (999 + 1000) is gone


def test_ttl_reads_hide_expired_entries_before_the_cleanup():
    """A read in the batch where an entry expires already misses it, though the cleanup comes after the handlers."""
    result = ttl_run([[row("a", 1)], [{"key": "a", "ts": 5_000, "write": False}]], [0, 1_000], trace=True)
    assert result.output()[1].rows[0]["before"] == (None, [], [])
    assert [s.state_sizes["p"] for s in result.trace.batches] == [3, 0]


def test_ttl_only_a_write_renews_an_entry():
    """Reading an entry does not keep it alive; writing it again starts its time-to-live anew."""
    script = [[row("a", 1)], [{"key": "a", "ts": 2_000, "write": False}], [row("a", 3)], [row("a", 4)]]
    result = ttl_run(script, [0, 500, 900, 1_800])
    befores = [b.rows[0]["before"][0] for b in result.output()]
    assert befores == [None, 1000, 1000, 3000]


def test_ttl_list_elements_and_map_entries_expire_one_by_one():
    """Each list element and map entry has its own expiry: appending or putting one does not renew the others."""
    script = [[row("a", 1)], [row("a", 2)], [{"key": "a", "ts": 0, "write": False}]]
    result = ttl_run(script, [0, 600, 1_000])
    assert result.output()[2].rows[0]["before"] == (2000, [2000], [(0, 2000)])


def test_ttl_cleanup_is_in_the_trace():
    """The end-of-batch cleanup says which key lost which state."""
    result = ttl_run([[row("a", 1)], [], []], [0, 500, 1_000], trace=True)
    lines = [line.text for line in result.trace.of_kind("ttl")]
    assert len(lines) == 3 and all(line.startswith("key 'a': expired entries of state") for line in lines)
    assert [line.batch_id for line in result.trace.of_kind("ttl")] == [2, 2, 2]


def test_ttl_needs_processing_time_mode():
    """A time-to-live in event-time or "none" mode is refused, as Spark refuses it
    (STATEFUL_PROCESSOR_INCORRECT_TIME_MODE_TO_ASSIGN_TTL)."""
    with pytest.raises(PipelineError, match="needs time_mode='processing_time'"):
        run(Remember(), [[row("a", 1)]], time_mode="event_time", delay=0, timestamps=[0])


class Echo(Processor):
    """Continuous model: emits each row's key and the watermark it saw; timers 5 s after each row."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        for r in rows:
            self.handle.register_timer(r["ts"] + 5_000)
            yield {"key": key, "kind": "row", "t": r["ts"]}

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        yield {"key": key, "kind": "timer", "t": expired_timer_info.expiry_time}


def test_continuous_model_runs_the_same_processor_per_record():
    """In the continuous model the input handler sees one row at a time, nothing is dropped as late, and the
    event-time timers fire as the watermark passes them (all of them at the end of the input)."""
    flow = Dataflow("continuous")
    flow.source("events", ScriptedSource([[row("a", 1), row("a", 20), row("b", 2)]])).with_watermark(
        "wm", "ts", 0
    ).key_by("key").process("p", Echo(), time_mode="event_time").sink("output", CollectingSink())
    [batch] = run_continuous(flow).output()
    assert sorted((r["kind"], r["key"], r["t"]) for r in batch.rows) == [
        ("row", "a", 1000),
        ("row", "a", 20000),
        ("row", "b", 2000),
        ("timer", "a", 6000),
        ("timer", "a", 25000),
        ("timer", "b", 7000),
    ]


def test_continuous_model_fires_processing_time_timers_at_clock_steps():
    """In the continuous model a processing-time timer fires when a ClockStep moves the clock past it."""
    flow = Dataflow("continuous-clock")
    flow.source("events", ScriptedSource([[row("a", 1), ClockStep(500), ClockStep(600)]])).key_by("key").process(
        "p", Watchdog(after=1_000), time_mode="processing_time"
    ).sink("output", CollectingSink())
    [batch] = run_continuous(flow).output()
    assert batch.rows == [{"key": "a", "expiry": 1000, "now": 1100}]


def test_a_declared_output_mode_may_differ_from_the_querys():
    """A process step declared with output_mode='append' runs in a query in update mode, as Spark's
    transformWithState(..., OutputMode.Append()) does in a query written in update mode (PySpark's
    test_transform_with_state_query_restarts writes a TWS in Update mode to an append sink): the step's own
    mode is what a restart must keep."""
    flow = Dataflow("modes")
    flow.source("events", ScriptedSource([[row("a", 1)]])).key_by("key").process(
        "p", Collect(), output_mode="append"
    ).sink("output", CollectingSink())
    assert len(run_microbatch(flow, output_mode="update").output()) == 1


def run_with_output_time(processor, script, delay=0):
    """Run ``processor`` with ``event_time_column="t"``: the steps after it would take ``t`` as event time."""
    flow = Dataflow("output-time")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", delay).key_by("key").process(
        "p", processor, time_mode="event_time", event_time_column="t"
    ).sink("output", CollectingSink())
    return run_microbatch(flow, output_mode="update")


def test_an_output_event_time_after_the_previous_watermark_passes():
    """Rule 7: a timer row at 2 s, emitted in batch 2 (watermark 20 s), is later than the previous batch's
    watermark (1 s), so it passes: the check is against WM_{k-1}, as Spark's late rows are."""
    result = run_with_output_time(TimerPerRow(after=1_000), [[row("a", 1)], [row("b", 20)]])
    assert rows_per_batch(result, "key", "kind", "t") == [
        [("a", "row", 1_000)],
        [("b", "row", 20_000)],
        [("a", "timer", 2_000)],
    ]


def test_an_output_event_time_at_or_before_the_previous_watermark_fails_the_query():
    """Rule 7: a timer set in the past (7 s, by a row at 12 s in batch 2, whose watermark is 11 s) fires in the
    same batch and emits 7 s as the output event time: at or before the previous batch's watermark (10 s), so
    the run fails, as Spark's does (EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED; measured in
    tests/spark/test_compiler.py), naming the row. (Batch 1's timer row, 5 s, was later than 0 s.)"""
    with pytest.raises(PipelineError) as caught:
        run_with_output_time(TimerPerRow(after=-5_000), [[row("a", 10)], [row("b", 11)], [row("a", 12)]])
    message = str(caught.value)
    assert message.startswith("step 'p': the processor returned {'key': 'a', 'kind': 'timer', 't': 7000, 'wm': 11000}")
    assert "is at or before 1970-01-01T00:00:10Z, the previous batch's watermark" in message
    assert "EMITTING_ROWS_OLDER_THAN_WATERMARK_NOT_ALLOWED" in message and "\n" not in message


class NoTime(Processor):
    """Emits one row per key and batch, without an event time (``t`` is null)."""

    def handle_input_rows(self, key, rows, timer_values):
        return [{"key": key, "t": None}]


def test_a_null_output_event_time_is_not_compared():
    """Rule 7: Spark's check is ``t <= watermark``, which a null does not satisfy: the row passes."""
    result = run_with_output_time(NoTime(), [[row("a", 10)], [row("a", 12)]])
    assert rows_per_batch(result, "key", "t") == [[("a", None)], [("a", None)], []]


class NoTimeColumn(Processor):
    """Emits one row per key and batch, without the column ``t`` at all."""

    def handle_input_rows(self, key, rows, timer_values):
        return [{"key": key}]


def test_an_event_time_column_the_output_lacks_is_refused():
    """Rule 7: the event_time_column must be a column of the processor's output. Declared in its output schema,
    the plan checks it before the run, as Spark resolves it before the query starts (TransformWithStateChainingSuite,
    "query fails if the output dataset does not contain specified eventTimeColumn": UNRESOLVED_COLUMN); not
    declared, the first row without it fails the run, naming the row."""
    with pytest.raises(
        PipelineError,
        match=r"event_time_column 't' is not a column of the processor's output "
        r"\(key, count\) \(Spark: UNRESOLVED_COLUMN",
    ):
        Dataflow("declared").source("events", ScriptedSource([[row("a", 1)]])).with_watermark(
            "watermark", "ts", 0
        ).key_by("key").process(
            "p", NoTimeColumn(), time_mode="event_time", event_time_column="t", output_schema="key STRING, count INT"
        )
    with pytest.raises(
        PipelineError,
        match=r"returned \{'key': 'a'\}, which has no column 't', the step's "
        r"event_time_column \(Spark: UNRESOLVED_COLUMN",
    ):
        run_with_output_time(NoTimeColumn(), [[row("a", 10)]])


class ReadsPrice(Processor):
    """Reads a column the rows may lack, in its row handler, and divides by the count in its timer handler."""

    def init(self, handle):
        self.handle = handle

    def handle_input_rows(self, key, rows, timer_values):
        self.handle.register_timer(rows[0]["ts"] + 1_000)
        return [{"key": key, "price": row["price"]} for row in rows]

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        return [{"key": key, "share": 1 / 0}]


@pytest.mark.parametrize("model", ["microbatch", "continuous", "traced"])
def test_an_error_in_a_handler_names_the_step_the_handler_and_the_key(model):
    """The processor's own code fails: the run stops with one line naming the step, the handler and the key,
    as Spark's does (``TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR``), and the error itself is the cause (its
    traceback shows the processor's line). Key b's row has no price."""
    script = [[{"key": "a", "ts": 1_000, "price": 5}, {"key": "b", "ts": 2_000}]]
    flow = Dataflow("prices")
    flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", 0).key_by("key").process(
        "p", ReadsPrice(), time_mode="event_time"
    ).sink("output", CollectingSink())
    options = {} if model == "continuous" else {"output_mode": "update", "trace": model == "traced"}
    runs = run_continuous if model == "continuous" else run_microbatch
    with pytest.raises(PipelineError) as caught:
        runs(flow, **options)
    assert str(caught.value) == (
        "step 'p': the processor's handle_input_rows failed for key 'b': KeyError: 'price' "
        "(Spark: TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR, or PYTHON_EXCEPTION from a Python processor)"
    )
    assert isinstance(caught.value.__cause__, KeyError)


def test_an_error_in_a_timer_handler_names_it():
    """The timer handler of key a divides by zero when the watermark reaches its timer (batch 2)."""
    script = [[{"key": "a", "ts": 1_000, "price": 5}], [{"key": "a", "ts": 9_000, "price": 6}]]
    with pytest.raises(PipelineError) as caught:
        run(ReadsPrice(), script)
    assert str(caught.value) == (
        "step 'p': the processor's handle_expired_timer failed for key 'a': ZeroDivisionError: division by zero "
        "(Spark: TRANSFORM_WITH_STATE_USER_FUNCTION_ERROR, or PYTHON_EXCEPTION from a Python processor)"
    )


class UsesStateInClose(Processor):
    """Counts rows per key, then reads its state (or registers a timer) in close(), where there is no key."""

    def __init__(self, in_close: str):
        self.in_close = in_close

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update(self.count.value() + len(rows))
        return ()

    def close(self):
        if self.in_close == "state":
            self.count.value()
        elif self.in_close == "timer":
            self.handle.register_timer(5_000)


@pytest.mark.parametrize(
    "in_close, message",
    [
        ("state", "ValueState.value with no current key (state 'count'): state and timers are scoped to a key"),
        ("timer", "register_timer after the handlers, in close(): no key: a timer belongs to a key"),
    ],
)
def test_close_runs_with_no_key_and_refuses_state_and_timers(in_close, message):
    """``close()`` runs after the handlers, with no current key: reading state or registering a timer there is
    refused with one line (Spark: no implicit key, handle state TIMER_PROCESSED), where it used to act on the
    key that ran last. The handlers' own state operations run as always."""
    with pytest.raises(PipelineError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(UsesStateInClose(in_close), [[{"key": "a", "ts": 1000}, {"key": "b", "ts": 2000}]])
    run(UsesStateInClose("nothing"), [[{"key": "a", "ts": 1000}]])  # the same processor, nothing in close()
