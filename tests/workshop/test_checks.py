"""The workshop's exercise checks (``workshop/checks_*.py``): every check passes on its solution and fails on
typical wrong answers with the rule that was missed (the notebooks, with the solutions filled in, run in
tests/workshop/test_notebooks.py)."""

import zlib

import pytest

from ministream.time.windows import merge_sessions, sliding
from ministream.workshop import solutions
from ministream.workshop.checks_chained import check_top_driver
from ministream.workshop.checks_engine import (
    check_as_of,
    check_barrier_arrives,
    check_due_timers,
    check_key_group,
    check_next_beat,
    check_recover,
    check_restart_at,
    check_session_timer,
    check_ttl_expired,
    check_update_batch,
)
from ministream.workshop.checks_enrichment import check_enrich_batch
from ministream.workshop.checks_join import check_join_batch
from ministream.workshop.checks_operator_state import check_deal_out
from ministream.workshop.checks_output import check_emit_batch, check_emits, check_fires_after
from ministream.workshop.checks_pipeline import check_pipeline
from ministream.workshop.checks_sessions import check_add_event, check_is_late
from ministream.workshop.checks_time import (
    check_forget,
    check_global_watermark,
    check_next_watermark,
    check_state_watermark,
)
from ministream.workshop.checks_windows import (
    check_counting_windows,
    check_counts,
    check_window_of,
    check_windows_of,
    sliding_cases,
    tumbling_cases,
)
from ministream.workshop.exercises import EXERCISES
from ministream.workshop.feedback import ExerciseFailed, NotWrittenYet
from ministream.workshop.oracle import get_oracle

CHECKS = {
    "key_group": check_key_group,
    "update_batch": lambda fn: check_update_batch(fn, against="ministream"),
    "window_of": lambda fn: check_window_of(fn, against="ministream"),
    "next_watermark": lambda fn: check_next_watermark(fn, against="ministream"),
    "pipeline": lambda fn: check_pipeline(fn, against="ministream"),
    "windows_of": lambda fn: check_windows_of(fn, against="ministream"),
    "add_event": lambda fn: check_add_event(fn, against="ministream"),
    "is_late": lambda fn: check_is_late(fn, against="ministream"),
    "counts": lambda fn: check_counts(fn, against="ministream"),
    "counting_windows": lambda fn: check_counting_windows(fn, against="ministream"),
    "emits": lambda fn: check_emits(fn, against="ministream"),
    "join_batch": lambda fn: check_join_batch(fn, against="ministream"),
    "enrich_batch": lambda fn: check_enrich_batch(fn, against="ministream"),
    "top_driver": lambda fn: check_top_driver(fn, against="ministream"),
    "deal_out": check_deal_out,
    "state_watermark": lambda fn: check_state_watermark(fn, against="ministream"),
    "global_watermark": lambda fn: check_global_watermark(fn, against="ministream"),
    "forget": lambda fn: check_forget(fn, against="ministream"),
    "emit_batch": lambda fn: check_emit_batch(fn, against="ministream"),
    "fires_after": check_fires_after,
    "due_timers": check_due_timers,
    "ttl_expired": check_ttl_expired,
    "barrier_arrives": check_barrier_arrives,
    "restart_at": check_restart_at,
    "as_of": check_as_of,
    "recover": check_recover,
    "session_timer": check_session_timer,
    "next_beat": check_next_beat,
}
"""Each exercise's check, against ministream's rules (the notebooks run them against Spark)."""

NEEDS_PYSPARK = {"key_group"}
"""Checks that need PySpark even against ministream: check_key_group ships the learner's function (a lambda too)
to a fresh Python with PySpark's cloudpickle."""


def case(name, *values, id=None):
    """A parametrize case of the check ``name``, marked spark when that check needs PySpark."""
    return pytest.param(name, *values, id=id, marks=[pytest.mark.spark] if name in NEEDS_PYSPARK else [])


# -- typical wrong answers ------------------------------------------------------------------------------------


def truncating_window_of(ts, size, offset=0):
    start = offset + int((ts - offset) / size) * size  # truncates towards zero
    return start, start + size


def closed_window_of(ts, size, offset=0):
    start = ts - (ts - offset) % size
    if (ts - offset) % size == 0:
        start -= size  # as if the end belonged to the window
    return start, start + size


def minute_window_of(ts, size, offset=0):
    start = ts - (ts % 60_000 - offset) % size  # aligned on the minute, not on the epoch
    return start, start + size


def fixed_count_windows_of(ts, size, slide, offset=0):
    last = ts - (ts - offset) % slide
    return [(last - i * slide, last - i * slide + size) for i in range(size // slide)]


def truncating_windows_of(ts, size, slide, offset=0):
    last = offset + int((ts - offset) / slide) * slide
    return [(start, start + size) for start in range(last, ts - size, -slide)]


def update_every_key(totals, rows):
    solutions.update_batch(totals, rows)
    return [{"key": key, "count": count, "sum": total} for key, (count, total) in totals.items()]


def update_without_state(totals, rows):
    return solutions.update_batch({}, rows)


def update_per_event(totals, rows):
    out = []
    for row in rows:
        out += solutions.update_batch(totals, [row])
    return out


def no_bridge_add_event(sessions, ts, gap):
    new = (ts, ts + gap)
    for i, (start, end) in enumerate(sessions):
        if start <= new[1] and new[0] <= end:  # merges with the first session it touches only
            sessions[i] = (min(start, new[0]), max(end, new[1]))
            return sorted(sessions)
    return sorted(sessions + [new])


def strict_add_event(sessions, ts, gap):
    merged = []
    for start, end in sorted(sessions + [(ts, ts + gap)]):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def last_end_add_event(sessions, ts, gap):
    for i, (start, end) in enumerate(sessions):
        if start <= ts <= end:
            sessions[i] = (start, ts + gap)  # the session now ends gap after this event, even if it ended later
            return sessions
    return merge_sessions(sessions + [(ts, ts + gap)])


def unsorted_due_timers(timers, watermark):
    return [timer for timer in timers if timer[0] <= watermark]


def recover_past_the_checkpoint(snapshot, records, version):
    return solutions.recover(snapshot, records, max(records))


def recover_without_the_snapshot(snapshot, records, version):
    state = {}
    for number in range(1, version + 1):
        for key, value in records.get(number, {}).items():
            state.pop(key, None) if value is None else state.__setitem__(key, value)
    return state


def unaligned_barrier(held_back, position, inputs):
    return True  # snapshots at the first barrier


def never_holds_barrier(held_back, position, inputs):
    return inputs == 1  # snapshots at the right time for one input, but never holds an input back


def never_releases_barrier(held_back, position, inputs):
    held_back.add(position)
    return len(held_back) == inputs


def _match(imp, click, within, strict=False):
    end = imp["ts"] + within
    return (
        imp["ad_id"] == click["ad_id"]
        and imp["ts"] <= click["ts"]
        and (click["ts"] < end if strict else click["ts"] <= end)
    )


def join_both_ways(left_state, right_state, new_left, new_right, within):
    """New impressions meet every click, new clicks every impression: a pair of new rows comes out twice."""
    return [(i, c) for i in new_left for c in right_state + new_right if _match(i, c, within)] + [
        (i, c) for c in new_right for i in left_state + new_left if _match(i, c, within)
    ]


def join_state_only(left_state, right_state, new_left, new_right, within):
    """New rows meet only the stored rows: a pair of new rows never comes out."""
    return [(i, c) for i in new_left for c in right_state if _match(i, c, within)] + [
        (i, c) for c in new_right for i in left_state if _match(i, c, within)
    ]


def join_everything(left_state, right_state, new_left, new_right, within):
    """Every pair in state and new, every batch."""
    return [(i, c) for i in left_state + new_left for c in right_state + new_right if _match(i, c, within)]


def join_strict(left_state, right_state, new_left, new_right, within):
    return [(i, c) for i in new_left for c in right_state if _match(i, c, within, strict=True)] + [
        (i, c) for c in new_right for i in left_state + new_left if _match(i, c, within, strict=True)
    ]


def pipeline_without(delay=None, size=None, sink="output", aggregates=None):
    """A wrong pipeline: a fixed delay or size, another sink name, or other aggregates."""
    from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    from ministream.core.aggregates import Max, Sum
    from ministream.time.windows import Tumbling

    def pipeline(script, params):
        flow = Dataflow("wrong")
        events = flow.source("events", ScriptedSource(script)).with_watermark(
            "watermark", "ts", delay or params["delay"]
        )
        chosen = aggregates or {"count": Count(), "sum": Sum("value"), "max": Max("value")}
        events.key_by("key").window("w", Tumbling(size or params["size"]), **chosen).sink(sink, CollectingSink())
        return flow

    return pipeline


def pipeline_without_watermark(script, params):
    from ministream import CollectingSink, Count, Dataflow, ScriptedSource
    from ministream.time.windows import Tumbling

    flow = Dataflow("wrong")
    flow.source("events", ScriptedSource(script)).key_by("key").window(
        "w", Tumbling(params["size"]), count=Count()
    ).sink("output", CollectingSink())
    return flow


def enrich_null_matches_null(trips, table, how):
    out = []
    for trip in trips:
        matches = [row for row in table if row["driver"] == trip["driver"]]
        out += [{**trip, "city": row["city"]} for row in matches]
        out += [{**trip, "city": None}] if not matches and how == "left_outer" else []
    return out


def enrich_first_match_only(trips, table, how):
    out = []
    for trip in trips:
        match = next((row for row in table if trip["driver"] is not None and row["driver"] == trip["driver"]), None)
        if match is not None or how == "left_outer":
            out.append({**trip, "city": match and match["city"]})
    return out


def top_driver_smaller_name_on_ties(sums):
    best = min(sums, key=lambda row: (-row["total"], row["driver"]))
    return best["driver"], best["total"]


def deal_out_round_robin(lists, parallelism, mode):
    items = [item for old in lists for item in old]
    if mode == "union":
        return [list(items) for _ in range(parallelism)]
    return [items[index::parallelism] for index in range(parallelism)]


def deal_out_larger_last(lists, parallelism, mode):
    items = [item for old in lists for item in old]
    size, extra = divmod(len(items), parallelism)
    parts, start = [], 0
    for index in range(parallelism):
        end = start + size + (1 if index >= parallelism - extra else 0)
        parts.append(items[start:end])
        start = end
    return parts


WRONG = [
    ("key_group", lambda key: hash(key) % 128, "salted per process"),
    ("key_group", lambda key: zlib.crc32(str(key).encode("utf-8")) % 128, "hash repr(key), not str(key)"),
    ("key_group", lambda key: zlib.crc32(repr(key).encode("utf-8")) % 100, "modulo the maximum parallelism, 128"),
    ("update_batch", update_every_key, "only the keys the batch touched"),
    ("update_batch", update_without_state, "keyed state carries over"),
    ("update_batch", update_per_event, "one row per key the batch touched"),
    ("window_of", truncating_window_of, "floor, don't truncate"),
    ("window_of", closed_window_of, "half-open"),
    ("window_of", minute_window_of, "not on the minute"),
    ("window_of", lambda ts, size, offset=0: (ts - ts % size, ts - ts % size + size), "startTime"),
    ("window_of", lambda ts, size, offset=0: (ts - ts % size, ts - ts % size + size - 1), "aligned on the Unix epoch"),
    ("next_watermark", lambda wm, times, delay: max(times) - delay if times else wm, "never goes down"),
    ("next_watermark", lambda wm, times, delay: max(wm, max(times) - delay - 1) if times else wm, "no -1 ms"),
    ("next_watermark", lambda wm, times, delay: max(wm, times[-1] - delay) if times else wm, "largest event time"),
    ("next_watermark", lambda wm, times, delay: max(wm, max(times) - delay) if times else 0, "without rows"),
    ("next_watermark", lambda wm, times, delay: max(wm, max(times) - delay), "The rule here: a batch without rows"),
    ("pipeline", pipeline_without(delay=10_000), "the watermark comes from a with_watermark step"),
    ("pipeline", pipeline_without(sink="out"), "name your sink 'output'"),
    ("pipeline", pipeline_without(aggregates={"count": __import__("ministream").Count()}), "named as in the twin"),
    ("pipeline", pipeline_without(size=10_000), "params['size']"),
    ("pipeline", pipeline_without_watermark, "ministream refused your pipeline"),
    ("pipeline", lambda script, params: None, "return the Dataflow"),
    ("windows_of", fixed_count_windows_of, "does not divide the size"),
    ("windows_of", truncating_windows_of, "floor, don't truncate"),
    ("windows_of", lambda ts, size, slide, offset=0: [solutions.window_of(ts, size, offset)], "every sliding window"),
    ("windows_of", lambda ts, size, slide, offset=0: solutions.windows_of(ts, size, slide), "startTime"),
    ("add_event", strict_add_event, "next.start <= current.end"),
    ("add_event", no_bridge_add_event, "bridge two sessions"),
    ("add_event", last_end_add_event, "not the last ts + gap"),
    ("add_event", lambda sessions, ts, gap: merge_sessions(sessions + [(ts, ts + gap - 1)]), "opens the session"),
    ("is_late", lambda ts, gap, wm: ts <= wm, "not by its own time"),
    ("is_late", lambda ts, gap, wm: ts + gap < wm, "inclusive"),
    (
        "counting_windows",
        lambda ts, k, wms, size, slide: [w for w in sliding(ts, size, slide) if ts > wms[max(k - 1, 0)]],
        "late is decided per window",
    ),
    (
        "counting_windows",
        lambda ts, k, wms, size, slide: sliding(ts, size, slide),
        "dropped from the windows that ended",
    ),
    (
        "counting_windows",
        lambda ts, k, wms, size, slide: [w for w in sliding(ts, size, slide) if w[1] >= wms[max(k - 1, 0)]],
        "inclusive",
    ),
    ("counts", lambda end, k, wms: end > wms[k], "previous batch's watermark"),
    ("counts", lambda end, k, wms: end >= wms[max(k - 1, 0)], "inclusive"),
    ("counts", lambda end, k, wms: end > wms[k - 1], "watermarks[-1]"),
    (
        "emits",
        lambda mode, end, touched, wm: end < wm if mode == "append" else solutions.emits(mode, end, touched, wm),
        "inclusive",
    ),
    (
        "emits",
        lambda mode, end, touched, wm: True if mode == "update" else solutions.emits(mode, end, touched, wm),
        "update mode emits",
    ),
    (
        "emits",
        lambda mode, end, touched, wm: touched if mode == "complete" else solutions.emits(mode, end, touched, wm),
        "complete mode emits every window",
    ),
    (
        "emits",
        lambda mode, end, touched, wm: end <= wm if mode == "update" else solutions.emits(mode, end, touched, wm),
        "update mode emits",
    ),
    ("join_batch", join_both_ways, "exactly once"),
    ("join_batch", join_state_only, "exactly once"),
    ("join_batch", join_everything, "only pairs with at least one new row"),
    ("join_batch", join_strict, "inclusive at both ends"),
    ("enrich_batch", lambda trips, table, how: solutions.enrich_batch(trips, table, "inner"), "its city null"),
    ("enrich_batch", enrich_null_matches_null, "a null driver matches nothing"),
    ("enrich_batch", enrich_first_match_only, "comes out twice"),
    ("top_driver", lambda sums: min((-r["total"], r["driver"]) for r in sums)[1:] + (0,), "largest total"),
    ("top_driver", top_driver_smaller_name_on_ties, "the larger driver name wins"),
    ("top_driver", lambda sums: max((abs(r["total"]), r["driver"]) for r in sums)[::-1], "as numbers"),
    ("deal_out", lambda lists, n, mode: [list(old) for old in lists] + [[]] * (n - len(lists)), "exactly one"),
    ("deal_out", deal_out_round_robin, "keeps the items in order"),
    ("deal_out", deal_out_larger_last, "the larger parts first"),
    ("deal_out", lambda lists, n, mode: solutions.deal_out(lists, n, "even"), "every item of every old subtask"),
    ("state_watermark", lambda wm, upper, inclusive: wm - upper, "one more millisecond"),
    ("state_watermark", lambda wm, upper, inclusive: wm - 1, "impression_time <= WM - upper"),
    ("state_watermark", lambda wm, upper, inclusive: wm + upper - 1, "impression_time <= WM - upper"),
    (
        "global_watermark",
        lambda wm, props, policy: (
            max(wm, min(v for v in props.values() if v is not None))
            if policy == "min"
            else solutions.global_watermark(wm, props, policy)
        ),
        "counts as 0",
    ),
    (
        "global_watermark",
        lambda wm, props, policy: solutions.global_watermark(wm, props, "max" if policy == "min" else "min"),
        "smallest",
    ),
    ("global_watermark", lambda wm, props, policy: solutions.global_watermark(0, props, policy), "never goes down"),
    ("forget", lambda first, delay, wm: wm > first + delay, "inclusive"),
    ("forget", lambda first, delay, wm: wm >= first, "plus the delay"),
    ("emit_batch", lambda end, wms: next((k for k, w in enumerate(wms) if end < w), None), "inclusive"),
    ("emit_batch", lambda end, wms: next((k + 1 for k, w in enumerate(wms) if end <= w), None), "own watermark"),
    ("emit_batch", lambda end, wms: next((k for k, w in enumerate(wms) if end <= w), -1), "never emitted"),
    (
        "fires_after",
        lambda end, times, delay: next((i for i, t in enumerate(times, 1) if max(times[:i]) - delay >= end - 1), None),
        "- delay - 1 ms",
    ),
    (
        "fires_after",
        lambda end, times, delay: next((i for i, t in enumerate(times, 1) if max(times[:i]) - delay - 1 >= end), None),
        "end - 1",
    ),
    ("due_timers", lambda timers, wm: sorted(t for t in timers if t[0] < wm), "expiry <= WM_k"),
    ("due_timers", unsorted_due_timers, "expiry order"),
    ("ttl_expired", lambda written, ttl, now: now > written + ttl, "inclusive"),
    ("ttl_expired", lambda written, ttl, now: now >= ttl, "write time plus the TTL"),
    ("restart_at", lambda offsets, commits: (max(offsets, default=-1) + 1, False), "runs it again"),
    ("restart_at", lambda offsets, commits: (max(commits), False) if commits else (0, False), "the next batch id"),
    ("restart_at", lambda offsets, commits: (max(offsets), True) if offsets else (0, False), "goes on with the next"),
    ("session_timer", lambda f, now, hb, to: "heartbeat" if f[2] <= now else None, "closes instead"),
    ("session_timer", lambda f, now, hb, to: "timed_out" if f[1] + to < now else None, "inclusive"),
    ("next_beat", lambda started, now, hb: now + hb, "does not drift"),
    ("next_beat", lambda started, now, hb: started + hb, "first strictly after"),
    ("barrier_arrives", unaligned_barrier, "not before"),
    ("barrier_arrives", never_holds_barrier, "is held back"),
    ("barrier_arrives", never_releases_barrier, "every input is released"),
    ("as_of", lambda versions, batch_id: versions[max(versions)], "never committed"),
    (
        "as_of",
        lambda versions, batch_id: max((c for b, c in versions.items() if b < batch_id), default=0),
        "at or before",
    ),
    ("recover", recover_past_the_checkpoint, "not one more"),
    ("recover", recover_without_the_snapshot, "compaction deleted"),
]


def test_every_exercise_has_a_check_a_solution_and_wrong_answers():
    """Each exercise names a check, has a solution of its function's name, and is tried on wrong answers."""
    names = [exercise.function for exercise in EXERCISES]
    assert sorted(names) == sorted(CHECKS) and len(set(names)) == len(names)
    assert all(callable(getattr(solutions, name)) for name in names)
    assert {name for name, _, _ in WRONG} == set(names)


@pytest.mark.parametrize("name", [case(name, id=name) for name in sorted(CHECKS)])
def test_solution_passes(name):
    """A check accepts its exercise's solution and says what it compared."""
    passed = CHECKS[name](getattr(solutions, name))
    assert repr(passed).startswith(f"✓ {name}: ")


@pytest.mark.parametrize(
    "name, wrong, rule", [case(name, wrong, rule, id=f"{name}-{i}") for i, (name, wrong, rule) in enumerate(WRONG)]
)
def test_wrong_answer_fails_naming_the_rule(name, wrong, rule):
    """A check refuses a typical wrong answer, and its message names the rule that was missed."""
    with pytest.raises(ExerciseFailed) as failure:
        CHECKS[name](wrong)
    assert rule in str(failure.value)
    assert not isinstance(failure.value, NotWrittenYet)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda exercise: exercise.function)
def test_starter_cell_is_reported_as_not_written(exercise):
    """The exercise cell as the learner first sees it is reported as not written yet, not as a wrong answer."""
    namespace = {}
    exec(exercise.starter, namespace)
    with pytest.raises(NotWrittenYet, match="not written yet"):
        CHECKS[exercise.function](namespace[exercise.function])


def test_failure_message_names_place_answers_and_rule():
    """A failure says where (batch and window), the learner's answer, Spark's, and the rule."""
    with pytest.raises(ExerciseFailed) as failure:
        check_pipeline(pipeline_without(delay=1_000), against="ministream")
    message = str(failure.value)
    assert message.startswith("pipeline: batch 1, the watermark: yours is 10:00:02, ministream's is 09:59:58.")
    assert "Rule missed: the watermark comes from a with_watermark step" in message
    assert failure.value._render_traceback_()[0].startswith("✗ pipeline: batch 1")


def test_emit_batch_failure_gives_the_watermark_that_closes_the_window():
    """The emission message gives the window, the batches, and end <= watermark with the engine's numbers."""

    def one_batch_late_on_the_lesson(window_end, watermarks):  # right on the cases (4 watermarks), late after
        batch_id = solutions.emit_batch(window_end, watermarks)
        return batch_id + 1 if batch_id is not None and len(watermarks) > 4 else batch_id

    with pytest.raises(ExerciseFailed) as failure:
        check_emit_batch(one_batch_late_on_the_lesson, against="ministream")
    assert str(failure.value) == (
        "emit_batch: window [10:00:00, 10:00:10) of key a, watermarks per batch 0, 09:59:58, 10:00:11, 10:00:22, "
        "10:00:26: yours is batch 3, ministream's is batch 2.\nRule missed: in append mode a window is emitted once, "
        "in the first batch whose own watermark is at or past its end (end <= WM_k), and then removed "
        "(end 10:00:10 <= watermark 10:00:11)"
    )


@pytest.mark.spark
def test_spark_windows_are_the_oracles_windows(spark):
    """Spark's window() and ministream's assigner agree on every case the window checks use (pre-epoch,
    negative offsets, slides that do not divide the size)."""
    ministream, spark_oracle = get_oracle("ministream"), get_oracle("spark")
    for cases, tumbling in ((tumbling_cases(), True), (sliding_cases(), False)):
        for case in cases:
            ts, size, slide, offset = (
                (case.args[0], case.args[1], case.args[1], case.args[2]) if tumbling else case.args
            )
            assert spark_oracle.windows([ts], size, slide, offset) == ministream.windows([ts], size, slide, offset)
