"""The conformance suite's catalog: every suite's cases, which the tests replay, and the page that counts them.

Each ``suite_*.py`` module defines ``SUITE``, ``SOURCE`` (the upstream test file), ``CASES`` (the tests
replayed) and ``NOT_EXPRESSIBLE`` (the tests that are not, each with its reason). ``python -m
tests.conformance.catalog`` writes ``tutorials/conformance.md`` from them; ``--check`` says whether the page
is up to date (the test suite runs that check).
"""

from __future__ import annotations

import os

from tests.conformance import (
    suite_apply_in_pandas_with_state,
    suite_event_time_watermark,
    suite_streaming_aggregation,
    suite_streaming_deduplication,
    suite_streaming_join,
    suite_pyspark_transform_with_state,
    suite_streaming_session_window,
    suite_transform_with_state,
)

SUITES = [
    suite_event_time_watermark,
    suite_streaming_aggregation,
    suite_streaming_deduplication,
    suite_streaming_session_window,
    suite_streaming_join,
    suite_transform_with_state,
    suite_pyspark_transform_with_state,
    suite_apply_in_pandas_with_state,
]
"""The suite modules, in the order of the page."""

ENGINE_CASES = [case for suite in SUITES for case in suite.CASES]
NOT_EXPRESSIBLE = [item for suite in SUITES for item in suite.NOT_EXPRESSIBLE]

ALL_SPARK = os.environ.get("MINISTREAM_CONFORMANCE", "").strip().lower() == "all"
"""``MINISTREAM_CONFORMANCE=all``: the Spark replay runs every case it can, not only those marked for CI."""

SPARK_CASES = [case for case in ENGINE_CASES if case.spark is None and (case.ci or ALL_SPARK)]


def case_id(case) -> str:
    """A case's test id: its suite and test name."""
    return case.id
