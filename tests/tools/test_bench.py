"""``ministream bench`` names every figure the benchmark page shows (its timings are never asserted: they are
not test material; the figures' presence and the page's verdicts are)."""

from ministream.tools.bench.engine import bench_engine
from ministream.tools.bench.report import TARGETS, markdown_page
from ministream.tools.bench.workload import make_events


def test_the_engine_figures_are_all_measured():
    """Each pipeline at parallelism 1 and 4, the loop floor, the checkpointed tumbling count and the ratio."""
    figures = {}
    bench_engine(figures, make_events(3_000, keys=20), say=lambda text: None, repeat=1)
    pipelines = ("map_filter", "running_count", "tumbling_count", "session_window", "stream_join")
    expected = {
        "python_loop_events_per_s",
        "tumbling_count_checkpoint_every_10k_events_per_s",
        "tumbling_count_incremental_checkpoint_every_10k_events_per_s",
        "tumbling_count_ratio_to_loop",
    }
    expected |= {f"{name}{suffix}_events_per_s" for name in pipelines for suffix in ("", "_p4")}
    assert set(figures) == expected
    assert all(value > 0 for value in figures.values())
    assert figures["tumbling_count_ratio_to_loop"] == round(
        figures["tumbling_count_events_per_s"] / figures["python_loop_events_per_s"], 3
    )


def test_the_page_says_which_targets_are_met():
    """A figure with a target gets 'met' or 'NOT met' in the table; the page says how figures are measured."""
    report = {
        "machine": {"cores": 2},
        "figures": {
            "tumbling_count_ratio_to_loop": 0.61,
            "checkpoint_snapshot_s_1m_keys": 2.5,
            "python_loop_events_per_s": 9,
        },
    }
    page = markdown_page(report, ["--no-spark"])
    assert "| `tumbling_count_ratio_to_loop` | 0.61 | at least 0.5: met |" in page
    assert "| `checkpoint_snapshot_s_1m_keys` | 2.5 | under 2 s: NOT met |" in page
    assert "| `python_loop_events_per_s` | 9 |  |" in page
    assert "## How the figures are measured" in page and set(TARGETS) >= {"tumbling_count_ratio_to_loop"}
