"""Events files (ministream.core.events): one test per rule of the format, with the exact message a user sees."""

import doctest
import json

import pytest

import ministream.core.events
import ministream.core.results
import ministream.time.units
from ministream.core.events import DeadLetter, EventsFileError, Field, parse_events, read_events, write_events

FIELDS = [Field("key", str), Field("value", float)]
EXAMPLE = '{"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": 1.0}'
T0 = 1704103205000  # 2024-01-01T10:00:05Z


def line(**event) -> str:
    """A well-formed line with some of its fields replaced (a value of ... drops the field)."""
    base = {"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": 1}
    base.update(event)
    return json.dumps({name: value for name, value in base.items() if value is not ...})


def error(lines, fields=FIELDS, streams=None) -> EventsFileError:
    with pytest.raises(EventsFileError) as caught:
        parse_events(lines, fields, streams, source_name="events.jsonl")
    return caught.value


# --- what a good file gives ------------------------------------------------------------------------------------


def test_rows_carry_ts_in_ms_and_the_lesson_fields_but_not_batch():
    """A line becomes a row of ts (int ms) and the lesson's fields, in the batch its `batch` names."""
    assert parse_events([line(value=2.5)], FIELDS) == [[{"ts": T0, "key": "a", "value": 2.5}]]


def test_skipped_batch_numbers_are_empty_batches():
    """Batch numbers that are skipped, from 0 on, are empty micro-batches."""
    script = parse_events([line(batch=1), line(batch=3, key="b")], FIELDS)
    assert script == [[], [{"ts": T0, "key": "a", "value": 1.0}], [], [{"ts": T0, "key": "b", "value": 1.0}]]


def test_lines_of_the_same_batch_keep_their_file_order():
    """Events of one batch stay in the order of the file, and a batch number may repeat."""
    script = parse_events([line(key="x"), line(key="y"), line(batch=1, key="z")], FIELDS)
    assert [[row["key"] for row in batch] for batch in script] == [["x", "y"], ["z"]]


def test_blank_lines_are_skipped_but_still_counted():
    """Blank lines are allowed, and line numbers in messages still count them."""
    assert parse_events(["", line(), "   ", "\n"], FIELDS) == [[{"ts": T0, "key": "a", "value": 1.0}]]
    assert error(["", "", "oops"]).line == 3


def test_float_fields_accept_json_integers_and_give_floats():
    """A float field takes any JSON number, integer or not, and holds a float."""
    value = parse_events([line(value=3)], FIELDS)[0][0]["value"]
    assert value == 3.0 and isinstance(value, float)


def test_int_fields_take_whole_numbers_only():
    """An int field takes a JSON integer and refuses a number with a fraction."""
    fields = [Field("n", int)]
    assert parse_events([line(key=..., value=..., n=4)], fields) == [[{"ts": T0, "n": 4}]]
    assert (
        str(error([line(key=..., value=..., n=1.5)], fields))
        == "events.jsonl line 1, field 'n': 1.5 is not a whole number: write it like 3"
    )


def test_timestamps_with_an_offset_are_converted_to_utc():
    """ts is ISO-8601; one with an offset names the same UTC instant, however the offset is written."""
    for ts in (
        "2024-01-01T11:00:05+01:00",
        "2024-01-01T11:00:05+0100",
        "2024-01-01T11:00:05+01",
        "2024-01-01 10:00:05",
    ):
        assert parse_events([line(ts=ts)], FIELDS)[0][0]["ts"] == T0


@pytest.mark.parametrize(
    "ts",
    ["20240101T100005Z", "2024-W01-1T10:00:05Z", "2024-01-01T10:00Z", "2024-01-01T10:00:05,5Z", "2024-01-01T10:00:05z"],
)
def test_timestamps_spark_reads_as_null_are_refused(ts):
    """Forms Python reads but Spark's JSON reader makes null of (the basic format, a week date, no seconds, a comma
    before the fraction, a lowercase zone) are refused, saying how to write the time."""
    assert str(error([line(ts=ts)])).startswith(
        f"events.jsonl line 1, field 'ts': {ts!r} is not a timestamp Spark's JSON reader reads: write the date"
    )


def test_int_fields_fit_64_bits():
    """An int field holds Spark's BIGINT: a number beyond 64 bits, which Spark's reader makes null, is refused."""
    fields = [Field("n", int)]
    assert parse_events([line(key=..., value=..., n=2**63 - 1)], fields)[0][0]["n"] == 2**63 - 1
    assert str(error([line(key=..., value=..., n=2**63)], fields)) == (
        "events.jsonl line 1, field 'n': 9223372036854775808 is out of range: a whole number fits 64 bits, from "
        "-9223372036854775808 to 9223372036854775807"
    )


def test_two_inputs_are_split_by_stream_and_padded_to_the_same_length():
    """With streams, each line names its input in `stream`; every input gets the same number of batches."""
    fields = [Field("order_id", str)]
    lines = [
        line(key=..., value=..., stream="orders", order_id="o1"),
        line(key=..., value=..., stream="payments", order_id="o1", batch=2),
    ]
    assert parse_events(lines, fields, streams=["orders", "payments"]) == {
        "orders": [[{"ts": T0, "order_id": "o1"}], [], []],
        "payments": [[], [], [{"ts": T0, "order_id": "o1"}]],
    }


def test_field_kinds_are_str_float_or_int():
    """A Field's kind is one of str, float and int, the kinds an events file can hold."""
    with pytest.raises(ValueError, match="kind"):
        Field("when", list)


# --- what a bad line is told ---------------------------------------------------------------------------------------


def test_a_line_that_is_not_json_is_refused():
    """A line that is not JSON is refused, with an example of a good line."""
    assert str(error([line(), '{"batch": 0,'])) == (
        "events.jsonl line 2: this is not valid JSON (Expecting property name enclosed in double quotes at "
        f"column 13): write each event as one JSON object on its own line, like {EXAMPLE}"
    )


def test_a_line_that_is_not_an_object_is_refused():
    """A JSON value other than an object is refused, naming what it is."""
    assert (
        str(error(["[1, 2]"]))
        == f"events.jsonl line 1: this is an array, not an object: write each event like {EXAMPLE}"
    )
    assert "this is a number, not an object" in str(error(["7"]))
    assert "this is null, not an object" in str(error(["null"]))


@pytest.mark.parametrize("name", ["batch", "ts", "key", "value"])
def test_a_missing_field_is_refused(name):
    """Every event needs batch, ts and each lesson field."""
    err = error([line(**{name: ...})])
    assert (err.line, err.field) == (1, name)
    assert str(err).startswith(f"events.jsonl line 1, field {name!r}: missing: every event needs ")
    assert str(err).endswith(f"like {EXAMPLE}")


def test_a_missing_field_message_names_every_field():
    """The message about a missing field lists all the fields an event needs."""
    assert str(error([line(ts=...)])) == (
        f"events.jsonl line 1, field 'ts': missing: every event needs 'batch', 'ts', 'key' and 'value', like {EXAMPLE}"
    )


@pytest.mark.parametrize("name", ["batch", "ts"])
def test_a_null_batch_or_time_is_refused(name):
    """The batch and the event time may not be null: the line says so."""
    assert str(error([line(**{name: None})])).startswith(
        f"events.jsonl line 1, field {name!r}: null: every event needs"
    )


def test_a_null_lesson_field_is_read_as_none():
    """A lesson's own field given as null is read as None, as Spark's JSON reader reads it: a null key, a null
    value (the engine groups the one and skips the other in a sum, as Spark does)."""
    script = parse_events([line(key=None), line(value=None)], FIELDS)
    assert [row["key"] for row in script[0]] == [None, "a"]
    assert [row["value"] for row in script[0]] == [1.0, None]


@pytest.mark.parametrize(
    "batch, problem",
    [
        (True, "true is not a whole number: batches are numbered 0, 1, 2, ..."),
        (1.5, "1.5 is not a whole number: batches are numbered 0, 1, 2, ..."),
        ("2", "'2' is a string: write the batch number without quotes, like 2"),
    ],
)
def test_batch_must_be_an_integer(batch, problem):
    """A batch number is a JSON integer: not true/false, not a fraction, not a string."""
    assert str(error([line(batch=batch)])) == f"events.jsonl line 1, field 'batch': {problem}"


def test_batch_must_not_be_negative():
    """Batches are numbered from 0."""
    assert (
        str(error([line(batch=-1)]))
        == "events.jsonl line 1, field 'batch': -1 is negative: batches are numbered from 0"
    )


def test_batch_must_not_go_backwards():
    """Batch numbers never decrease through the file."""
    err = error([line(batch=2), "", line(batch=1)])
    assert (err.line, err.field) == (3, "batch")
    assert str(err) == (
        "events.jsonl line 3, field 'batch': batch 1 comes after batch 2 on line 1: batches "
        "must not go backwards, so sort the lines by batch"
    )


def test_ts_must_be_a_string():
    """ts is written as a string; a bare number is refused since its unit would be a guess."""
    assert str(error([line(ts=1704103205000)])) == (
        "events.jsonl line 1, field 'ts': 1704103205000 is not a timestamp "
        'string: write it in quotes, like "2024-01-01T10:00:05Z"'
    )


@pytest.mark.parametrize(
    "ts, shown",
    [
        (True, "true"),
        (1.5, "1.5"),
        (["2024-01-01T10:00:05Z"], '["2024-01-01T10:00:05Z"]'),
        ({"seconds": 5}, '{"seconds": 5}'),
    ],
)
def test_ts_of_any_other_json_kind_is_refused(ts, shown):
    """A ts that is true/false, a fraction, an array or an object is refused like a bare number: not a string."""
    assert str(error([line(ts=ts)])) == (
        f"events.jsonl line 1, field 'ts': {shown} is not a timestamp string: "
        'write it in quotes, like "2024-01-01T10:00:05Z"'
    )


def test_ts_must_be_iso_8601():
    """ts must parse as an ISO-8601 timestamp."""
    assert str(error(["", "", line(ts="2024-13-01")])) == (
        "events.jsonl line 3, field 'ts': '2024-13-01' is not an ISO-8601 timestamp: write it like "
        "'2024-01-01T10:00:05Z'"
    )


def test_ts_must_not_be_finer_than_a_millisecond():
    """Event time is kept in whole milliseconds, so a finer fraction is refused, not rounded."""
    assert str(error([line(ts="2024-01-01T10:00:05.0001Z")])) == (
        "events.jsonl line 1, field 'ts': '2024-01-01T10:00:05.0001Z' has a fraction finer than a millisecond; "
        "ministream keeps event time in whole milliseconds: keep at most 3 digits after the second, like "
        "'2024-01-01T10:00:05.250Z'"
    )


@pytest.mark.parametrize("text, shown", [("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity")])
def test_value_must_be_finite(text, shown):
    """A number field refuses NaN and the infinities, which JSON readers let through."""
    bad = f'{{"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": {text}}}'
    assert (
        str(error([bad]))
        == f"events.jsonl line 1, field 'value': {shown} is not a finite number: give a number like 1.5"
    )


@pytest.mark.parametrize(
    "value, problem",
    [
        ("3", "'3' is a string, not a number: write it without quotes, like 3"),
        ("lots", "'lots' is not a number: give a number like 1.5"),
        (True, "true is not a number: give a number like 1.5"),
        ([1], "[1] is not a number: give a number like 1.5"),
    ],
)
def test_value_must_be_a_number(value, problem):
    """A number field refuses strings, true/false and anything else that is not a JSON number."""
    assert str(error([line(value=value)])) == f"events.jsonl line 1, field 'value': {problem}"


def test_a_string_field_must_be_a_string():
    """A str field refuses a number and shows how to quote it."""
    assert (
        str(error([line(key=12)]))
        == "events.jsonl line 1, field 'key': 12 is not a string: write it in quotes, like \"12\""
    )


def test_an_unknown_field_is_refused_naming_the_allowed_ones():
    """A field the lesson does not have is refused, listing the fields it does have."""
    assert str(error([line(colour="red")])) == (
        "events.jsonl line 1, field 'colour': this lesson has no such field: "
        "the allowed fields are 'batch', 'ts', 'key' and 'value'"
    )


def test_stream_is_unknown_in_a_single_input_lesson():
    """`stream` is a field only when the lesson has several inputs."""
    assert error([line(stream="orders")]).field == "stream"


def test_an_unknown_stream_is_refused():
    """`stream` must name one of the lesson's inputs."""
    lines = [line(key=..., value=..., stream="refunds")]
    assert str(error(lines, [], ["orders", "payments"])) == (
        "events.jsonl line 1, field 'stream': 'refunds' is not an input of this lesson: use 'orders' or 'payments'"
    )


def test_a_two_input_line_needs_a_stream():
    """In a two-input lesson every line names its stream."""
    err = error([line(key=..., value=...)], [], ["orders", "payments"])
    assert str(err).startswith(
        "events.jsonl line 1, field 'stream': missing: every event needs 'batch', 'ts' and 'stream'"
    )


@pytest.mark.parametrize("lines", [[], ["", "   "]])
def test_an_empty_file_is_refused(lines):
    """A file without a single event is refused."""
    err = error(lines)
    assert (err.line, err.field) == (None, None)
    assert str(err) == f"events.jsonl: the file has no events: write one JSON object per line, like {EXAMPLE}"


def test_an_empty_file_on_disk_is_refused(tmp_path):
    """A file of 0 bytes is refused by read_events, naming the file."""
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(EventsFileError) as caught:
        read_events(empty, FIELDS)
    assert str(caught.value) == f"{empty}: the file has no events: write one JSON object per line, like {EXAMPLE}"


# --- dead letters ------------------------------------------------------------------------------------------------


def test_dead_letters_collect_bad_lines_instead_of_raising():
    """With a dead-letter list, bad lines are set aside with their reason and the good ones are read."""
    dead = []
    script = parse_events(
        [line(), "oops", line(batch=2, ts="later")], FIELDS, source_name="events.jsonl", dead_letters=dead
    )
    assert script == [[{"ts": T0, "key": "a", "value": 1.0}], [], []]
    assert [(d.path, d.line, d.text) for d in dead] == [
        ("events.jsonl", 2, "oops"),
        ("events.jsonl", 3, line(batch=2, ts="later")),
    ]
    assert dead[0].reason.startswith("this is not valid JSON (Expecting value at column 1)")
    assert dead[1] == DeadLetter(
        "events.jsonl",
        3,
        line(batch=2, ts="later"),
        "field 'ts': 'later' is not an ISO-8601 timestamp: write it like '2024-01-01T10:00:05Z'",
    )


def test_dead_letters_still_refuse_batches_going_backwards():
    """A batch number going backwards breaks the whole script, so it raises even with a dead-letter list."""
    with pytest.raises(EventsFileError, match="batch 0 comes after batch 1"):
        parse_events([line(batch=1), line(batch=0, ts="bad")], FIELDS, dead_letters=[])


def test_dead_letters_of_every_line_leave_no_events():
    """A file whose every line is set aside has no events, and the message says how many were set aside."""
    with pytest.raises(EventsFileError, match=r"the file has no events \(2 bad lines set aside\)"):
        parse_events(["x", "y"], FIELDS, dead_letters=[])


# --- files on disk ----------------------------------------------------------------------------------------------


def test_read_events_names_the_file_in_messages(tmp_path):
    """read_events reads a UTF-8 file and its messages name that file."""
    path = tmp_path / "events.jsonl"
    path.write_text(line() + "\n" + line(value="x") + "\n", encoding="utf-8")
    with pytest.raises(EventsFileError) as caught:
        read_events(path, FIELDS)
    assert str(caught.value).startswith(f"{path} line 2, field 'value': 'x' is not a number")
    assert caught.value.path == str(path)


def test_write_then_read_gives_the_same_script(tmp_path):
    """write_events is the inverse of read_events, empty middle batches and millisecond times included."""
    path = tmp_path / "events.jsonl"
    script = [
        [{"ts": T0 + 250, "key": "a", "value": 1.5}, {"ts": T0, "key": "b", "value": 2.0}],
        [],
        [{"ts": 0, "key": "a", "value": -3.0}],
    ]
    write_events(path, script, FIELDS)
    assert read_events(path, FIELDS) == script
    assert '"ts": "2024-01-01T10:00:05.250Z"' in path.read_text().splitlines()[0]


def test_write_then_read_two_inputs(tmp_path):
    """A two-input script goes through a file and back unchanged."""
    path = tmp_path / "events.jsonl"
    fields = [Field("order_id", str), Field("amount", float)]
    script = {
        "orders": [[{"ts": T0, "order_id": "o1", "amount": 5.0}], [], []],
        "payments": [[], [], [{"ts": T0 + 1, "order_id": "o1", "amount": 5.0}]],
    }
    write_events(path, script, fields, streams=["orders", "payments"])
    assert read_events(path, fields, streams=["orders", "payments"]) == script


def test_write_refuses_a_script_ending_with_an_empty_batch(tmp_path):
    """A file holds a batch only through its events, so a trailing empty batch cannot be written."""
    with pytest.raises(ValueError, match="ends with an empty batch"):
        write_events(tmp_path / "e.jsonl", [[{"ts": 0, "key": "a", "value": 1.0}], []], FIELDS)


# --- the examples in the docstrings ----------------------------------------------------------------------------


@pytest.mark.parametrize("module", [ministream.core.events, ministream.time.units, ministream.core.results])
def test_docstring_examples_run(module):
    """The >>> examples in the docstrings of events, times and results run as written."""
    failed, attempted = doctest.testmod(module, verbose=False)
    assert attempted > 0
    assert failed == 0
