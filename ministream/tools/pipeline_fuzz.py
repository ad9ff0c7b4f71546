"""Fuzzing random pipelines: random plans and random events, each run in ministream and in its compiled twin.

``ministream fuzz --pipelines N --seed S`` draws ``N`` random plans (``tools/pipeline_generator.py``), loads each
one from its pipeline file, draws a few random scripts of events for it (``fuzz.random_script``: events on the
edges of the plan's windows, gaps, delays and join ranges) and compares ministream with the PySpark twin that
``ministream/spark/compiler/`` writes for the plan, batch for batch. The first disagreement of a pipeline is
shrunk (``tools/pipeline_shrinker.py``) to the smallest plan and events that still disagree, written out as a
pipeline file and an events file, with the ``ministream compare`` command that replays them. A plan that the
compiler refuses is counted apart: it says what the compiler cannot do yet, not that an engine is wrong.

Plan ``i`` of seed ``s`` is drawn from ``random.Random("pipelines:s:i")`` and its script ``j`` from
``random.Random("pipelines:s:i:j")``: the same on every machine.

>>> from ministream.tools.fuzz import Outcome
>>> from ministream.core.compare import compare_batches
>>> from ministream.core.results import BatchResult
>>> def engine_only(plan, script):      # a stand-in for Spark: ministream against itself
...     ours = plan_lesson(plan, "p").run(script).output()
...     return Outcome(compare_batches(ours, ours))
>>> report = fuzz_pipelines(3, seed=0, scripts=2, check=lambda name: engine_only)
>>> report.summary()
'3 of 3 random pipelines agree with their twins on every script: 6 of 6 scripts (seed 0)'
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Callable
from pathlib import Path

import attrs

from ministream.core.events import write_events
from ministream.errors import PipelineError
from ministream.tools.fuzz import Outcome, batches_in, random_script, rows_in
from ministream.tools.pipeline_generator import RandomPlan, pipeline_source, plan_lesson, random_plan
from ministream.tools.pipeline_shrinker import Check, Shrunk, shrink_pipeline, spark_check


@attrs.frozen
class PipelineFailure:
    """A pipeline on which the engines disagree: the plan and script as drawn, the shrunk case, and the files
    and command that replay it."""

    index: int
    plan: RandomPlan
    script: object
    outcome: Outcome
    shrunk: Shrunk
    pipeline_file: Path | None
    events_file: Path | None
    command: str


@attrs.define
class PipelinesReport:
    """What a run of ``fuzz --pipelines`` found: each pipeline's outcomes, the plans the compiler refused,
    and the shrunk disagreements."""

    seed: int
    outcomes: dict[int, list[Outcome]] = attrs.field(factory=dict)
    """``{pipeline index: [the outcome of each script]}``, for the pipelines that compiled."""
    refused: dict[int, str] = attrs.field(factory=dict)
    """``{pipeline index: why it was not compared}`` (a plan the compiler or the engine refused)."""
    failures: list[PipelineFailure] = attrs.field(factory=list)

    @property
    def matches(self) -> bool:
        return not self.failures

    @property
    def scripts(self) -> int:
        return sum(len(outcomes) for outcomes in self.outcomes.values())

    @property
    def agreed_scripts(self) -> int:
        return sum(outcome.matches for outcomes in self.outcomes.values() for outcome in outcomes)

    def summary(self) -> str:
        """One line: how many pipelines and scripts agreed (and how many plans were not compared)."""
        compared = len(self.outcomes)
        agreed = sum(all(outcome.matches for outcome in outcomes) for outcomes in self.outcomes.values())
        refused = f"; {len(self.refused)} refused by the compiler" if self.refused else ""
        return (
            f"{agreed} of {compared} random pipelines agree with their twins on every script: "
            f"{self.agreed_scripts} of {self.scripts} scripts (seed {self.seed}){refused}"
        )


def replay_command(pipeline_file, events_file) -> str:
    """The command that replays a shrunk disagreement.

    >>> replay_command("fuzz-failures/pipeline_seed0_3.py", "fuzz-failures/pipeline_seed0_3.jsonl")
    'ministream compare fuzz-failures/pipeline_seed0_3.py --events fuzz-failures/pipeline_seed0_3.jsonl'
    """
    return shlex.join(["ministream", "compare", str(pipeline_file), "--events", str(events_file)])


NULL_KEYS = 0.1
"""The share of null keys in the random pipelines' scripts: real keys are sometimes null, and Spark groups,
deduplicates and joins a null key by its own rules (a group of its own; under ``=``, dropped before a join on a
side the join does not keep)."""


def fuzz_pipelines(
    count: int,
    seed: int = 0,
    scripts: int = 3,
    *,
    out_dir=None,
    shrink_budget: int = 30,
    log: Callable[[str], None] | None = None,
    check: Callable[[str], Check] = spark_check,
    null_keys: float = NULL_KEYS,
) -> PipelinesReport:
    """Compare ministream with the compiled twin on ``count`` random pipelines, ``scripts`` random scripts
    each; shrink each pipeline's first disagreement and, with ``out_dir``, write it as a pipeline file and an
    events file (``pipeline_seedS_I.py`` and ``.jsonl``).

    Args:
        count: how many random pipelines.
        seed: which pipelines.
        scripts: random scripts of events per pipeline.
        out_dir: where shrunk disagreements are written; none written when ``None``.
        shrink_budget: at most this many runs of both engines to shrink one disagreement.
        log: called with a line of text after each script (the command line prints them).
        check: ``check(name)`` gives the function that runs a plan (loaded as lesson ``name``) and a script
            in both engines: Spark's by default, a stand-in in the engine's own tests.
        null_keys: the share of the scripts' keys that are null (:data:`NULL_KEYS`).
    """
    report = PipelinesReport(seed)
    for index in range(count):
        plan = random_plan(random.Random(f"pipelines:{seed}:{index}"))
        name = f"pipeline_seed{seed}_{index}"
        run = check(name)
        lesson = plan_lesson(plan, name)
        outcomes: list[Outcome] = []
        failed = False
        for number in range(scripts):
            script = random_script(lesson, random.Random(f"pipelines:{seed}:{index}:{number}"), {}, null_keys)
            # the first line of a pipeline says what it is: "pipeline 3: A random pipeline: ..."
            line = f"pipeline {index}: {plan.describe()}\n  " if number == 0 else f"pipeline {index} "
            line += f"script {number}: {batches_in(script)} batches, {rows_in(script)} rows: "
            if index in report.refused:
                _say(log, line + "not compared")
                continue
            try:
                outcome = run(plan, script)
            except PipelineError as error:
                report.refused[index] = str(error)
                _say(log, f"{line}not compared: {error}")
                continue
            outcomes.append(outcome)
            line += outcome.describe()
            if not outcome.matches and not failed:
                failed = True
                failure = _shrunk_failure(index, plan, script, outcome, run, shrink_budget, out_dir, name)
                report.failures.append(failure)
                small = failure.shrunk
                line += (
                    f"\n  shrunk in {small.runs} runs to {small.plan.describe()}\n  on {batches_in(small.script)} "
                    f"batches, {rows_in(small.script)} rows: {small.outcome.describe()}\n  replay: {failure.command}"
                )
            _say(log, line)
        if outcomes:
            report.outcomes[index] = outcomes
    return report


def _say(log, line: str) -> None:
    if log is not None:
        log(line)


def _shrunk_failure(index, plan, script, outcome, run, budget, out_dir, name) -> PipelineFailure:
    shrunk = shrink_pipeline(plan, script, outcome, run, budget)
    pipeline_file = events_file = None
    if out_dir is not None:
        folder = Path(out_dir)
        folder.mkdir(parents=True, exist_ok=True)
        pipeline_file, events_file = folder / f"{name}.py", folder / f"{name}.jsonl"
        pipeline_file.write_text(pipeline_source(shrunk.plan), encoding="utf-8")
        lesson = plan_lesson(shrunk.plan, name)
        write_events(events_file, shrunk.script, lesson.fields, list(lesson.inputs) if len(lesson.inputs) > 1 else None)
    command = replay_command(pipeline_file or f"{name}.py", events_file or f"{name}.jsonl")
    return PipelineFailure(index, plan, script, outcome, shrunk, pipeline_file, events_file, command)
