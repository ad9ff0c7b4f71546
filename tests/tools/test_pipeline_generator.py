"""Random pipelines (ministream/tools/pipeline_generator.py): plans drawn by seed, valid for Spark by construction,
written as pipeline files that load back into lessons the engine runs."""

import random
from collections import Counter

import pytest

from ministream.tools.fuzz import random_script
from ministream.tools.pipeline_generator import (
    STATEFUL_KINDS,
    RandomPlan,
    Stateful,
    modes_for,
    pipeline_source,
    plan_lesson,
    random_plan,
)

PLANS = [random_plan(random.Random(f"pipelines:0:{index}")) for index in range(300)]


def test_a_seed_gives_the_same_plan_and_events():
    """Plan i of seed s is the same every time, and so is the pipeline file and each of its scripts."""
    again = random_plan(random.Random("pipelines:0:7"))
    assert again == PLANS[7] and pipeline_source(again) == pipeline_source(PLANS[7])
    lesson = plan_lesson(again, "p")
    assert random_script(lesson, random.Random("s"), {}) == random_script(lesson, random.Random("s"), {})
    assert len({pipeline_source(plan) for plan in PLANS[:50]}) > 40  # other seeds, other plans


@pytest.mark.parametrize("index", range(0, 300, 3))
def test_every_plan_is_valid_and_runs_in_the_engine(index):
    """Each plan's output mode is one Spark accepts for its stateful steps, append mode over windows has a
    watermark, and its pipeline file loads and runs on its random events without a refusal."""
    plan = PLANS[index]
    assert plan.output_mode in modes_for(plan.stateful)
    if plan.output_mode == "append" and any(step.kind in ("tumbling", "sliding", "session") for step in plan.stateful):
        assert plan.delays[0] is not None
    if plan.stateful[-1].kind == "join":
        assert plan.inputs == ("left", "right") and plan.output_mode == "append"
    lesson = plan_lesson(plan, f"p{index}")
    assert lesson.doc == plan.describe() and lesson.mode({}) == plan.output_mode
    for number in range(2):
        script = random_script(lesson, random.Random(f"pipelines:0:{index}:{number}"), {})
        output = lesson.run(script).output()
        assert len(output) >= 1


def test_the_plans_cover_every_kind_mode_and_shape():
    """Over 300 seeds: every stateful kind, every output mode, one and two inputs, one and two stateful steps
    (dedup before an aggregate, a window, a session or a join), every join type, and stateless steps."""
    kinds = Counter(plan.stateful[0].kind for plan in PLANS)
    assert set(kinds) == set(STATEFUL_KINDS)
    assert {plan.output_mode for plan in PLANS} == {"append", "update", "complete"}
    assert {len(plan.inputs) for plan in PLANS} == {1, 2} and {len(plan.stateful) for plan in PLANS} == {1, 2}
    chains = {tuple(step.kind for step in plan.stateful) for plan in PLANS if len(plan.stateful) == 2}
    assert chains == {("dedup", kind) for kind in ("aggregate", "tumbling", "sliding", "session", "join")}
    assert {plan.stateful[-1].how for plan in PLANS if plan.stateful[-1].kind == "join"} == {
        "inner",
        "left_outer",
        "right_outer",
        "full_outer",
        "left_semi",
    }
    assert {step.kind for plan in PLANS for steps in plan.stateless for step in steps} == {"filter", "map", "select"}


def test_a_plan_is_written_as_a_pipeline_file():
    """A dedup then a window, in append mode: the file has its FIELDS, mode, watermark and both steps."""
    plan = RandomPlan(
        stateful=(Stateful("dedup", dedup="key_ts"), Stateful("tumbling", size=5_000, aggregates=("count", "sum"))),
        delays=(2_000,),
    )
    assert pipeline_source(plan).splitlines()[-4:] == [
        "def pipeline(events):",
        '    events = events.with_watermark("events_watermark", "ts", "2 seconds")',
        '    events = events.drop_duplicates("dedup", ["key", "ts"])',
        '    return events.key_by("key").window("tumbling_1", Tumbling("5 seconds"), count=Count(), sum=Sum("value"))',
    ]


def test_process_steps_are_drawn_with_both_processors_and_a_watermark_for_timers():
    """Over 300 seeds, process steps are drawn with each processor of tools/random_processors.py, in append or
    update mode; the quiet-key counter (event-time timers) always has a watermark."""
    steps = [(plan, plan.stateful[0]) for plan in PLANS if plan.stateful[0].kind == "process"]
    assert {step.processor for _, step in steps} == {"counter", "quiet"}
    assert {plan.output_mode for plan, _ in steps} == {"append", "update"}
    assert all(plan.delays[0] is not None for plan, step in steps if step.processor == "quiet")


def test_a_quiet_key_counter_plan_is_written_and_runs_in_the_engine():
    """A process step is written as key_by(...).process(...) with the processor imported from the package, and
    the quiet-key counter emits each key's count once the watermark passes its latest row + the gap (batch k
    runs under the watermark of batch k-1)."""
    plan = RandomPlan(stateful=(Stateful("process", size=2_000, processor="quiet"),), delays=(0,))
    source = pipeline_source(plan)
    assert "from ministream.tools.random_processors import KeyCounter, QuietKeyCounter" in source
    assert source.splitlines()[-1] == (
        '    return events.key_by("key").process("process", QuietKeyCounter(2000), time_mode="event_time")'
    )
    script = [
        [{"ts": 1_000, "key": "a", "value": 1.0}, {"ts": 2_000, "key": "a", "value": 2.0}],
        [{"ts": 3_000, "key": "b", "value": 1.0}],
        [{"ts": 10_000, "key": "b", "value": 1.0}],
    ]
    rows = [batch.rows for batch in plan_lesson(plan, "quiet").run(script).output()]
    # a's timer (4 s) fires in the no-data batch 3, under the watermark 10 s; b's (12 s) never does
    assert rows == [[], [], [], [{"key": "a", "count": 2, "last": 2_000}]]
