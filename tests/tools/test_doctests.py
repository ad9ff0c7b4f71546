"""Every ``>>>`` example in the package's modules runs and gives the output it shows."""

import doctest
import importlib
import pkgutil

import pytest

import ministream

SPARK_MODULES = {"ministream.spark.session", "ministream.spark.source", "ministream.spark.collect"}


def package_modules():
    names = ["ministream"]
    for info in pkgutil.walk_packages(ministream.__path__, "ministream."):
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module_name", package_modules())
def test_module_examples_run(module_name):
    """A module's docstring examples print exactly what they claim."""
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
