"""Plots: a lesson's events and what the engine did with them, as pictures that show wherever they are shown.

The classic picture of out-of-order data is :func:`event_time_plot`: each row is a point; across, the order
in which rows arrive (processing order); up, the row's event time. A stream in order would climb steadily;
out-of-order rows dip below their neighbours. The watermark is drawn as a line of steps: the watermark in
force when each row arrived. A row on or below the line (``event time <= watermark``) is *late*, marked with
a red cross. In the micro-batch model the watermark only moves between batches (dotted lines mark them); in
the continuous model it moves after every row that raises the largest event time.
:func:`watermarks_at_arrival` computes that line from a script with the engine's own watermark code, for
either model; a continuous run's ``arrivals_at(sink)`` gives rows and watermarks as they reached a sink.

The others: :func:`windows_plot` (windows or sessions as bars over the events they hold, each labelled with
the batch that emitted it), :func:`join_plot` (each left row's time range, and the right rows that fell in
it), :func:`state_plot` (the state a step holds after each batch), :func:`bars_plot` (a count per batch,
or per subtask, side by side) and :func:`watermark_plot` (the watermark batch by batch, under each policy or
model, with the rows each batch emitted).

Every plot is a ``PlotFigure`` (:func:`plot_figure_class`): a matplotlib ``Figure`` that draws itself as a PNG wherever Python
objects are shown as images (``_repr_png_``: JupyterLab, a notebook saved with its outputs, any IPython
display), with or without pyplot, and that nothing else keeps: pyplot does not know it, so it is never shown
twice. :func:`save_png` writes one to a file (``make diagrams`` writes the tutorials' plots to
``diagrams/plots/``), :func:`png_bytes` gives its bytes, and :func:`ink` says how much of a PNG is drawn.

>>> script = [[{"ts": 5_000}, {"ts": 1_000}], [{"ts": 9_000}, {"ts": 2_000}]]
>>> watermarks_at_arrival(script, delay=2_000, model="microbatch")
[0, 0, 0, 0]
>>> watermarks_at_arrival(script, delay=2_000, model="continuous")
[None, 2999, 2999, 6999]
>>> figure = event_time_plot(script, watermarks_at_arrival(script, 2_000, "continuous"))
>>> [line.get_label() for line in figure.axes[0].get_lines()]  # a leading _ keeps it out of the legend
['watermark', '_batch boundary']
>>> png = figure._repr_png_(); png[:8], ink(png) > 0.02
(b'\\x89PNG\\r\\n\\x1a\\n', True)
"""

from __future__ import annotations

import functools
import io
import math
from pathlib import Path

from ministream.core.operator import StepContext
from ministream.core.results import BatchResult  # noqa: F401  (the examples build output batches)
from ministream.operators.watermark import WatermarkOperator
from ministream.time.clock import ClockStep
from ministream.time.ranges import TimeRange
from ministream.time.units import MAX_TIME, format_clock
from ministream.time.watermarks import MicroBatchWatermarks

MODELS = ("microbatch", "continuous")

DPI = 100
"""Pixels per inch of the PNGs: a plot 8 inches wide is 800 pixels, which fits a notebook or a page."""


def _figure(width: float, height: float):
    """A new :func:`plot_figure_class` figure of ``width`` by ``height`` inches, laid out so that labels fit."""
    return plot_figure_class()(figsize=(width, height), layout="constrained")


@functools.cache
def plot_figure_class():
    """The class of every figure this module draws: a matplotlib ``Figure`` that shows itself as a PNG
    wherever it is displayed (made on first use: matplotlib is imported only when a plot is drawn).

    >>> figure = plot_figure_class()(figsize=(2, 1))
    >>> type(figure).__name__, figure._repr_png_()[:4]
    ('PlotFigure', b'\\x89PNG')
    """
    from matplotlib.figure import Figure

    class PlotFigure(Figure):
        """A matplotlib Figure that shows itself as a PNG (``_repr_png_``) wherever it is displayed."""

        def _repr_png_(self) -> bytes:
            return png_bytes(self)

    return PlotFigure


def png_bytes(figure, dpi: int = DPI) -> bytes:
    """A figure drawn as PNG bytes, the same on every run (no date or software name inside).

    >>> png_bytes(bars_plot({"rows": [1, 2]}, xlabel="batch", ylabel="rows"))[:4]
    b'\\x89PNG'
    """
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi, metadata={"Software": None})
    return buffer.getvalue()


def save_png(figure, path, dpi: int = DPI) -> Path:
    """Write a figure to ``path`` as a PNG (its folder is made if needed); returns the path.

    >>> import tempfile; folder = tempfile.mkdtemp()
    >>> save_png(bars_plot({"rows": [1, 2]}, xlabel="batch", ylabel="rows"), folder + "/rows.png").name
    'rows.png'
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(figure, dpi))
    return path


def ink(png: bytes) -> float:
    """The share of a PNG's pixels that differ from its corner pixel (the background): 0.0 for a blank image.

    >>> ink(png_bytes(_figure(2, 1)))
    0.0
    >>> 0.01 < ink(png_bytes(bars_plot({"rows": [1, 2]}, xlabel="batch", ylabel="rows"))) < 0.5
    True
    """
    from matplotlib.image import imread

    pixels = imread(io.BytesIO(png), format="png")
    background = pixels[0, 0]
    differs = (abs(pixels - background) > 0.02).any(axis=-1)
    return float(differs.mean())


# -- event time against arrival ------------------------------------------------------------------------------------


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


def _minute(times) -> int:
    """The start of the minute the earliest of ``times`` falls in: plots count seconds from there."""
    return (min(times) // 60_000 * 60_000) if times else 0


def event_time_plot(
    script, watermarks: list, *, late: list[bool] | None = None, column: str = "ts", title: str | None = None
):
    """Event time against arrival order, with the watermark line and late rows marked; returns the figure.

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
    batches = _batches(script)
    rows = [row for batch in batches for row in batch]
    if len(watermarks) != len(rows):
        raise ValueError(f"one watermark per row: {len(rows)} rows, {len(watermarks)} watermarks")
    times = [row[column] for row in rows]
    base = _minute(times)

    def seconds(ms):
        if ms is None or ms >= MAX_TIME or ms < base - 60_000:  # none yet, the end, or Spark's first (the epoch)
            return math.nan
        return (ms - base) / 1000

    late = late_flags(rows, watermarks, column) if late is None else list(late)
    if len(late) != len(rows):
        raise ValueError(f"one late flag per row: {len(rows)} rows, {len(late)} flags")
    figure = _figure(8, 4.5)
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
    axes.legend(loc="best", fontsize=8)
    if title:
        axes.set_title(title)
    return figure


# -- windows and sessions ------------------------------------------------------------------------------------------


def windows_plot(
    script,
    batches,
    *,
    key: str = "key",
    late: list[bool] | None = None,
    watermarks: dict[str, int] | None = None,
    column: str = "ts",
    title: str | None = None,
):
    """Windows (or sessions) as bars over the events they hold, one lane per key; each bar is labelled with
    the batch that emitted it, late rows are red crosses. Returns the figure.

    >>> script = [[{"ts": 1_000, "key": "a"}, {"ts": 12_000, "key": "a"}]]
    >>> batches = [BatchResult(0, 0, [{"key": "a", "window_start": 0, "window_end": 10_000, "count": 1}])]
    >>> axes = windows_plot(script, batches).axes[0]
    >>> [text.get_text() for text in axes.texts], [label.get_text() for label in axes.get_yticklabels()]
    (['batch 0: count 1'], ['a'])

    Args:
        script: the events, batches of rows (or one list of rows).
        batches: the output, ``BatchResult``s whose rows have ``window_start``, ``window_end`` and ``key``.
        key: the key column, in events and output alike.
        late: one flag per event in arrival order: which to cross out (``lateness.dropped_flags``).
        watermarks: ``{label: watermark}`` drawn as dashed vertical lines (say ``{"WM_3": ...}``).
        column: the event-time column of the events.
        title: the figure's title.
    """
    rows = arrival_rows(script)
    windows = [(batch.batch_id, row) for batch in batches for row in batch.rows]
    keys = sorted({str(row[key]) for row in rows} | {str(row[key]) for _, row in windows})
    base = _minute([row[column] for row in rows])

    def seconds(ms):
        return (ms - base) / 1000

    figure = _figure(8, 1.2 + 0.7 * len(keys))
    axes = figure.add_subplot()
    drawn: dict[str, list[tuple[int, int, int]]] = {k: [] for k in keys}  # {key: [(start, end, level)]}
    for batch_id, row in windows:
        lane = str(row[key])
        start, end = row["window_start"], row["window_end"]
        taken = {level for s, e, level in drawn[lane] if s < end and start < e}  # bars it would overlap
        level = min(set(range(len(taken) + 1)) - taken)  # the lowest free level
        drawn[lane].append((start, end, level))
        y = keys.index(lane) + 0.12 + 0.22 * level
        axes.barh(
            y,
            seconds(end) - seconds(start),
            left=seconds(start),
            height=0.18,
            color="tab:green",
            alpha=0.35,
            edgecolor="darkgreen",
            linewidth=0.8,
        )
        values = [f"{name} {row[name]:g}" for name in row if name not in (key, "window_start", "window_end")]
        label = f"batch {batch_id}" + (f": {values[0]}" if values else "")
        axes.text(seconds(start) + 0.2, y, label, va="center", fontsize=8)
    late = [False] * len(rows) if late is None else list(late)
    for is_late in (False, True):
        points = [(seconds(r[column]), keys.index(str(r[key]))) for r, flag in zip(rows, late) if flag == is_late]
        if points:
            axes.scatter(
                *zip(*points),
                color="tab:red" if is_late else "black",
                marker="x" if is_late else "o",
                s=60 if is_late else 18,
                zorder=3,
                label="late row" if is_late else "event",
            )
    for label, watermark in (watermarks or {}).items():
        axes.axvline(seconds(watermark), color="tab:orange", linestyle="--", linewidth=1)
        axes.text(seconds(watermark), len(keys) - 0.35, f" {label}", color="tab:orange", fontsize=8)
    axes.use_sticky_edges = False  # a margin on both sides, even where a bar starts
    axes.autoscale_view()
    axes.set_yticks(range(len(keys)), keys)
    axes.set_ylim(-0.5, len(keys) - 0.2)
    axes.set_xlabel(f"event time (seconds after {format_clock(base)})")
    axes.set_ylabel(key)
    axes.legend(loc="lower right", fontsize=8)
    if title:
        axes.set_title(title)
    return figure


# -- joins -------------------------------------------------------------------------------------------------------


def join_plot(
    script: dict,
    batches,
    *,
    left: str,
    right: str,
    key: str,
    between: TimeRange,
    left_key: str,
    title: str | None = None,
):
    """A time-range join on one picture: each left row with the range of right event times it matches
    (``left time + lower`` to ``left time + upper``), the right rows below, and a line for every joined pair.
    Returns the figure.

    >>> script = {"ads": [[{"ts": 1_000, "ad": "a"}]], "clicks": [[{"ts": 5_000, "ad": "a"}, {"ts": 9_000, "ad": "b"}]]}
    >>> out = [BatchResult(0, 0, [{"ad_time": 1_000, "click_time": 5_000, "ad": "a"}])]
    >>> between = TimeRange("ad_time", "click_time", lower=0, upper=20_000)
    >>> axes = join_plot(script, out, left="ads", right="clicks", key="ad", between=between, left_key="ad").axes[0]
    >>> len(axes.patches), len(axes.get_lines())  # one range, one joined pair
    (1, 1)

    Args:
        script: ``{input: batches}`` with both inputs; their event time is ``ts``.
        batches: the join's output, ``BatchResult``s.
        left, right: the two inputs' names.
        key: the input column the inputs are joined on.
        between: the join's time range (``JoinSpec.between``): its columns name each side's event time in
            the output, its bounds say which right rows a left row matches.
        left_key: the output column holding the left row's key (a left outer join's null-padded rows have a
            left key and no right time).
        title: the figure's title (by default, the range).
    """
    lower, upper = between.lower or 0, between.upper or 0
    left_time, right_time = between.left, between.right
    left_rows, right_rows = arrival_rows(script[left]), arrival_rows(script[right])
    keys = sorted({str(row[key]) for row in left_rows + right_rows})
    base = _minute([row["ts"] for row in left_rows + right_rows])

    def seconds(ms):
        return (ms - base) / 1000

    figure = _figure(8, 1.4 + 0.8 * len(keys))
    axes = figure.add_subplot()

    def lane(row, side: str) -> float:
        return keys.index(str(row[key])) + (0.18 if side == left else -0.18)

    for row in left_rows:
        axes.barh(
            lane(row, left),
            (upper - lower) / 1000,
            left=seconds(row["ts"] + lower),
            height=0.14,
            color="tab:blue",
            alpha=0.2,
        )
    for side, rows, marker in ((left, left_rows, "s"), (right, right_rows, "o")):
        axes.scatter(
            [seconds(row["ts"]) for row in rows],
            [lane(row, side) for row in rows],
            marker=marker,
            s=28,
            zorder=3,
            color="tab:blue" if side == left else "tab:purple",
            label=f"{side} row" + (f" (bar: the {right} it can match)" if side == left else ""),
        )
    unmatched, pairs = [], 0
    for batch in batches:
        for row in batch.rows:
            if row.get(right_time) is None:  # an outer join's null-padded row: no partner came in time
                unmatched.append((seconds(row[left_time]), keys.index(str(row[left_key])) + 0.18))
                continue
            y = keys.index(str(row[left_key]))
            label = "_joined pair" if pairs else "joined pair"  # one legend entry for them all
            axes.plot(
                [seconds(row[left_time]), seconds(row[right_time])],
                [y + 0.18, y - 0.18],
                color="tab:green",
                label=label,
            )
            pairs += 1
    if unmatched:
        axes.scatter(
            *zip(*unmatched),
            marker="o",
            s=120,
            facecolors="none",
            edgecolors="tab:red",
            zorder=4,
            label="emitted with nulls (no match)",
        )
    axes.use_sticky_edges = False  # a margin on both sides, even where a bar starts
    axes.autoscale_view()
    axes.set_yticks(range(len(keys)), keys)
    axes.set_ylim(-0.6, len(keys) - 0.3)
    axes.set_xlabel(f"event time (seconds after {format_clock(base)})")
    axes.set_ylabel(f"{key} ({left} above, {right} below)")
    axes.legend(loc="upper left", fontsize=8, ncols=2)
    axes.set_title(title or f"{left} join {right}: {between.describe()}")
    return figure


# -- counts per batch --------------------------------------------------------------------------------------------


def state_sizes(run) -> dict[str, list[int]]:
    """The state each keyed step held after every batch, from a traced run: ``{step: [size per batch]}``.

    >>> from ministream.core.trace import Trace
    >>> class TracedRun: trace = Trace()
    >>> TracedRun.trace.begin_batch(0, None); TracedRun.trace.end_batch({"totals": 2})
    >>> state_sizes(TracedRun)
    {'totals': [2]}
    """
    found: dict[str, list[int]] = {}
    summaries = run.trace.batches
    for summary in summaries:
        for step in summary.state_sizes:
            found.setdefault(step, [])
    for step, sizes in found.items():
        sizes.extend(summary.state_sizes.get(step, 0) for summary in summaries)
    return found


def state_plot(sizes: dict[str, list[int]], *, ylabel: str = "entries in state", title: str | None = None):
    """The state of each step (or each side of a join) after every batch, as steps. Returns the figure.

    >>> axes = state_plot({"per_window": [2, 3, 4, 2, 1]}).axes[0]
    >>> axes.get_lines()[0].get_ydata().tolist(), axes.get_xlabel()
    ([2, 3, 4, 2, 1], 'batch')

    Args:
        sizes: ``{label: [size after batch 0, after batch 1, ...]}`` (:func:`state_sizes`, or
            ``stream_join.state_sizes_by_side``).
        ylabel: what the sizes count.
        title: the figure's title.
    """
    figure = _figure(6, 3)
    axes = figure.add_subplot()
    for label, values in sizes.items():
        axes.plot(range(len(values)), values, drawstyle="steps-mid", marker="o", label=label)
    length = max((len(values) for values in sizes.values()), default=0)
    axes.set_xticks(range(length))
    axes.set_ylim(bottom=0)
    axes.set_xlabel("batch")
    axes.set_ylabel(ylabel)
    axes.legend(fontsize=8)
    if title:
        axes.set_title(title)
    return figure


def bars_plot(values: dict[str, list[int]], *, xlabel: str, ylabel: str, title: str | None = None):
    """Counts side by side: one bar per label at each position (rows per batch in each output mode, keys per
    subtask before and after a rescale...). Returns the figure.

    >>> axes = bars_plot({"append": [0, 2], "update": [1, 2]}, xlabel="batch", ylabel="rows emitted").axes[0]
    >>> [int(patch.get_height()) for patch in axes.patches]
    [0, 2, 1, 2]

    Args:
        values: ``{label: [count at position 0, at 1, ...]}``.
        xlabel, ylabel: the axes' names.
        title: the figure's title.
    """
    figure = _figure(6, 3)
    axes = figure.add_subplot()
    width = 0.8 / max(len(values), 1)
    for i, (label, counts) in enumerate(values.items()):
        offset = (i - (len(values) - 1) / 2) * width
        axes.bar([x + offset for x in range(len(counts))], counts, width=width, label=label)
    length = max((len(counts) for counts in values.values()), default=0)
    axes.set_xticks(range(length))
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.legend(fontsize=8)
    if title:
        axes.set_title(title)
    return figure


# -- the watermark batch by batch --------------------------------------------------------------------------------


def watermark_plot(
    watermarks: dict[str, list],
    emitted: dict[str, list[tuple[int, int]]] | None = None,
    *,
    title: str | None = None,
):
    """The watermark of each batch as steps, one line per label (a policy, a model...), and the event time of
    rows as points at the batch that emitted them: a row is emitted once the watermark reaches it. Returns the
    figure.

    A watermark that has not moved yet (``None``, or 0: the epoch, Spark's first) is left out of the line.

    >>> axes = watermark_plot({"min": [0, 0, 5_000, 12_000]}, {"closed": [(3, 4_000)]}).axes[0]
    >>> axes.get_lines()[0].get_ydata().tolist()[2:], axes.collections[0].get_offsets().tolist()
    ([5.0, 12.0], [[3.0, 4.0]])
    >>> axes.get_lines()[0].get_ydata().tolist()[0]  # batch 0: no watermark yet
    nan

    Args:
        watermarks: ``{label: [watermark of batch 0, of batch 1, ...]}`` in ms (``BatchResult.watermark``).
        emitted: ``{label: [(batch id, event time), ...]}``: rows drawn as points, one marker per label.
        title: the figure's title.
    """
    emitted = emitted or {}
    times = [mark for marks in watermarks.values() for mark in marks if mark] + [
        time for points in emitted.values() for _, time in points
    ]
    base = _minute(times)

    def seconds(ms):
        if not ms or ms >= MAX_TIME or ms < base - 60_000:  # none yet, the end, or Spark's first (the epoch)
            return math.nan
        return (ms - base) / 1000

    figure = _figure(6, 3)
    axes = figure.add_subplot()
    for label, marks in watermarks.items():
        axes.plot(range(len(marks)), [seconds(mark) for mark in marks], drawstyle="steps-post", marker=".", label=label)
    for (label, points), marker in zip(emitted.items(), "ox^sv"):
        axes.scatter(
            [batch for batch, _ in points], [seconds(time) for _, time in points], marker=marker, zorder=3, label=label
        )
    length = max((len(marks) for marks in watermarks.values()), default=0)
    axes.set_xticks(range(length))
    axes.set_xlabel("batch")
    axes.yaxis.set_major_formatter(lambda value, _: format_clock(base + round(value * 1000)))  # clock times
    axes.set_ylabel("event time")
    axes.legend(fontsize=8)
    if title:
        axes.set_title(title)
    return figure
