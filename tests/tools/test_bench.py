"""``ministream bench`` names every figure the benchmark page shows (its timings are never asserted: they are
not test material; the figures' presence and the page's verdicts are)."""

import pytest

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.curves import CurvePoints, bench_curves, curve_points, measure, scaling_plot, spread
from ministream.tools.bench.engine import OPERATORS, bench_engine, bench_operators
from ministream.tools.bench.report import TARGETS, main, markdown_page
from ministream.tools.bench.workload import EventBatches, make_events
from ministream.tools.plots import ink, png_bytes


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
        "tumbling_count_checkpoint_ratio",
        "tumbling_count_incremental_checkpoint_ratio",
        "tumbling_count_checkpoint_ratios",
        "tumbling_count_incremental_checkpoint_ratios",
        "tumbling_count_checkpoint_load",
        "operator_events",
        "operator_batches",
        "operator_repeat",
    }
    for name in OPERATORS:
        expected |= {
            f"{name}{figure}" for figure in ("_events_per_s", "_floor_events_per_s", "_ratio_to_floor", "_load")
        }
    assert set(figures) == expected
    assert all(value > 0 for name, value in figures.items() if not name.endswith(("_load", "_ratios")))
    assert len(figures["tumbling_count_incremental_checkpoint_ratios"]) == 1  # one per run: repeat=1
    assert (
        figures["tumbling_count_incremental_checkpoint_ratio"]
        == figures["tumbling_count_incremental_checkpoint_ratios"][0]
    )
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


def test_a_generated_run_writes_the_rows_of_the_same_events_in_memory():
    """The curves' runs make their events batch by batch and count their output (so that 10 million events
    fit in memory): for every operator they write as many rows as the same events, held in memory, give the
    engine's pipeline with its collecting sink."""
    for name, benched in OPERATORS.items():
        made = EventBatches(2_000, 200, keys=20)
        script = [made.batch(k) for k in range(len(made))]
        run = run_microbatch(benched.build(benched.inputs(script)), output_mode=benched.output_mode)
        expected = sum(len(batch.rows) for batch in run.output())
        assert measure(name, 2_000, 200, keys=20)["rows"] == expected > 0, name


def test_generated_batches_are_made_again_the_same():
    """A batch made twice (a join's two sides read it; a run may read it again) holds the same events, and
    only the last batch made is kept."""
    made = EventBatches(1_000, 100, keys=10)
    first = [dict(row) for row in made.batch(3)]
    made.batch(4)
    assert made.batch(3) == first and made.last[0] == 3


def test_the_curves_have_every_point_and_a_spread_per_operator():
    """Each operator gets a rate at each run length and batch size that curve_points names, the spread of both
    curves (against the 1.5 target on the page), and the peak memory of each run of the run-length curve."""
    figures = {}
    curves = bench_curves(figures, lambda text: None, ["tumbling_count", "join_inner"], curve_max=2_000)
    points = curve_points(2_000)
    assert points == CurvePoints((20, 200, 2_000), 2, 200, (1, 2, 20))
    for name in ("tumbling_count", "join_inner"):
        assert set(curves[name]["run length"]) == set(points.run_lengths) == set(curves[name]["memory"])
        assert set(curves[name]["batch size"]) == set(points.batch_sizes)
        assert figures[f"{name}_spread_run_length"] == spread(curves[name]["run length"]) >= 1
        assert figures[f"{name}_spread_batch_size"] == spread(curves[name]["batch size"]) >= 1
        assert f"{name}_spread_run_length" in TARGETS
    assert figures["curve_points"]["run_lengths"] == (20, 200, 2_000)


def test_the_batch_size_curve_has_the_floor_beside_the_engine():
    """At each batch size the floor runs beside the engine on the same events: its events/s, the engine's
    ratio to it (the two rates over each other), the output rows per event (the engine's, checked to be the
    floor's), the floor's spread and the engine's spread over it (against the 1.5 target); an update-mode
    count emits more rows per event the smaller the batches, never more than one."""
    figures = {}
    curves = bench_curves(figures, lambda text: None, ["running_count", "dedup"], curve_max=2_000)
    sizes = curve_points(2_000).batch_sizes
    for name in ("running_count", "dedup"):
        curve = curves[name]
        for axis in ("floor batch size", "ratio to floor", "rows per event"):
            assert set(curve[axis]) == set(sizes)
        for size in sizes:
            engine, floor = curve["batch size"][size], curve["floor batch size"][size]
            assert curve["ratio to floor"][size] == pytest.approx(engine / floor, rel=0.01, abs=0.001)
        floor_spread = figures[f"{name}_floor_spread_batch_size"]
        assert floor_spread == spread(curve["floor batch size"]) >= 1
        assert figures[f"{name}_spread_batch_size_over_floor"] == round(
            figures[f"{name}_spread_batch_size"] / floor_spread, 2
        )
        assert f"{name}_spread_batch_size_over_floor" in TARGETS
    per_event = [curves["running_count"]["rows per event"][size] for size in sizes]
    assert per_event == sorted(per_event, reverse=True) and per_event[-1] > 0
    assert per_event[0] == 1.0  # batches of one event: each emits its key's new count
    assert set(curves["dedup"]["rows per event"].values()) == {round(200 / 200, 4)}  # every (key, ts) is new


def test_the_curves_announce_the_engine_and_the_floor_at_each_batch_size():
    """``bench`` shows where a long part is through ``progress``: each run-length point, and at each batch
    size each of the engine's and the floor's runs, in turns, each before it starts."""
    told = []
    bench_curves({}, lambda text: None, ["dedup"], curve_max=2_000, progress=told.append)
    assert told == [
        "curves dedup: 20 events in batches of 2",
        "curves dedup: 200 events in batches of 2",
        "curves dedup: 2,000 events in batches of 2",
        *(
            f"curves dedup: 200 events in batches of {size}, {which}, run {run} of 2"
            for size in (1, 2, 20)
            for run in (1, 2)
            for which in ("engine", "floor")
        ),
    ]


def spark_figures(figures: dict, same: bool = True) -> dict:
    """Spark's figures for every operator as ``bench_spark_operators`` names them (values made up: the page
    is checked, not the timings)."""
    figures = {**figures, "spark_operator_events": 2_000, "spark_operator_batches": 2}
    for name in OPERATORS:
        figures |= {
            f"spark_{name}_events_per_s": 500,
            f"spark_{name}_wall_events_per_s": 400,
            f"spark_{name}_first_batch_s": 1.5,
            f"spark_{name}_rows": 10,
            f"spark_{name}_same_rows": same,
            f"{name}_ratio_to_spark": 2.0,
        }
    return figures


def test_the_page_has_the_operator_table_the_curves_and_the_machine(tmp_path):
    """The page: the machine and its load; one row per operator with ministream, floor, ratio, Spark and
    ministream/Spark, and what ran (sizes: Spark on the engine's events, or the first of them); the flat-cost section with its plot, each curve's spread against the
    target and the memory of each run; every figure; how they are measured; a Spark row that is not the
    engine's is marked."""
    figures = {}
    bench_operators(figures, make_events(2_000, keys=20), lambda text: None, repeat=1, batches=2)
    bench_curves(figures, lambda text: None, ["dedup"], curve_max=2_000)
    report = {
        "machine": {"cores": 2, "load_average_at_start": 3.5, "load_average_at_end": 4.25},
        "figures": spark_figures(figures),
        "plot": str(tmp_path / "plots" / "scaling.png"),
    }
    page = markdown_page(report, ["--operators", "--curves"], str(tmp_path / "tutorials"))
    assert "Machine: cores 2, load_average_at_start 3.5, load_average_at_end 4.25" in page
    header = "| operator | ministream ev/s | floor ev/s | ratio | Spark ev/s | ministream/Spark |"
    assert header in page
    assert "ministream and its floor: 2,000 events in 2 micro-batches of 1,000" in page
    assert "Spark: the same events, in 2 micro-batches of 1,000" in page
    fewer = {**report, "figures": {**report["figures"], "spark_operator_events": 1_000, "spark_operator_batches": 1}}
    assert "Spark: the first 1,000 of the same events, in 1 micro-batches of 1,000" in markdown_page(fewer, [])
    for name in OPERATORS:
        row = next(line for line in page.splitlines() if line.startswith(f"| {name} |"))
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[1] == f"{figures[f'{name}_events_per_s']:,}" and cells[4:6] == ["500", "2.0"]
        assert cells[8] == "10 (= engine)"
    assert "## Flat cost" in page
    assert "![events per second against run length and batch size](../plots/scaling.png)" in page
    assert "| operator | 20 events | 200 events | 2,000 events | spread |" in page
    batch_header = (
        "| operator | batches of 1 | batches of 2 | batches of 20 | spread | floor, batches of 1 | floor, batches of 2 "
        "| floor, batches of 20 | floor spread | spread over floor's | ratio at 1 | ratio at 2 | ratio at 20 "
        "| rows/event at 1 | rows/event at 2 | rows/event at 20 |"
    )
    assert batch_header in page
    run_row, batch_row = [line for line in page.splitlines() if line.startswith("| dedup | ")][-2:]  # the curves'
    assert f"{figures['dedup_spread_run_length']} (" in run_row and "met)" in run_row
    cells = [cell.strip() for cell in batch_row.strip("|").split("|")]
    floor = figures["curves"]["dedup"]["floor batch size"]
    assert cells[5:8] == [f"{floor[size]:,}" for size in (1, 2, 20)]
    assert cells[8] == str(figures["dedup_floor_spread_batch_size"])
    over = figures["dedup_spread_batch_size_over_floor"]
    assert cells[9] == f"{over} ({'met' if over <= 1.5 else 'NOT met'})"
    assert cells[4].startswith(f"{figures['dedup_spread_batch_size']} (")
    assert "| `dedup_floor_spread_batch_size` |" in page and "| `dedup_spread_batch_size_over_floor` |" in page
    assert "| `dedup_spread_batch_size` |" in page and "## Every figure" in page
    assert "## How the figures are measured" in page
    mismatched = markdown_page({**report, "figures": spark_figures(figures, same=False)}, [])
    assert "10 (**MISMATCH**)" in mismatched


@pytest.mark.notebook
def test_the_scaling_plot_draws_both_curves_of_each_operator():
    """The plot of the curves renders as a PNG that is not blank: one line per operator on each axis, and on
    the batch-size axis the floor's dashed in the same colour (one legend entry says what dashed is); the
    sizes in the axis labels (matplotlib comes with the notebooks extra)."""
    figures = {}
    curves = bench_curves(figures, lambda text: None, ["tumbling_count", "dedup"], curve_max=2_000)
    figure = scaling_plot(curves, curve_points(2_000))
    png = png_bytes(figure)
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and ink(png) > 0.02
    run_axes, batch_axes = figure.axes
    assert [line.get_label() for line in run_axes.get_lines()] == ["tumbling_count", "dedup"]
    lines = batch_axes.get_lines()
    assert [line.get_label() for line in lines] == [
        "tumbling_count",
        "_tumbling_count floor",
        "dedup",
        "_dedup floor",
        "the floor (dashed)",
    ]
    assert [len(line.get_xdata()) for line in lines] == [3, 3, 3, 3, 0]
    assert [line.get_linestyle() for line in lines] == ["-", "--", "-", "--", "--"]
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color() == lines[3].get_color()
    assert run_axes.get_xlabel() == "events in the run (batches of 2)"
    assert batch_axes.get_xlabel() == "events per batch (200 events)"


@pytest.mark.notebook
def test_bench_operators_with_curves_writes_the_page_and_the_plot(tmp_path, capsys):
    """`ministream bench --operators --no-spark --curves dedup --curve-max N --plot P --markdown M` measures the
    operators and the curves, draws the plot and writes a page that links it; the curves are a part of the
    progress bar (2 parts), which names each run, the floor's too."""
    import io

    page, plot = tmp_path / "bench.md", tmp_path / "scaling.png"
    out = io.StringIO()
    argv = ["--operators", "--no-spark", "--events", "1000", "--curves", "dedup", "--curve-max", "2000"]
    assert main([*argv, "--plot", str(plot), "--markdown", str(page)], out) == 0
    text = page.read_text()
    assert "| dedup | " in text and "![events per second against run length and batch size](scaling.png)" in text
    assert ink(plot.read_bytes()) > 0.02
    assert "dedup_spread_run_length" in out.getvalue() and "dedup_floor_spread_batch_size" in out.getvalue()
    bar = capsys.readouterr().err.replace("\r", "\n")
    assert "bench: curves dedup: 200 events in batches of 20, floor, run 2 of 2:  50%" in bar and "2/2" in bar


@pytest.mark.parametrize("option", ["--curves", "--spark-operators"])
def test_an_unknown_operator_is_refused_with_the_operators_names(option, capsys):
    """`bench --curves` and `bench --spark-operators` take operators by name: a name that is none of them
    stops the command at once (exit 2) with a line that names it and lists the operators."""
    with pytest.raises(SystemExit) as stopped:
        main(["--operators", "--no-spark", option, "dedup,dedupe"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "no operator 'dedupe': the operators are running_count, tumbling_count" in error
    assert "process_timers" in error
