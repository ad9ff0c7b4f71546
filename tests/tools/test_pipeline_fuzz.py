"""Fuzzing random pipelines (ministream/tools/pipeline_fuzz.py, ``ministream fuzz --pipelines``): seeded plans and
scripts, a disagreement written as a pipeline file and an events file that replay it, and a small fixed-seed
sample in which ministream and the compiled twins agree."""

import io

import pytest

from ministream.core.compare import compare_batches
from ministream.core.events import read_events
from ministream.lessons.pipeline_file import load_pipeline_file
from ministream.tools.cli import main
from ministream.tools.fuzz import Outcome
from ministream.tools.pipeline_fuzz import fuzz_pipelines
from tests.tools.test_pipeline_shrinker import planted


def test_the_fuzzer_writes_a_pipeline_file_and_events_that_replay(tmp_path):
    """A disagreement found by fuzz_pipelines is written as NAME.py and NAME.jsonl: the file loads as a lesson,
    the events read back, and they still disagree the same way."""

    def check(name):
        return lambda plan, script: planted(plan, script, only_sliding=False)

    report = fuzz_pipelines(10, seed=0, scripts=2, out_dir=tmp_path, shrink_budget=60, check=check)
    assert report.failures, "the first 10 plans of seed 0 output rows of key 'b'"
    failure = report.failures[0]
    assert failure.command == (f"ministream compare {failure.pipeline_file} --events {failure.events_file}")
    lesson = load_pipeline_file(failure.pipeline_file)
    assert lesson.name == f"pipeline_seed0_{failure.index}" and lesson.doc == failure.shrunk.plan.describe()
    script = read_events(failure.events_file, lesson.fields)
    assert script == failure.shrunk.script
    assert planted(failure.shrunk.plan, script, only_sliding=False).kind == failure.outcome.kind == "differs"
    assert report.summary().startswith(f"{10 - len(report.failures)} of 10 random pipelines agree")


def test_plans_of_a_seed_are_the_same_in_every_run():
    """Two fuzz runs of the same seed compare the same plans on the same scripts."""

    seen = []

    def check(name):
        def run(plan, script):
            seen.append((plan, repr(script)))
            return Outcome(compare_batches([], []))

        return run

    fuzz_pipelines(5, seed=3, scripts=2, check=check)
    first, seen[:] = list(seen), []
    fuzz_pipelines(5, seed=3, scripts=2, check=check)
    assert seen == first and len(first) == 10


@pytest.mark.spark
def test_a_fixed_seed_sample_agrees_with_the_compiled_twins(tmp_path):
    """`ministream fuzz --pipelines 6 --scripts 2 --seed 1`: every random pipeline compiles, and ministream and
    its compiled twin agree batch for batch on every script (exit status 0, nothing written); pipeline 0 is a
    keyed process function (the quiet-key counter, on an event-time timer), run in Spark by the adapter."""
    out = io.StringIO()
    status = main(["fuzz", "--pipelines", "6", "--scripts", "2", "--seed", "1", "--out", str(tmp_path)], out)
    lines = out.getvalue().splitlines()
    assert lines[-1] == "6 of 6 random pipelines agree with their twins on every script: 12 of 12 scripts (seed 1)"
    assert status == 0 and list(tmp_path.iterdir()) == []
    assert sum(line.startswith("pipeline ") and ": A random pipeline:" in line for line in lines) == 6
    assert any("process: rows per key until quiet for 500 milliseconds (event-time timer)" in line for line in lines)
