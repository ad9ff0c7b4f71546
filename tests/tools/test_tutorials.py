"""Tutorials and the README are executed: their examples run, and their code blocks are the real source."""

import doctest
from pathlib import Path

import pytest

from ministream.tools.docs import stale_includes

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(ROOT.glob("tutorials/*.md")) + [ROOT / "README.md"]


def includes_spark_code(page):
    """A page that includes code of ministream.spark: reading that source imports PySpark."""
    return pytest.param(page, marks=[pytest.mark.spark] if "<!-- include ministream.spark." in page.read_text() else [])


def examples_need_spark(page):
    """A page whose examples import ministream.spark (the compiler of tutorial 02, say): PySpark is imported."""
    marks = [pytest.mark.spark] if ">>> from ministream.spark" in page.read_text() else []
    return pytest.param(page, marks=marks)


@pytest.mark.parametrize("page", [examples_need_spark(page) for page in PAGES], ids=lambda path: path.name)
def test_page_examples_run(page):
    """Every ``>>>`` example of a tutorial page prints what the page shows."""
    result = doctest.testfile(
        str(page), module_relative=False, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0


@pytest.mark.parametrize("page", [includes_spark_code(page) for page in PAGES], ids=lambda path: path.name)
def test_page_code_is_the_real_source(page):
    """Code included in a page equals the current source of the function it names
    (run ``python -m ministream.tools.docs`` to refresh it)."""
    assert stale_includes(page) == []
