"""Flat cost: each operator's events per second as the run grows and as its batches grow.

A stream processor should cost the same per event however long it runs and however the events are cut into
batches: a cost that grows with the state kept, or with the rows of a batch, shows a structure that is
scanned where it should be searched. Two curves per operator (``engine.OPERATORS``), their sizes set by the
longest run, ``curve_max`` (``bench --curve-max``, 10,000,000 by default):

- **run length**: ``curve_max`` / 100, / 10 and itself (100k, 1M and 10M events), in batches of
  ``curve_max`` / 1,000 (10,000);
- **batch size**: ``curve_max`` / 10 events (1M) in batches of ``curve_max`` / 10,000, / 1,000 and / 100
  (1,000, 10,000 and 100,000 events).

The events are made batch by batch as the run reads them (``workload.EventBatches``, the time spent making
them taken out) and the output is counted, not kept (``workload.CountingSink``): a run of 10 million events
holds one batch of events and the state the watermark leaves, so its memory stays bounded. The process's
resident memory is sampled at every batch, and its peak during each run of the run-length curve is reported
beside its rate. Each point is the engine's CPU time of one run (the longest take minutes); the *spread* of a
curve is its fastest point over its slowest, and the target is at most 1.5. :func:`scaling_plot` draws both
curves of every operator.

>>> spread({100_000: 900_000, 1_000_000: 600_000})
1.5
>>> curve_points(10_000_000)
CurvePoints(run_lengths=(100000, 1000000, 10000000), run_batch=10000, batch_events=1000000, batch_sizes=(1000, 10000, 100000))
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.workload import KEYS, CountingSink, EventBatches, best_cpu_seconds, rate
from ministream.tools.plots import plot_figure_class

CURVE_MAX = 10_000_000
"""The longest run of the run-length curve; every other size follows from it (:func:`curve_points`)."""

MARKERS = "osD^v<>phX*d"
"""One marker per operator in the plot."""

SPREAD_TARGET = 1.5
"""A curve is flat enough when its fastest point is at most 1.5 times its slowest."""


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


def bench_curves(
    figures: dict,
    say,
    operators=None,
    curve_max: int = CURVE_MAX,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Both curves of each operator (every one of ``OPERATORS`` unless named): ``{operator: {"run length":
    {events: events/s}, "batch size": {size: events/s}, "memory": {events: peak resident MiB}}}``, in
    ``figures["curves"]`` with their sizes (``figures["curve_points"]``); the spread of each curve goes to
    ``figures`` (``<operator>_spread_run_length``, ``<operator>_spread_batch_size``), and what the longest
    run added to the process's peak memory over the shortest (``<operator>_curve_memory_growth_mib``).
    ``progress(text)`` is told which point runs."""
    names = list(OPERATORS) if operators is None else list(operators)
    points = curve_points(curve_max)
    curves: dict = {name: {"run length": {}, "batch size": {}, "memory": {}} for name in names}
    for name in names:
        for axis, runs in (
            ("run length", [(count, points.run_batch) for count in points.run_lengths]),
            ("batch size", [(points.batch_events, size) for size in points.batch_sizes]),
        ):
            for count, size in runs:
                if progress is not None:
                    progress(f"curves {name}: {count:,} events in batches of {size:,}")
                point = measure(name, count, size)
                curves[name][axis][count if axis == "run length" else size] = point["events_per_s"]
                if axis == "run length":
                    curves[name]["memory"][count] = point["peak_rss_mib"]
                say(
                    f"{name}, {count:,} events in batches of {size:,}: {point['events_per_s']:,} events/s, "
                    f"{point['rows']:,} rows, peak resident memory {point['peak_rss_mib']:,} MiB"
                )
        for axis in ("run length", "batch size"):
            figures[f"{name}_spread_{axis.replace(' ', '_')}"] = spread(curves[name][axis])
        memory = curves[name]["memory"]
        figures[f"{name}_curve_memory_growth_mib"] = memory[max(memory)] - memory[min(memory)]
    figures["curves"] = curves
    figures["curve_points"] = attrs.asdict(points)
    return curves


def scaling_plot(curves: dict, points: CurvePoints | None = None):
    """Events per second of each operator against the run's length and against the batch size, log scales.

    >>> figure = scaling_plot({"dedup": {"run length": {1e5: 9e5, 1e6: 8e5}, "batch size": {1e3: 7e5, 1e4: 8e5}}})
    >>> [axes.get_xlabel() for axes in figure.axes]
    ['events in the run (batches of 10,000)', 'events per batch (1,000,000 events)']
    """
    points = points or curve_points()
    figure = plot_figure_class()(figsize=(10, 4.5), layout="constrained")
    run_axes, batch_axes = figure.subplots(1, 2, sharey=True)
    for index, (name, by_axis) in enumerate(curves.items()):
        # matplotlib's 10 colours come round again from the 11th operator: its marker and line tell it apart
        style = {"marker": MARKERS[index % len(MARKERS)], "linestyle": "-" if index < 10 else "--"}
        for axes, axis in ((run_axes, "run length"), (batch_axes, "batch size")):
            curve = {int(x): y for x, y in by_axis[axis].items()}
            if curve:
                xs = sorted(curve)
                axes.plot(xs, [curve[x] for x in xs], label=name, **style)
    run_axes.set_xlabel(f"events in the run (batches of {points.run_batch:,})")
    batch_axes.set_xlabel(f"events per batch ({points.batch_events:,} events)")
    run_axes.set_ylabel("events per second (CPU time)")
    for axes in (run_axes, batch_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
    batch_axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure
