"""Solutions of the workshop's exercises, kept apart from the notebooks.

Each function is written as a learner would write it in the exercise cell, and is self-contained (its imports
inside it), because the test suite pastes its source into the notebook's exercise cell and runs the notebook:
that is how every exercise is known to be solvable and every check to pass. Instructors: this file is the
answer key; learners: try first.

>>> window_of(-1, 10_000)
(-10000, 0)
>>> emit_batch(10_000, [0, 7_000, 10_000])
2
"""

from __future__ import annotations


def key_group(key):
    """Notebook 01: the key group of a key, the same in every process."""
    import zlib

    return zlib.crc32(repr(key).encode("utf-8")) % 128


def update_batch(totals, rows):
    """Notebook 01: add a batch to the running totals, return what update mode emits."""
    touched = []
    for row in rows:
        count, total = totals.get(row["key"], (0, 0.0))
        totals[row["key"]] = (count + 1, total + row["value"])
        if row["key"] not in touched:
            touched.append(row["key"])
    return [{"key": key, "count": totals[key][0], "sum": totals[key][1]} for key in touched]


def window_of(ts, size, offset=0):
    """Notebook 02: the tumbling window of an event, aligned as Spark aligns it."""
    start = ts - (ts - offset) % size  # Python's % floors, also before the epoch
    return start, start + size


def next_watermark(watermark, event_times, delay):
    """Notebook 02: the next batch's watermark of one input."""
    if not event_times:
        return watermark
    return max(watermark, max(event_times) - delay)


def emit_batch(window_end, watermarks):
    """Notebook 02: the batch in which append mode emits a window, or None."""
    for batch_id, watermark in enumerate(watermarks):
        if window_end <= watermark:
            return batch_id
    return None


def pipeline(script, params):
    """Notebook 02: the tumbling-window lesson's pipeline."""
    from ministream import CollectingSink, Count, Dataflow, Max, ScriptedSource, Sum, Tumbling

    flow = Dataflow("my-tumbling-window")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", params["delay"])
    windows = events.key_by("key").window(
        "per_window", Tumbling(params["size"]), count=Count(), sum=Sum("value"), max=Max("value")
    )
    windows.sink("output", CollectingSink())
    return flow


def windows_of(ts, size, slide, offset=0):
    """Notebook 03: every sliding window that contains an event."""
    windows = []
    start = ts - (ts - offset) % slide  # the latest start at or before ts
    while start > ts - size:  # [start, start + size) still contains ts
        windows.append((start, start + size))
        start -= slide
    return windows


def add_event(sessions, ts, gap):
    """Notebook 04: one key's sessions after an event opens [ts, ts + gap)."""
    merged = []
    for start, end in sorted(sessions + [(ts, ts + gap)]):
        if merged and start <= merged[-1][1]:  # touching sessions merge too
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def is_late(ts, gap, late_watermark):
    """Notebook 04: a session row is late when the session it opens ends at or before WM_{k-1}."""
    return ts + gap <= late_watermark


def counts(window_end, batch_id, watermarks):
    """Notebook 05: does a row of batch ``batch_id`` still count for a window ending at ``window_end``?"""
    late_watermark = watermarks[batch_id - 1] if batch_id > 0 else 0
    return window_end > late_watermark


def counting_windows(ts, batch_id, watermarks, size, slide):
    """Notebook 05: the sliding windows a row of batch ``batch_id`` still counts in."""
    from ministream.time.windows import sliding

    late_watermark = watermarks[batch_id - 1] if batch_id > 0 else 0
    return [(start, end) for start, end in sliding(ts, size, slide) if end > late_watermark]


def emits(mode, window_end, touched, watermark):
    """Notebook 06: is a window in state emitted at the end of the batch?"""
    if mode == "append":
        return window_end <= watermark
    if mode == "update":
        return touched
    return True  # complete


def join_batch(left_state, right_state, new_left, new_right, within):
    """Notebook 07: the (impression, click) pairs one batch of the join emits."""

    def match(impression, click):
        return impression["ad_id"] == click["ad_id"] and impression["ts"] <= click["ts"] <= impression["ts"] + within

    pairs = [(impression, click) for impression in new_left for click in right_state if match(impression, click)]
    for click in new_right:  # new clicks meet every impression, this batch's included
        pairs += [(impression, click) for impression in left_state + new_left if match(impression, click)]
    return pairs


def enrich_batch(trips, table, how):
    """Notebook 19: the rows one batch of the stream-static join emits."""
    out = []
    for trip in trips:
        matches = [row for row in table if trip["driver"] is not None and row["driver"] == trip["driver"]]
        out += [{**trip, "city": row["city"]} for row in matches]
        if not matches and how == "left_outer":  # nothing can match it later: padded with nulls now
            out.append({**trip, "city": None})
    return out


def top_driver(sums):
    """Notebook 20: the top driver of an hour, as max(struct(total, driver)) picks it."""
    best = max(sums, key=lambda row: (row["total"], row["driver"]))  # a tie goes to the larger driver name
    return best["driver"], best["total"]


def deal_out(lists, parallelism, mode):
    """Notebook 21: the old subtasks' lists dealt out to the new subtasks, split evenly or as a union."""
    items = [item for old in lists for item in old]
    if mode == "union":
        return [list(items) for _ in range(parallelism)]
    size, extra = divmod(len(items), parallelism)
    parts, start = [], 0
    for index in range(parallelism):
        end = start + size + (1 if index < extra else 0)  # the first `extra` parts take one more
        parts.append(items[start:end])
        start = end
    return parts


def state_watermark(watermark, upper, inclusive):
    """Notebook 08: impressions at or before this time can match no future click."""
    return watermark - upper - (1 if inclusive else 0)


def global_watermark(watermark, proposals, policy):
    """Notebook 09: the watermark of a query with several watermarked inputs."""
    values = [0 if proposal is None else proposal for proposal in proposals.values()]
    combined = min(values) if policy == "min" else max(values)
    return max(watermark, combined)


def forget(first_ts, delay, watermark):
    """Notebook 10: does dropDuplicatesWithinWatermark forget the key at the end of this batch?"""
    return watermark >= first_ts + delay


def fires_after(window_end, event_times, delay):
    """Notebook 11: the row (from 1) after which the continuous model fires a window, or None."""
    largest = None
    for number, ts in enumerate(event_times, start=1):
        largest = ts if largest is None else max(largest, ts)
        if largest - delay - 1 >= window_end - 1:  # Flink: watermark = max - delay - 1; fire at end - 1
            return number
    return None


def due_timers(timers, watermark):
    """Process functions: the (expiry, key) timers that fire at this watermark, in order."""
    return sorted(timer for timer in timers if timer[0] <= watermark)


def ttl_expired(written_at, ttl, batch_timestamp):
    """Process functions: has a state entry outlived its time-to-live?"""
    return batch_timestamp >= written_at + ttl


def session_timer(figures, now, heartbeat, timeout):
    """Game heartbeats: what a device's timer does with one open session."""
    _started, last_event, next_beat, _events, _points = figures
    if last_event + timeout <= now:
        return "timed_out"
    if next_beat <= now:
        return "heartbeat"
    return None


def next_beat(started, now, heartbeat):
    """Game heartbeats: the first tick of the session's rhythm after ``now``."""
    return started + ((now - started) // heartbeat + 1) * heartbeat


def barrier_arrives(held_back, position, inputs):
    """Checkpoints: barrier n arrived on input ``position``; True when the subtask snapshots now."""
    held_back.add(position)
    if len(held_back) == inputs:
        held_back.clear()  # snapshot, forward the barrier, release every input
        return True
    return False


def restart_at(offsets, commits):
    """Checkpoints: the batch a restarted query runs first, and whether it is a rerun."""
    if not offsets:
        return 0, False
    last = max(offsets)
    if last not in commits:
        return last, True  # planned, not committed: run it again, as logged
    return last + 1, False


def as_of(versions, batch_id):
    """State backends: a versioned count as of a batch, the latest version at or before it."""
    before = [version for version in versions if version <= batch_id]
    return versions[max(before)] if before else 0


def recover(snapshot, records, version):
    """Changelog: the state as of ``version``, the snapshot then the records after it, up to ``version``."""
    start, state = (0, {}) if snapshot is None else (snapshot[0], dict(snapshot[1]))
    for number in range(start + 1, version + 1):
        for key, value in records.get(number, {}).items():
            if value is None:
                state.pop(key, None)
            else:
                state[key] = value
    return state
