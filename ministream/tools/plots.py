"""Plots: event time against processing order, with the watermark line: the classic picture of out-of-order
data.

Each row is a point: across, the order in which rows arrive (processing order); up, the row's event time. A
stream in order would climb steadily; out-of-order rows dip below their neighbours. The watermark is drawn
as a line of steps: the watermark in force when each row arrived. A row on or below the line
(``event time <= watermark``) is *late*, marked with a red cross. In the micro-batch model the watermark only
moves between batches (dotted lines mark them); in the continuous model it moves after every row that raises
the largest event time.

:func:`watermarks_at_arrival` computes that line from a script with the engine's own watermark code, for
either model; a continuous run's ``arrivals_at(sink)`` gives rows and watermarks as they reached a sink.
Plots are built on a bare ``matplotlib.figure.Figure``: nothing is shown or kept by pyplot, and a notebook
displays the returned figure.

>>> script = [[{"ts": 5_000}, {"ts": 1_000}], [{"ts": 9_000}, {"ts": 2_000}]]
>>> watermarks_at_arrival(script, delay=2_000, model="microbatch")
[0, 0, 0, 0]
>>> watermarks_at_arrival(script, delay=2_000, model="continuous")
[None, 2999, 2999, 6999]
>>> figure = event_time_plot(script, watermarks_at_arrival(script, 2_000, "continuous"))
>>> [line.get_label() for line in figure.axes[0].get_lines()]  # a leading _ keeps it out of the legend
['watermark', '_batch boundary']
"""

from __future__ import annotations

import math

from ministream.core.operator import StepContext
from ministream.operators.watermark import WatermarkOperator
from ministream.time.clock import ClockStep
from ministream.time.units import MAX_TIME, format_clock
from ministream.time.watermarks import MicroBatchWatermarks

MODELS = ("microbatch", "continuous")


def _batches(script) -> list[list[dict]]:
    """A script as a list of batches of rows (a flat list of rows is one batch); clock steps left out."""
    if script and all(isinstance(entry, dict) for entry in script):
        script = [script]
    return [[row for row in batch if not isinstance(row, ClockStep)] for batch in script]


def arrival_rows(script) -> list[dict]:
    """The rows of a script in the order they arrive: batch after batch, row after row.

    >>> arrival_rows([[{"ts": 3}], [], [{"ts": 1}, {"ts": 2}]])
    [{'ts': 3}, {'ts': 1}, {'ts': 2}]
    """
    return [row for batch in _batches(script) for row in batch]


def watermarks_at_arrival(script, delay: int, model: str = "continuous", column: str = "ts") -> list:
    """The watermark each row is judged against when it arrives, one per row (``None``: no watermark yet).

    - micro-batch (Spark): a row of batch k is late against WM_{k-1}, the previous batch's watermark;
    - continuous (Flink): a row arrives after the watermark of the rows before it, ``max - delay - 1``.

    >>> script = [[{"ts": 10_000}], [{"ts": 4_000}], [{"ts": 4_000}]]
    >>> watermarks_at_arrival(script, 5_000, "microbatch")  # WM_1 = 5 s judges only batch 2's rows
    [0, 0, 5000]
    >>> watermarks_at_arrival(script, 5_000, "continuous")
    [None, 4999, 4999]

    Args:
        script: batches of rows (or one list of rows); ``ClockStep`` entries are skipped.
        delay: the ``with_watermark`` delay, in ms.
        model: ``"microbatch"`` or ``"continuous"``.
        column: the event-time column.
    """
    if model not in MODELS:
        raise ValueError(f"model must be 'microbatch' or 'continuous', not {model!r}")
    out = []
    if model == "microbatch":
        marks = MicroBatchWatermarks({"wm": delay})
        late_watermark = watermark = 0  # WM_{k-1} and WM_k, both 0 for batch 0
        for batch in _batches(script):
            out += [late_watermark] * len(batch)
            times = [row[column] for row in batch if row.get(column) is not None]
            if times:
                marks.observe("wm", max(times))
            late_watermark, watermark = watermark, marks.advance()
        return out

    generator = WatermarkOperator(column, delay)
    ctx = StepContext.for_testing("wm", model="continuous")
    generator.open(ctx)
    for row in arrival_rows(script):
        out.append(generator.emitted)  # the watermark sent before this row
        generator.process([row], 0)
    return out


def late_flags(rows: list[dict], watermarks: list, column: str = "ts") -> list[bool]:
    """For each row, whether it is late: its event time is at or before the watermark it arrived under.

    >>> late_flags([{"ts": 5}, {"ts": 3}, {"ts": 9}], [None, 4, 4])
    [False, True, False]
    """
    return [watermark is not None and row[column] <= watermark for row, watermark in zip(rows, watermarks)]


def event_time_plot(
    script, watermarks: list, *, late: list[bool] | None = None, column: str = "ts", title: str | None = None
):
    """Event time against arrival order, with the watermark line and late rows marked; returns the Figure.

    >>> figure = event_time_plot([[{"ts": 5_000}, {"ts": 1_000}]], [0, 3_999], title="two rows")
    >>> axes = figure.axes[0]
    >>> axes.get_title(), [len(c.get_offsets()) for c in axes.collections], axes.get_lines()[0].get_ydata().tolist()
    ('two rows', [1, 1], [0.0, 3.999])

    Args:
        script: batches of rows (or one list of rows) in arrival order; batch boundaries are drawn.
        watermarks: the watermark in force when each row arrived (``watermarks_at_arrival``), ``None``
            where there was none yet.
        late: which rows to mark as late, one flag per row; by default the rows at or before their
            watermark (:func:`late_flags`). A window step has its own rule (a row is late for a window by the
            window's end), so pass what the engine dropped to show exactly that.
        column: the event-time column (ms).
        title: the figure's title.
    """
    from matplotlib.figure import Figure

    batches = _batches(script)
    rows = [row for batch in batches for row in batch]
    if len(watermarks) != len(rows):
        raise ValueError(f"one watermark per row: {len(rows)} rows, {len(watermarks)} watermarks")
    times = [row[column] for row in rows]
    base = (min(times) // 60_000 * 60_000) if times else 0  # the minute the first event falls in

    def seconds(ms):
        return math.nan if ms is None or ms >= MAX_TIME else (ms - base) / 1000

    late = late_flags(rows, watermarks, column) if late is None else list(late)
    if len(late) != len(rows):
        raise ValueError(f"one late flag per row: {len(rows)} rows, {len(late)} flags")
    figure = Figure(figsize=(8, 4.5), layout="constrained")
    axes = figure.add_subplot()
    on_time = [(i, seconds(t)) for i, (t, is_late) in enumerate(zip(times, late)) if not is_late]
    late_points = [(i, seconds(t)) for i, (t, is_late) in enumerate(zip(times, late)) if is_late]
    axes.scatter([x for x, _ in on_time], [y for _, y in on_time], color="tab:blue", zorder=3, label="row")
    axes.scatter(
        [x for x, _ in late_points],
        [y for _, y in late_points],
        color="tab:red",
        marker="x",
        s=70,
        zorder=3,
        label="late row (event time <= watermark)",
    )
    axes.plot(
        range(len(rows)),
        [seconds(w) for w in watermarks],
        drawstyle="steps-post",
        color="tab:orange",
        label="watermark",
    )
    start = 0
    for batch in batches[:-1]:
        start += len(batch)
        axes.axvline(start - 0.5, color="grey", linestyle=":", linewidth=1, label="_batch boundary")
    axes.set_xlabel("arrival order (processing order)" + (", batches between dotted lines" if len(batches) > 1 else ""))
    axes.set_ylabel(f"event time (seconds after {format_clock(base)})")
    axes.legend(loc="upper left")
    if title:
        axes.set_title(title)
    return figure
