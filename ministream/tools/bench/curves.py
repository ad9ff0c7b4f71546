"""Flat cost: each operator's events per second as the run grows and as its batches grow, beside its floor's.

A stream processor should cost the same per event however long it runs and however the events are cut into
batches: a cost that grows with the state kept, or with the rows of a batch, shows a structure that is
scanned where it should be searched. Two curves per operator (``engine.OPERATORS``), their sizes set by the
longest run, ``curve_max`` (``bench --curve-max``, 10,000,000 by default):

- **run length**: ``curve_max`` / 100, / 10 and itself (100k, 1M and 10M events), in batches of
  ``curve_max`` / 1,000 (10,000);
- **batch size**: ``curve_max`` / 10 events (1M) in batches of ``curve_max`` / 10,000, / 1,000 and / 100
  (1,000, 10,000 and 100,000 events).

The run-length curve's events are made batch by batch as the run reads them (``workload.EventBatches``, the
time spent making them taken out) and the output is counted, not kept (``workload.CountingSink``): a run of
10 million events holds one batch of events and the state the watermark leaves, so its memory stays bounded.
The process's resident memory is sampled at every batch, and its peak during each run is reported beside its
rate.

The batch-size curve is measured beside the operator's *floor* (``floors.py``), on the same events in memory
(made once, after every operator's run-length curve, whose resident memory they would swell), the engine and
the floor timed in turns and checked to give the same rows, batch for batch: the floor is not
flat either, since the work per event depends on the batch (an update-mode count emits a row per key changed
in each batch, so a smaller batch emits more rows per event; a process function sets a timer per key and
batch). Each point gives both rates, their ratio and the output rows per event; the floor's spread says how
much of the engine's is the work the batching itself imposes.

Each point is CPU time of one run (the longest take minutes); the *spread* of a curve is its fastest point
over its slowest, and the target is at most 1.5; beside it, the engine's batch-size spread over its floor's
(within 1.5 when the engine adds little to what the batching costs). :func:`scaling_plot` draws both curves
of every operator, and the floor's batch-size curve dashed.

>>> spread({100_000: 900_000, 1_000_000: 600_000})
1.5
>>> curve_points(10_000_000)
CurvePoints(run_lengths=(100000, 1000000, 10000000), run_batch=10000, batch_events=1000000, batch_sizes=(1000, 10000, 100000))
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench import floors
from ministream.tools.bench.engine import OPERATORS, load_average
from ministream.tools.bench.workload import (
    KEYS,
    CountingSink,
    EventBatches,
    best_cpu_seconds,
    in_batches,
    make_events,
    rate,
)
from ministream.tools.plots import plot_figure_class

CURVE_MAX = 10_000_000
"""The longest run of the run-length curve; every other size follows from it (:func:`curve_points`)."""

MARKERS = "osD^v<>phX*d"
"""One marker per operator in the plot."""

COLOURS = (
    *("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"),
    *("#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#b8860b"),
)
"""One colour per operator in the plot (matplotlib's ten, then black and dark gold): an operator's floor is
drawn dashed in its colour."""

SPREAD_TARGET = 1.5
"""A curve is flat enough when its fastest point is at most 1.5 times its slowest."""

OVER_FLOOR_TARGET = 1.5
"""The engine's batch-size spread is within what the batching imposes when it is at most 1.5 times its
floor's."""


@attrs.frozen
class CurvePoints:
    """The sizes of both curves: the run lengths and their batch size; the batch sizes and their run length."""

    run_lengths: tuple[int, ...]
    run_batch: int
    batch_events: int
    batch_sizes: tuple[int, ...]


def curve_points(curve_max: int = CURVE_MAX) -> CurvePoints:
    """The curves' sizes for a longest run of ``curve_max`` events (see the module's docstring)."""
    return CurvePoints(
        (curve_max // 100, curve_max // 10, curve_max),
        max(1, curve_max // 1_000),
        curve_max // 10,
        tuple(max(1, curve_max // n) for n in (10_000, 1_000, 100)),
    )


def spread(curve: dict) -> float:
    """The fastest point of a curve over its slowest (1.0 is flat)."""
    return round(max(curve.values()) / min(curve.values()), 2)


def measure(name: str, count: int, batch_size: int, keys: int = KEYS) -> dict:
    """One operator's engine throughput on ``count`` of the bench's events (over ``keys`` keys) made in
    batches of ``batch_size``
    (CPU time, the making of the events taken out), the rows it wrote, and the process's peak resident memory
    during the run: ``{"events_per_s", "rows", "peak_rss_mib"}``."""
    benched = OPERATORS[name]
    sink = CountingSink()
    made: list[EventBatches] = []

    def run(flow):
        run_microbatch(flow, output_mode=benched.output_mode)

    def build():
        made[:] = [EventBatches(count, batch_size, keys)]
        return benched.build(benched.inputs(made[0]), sink=sink)

    [seconds] = best_cpu_seconds([(run, build)], repeat=1)
    return {
        "events_per_s": rate(count, seconds - made[0].making_seconds),
        "rows": sink.rows_written,
        "peak_rss_mib": round(made[0].peak_rss_bytes / 2**20),
    }


def measure_with_floor(
    name: str, events: list[dict], batch_size: int, announce=lambda text: None, repeat: int = 2
) -> dict:
    """One operator and its floor on ``events`` (in memory) in batches of ``batch_size``, timed in turns (CPU
    time, the best of ``repeat`` runs each: ``best_cpu_seconds``) and checked to give the same rows batch for batch:
    ``{"events_per_s", "floor_events_per_s", "ratio", "rows", "rows_per_event", "load"}``. ``announce(text)``
    is told which of the two is about to run, and which of its runs (before its clock starts). A run that gives other rows than its
    floor raises: its figure would mean nothing."""
    benched = OPERATORS[name]
    data = benched.inputs(in_batches(events, -(-len(events) // batch_size)))
    results: dict = {}

    def engine(flow):
        results["engine"] = run_microbatch(flow, output_mode=benched.output_mode)

    def floor(data):
        results["floor"] = benched.floor(data)

    runs = {"engine": 0, "floor": 0}

    def told(which: str) -> None:
        runs[which] += 1
        announce(f"{which}, run {runs[which]} of {repeat}" if repeat > 1 else which)

    def engine_input():
        told("engine")
        return benched.build(data)

    def floor_input():
        told("floor")
        return data

    load = load_average()
    engine_s, floor_s = best_cpu_seconds([(engine, engine_input), (floor, floor_input)], repeat=repeat)
    emitted = [batch.rows for batch in results["engine"].output()]
    if not floors.same_rows(emitted, results["floor"]):
        raise AssertionError(f"{name}, batches of {batch_size:,}: the engine and its floor gave different rows")
    rows = sum(map(len, emitted))
    return {
        "events_per_s": rate(len(events), engine_s),
        "floor_events_per_s": rate(len(events), floor_s),
        "ratio": round(floor_s / engine_s, 3),
        "rows": rows,
        "rows_per_event": round(rows / len(events), 4),
        "load": round((load + load_average()) / 2, 2),
    }


def bench_curves(
    figures: dict,
    say,
    operators=None,
    curve_max: int = CURVE_MAX,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Both curves of each operator (every one of ``OPERATORS`` unless named): ``{operator: {"run length":
    {events: events/s}, "batch size": {size: events/s}, "memory": {events: peak resident MiB}, "floor batch
    size": {size: the floor's events/s}, "ratio to floor": {size: engine/floor}, "rows per event": {size:
    output rows per event}}}``, in ``figures["curves"]`` with their sizes (``figures["curve_points"]``); the
    spread of each curve goes to ``figures`` (``<operator>_spread_run_length``,
    ``<operator>_spread_batch_size``, ``<operator>_floor_spread_batch_size``), with the engine's batch-size
    spread over its floor's (``<operator>_spread_batch_size_over_floor``) and what the longest run added to
    the process's peak memory over the shortest (``<operator>_curve_memory_growth_mib``). ``progress(text)``
    is told which point runs, and whether the engine or the floor."""
    names = list(OPERATORS) if operators is None else list(operators)
    points = curve_points(curve_max)
    axes = ("run length", "batch size", "memory", "floor batch size", "ratio to floor", "rows per event")
    curves: dict = {name: {axis: {} for axis in axes} for name in names}
    for name in names:
        for count in points.run_lengths:
            if progress is not None:
                progress(f"curves {name}: {count:,} events in batches of {points.run_batch:,}")
            point = measure(name, count, points.run_batch)
            curves[name]["run length"][count] = point["events_per_s"]
            curves[name]["memory"][count] = point["peak_rss_mib"]
            say(
                f"{name}, {count:,} events in batches of {points.run_batch:,}: {point['events_per_s']:,} events/s, "
                f"{point['rows']:,} rows, peak resident memory {point['peak_rss_mib']:,} MiB"
            )
    # the batch-size curves' events, in memory: made after every run-length curve, whose memory they would swell
    batch_events = make_events(points.batch_events) if names else []
    for name in names:
        for size in points.batch_sizes:

            def announce(which: str, size: int = size, name: str = name) -> None:
                if progress is not None:
                    progress(f"curves {name}: {points.batch_events:,} events in batches of {size:,}, {which}")

            point = measure_with_floor(name, batch_events, size, announce)
            curve = curves[name]
            curve["batch size"][size] = point["events_per_s"]
            curve["floor batch size"][size] = point["floor_events_per_s"]
            curve["ratio to floor"][size] = point["ratio"]
            curve["rows per event"][size] = point["rows_per_event"]
            say(
                f"{name}, {points.batch_events:,} events in batches of {size:,}: {point['events_per_s']:,} events/s, "
                f"floor {point['floor_events_per_s']:,} events/s, ratio {point['ratio']}, {point['rows']:,} rows "
                f"({point['rows_per_event']} per event; the floor's rows; load {point['load']})"
            )
    for name in names:
        for axis in ("run length", "batch size"):
            figures[f"{name}_spread_{axis.replace(' ', '_')}"] = spread(curves[name][axis])
        engine_spread = figures[f"{name}_spread_batch_size"]
        floor_spread = figures[f"{name}_floor_spread_batch_size"] = spread(curves[name]["floor batch size"])
        figures[f"{name}_spread_batch_size_over_floor"] = round(engine_spread / floor_spread, 2)
        memory = curves[name]["memory"]
        figures[f"{name}_curve_memory_growth_mib"] = memory[max(memory)] - memory[min(memory)]
    figures["curves"] = curves
    figures["curve_points"] = attrs.asdict(points)
    return curves


def scaling_plot(curves: dict, points: CurvePoints | None = None):
    """Events per second of each operator against the run's length and against the batch size, log scales;
    the floor's batch-size curve (when measured) dashed, in the operator's colour.

    >>> figure = scaling_plot({"dedup": {"run length": {1e5: 9e5, 1e6: 8e5}, "batch size": {1e3: 7e5, 1e4: 8e5},
    ...                                  "floor batch size": {1e3: 9e5, 1e4: 1e6}}})
    >>> [axes.get_xlabel() for axes in figure.axes]
    ['events in the run (batches of 10,000)', 'events per batch (1,000,000 events)']
    >>> [(line.get_label(), line.get_linestyle()) for line in figure.axes[1].get_lines()]
    [('dedup', '-'), ('_dedup floor', '--'), ('the floor (dashed)', '--')]
    """
    points = points or curve_points()
    figure = plot_figure_class()(figsize=(11, 5.5), layout="constrained")
    run_axes, batch_axes = figure.subplots(1, 2, sharey=True)
    floors_drawn = False
    for index, (name, by_axis) in enumerate(curves.items()):
        colour, marker = COLOURS[index % len(COLOURS)], MARKERS[index % len(MARKERS)]
        for axes, axis, style in (
            (run_axes, "run length", {"label": name, "linestyle": "-"}),
            (batch_axes, "batch size", {"label": name, "linestyle": "-"}),
            (batch_axes, "floor batch size", {"label": f"_{name} floor", "linestyle": "--", "fillstyle": "none"}),
        ):
            curve = {int(x): y for x, y in by_axis.get(axis, {}).items()}
            if curve:
                xs = sorted(curve)
                axes.plot(xs, [curve[x] for x in xs], color=colour, marker=marker, **style)
                floors_drawn = floors_drawn or axis == "floor batch size"
    if floors_drawn:  # one legend entry says what a dashed line is (a leading _ keeps each floor out of it)
        batch_axes.plot([], [], color="grey", linestyle="--", label="the floor (dashed)")
    run_axes.set_xlabel(f"events in the run (batches of {points.run_batch:,})")
    batch_axes.set_xlabel(f"events per batch ({points.batch_events:,} events)")
    run_axes.set_ylabel("events per second (CPU time)")
    for axes in (run_axes, batch_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
    batch_axes.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure
