"""Every ``>>>`` example in the package's modules runs and gives the output it shows."""

import doctest
import importlib
from pathlib import Path

import pytest

import ministream

PACKAGE = Path(ministream.__file__).parent

NEEDS = {
    "ministream.spark": pytest.mark.spark,  # imports PySpark
    "ministream.tools.cluster": pytest.mark.spark,  # its examples find Spark's scripts inside PySpark
    "ministream.workshop.checks_engine": pytest.mark.spark,  # check_key_group pickles with PySpark's cloudpickle
    "ministream.tools.plots": pytest.mark.notebook,  # draws with matplotlib
    "ministream.workshop.__main__": pytest.mark.notebook,  # the notebook build: nbformat
    "ministream.workshop.build": pytest.mark.notebook,
    "ministream.workshop.course": pytest.mark.notebook,
    "ministream.workshop.timings": pytest.mark.notebook,
}
"""Modules (and packages, with their modules) whose import or examples need an extra: marked, so that the engine's
tests (``make test-engine``) run where it is not installed."""


def package_modules():
    """Every module of the package, found on disk (importing them to list them would hide those that fail)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        marks = [mark for prefix, mark in NEEDS.items() if name == prefix or name.startswith(prefix + ".")]
        names.append(pytest.param(name, id=name, marks=marks))
    return sorted(names, key=lambda param: param.id)


@pytest.mark.parametrize("module_name", package_modules())
def test_module_examples_run(module_name):
    """A module's docstring examples print exactly what they claim."""
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
