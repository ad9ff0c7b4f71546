"""Fuzzing random pipelines (ministream/tools/pipeline_fuzz.py, ``ministream fuzz --pipelines``): seeded plans and
scripts, a disagreement written as a pipeline file and an events file that replay it, and a small fixed-seed
sample in which ministream and the compiled twins agree."""

import io
import random

import pytest

from ministream.core.compare import compare_batches
from ministream.core.events import read_events
from ministream.lessons.pipeline_file import load_pipeline_file
from ministream.tools.cli import main
from ministream.tools.fuzz import Outcome, random_script
from ministream.tools.pipeline_fuzz import fuzz_pipelines
from ministream.tools.pipeline_generator import AFTER_JOIN, plan_lesson, random_plan
from ministream.tools.pipeline_shrinker import spark_check
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


@pytest.mark.spark
def test_windows_after_joins_agree_with_their_compiled_twins():
    """The first three plans of seed 5 drawn among joins that have a window after the join (a right outer join
    then session windows, a left semi join then sliding windows, a left outer join then session windows, with
    both watermark policies): ministream
    and the compiled twin agree batch for batch on two random scripts each. The window step runs with the
    join's output watermark in both engines (Spark's WatermarkPropagator)."""
    plans = []
    for index in range(100):
        plan = random_plan(random.Random(f"pipelines:5:{index}"), kinds=("join",))
        if plan.stateful[-1].kind in AFTER_JOIN:
            plans.append((index, plan))
    assert [plan.stateful[0].how for _, plan in plans[:3]] == ["right_outer", "left_semi", "left_outer"]
    for index, plan in plans[:3]:
        assert_agrees(plan, seed=5, index=index, scripts=2)


def assert_agrees(plan, seed: int, index: int, scripts: int) -> None:
    """Plan ``index`` of ``seed`` agrees with its compiled twin on its first ``scripts`` random scripts."""
    check = spark_check(f"plan_{seed}_{index}")
    lesson = plan_lesson(plan, f"plan_{seed}_{index}")
    for number in range(scripts):
        script = random_script(lesson, random.Random(f"pipelines:{seed}:{index}:{number}"), {})
        outcome = check(plan, script)
        assert outcome.matches, (plan.describe(), script, outcome)


@pytest.mark.spark
def test_spark_removes_an_outer_join_under_max_and_min_of_its_left_rows(spark):
    """Why ministream runs some outer joins without the join (core/outer_join_elimination.py): Spark's optimizer
    (EliminateOuterJoin) drops a left or full outer join under a window that reads only the left's columns with
    max and min alone, and keeps it once a count sits beside them, or for an inner or right outer join."""
    from pyspark.sql import functions as F

    def side(prefix):
        rows = spark.range(4).select(F.col("id").cast("string").alias("key"), F.timestamp_seconds("id").alias("ts"))
        return rows.select(
            F.col("key").alias(f"{prefix}_key"),
            F.col("ts").alias(f"{prefix}_ts"),
            F.lit(1.0).alias(f"{prefix}_value"),
        )

    def has_join(how, aggregates):
        joined = side("l").join(
            side("r"), F.expr("l_key = r_key AND r_ts BETWEEN l_ts AND l_ts + interval 1 second"), how
        )
        windows = joined.groupBy("l_key", F.window("l_ts", "10 seconds")).agg(*aggregates)
        return "Join " in windows._jdf.queryExecution().optimizedPlan().toString()

    max_min = (F.max("l_value"), F.min("l_value"))
    counted = (F.count("*"), F.max("l_value"))
    assert [has_join(how, max_min) for how in ("left_outer", "full_outer", "right_outer", "inner")] == [
        False,
        False,
        True,
        True,
    ]
    assert all(has_join(how, counted) for how in ("left_outer", "full_outer"))


@pytest.mark.spark
def test_static_tables_agree_with_their_compiled_twins():
    """The first four plans of seed 0 with a join with a static table (on one input's rows, or after a join,
    with filters after it that Spark's optimizer moves below a watermark or leaves above): ministream and the
    compiled twin agree batch for batch on two random scripts each."""
    drawn = [random_plan(random.Random(f"pipelines:0:{index}")) for index in range(40)]
    plans = [(index, plan) for index, plan in enumerate(drawn) if plan.static is not None][:4]
    assert {len(plan.inputs) for _, plan in plans} == {1, 2} and any(plan.static.filters for _, plan in plans)
    for index, plan in plans:
        assert_agrees(plan, seed=0, index=index, scripts=2)
