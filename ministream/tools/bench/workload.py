"""The benchmark's workload: its events, the pipelines that run them, and how they are timed."""

from __future__ import annotations

import gc
import random
import time

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


def tumbling_count_flow(script, size: int = WINDOW, delay: int = DELAY) -> Dataflow:
    """The same count in ministream: watermark, key by key, tumbling windows."""

    flow = Dataflow("bench-tumbling")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", delay).key_by("key").window(
        "counts", Tumbling(size), count=Count()
    ).sink("output", CollectingSink())
    return flow


def map_filter_flow(script) -> Dataflow:
    flow = Dataflow("bench-map-filter")
    flow.source("events", ScriptedSource(script)).map("double", lambda r: {**r, "value": r["value"] * 2}).filter(
        "even_keys", lambda r: r["key"][-1] in "02468"
    ).sink("output", CollectingSink())
    return flow


def running_count_flow(script) -> Dataflow:
    flow = Dataflow("bench-running-count")
    flow.source("events", ScriptedSource(script)).key_by("key").aggregate("counts", count=Count()).sink(
        "output", CollectingSink()
    )
    return flow


def sliding_count_flow(script, size: int = WINDOW, slide: int = SLIDE, delay: int = DELAY) -> Dataflow:
    flow = Dataflow("bench-sliding")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", delay).key_by("key").window(
        "counts", Sliding(size, slide), count=Count()
    ).sink("output", CollectingSink())
    return flow


def session_flow(script, gap: int = GAP) -> Dataflow:
    flow = Dataflow("bench-sessions")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", DELAY).key_by("key").window(
        "sessions", Session(gap), count=Count()
    ).sink("output", CollectingSink())
    return flow


def join_inputs(script) -> dict:
    """The join's two inputs from the events: every event is an impression ``{key, ts}``, and the events of
    half the keys (those ending in an even digit) are also a click ``{click_key, click_time}`` 10 ms later."""
    return {
        "impressions": [[{"key": r["key"], "ts": r["ts"]} for r in batch] for batch in script],
        "clicks": [
            [{"click_key": r["key"], "click_time": r["ts"] + 10} for r in batch if r["key"][-1] in "02468"]
            for batch in script
        ],
    }


def join_flow(sides: dict, how: str = "inner") -> Dataflow:
    """Impressions and clicks (:func:`join_inputs`) joined on the key when the click comes 0 to 100 ms after
    the impression."""
    flow = Dataflow(f"bench-join-{how}")
    impressions = flow.source("impressions", ScriptedSource(sides["impressions"], columns=("key", "ts")))
    clicks = flow.source("clicks", ScriptedSource(sides["clicks"], columns=("click_key", "click_time")))
    impressions.with_watermark("wm_i", "ts", DELAY).key_by("key").join(
        "join",
        clicks.with_watermark("wm_c", "click_time", DELAY).key_by("click_key"),
        how=how,
        between=TimeRange("ts", "click_time", *JOIN_RANGE),
    ).sink("output", CollectingSink())
    return flow


def dedup_flow(script) -> Dataflow:
    """``dropDuplicates(["key", "ts"])`` with a watermark on ``ts``: the key holds the event time, so the
    watermark evicts it."""
    flow = Dataflow("bench-dedup")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", DELAY).drop_duplicates(
        "dedup", ["key", "ts"]
    ).sink("output", CollectingSink())
    return flow


def dedup_within_watermark_flow(script) -> Dataflow:
    """``dropDuplicatesWithinWatermark(["key"])``: a key is forgotten ``DELAY`` after its first row."""
    flow = Dataflow("bench-dedup-within")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", DELAY).drop_duplicates(
        "dedup", ["key"], within_watermark=True
    ).sink("output", CollectingSink())
    return flow


class FlushEverySecond(Processor):
    """Per key, count the rows, and at the end of each second of event time that had rows emit the count so
    far and reset it: a value state and an event-time timer per key and second."""

    def init(self, handle):
        self.handle = handle
        self.count = handle.get_value_state("count", default=0)

    def handle_input_rows(self, key, rows, timer_values):
        self.count.update(self.count.value() + len(rows))
        self.handle.register_timer((max(row["ts"] for row in rows) // WINDOW + 1) * WINDOW)
        return ()

    def handle_expired_timer(self, key, timer_values, expired_timer_info):
        count = self.count.value()
        self.count.clear()
        return [{"key": key, "count": count, "at": expired_timer_info.expiry_time}]


def process_flow(script) -> Dataflow:
    flow = Dataflow("bench-process")
    flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", DELAY).key_by("key").process(
        "flush", FlushEverySecond(), time_mode="event_time"
    ).sink("output", CollectingSink())
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
