"""Window assigners: every event lands in exactly the windows that contain it, aligned on the epoch as Spark
aligns them."""

import datetime as _dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ministream.errors import PipelineError
from ministream.time.windows import Sliding, Tumbling, check_window, sliding, tumbling

timestamps = st.integers(min_value=-(10**13), max_value=10**13)  # about 1653 to 2286, before and after the epoch


@st.composite
def window_shapes(draw):
    """A valid (size, slide, offset): 0 < slide <= size and |offset| < slide, at most 50 windows per row."""
    size = draw(st.integers(min_value=1, max_value=10**7))
    slide = draw(st.integers(min_value=max(1, size // 50), max_value=size))
    offset = draw(st.integers(min_value=-slide + 1, max_value=slide - 1))
    return size, slide, offset


@given(timestamps, window_shapes())
def test_a_row_is_in_exactly_the_windows_that_contain_it(ts, shape):
    """Every window assigned contains ts, starts on the grid offset + n * slide, and no window of the grid
    that contains ts is missing."""
    size, slide, offset = shape
    windows = sliding(ts, size, slide, offset)
    assert all(start <= ts < end and end - start == size for start, end in windows)
    assert all((start - offset) % slide == 0 for start, _ in windows)
    # every grid start in (ts - size, ts] gives a window containing ts: that is the whole list
    first = ts - size + 1
    first += (offset - first) % slide
    assert [start for start, _ in windows] == list(range(first, ts + 1, slide))


@given(timestamps, window_shapes())
def test_a_row_is_in_ceil_size_over_slide_windows_or_one_fewer(ts, shape):
    """The number of windows per row is ceil(size / slide), or one fewer when slide does not divide size."""
    size, slide, offset = shape
    count = len(sliding(ts, size, slide, offset))
    most = -(-size // slide)
    assert count == most or (size % slide and count == most - 1)


@given(timestamps, window_shapes())
def test_tumbling_is_sliding_by_its_own_size(ts, shape):
    """A tumbling window is the one sliding window whose slide equals its size."""
    size, _, offset = shape
    offset = offset % size if offset >= 0 else -((-offset) % size)
    assert [tumbling(ts, size, offset)] == sliding(ts, size, size, offset)


def test_pre_epoch_rows_fall_in_the_window_that_contains_them():
    """Before the epoch the modulo floors, as Spark's does: -1 ms is in [-10 s, 0), not in [0, 10 s)."""
    assert tumbling(-1, 10_000) == (-10_000, 0)
    assert tumbling(-10_000, 10_000) == (-10_000, 0)
    assert tumbling(-10_001, 10_000) == (-20_000, -10_000)
    assert sliding(-1, 10_000, 5_000) == [(-10_000, 0), (-5_000, 5_000)]


def test_a_window_end_belongs_to_the_next_window():
    """Windows are half-open: a row exactly on an end is in the next window only."""
    assert tumbling(10_000, 10_000) == (10_000, 20_000)
    assert sliding(10_000, 10_000, 5_000) == [(5_000, 15_000), (10_000, 20_000)]


@pytest.mark.parametrize(
    "size, slide, offset, message",
    [
        (0, None, 0, "a window size must be longer than zero"),
        (-1_000, None, 0, "a window size must be longer than zero"),
        (10_000, 0, 0, "a window slide must be longer than zero"),
        (10_000, 20_000, 0, r"the slide \(20 seconds\) must be at most the window size \(10 seconds\)"),
        (10_000, 5_000, 5_000, r"a window offset \(5 seconds\) must be shorter than the slide \(5 seconds\)"),
        (10_000, 5_000, -5_000, r"a window offset \(-5 seconds\) must be shorter than the slide"),
    ],
)
def test_spark_refuses_these_window_shapes_and_so_does_ministream(size, slide, offset, message):
    """Size <= 0, slide <= 0, slide > size and |offset| >= slide are refused, as Spark refuses them."""
    with pytest.raises(PipelineError, match=message):
        check_window(size, slide, offset)


def test_assigner_objects_parse_durations_and_check_their_shape():
    """Tumbling and Sliding take Spark's duration strings and refuse bad shapes when built."""
    assert Sliding("10 seconds", "5 seconds", "-2 seconds").assign(0) == [(-7_000, 3_000), (-2_000, 8_000)]
    assert Tumbling("1 minute").assign(61_000) == [(60_000, 120_000)]
    with pytest.raises(PipelineError, match="must be at most the window size"):
        Sliding("5 seconds", "10 seconds")


SPARK_TIMESTAMPS = [-25_001, -10_000, -9_999, -1, 0, 1, 4_999, 5_000, 9_999, 10_000, 12_345, 1_704_103_205_000]
SPARK_SHAPES = [
    (10_000, 10_000, 0),
    (10_000, 10_000, 3_000),
    (10_000, 10_000, -3_000),
    (10_000, 5_000, 0),
    (10_000, 3_000, 0),
    (10_000, 3_000, 1_000),
    (10_000, 4_000, -2_000),
]


@pytest.mark.spark
def test_assigners_match_spark_window_function(spark):
    """For timestamps before, on and after the epoch, Spark's window() gives exactly the windows the
    assigners give (a batch query: no streaming needed to check the arithmetic)."""
    from pyspark.sql import functions as F

    epoch = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    df = spark.createDataFrame([(epoch + _dt.timedelta(milliseconds=t),) for t in SPARK_TIMESTAMPS], "ts TIMESTAMP")
    for size, slide, offset in SPARK_SHAPES:
        w = F.window("ts", f"{size} milliseconds", f"{slide} milliseconds", f"{offset} milliseconds")
        rows = df.select(
            F.unix_millis("ts").alias("t"), F.unix_millis(w.start).alias("s"), F.unix_millis(w.end).alias("e")
        ).collect()
        spark_windows = {}
        for row in rows:
            spark_windows.setdefault(row.t, []).append((row.s, row.e))
        ours = {t: sliding(t, size, slide, offset) for t in SPARK_TIMESTAMPS}
        assert {t: sorted(ws) for t, ws in spark_windows.items()} == ours, (size, slide, offset)
