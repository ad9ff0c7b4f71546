"""Lesson outer-join: every join type matches Spark batch for batch, and null-padded rows wait for eviction."""

import pytest

from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("outer-join")


@pytest.mark.spark
@pytest.mark.parametrize("params", [{}, {"how": "right_outer"}, {"how": "full_outer"}, {"how": "left_semi"},
                                    {"how": "full_outer", "within": "8 seconds", "delay": "3 seconds"}],
                         ids=["left_outer", "right_outer", "full_outer", "left_semi", "full_outer-8s-3s"])
def test_matches_spark(params):
    """Matched pairs, null-padded rows and the batch each appears in are the same as in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_the_unclicked_impression_appears_only_when_evicted():
    """Impression b (10:00:02) is never clicked: its null-padded row comes in batch 4, the first whose
    watermark (10:00:35) is past 10:00:02 + 20 s + 1 ms; impressions d and f still wait at the end."""
    out = LESSON.run().output()
    padded = [(batch.batch_id, row["impression_ad"]) for batch in out for row in batch.rows
              if row["click_ad"] is None]
    assert padded == [(4, "b")]
    assert out[4].watermark == 1704103235000


def test_right_outer_pads_the_clicks_without_an_impression():
    """With how=right_outer the clicks x and g have no impression; x is padded once evicted."""
    out = LESSON.run(params={"how": "right_outer"}).output()
    padded = [(batch.batch_id, row["click_ad"]) for batch in out for row in batch.rows
              if row["impression_ad"] is None]
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
