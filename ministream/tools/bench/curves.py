"""Flat cost: each operator's events per second as the run grows and as its batches grow.

A stream processor should cost the same per event however long it runs and however the events are cut into
batches: a cost that grows with the state kept, or with the rows of a batch, shows a structure that is
scanned where it should be searched. Two curves per operator (``engine.OPERATORS``):

- **run length**: 100k, 1M and 10M events, in batches of 10,000;
- **batch size**: 1M events in batches of 1,000, 10,000 and 100,000.

Each point is the engine's CPU time (``workload.best_cpu_seconds``, one run: the longest take minutes);
the *spread* of a curve is its fastest point over its slowest, and the target is at most 1.5.
:func:`scaling_plot` draws both curves of every operator.

>>> spread({100_000: 900_000, 1_000_000: 600_000})
1.5
"""

from __future__ import annotations

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.workload import best_cpu_seconds, in_batches, make_events, rate
from ministream.tools.plots import plot_figure_class

RUN_LENGTHS = (100_000, 1_000_000, 10_000_000)
BATCH_SIZES = (1_000, 10_000, 100_000)
BATCH_SIZE = 10_000
"""The batch size of the run-length curve."""
CURVE_EVENTS = 1_000_000
"""The run length of the batch-size curve."""


def spread(curve: dict) -> float:
    """The fastest point of a curve over its slowest (1.0 is flat)."""
    return round(max(curve.values()) / min(curve.values()), 2)


def events_per_second(name: str, events: list[dict], batch_size: int) -> int:
    """One operator's engine throughput on ``events`` cut into batches of ``batch_size``."""
    benched = OPERATORS[name]
    data = benched.inputs(in_batches(events, -(-len(events) // batch_size)))

    def run(flow):
        run_microbatch(flow, output_mode=benched.output_mode)

    [seconds] = best_cpu_seconds([(run, lambda: benched.build(data))], repeat=1)
    return rate(len(events), seconds)


def bench_curves(
    figures: dict,
    say,
    operators=None,
    run_lengths=RUN_LENGTHS,
    batch_sizes=BATCH_SIZES,
) -> dict:
    """Both curves of each operator (every one of ``OPERATORS`` unless named): ``{operator: {"run length":
    {events: events/s}, "batch size": {size: events/s}}}``; the spread of each goes to ``figures``
    (``<operator>_spread_run_length``, ``<operator>_spread_batch_size``)."""
    names = list(OPERATORS) if operators is None else list(operators)
    curves: dict = {name: {"run length": {}, "batch size": {}} for name in names}
    for count in sorted(set(run_lengths) | {CURVE_EVENTS}):
        events = make_events(count)
        for name in names:
            if count in run_lengths:
                curves[name]["run length"][count] = events_per_second(name, events, BATCH_SIZE)
                say(f"{name}, {count:,} events: {curves[name]['run length'][count]:,} events/s")
            if count == CURVE_EVENTS:
                for size in batch_sizes:
                    curves[name]["batch size"][size] = events_per_second(name, events, size)
                    say(f"{name}, batches of {size:,}: {curves[name]['batch size'][size]:,} events/s")
        del events
    for name, by_axis in curves.items():
        for axis, curve in by_axis.items():
            if curve:
                figures[f"{name}_spread_{axis.replace(' ', '_')}"] = spread(curve)
    figures["curves"] = curves
    return curves


def scaling_plot(curves: dict):
    """Events per second of each operator against the run's length and against the batch size, log scales.

    >>> figure = scaling_plot({"dedup": {"run length": {1e5: 9e5, 1e6: 8e5}, "batch size": {1e3: 7e5, 1e4: 8e5}}})
    >>> [axes.get_xlabel() for axes in figure.axes]
    ['events in the run (batches of 10,000)', 'events per batch (1,000,000 events)']
    """
    figure = plot_figure_class()(figsize=(10, 4.5), layout="constrained")
    run_axes, batch_axes = figure.subplots(1, 2, sharey=True)
    for name, by_axis in curves.items():
        for axes, axis in ((run_axes, "run length"), (batch_axes, "batch size")):
            curve = {int(x): y for x, y in by_axis[axis].items()}
            if curve:
                xs = sorted(curve)
                axes.plot(xs, [curve[x] for x in xs], marker="o", label=name)
    run_axes.set_xlabel(f"events in the run (batches of {BATCH_SIZE:,})")
    batch_axes.set_xlabel(f"events per batch ({CURVE_EVENTS:,} events)")
    run_axes.set_ylabel("events per second (CPU time)")
    for axes in (run_axes, batch_axes):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.grid(True, which="both", alpha=0.3)
    batch_axes.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return figure
