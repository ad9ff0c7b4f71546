"""Shrinking a random pipeline: the smallest plan and events on which ministream and its twin still disagree.

A disagreement found by ``ministream fuzz --pipelines`` comes with a random plan (a few stateless steps, one or
two stateful steps, several aggregates) and random events. Most of that is noise: the shrinker takes it
away one piece at a time, keeping a cut only while the two engines still disagree *the same way* (the same
``Outcome.kind``: rows that differ, or the same error of the same engine). It first simplifies the plan
(:func:`smaller_plans`: the second stateful step, then each stateless step and filter, the static table or its
changes, then all aggregates but one, then the watermark, or its delay) and then the events (``fuzz.shrink_candidates``: whole batches, then rows), and goes
round again until nothing more can go, or its budget of runs is spent. What is left is written as a pipeline
file and an events file that ``ministream compare`` replays.

>>> from ministream.tools.pipeline_generator import RandomPlan, Stateful, Stateless
>>> plan = RandomPlan(stateful=(Stateful("dedup"), Stateful("aggregate", aggregates=("count", "sum"))),
...                   stateless=((Stateless("filter", 3),),), output_mode="update")
>>> [candidate.describe() for candidate in smaller_plans(plan)][:3]
['A random pipeline: value > 3 on events; dedup by key (update mode).', 'A random pipeline: value > 3 on events; aggregate per key (update mode).', 'A random pipeline: dedup by key; aggregate per key (update mode).']
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.errors import PipelineError
from ministream.tools.fuzz import Outcome, check_script, shrink_candidates, trimmed
from ministream.tools.pipeline_generator import RandomPlan, modes_for, plan_lesson, valid_chain

Check = Callable[[RandomPlan, object], Outcome]
"""``check(plan, script)``: run both engines on the plan's pipeline and the script, and say how they compare
(a plan the engine refuses raises ``PipelineError``)."""


def smaller_plans(plan: RandomPlan) -> list[RandomPlan]:
    """Simpler plans to try, the biggest cut first: one output instead of two, one stateful step instead of two,
    a stateless step less, one aggregate instead of several, no watermark, a watermark delay of 0; only those
    whose output mode Spark accepts (a cut the engine then refuses, such as append mode without a watermark, is
    tried and dropped)."""
    candidates = []
    if plan.second_output is not None:  # one output: the first, or the second alone (of one input's rows)
        candidates.append(attrs.evolve(plan, second_output=None))
        if len(plan.inputs) == 1:  # after a join, the second reads the left side's renamed columns: kept with it
            candidates.append(attrs.evolve(plan, stateful=(plan.second_output,), second_output=None, after_keyed=()))
    if len(plan.stateful) > 1:
        candidates += [attrs.evolve(plan, stateful=(step,)) for step in plan.stateful]
    for side, steps in enumerate(plan.stateless):
        for index in range(len(steps)):
            fewer = steps[:index] + steps[index + 1 :]
            candidates.append(attrs.evolve(plan, stateless=_replace(plan.stateless, side, fewer)))
    for index in range(len(plan.after_join)):
        candidates.append(attrs.evolve(plan, after_join=plan.after_join[:index] + plan.after_join[index + 1 :]))
    if plan.after_keyed:
        candidates.append(attrs.evolve(plan, after_keyed=()))
    if plan.static is not None:
        candidates.append(attrs.evolve(plan, static=None))
        if plan.static.changes:  # a table that does not change
            candidates.append(attrs.evolve(plan, static=attrs.evolve(plan.static, changes=())))
        filters = plan.static.filters
        for index in range(len(filters)):
            fewer = attrs.evolve(plan.static, filters=filters[:index] + filters[index + 1 :])
            candidates.append(attrs.evolve(plan, static=fewer))
    for position, step in enumerate(plan.stateful):
        if len(step.aggregates) > 1:
            for aggregate in step.aggregates:
                one = attrs.evolve(step, aggregates=(aggregate,))
                candidates.append(attrs.evolve(plan, stateful=_replace(plan.stateful, position, one)))
    for side, delay in enumerate(plan.delays):
        if delay is not None:
            candidates.append(attrs.evolve(plan, delays=_replace(plan.delays, side, None)))
        if delay:
            candidates.append(attrs.evolve(plan, delays=_replace(plan.delays, side, 0)))
    return [
        candidate
        for candidate in candidates
        if plan.output_mode in modes_for(candidate.stateful)
        and valid_chain(candidate.stateful, len(candidate.inputs))  # two inputs: a join, and only a window after it
        and all(candidate.delays[side] is not None for side in _event_time_sides(candidate))
    ]


def _event_time_sides(plan: RandomPlan) -> set[int]:
    """The inputs (0, or 1 on a join's right side) of the steps of ``plan`` that run in event-time mode
    (timers, or an output event time): each needs a watermark.

    >>> from ministream.tools.pipeline_generator import Stateful
    >>> process = Stateful("process", processor="latest", side="r")
    >>> _event_time_sides(RandomPlan(stateful=(process, Stateful("join")), inputs=("left", "right")))
    {1}
    """
    return {
        0 if step.side == "l" else 1
        for step in plan.stateful
        if step.kind == "process" and step.processor in ("quiet", "latest")
    }


def _replace(items: tuple, index: int, value) -> tuple:
    return items[:index] + (value,) + items[index + 1 :]


@attrs.frozen
class Shrunk:
    """The smallest disagreement found: its plan, its events, how the engines compare on them, and the runs
    of both engines the shrinking used."""

    plan: RandomPlan
    script: object
    outcome: Outcome
    runs: int


def shrink_pipeline(plan: RandomPlan, script, outcome: Outcome, check: Check, budget: int = 30) -> Shrunk:
    """Cut ``plan`` and ``script`` down while ``check`` still fails the way ``outcome`` did, with at most
    ``budget`` checks; plans first (a simpler pipeline explains more than fewer rows), then events."""
    current = Shrunk(plan, trimmed(script), outcome, 0)
    runs = 0

    def fails_alike(candidate_plan: RandomPlan, candidate_script) -> Outcome | None:
        nonlocal runs
        runs += 1
        try:
            candidate = check(candidate_plan, candidate_script)
        except PipelineError:  # a cut that makes the plan invalid teaches nothing
            return None
        return candidate if candidate.kind == outcome.kind else None

    progress = True
    while progress and runs < budget:
        progress = False
        for candidate_plan in smaller_plans(current.plan):
            if runs >= budget:
                break
            found = fails_alike(candidate_plan, current.script)
            if found is not None:
                current, progress = Shrunk(candidate_plan, current.script, found, runs), True
                break
        if progress:
            continue
        for candidate_script in shrink_candidates(current.script):
            if runs >= budget:
                break
            found = fails_alike(current.plan, candidate_script)
            if found is not None:
                current, progress = Shrunk(current.plan, candidate_script, found, runs), True
                break
    return attrs.evolve(current, runs=runs)


def spark_check(name: str) -> Check:
    """The check of ``ministream fuzz --pipelines``: the plan's pipeline file, loaded as lesson ``name``, run
    in ministream and in its compiled PySpark twin (``fuzz.check_script``)."""

    def check(plan: RandomPlan, script) -> Outcome:
        return check_script(plan_lesson(plan, name), script)

    return check
