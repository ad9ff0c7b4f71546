"""Lesson outer-join: the join types match Spark batch for batch (full outer, which pads both sides, runs on the
default events in notebooks/08-outer-join.ipynb), and null-padded rows wait for eviction."""

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.stream_join import ad

LESSON = get_lesson("outer-join")


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [{}, {"how": "left_semi"}, {"how": "full_outer", "within": "8 seconds", "delay": "3 seconds"}],
    ids=["left_outer", "left_semi", "full_outer-8s-3s"],
)
def test_matches_spark(params):
    """Matched pairs, null-padded rows and the batch each appears in are the same as in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


WINDOWS = {  # (window, policy): the (batch, ad) of each 10-second window the lesson emits
    ("count", "min"): [(4, "a"), (4, "b"), (5, "c")],
    ("max", "min"): [],  # Spark removes the join: the clicks' watermark stays at 0, and so does the query's
    ("max", "max"): [(3, "a"), (3, "b"), (3, "c"), (5, "d"), (5, "e")],  # the impressions' watermark, no join
}


@pytest.mark.parametrize("window, policy", sorted(WINDOWS))
def test_a_window_of_max_alone_runs_without_the_join(window, policy):
    """A window of count keeps the join, whose state holds each impression back; a window of max alone runs
    without it (core/outer_join_elimination.py): nothing closes under min, and under max each window closes
    on the impressions' watermark, d's too, which the join would hold."""
    out = LESSON.run(params={"window": window, "policy": policy}).output()
    assert [(batch.batch_id, row["impression_ad"]) for batch in out for row in batch.rows] == WINDOWS[window, policy]


@pytest.mark.spark
@pytest.mark.parametrize("window, policy", sorted(WINDOWS))
def test_a_window_after_the_join_matches_spark(window, policy):
    """The same windows as Spark's, batch for batch, with the join (count) and without it (max)."""
    result = compare_lesson(LESSON, params={"window": window, "policy": policy})
    assert result.matches, result.table()


def test_the_unclicked_impression_appears_only_when_evicted():
    """Impression b (10:00:02) is never clicked: its null-padded row comes in batch 4, the first whose
    watermark (10:00:35) is past 10:00:02 + 20 s + 1 ms; impressions d and f still wait at the end."""
    out = LESSON.run().output()
    padded = [(batch.batch_id, row["impression_ad"]) for batch in out for row in batch.rows if row["click_ad"] is None]
    assert padded == [(4, "b")]
    assert out[4].watermark == 1704103235000


def test_right_outer_pads_the_clicks_without_an_impression():
    """With how=right_outer the clicks x and g have no impression; x is padded once evicted."""
    out = LESSON.run(params={"how": "right_outer"}).output()
    padded = [(batch.batch_id, row["click_ad"]) for batch in out for row in batch.rows if row["impression_ad"] is None]
    assert padded == [(4, "x")]


def test_left_semi_rows_have_only_the_impression_columns():
    """Left semi emits each clicked impression once, with the left columns only."""
    rows = [row for batch in LESSON.run(params={"how": "left_semi"}).output() for row in batch.rows]
    assert sorted(row["impression_ad"] for row in rows) == ["a", "c", "e"]
    assert all(set(row) == {"impression_ad", "impression_time"} for row in rows)


@pytest.mark.parametrize("how", ["left_outer", "full_outer", "left_semi"])
def test_same_output_for_any_parallelism_and_seed(how):
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run(params={"how": how}))
    for parallelism, seed in ((2, 0), (4, 7)):
        assert rows(LESSON.run(params={"how": how}, parallelism=parallelism, seed=seed)) == expected


@pytest.mark.spark
def test_spark_and_ministream_refuse_an_outer_join_without_a_range_with_the_same_reason():
    """A left outer join with no time range is refused by both engines, and ministream quotes Spark."""
    from ministream import CollectingSink, Dataflow, ScriptedSource
    from ministream.errors import PipelineError
    from ministream.spark import SparkQueryError

    def twin_without_range(inputs, params):
        from pyspark.sql import functions as F

        imps = (
            inputs["impressions"]
            .select(F.col("ad_id").alias("impression_ad"), F.col("ts").alias("impression_time"))
            .withWatermark("impression_time", "10 seconds")
        )
        clicks = (
            inputs["clicks"]
            .select(F.col("ad_id").alias("click_ad"), F.col("ts").alias("click_time"))
            .withWatermark("click_time", "10 seconds")
        )
        return imps.join(clicks, F.expr("impression_ad = click_ad"), "left_outer")

    import attrs

    with pytest.raises(SparkQueryError) as spark_error:
        attrs.evolve(LESSON, twin=twin_without_range).run_twin()
    flow = Dataflow("no-range")
    imps = flow.source("impressions", ScriptedSource([])).with_watermark("w1", "ts", "10 seconds").key_by("ad_id")
    clicks = flow.source("clicks", ScriptedSource([])).with_watermark("w2", "click_ts", "10 seconds").key_by("ad")
    with pytest.raises(PipelineError) as ours:
        imps.join("join", clicks, how="left_outer").sink("output", CollectingSink())
    spark_text = str(spark_error.value).split(": ", 2)[-1].rstrip(";")
    assert spark_text.startswith("Stream-stream LeftOuter join between two streaming DataFrame/Datasets")
    assert spark_text in str(ours.value)


EDGES = {
    "impressions": [[ad(10, "b"), ad(40, "y")], [ad(41, "w")], []],
    "clicks": [[ad(30, "x"), ad(40, "z")], [ad(41, "v")], [ad(30, "k")]],
}
"""WM is 10:00:30 in batch 1 and 10:00:31 in batch 2. Impression b (10:00:10) is exactly within + 0 ms
before WM 10:00:30, click x exactly at it, and click k arrives in batch 2 exactly at WM_1."""


def test_the_extra_millisecond_and_the_inclusive_late_rule_on_the_edges():
    """b and x stay at WM 10:00:30 (inclusive bounds keep one more millisecond) and leave at 10:00:31; k, at
    exactly the previous watermark, is late."""
    out = LESSON.run(EDGES, {"how": "full_outer"}).output()
    assert [batch.rows for batch in out[:2]] == [[], []]
    assert {(row["impression_ad"], row["click_ad"]) for row in out[2].rows} == {(None, "x"), ("b", None)}


@pytest.mark.spark
def test_the_edges_match_spark():
    """Spark keeps b and x one more millisecond and drops k as late, exactly as ministream."""
    result = compare_lesson(LESSON, EDGES, {"how": "full_outer"})
    assert result.matches, result.table()
