"""Random scripts for the window lessons: the events that catch an engine out at the edges.

``ministream fuzz LESSON`` asks a lesson for random scripts (``Lesson.random_script``) and compares ministream
with Spark on each. A uniform random timestamp almost never lands on an edge, so this generator aims at them
on purpose. Each row is one of these kinds:

- *in order*: a little after the latest event so far, which moves the watermark on;
- *out of order*: earlier than the latest event, but in a window that is still open;
- *late*: at or before the watermark that filters the batch, so some of its windows are closed;
- *on an edge*: exactly on a window start (= the previous window's end), exactly on a watermark, or 1 ms
  either side of one, where ``<`` and ``<=`` give different answers;
- *duplicate*: a copy of an earlier row (same time, key and value).

Some batches are empty. Values are small whole numbers, so sums and averages are exact in binary floats.

>>> import random
>>> script = random_window_script(random.Random(1), {"size": 10_000, "delay": 5_000})
>>> len(script) >= 3 and all(isinstance(batch, list) for batch in script)
True
"""

from __future__ import annotations

import random as _random

from ministream.lessons.lesson import BASE_TIME
from ministream.time.windows import last_start

KEYS = ("a", "b", "c")


def random_window_script(rng: _random.Random, params: dict, keys=KEYS, min_batches: int = 3) -> list[list[dict]]:
    """A random script of 3 to 5 short batches (at least ``min_batches``) for a windowed lesson with these
    parameters (``size``, ``delay``, and ``slide`` and ``offset`` when the lesson has them).

    >>> import random
    >>> random_window_script(random.Random(7), {"size": 10_000, "delay": 0}, keys=("a",))[0]
    [{'ts': 1704103218000, 'key': 'a', 'value': 6.0}]
    """
    size, delay = params["size"], params["delay"]
    slide, offset = params.get("slide", size), params.get("offset", 0)
    step = max(1, min(slide, 1_000))  # a small unit of event time, so rows are whole seconds when windows are
    latest = BASE_TIME + rng.randrange(0, 3) * step  # the largest event time so far
    watermarks = [0]  # watermarks[k] = WM_k, the watermark of batch k
    seen: list[dict] = []
    script = []
    for batch_id in range(max(rng.randint(3, 5), min_batches)):
        late_watermark = watermarks[max(batch_id - 1, 0)]
        rows = []
        if rng.random() >= 0.15:  # else an empty batch
            for _ in range(rng.randint(1, 4)):
                ts = _timestamp(rng, latest, late_watermark, watermarks[batch_id], size, slide, offset, step)
                row = (
                    rng.choice(seen)
                    if seen and rng.random() < 0.12
                    else {"ts": ts, "key": rng.choice(keys), "value": float(rng.randint(1, 9))}
                )
                rows.append(dict(row))
                seen.append(row)
                latest = max(latest, row["ts"])
        script.append(rows)
        batch_max = max((row["ts"] for row in rows), default=watermarks[-1] + delay)
        watermarks.append(max(watermarks[-1], batch_max - delay))  # never goes down
    return script


def _timestamp(
    rng, latest: int, late_watermark: int, watermark: int, size: int, slide: int, offset: int, step: int
) -> int:
    """One event time, of a kind drawn at random (see the module docstring)."""
    kind = rng.choice(["in order", "in order", "out of order", "late", "window edge", "watermark edge"])
    if kind == "late" and late_watermark > 0:
        return late_watermark - rng.randrange(0, 2 * size, step)
    if kind == "window edge":
        return last_start(latest, slide, offset) + rng.choice([-slide, 0, slide]) + rng.choice([-1, 0, 0, 1])
    if kind == "watermark edge" and late_watermark > 0:
        return rng.choice([late_watermark, watermark]) + rng.choice([-1, 0, 1])
    if kind == "out of order":
        return max(latest - rng.randrange(0, size, step), 1)
    return latest + rng.randrange(0, 2 * slide, step)
