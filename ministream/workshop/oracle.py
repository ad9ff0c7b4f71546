"""Oracles: where a check gets the right answers, from Spark itself or from ministream's rules.

A workshop check compares the learner's code with the answers of an *oracle*:

- :class:`SparkOracle` asks Spark: the windows Spark's ``window()`` puts an event in (a small batch query), and
  the output of a lesson's PySpark twin on the lesson's events (the streaming query, batch by batch, with
  Spark's own watermarks). Each answer is computed once per process, so a notebook kernel pays for a query
  only the first time a check needs it.
- :class:`MinistreamOracle` gives the same answers from ministream's rules and runs (``windows.sliding``,
  ``Lesson.run``), which the lesson tests compare with Spark row for row. It needs no Spark session: the tests
  that feed the checks hundreds of wrong answers use it, and one Spark test checks that both oracles agree.

>>> oracle = get_oracle("ministream")
>>> oracle.name, oracle.windows([12_345, -1], size=10_000, slide=5_000)
('ministream', {12345: [(5000, 15000), (10000, 20000)], -1: [(-10000, 0), (-5000, 5000)]})
>>> [batch.watermark % 60_000 for batch in oracle.twin_output("tumbling-window")]
[0, 58000, 7000, 20000, 35000]
"""

from __future__ import annotations

import json

from ministream.core.results import BatchResult, normalize_value
from ministream.lessons import get_lesson
from ministream.time.windows import sliding

ORACLES = ("spark", "ministream")


class MinistreamOracle:
    """The right answers from ministream's own rules and runs (compared with Spark by the lesson tests)."""

    name = "ministream"

    def windows(self, timestamps, size: int, slide: int | None = None, offset: int = 0) -> dict[int, list]:
        """``{ts: [(start, end), ...]}``, earliest first: the windows that contain each event time."""
        return {ts: sliding(ts, size, slide or size, offset) for ts in timestamps}

    def twin_output(self, lesson_name: str, params: dict | None = None) -> list[BatchResult]:
        """The lesson's output on its default events, batch by batch (ministream's run)."""

        return get_lesson(lesson_name).run(params=params).output()


class SparkOracle:
    """The right answers from Spark: ``window()`` in a batch query, and the lesson's PySpark twin.

    State: ``self.cache[(what, arguments as JSON)] = answer``, kept for the life of the process (a notebook's
    kernel), because a Spark query costs seconds.
    """

    name = "Spark"

    def __init__(self):
        self.cache: dict[tuple[str, str], object] = {}

    def windows(self, timestamps, size: int, slide: int | None = None, offset: int = 0) -> dict[int, list]:
        """``{ts: [(start, end), ...]}`` from ``window(ts, size, slide, startTime)`` on a batch DataFrame."""
        slide = slide or size
        place = ("windows", json.dumps([sorted(set(timestamps)), size, slide, offset]))
        if place not in self.cache:
            self.cache[place] = self._spark_windows(sorted(set(timestamps)), size, slide, offset)
        return self.cache[place]

    def twin_output(self, lesson_name: str, params: dict | None = None) -> list[BatchResult]:
        """The lesson's PySpark twin run on the lesson's default events: Spark's batches, rows and watermarks."""

        place = ("twin", json.dumps([lesson_name, sorted((params or {}).items())]))
        if place not in self.cache:
            self.cache[place] = get_lesson(lesson_name).run_twin(params=params)
        return self.cache[place]

    @staticmethod
    def _spark_windows(timestamps: list[int], size: int, slide: int, offset: int) -> dict[int, list]:
        from pyspark.sql import functions as F

        from ministream.spark import spark_session

        spark = spark_session()
        frame = spark.createDataFrame([(ts,) for ts in timestamps], "ms BIGINT")
        windows = frame.select(
            "ms",
            F.window(
                F.timestamp_millis("ms"), f"{size} milliseconds", f"{slide} milliseconds", f"{offset} milliseconds"
            ).alias("w"),
        )
        found: dict[int, list] = {ts: [] for ts in timestamps}
        for row in windows.select("ms", "w.start", "w.end").toArrow().to_pylist():
            found[row["ms"]].append((normalize_value(row["start"]), normalize_value(row["end"])))
        return {ts: sorted(spans) for ts, spans in found.items()}


_SPARK = None


def get_oracle(against: str = "spark"):
    """The oracle called ``against``: ``"spark"`` (one per process, its answers cached) or ``"ministream"``.

    >>> get_oracle("flink")
    Traceback (most recent call last):
    ...
    ValueError: a check compares against 'spark' or 'ministream', not 'flink'
    """
    global _SPARK
    if against == "ministream":
        return MinistreamOracle()
    if against == "spark":
        if _SPARK is None:
            _SPARK = SparkOracle()
        return _SPARK
    raise ValueError(f"a check compares against 'spark' or 'ministream', not {against!r}")
