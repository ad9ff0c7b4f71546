"""Lesson enrichment-join: ministream and its PySpark twin (a stream-static join) agree batch for batch, inner
and left outer, with a table that changes between batches and with one that does not, and on random trips;
nothing is kept in state, and a trip is never joined again when the table changes."""

import os
import random

import attrs
import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.lesson import BASE_TIME
from ministream.operators.planner import optimizer_notes

LESSON = get_lesson("enrichment-join")
RUNS = int(os.environ.get("MINISTREAM_FUZZ_RUNS", "2"))
SETTINGS = [{}, {"how": "left_outer"}, {"table": "fixed"}, {"how": "left_outer", "table": "fixed"}]


def cities(run) -> list[list[tuple]]:
    return [sorted((row["driver"], row["fare"], row["city"]) for row in batch.rows) for batch in run.output()]


@pytest.mark.spark
@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: "-".join(p.values()) or "default")
def test_matches_spark(params):
    """Every batch's joined rows are the same in ministream and in Spark, which reads its static side again
    in every micro-batch."""
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()


@pytest.mark.spark
@pytest.mark.parametrize("params", [{}, {"how": "left_outer"}], ids=["inner", "left_outer"])
def test_random_trips_match_spark(params):
    """On random trips (drivers in every version of the table, in one, in none, and null drivers), every batch
    is the same as in Spark."""
    rng = random.Random(f"enrichment-join-{sorted(params.items())}")
    for _ in range(RUNS):
        script = LESSON.random_script(rng, LESSON.resolve_params(params))
        result = compare_lesson(LESSON, script, params)
        assert result.matches, f"script {script}\n{result.table()}"


@pytest.mark.spark
def test_comparison_fails_when_the_twin_reads_the_table_once():
    """A twin that joins with the first version of the table for good (as if Spark did not read it again)
    disagrees from batch 2 on, where d1 moved to Nice."""
    from ministream.spark.table import versioned_table

    def frozen_twin(inputs, params):
        trips = inputs["trips"]
        drivers = versioned_table(trips.sparkSession, "driver STRING, city STRING", {0: DRIVERS})
        return trips.join(drivers, "driver", params["how"])

    result = compare_lesson(attrs.evolve(LESSON, twin=frozen_twin))
    assert not result.matches
    assert "only in ministream: {ts: 2024-01-01T10:00:21Z, driver: d1, fare: 9, city: Nice}" in result.table()


DRIVERS = [{"driver": "d1", "city": "Lyon"}, {"driver": "d2", "city": "Paris"}]


def test_inner_join_drops_unmatched_trips_at_once_and_uses_the_new_table_from_batch_2():
    """An inner join emits a trip in its own batch or never; from batch 2 the updated table applies (d1 in Nice,
    d3 known), and the trips joined before keep the old city."""
    assert cities(LESSON.run()) == [
        [("d1", 10.0, "Lyon"), ("d2", 7.0, "Paris")],
        [("d1", 12.0, "Lyon")],
        [("d1", 9.0, "Nice"), ("d3", 5.0, "Lille")],
        [("d2", 8.0, "Paris"), ("d3", 3.0, "Lille")],
    ]


def test_left_outer_join_pads_unmatched_trips_with_nulls_in_their_own_batch():
    """A left outer join emits a trip without a driver row at once, its city null: nothing can match it later."""
    padded = [[row for row in batch if row[2] is None] for batch in cities(LESSON.run(params={"how": "left_outer"}))]
    assert padded == [[("d3", 4.0, None)], [("d4", 6.0, None)], [], [("d4", 2.0, None)]]


def test_a_fixed_table_never_knows_d3():
    """With table=fixed, d1 stays in Lyon and d3 never matches."""
    rows = [row for batch in cities(LESSON.run(params={"table": "fixed"})) for row in batch]
    assert ("d1", 9.0, "Lyon") in rows and not any(driver == "d3" for driver, _, _ in rows)


def test_the_join_keeps_no_state():
    """The stream-static join step holds nothing between batches (a stream-stream join keeps both sides)."""
    run = LESSON.run(parallelism=2)
    operators = run.graph.operators("with_drivers")
    assert operators and all(operator.state_size() == 0 for operator in operators)


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same for parallelism 1, 2 and 4 and several seeds."""
    expected = cities(LESSON.run())
    for parallelism, seed in ((1, 3), (2, 0), (4, 7)):
        assert cities(LESSON.run(parallelism=parallelism, seed=seed)) == expected


def watermarks(run) -> list:
    return [batch.watermark - BASE_TIME if batch.watermark else 0 for batch in run.output()]


def test_a_filter_after_the_join_keeps_its_rows_out_of_the_watermark():
    """With ``min_fare=5`` the trips' watermark counts only the trips the filter after the join keeps, as
    Spark runs it below the watermark: d3@3 (fare 4) and d3@22 (fare 5) never move it. d4@15 (fare 6) does,
    though the inner join drops it: no condition of the table's runs before the join."""
    for how in ("inner", "left_outer"):
        run = LESSON.run(params={"how": how, "min_fare": 5})
        assert watermarks(run) == [0, 2_000, 15_000, 21_000]
        assert all(row["fare"] > 5 for batch in run.output() for row in batch.rows)
    assert optimizer_notes_of({"min_fare": 5}) == [
        "filter 'big_fares' runs below it (Spark moves it there): only the rows it keeps move this watermark"
    ]


def optimizer_notes_of(params) -> list[str]:
    flow = LESSON.pipeline(LESSON.default_script, LESSON.resolve_params(params))
    return optimizer_notes(flow, flow.step("trips_watermark"))


@pytest.mark.spark
@pytest.mark.parametrize("how", ["inner", "left_outer"])
def test_a_filter_after_the_join_matches_spark(how):
    """``min_fare=5``: the same watermarks and rows as Spark, on the lesson's trips and on random ones (whose
    null drivers an inner join keeps out of Spark's watermark too: it adds ``driver IS NOT NULL`` below it)."""
    params = {"how": how, "min_fare": 5}
    result = compare_lesson(LESSON, params=params)
    assert result.matches, result.table()
    rng = random.Random(f"enrichment-join-min-fare-{how}")
    for _ in range(RUNS):
        script = LESSON.random_script(rng, LESSON.resolve_params(params))
        result = compare_lesson(LESSON, script, params)
        assert result.matches, f"script {script}\n{result.table()}"
