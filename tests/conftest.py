"""Shared test setup: a fixed environment for Spark and time, the Spark fixtures, and 'a skip in CI fails'."""

import os
import sys
import time

import pytest

# Before anything starts a JVM or formats a time: UTC, loopback, and Spark's workers on this very Python.
os.environ.setdefault("TZ", "UTC")
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
time.tzset()

# The `spark` fixture (tests/spark_fixtures.py) imports PySpark only when a test asks for it: the engine's tests
# are collected and run without PySpark installed (`make test-engine`).
pytest_plugins = ["tests.spark_fixtures"]


def pytest_collection_modifyitems(config, items):
    """A test that asks for the ``spark`` fixture is marked spark, so that the engine's tests leave it out."""
    unmarked = [
        item.nodeid
        for item in items
        if "spark" in getattr(item, "fixturenames", ()) and item.get_closest_marker("spark") is None
    ]
    if unmarked:
        raise pytest.UsageError("uses the spark fixture but is not marked @pytest.mark.spark: " + ", ".join(unmarked))


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _fail_if_skipped(report) -> None:
    if _in_ci() and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, and a skip in CI is a failure: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """In CI a skipped test is a failed test: every test, Spark's included, must really run there."""
    outcome = yield
    _fail_if_skipped(outcome.get_result())


_skipped_modules: list[str] = []


def pytest_collectreport(report):
    """A whole module skipped as it is collected (say by ``pytest.importorskip``) fails the run in CI too."""
    if _in_ci() and report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        _skipped_modules.append(f"{report.nodeid}: {reason}")


def pytest_terminal_summary(terminalreporter):
    for line in _skipped_modules:
        terminalreporter.write_line(f"FAILED (skipped in CI, and a skip in CI is a failure) {line}", red=True)


def pytest_sessionfinish(session, exitstatus):
    if _skipped_modules and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
