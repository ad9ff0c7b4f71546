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
