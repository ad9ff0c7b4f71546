"""The floors: for each stateful operator, a plain Python loop over dicts with the same micro-batch semantics.

A floor is what a careful programmer would write by hand for one pipeline and one workload: no plan, no
channels, no key groups, no trace, no checkpoints. It runs the same script (the same batches of the same
events) and gives, batch for batch, the same output rows as the engine: :func:`same_rows` checks it, and
``tests/tools/test_bench_floors.py`` checks it on a small script for every operator. The bench times each
floor in turns with its engine pipeline (``engine.bench_operators``) and reports the ratio of the two.

What every floor shares is Spark's watermark for micro-batches (``/shared/spark-semantics.md``): batch k
drops rows late against WM_{k-1} and evicts with WM_k, where WM_k is the largest event time of the batches
before k minus the delay (never going down, 0 at first); after the script, one *no-data batch* runs when the
watermark moved, to evict with it. :func:`watermarks` computes them once for a script.

>>> script = [[{"key": "a", "ts": 5}, {"key": "a", "ts": 900}], [{"key": "a", "ts": 1_300}]]
>>> watermarks(script, delay=100)
[0, 800, 1200]
>>> tumbling_count(script, size=1_000, delay=100)
[[], [], [{'key': 'a', 'window_start': 0, 'window_end': 1000, 'count': 2}]]
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from operator import itemgetter

from ministream.tools.bench.workload import DELAY, GAP, SLIDE, WINDOW


def watermarks(script, delay: int, column: str = "ts", inputs: int = 1) -> list[int]:
    """WM_0 ... WM_n of a script of n batches: WM_k for batch k, and WM_n for the no-data batch after it.

    ``script`` is a list of batches, or, for ``inputs`` > 1, a list of inputs (each a list of batches, with
    its own event-time column in ``column``, a tuple): the watermark is then the least of the inputs' (an
    input with no row yet counts as 0).
    """
    scripts = [script] if inputs == 1 else script
    columns = [column] if inputs == 1 else column
    latest: list[int | None] = [None] * len(scripts)  # per input: its largest event time so far
    marks = [0]
    for k in range(len(scripts[0])):
        for i, (batches, name) in enumerate(zip(scripts, columns)):
            if batches[k]:
                top = max(map(itemgetter(name), batches[k]))  # one pass in C, as the engine's watermark step
                latest[i] = top if latest[i] is None else max(latest[i], top)
        proposed = min(0 if t is None else t - delay for t in latest)
        marks.append(max(marks[-1], proposed))
    return marks


def batches_with_watermarks(script, marks: list[int]):
    """``(rows, late watermark, watermark)`` of each batch, then of the no-data batch if the watermark moved."""
    for k, rows in enumerate(script):
        yield rows, marks[k - 1] if k else 0, marks[k]
    if marks[-1] > marks[-2]:
        yield [], marks[-2], marks[-1]


# -- aggregations ------------------------------------------------------------------------------------------


def running_count(script) -> list[list[dict]]:
    """A running count per key, update mode: each batch emits the keys it changed, with their new counts."""
    counts: dict = {}  # {key: count}
    output = []
    for batch in script:
        changed = Counter(map(itemgetter("key"), batch))  # {key: rows in this batch}, in the order first seen
        for key, rows in changed.items():
            counts[key] = counts.get(key, 0) + rows
        output.append([{"key": key, "count": counts[key]} for key in changed])
    return output


def _windowed_count(script, size: int, slide: int, delay: int) -> list[list[dict]]:
    """A keyed count per window of ``size`` starting every ``slide``, append mode."""
    windows: dict = {}  # {window_start: {key: count}}
    output = []
    for rows, late, watermark in batches_with_watermarks(script, watermarks(script, delay)):
        for event in rows:
            ts, key = event["ts"], event["key"]
            start = ts - ts % slide  # the latest window holding ts; the others start a slide apart before it
            while start > ts - size:
                if start + size > late:  # a window that ended at or before WM_{k-1} is late for the row
                    counts = windows.get(start)
                    if counts is None:
                        counts = windows[start] = {}
                    counts[key] = counts.get(key, 0) + 1
                start -= slide
        out = []
        for start in [start for start in windows if start + size <= watermark]:
            for key, count in windows.pop(start).items():
                out.append({"key": key, "window_start": start, "window_end": start + size, "count": count})
        output.append(out)
    return output


def tumbling_count(script, size: int = WINDOW, delay: int = DELAY) -> list[list[dict]]:
    """A keyed count per tumbling window, append mode."""
    return _windowed_count(script, size, size, delay)


def sliding_count(script, size: int = WINDOW, slide: int = SLIDE, delay: int = DELAY) -> list[list[dict]]:
    """A keyed count per sliding window, append mode: a row counts in each of its windows that is not late."""
    return _windowed_count(script, size, slide, delay)


def session_count(script, gap: int = GAP, delay: int = DELAY) -> list[list[dict]]:
    """A keyed count per session window, append mode: a row opens ``[ts, ts + gap)`` and merges with the
    key's sessions it overlaps or touches; a row is late when its own session ends at or before WM_{k-1}."""
    sessions: dict = {}  # {key: [[start, end, count], ...]} by start (and so by end): a key's sessions never touch
    output = []
    for rows, late, watermark in batches_with_watermarks(script, watermarks(script, delay)):
        for event in rows:
            start, key = event["ts"], event["key"]
            end = start + gap
            if end <= late:
                continue
            mine = sessions.get(key)
            if mine is None:
                sessions[key] = [[start, end, 1]]
                continue
            if mine[-1][1] < start:  # after the key's last session (the usual case): a new one
                mine.append([start, end, 1])
                continue
            # walk back from the last session: past those that start after `end`, then merge those that touch
            i = len(mine)
            while i and mine[i - 1][0] > end:
                i -= 1
            count = 1
            while i and mine[i - 1][1] >= start:
                i -= 1
                first, last, n = mine.pop(i)
                start, end, count = min(start, first), max(end, last), count + n
            mine.insert(i, [start, end, count])
        out = []
        for key in list(sessions):
            mine = sessions[key]
            n = 0  # the key's sessions are in end order: the first n end at or before the watermark
            while n < len(mine) and mine[n][1] <= watermark:
                start, end, count = mine[n]
                out.append({"key": key, "window_start": start, "window_end": end, "count": count})
                n += 1
            if n == len(mine):
                del sessions[key]
            elif n:
                del mine[:n]
        output.append(out)
    return output


# -- joins -------------------------------------------------------------------------------------------------


def join(sides: dict, how: str, lower: int = 0, upper: int = 100, delay: int = DELAY) -> list[list[dict]]:
    """Impressions ``{key, ts}`` joined with clicks ``{click_key, click_time}`` on the key, with
    ``ts + lower <= click_time <= ts + upper``: Spark's symmetric hash join. Left rows meet the right state,
    then are stored; then right rows meet the left state; then each side evicts the rows that can no longer
    match, and an outer side pads those that never matched. A left-semi row is emitted at its first match.

    Each side keeps, per key, its rows sorted by time in three parallel lists, ``(times, rows, matched)``: a
    new row finds the other side's rows in its range by binary search in the times, and eviction cuts a
    prefix. A key holds the rows of about two batches (WM_k, which evicts, comes from the batches before k),
    so a scan of them would cost more the larger the batches; and parallel lists rather than a
    ``[time, row, matched]`` list per row, because Python's garbage collector walks every list that lives
    long enough at each of its full collections (the rows, dicts of plain values, it does not track)."""
    impressions, clicks = sides["impressions"], sides["clicks"]
    marks = watermarks([impressions, clicks], delay, ("ts", "click_time"), inputs=2)
    stored: tuple[dict, dict] = ({}, {})  # per side {key: (times, rows, matched)}, parallel lists sorted by time
    pads = (how in ("left_outer", "full_outer"), how in ("right_outer", "full_outer"))
    semi = how == "left_semi"

    def store(table: dict, key, time: int, row: dict, matched: bool) -> None:
        kept = table.get(key)
        if kept is None:
            table[key] = ([time], [row], [matched])
            return
        times, rows, flags = kept
        if times[-1] <= time:  # rows mostly come in time order
            times.append(time)
            rows.append(row)
            flags.append(matched)
        else:
            at = bisect_right(times, time)
            times.insert(at, time)
            rows.insert(at, row)
            flags.insert(at, matched)

    output = []
    for left_rows, late, watermark in batches_with_watermarks(impressions, marks):
        k = len(output)
        right_rows = clicks[k] if k < len(clicks) else []
        out = []
        for row in left_rows:
            ts = row["ts"]
            if ts <= late:
                continue
            key, matched = row["key"], False
            kept = stored[1].get(key)
            if kept:  # the clicks timed from ts + lower to ts + upper
                times, rows, flags = kept
                for i in range(bisect_left(times, ts + lower), bisect_right(times, ts + upper)):
                    flags[i] = matched = True
                    out.append(dict(row) if semi else {**row, **rows[i]})
                    if semi:
                        break
            if not (semi and matched):
                store(stored[0], key, ts, row, matched)
        for row in right_rows:
            time = row["click_time"]
            if time <= late:
                continue
            key, matched = row["click_key"], False
            kept = stored[0].get(key)
            if kept:  # the impressions timed from time - upper to time - lower
                times, rows, flags = kept
                for i in range(bisect_left(times, time - upper), bisect_right(times, time - lower)):
                    if semi and flags[i]:
                        continue
                    flags[i] = matched = True
                    out.append(dict(rows[i]) if semi else {**rows[i], **row})
            store(stored[1], key, time, row, matched)
        # state watermarks of an inclusive range: left rows go at ts <= WM - upper - 1, right at time <= WM + lower - 1
        for side, limit, padding in (
            (0, watermark - upper - 1, {"click_key": None, "click_time": None}),
            (1, watermark + lower - 1, {"key": None, "ts": None}),
        ):
            table = stored[side]
            for key in list(table):
                times, rows, flags = table[key]
                cut = bisect_right(times, limit)  # the rows timed at or before the limit
                if pads[side]:
                    for row, matched in zip(rows[:cut], flags[:cut]):
                        if not matched:
                            out.append({**row, **padding} if side == 0 else {**padding, **row})
                if cut == len(times):
                    del table[key]
                else:
                    del times[:cut], rows[:cut], flags[:cut]
        output.append(out)
    return output


# -- deduplication -----------------------------------------------------------------------------------------


def dedup(script, delay: int = DELAY) -> list[list[dict]]:
    """``dropDuplicates(["key", "ts"])`` with a watermark on ``ts``: the first row of each (key, ts); a pair
    is forgotten when its ts <= WM_k. The pairs are kept by the second of their ts, ``{second: {pair: ts}}``:
    a row looks in the small table of its second (one lookup of a dict of a 100,000-event batch's pairs
    costs twice as much, out of the processor's cache), and the watermark drops the seconds it has passed."""
    seconds: dict = {}  # {second: {(key, ts): ts}}
    output = []
    for rows, late, watermark in batches_with_watermarks(script, watermarks(script, delay)):
        out = []
        second, seen = None, None
        for event in rows:
            ts = event["ts"]
            if ts <= late:
                continue
            if ts // 1_000 != second:
                second = ts // 1_000
                seen = seconds.setdefault(second, {})
            pair = (event["key"], ts)
            if pair not in seen:
                seen[pair] = ts
                out.append(event)
        for number in [number for number in seconds if number * 1_000 <= watermark]:
            if (number + 1) * 1_000 <= watermark:
                del seconds[number]
            else:
                seen = seconds[number]
                for pair in [pair for pair, ts in seen.items() if ts <= watermark]:
                    del seen[pair]
        output.append(out)
    return output


def dedup_within_watermark(script, delay: int = DELAY) -> list[list[dict]]:
    """``dropDuplicatesWithinWatermark(["key"])``: the first row of a key; the key is forgotten once WM_k
    reaches its first row's ts + delay, and a later row of it counts as new."""
    expires: dict = {}  # {key: ts of its first row + delay}
    output = []
    for rows, late, watermark in batches_with_watermarks(script, watermarks(script, delay)):
        out = []
        for event in rows:
            key = event["key"]
            if event["ts"] > late and key not in expires:
                expires[key] = event["ts"] + delay
                out.append(event)
        for key in [key for key, at in expires.items() if at <= watermark]:
            del expires[key]
        output.append(out)
    return output


# -- a keyed process function with timers --------------------------------------------------------------------


def flush_every_second(script, every: int = WINDOW, delay: int = DELAY) -> list[list[dict]]:
    """A keyed process function in event time (``workload.FlushEverySecond``): each key counts its rows, and
    a timer at the end of the second of its latest row of the batch emits the count so far and resets it."""
    counts: dict = {}  # {key: rows since the last flush}
    timers: dict = {}  # {expiry: {key: None}}: the keys with a timer at each expiry
    output = []
    for rows, late, watermark in batches_with_watermarks(script, watermarks(script, delay)):
        by_key: defaultdict = defaultdict(list)  # {key: [ts, ...]}: the batch's rows that are not late, by key
        for event in rows:
            if event["ts"] > late:
                by_key[event["key"]].append(event["ts"])
        for key, times in by_key.items():
            counts[key] = counts.get(key, 0) + len(times)
            timers.setdefault((max(times) // every + 1) * every, {})[key] = None
        out = []
        for expiry in sorted(expiry for expiry in timers if expiry <= watermark):  # due, in expiry then key order
            for key in sorted(timers.pop(expiry)):
                out.append({"key": key, "count": counts.pop(key, 0), "at": expiry})
        output.append(out)
    return output


def same_rows(engine: list[list[dict]], floor: list[list[dict]]) -> bool:
    """Whether two runs emitted the same rows in each batch (in any order within a batch).

    >>> same_rows([[{"a": 1}, {"a": None}]], [[{"a": None}, {"a": 1}]]), same_rows([[{"a": 1}]], [[], []])
    (True, False)
    """
    if len(engine) != len(floor):
        return False

    def canonical(rows):
        return sorted(repr(sorted(row.items())) for row in rows)

    return all(canonical(a) == canonical(b) for a, b in zip(engine, floor))
