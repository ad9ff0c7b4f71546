"""Differential fuzzing: random scripts of events through ministream and through Spark, compared batch for batch,
and every disagreement shrunk to a small events file that ``ministream compare`` replays.

A lesson's default events show a concept; they cannot show that ministream agrees with Spark on events nobody
thought of. The fuzzer draws random scripts (seeded, so every run can be repeated), runs each one through both
engines in one Spark session, and compares them exactly as ``ministream compare`` does. When they disagree it
*shrinks* the script: it drops whole batches, then rows, keeping each cut only while the disagreement stays,
within a budget of Spark runs; the small script left is written as an events file.

Random scripts come from the lesson's own ``random_script(rng, params)`` when it has one (aimed at its edges:
window ends, session gaps, the watermark), else from :func:`generic_random_script`, which knows only the
lesson's fields: it mixes in-order, out-of-order and late rows, rows exactly on the watermark and on multiples
of the lesson's durations (1 ms either side too), duplicates and empty batches.

>>> script = generic_random_script(random.Random(0), {"delay": 5_000}, [Field("key", str), Field("value", float)])
>>> len(script) >= 2 and script[-1] != [] and sorted(script[-1][0]) == ["key", "ts", "value"]
True
>>> shrink_candidates([[{"n": 1}], [{"n": 2}, {"n": 3}]])[:2]   # whole batches first, the last one first
[[[{'n': 1}]], [[{'n': 2}, {'n': 3}]]]
"""

from __future__ import annotations

import math
import random
import shlex
from pathlib import Path

import attrs

from ministream.core.compare import Comparison, compare_batches
from ministream.core.events import Field, write_events
from ministream.core.plan import Dataflow
from ministream.core.steps import JoinSpec, WatermarkSpec, WindowSpec
from ministream.errors import PipelineError
from ministream.lessons.lesson import BASE_TIME, Lesson

KEYS = ("a", "b", "c")
"""The values of text fields in generic scripts: few, so that rows share keys (and join, merge, repeat)."""


# -- random scripts -----------------------------------------------------------------------------------------------


def generic_random_script(
    rng: random.Random, params: dict, fields: list[Field], inputs=("events",), nulls: float = 0.0
):
    """A random script of 2 to 5 short batches for a lesson with these ``fields``: one list of batches, or
    ``{input: batches}`` for a lesson with several inputs; with ``nulls``, that share of the text fields (the
    keys) is null, as real data has them (a lesson's own functions may not expect a null: the pipeline fuzzer
    draws them, for its pipelines do).

    Event times are whole steps of the lesson's durations (``params`` values of ms, like ``size`` or
    ``delay``), so they fall exactly on window ends and watermarks, and sometimes 1 ms off.

    >>> script = generic_random_script(random.Random(4), {}, [Field("key", str)], inputs=("left", "right"))
    >>> [len(batch) for batch in script["left"]], [len(batch) for batch in script["right"]]
    ([0, 2, 3, 2], [1, 1, 2, 1])
    >>> script["right"][0]
    [{'ts': 1704103201000, 'key': 'b'}]
    """
    durations = [
        value for name, value in params.items() if isinstance(value, int) and not isinstance(value, bool) and value > 0
    ]
    step = math.gcd(1_000, *durations)
    span = max(durations, default=10_000)
    delay = params.get("delay", 0) if isinstance(params.get("delay"), int) else 0
    latest = BASE_TIME + rng.randrange(0, 5) * step  # the largest event time so far
    watermarks = [0]  # watermarks[k] = WM_k, as the micro-batch model computes it
    seen: list[dict] = []  # every row drawn so far, to copy as a duplicate
    scripts = {name: [] for name in inputs}  # {input: [rows of batch 0, rows of batch 1, ...]}
    batches = rng.randint(2, 5)
    for batch_id in range(batches):
        late_watermark = watermarks[max(batch_id - 1, 0)]
        batch_max = None
        for name in inputs:
            rows = []
            if (batch_id == batches - 1 and name == inputs[0]) or rng.random() >= 0.2:
                for _ in range(rng.randint(1, 3)):
                    if seen and rng.random() < 0.1:
                        row = dict(rng.choice(seen))  # a duplicate
                    else:
                        row = {"ts": _timestamp(rng, latest, late_watermark, watermarks[batch_id], span, step)}
                        row.update({field.name: _value(rng, field, nulls) for field in fields})
                    rows.append(row)
                    seen.append(row)
                    latest = max(latest, row["ts"])
                    batch_max = row["ts"] if batch_max is None else max(batch_max, row["ts"])
            scripts[name].append(rows)
        proposal = watermarks[-1] if batch_max is None else batch_max - delay
        watermarks.append(max(watermarks[-1], proposal))
    return scripts if len(inputs) > 1 else scripts[inputs[0]]


def _value(rng: random.Random, field: Field, nulls: float = 0.0):
    if field.kind is str:
        if nulls and rng.random() < nulls:  # drawn only when asked for: the scripts of a seed stay the same
            return None
        return rng.choice(KEYS)
    number = rng.randint(1, 9)  # small whole numbers: sums and averages are exact in binary floats
    return float(number) if field.kind is float else number


def _timestamp(rng, latest: int, late_watermark: int, watermark: int, span: int, step: int) -> int:
    kind = rng.choice(["in order", "in order", "out of order", "late", "on a duration", "on the watermark"])
    jitter = rng.choice([-1, 0, 0, 1])
    if kind == "late" and late_watermark > 0:
        return late_watermark - rng.randrange(0, 2 * span, step)
    if kind == "on a duration":
        return latest - latest % span + rng.choice([0, span]) + jitter
    if kind == "on the watermark" and late_watermark > 0:
        return rng.choice([late_watermark, watermark]) + jitter
    if kind == "out of order":
        return latest - rng.randrange(0, span, step)
    return latest + rng.randrange(0, 2 * span, step)


def random_script(lesson: Lesson, rng: random.Random, params: dict, nulls: float = 0.0):
    """A random script for ``lesson``: its own generator when it has one, else the generic one (which sees only
    the lesson's durations: other parameters, such as a batch number, say nothing about event time). A lesson
    without parameters (a pipeline file's) gives the durations of its plan. ``nulls``: the share of null keys
    in a generic script."""
    if lesson.random_script is not None:
        return lesson.random_script(rng, params)
    durations = {param.name: params[param.name] for param in lesson.params if param.kind == "duration"}
    if not lesson.params:
        empty = {name: [] for name in lesson.inputs} if len(lesson.inputs) > 1 else []
        durations = plan_durations(lesson.pipeline(empty, params))
    return generic_random_script(rng, durations, lesson.fields, lesson.inputs, nulls)


def plan_durations(flow: Dataflow) -> dict[str, int]:
    """The durations of a plan, by what they are (``delay``: the largest watermark delay; ``size``: the
    largest window or session gap; ``lower``/``upper``: a join's time range), for drawing events that fall on
    their edges (``fuzz.generic_random_script``).

    >>> from ministream.lessons import get_lesson
    >>> plan_durations(get_lesson("tumbling-window").pipeline([], get_lesson("tumbling-window").resolve_params()))
    {'delay': 5000, 'size': 10000}
    """
    durations: dict[str, int] = {}
    for step in flow.steps:
        spec = step.spec
        if isinstance(spec, WatermarkSpec):
            durations["delay"] = max(durations.get("delay", 0), spec.delay)
        elif isinstance(spec, WindowSpec):
            durations["size"] = max(durations.get("size", 0), _window_length(spec.assigner))
        elif isinstance(spec, JoinSpec) and spec.between is not None:
            for bound in ("lower", "upper"):
                value = getattr(spec.between, bound)
                if value:
                    durations[bound] = abs(value)
    return durations


def _window_length(assigner) -> int:
    """A window's size, or a session's gap (a gap computed per row counts as none)."""
    length = getattr(assigner, "size", None) or getattr(assigner, "gap", None)
    return length if isinstance(length, int) else 0


# -- running one script through both engines ----------------------------------------------------------------------


@attrs.frozen
class Outcome:
    """One script through both engines: the comparison, or the error one engine raised."""

    comparison: Comparison | None = None
    error: str | None = None
    error_kind: str | None = None
    """Which engine failed and how, e.g. ``"ministream: KeyError"`` or ``"Spark: STREAM_FAILED"``."""
    output: str | None = None
    """A pipeline of several outputs: the one that disagreed (or failed in Spark)."""

    @property
    def matches(self) -> bool:
        return self.error is None and self.comparison.matches

    @property
    def kind(self) -> str:
        """What went wrong, coarsely: shrinking keeps only the cuts that fail the same way."""
        if self.error is not None:
            return self.error_kind
        return "match" if self.comparison.matches else "differs"

    def describe(self) -> str:
        if self.error is not None:
            return self.error
        named = f"output {self.output!r}: " if self.output is not None else ""
        return named + self.comparison.summary()


def check_script(lesson: Lesson, script, params: dict | None = None, parallelism: int = 1) -> Outcome:
    """Run ``script`` through ministream and Spark and compare them; a crash of either engine is an outcome
    too (a pipeline the lesson's parameters make invalid is not: it raises ``PipelineError``).

    As ``compare_lesson`` does, a lesson that replays Spark's clock runs Spark first, then ministream on the
    batch timestamps Spark recorded."""
    from ministream.spark import SparkQueryError

    if len(lesson.outputs) > 1:  # a pipeline file of several outputs: each its own query in Spark
        return _check_outputs(lesson, script, params, parallelism)

    def ours(timestamps=None):
        extra = {"batch_timestamps": timestamps} if timestamps is not None else {}
        return lesson.run(script, params, parallelism=parallelism, **extra).output(lesson.outputs[0])

    replay = getattr(lesson, "replay_spark_clock", False)
    mine = None
    if not replay:
        try:
            mine = ours()
        except PipelineError:
            raise
        except Exception as error:  # a crash of ministream on these events is a finding, not a stop
            return _crashed(error)
    try:
        theirs = lesson.run_twin(script, params)
    except SparkQueryError as error:
        return Outcome(error=str(error), error_kind=f"Spark: {error.error_class}")
    if replay:
        try:
            mine = ours([batch.processing_time for batch in theirs])
        except PipelineError:
            raise
        except Exception as error:
            return _crashed(error)
    return Outcome(compare_batches(mine, theirs))


def _crashed(error: Exception) -> Outcome:
    """The outcome of a script that crashed ministream."""
    return Outcome(
        error=f"ministream failed: {type(error).__name__}: {error}", error_kind=f"ministream: {type(error).__name__}"
    )


def _check_outputs(lesson: Lesson, script, params: dict | None, parallelism: int) -> Outcome:
    """``check_script`` for a lesson of several outputs: ministream runs once, then each output's twin runs as
    its own Spark query and is compared with that sink's batches. The outcome is the first output that
    disagrees (or fails in Spark), named; when all agree, every output's batches together."""
    from ministream.spark import SparkQueryError

    try:
        run = lesson.run(script, params, parallelism=parallelism)
    except PipelineError:
        raise
    except Exception as error:  # a crash of ministream on these events is a finding, not a stop
        return _crashed(error)
    batches = []
    for output in lesson.outputs:
        try:
            theirs = lesson.of_output(output).run_twin(script, params)
        except SparkQueryError as error:
            return Outcome(error=f"output {output!r}: {error}", error_kind=f"Spark: {error.error_class}", output=output)
        comparison = compare_batches(run.output(output), theirs)
        if not comparison.matches:
            return Outcome(comparison, output=output)
        batches += comparison.batches
    return Outcome(Comparison(batches))


# -- shrinking ----------------------------------------------------------------------------------------------------


def _as_inputs(script) -> dict:
    return script if isinstance(script, dict) else {None: script}


def _from_inputs(inputs: dict):
    return inputs[None] if list(inputs) == [None] else inputs


def trimmed(script):
    """The script without its trailing empty batches (an events file cannot hold them), or ``None`` when no
    row is left.

    >>> trimmed([[{"n": 1}], [], []]), trimmed([[], []])
    ([[{'n': 1}]], None)
    """
    inputs = _as_inputs(script)
    length = max((i + 1 for batches in inputs.values() for i, batch in enumerate(batches) if batch), default=0)
    if length == 0:
        return None
    return _from_inputs({name: [list(batch) for batch in batches[:length]] for name, batches in inputs.items()})


def shrink_candidates(script) -> list:
    """Smaller scripts to try, biggest cuts first: without one whole batch (the last first), then without
    halves, quarters... of the rows, down to single rows."""
    inputs = _as_inputs(script)
    length = max(len(batches) for batches in inputs.values())
    candidates = []
    for drop in reversed(range(length)):
        candidates.append(
            _from_inputs({name: [b for i, b in enumerate(batches) if i != drop] for name, batches in inputs.items()})
        )
    places = [
        (name, b, r) for name, batches in inputs.items() for b, batch in enumerate(batches) for r in range(len(batch))
    ]
    size = len(places) // 2
    while size >= 1:
        for first in range(0, len(places), size):
            cut = set(places[first : first + size])
            candidates.append(
                _from_inputs(
                    {
                        name: [
                            [row for r, row in enumerate(batch) if (name, b, r) not in cut]
                            for b, batch in enumerate(batches)
                        ]
                        for name, batches in inputs.items()
                    }
                )
            )
        size //= 2
    return [c for c in map(trimmed, candidates) if c is not None and c != trimmed(script)]


def shrink(
    lesson: Lesson, script, outcome: Outcome, params: dict | None = None, budget: int = 20, parallelism: int = 1
) -> tuple:
    """Cut ``script`` down while it still fails the way ``outcome`` did, with at most ``budget`` runs of
    both engines; returns ``(smallest failing script, its outcome, runs used)``."""
    current, current_outcome, runs = trimmed(script), outcome, 0
    progress = True
    while progress and runs < budget:
        progress = False
        for candidate in shrink_candidates(current):
            if runs >= budget:
                break
            runs += 1
            candidate_outcome = check_script(lesson, candidate, params, parallelism)
            if candidate_outcome.kind == outcome.kind:
                current, current_outcome, progress = candidate, candidate_outcome, True
                break
    return current, current_outcome, runs


def rows_in(script) -> int:
    """How many rows a script holds, every input together."""
    return sum(len(batch) for batches in _as_inputs(script).values() for batch in batches)


def batches_in(script) -> int:
    """How many batches a script has."""
    return max(len(batches) for batches in _as_inputs(script).values())


# -- the fuzzer ---------------------------------------------------------------------------------------------------


@attrs.frozen
class Failure:
    """A script on which the engines disagree: as drawn, as shrunk, and the events file that replays it."""

    index: int
    original: object
    script: object
    outcome: Outcome
    shrink_runs: int
    events_file: Path | None
    command: str


@attrs.define
class FuzzReport:
    """What a fuzz run found: the outcome of every script, and the shrunk failures."""

    lesson: str
    seed: int
    params: dict
    outcomes: list[Outcome] = attrs.field(factory=list)
    failures: list[Failure] = attrs.field(factory=list)

    @property
    def matches(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        """One line: how many scripts agreed."""
        agreed = sum(outcome.matches for outcome in self.outcomes)
        return (
            f"{self.lesson}: {agreed} of {len(self.outcomes)} random scripts match Spark batch for batch "
            f"(seed {self.seed})"
        )


def reproduce_command(lesson: Lesson, events_file, params: dict | None) -> str:
    """The command line that replays an events file with the same parameters: a pipeline file is named by its
    path, and one output of it (``--output NAME``, ``Lesson.of_output``) by its name.

    >>> from ministream.lessons import get_lesson
    >>> reproduce_command(get_lesson("running-aggregation"), "f.jsonl", {"mode": "complete"})
    'ministream compare running-aggregation --events f.jsonl --param mode=complete'
    >>> reproduce_command(get_lesson("examples/two_outputs.py").of_output("big_events"), "f.jsonl", {})
    'ministream compare examples/two_outputs.py --events f.jsonl --output big_events'
    """
    words = ["ministream", "compare", lesson.source_file or lesson.name, "--events", str(events_file)]
    if lesson.outputs != ("output",) and len(lesson.outputs) == 1:  # one output chosen among several
        words += ["--output", lesson.outputs[0]]
    for name, value in (params or {}).items():
        words += ["--param", f"{name}={value}"]
    return shlex.join(words)


def fuzz_lesson(
    lesson: Lesson,
    runs: int = 10,
    seed: int = 0,
    params: dict | None = None,
    *,
    out_dir=None,
    shrink_budget: int = 20,
    parallelism: int = 1,
    log=None,
) -> FuzzReport:
    """Compare ministream with Spark on ``runs`` random scripts of ``lesson``; shrink each disagreement and,
    with ``out_dir``, write it as an events file.

    Script ``i`` of seed ``s`` is drawn from ``random.Random("LESSON:s:i")``: the same on every machine.

    Args:
        lesson: a lesson with a twin.
        runs: how many random scripts.
        seed: which scripts.
        params: parameter overrides, as ``--param`` gives them.
        out_dir: where failing scripts are written (``LESSON-seedS-I.jsonl``); none written when ``None``.
        shrink_budget: at most this many runs of both engines to shrink one failure.
        parallelism: ministream's parallelism.
        log: called with a line of text after each script (the command line prints them).
    """
    values = lesson.resolve_params(params)
    report = FuzzReport(lesson.name, seed, dict(params or {}))
    for index in range(runs):
        script = random_script(lesson, random.Random(f"{lesson.name}:{seed}:{index}"), values)
        outcome = check_script(lesson, script, params, parallelism)
        report.outcomes.append(outcome)
        line = f"script {index}: {batches_in(script)} batches, {rows_in(script)} rows: {outcome.describe()}"
        if not outcome.matches:
            small, small_outcome, used = shrink(lesson, script, outcome, params, shrink_budget, parallelism)
            path = None
            if out_dir is not None:
                path = Path(out_dir) / f"{lesson.name}-seed{seed}-{index}.jsonl"
                path.parent.mkdir(parents=True, exist_ok=True)
                write_events(path, small, lesson.fields, list(lesson.inputs) if len(lesson.inputs) > 1 else None)
            command = reproduce_command(lesson, path or "FILE", params)
            report.failures.append(Failure(index, script, small, small_outcome, used, path, command))
            line += (
                f"\n  shrunk to {batches_in(small)} batches, {rows_in(small)} rows in {used} runs: "
                f"{small_outcome.describe()}\n  replay: {command}"
            )
        if log is not None:
            log(line)
    return report
