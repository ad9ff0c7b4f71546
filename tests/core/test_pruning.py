"""Column pruning (core/pruning.py): the columns of a step's output that the steps after it read, kind by kind.
What Spark does with them is measured in tests/operators/test_stream_join.py and test_dedup.py."""

import pytest

from ministream import CollectingSink, Count, Custom, Dataflow, Max, ScriptedSource, Tumbling
from ministream.core.pruning import columns_read_after
from ministream.core.steps import RowCondition
from ministream.time.ranges import TimeRange

WINDOW = Tumbling("1 second")

AFTER = {  # the steps after "events" (a stream of ts, key, value, other): the columns they read
    "a sink": (lambda s: s.sink("out", CollectingSink()), None),
    "a map": (lambda s: s.map("copy", dict).window("w", WINDOW, n=Count()), None),
    "a window": (lambda s: s.key_by("key").window("w", WINDOW, top=Max("value")), {"key", "ts", "value"}),
    "a window of count(*)": (lambda s: s.window("w", WINDOW, n=Count()), {"ts"}),
    "a custom aggregate of whole rows": (lambda s: s.window("w", WINDOW, c=Custom(None, list, list.append)), None),
    "a key from a function": (lambda s: s.key_by(lambda row: row["key"]).aggregate("n", n=Count()), None),
    "a select then a window": (
        lambda s: s.select("renamed", t="ts", v="value", o="other").window("w", WINDOW, column="t", top=Max("v")),
        {"ts", "value"},
    ),
    "a filter that declares its columns": (
        lambda s: s.filter("big", bool, columns="other").window("w", WINDOW, n=Count()),
        {"other", "ts"},
    ),
    "a filter that does not": (lambda s: s.filter("any", bool).window("w", WINDOW, n=Count()), None),
    "a deduplication then a count per key": (
        lambda s: s.drop_duplicates("unique", ["key"]).key_by("key").aggregate("n", n=Count()),
        {"key"},
    ),
    "a deduplication of whole rows": (
        lambda s: s.drop_duplicates("unique").key_by("key").aggregate("n", n=Count()),
        None,
    ),
    "a window column then a count per window": (
        lambda s: (
            s.with_window("windowed", WINDOW, column="ts")
            .key_by(["window_start", "window_end"])
            .aggregate("n", n=Count())
        ),
        {"ts"},
    ),
    "two readers": (
        lambda s: [s.key_by("key").aggregate("n", n=Count()), s.window("w", WINDOW, top=Max("value"))],
        {"key", "ts", "value"},
    ),
}


@pytest.mark.parametrize("after", sorted(AFTER))
def test_the_columns_read_after_a_step(after):
    """Each kind of step reads its own columns and passes on what is read after it; a sink, a map, a key from a
    function, a filter or aggregate of whole rows read every column (None)."""
    flow = Dataflow("f")
    events = flow.source("events", ScriptedSource([]))
    steps, expected = AFTER[after]
    steps(events)
    read = columns_read_after(flow, flow.step("events"))
    assert read == (None if expected is None else frozenset(expected))


def test_a_join_reads_its_keys_range_and_conditions_and_passes_on_what_is_read_after_it():
    """A join side's input is read for its keys, its time range column and its one-sided condition's columns,
    and for every column read after the join."""
    flow = Dataflow("f")
    left = flow.source("left", ScriptedSource([])).select("l", l_key="key", l_ts="ts", l_v="value", l_o="other")
    right = flow.source("right", ScriptedSource([])).select("r", r_key="key", r_ts="ts", r_v="value")
    joined = left.key_by("l_key").join(
        "join",
        right.key_by("r_key"),
        between=TimeRange("l_ts", "r_ts", 0, 1_000),
        left_where=RowCondition(bool, ("l_o",)),
    )
    joined.key_by([]).window("w", WINDOW, column="l_ts", top=Max("r_v"))
    # each side: its own columns the join reads, and every column read after it (the other side's too)
    assert columns_read_after(flow, flow.step("l")) == frozenset({"l_key", "l_ts", "l_o", "r_v"})
    assert columns_read_after(flow, flow.step("r")) == frozenset({"r_key", "r_ts", "l_ts", "r_v"})
    assert columns_read_after(flow, flow.step("join")) == frozenset({"l_ts", "r_v"})


def test_a_join_with_a_condition_on_the_pair_reads_every_column():
    """A condition on the pair sees both whole rows: every column of each side is read."""
    flow = Dataflow("f")
    left = flow.source("left", ScriptedSource([])).select("l", l_key="key", l_ts="ts")
    right = flow.source("right", ScriptedSource([])).select("r", r_key="key", r_ts="ts")
    joined = left.key_by("l_key").join("join", right.key_by("r_key"), where=lambda a, b: True)
    joined.key_by([]).window("w", WINDOW, column="l_ts", n=Count())
    assert columns_read_after(flow, flow.step("r")) is None
