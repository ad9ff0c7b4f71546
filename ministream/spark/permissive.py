"""What Spark makes of an events file: its JSON reader, lenient by default, against ministream's dead letters.

ministream reads an events file strictly (``core/events.py``): a line it cannot read whole is refused, or set
aside as a *dead letter* with its reason, and never half-read. A Spark job that reads the same lines with
``spark.readStream.schema(...).json(...)`` runs in Spark's default mode, ``PERMISSIVE``: it reads every line
it can into a row and puts a null in each field it cannot read. Measured on PySpark 4.3.0
(``tutorials/spark-facts.md``, "Bad input"):

- a line that is not JSON, or JSON that is not an object (``5``, ``"x"``, ``null``), is a row of nulls;
- a field that does not fit its column is null and the rest of the line is kept (``"ts": "2024-13-01..."``
  gives a null ``ts``, ``"value": "x"`` a null ``value``), and the line is *malformed*: its text is kept in
  the column ``_corrupt_record`` when the schema has one, and ``mode=FAILFAST`` stops the query on it
  (``MALFORMED_RECORD_IN_PARSING``);
- a missing field is null, and the line is not malformed;
- Spark is also lenient where ministream is strict: a number in a string column is read as text (``"key": 5``
  gives ``"5"``), a bare number of event time as seconds since 1970, microseconds and ``NaN`` are kept, a field
  of no column is ignored, and a JSON array is read as one row per element (``[]`` as none).

:func:`read_as_spark` asks the Spark session itself how it reads each line of a file, with the column
``_corrupt_record`` added to the schema to see which lines it takes as malformed, and the batch number
(and input name, for several inputs) of ministream's events format. :class:`SparkReading` sets a dead letter
beside what Spark read from the same line, and :func:`spark_script` gives the batches Spark's reader would
hand a twin, so that the twin can run on them (``Lesson.run_twin``) and its rows be set against ministream's.

>>> from ministream.spark import spark_session                                 # doctest: +SKIP
>>> lines = read_as_spark(spark_session(), ['{"batch": 0, "ts": "2024-13-01T10:00:03Z", "key": "b"}'],
...                       "ts TIMESTAMP, key STRING")                          # doctest: +SKIP
>>> lines[0].rows, lines[0].corrupt                                            # doctest: +SKIP
([{'batch': 0, 'ts': None, 'key': 'b'}], True)
"""

from __future__ import annotations

from pathlib import Path

import attrs

from ministream.core.events import DeadLetter, read_events
from ministream.time.units import format_ts

CORRUPT = "_corrupt_record"
"""The column in which Spark's JSON reader keeps the text of a line it took as malformed."""


@attrs.frozen
class SparkLine:
    """One line of an events file as Spark's JSON reader reads it: its rows (one for a line that is not an
    array; a null where Spark could not read a field; ``ts`` in ms, floored to the ms when Spark kept
    microseconds) and whether Spark took it as malformed (``mode=FAILFAST`` would stop the query on it)."""

    line: int
    text: str
    rows: list[dict]
    corrupt: bool


@attrs.frozen
class SparkReading:
    """A dead letter beside what Spark's reader made of the same line.

    >>> letter = DeadLetter("e.jsonl", 2, '{"batch": 0, "ts": "2024-13-01T10:00:03Z", "key": "b"}',
    ...                     "field 'ts': '2024-13-01T10:00:03Z' is not an ISO-8601 timestamp")
    >>> print(SparkReading(letter, SparkLine(2, letter.text, [{"batch": 0, "ts": None, "key": "b"}], True)))
    line 2: ministream sets it aside (field 'ts': '2024-13-01T10:00:03Z' is not an ISO-8601 timestamp); Spark reads {'ts': null, 'key': 'b'}, malformed (FAILFAST would stop the query)
    """

    letter: DeadLetter
    spark: SparkLine

    def __str__(self) -> str:
        read = "no row" if not self.spark.rows else " and ".join(map(_shown, self.spark.rows))
        malformed = ", malformed (FAILFAST would stop the query)" if self.spark.corrupt else ""
        return (
            f"line {self.letter.line}: ministream sets it aside ({self.letter.reason}); Spark reads {read}{malformed}"
        )


def _shown(row: dict) -> str:
    """A row as Spark read it, without the batch number: timestamps as ISO text, null for a null."""
    fields = []
    for name, value in row.items():
        if name == "batch":
            continue
        shown = "null" if value is None else repr(format_ts(value) if name == "ts" else value)
        fields.append(f"{name!r}: {shown}")
    return "{" + ", ".join(fields) + "}"


def _lines(source) -> list[tuple[int, str]]:
    """The non-blank lines of a file (a path) or of a list of lines, numbered from 1 as the file numbers them;
    ministream's reader skips blank lines, and so does Spark's."""
    texts = Path(source).read_text(encoding="utf-8").split("\n") if isinstance(source, (str, Path)) else source
    return [(number, text.strip()) for number, text in enumerate(texts, start=1) if text.strip()]


def read_as_spark(spark, source, schema: str, streams: list[str] | None = None) -> list[SparkLine]:
    """How Spark's JSON reader, in its default ``PERMISSIVE`` mode, reads each line of an events file (a path, or
    a list of its lines): ``schema`` is the Spark schema of the events (``Lesson.spark_schema()``: ``ts`` then
    the lesson's fields), to which the batch number, the input name (with ``streams``) and ``_corrupt_record``
    are added.

    The lines are read in one Spark job, as one partition, so that Spark's rows come back in the order of the
    lines: every line but a JSON array gives exactly one row. An array line may give any number of rows, so
    each is read on its own (they are rare: ministream refuses them)."""
    from pyspark.sql import functions as F

    columns = f"batch BIGINT, {'stream STRING, ' if streams else ''}{schema}, {CORRUPT} STRING"

    def read(texts: list[str]) -> list[dict]:
        frame = (
            spark.read.schema(columns)
            .option("columnNameOfCorruptRecord", CORRUPT)
            .json(spark.sparkContext.parallelize(texts, 1))
        )
        # the event time as whole microseconds since 1970: exact, whatever the session's or the driver's zone
        frame = frame.select(*[F.unix_micros("ts").alias("ts") if name == "ts" else name for name in frame.columns])
        return [row.asDict() for row in frame.collect()]

    numbered = _lines(source)
    single = [(number, text) for number, text in numbered if not text.startswith("[")]
    rows_of = dict(zip((number for number, _ in single), ([row] for row in read([text for _, text in single]))))
    for number, text in numbered:
        if text.startswith("["):
            rows_of[number] = read([text])
    lines = []
    for number, text in numbered:
        rows = rows_of[number]
        corrupt = any(row[CORRUPT] is not None for row in rows)
        lines.append(SparkLine(number, text, [_row(row) for row in rows], corrupt))
    return lines


def _row(row: dict) -> dict:
    """A row of Spark's reading in the script's terms: ``ts`` in ms (floored), without ``_corrupt_record``."""
    plain = {name: value for name, value in row.items() if name != CORRUPT}
    if plain["ts"] is not None:
        plain["ts"] //= 1000
    return plain


def spark_readings(dead_letters: list[DeadLetter], lines: list[SparkLine]) -> list[SparkReading]:
    """Each dead letter beside Spark's reading of its line (``lines`` from :func:`read_as_spark`)."""
    by_line = {line.line: line for line in lines}
    return [SparkReading(letter, by_line[letter.line]) for letter in dead_letters]


def spark_script(lines: list[SparkLine], streams: list[str] | None = None):
    """The batches Spark's reader would hand a twin: every row it read, in the batch its line names, as a
    script (``{input: batches}`` with ``streams``). A row whose batch number Spark read as null or negative
    arrives with the line before it (a file is written in arrival order); a row of no input of ``streams`` (its
    ``stream`` null, or another name) reaches no query, as a Spark job that splits its input by a column would
    leave it out.

    >>> script = spark_script([SparkLine(1, "", [{"batch": 1, "ts": 1000, "key": "a"}], False),
    ...                        SparkLine(2, "", [{"batch": None, "ts": None, "key": None}], True)])
    >>> script
    [[], [{'ts': 1000, 'key': 'a'}, {'ts': None, 'key': None}]]
    """
    names = [*streams] if streams else [None]
    scripts: dict = {name: [] for name in names}
    batch = 0
    for line in lines:
        for row in line.rows:
            if row["batch"] is not None and row["batch"] >= 0:
                batch = row["batch"]
            for batches in scripts.values():
                batches.extend([] for _ in range(batch + 1 - len(batches)))
            stream = row.get("stream") if streams else None
            if stream in scripts:
                scripts[stream][batch].append({k: v for k, v in row.items() if k not in ("batch", "stream")})
    return scripts if streams else scripts[None]


@attrs.frozen
class BothReadings:
    """An events file read by ministream and by Spark: ``script``, the batches ministream runs on;
    ``dead_letters``, the lines it set aside; ``readings``, each dead letter beside Spark's reading of its line;
    ``spark_script``, the batches Spark's reader would give a twin."""

    script: object
    dead_letters: list[DeadLetter]
    readings: list[SparkReading]
    spark_script: object


def read_both_ways(spark, path, schema: str, fields, streams: list[str] | None = None) -> BothReadings:
    """Read an events file as ministream does, with dead letters (``core/events.py``: ``fields``, ``streams``),
    and as Spark's reader does (:func:`read_as_spark`, ``schema``). A file ministream cannot read at all (no
    such file, batch numbers that go backwards) raises ministream's error before Spark is asked."""
    dead_letters: list[DeadLetter] = []
    script = read_events(path, fields, streams, dead_letters=dead_letters)
    lines = read_as_spark(spark, path, schema, streams)
    return BothReadings(script, dead_letters, spark_readings(dead_letters, lines), spark_script(lines, streams))
