"""Plots of event time against processing order: the points, the watermark line and the late rows drawn
from a script, without a display."""

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.models.continuous import run_continuous
from ministream.models.microbatch import run_microbatch
from ministream.tools.plots import event_time_plot, late_flags, watermarks_at_arrival

pytestmark = pytest.mark.notebook  # matplotlib comes with the notebooks extra

BASE = 1_704_103_200_000  # 2024-01-01T10:00:00Z
SCRIPT = [
    [{"ts": BASE + 1_000}, {"ts": BASE + 12_000}],
    [{"ts": BASE + 3_000}, {"ts": BASE + 25_000}],
    [{"ts": BASE + 11_000}, {"ts": BASE + 26_000}],
]


def passthrough(script, delay):
    flow = Dataflow("passthrough")
    flow.source("events", ScriptedSource(script)).with_watermark("wm", "ts", delay).sink("output", CollectingSink())
    return flow


def test_draws_every_row_the_watermark_line_and_late_rows():
    """One point per row (late rows as red crosses), and a watermark line with one step per row, in seconds."""
    watermarks = watermarks_at_arrival(SCRIPT, 5_000, "continuous")
    figure = event_time_plot(SCRIPT, watermarks, title="continuous")
    [axes] = figure.axes
    on_time, late = axes.collections
    assert len(on_time.get_offsets()) + len(late.get_offsets()) == 6
    assert late.get_offsets().tolist() == [[2.0, 3.0], [4.0, 11.0]]  # (arrival index, seconds after 10:00)
    watermark = axes.get_lines()[0]
    assert watermark.get_label() == "watermark"
    assert watermark.get_xdata().tolist() == [0, 1, 2, 3, 4, 5]
    ydata = watermark.get_ydata().tolist()
    assert math.isnan(ydata[0]) and ydata[1:] == [-4.001, 6.999, 6.999, 19.999, 19.999]
    assert axes.get_ylabel() == "event time (seconds after 10:00:00)"


def test_batch_boundaries_are_drawn():
    """A dotted line separates consecutive batches: two lines for three batches."""
    figure = event_time_plot(SCRIPT, watermarks_at_arrival(SCRIPT, 5_000, "microbatch"))
    boundaries = [line for line in figure.axes[0].get_lines() if line.get_label() == "_batch boundary"]
    assert [line.get_xdata()[0] for line in boundaries] == [1.5, 3.5]


def test_no_display_side_effects():
    """Drawing creates no pyplot figure: the caller gets the Figure and nothing is shown."""
    plt.close("all")
    event_time_plot(SCRIPT, watermarks_at_arrival(SCRIPT, 5_000))
    assert plt.get_fignums() == []


def test_one_watermark_per_row():
    """A watermark list of the wrong length is refused with the two counts."""
    with pytest.raises(ValueError, match="6 rows, 2 watermarks"):
        event_time_plot(SCRIPT, [0, 0])


def test_continuous_watermarks_match_the_engine():
    """The continuous watermark line is what a continuous run's rows carried when they reached the sink."""
    run = run_continuous(passthrough(SCRIPT, 5_000))
    assert [arrival.watermark for arrival in run.arrivals_at("output")] == watermarks_at_arrival(
        SCRIPT, 5_000, "continuous"
    )


def test_microbatch_watermarks_match_the_engine():
    """The micro-batch line is, for each row of batch k, the watermark the engine ran batch k-1 with."""
    run = run_microbatch(passthrough(SCRIPT, 5_000))
    previous = [0] + run.watermarks[:-1]
    expected = [previous[k] for k, batch in enumerate(SCRIPT) for _ in batch]
    assert watermarks_at_arrival(SCRIPT, 5_000, "microbatch") == expected == [0, 0, 0, 0, BASE + 7_000, BASE + 7_000]


def test_late_rows_can_be_given():
    """Late flags passed in (what a window step dropped) replace the row-by-row rule."""
    flags = [False, False, False, False, True, False]
    figure = event_time_plot(SCRIPT, watermarks_at_arrival(SCRIPT, 5_000), late=flags)
    on_time, late = figure.axes[0].collections
    assert late.get_offsets().tolist() == [[4.0, 11.0]] and len(on_time.get_offsets()) == 5


def test_late_means_at_or_before_the_watermark():
    """A row exactly on the watermark is late; one a millisecond after it is not."""
    assert late_flags([{"ts": 10}, {"ts": 11}], [10, 10]) == [True, False]
