"""Lesson deduplication: dropDuplicates by id, by id and time, and within the watermark match Spark."""

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.deduplication import sent

LESSON = get_lesson("deduplication")


@pytest.mark.spark
@pytest.mark.parametrize(
    "params",
    [
        {"key": "id"},
        {"key": "id_and_time"},
        {"key": "within", "delay": "3 seconds"},
        {"key": "id", "keep": "id"},
        {"key": "id_and_time", "keep": "id"},
    ],
    ids=["id", "id_and_time", "within-3s", "id-keep-id", "id_and_time-keep-id"],
)
def test_matches_spark(params):
    """Kept rows, dropped copies and the batch of every row are the same as in Spark."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


def test_state_never_shrinks_when_the_key_has_no_event_time():
    """dropDuplicates(event_id) keeps every key forever; with ts in the key, keys leave at the watermark."""
    sizes = {
        key: [s.state_sizes["dedup"] for s in LESSON.run(params={"key": key}, trace=True).trace.batches]
        for key in ("id", "id_and_time", "within")
    }
    assert sizes == {"id": [2, 3, 4, 5, 6, 6], "id_and_time": [2, 3, 3, 2, 2, 1], "within": [2, 3, 4, 3, 3, 1]}


def test_a_late_new_event_comes_out_when_nothing_reads_ts_after_the_deduplication():
    """keep=id: with select(event_id) after dropDuplicates(event_id), Spark prunes ts below the deduplication,
    which then drops no late row: e7 (10:00:03, at or before WM_2 = 10:00:05) comes out in batch 3, and e2's
    late copy is dropped as a copy instead. With ts in the key, or in the output, both are late."""
    by_keep = {}
    for keep in ("all", "id"):
        run = LESSON.run(params={"key": "id", "keep": keep}, trace=True)
        by_keep[keep] = (
            [sorted(row["event_id"] for row in batch.rows) for batch in run.output()],
            [line.text.split(":")[0] for line in run.trace.of_kind("late") + run.trace.of_kind("not late")],
        )
    assert by_keep["all"] == ([["e1", "e2"], ["e3"], ["e4"], ["e5"], ["e6"], []], ["row dropped"] * 2)
    assert by_keep["id"] == ([["e1", "e2"], ["e3"], ["e4"], ["e5", "e7"], ["e6"], []], ["row kept"] * 2)
    in_key = LESSON.run(params={"key": "id_and_time", "keep": "id"}).output()
    assert [sorted(row["event_id"] for row in batch.rows) for batch in in_key][3] == ["e5"]


@pytest.mark.parametrize("key", ["id", "id_and_time", "within"])
def test_same_output_for_any_parallelism_and_seed(key):
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""

    def rows(run):
        return [sorted(map(str, batch.rows)) for batch in run.output()]

    expected = rows(LESSON.run(params={"key": key}))
    for parallelism, seed in ((2, 0), (4, 7)):
        assert rows(LESSON.run(params={"key": key}, parallelism=parallelism, seed=seed)) == expected


EDGE = [[sent(10, "e"), sent(30, "f")], [], [sent(25, "e")]]
"""e (10:00:10) expires at 10:00:20 with a 10 s delay; WM_1 = 10:00:20 exactly, so e is forgotten at the end
of batch 1 and its copy stamped 10:00:25 is new in batch 2."""


def test_a_key_is_forgotten_when_the_watermark_reaches_its_expiry_exactly():
    """dropDuplicatesWithinWatermark evicts when WM >= first ts + delay (not only when WM is past it)."""
    out = LESSON.run(EDGE, {"key": "within"}).output()
    assert [[row["event_id"] for row in batch.rows] for batch in out] == [["e", "f"], [], ["e"]]


@pytest.mark.spark
def test_the_expiry_edge_matches_spark():
    """Spark forgets the key at WM == expiry too."""
    result = compare_lesson(LESSON, EDGE, {"key": "within"})
    assert result.matches, result.table()
