"""The state diff (lessons/state_compare.py): each kind of stateful step's state mapped onto Spark's stores, and,
for one lesson of each kind, equal to what Spark's state data source reads after every batch."""

import pytest

from ministream.errors import PipelineError
from ministream.lessons import all_lessons, get_lesson
from ministream.lessons.state_compare import LEFT_OUT, MAPPED, compare_state, ministream_state_rows


def _after(name: str, batch_id: int) -> list:
    batch = ministream_state_rows(get_lesson(name))[batch_id]
    return sorted((row["store"], row["key"], row["value"]) for row in batch.rows)


def test_every_stateful_lesson_is_mapped_or_says_why_not():
    """A lesson with keyed state is either diffed against Spark's state or listed with the reason it is not."""
    stateful = [
        lesson.name
        for lesson in all_lessons()
        if any(step.spec.keyed for step in lesson.pipeline(lesson.default_script, lesson.resolve_params()).steps)
    ]
    assert sorted(stateful) == sorted([*MAPPED, *LEFT_OUT])


def test_a_lesson_the_diff_leaves_out_is_refused_with_its_reason():
    """Asking for the state diff of a lesson it leaves out names the reason."""
    with pytest.raises(PipelineError, match="crash and restart at another parallelism"):
        ministream_state_rows(get_lesson("rescale"))


def test_a_window_is_part_of_the_key_and_a_session_keyed_by_its_start():
    """Tumbling windows: key (key, start, end), value the buffer; sessions: key (key, start), value with the
    window and the grouping column, as Spark's session store keeps it."""
    assert _after("tumbling-window", 0)[0] == ("default", ("a", 1704103200000, 1704103210000), (2, 4.0, 3.0))
    assert _after("session-window", 1)[0] == (
        "default",
        ("a", 1704103201000),
        ("a", 1704103201000, 1704103214000, 2, 3.0),
    )


def test_a_join_side_maps_onto_keyToNumValues_and_keyWithIndexToValue():
    """ministream's {key: [rows, matched]} per side becomes Spark's count per key and one row per kept row,
    with its matched flag (the index left out)."""
    rows = [row for row in _after("stream-join", 1) if row[1] == ("b",) and row[0].startswith("right")]
    assert rows == [
        ("right-keyToNumValues", ("b",), (2,)),
        ("right-keyWithIndexToValue", ("b",), ("b", 1704103215000, True)),
        ("right-keyWithIndexToValue", ("b",), ("b", 1704103230000, False)),
    ]


def test_transform_with_state_map_state_is_a_row_per_entry():
    """A map state variable is read as Spark's stateVarName store: (grouping key, map key) -> the value."""
    assert _after("device-sessions", 1) == [
        ("sessions", ("d1", "s1"), (1704103202000, 1704103225000, 3, 10.0)),
        ("sessions", ("d2", "s7"), (1704103204000, 1704103219000, 2, 5.0)),
    ]


@pytest.mark.spark
@pytest.mark.parametrize(
    "name", ["tumbling-window", "session-window", "deduplication", "outer-join", "device-sessions", "state-ttl"]
)
def test_state_after_every_batch_equals_sparks(spark, name):
    """After every batch, ministream's state equals what Spark's state data source reads, store by store
    (one lesson for each kind of stateful step: window, session, dedup, join, transformWithState, and values
    with a time-to-live, Spark's processing times replayed)."""
    result = compare_state(get_lesson(name))
    assert result.matches, result.table()


@pytest.mark.spark
def test_ministream_state_with_spark_prints_both_engines_state(spark, capsys):
    """`ministream state LESSON --batch N --spark` prints ministream's state after batch N, then Spark's, as the
    state diff maps it: the same keys and values."""
    from ministream.tools.cli import main

    assert main(["state", "deduplication", "--batch", "1", "--spark"]) == 0
    out = capsys.readouterr().out
    ours, theirs = out.split("Spark's state data source")
    assert "dedup: seen\n    'e1': None\n    'e2': None\n    'e3': None" in ours
    assert theirs.splitlines()[1:] == [
        "after batch 1",
        "  default: ('e1',) -> (None,)",
        "  default: ('e2',) -> (None,)",
        "  default: ('e3',) -> (None,)",
    ]
