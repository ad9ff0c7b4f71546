"""The order of a stream-static join's rows (``operators/static_join.py``): the stream's rows in the order they
came, a key's table rows last first, as Spark's broadcast table gives them back. It matters to a
deduplication after the join, which keeps a key's first row: found by ``ministream fuzz --pipelines`` (seed 1,
plans 18 and 19, with a static table drawn for every plan), where Spark kept a key's last row of the batch."""

import attrs
import pytest

from ministream.core.operator import StepContext
from ministream.lessons import compare_lesson
from ministream.lessons.pipeline_file import pipeline_lesson
from ministream.operators.static_join import StaticJoin

T = 1_704_103_200_000  # 2024-01-01 10:00:00 UTC, in ms

DEDUP_AFTER = """
FIELDS = {"key": str, "value": float}
OUTPUT_MODE = "append"
TABLE = [{"t_key": "a", "region": "north"}, {"t_key": "b", "region": "south"}, {"t_key": "b", "region": "east"}]


def pipeline(events):
    events = events.join_static("regions", TABLE, on={"key": "t_key"}, how="%s")
    return events.drop_duplicates("dedup", "key")
"""
"""A deduplication by the stream's key after a join with a table that has two rows for key b."""

SCRIPT = [[{"ts": T + 4_000, "key": "b", "value": 7.0}, {"ts": T + 4_000, "key": "b", "value": 1.0}]]
"""Two rows of key b in one batch: the first one, 7, is the one a deduplication keeps."""


def test_the_streams_rows_keep_their_order_and_a_keys_table_rows_come_last_first():
    """Each stream row in turn, with its matches: the table's two rows of b, east (the later) first."""
    join = StaticJoin(
        [{"k": "b", "region": "south"}, {"k": "b", "region": "east"}, {"k": "a", "region": "north"}],
        ("k",),
        ("k",),
        "inner",
    )
    ctx = StepContext.for_testing()
    join.open(ctx)
    join.process([{"k": "b", "n": 1}, {"k": "a", "n": 2}, {"k": "b", "n": 3}], 0)
    assert [(row["n"], row["region"]) for row in ctx.emitted] == [
        (1, "east"),
        (1, "south"),
        (2, "north"),
        (3, "east"),
        (3, "south"),
    ]


@pytest.mark.parametrize("how", ["inner", "left_outer"])
def test_a_deduplication_after_the_join_keeps_the_first_row_with_the_last_table_row(how):
    """The deduplication keeps b's first row of the batch (7), joined with b's last table row (east)."""
    lesson = pipeline_lesson(DEDUP_AFTER % how, "dedup_after_static.py")
    rows = lesson.run(SCRIPT).output()[0].rows
    assert [(row["value"], row["region"]) for row in rows] == [(7.0, "east")]


@pytest.mark.spark
@pytest.mark.parametrize("how", ["inner", "left_outer"])
def test_a_deduplication_after_the_join_matches_spark(how):
    """The compiled twin, which broadcasts the table, keeps the same row as ministream."""
    result = compare_lesson(pipeline_lesson(DEDUP_AFTER % how, "dedup_after_static.py"), SCRIPT)
    assert result.matches, result.table()


@pytest.mark.spark
def test_without_the_broadcast_spark_keeps_a_keys_last_row():
    """The same inner join written without ``F.broadcast``: the table, made from a list, has no size estimate,
    so Spark broadcasts the stream's batch and emits the rows in the table's order, a key's stream rows last
    first; the deduplication then keeps b's last row of the batch (1), not its first (7)."""
    from pyspark.sql import functions as F

    lesson = pipeline_lesson(DEDUP_AFTER % "inner", "dedup_after_static.py")

    def unbroadcast_twin(inputs, params):
        events = inputs["events"]
        table = events.sparkSession.createDataFrame(
            [("a", "north"), ("b", "south"), ("b", "east")], "t_key STRING, region STRING"
        )
        return events.join(table, F.col("key") == F.col("t_key"), "inner").dropDuplicates(["key"])

    result = compare_lesson(attrs.evolve(lesson, twin=unbroadcast_twin), SCRIPT)
    assert not result.matches
    assert "only in Spark:      {ts: 2024-01-01T10:00:04Z, key: b, value: 1, t_key: b, region: " in result.table()


CHANGING = DEDUP_AFTER.replace(
    'on={"key": "t_key"}, how="%s")', 'on={"key": "t_key"}, how="%s", changes={1: [*TABLE[1:], *TABLE[1:]]})'
)
"""The same deduplication after a join with a table that changes before batch 1 (b's two rows, twice; no a)."""


@pytest.mark.spark
@pytest.mark.parametrize("how", ["inner", "left_outer"])
def test_a_deduplication_after_a_join_with_a_changing_table_matches_spark(how):
    """A changing table is hashed after a shuffle in the twin, not broadcast: the same orders, and each batch
    joined with the version in force (in batch 1 the table has no row of a any more: an inner join drops a and
    c, a left outer join pads both)."""
    lesson = pipeline_lesson(CHANGING % how, "dedup_after_changing.py")
    script = [*SCRIPT, [{"ts": T + 5_000, "key": "a", "value": 3.0}, {"ts": T + 5_000, "key": "c", "value": 2.0}]]
    assert [len(batch.rows) for batch in lesson.run(script).output()] == [1, 0 if how == "inner" else 2]
    result = compare_lesson(lesson, script)
    assert result.matches, result.table()
