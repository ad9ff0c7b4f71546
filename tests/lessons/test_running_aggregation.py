"""Lesson running-aggregation: ministream and its PySpark twin agree batch for batch, and the comparison can
tell when they do not."""

import attrs
import pytest

from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson
from ministream.tools.cli import main

LESSON = get_lesson("running-aggregation")


@pytest.mark.spark
@pytest.mark.parametrize("mode", ["update", "complete"])
def test_matches_spark(mode):
    """In update and in complete mode, every batch has the same rows in ministream and in Spark."""
    result = compare_lesson(LESSON, params={"mode": mode})
    assert result.matches, result.table()
    assert [b.batch_id for b in result.batches] == [0, 1, 2]
    assert result.rows_matched == {"update": 5, "complete": 2 + 3 + 3}[mode]


@pytest.mark.spark
def test_comparison_fails_on_a_different_twin():
    """A twin that computes something else (count + 1) makes the comparison fail and show the rows."""

    def wrong_twin(inputs, params):
        from pyspark.sql import functions as F

        return inputs["events"].groupBy("key").agg((F.count("*") + 1).alias("count"), F.sum("value").alias("sum"))

    result = compare_lesson(attrs.evolve(LESSON, twin=wrong_twin))
    assert not result.matches
    assert result.batches_matched == 0
    assert "only in ministream: {key: a, count: 2, sum: 4}" in result.table()
    assert "only in Spark:      {key: a, count: 3, sum: 4}" in result.table()


@pytest.mark.spark
def test_cli_compare_exits_0_and_ends_with_the_counts(capsys):
    """`ministream compare running-aggregation` exits 0 and its last line counts the matches."""
    assert main(["compare", "running-aggregation"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "running-aggregation: 3 of 3 batches match; 5 of 5 rows match"


@pytest.mark.spark
def test_cli_compare_exits_1_on_different_events(tmp_path, capsys, monkeypatch):
    """When the twin sees other events than ministream, compare exits 1 and shows the differing rows."""
    events = tmp_path / "events.jsonl"
    events.write_text('{"batch": 0, "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}\n')
    original = type(LESSON).run_twin

    def twin_on_other_events(self, script=None, params=None, master=None):
        return original(self, [[{"ts": 0, "key": "a", "value": 2.0}]], params, master=master)

    monkeypatch.setattr(type(LESSON), "run_twin", twin_on_other_events)
    assert main(["compare", "running-aggregation", "--events", str(events)]) == 1
    out = capsys.readouterr().out
    assert "batch 0: only in Spark:      {key: a, count: 1, sum: 2}" in out
    assert out.strip().splitlines()[-1] == "running-aggregation: 0 of 1 batches match; 0 of 2 rows match"


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run())
    for parallelism in (1, 2, 4):
        for seed in (0, 7, 99):
            assert rows(LESSON.run(parallelism=parallelism, seed=seed)) == expected


def test_unknown_param_is_refused():
    """A --param the lesson does not have is refused, with the list of parameters it has."""
    with pytest.raises(PipelineError, match="has no parameter 'window'; it has: mode"):
        LESSON.run(params={"window": "10 seconds"})


def test_run_on_user_events(tmp_path, capsys):
    """`ministream run LESSON --events FILE` runs the pipeline on the user's events."""
    events = tmp_path / "events.jsonl"
    events.write_text(
        '{"batch": 0, "ts": "2024-01-01T10:00:00Z", "key": "x", "value": 2}\n'
        '{"batch": 1, "ts": "2024-01-01T10:00:01Z", "key": "x", "value": 3}\n'
    )
    assert main(["run", "running-aggregation", "--events", str(events), "--param", "mode=complete"]) == 0
    out = capsys.readouterr().out
    assert "batch 1 (no watermark): 1 row\n  {key: x, count: 2, sum: 5}" in out


@pytest.mark.spark
def test_append_mode_refused_by_both_engines():
    """Append mode with an aggregation and no watermark is refused by ministream and by Spark, for the same
    reason (ministream's message quotes Spark's)."""
    from ministream.models.microbatch import run_microbatch
    from ministream.spark import SparkQueryError, run_query, scripted_stream, spark_session

    with pytest.raises(PipelineError) as ours:
        run_microbatch(LESSON.pipeline(LESSON.default_script, {}), output_mode="append")
    frames = {"events": scripted_stream(spark_session(), LESSON.spark_schema(), LESSON.default_script)}
    with pytest.raises(SparkQueryError) as theirs:
        run_query(LESSON.twin(frames, {}), "append")
    spark_text = "not supported for streaming aggregations without watermark on streaming DataFrames/DataSets"
    assert spark_text in str(theirs.value)
    assert spark_text in str(ours.value)
