"""The continuous model (``models/continuous.py``): watermarks flow with the rows, idle inputs leave the
minimum (the valve's own rules are in tests/time/test_watermarks.py), the end of input fires everything,
processing time moves only with the clock, and results do not depend on the seed."""

from collections import Counter

import pytest

from ministream.core.aggregates import Count
from ministream.core.operator import Operator
from ministream.core.plan import Dataflow, Stream
from ministream.core.results import normalize_row
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.core.steps import Edge, OperatorSpec, Step
from ministream.models.continuous import run_continuous
from ministream.time.clock import ClockStep, ManualClock
from ministream.time.timers import TimerService
from ministream.time.watermarks import MAX_WATERMARK

SEEDS = range(12)


def s(seconds):
    """Seconds as event-time milliseconds."""
    return seconds * 1000


class Union(Operator):
    """Test step with several inputs: passes rows on and records every watermark it hears of."""

    def __init__(self, seen: list):
        self.seen = seen

    def process(self, rows, input_index):
        self.ctx.emit(rows)

    def on_watermark(self, watermark):
        self.seen.append(watermark)
        super().on_watermark(watermark)


class LateMarker(Operator):
    """Test step with several inputs: passes each row on with ``late``: its ts is at or before the step's
    watermark when it arrives."""

    def open(self, ctx):
        super().open(ctx)
        self.watermark = None

    def process(self, rows, input_index):
        self.ctx.emit([{**row, "late": self.watermark is not None and row["ts"] <= self.watermark} for row in rows])

    def on_watermark(self, watermark):
        self.watermark = watermark
        super().on_watermark(watermark)


class EventTimeAlarm(Operator):
    """Test keyed step: one event-time timer per row at the row's ts; emits a row when a timer fires."""

    keyed = True

    def open(self, ctx):
        super().open(ctx)
        self.timers = TimerService()
        self.watermarks = []

    def process(self, pairs, input_index):
        for key, row in pairs:
            self.timers.register_event_time_timer(key, row["ts"])

    def on_watermark(self, watermark):
        self.watermarks.append(watermark)
        fired = self.timers.pop_expired_event_time(watermark)
        self.ctx.emit([{"key": key, "ts": ts, "final": watermark == MAX_WATERMARK} for ts, key in fired])
        super().on_watermark(watermark)


class ProcessingTimeAlarm(Operator):
    """Test keyed step: each row sets a processing-time timer 5 s after the clock's now; fired timers emit."""

    keyed = True

    def open(self, ctx):
        super().open(ctx)
        self.timers = TimerService()

    def process(self, pairs, input_index):
        for key, _ in pairs:
            self.timers.register_processing_time_timer(key, self.ctx.clock.now() + 5_000)

    def on_processing_time(self, now):
        fired = self.timers.pop_expired_processing_time(now)
        self.ctx.emit([{"key": key, "due": ts, "fired_at": now} for ts, key in fired])


def keyed(flow, upstream, name, make_operator):
    return upstream.key_by("key").operator_step(name, "test", make_operator)


def union(flow, name, streams, seen):
    step = flow.add(
        Step(name, OperatorSpec("union", lambda: Union(seen)), [Edge(s.step) for s in streams], parallelism="one")
    )
    return Stream(flow, step)


def running_count_flow(script, delay="2 seconds"):
    flow = Dataflow("running-count")
    events = flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", delay)
    events.key_by("key").aggregate("counts", count=Count()).sink("output", CollectingSink())
    return flow


SCRIPT = [
    [{"key": "a", "ts": s(5)}, {"key": "b", "ts": s(2)}, {"key": "a", "ts": s(9)}],
    [],
    [{"key": "c", "ts": s(1)}, {"key": "b", "ts": s(12)}, {"key": "a", "ts": s(11)}, {"key": "c", "ts": s(20)}],
]


def test_watermark_is_max_minus_delay_minus_one_and_rows_carry_the_one_before_them():
    """with_watermark emits max - delay - 1 when it rises; a row reaches the sink with the watermark of the rows
    before it, and the sink ends at +infinity."""
    flow = Dataflow("wm")
    flow.source("events", ScriptedSource([[{"ts": s(10)}, {"ts": s(5)}, {"ts": s(12)}]])).with_watermark(
        "wm", "ts", "2 seconds"
    ).sink("output", CollectingSink())
    run = run_continuous(flow)
    assert [(a.row["ts"], a.watermark) for a in run.arrivals_at("output")] == [
        (s(10), None),
        (s(5), s(8) - 1),
        (s(12), s(8) - 1),
    ]
    assert run.output("output")[0].watermark == MAX_WATERMARK


@pytest.mark.parametrize("parallelism", [1, 2, 3])
def test_keyed_watermarks_never_go_down_and_end_at_infinity(parallelism):
    """Every subtask of a keyed step sees its watermark rise strictly, ending with the final +infinity."""
    flow = Dataflow("alarm")
    events = flow.source("events", ScriptedSource(SCRIPT)).with_watermark("wm", "ts", "2 seconds")
    keyed(flow, events, "alarm", EventTimeAlarm).sink("output", CollectingSink())
    for seed in SEEDS:
        run = run_continuous(flow, parallelism=parallelism, seed=seed)
        for operator in run.graph.operators("alarm"):
            assert operator.watermarks == sorted(set(operator.watermarks))
            assert operator.watermarks[-1] == MAX_WATERMARK


def test_event_time_timers_fire_when_the_watermark_passes_and_all_at_the_end():
    """A keyed step's event-time timers fire once the watermark reaches them; the rest fire at the final +inf."""
    flow = Dataflow("alarm")
    events = flow.source("events", ScriptedSource(SCRIPT)).with_watermark("wm", "ts", "2 seconds")
    keyed(flow, events, "alarm", EventTimeAlarm).sink("output", CollectingSink())
    rows = run_continuous(flow).output("output")[0].rows
    # max event time 20 s, delay 2 s: the watermark reaches 17.999 s before the end of input
    # watermarks 2.999 s (after a@5), 6.999 s (a@9), 9.999 s (b@12), 17.999 s (c@20), then +inf; c@1 came after
    # 6.999 s: its timer is already due and fires at the next watermark
    assert [(r["key"], r["ts"] // 1000, r["final"]) for r in rows] == [
        ("b", 2, False),
        ("a", 5, False),
        ("c", 1, False),
        ("a", 9, False),
        ("a", 11, False),
        ("b", 12, False),
        ("c", 20, True),
    ]


def test_slower_input_holds_the_minimum_until_it_goes_idle():
    """A step with two inputs never runs ahead of the slower input while it is active; once it has finished
    (idle), the faster input's watermark is reached; then +infinity. For every seed."""
    slow_rows = [{"ts": s(t)} for t in range(1, 11)]
    fast_rows = [{"ts": s(100)}] * 5
    for seed in SEEDS:
        flow, seen = Dataflow("union"), []
        slow = flow.source("slow", ScriptedSource([slow_rows])).with_watermark("slow_wm", "ts", 0)
        fast = flow.source("fast", ScriptedSource([fast_rows])).with_watermark("fast_wm", "ts", 0)
        union(flow, "union", [slow, fast], seen).sink("output", CollectingSink())
        run_continuous(flow, seed=seed)
        slow_watermarks = {s(t) - 1 for t in range(1, 11)}
        assert seen == sorted(set(seen))
        assert seen[-2:] == [s(100) - 1, MAX_WATERMARK]
        assert set(seen[:-2]) <= slow_watermarks


def test_two_inputs_can_depend_on_the_interleaving():
    """With two inputs, whether a row is late can depend on the seed (as in Flink): here a@5 s is late when the
    other input's watermark got through while its own input was idle, and on time otherwise."""
    outcomes = set()
    for seed in range(20):
        flow = Dataflow("two-inputs")
        quiet = flow.source("quiet", ScriptedSource([[ClockStep("10 seconds"), {"key": "a", "ts": s(5)}]]))
        busy = flow.source("busy", ScriptedSource([[{"key": "b", "ts": s(50)}, {"key": "b", "ts": s(51)}]]))
        streams = [quiet.with_watermark("quiet_wm", "ts", 0), busy.with_watermark("busy_wm", "ts", 0)]
        step = flow.add(
            Step("mark", OperatorSpec("union", LateMarker), [Edge(x.step) for x in streams], parallelism="one")
        )
        Stream(flow, step).sink("output", CollectingSink())
        rows = run_continuous(flow, seed=seed, idle_timeout="5 seconds").output()[0].rows
        outcomes.add(next(row["late"] for row in rows if row["key"] == "a"))
    assert outcomes == {True, False}


def test_idle_timeout_marks_a_silent_source_idle_until_it_delivers_again():
    """A source that delivered nothing for idle_timeout of processing time goes idle (and its receivers with
    it) when the clock moves, and is active again with its next row."""
    flow = Dataflow("idle")
    events = flow.source(
        "events", ScriptedSource([[{"key": "a", "ts": s(1)}, ClockStep("10 seconds"), {"key": "a", "ts": s(2)}]])
    )
    events.with_watermark("wm", "ts", 0).sink("output", CollectingSink())
    run = run_continuous(flow, trace=True, idle_timeout="5 seconds")
    story = [(line.step, line.kind) for line in run.trace.lines if line.kind in ("clock", "idle", "active", "read")]
    assert story[:8] == [
        ("events", "read"),
        ("events", "clock"),
        ("clock", "clock"),
        ("events", "idle"),
        ("wm", "idle"),
        ("output", "idle"),
        ("events", "active"),
        ("events", "read"),
    ]
    assert "no row for 10 seconds" in run.trace.of_kind("idle")[0].text


def test_no_idle_timeout_keeps_a_silent_source_active():
    """Without an idle_timeout only a finished source goes idle, however far the clock moves."""
    flow = Dataflow("idle")
    flow.source("events", ScriptedSource([[{"ts": s(1)}, ClockStep("1 hour"), {"ts": s(2)}]])).sink(
        "output", CollectingSink()
    )
    run = run_continuous(flow, trace=True)
    idle = run.trace.of_kind("idle")
    assert [line.text for line in idle if line.step == "events"] == [
        "finished its script: idle, it leaves its receivers' minimum"
    ]


@pytest.mark.parametrize("parallelism", [1, 2, 4])
def test_running_count_multiset_does_not_depend_on_seed_or_parallelism(parallelism):
    """With one source upstream of the keyed step, the multiset of output rows is the same for every seed and
    parallelism, and each key's updates come in script order."""
    expected = Counter(normalize_row(r) for r in run_continuous(running_count_flow(SCRIPT)).output()[0].rows)
    for seed in SEEDS:
        rows = run_continuous(running_count_flow(SCRIPT), parallelism=parallelism, seed=seed).output()[0].rows
        assert Counter(map(normalize_row, rows)) == expected
        assert [r["count"] for r in rows if r["key"] == "a"] == [1, 2, 3]


def test_same_seed_same_order():
    """For a given seed and parallelism a run is repeated exactly, row order included."""
    first = run_continuous(running_count_flow(SCRIPT), parallelism=3, seed=7).output()[0].rows
    assert run_continuous(running_count_flow(SCRIPT), parallelism=3, seed=7).output()[0].rows == first


def test_processing_time_timers_fire_when_the_clock_moves():
    """Processing-time timers fire only at a clock step, after every row before the step was processed, with
    the clock's time; a clock passed in is the operators' ctx.clock."""
    script = [
        [{"key": "a"}, {"key": "b"}, ClockStep("3 seconds"), {"key": "a"}, ClockStep("2 seconds")],
        [ClockStep("10 seconds")],
    ]
    for parallelism, seed in [(1, 0), (2, 1), (3, 5)]:
        flow = Dataflow("alarm")
        keyed(flow, flow.source("events", ScriptedSource(script)), "alarm", ProcessingTimeAlarm).sink(
            "output", CollectingSink()
        )
        clock = ManualClock(start_ms=1_000)
        run = run_continuous(flow, parallelism=parallelism, seed=seed, clock=clock)
        assert sorted((r["fired_at"], r["key"], r["due"]) for r in run.output()[0].rows) == [
            (6_000, "a", 6_000),
            (6_000, "b", 6_000),
            (16_000, "a", 9_000),
        ]
        assert clock.now() == 16_000 and run.clock is clock
        assert all(op.ctx.clock is clock for op in run.graph.operators("alarm"))


def test_trace_is_read_per_step():
    """The continuous trace groups lines per step and shows the watermark rising in the keyed step."""
    run = run_continuous(running_count_flow(SCRIPT), trace=True)
    text = run.trace.format()
    assert text.startswith("continuous model: one block per step")
    assert [line for line in text.splitlines() if line.startswith("step ")] == [
        "step events",
        "step wm",
        "step counts",
        "step output",
    ]
    assert "#4 [0] watermark: watermark rises to 1970-01-01T00:00:02.999Z: from its input" in text
    assert text.endswith("state at the end of input: counts=3")


def test_every_lesson_runs_continuously_or_says_why():
    """Every lesson runs in the continuous model, or refuses with a PipelineError that names the reason."""
    from ministream.errors import PipelineError
    from ministream.lessons import all_lessons

    refusals = []
    for lesson in all_lessons():
        try:
            run = lesson.run(model="continuous")
        except PipelineError as error:
            refusals.append((lesson.name, str(error)))
            continue
        assert [batch.watermark for batch in run.output()] == [MAX_WATERMARK], lesson.name
    assert all("continuous model" in message for _, message in refusals), refusals


def test_the_final_watermark_waits_until_every_input_is_active_again():
    """At the end of input every source becomes active again before +∞ is sent: a window step after another
    one, at parallelism 2, does not reach +∞ through one input while the other is still idle there, so the
    last window of the first step still counts (every checkpoint interval, in the run with checkpoints)."""
    from ministream import Sum, Tumbling
    from ministream.checkpoints.recovery import run_with_recovery
    from ministream.lessons import get_lesson

    script = get_lesson("chained-aggregations").default_script

    def flow():
        flow = Dataflow("two-windows")
        trips = flow.source("trips", ScriptedSource(script)).with_watermark("wm", "ts", "10 minutes")
        hourly = trips.key_by("driver").window("hourly", Tumbling("1 hour"), total=Sum("fare"))
        per_hour = hourly.key_by("window_end").window("per_hour", Tumbling("1 hour"), column="window_end", n=Count())
        per_hour.sink("output", CollectingSink())
        return flow

    for interval in (1, 2, 3, 4):
        run = run_with_recovery(flow(), model="continuous", parallelism=2, interval=interval, output_mode="append")
        assert sorted(row["n"] for batch in run.output() for row in batch.rows) == [1, 3, 3], interval
