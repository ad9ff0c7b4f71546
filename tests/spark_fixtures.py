"""Pytest fixtures for tests that run real Spark: one SparkSession shared by the whole test session.

Loaded from ``tests/conftest.py`` through ``pytest_plugins``. Starting Spark takes about ten seconds, so every
test that asks for ``spark`` gets the same session (see :func:`ministream.spark.spark_session`). PySpark is
imported only when a test asks for ``spark``, so that the engine's tests run where PySpark is not installed.
"""

import pytest


@pytest.fixture
def spark():
    """The shared SparkSession (``local[2]`` unless ``MINISTREAM_SPARK_MASTER`` says otherwise).

    Looked up again for every test (a cheap call once Spark runs), so that a test that switched the session to
    another master and back (tests/spark/test_cluster.py) never leaves later tests holding a stopped session.

    >>> def test_something(spark):          # doctest: +SKIP
    ...     assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    """
    from ministream.spark import spark_session  # imports PySpark: only the tests that ask for Spark need it

    return spark_session()
