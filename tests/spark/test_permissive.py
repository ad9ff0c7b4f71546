"""Spark's JSON reader against ministream's dead letters (``spark/permissive.py``): each fact the module and
tutorial 05 state is what Spark's reader does on this machine's PySpark, and the twin run on Spark's reading
of a file gives the rows the tutorial explains."""

import pytest

from ministream.lessons.late_data import BAD_LINES, LESSON
from ministream.spark.permissive import read_as_spark, read_both_ways, spark_script

pytestmark = pytest.mark.spark

SCHEMA = "ts TIMESTAMP, key STRING, value DOUBLE"
T1 = 1_704_103_201_000  # 2024-01-01T10:00:01Z


def read_one(spark, text: str, streams=None):
    [line] = read_as_spark(spark, [text], SCHEMA, streams)
    return line.rows, line.corrupt


def test_each_kind_of_bad_line_as_spark_reads_it(spark):
    """Not JSON, or JSON that is no object: a malformed row of nulls. A field that does not fit: null, the rest
    kept, malformed. A missing field: null, not malformed. A number in a string column: text. A bare number of
    event time: seconds. Microseconds and NaN: kept. A field of no column: ignored. An array: a row per element."""
    nulls = {"batch": None, "ts": None, "key": None, "value": None}
    cases = {
        "not json at all": ([nulls], True),
        "5": ([nulls], True),
        "null": ([nulls], True),
        '{"batch": 0, "ts": "2024-13-01T10:00:03Z", "key": "b", "value": 2}': (
            [{"batch": 0, "ts": None, "key": "b", "value": 2.0}],
            True,
        ),
        '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": "x"}': (
            [{"batch": 0, "ts": T1, "key": "a", "value": None}],
            True,
        ),
        '{"batch": "1", "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 1}': (
            [{"batch": None, "ts": T1, "key": "a", "value": 1.0}],
            True,
        ),
        '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "value": 3}': (
            [{"batch": 0, "ts": T1, "key": None, "value": 3.0}],
            False,
        ),
        '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": 5, "value": 1, "extra": true}': (
            [{"batch": 0, "ts": T1, "key": "5", "value": 1.0}],
            False,
        ),
        '{"batch": 0, "ts": 1704103201, "key": "a", "value": 1}': (
            [{"batch": 0, "ts": T1, "key": "a", "value": 1.0}],
            False,
        ),
        '{"batch": 0, "ts": "2024-01-01T10:00:01.123456Z", "key": "a", "value": 1}': (
            [{"batch": 0, "ts": T1 + 123, "key": "a", "value": 1.0}],  # microseconds kept, floored to the ms here
            False,
        ),
        '[{"batch": 1, "key": "a"}, {"batch": 2, "key": "b"}]': (
            [{"batch": 1, "ts": None, "key": "a", "value": None}, {"batch": 2, "ts": None, "key": "b", "value": None}],
            False,
        ),
        "[]": ([], False),
    }
    lines = read_as_spark(spark, list(cases), SCHEMA)
    assert [line.line for line in lines] == list(range(1, len(cases) + 1))
    for line, (text, expected) in zip(lines, cases.items()):
        assert (line.text, line.rows, line.corrupt) == (text, *expected)


def test_nan_infinity_true_and_a_time_without_zone_are_read_too(spark):
    """``NaN`` and ``1e400`` are doubles to Spark's reader, ``true`` is the text "true" in a string column, and a
    time written with a space and no zone is read in the session's zone (UTC): none of them is malformed
    (ministream refuses each)."""
    [row], corrupt = read_one(spark, '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": NaN}')
    assert row["value"] != row["value"] and not corrupt
    [row], corrupt = read_one(spark, '{"batch": 0, "ts": "2024-01-01 10:00:01", "key": true, "value": 1e400}')
    assert row == {"batch": 0, "ts": T1, "key": "true", "value": float("inf")} and not corrupt


def test_the_input_name_of_a_two_input_file(spark):
    """With several inputs the ``stream`` field is read too; a row of no input reaches no query."""
    lines = read_as_spark(
        spark,
        [
            '{"batch": 0, "stream": "clicks", "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 1}',
            '{"batch": 0, "stream": "views", "ts": "2024-01-01T10:00:01Z", "key": "b", "value": 1}',
        ],
        SCHEMA,
        streams=["clicks", "impressions"],
    )
    assert spark_script(lines, ["clicks", "impressions"]) == {
        "clicks": [[{"ts": T1, "key": "a", "value": 1.0}]],
        "impressions": [[]],
    }


def test_the_late_data_twin_on_what_spark_reads_of_a_file_with_bad_lines(spark, tmp_path):
    """The late-data lesson's ``BAD_LINES``: ministream sets 4 lines aside and counts 1 row of key a in window :00-:10; Spark reads
    every line, counts 2 rows of a there (the line whose value it read as null: sum 1) and 1 of the null key,
    leaves the 2 rows of null event time out of every window, and its watermark moves on the bad lines' times."""
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(BAD_LINES) + "\n")
    both = read_both_ways(spark, path, LESSON.spark_schema(), LESSON.fields)
    assert [reading.letter.line for reading in both.readings] == [2, 3, 4, 5]
    assert [reading.spark.corrupt for reading in both.readings] == [True, True, False, True]
    window = {"window_start": T1 - 1_000, "window_end": T1 + 9_000}
    ministream = LESSON.run(both.script)
    assert [batch.rows for batch in ministream.output("output")] == [
        [],
        [],
        [{"key": "a", **window, "count": 1, "sum": 1.0}],
    ]
    spark_batches = LESSON.run_twin(both.spark_script)
    assert [batch.rows for batch in spark_batches][:2] == [[], []]
    assert sorted(spark_batches[2].rows, key=lambda row: row["key"] or "") == [
        {"key": None, **window, "count": 1, "sum": 3.0},
        {"key": "a", **window, "count": 2, "sum": 1.0},
    ]
    assert [batch.watermark for batch in spark_batches][:2] == [0, T1]  # :06, a bad line's time, minus 5 s
    assert ministream.watermarks[:2] == [0, T1 - 5_000]


def random_lines(count: int, seed: int) -> list[str]:
    """Lines of an events file with random values of every kind the reader takes: times in each written form
    (``T`` or a space, a fraction of 0 to 3 digits or 6 with trailing zeros, a zone ``Z``, ``+hh:mm``, ``+hhmm``,
    ``+hh`` or none) and some forms only Python reads, keys of any Unicode text, doubles of any size, whole
    numbers up to the edges of 64 bits; one field in ten of the lesson's own is null (drawn from a second
    generator, so that the rest of each line is the same as without them)."""
    import datetime as dt
    import json
    import random

    rng, nulls = random.Random(seed), random.Random(seed + 1)
    lines = []
    for _ in range(count):
        ms = rng.randrange(-50 * 365 * 86_400_000, 100 * 365 * 86_400_000)
        offset = rng.choice([0, 0, rng.randrange(-14 * 60, 14 * 60 + 1), rng.randrange(-14, 15) * 60])
        zone = dt.timezone(dt.timedelta(minutes=offset))
        moment = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(milliseconds=ms)
        local = moment.astimezone(zone)
        text = local.strftime("%Y-%m-%d") + rng.choice("T ") + local.strftime("%H:%M:%S")
        digits = rng.choice([0, 1, 2, 3, 6])
        fraction = f"{local.microsecond:06d}"
        if digits and fraction[digits:].strip("0") == "":
            text += "." + fraction[:digits]
        elif local.microsecond:
            text += "." + fraction[:3]
        sign, minutes = ("-" if offset < 0 else "+"), abs(offset)
        zones = [f"{sign}{minutes // 60:02d}:{minutes % 60:02d}", f"{sign}{minutes // 60:02d}{minutes % 60:02d}"]
        if minutes % 60 == 0:
            zones.append(f"{sign}{minutes // 60:02d}")
        if offset == 0:
            zones += ["Z", "", "z"]  # no zone is UTC in both (the session's zone is UTC); "z" only Python reads
        text += rng.choice(zones)
        key = "".join(
            chr(rng.choice([rng.randrange(32, 127), rng.randrange(160, 0xD800)])) for _ in range(rng.randrange(0, 6))
        )
        value = rng.choice([rng.uniform(-1e6, 1e6), rng.randrange(-(10**6), 10**6), 10.0 ** rng.randrange(-300, 300)])
        n = rng.choice([rng.randrange(-(2**63), 2**63), rng.randrange(-100, 100), 2**63 - 1, -(2**63), 2**63])
        fields = {"key": key, "value": value, "n": n}
        fields = {name: None if nulls.random() < 0.1 else field for name, field in fields.items()}
        lines.append(json.dumps({"batch": 0, "ts": text, **fields}))
    return lines


def test_every_line_ministream_reads_spark_reads_into_the_same_row(spark):
    """Where ministream reads a line, Spark's JSON reader reads the same row, not malformed (500 random lines of
    seed 1129 and the forms measured on the way): a file that runs in ministream gives a Spark job the same
    events. Where they differed (a time without seconds, a comma before the fraction, a lowercase zone, a week
    date, a number beyond 64 bits), ministream now refuses the line. A field given as null is read as null by
    both."""
    from ministream.core.events import EventsFileError, Field, parse_events

    fields = [Field("key", str), Field("value", float), Field("n", int)]
    lines = random_lines(500, seed=1129)
    read = read_as_spark(spark, lines, "ts TIMESTAMP, key STRING, value DOUBLE, n BIGINT")
    agreed = refused = nulls_read = 0
    for text, spark_line in zip(lines, read):
        try:
            [[row]] = parse_events([text], fields)
        except EventsFileError:
            refused += 1
            continue
        assert ({k: v for k, v in spark_line.rows[0].items() if k != "batch"}, spark_line.corrupt) == (row, False), text
        agreed += 1
        nulls_read += None in row.values()
    assert agreed > 300 and refused > 20  # both sides of the rule were exercised
    assert nulls_read > 50  # and lines with a null field
