"""Splitting a micro-batch in two changes the results only where the micro-batch model says it must.

The micro-batch model (``ministream/models/microbatch.py``, ``tutorials/spark-facts.md``), for batches B_0 .. B_{n-1}
and a watermark ``delay``:

- WM_0 = 0 and WM_{k+1} = max(WM_k, max event time of B_k - delay) (unchanged after an empty batch);
- batch k drops a row for a window when that window's end <= WM_{k-1} (WM_{-1} = 0): the *late* rule looks
  one batch further back than eviction, which uses WM_k;
- append mode emits a window once its end <= WM_k; the no-data batch after the last data batch runs with
  WM_n, so what is ever emitted is every window with end <= WM_n, over the rows that were not late;
- update mode emits a window's current value each batch a row reaches it; complete mode keeps every row.

Split batch j into L then R (L's rows in batch j, R's in a new batch j + 1, the later batches one further
on). The watermarks become WM_0 .. WM_j, W = max(WM_j, max(L) - delay), WM_{j+1} .. WM_n: one more entry, W,
the watermark L's rows raise. WM_n, the last watermark, is the same. Each batch filters late rows against the
watermark one entry before its own, so the late watermarks are the same as before for every batch but two:
R is filtered against WM_j instead of WM_{j-1} (the watermark of the batch before the split now comes
between B_j's halves), and B_{j+1} against W instead of WM_j (the watermark L raised comes before it).

**The split rule.** A row of R becomes late for one of its windows [start, end) exactly when
WM_{j-1} < end <= WM_j; a row of B_{j+1} exactly when WM_j < end <= W; nothing else changes. The windows
emitted in append mode (ignoring batch ids), and the last value of each window in update mode, are those of
the unsplit script less those rows (a window left with no row disappears). Splitting batch 0 makes no row of
R late (WM_{-1} = WM_0 = 0), and L's rows never make R late: R is filtered against the watermark of the
batches before L.

Where no row can be late, a split changes no final result: complete mode filters no late row (the last
batch's table of windows is the same whatever the split), and neither does a running aggregation without a
watermark (the same last table in complete mode, the same last value per key in update mode).

The properties run the micro-batch engine only (no Spark); ``tests/lessons/test_window_scripts.py`` checks the model itself
against Spark, and the last test runs the two worked examples through Spark.
"""

from collections import Counter

import pytest
from hypothesis import given, settings, target
from hypothesis import strategies as st

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum, run_microbatch
from ministream.time.windows import Sliding, Tumbling

EXAMPLES = settings(max_examples=80, deadline=None)
SPLIT_EXAMPLES = settings(max_examples=150, deadline=None)
"""More examples for the split rule, which Hypothesis steers towards splits that make rows late (``target``)."""


# -- the micro-batch model, written out independently of the engine ---------------------------------------------


def model_watermarks(script, delay: int) -> list[int]:
    """``[WM_0, ..., WM_n]`` for a script of n batches: WM_n is the watermark of the no-data batch after it."""
    watermarks = [0]
    for batch in script:
        proposal = max((row["ts"] for row in batch), default=None)
        watermarks.append(watermarks[-1] if proposal is None else max(watermarks[-1], proposal - delay))
    return watermarks


def windows_of(ts: int, size: int, slide: int) -> list[tuple[int, int]]:
    """Every window [start, end) of ``size`` starting on a multiple of ``slide`` that contains ``ts``."""
    start, found = ts - ts % slide, []
    while start + size > ts:
        found.append((start, start + size))
        start -= slide
    return found


def counted(script, size: int, slide: int, delay: int) -> list[tuple[int, int, dict]]:
    """``(batch, window, row)`` for every row and window the late rule keeps: end > WM_{k-1} in batch k."""
    watermarks = model_watermarks(script, delay)
    return [
        (k, window, row)
        for k, batch in enumerate(script)
        for row in batch
        for window in windows_of(row["ts"], size, slide)
        if window[1] > watermarks[max(k - 1, 0)]
    ]


def table(contributions) -> Counter:
    """``{(key, start, end, count, sum)}`` (a multiset) from ``(window, row)`` contributions."""
    totals: dict[tuple, list] = {}  # {(key, start, end): [count, sum]}
    for window, row in contributions:
        total = totals.setdefault((row["key"], *window), [0, 0.0])
        total[0] += 1
        total[1] += row["value"]
    return Counter((*group, count, total) for group, (count, total) in totals.items())


def newly_late(script, j: int, first_half: list, second_half: list, size: int, slide: int, delay: int) -> list[tuple]:
    """The split rule: ``(window, row)`` for what splitting batch j into ``first_half`` (L) and ``second_half``
    (R) makes late: rows of R for windows whose end lies in (WM_{j-1}, WM_j], and rows of batch j + 1 for
    windows whose end lies in (WM_j, max(WM_j, max(L) - delay)]."""
    watermarks = model_watermarks(script, delay)
    raised = max([watermarks[j]] + [row["ts"] - delay for row in first_half])
    following = script[j + 1] if j + 1 < len(script) else []
    return [
        (window, row)
        for row in second_half
        for window in windows_of(row["ts"], size, slide)
        if watermarks[max(j - 1, 0)] < window[1] <= watermarks[j]
    ] + [
        (window, row)
        for row in following
        for window in windows_of(row["ts"], size, slide)
        if watermarks[j] < window[1] <= raised
    ]


# -- the engine -------------------------------------------------------------------------------------------------


def windowed_run(script, size: int, slide: int, delay: int, mode: str):
    flow = Dataflow("split")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", "ts", delay)
    windows = Tumbling(size) if slide == size else Sliding(size, slide)
    events.key_by("key").window("per_window", windows, count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return run_microbatch(flow, output_mode=mode)


def running_run(script, mode: str):
    flow = Dataflow("split")
    events = flow.source("events", ScriptedSource(script))
    events.key_by("key").aggregate("totals", count=Count(), sum=Sum("value")).sink("output", CollectingSink())
    return run_microbatch(flow, output_mode=mode)


def emitted(run) -> Counter:
    """Append mode: every window row ever emitted, batch ids ignored (a multiset)."""
    return Counter(
        (r["key"], r["window_start"], r["window_end"], r["count"], r["sum"])
        for batch in run.output()
        for r in batch.rows
    )


def last_values(run, *columns) -> dict:
    """Update mode: the last value emitted for each group of ``columns``."""
    last = {}
    for batch in run.output():
        for r in batch.rows:
            last[tuple(r[c] for c in columns)] = (r["count"], r["sum"])
    return last


def as_last_values(expected: Counter) -> dict:
    return {(key, start, end): (count, total) for key, start, end, count, total in expected}


# -- scripts and splits -------------------------------------------------------------------------------------------

SECOND = 1_000
rows = st.builds(
    lambda second, jitter, key, value: {"ts": second * SECOND + jitter, "key": key, "value": float(value)},
    st.integers(1, 20),
    st.sampled_from([0, 0, 0, 1, -1]),
    st.sampled_from("ab"),
    st.integers(1, 9),
)
scripts = st.lists(st.lists(rows, max_size=5), min_size=1, max_size=5)
windows = st.sampled_from(
    [
        (2 * SECOND, 2 * SECOND),
        (5 * SECOND, 5 * SECOND),
        (10 * SECOND, 10 * SECOND),
        (10 * SECOND, 5 * SECOND),
        (6 * SECOND, 2 * SECOND),
    ]
)  # (size, slide)
delays = st.sampled_from([0, 2 * SECOND, 5 * SECOND])


@st.composite
def splits(draw, script_strategy=scripts):
    """A script, the batch j it splits, and the rows that go to L (the rest, in order, to R)."""
    script = draw(script_strategy)
    j = draw(st.integers(0, len(script) - 1))
    to_first = draw(st.lists(st.booleans(), min_size=len(script[j]), max_size=len(script[j])))
    first = [row for row, first in zip(script[j], to_first) if first]
    second = [row for row, first in zip(script[j], to_first) if not first]
    return script, j, first, second


def split_script(script, j, first, second):
    return script[:j] + [first, second] + script[j + 1 :]


# -- the rule on two small examples -----------------------------------------------------------------------------


def a(second: int) -> dict:
    return {"ts": second * SECOND, "key": "a", "value": 1.0}


def test_a_split_makes_a_row_of_the_second_half_late():
    """[a@5] [a@12 a@3], 2-second windows, no delay: WM_1 = 5 s. Unsplit, a@3 is filtered against WM_0 = 0 and
    counts in [2 s, 4 s); split as [a@5] [a@12] [a@3], it is filtered against WM_1 = 5 s >= 4 s: late."""
    script = [[a(5)], [a(12), a(3)]]
    split = split_script(script, 1, [a(12)], [a(3)])
    assert model_watermarks(split, 0)[:3] == [0, 5_000, 12_000]
    assert ("a", 2_000, 4_000, 1, 1.0) in emitted(windowed_run(script, 2 * SECOND, 2 * SECOND, 0, "append"))
    assert ("a", 2_000, 4_000, 1, 1.0) not in emitted(windowed_run(split, 2 * SECOND, 2 * SECOND, 0, "append"))
    assert newly_late(script, 1, [a(12)], [a(3)], 2 * SECOND, 2 * SECOND, 0) == [((2_000, 4_000), a(3))]


def test_a_split_makes_a_row_of_the_next_batch_late():
    """[a@1 a@2] [a@1], 2-second windows, no delay: unsplit, the second a@1 is filtered against WM_0 = 0 and
    [0 s, 2 s) counts 2. Split as [a@2] [a@1] [a@1]: L raises the watermark to 2 s before the last batch, whose
    a@1 is late (end 2 s <= 2 s): the window counts 1."""
    script = [[a(1), a(2)], [a(1)]]
    split = split_script(script, 0, [a(2)], [a(1)])
    assert ("a", 0, 2_000, 2, 2.0) in emitted(windowed_run(script, 2 * SECOND, 2 * SECOND, 0, "append"))
    assert ("a", 0, 2_000, 1, 1.0) in emitted(windowed_run(split, 2 * SECOND, 2 * SECOND, 0, "append"))
    assert newly_late(script, 0, [a(2)], [a(1)], 2 * SECOND, 2 * SECOND, 0) == [((0, 2_000), a(1))]


# -- the properties -----------------------------------------------------------------------------------------------


@EXAMPLES
@given(splits(), windows, delays)
def test_the_engine_follows_the_model_on_the_unsplit_script(split, window, delay):
    """Append mode emits, over the rows the late rule keeps (end > WM_{k-1}), every window with end <= WM_n; the
    engine's watermarks are the model's (checks the predictor the split rule is stated with)."""
    script = split[0]
    (size, slide), watermarks = window, model_watermarks(script, delay)
    run = windowed_run(script, size, slide, delay, "append")
    assert run.watermarks[: len(script)] == watermarks[: len(script)]
    expected = table((w, row) for _, w, row in counted(script, size, slide, delay) if w[1] <= watermarks[-1])
    assert emitted(run) == expected


@EXAMPLES
@given(splits(), windows, delays)
def test_splitting_a_batch_inserts_one_watermark(split, window, delay):
    """Split batch j: the watermarks are WM_0..WM_j, max(WM_j, max(L) - delay), WM_{j+1}..: one more entry,
    the others unchanged."""
    script, j, first, _second = split
    (size, slide), watermarks = window, model_watermarks(script, delay)
    inserted = max([watermarks[j]] + [row["ts"] - delay for row in first])
    expected = watermarks[: j + 1] + [inserted] + watermarks[j + 1 : len(script)]
    run = windowed_run(split_script(*split), size, slide, delay, "append")
    assert run.watermarks[: len(script) + 1] == expected


@SPLIT_EXAMPLES
@given(splits(), windows, delays)
def test_append_splitting_drops_exactly_the_rows_the_split_makes_late(split, window, delay):
    """Append mode: the windows emitted after a split of batch j into L and R (batch ids ignored) are those
    emitted without it, less the rows of R whose window end lies in (WM_{j-1}, WM_j] and the rows of batch j + 1
    whose window end lies in (WM_j, max(WM_j, max(L) - delay)]; a window with no row left is not emitted."""
    script, j, first, second = split
    size, slide = window
    before = emitted(windowed_run(script, size, slide, delay, "append"))
    after = emitted(windowed_run(split_script(*split), size, slide, delay, "append"))
    late = newly_late(script, j, first, second, size, slide, delay)
    target(float(len(late)), label="rows the split makes late")
    final = model_watermarks(script, delay)[-1]
    kept = [(w, row) for _, w, row in counted(script, size, slide, delay) if w[1] <= final]
    for pair in late:
        kept.remove(pair)  # each newly late (window, row) was counted before the split
    assert after == table(kept)
    if not late:
        assert after == before


@SPLIT_EXAMPLES
@given(splits(), windows, delays)
def test_update_splitting_changes_the_last_values_only_by_the_rows_the_split_makes_late(split, window, delay):
    """Update mode: the last value emitted for each (key, window) after a split is the unsplit one less the rows
    the split makes late (the append rule's); a window left with no row is never emitted."""
    script, j, first, second = split
    size, slide = window
    after = last_values(
        windowed_run(split_script(*split), size, slide, delay, "update"), "key", "window_start", "window_end"
    )
    kept = [(w, row) for _, w, row in counted(script, size, slide, delay)]
    late = newly_late(script, j, first, second, size, slide, delay)
    target(float(len(late)), label="rows the split makes late")
    for pair in late:
        kept.remove(pair)
    assert after == as_last_values(table(kept))


@EXAMPLES
@given(splits(), windows, delays)
def test_complete_windows_never_drop_late_rows_so_the_split_changes_nothing(split, window, delay):
    """Complete mode filters no late row and evicts nothing: the last batch's table of windows is the same
    whatever the split, and counts every row."""
    script = split[0]
    size, slide = window
    everything = table((w, row) for batch in script for row in batch for w in windows_of(row["ts"], size, slide))
    for candidate in (script, split_script(*split)):
        last = windowed_run(candidate, size, slide, delay, "complete").output()[-1]
        assert (
            Counter((r["key"], r["window_start"], r["window_end"], r["count"], r["sum"]) for r in last.rows)
            == everything
        )


def totals(script) -> dict:
    """``{key: (count, sum)}`` over every row of the script."""
    found: dict[str, tuple] = {}
    for row in (row for batch in script for row in batch):
        count, total = found.get(row["key"], (0, 0.0))
        found[row["key"]] = (count + 1, total + row["value"])
    return found


@EXAMPLES
@given(splits())
def test_complete_running_aggregation_ends_with_the_same_table_whatever_the_split(split):
    """A running count and sum in complete mode: the last batch's table is the same with and without the split
    (every key with its totals over every row)."""
    script = split[0]
    for candidate in (script, split_script(*split)):
        last = running_run(candidate, "complete").output()[-1]
        assert {r["key"]: (r["count"], r["sum"]) for r in last.rows} == totals(script)


@EXAMPLES
@given(splits())
def test_update_running_aggregation_ends_with_the_same_values_per_key_whatever_the_split(split):
    """A running count and sum in update mode: the last value emitted for each key is the same with and without
    the split (its totals over every row)."""
    script = split[0]
    for candidate in (script, split_script(*split)):
        assert {key[0]: value for key, value in last_values(running_run(candidate, "update"), "key").items()} == totals(
            script
        )


@pytest.mark.spark
@pytest.mark.parametrize(
    "script",
    [[[a(5)], [a(12), a(3)]], [[a(5)], [a(12)], [a(3)]], [[a(1), a(2)], [a(1)]], [[a(2)], [a(1)], [a(1)]]],
    ids=["R unsplit", "R split", "next unsplit", "next split"],
)
def test_the_two_examples_are_what_spark_does(script):
    """The two examples above, split and unsplit, give the same batches in Spark (the tumbling-window twin with
    2-second windows and no delay): Spark makes the same rows late."""
    from ministream.lessons import compare_lesson, get_lesson

    result = compare_lesson(get_lesson("tumbling-window"), script, {"size": "2 seconds", "delay": "0 seconds"})
    assert result.matches, result.table()
