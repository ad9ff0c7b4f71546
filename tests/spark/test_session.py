"""The Spark session (``spark/session.py``): without Java, one clear message says what to install."""

import pytest

from ministream.spark.session import SparkUnavailableError, _check_java

pytestmark = pytest.mark.spark


def test_missing_java_gives_a_friendly_error(monkeypatch, tmp_path):
    """Without Java on the PATH or in JAVA_HOME, starting Spark fails with one message that says Spark needs Java."""
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkUnavailableError, match="Spark needs Java"):
        _check_java()
