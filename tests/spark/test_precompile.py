"""Compiled bytecode in the zips Spark's Python processes import PySpark from (ministream/spark/precompile.py)."""

import subprocess
import sys
import zipfile

import pytest

from ministream.spark.precompile import _up_to_date, add_bytecode, spark_zips

pytestmark = pytest.mark.spark


def _import_from(zip_path, module: str) -> str:
    """``module.__file__`` and ``module.VALUE`` in a new Python that finds ``module`` in ``zip_path`` only."""
    code = f"import sys; sys.path.insert(0, {str(zip_path)!r}); import {module} as m; print(m.__file__, m.VALUE)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_the_zip_importer_runs_the_added_bytecode(tmp_path):
    """Bytecode added to a zip is what Python's zip importer runs, and adding it again changes nothing."""
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("pkg/__init__.py", "")
        zipped.writestr("pkg/tests/__init__.py", "")
        zipped.writestr("pkg/mod.py", "VALUE = 1\n")
    assert _import_from(archive, "pkg.mod").endswith("pkg/mod.py 1")  # compiled from source
    assert add_bytecode(archive) is True and add_bytecode(archive) is False
    with zipfile.ZipFile(archive) as zipped:
        assert sorted(zipped.namelist()) == [
            "pkg/__init__.py",
            "pkg/__init__.pyc",
            "pkg/mod.py",
            "pkg/mod.pyc",
            "pkg/tests/__init__.py",
        ]  # tests keep their source only
    assert _import_from(archive, "pkg.mod").endswith("pkg/mod.pyc 1")  # the bytecode


def test_bytecode_that_does_not_match_its_source_is_not_run(tmp_path):
    """The .pyc is checked against the hash of the source beside it: a changed source is compiled again."""
    archive = tmp_path / "lib.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("mod.py", "VALUE = 1\n")
    add_bytecode(archive)
    with zipfile.ZipFile(archive) as zipped:
        stale = zipped.read("mod.pyc")
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("mod.py", "VALUE = 2\n")
        zipped.writestr("mod.pyc", stale)
    assert _import_from(archive, "mod").endswith(" 2")
    with zipfile.ZipFile(archive) as zipped:
        assert not _up_to_date(zipped)


def test_make_setup_compiled_the_installed_pyspark_zips():
    """After make setup, the pyspark and py4j zips Spark's workers import from carry up-to-date bytecode."""
    zips = spark_zips()
    assert {path.name.split("-")[0] for path in zips} >= {"pyspark.zip", "py4j"}
    for path in zips:
        with zipfile.ZipFile(path) as zipped:
            assert _up_to_date(zipped), f"{path} has no bytecode: run .venv/bin/python -m ministream.spark.precompile"
