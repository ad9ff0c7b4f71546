"""Shrinking random pipelines (ministream/tools/pipeline_shrinker.py): a planted disagreement shrinks to the
smallest plan and events that still disagree."""

import contextlib

import attrs

from ministream.core.compare import compare_batches
from ministream.core.results import BatchResult
from ministream.errors import PipelineError
from ministream.tools.fuzz import Outcome, rows_in, shrink_candidates
from ministream.tools.pipeline_generator import RandomPlan, Stateful, Stateless, StaticTable, plan_lesson
from ministream.tools.pipeline_shrinker import shrink_pipeline, smaller_plans
from tests.tools.test_pipeline_generator import JOIN_WITH_A_SECOND_OUTPUT

T = 1_704_103_200_000


def planted(plan, script, only_sliding=True):
    """A stand-in twin with a planted bug: it loses the sliding windows' rows of key 'b' that carry a sum (every
    row of key 'b', when not ``only_sliding``). Engine against engine-with-the-bug; a plan the engine refuses
    raises PipelineError, as with Spark."""
    ours = plan_lesson(plan, "planted").run(script).output()
    buggy = [
        BatchResult(
            batch.batch_id,
            batch.watermark,
            [
                row
                for row in batch.rows
                if not (
                    row.get("key") == "b"
                    and (not only_sliding or ("sum" in row and plan.stateful[-1].kind == "sliding"))
                )
            ],
        )
        for batch in ours
    ]
    return Outcome(compare_batches(ours, buggy))


BIG = RandomPlan(
    stateful=(
        Stateful("dedup", dedup="key_ts"),
        Stateful("sliding", size=10_000, slide=5_000, aggregates=("count", "sum")),
    ),
    delays=(5_000,),
    stateless=((Stateless("map", 2), Stateless("filter", 1)),),
    output_mode="append",
)
SCRIPT = [
    [{"ts": T + s * 1_000, "key": key, "value": float(s % 5 + 1)} for s, key in ((1, "a"), (2, "b"), (3, "c"))],
    [{"ts": T + 9_000, "key": "a", "value": 2.0}, {"ts": T + 4_000, "key": "b", "value": 3.0}],
    [{"ts": T + 30_000, "key": "c", "value": 1.0}, {"ts": T + 12_000, "key": "b", "value": 4.0}],
    [{"ts": T + 50_000, "key": "a", "value": 1.0}],
]


def test_a_planted_disagreement_shrinks_to_a_minimal_case():
    """The planted bug shrinks to one sliding window step with one aggregate, the sum, no stateless step, a
    0-second watermark, and two rows (a 'b' row and a row that moves the watermark past its windows); no
    smaller plan and no smaller script still disagrees."""
    first = planted(BIG, SCRIPT)
    assert not first.matches
    small = shrink_pipeline(BIG, SCRIPT, first, planted, budget=300)
    assert small.plan == RandomPlan(
        stateful=(Stateful("sliding", size=10_000, slide=5_000, aggregates=("sum",)),),
        delays=(0,),
        stateless=((),),
        output_mode="append",
    )
    assert rows_in(small.script) == 2 and not small.outcome.matches
    for plan in smaller_plans(small.plan):  # a local minimum: every further cut agrees or is refused
        with contextlib.suppress(PipelineError):
            assert planted(plan, small.script).matches
    assert all(planted(small.plan, script).matches for script in shrink_candidates(small.script))


def test_the_budget_bounds_the_runs():
    """Shrinking stops after its budget of checks, with the smallest case found so far."""
    first = planted(BIG, SCRIPT)
    small = shrink_pipeline(BIG, SCRIPT, first, planted, budget=3)
    assert small.runs == 3 and not small.outcome.matches


def test_smaller_plans_keep_an_output_mode_spark_accepts():
    """A dedup then an aggregate in update mode may lose the dedup, not become a dedup alone in complete mode."""
    plan = RandomPlan(stateful=(Stateful("dedup"), Stateful("aggregate")), output_mode="complete")
    kinds = [tuple(step.kind for step in candidate.stateful) for candidate in smaller_plans(plan)]
    assert kinds == [("aggregate",)]


def test_smaller_plans_of_a_join_then_a_window_keep_the_join():
    """A join then a window may lose the window (the join alone is a plan of two inputs), never the join: a
    window alone has one input."""
    join = Stateful("join", how="inner", lower=0, upper=1_000)
    plan = RandomPlan(
        stateful=(join, Stateful("tumbling", size=5_000)), inputs=("left", "right"), delays=(0, 0), stateless=((), ())
    )
    kinds = [tuple(step.kind for step in candidate.stateful) for candidate in smaller_plans(plan)]
    assert ("join",) in kinds and ("tumbling",) not in kinds


def test_smaller_plans_may_leave_max_alone_in_a_window_after_an_outer_join():
    """After a left outer join, a window of count and max may lose either: with max alone Spark's optimizer
    removes the join, and ministream runs the plan as Spark does (core/outer_join_elimination.py), so the
    smaller plan is still one both engines should agree on."""
    join = Stateful("join", how="left_outer", lower=0, upper=1_000)
    window = Stateful("tumbling", size=5_000, aggregates=("count", "max"))
    plan = RandomPlan(stateful=(join, window), inputs=("left", "right"), delays=(0, 0), stateless=((), ()))
    cut = [candidate.stateful[-1].aggregates for candidate in smaller_plans(plan) if len(candidate.stateful) == 2]
    assert ("count",) in cut and ("max",) in cut


def test_smaller_plans_may_drop_the_static_table_or_one_of_its_filters():
    """A join with a static table and two filters after it may lose the table (and its filters with it), or
    either filter."""
    filters = (Stateless("filter", 1, "region"), Stateless("filter", 2, "value"))
    plan = RandomPlan(
        stateful=(Stateful("aggregate"),), output_mode="update", static=StaticTable("inner", filters=filters)
    )
    statics = [candidate.static for candidate in smaller_plans(plan)]
    assert None in statics
    assert [static.filters for static in statics if static is not None] == [filters[1:], filters[:1]]


def test_smaller_plans_may_keep_the_static_table_but_not_its_changes():
    """A table that changes between batches may become one that does not (the same keys throughout)."""
    static = StaticTable("inner", changes=((1, ("c",)),))
    plan = RandomPlan(stateful=(Stateful("aggregate"),), output_mode="update", static=static)
    statics = [candidate.static for candidate in smaller_plans(plan)]
    assert StaticTable("inner") in statics


def test_smaller_plans_keep_the_watermark_of_the_side_key_latest_runs_on():
    """KeyLatest on a join's right side runs in event time: no smaller plan drops the right side's watermark
    (the left side's may go)."""
    process = Stateful("process", processor="latest", side="r")
    plan = RandomPlan(
        stateful=(process, Stateful("join")), inputs=("left", "right"), delays=(1_000, 1_000), stateless=((), ())
    )
    smaller = smaller_plans(plan)
    assert smaller and all(candidate.delays[1] is not None for candidate in smaller)
    assert (None, 1_000) in {candidate.delays for candidate in smaller}


def test_smaller_plans_may_drop_the_second_output_or_keep_it_alone():
    """A plan of two outputs shrinks to its first output alone, or to its second alone (then the only one,
    without the filters that followed the first)."""
    plan = RandomPlan(
        stateful=(Stateful("aggregate"),),
        delays=(None,),
        output_mode="update",
        after_keyed=(Stateless("filter", 1, "key"),),
        second_output=Stateful("tumbling", size=5_000),
    )
    smaller = smaller_plans(plan)
    assert attrs.evolve(plan, second_output=None) in smaller
    alone = attrs.evolve(plan, stateful=(Stateful("tumbling", size=5_000),), second_output=None, after_keyed=())
    assert alone in smaller


def test_the_second_output_of_a_join_plan_is_dropped_not_kept_alone():
    """After a join the second output reads the left side's renamed columns (l_key, l_ts...): the plan shrinks
    to its join alone, first, and never to the second output alone over two inputs."""
    plan = JOIN_WITH_A_SECOND_OUTPUT
    smaller = smaller_plans(plan)
    assert smaller[0] == attrs.evolve(plan, second_output=None)
    assert all(candidate.stateful[-1].kind == "join" for candidate in smaller)
