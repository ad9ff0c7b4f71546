"""The tutorials' plots: each lesson's own events, and what the engine did with them, drawn by the package.

Every tutorial shows at least one plot of its lesson's default events (``tools/plots.py`` draws them): event
time against arrival with the watermark, window or session extents, join ranges, the state a step holds
after each batch, or rows counted batch by batch. :data:`PICTURES` lists them; ``make diagrams`` (through
:func:`write_pictures`) writes each one to ``diagrams/plots/LESSON.NAME.png``, where the tutorial's Markdown
links it, so the images always come from the code the tutorial describes.

>>> [picture.file for picture in PICTURES if picture.lesson == "tumbling-window"]
['tumbling-window.arrivals.png', 'tumbling-window.windows.png']
>>> picture = next(p for p in PICTURES if p.file == "running-aggregation.state.png")
>>> type(picture.draw()).__name__
'PlotFigure'
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from ministream.core.steps import JoinSpec, WatermarkSpec
from ministream.lessons import get_lesson
from ministream.lessons.changelog import crash_at_every_record
from ministream.lessons.microbatch_vs_continuous import late_by_model
from ministream.lessons.operator_state import written_or_buffered
from ministream.lessons.rescale import keys_moved
from ministream.operators.stream_join import state_sizes_by_side
from ministream.time.lateness import dropped_flags
from ministream.time.units import format_duration
from ministream.tools.plots import (
    bars_plot,
    event_time_plot,
    join_plot,
    save_png,
    state_plot,
    state_sizes,
    watermarks_at_arrival,
    windows_plot,
)

FOLDER = "plots"
"""Where the plots go, inside the diagrams folder: ``diagrams/plots/``."""


@attrs.frozen
class Picture:
    """One plot of a tutorial: its lesson, its name, what it shows (the image's alt text), and how to draw it.

    >>> Picture("tumbling-window", "arrivals", "events and the watermark", lambda: None).file
    'tumbling-window.arrivals.png'
    """

    lesson: str
    name: str
    caption: str
    draw: Callable

    @property
    def file(self) -> str:
        """The image's file name, in ``diagrams/plots/``."""
        return f"{self.lesson}.{self.name}.png"


def _flow(lesson, params=None):
    return lesson.pipeline(lesson.default_script, lesson.resolve_params(params))


def _delay(lesson, params=None) -> int:
    """The delay of the lesson's (first) watermark step, read from its plan."""
    return next(step.spec.delay for step in _flow(lesson, params).steps if isinstance(step.spec, WatermarkSpec))


def arrivals(name: str, params: dict | None = None, model: str = "microbatch"):
    """The lesson's events against their arrival, with the watermark each arrived under; late rows are the ones
    its window step dropped (``lateness.dropped_flags``)."""
    lesson = get_lesson(name)
    script = lesson.default_script
    run = lesson.run(params=params)
    delay = _delay(lesson, params)
    title = f"{name}: events and the watermark ({format_duration(delay)} behind), {model}"
    late = dropped_flags(script, run.late_rows()) if model == "microbatch" else late_by_model()[model]
    return event_time_plot(script, watermarks_at_arrival(script, delay, model), late=late, title=title)


def windows(name: str, params: dict | None = None):
    """The lesson's windows or sessions over its events, each labelled with the batch that emitted it."""
    lesson = get_lesson(name)
    run = lesson.run(params=params)
    late = dropped_flags(lesson.default_script, run.late_rows())
    return windows_plot(lesson.default_script, run.output(), late=late, title=f"{name}: what each batch emitted")


def join(name: str, params: dict | None = None):
    """The lesson's impressions with the range of clicks each one matches, its clicks, and the pairs."""
    lesson = get_lesson(name)
    spec = next(step.spec for step in _flow(lesson, params).steps if isinstance(step.spec, JoinSpec))
    left, right = lesson.inputs
    run = lesson.run(params=params)
    return join_plot(
        lesson.default_script,
        run.output(),
        left=left,
        right=right,
        key="ad_id",
        between=spec.between,
        left_key="impression_ad",
        title=f"{name}: each impression, the clicks it can match, and the pairs joined",
    )


def state(name: str, params: dict | None = None, what: str = "entries in state"):
    """The state each keyed step of the lesson holds after every batch."""
    run = get_lesson(name).run(params=params, trace=True)
    return state_plot(state_sizes(run), ylabel=what, title=f"{name}: state after each batch")


def join_state(name: str):
    """The rows each side of the lesson's join keeps in state after every batch."""
    run = get_lesson(name).run(trace=True)
    return state_plot(
        state_sizes_by_side(run.trace, "join"), ylabel="rows in join state", title=f"{name}: join state by side"
    )


def rows_by_param(name: str, param: str, values: tuple[str, ...], title: str):
    """Rows emitted per batch, one bar per value of a parameter (``mode``, ``delivery``...)."""
    lesson = get_lesson(name)
    counts = {value: [len(batch.rows) for batch in lesson.run(params={param: value}).output()] for value in values}
    return bars_plot(counts, xlabel="batch", ylabel="rows emitted", title=title)


def inputs_per_batch(name: str):
    """How many events each input of a two-input lesson brings in each batch."""
    script = get_lesson(name).default_script
    counts = {source: [len(batch) for batch in batches] for source, batches in script.items()}
    return bars_plot(counts, xlabel="batch", ylabel="events", title=f"{name}: events per input and batch")


def replayed_records():
    """For a crash before each record of the changelog lesson's script, the log records its recovery replayed
    after the snapshot (``lessons.changelog.crash_at_every_record``)."""
    points = crash_at_every_record()
    return bars_plot(
        {"records replayed (a snapshot every 3 records)": [point.replayed for point in points]},
        xlabel="crash before record",
        ylabel="log records replayed",
        title="changelog: what each recovery replays",
    )


def rescaled_keys(name: str = "rescale"):
    """The keys each subtask holds in the checkpoint the run restores, and after the restore at another
    parallelism (``lessons.rescale.keys_moved``)."""
    values = get_lesson(name).resolve_params()
    before, after = keys_moved()
    return bars_plot(
        {
            f"in the restored checkpoint ({values['before']} subtasks)": [len(keys) for keys in before.values()],
            f"at the end, after the restore ({values['after']} subtasks)": [len(keys) for keys in after.values()],
        },
        xlabel="subtask",
        ylabel="keys in state",
        title=f"{name}: keys per subtask, before and after the rescale",
    )


def trips_written(name: str = "operator-state"):
    """How many times each trip of the lesson was written or is still buffered after the crash and the rescale,
    with the buffer split evenly, given whole to every subtask (union), or kept out of the checkpoint."""
    lesson = get_lesson(name)
    trips = sorted({row["trip"] for batch in lesson.default_script for row in batch}, key=lambda t: int(t[1:]))
    settings = {
        "operator state, even split": {},
        "operator state, union": {"redistribution": "union"},
        "plain attribute": {"keep_in": "plain"},
    }
    counts = {label: written_or_buffered(lesson.run(params=params)) for label, params in settings.items()}
    return bars_plot(
        {label: [found.get(trip, 0) for trip in trips] for label, found in counts.items()},
        xlabel=f"trip, from {trips[0]} (0) to {trips[-1]} ({len(trips) - 1})",
        ylabel="written or buffered",
        title=f"{name}: each trip after the crash and the rescale",
    )


PICTURES = [
    Picture(
        "running-aggregation",
        "state",
        "keys in state after each batch",
        lambda: state("running-aggregation", what="keys in state"),
    ),
    Picture(
        "running-aggregation",
        "modes",
        "rows emitted per batch in update and complete mode",
        lambda: rows_by_param(
            "running-aggregation", "mode", ("update", "complete"), "running-aggregation: rows emitted per batch"
        ),
    ),
    Picture(
        "state-backends",
        "state",
        "keys in state after each batch: the same on every backend",
        lambda: state("state-backends", params={"backend": "rocksdb"}, what="keys in state (RocksDB)"),
    ),
    Picture(
        "changelog",
        "replayed",
        "log records each recovery replayed, for a crash before each record",
        replayed_records,
    ),
    Picture(
        "tumbling-window", "arrivals", "events against arrival, with the watermark", lambda: arrivals("tumbling-window")
    ),
    Picture("tumbling-window", "windows", "the windows each batch emitted", lambda: windows("tumbling-window")),
    Picture(
        "sliding-window",
        "windows",
        "overlapping windows and the batch that emitted each",
        lambda: windows("sliding-window"),
    ),
    Picture(
        "sliding-window", "arrivals", "events against arrival, with the watermark", lambda: arrivals("sliding-window")
    ),
    Picture(
        "session-window", "sessions", "sessions over their events, and the late row", lambda: windows("session-window")
    ),
    Picture(
        "late-data",
        "arrivals",
        "events against arrival: the late rows under the watermark",
        lambda: arrivals("late-data"),
    ),
    Picture("late-data", "windows", "the windows emitted, and the rows they lost", lambda: windows("late-data")),
    Picture(
        "output-modes",
        "rows",
        "rows emitted per batch in each output mode",
        lambda: rows_by_param(
            "output-modes", "mode", ("append", "update", "complete"), "output-modes: rows emitted per batch"
        ),
    ),
    Picture(
        "stream-join", "ranges", "impressions, the clicks each can match, and the pairs", lambda: join("stream-join")
    ),
    Picture("stream-join", "state", "rows each side keeps in state", lambda: join_state("stream-join")),
    Picture(
        "outer-join",
        "ranges",
        "impressions and clicks; unmatched impressions come out with nulls",
        lambda: join("outer-join"),
    ),
    Picture("idle-input", "ranges", "impressions and clicks under the min policy", lambda: join("idle-input")),
    Picture(
        "deduplication", "arrivals", "events against arrival, with the watermark", lambda: arrivals("deduplication")
    ),
    Picture(
        "deduplication",
        "state",
        "event ids remembered after each batch",
        lambda: state("deduplication", what="ids remembered"),
    ),
    Picture(
        "device-sessions", "arrivals", "plays against arrival, with the watermark", lambda: arrivals("device-sessions")
    ),
    Picture("device-sessions", "state", "state entries after each batch", lambda: state("device-sessions")),
    Picture("state-ttl", "state", "entries in state: expired ones leave", lambda: state("state-ttl")),
    Picture("processing-time", "state", "entries in the watchdog's state", lambda: state("processing-time")),
    Picture(
        "game-heartbeats",
        "state",
        "entries in state after each batch: a map per device, and its timers",
        lambda: state("game-heartbeats", what="maps and timers"),
    ),
    Picture(
        "microbatch-vs-continuous",
        "microbatch",
        "micro-batch: the watermark moves between batches",
        lambda: arrivals("microbatch-vs-continuous", model="microbatch"),
    ),
    Picture(
        "microbatch-vs-continuous",
        "continuous",
        "continuous: the watermark moves after each row",
        lambda: arrivals("microbatch-vs-continuous", model="continuous"),
    ),
    Picture(
        "checkpoint-recovery",
        "delivery",
        "rows per batch with an exactly-once and an at-least-once sink",
        lambda: rows_by_param(
            "checkpoint-recovery",
            "delivery",
            ("exactly_once", "at_least_once"),
            "checkpoint-recovery: rows in the sink per batch",
        ),
    ),
    Picture(
        "barrier-alignment",
        "inputs",
        "events per input and batch: web is busy, mobile quiet",
        lambda: inputs_per_batch("barrier-alignment"),
    ),
    Picture("rescale", "keys", "keys per subtask before the crash and after the restore", rescaled_keys),
    Picture(
        "enrichment-join",
        "rows",
        "rows emitted per batch by the inner and the left outer join",
        lambda: rows_by_param(
            "enrichment-join", "how", ("inner", "left_outer"), "enrichment-join: rows emitted per batch"
        ),
    ),
    Picture(
        "chained-aggregations",
        "state",
        "entries in each step's state after every batch",
        lambda: state("chained-aggregations", what="windows in state"),
    ),
    Picture(
        "operator-state",
        "trips",
        "how many times each trip was written or is still buffered, for each way of keeping the buffer",
        trips_written,
    ),
]
"""Every tutorial's plots, in lesson order."""


def write_pictures(directory: str | Path = "diagrams") -> list[Path]:
    """Draw every picture of :data:`PICTURES` into ``directory/plots/``; returns the files written."""
    return [save_png(picture.draw(), Path(directory) / FOLDER / picture.file) for picture in PICTURES]
