"""Spark's and Flink's own streaming tests as ministream's conformance suite: one test per case.

``test_engine`` replays a case in ministream and checks every answer against the rows the original test
asserts; ``test_spark`` replays the same steps through the case's PySpark twin, so that the transcription
itself is checked against the real engine (in CI, the cases marked ``ci``; all of them with
``MINISTREAM_CONFORMANCE=all``). The cases, per suite, are in ``suite_*.py``; ``tutorials/conformance.md``
counts them (``python -m tests.conformance.catalog`` writes it).
"""

import pytest

from tests.conformance.catalog import ENGINE_CASES, NOT_EXPRESSIBLE, SPARK_CASES, case_id
from tests.conformance.harness import run_engine


@pytest.mark.parametrize("case", ENGINE_CASES, ids=case_id)
def test_engine(case):
    """ministream gives every answer the Spark (or Flink) test asserts."""
    run_engine(case)


@pytest.mark.spark
@pytest.mark.parametrize("case", SPARK_CASES, ids=case_id)
def test_spark(case, spark):
    """Spark, running the case's twin on the same batches, gives every answer the test asserts."""
    from tests.conformance.spark_replay import run_spark

    run_spark(case, spark)


def test_every_case_is_replayed_or_listed_with_a_reason():
    """A case is replayed or listed as not expressible with its reason, never both, and no id twice."""
    replayed = [case.id for case in ENGINE_CASES]
    listed = [item.id for item in NOT_EXPRESSIBLE]
    assert len(set(replayed)) == len(replayed)
    assert len(set(listed)) == len(listed)
    assert not set(replayed) & set(listed)
    assert all(item.reason for item in NOT_EXPRESSIBLE)
