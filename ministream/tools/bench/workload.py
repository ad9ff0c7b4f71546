"""The benchmark's workload: its events, the pipelines that run them, and how they are timed."""

from __future__ import annotations

import gc
import os
import random
import time
from collections.abc import Callable
from operator import itemgetter

from ministream.core.aggregates import Count
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.operators.process import Processor
from ministream.time.ranges import TimeRange
from ministream.time.windows import Session, Sliding, Tumbling

EVENTS = 1_000_000


KEYS = 1_000


WINDOW = 1_000


DELAY = 100


BATCHES = 100


SLIDE = 500
"""The sliding windows' slide: each event is in two windows of ``WINDOW``."""

GAP = 20
"""The session windows' gap: with 1,000 keys and an event every ~1 ms, a key's events are ~1 s apart, so most
sessions hold one event and some merge."""

JOIN_RANGE = (0, 100)
"""A click joins an impression of its key from 0 to 100 ms before it."""


def make_events(count: int = EVENTS, keys: int = KEYS, seed: int = 0, disorder: int = 50) -> list[dict]:
    """Events ``{"key", "ts", "value"}`` with event time rising ~1 ms per event, up to ``disorder`` ms late.

    >>> make_events(3, keys=2, seed=0)
    [{'key': 'k1', 'ts': 1, 'value': 1.0}, {'key': 'k1', 'ts': 1, 'value': 1.0}, {'key': 'k1', 'ts': 1, 'value': 1.0}]
    """
    rng = random.Random(seed)
    names = [f"k{i}" for i in range(keys)]
    return [
        {"key": names[rng.randrange(keys)], "ts": max(0, i - rng.randrange(disorder)) + 1, "value": 1.0}
        for i in range(count)
    ]


def in_batches(events: list, batches: int = BATCHES) -> list[list]:
    """Split events into ``batches`` equal micro-batches, in arrival order."""
    size = -(-len(events) // batches)
    return [events[i : i + size] for i in range(0, len(events), size)]


EVENT_COLUMNS = {"key": "STRING", "ts": "TIMESTAMP", "value": "DOUBLE"}
"""The columns of the bench's events and their Spark types (``ts`` in ms, a ``TIMESTAMP`` in Spark)."""

JOIN_COLUMNS = {
    "impressions": {"key": "STRING", "ts": "TIMESTAMP"},
    "clicks": {"click_key": "STRING", "click_time": "TIMESTAMP"},
}
"""The columns of the join's two inputs (:func:`join_inputs`), by source name."""


class EventBatches:
    """The bench's events made one batch at a time, when a source reads it, so that a run of 10 million
    events never holds more than a batch of them: batch ``k`` holds events ``k * size`` to ``(k + 1) * size``
    of ``count``, made as :func:`make_events` makes them (a random generator seeded by the batch, so that any
    batch can be made again alone). The CPU time spent making events is counted in ``making_seconds``, for
    the bench to take out of its timing; the process's resident memory is sampled at each batch
    (``peak_rss_bytes``).

    >>> batches = EventBatches(5, 2, keys=2)
    >>> len(batches), [len(batches.batch(k)) for k in range(3)], batches.batch(2)[0]["ts"] > 0
    (3, [2, 2, 1], True)
    """

    def __init__(self, count: int, size: int, keys: int = KEYS, seed: int = 0, disorder: int = 50):
        self.count, self.size, self.keys, self.seed, self.disorder = count, size, keys, seed, disorder
        self.names = [f"k{i}" for i in range(keys)]
        self.making_seconds = 0.0
        self.peak_rss_bytes = 0
        self.last: tuple[int, list[dict]] | None = None  # the batch made last: a join's two sides share it

    def __len__(self) -> int:
        return (self.count + self.size - 1) // self.size

    def batch(self, k: int) -> list[dict]:
        if self.last is not None and self.last[0] == k:
            return self.last[1]
        start = time.process_time()
        rng = random.Random(self.seed * 1_000_003 + k)
        names, keys, disorder = self.names, self.keys, self.disorder
        events = [
            {"key": names[rng.randrange(keys)], "ts": max(0, i - rng.randrange(disorder)) + 1, "value": 1.0}
            for i in range(k * self.size, min(self.count, (k + 1) * self.size))
        ]
        self.last = (k, events)
        self.making_seconds += time.process_time() - start
        self.peak_rss_bytes = max(self.peak_rss_bytes, resident_bytes())
        return events


def resident_bytes() -> int:
    """The process's resident memory now (``/proc/self/statm``; 0 where there is none)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


class GeneratedSource:
    """A source that reads its batches from an :class:`EventBatches` as the run asks for them, through
    ``shape`` (a batch of events to this source's rows): the scripted source's reading side (``__len__``,
    ``arrived``, ``batch``, ``read``, ``columns``) without a script in memory."""

    def __init__(self, events: EventBatches, shape: Callable[[list[dict]], list[dict]], columns=None):
        self.events, self.shape = events, shape
        self.columns = None if columns is None else tuple(columns)

    def __len__(self) -> int:
        return len(self.events)

    def arrived(self, position: int) -> bool:
        return position < len(self.events)

    def batch(self, batch_id: int) -> list[dict]:
        if batch_id >= len(self.events):
            return []
        events = self.events.batch(batch_id)
        start = time.process_time()
        rows = self.shape(events)
        self.events.making_seconds += time.process_time() - start
        return rows

    read = batch


class CountingSink:
    """A sink that keeps how many rows each batch wrote, not the rows: a long run's output is not held.

    >>> sink = CountingSink()
    >>> sink.write(0, None, [{"n": 1}, {"n": 2}]); sink.rows_written, sink.batches
    (2, [])
    """

    def __init__(self):
        self.batches: list = []  # never filled: what a run returns as this sink's output
        self.rows_written = 0

    def reset(self) -> None:
        self.rows_written = 0

    def write(self, batch_id: int, watermark: int | None, rows: list[dict], processing_time: int | None = None) -> None:
        self.rows_written += len(rows)


def source_of(script, columns: tuple[str, ...] | None = None):
    """A bench pipeline's source: a script (a list of batches) as a ``ScriptedSource``; an
    :class:`EventBatches` as a :class:`GeneratedSource` of its events; a source as is."""
    if isinstance(script, EventBatches):
        return GeneratedSource(script, lambda batch: batch, columns)
    return script if hasattr(script, "read") else ScriptedSource(script, columns=columns)


def tumbling_count_flow(script, size: int = WINDOW, delay: int = DELAY, sink=None) -> Dataflow:
    """The same count in ministream: watermark, key by key, tumbling windows."""

    flow = Dataflow("bench-tumbling")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", delay).key_by("key").window(
        "counts", Tumbling(size), count=Count()
    ).sink("output", sink or CollectingSink())
    return flow


def map_filter_flow(script) -> Dataflow:
    flow = Dataflow("bench-map-filter")
    flow.source("events", source_of(script)).map("double", lambda r: {**r, "value": r["value"] * 2}).filter(
        "even_keys", lambda r: r["key"][-1] in "02468"
    ).sink("output", CollectingSink())
    return flow


def running_count_flow(script, sink=None) -> Dataflow:
    flow = Dataflow("bench-running-count")
    flow.source("events", source_of(script)).key_by("key").aggregate("counts", count=Count()).sink(
        "output", sink or CollectingSink()
    )
    return flow


def sliding_count_flow(script, size: int = WINDOW, slide: int = SLIDE, delay: int = DELAY, sink=None) -> Dataflow:
    flow = Dataflow("bench-sliding")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", delay).key_by("key").window(
        "counts", Sliding(size, slide), count=Count()
    ).sink("output", sink or CollectingSink())
    return flow


def session_flow(script, gap: int = GAP, sink=None) -> Dataflow:
    flow = Dataflow("bench-sessions")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", DELAY).key_by("key").window(
        "sessions", Session(gap), count=Count()
    ).sink("output", sink or CollectingSink())
    return flow


def impressions(batch: list[dict]) -> list[dict]:
    """Every event as an impression ``{key, ts}``."""
    return [{"key": r["key"], "ts": r["ts"]} for r in batch]


def clicks(batch: list[dict]) -> list[dict]:
    """The events of half the keys (those ending in an even digit) as a click ``{click_key, click_time}``
    10 ms later."""
    return [{"click_key": r["key"], "click_time": r["ts"] + 10} for r in batch if r["key"][-1] in "02468"]


def join_inputs(script) -> dict:
    """The join's two inputs from the events, batch for batch: :func:`impressions` and :func:`clicks`; from
    an :class:`EventBatches`, two :class:`GeneratedSource` that make them as they are read."""
    if isinstance(script, EventBatches):
        return {
            "impressions": GeneratedSource(script, impressions, JOIN_COLUMNS["impressions"]),
            "clicks": GeneratedSource(script, clicks, JOIN_COLUMNS["clicks"]),
        }
    return {"impressions": [impressions(batch) for batch in script], "clicks": [clicks(batch) for batch in script]}


def join_flow(sides: dict, how: str = "inner", sink=None) -> Dataflow:
    """Impressions and clicks (:func:`join_inputs`) joined on the key when the click comes 0 to 100 ms after
    the impression."""
    flow = Dataflow(f"bench-join-{how}")
    impressions = flow.source("impressions", source_of(sides["impressions"], ("key", "ts")))
    clicks = flow.source("clicks", source_of(sides["clicks"], ("click_key", "click_time")))
    impressions.with_watermark("wm_i", "ts", DELAY).key_by("key").join(
        "join",
        clicks.with_watermark("wm_c", "click_time", DELAY).key_by("click_key"),
        how=how,
        between=TimeRange("ts", "click_time", *JOIN_RANGE),
    ).sink("output", sink or CollectingSink())
    return flow


def dedup_flow(script, sink=None) -> Dataflow:
    """``dropDuplicates(["key", "ts"])`` with a watermark on ``ts``: the key holds the event time, so the
    watermark evicts it."""
    flow = Dataflow("bench-dedup")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", DELAY).drop_duplicates(
        "dedup", ["key", "ts"]
    ).sink("output", sink or CollectingSink())
    return flow


def dedup_within_watermark_flow(script, sink=None) -> Dataflow:
    """``dropDuplicatesWithinWatermark(["key"])``: a key is forgotten ``DELAY`` after its first row."""
    flow = Dataflow("bench-dedup-within")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", DELAY).drop_duplicates(
        "dedup", ["key"], within_watermark=True
    ).sink("output", sink or CollectingSink())
    return flow


_event_time = itemgetter("ts")
"""A row's event time, as a function (``max(map(_event_time, rows))`` reads the rows' times in C)."""


class FlushEverySecond(Processor):
    """Per key, count the rows, and at the end of each second of event time that had rows emit the count so
    far and reset it: a value state and an event-time timer per key and second."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update(self.count.value() + len(rows))
        self.handle.register_timer((max(map(_event_time, rows)) // WINDOW + 1) * WINDOW)
        return ()

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        count = self.count.value()
        self.count.clear()
        return [{"key": key, "count": count, "at": expired_timer_info.expiry_time}]


FLUSH_SCHEMA = "key STRING, count BIGINT, at TIMESTAMP"
"""The rows :class:`FlushEverySecond` emits, as Spark's DDL: its twin's ``transformWithState`` needs them."""


def process_flow(script, sink=None) -> Dataflow:
    flow = Dataflow("bench-process")
    flow.source("events", source_of(script)).with_watermark("watermark", "ts", DELAY).key_by("key").process(
        "flush", FlushEverySecond(), time_mode="event_time", output_schema=FLUSH_SCHEMA
    ).sink("output", sink or CollectingSink())
    return flow


def best_cpu_seconds(candidates: list[tuple], repeat: int = 3) -> list[float]:
    """For each ``(fn, make_input)``, the least CPU time (``time.process_time``) of ``repeat`` calls
    ``fn(make_input())``; the candidates run in turns, so that each meets the machine in the same state.

    Inputs are made before the clock starts, then moved out of the garbage collector's sight
    (``gc.freeze``): they are the events, already in memory, not work the engine or the loop does, and
    Python's collector would otherwise walk them again at every full collection. CPU time, and the best of a
    few runs, make the figures hold on a machine that other processes share.

    >>> [seconds < 1 for seconds in best_cpu_seconds([(sum, lambda: range(1000)), (max, lambda: [1, 2])])]
    [True, True]
    """
    best = [float("inf")] * len(candidates)
    for _ in range(repeat):
        for i, (fn, make_input) in enumerate(candidates):
            argument = make_input()
            gc.collect()
            gc.freeze()
            try:
                start = time.process_time()
                fn(argument)
                best[i] = min(best[i], time.process_time() - start)
            finally:
                gc.unfreeze()
                del argument
    return best


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    """Seconds one call takes (garbage collection done first), and its result."""
    gc.collect()
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def rate(events: int, seconds: float) -> float:
    return round(events / seconds) if seconds > 0 else float("inf")
