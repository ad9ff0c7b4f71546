"""``ministream bench`` names every figure the benchmark page shows (its timings are never asserted: they are
not test material; the figures' presence and the page's verdicts are)."""

from ministream.tools.bench.engine import OPERATORS, bench_engine
from ministream.tools.bench.report import TARGETS, markdown_page
from ministream.tools.bench.workload import make_events


def test_the_engine_figures_are_all_measured():
    """Each operator against its floor (rates, ratio, load), the stateless pipeline, parallelism 4 and the
    checkpointed tumbling count."""
    figures = {}
    bench_engine(figures, make_events(3_000, keys=20), say=lambda text: None, repeat=1)
    expected = {
        "map_filter_events_per_s",
        "tumbling_count_p4_events_per_s",
        "tumbling_count_checkpoint_every_10k_events_per_s",
        "tumbling_count_incremental_checkpoint_every_10k_events_per_s",
    }
    for name in OPERATORS:
        expected |= {
            f"{name}{figure}" for figure in ("_events_per_s", "_floor_events_per_s", "_ratio_to_floor", "_load")
        }
    assert set(figures) == expected
    assert all(value > 0 for name, value in figures.items() if not name.endswith("_load"))
    ratio = figures["session_count_events_per_s"] / figures["session_count_floor_events_per_s"]
    assert abs(figures["session_count_ratio_to_floor"] - ratio) < 0.01


def test_the_page_says_which_targets_are_met():
    """A figure with a target gets 'met' or 'NOT met' in the table; the page says how figures are measured."""
    report = {
        "machine": {"cores": 2},
        "figures": {
            "session_count_ratio_to_floor": 0.61,
            "checkpoint_snapshot_s_1m_keys": 2.5,
            "python_loop_events_per_s": 9,
        },
    }
    page = markdown_page(report, ["--no-spark"])
    assert "| `session_count_ratio_to_floor` | 0.61 | at least 0.5: met |" in page
    assert "| `checkpoint_snapshot_s_1m_keys` | 2.5 | under 1 s: NOT met |" in page
    assert "| `python_loop_events_per_s` | 9 |  |" in page
    assert "## How the figures are measured" in page and set(TARGETS) >= {"session_count_ratio_to_floor"}
