"""``ministream bench --operators`` runs every operator in Spark beside the engine: the same events, in the same
micro-batches, through the operator's compiled query; Spark's rows must be the engine's, batch for batch
(its timings are reported, never asserted)."""

import pytest

from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.spark import bench_spark_operators, engine_rows_by_batch
from ministream.tools.bench.workload import in_batches, make_events

pytestmark = pytest.mark.spark

EVENTS = make_events(3_000, keys=20)


@pytest.fixture(scope="module")
def figures():
    """Every operator in Spark on 3,000 events of 20 keys in batches of 1,000, the engine's rate given."""
    measured = {f"{name}_events_per_s": 1_000 for name in OPERATORS}
    lines = []
    bench_spark_operators(measured, EVENTS, lines.append, batch_size=1_000)
    measured["lines"] = lines
    return measured


def test_spark_emits_the_engines_rows_for_every_operator(figures):
    """Each operator's Spark query emits as many rows as the engine's pipeline, in the same batches: the same
    events, cut the same way, with the same watermark, windows, join bounds, keys and timers."""
    script = in_batches(EVENTS, 3)
    for name in OPERATORS:
        assert figures[f"spark_{name}_same_rows"] is True, name
        assert figures[f"spark_{name}_rows"] == sum(engine_rows_by_batch(name, script).values()) > 0, name
    assert not any("MISMATCH" in line for line in figures["lines"])


def test_every_operator_has_its_spark_figures(figures):
    """Spark's rate (CPU and wall), its first batch apart, and ministream's rate over Spark's, per operator;
    the size of the Spark run is among the figures."""
    assert figures["spark_operator_events"] == 3_000 and figures["spark_operator_batches"] == 3
    for name in OPERATORS:
        for figure in ("events_per_s", "wall_events_per_s", "first_batch_s"):
            assert figures[f"spark_{name}_{figure}"] > 0, (name, figure)
        assert figures[f"{name}_ratio_to_spark"] == round(1_000 / figures[f"spark_{name}_events_per_s"], 2)
    assert len(figures["lines"]) == len(OPERATORS)


def test_only_the_operators_named_run_in_spark():
    """`bench --spark-operators` runs only the operators it names in Spark: their figures, none of the
    others', the rows still checked against the engine's."""
    measured: dict = {}
    bench_spark_operators(measured, EVENTS[:2_000], lambda text: None, batch_size=1_000, operators=["dedup"])
    assert measured["spark_dedup_same_rows"] is True and measured["spark_dedup_rows"] > 0
    assert not [name for name in OPERATORS if name != "dedup" and f"spark_{name}_rows" in measured]
