"""Window state layouts (ministream/operators/window_state.py): the session layout against a plain model."""

import random

from ministream.operators.window_state import WindowsByKey
from ministream.time.windows import touches


def test_sessions_by_key_close_as_a_plain_list_of_sessions_does():
    """Whatever the order sessions arrive, merge and close in, WindowsByKey holds each key's sessions sorted by
    start, and take_closed(watermark) removes exactly the sessions that end at or before the watermark (its
    heap of keys skips the entries a merge or an earlier session made stale)."""
    rng = random.Random(7)
    for _ in range(200):
        state, model = WindowsByKey(), {}  # model: {key: {(start, end): count}}
        watermark = 0
        for _ in range(rng.randint(1, 60)):
            key = rng.choice("abc")
            start = watermark + rng.randint(-5, 40)
            window = (start, start + rng.randint(1, 8))
            if window[1] <= watermark:
                continue  # late: the operator drops it before it reaches the state
            if not state.put_new(key, window[0], window[1], (1,)):
                touching = state.touching(key, window)
                count = 1 + sum(state.pop(key, session)[0] for session in touching)
                merged = (min([window[0]] + [s[0] for s in touching]), max([window[1]] + [s[1] for s in touching]))
                state.put(key, merged, (count,))
            mine = model.setdefault(key, {})
            touched = [session for session in mine if touches(session, window)]
            count = 1 + sum(mine.pop(session) for session in touched)
            mine[(min([window[0]] + [s[0] for s in touched]), max([window[1]] + [s[1] for s in touched]))] = count
            if rng.random() < 0.3:
                watermark += rng.randint(0, 20)
                closed = {
                    (key, start, end, accumulators[0])
                    for key, sessions in state.take_closed(watermark)
                    for start, end, accumulators in sessions
                }
                expected = {
                    (key, *session, count)
                    for key, sessions in model.items()
                    for session, count in sessions.items()
                    if session[1] <= watermark
                }
                assert closed == expected
                model = {
                    key: {s: c for s, c in sessions.items() if s[1] > watermark} for key, sessions in model.items()
                }
            assert state.sessions == {
                key: [(start, end, (count,)) for (start, end), count in sorted(sessions.items())]
                for key, sessions in model.items()
                if sessions
            }
