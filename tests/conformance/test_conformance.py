"""Spark's and Flink's own streaming tests as ministream's conformance suite: one test per case.

``test_engine`` replays a case in ministream and checks every answer against the rows the original test
asserts; ``test_spark`` replays the same steps through the case's PySpark twin, so that the transcription
itself is checked against the real engine (in CI, the cases marked ``ci``; all of them with
``MINISTREAM_CONFORMANCE=all``). The cases, per suite, are in ``suite_*.py``; ``tutorials/conformance.md``
counts them (``python -m tests.conformance.catalog`` writes it).
"""

import pytest

from ministream.errors import PipelineError
from tests.conformance import catalog
from tests.conformance.catalog import ENGINE_CASES, NOT_EXPRESSIBLE, SPARK_CASES, case_id, run_case


@pytest.mark.parametrize("case", ENGINE_CASES, ids=case_id)
def test_engine(case):
    """ministream gives every answer the Spark (or Flink) test asserts; a case with an explained difference
    (``differs``) still differs: when it agrees, its explanation is out of date and the test says so."""
    if not getattr(case, "differs", ""):
        run_case(case)
        return
    try:
        run_case(case)
    except (AssertionError, PipelineError):
        return
    pytest.fail(f"{case.id} now agrees: drop its differs ({case.differs[:80]}...)")


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


def test_every_upstream_test_name_is_accounted_for():
    """Per suite, the test names of the replayed cases and of the listed ones add up to the upstream count."""
    for module in catalog.SUITES:
        names, classes = catalog.TEST_NAMES[module]
        replayed = sum(getattr(case, "variants", 1) for case in module.CASES)
        listed = sum(item.variants for item in module.NOT_EXPRESSIBLE)
        assert replayed + listed == names, (classes, replayed, listed, names)


def test_the_not_expressible_list_only_shrinks():
    """No test joins the list of tests that are not expressible (``not_expressible.txt`` froze it); when one
    becomes expressible, take it off the list and out of the file (``python -m tests.conformance.catalog
    --freeze``)."""
    frozen = set(catalog.BASELINE.read_text().splitlines())
    added = [item.id for item in NOT_EXPRESSIBLE if item.id not in frozen]
    assert not added, f"tests newly listed as not expressible: {added}"


def test_the_page_is_up_to_date():
    """``tutorials/conformance.md`` is what ``python -m tests.conformance.catalog`` writes."""
    assert catalog.PAGE.read_text() == catalog.render_page(), "run python -m tests.conformance.catalog"
