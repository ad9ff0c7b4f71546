"""Lesson deduplication: dropDuplicates by id, by id and time, and within the watermark match Spark."""

import pytest

from ministream.lessons import compare_lesson, get_lesson

LESSON = get_lesson("deduplication")


@pytest.mark.spark
@pytest.mark.parametrize("params", [{"key": "id"}, {"key": "id_and_time"}, {"key": "within"},
                                    {"key": "within", "delay": "3 seconds"}],
                         ids=["id", "id_and_time", "within", "within-3s"])
def test_matches_spark(params):
    """Kept rows, dropped copies and the batch of every row are the same as in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_state_never_shrinks_when_the_key_has_no_event_time():
    """dropDuplicates(event_id) keeps every key forever; with ts in the key, keys leave at the watermark."""
    sizes = {key: [s.state_sizes["dedup"] for s in LESSON.run(params={"key": key}, trace=True).trace.batches]
             for key in ("id", "id_and_time", "within")}
    assert sizes == {"id": [2, 3, 4, 5, 6, 6], "id_and_time": [2, 3, 3, 2, 2, 1], "within": [2, 3, 4, 3, 3, 1]}


@pytest.mark.parametrize("key", ["id", "id_and_time", "within"])
def test_same_output_for_any_parallelism_and_seed(key):
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""
    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]
    expected = rows(LESSON.run(params={"key": key}))
    for parallelism, seed in ((2, 0), (4, 7)):
        assert rows(LESSON.run(params={"key": key}, parallelism=parallelism, seed=seed)) == expected
