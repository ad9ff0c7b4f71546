"""Compiled bytecode for the PySpark that Spark's own Python processes import, from ``pyspark.zip``.

Spark starts every Python process it needs (its Python worker daemon, the driver-side process that each
``transformWithState`` query starts while it plans, the Python data source's) with
``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on ``PYTHONPATH``. pip's PySpark ships those zips
with Python source only, and Python never writes compiled files into a zip: each of those processes compiled
every PySpark module it imports, again: several times slower than importing the installed package, which pip
compiled (``tutorials/spark-facts.md``, Costs).

Python's zip importer also reads a ``module.pyc`` stored next to ``module.py`` in the archive.
:func:`add_bytecode` adds one per module, *checked* and hash-based (PEP 552): the importer hashes the
module's source in the zip and uses the compiled code only when the hash matches, so a ``.pyc`` that does not
belong to its source is never run (Python compiles the source instead, as before). ``make setup`` runs
``python -m ministream.spark.precompile`` after installing PySpark; running it again changes nothing. A
cluster's Spark installation is not touched: only the zips of the PySpark installed beside ministream.

>>> import io
>>> buffer = io.BytesIO()
>>> with zipfile.ZipFile(buffer, "w") as archive:
...     archive.writestr("pkg/__init__.py", "ANSWER = 42\\n")
>>> with zipfile.ZipFile(buffer) as archive:
...     sorted(archive.namelist()), sorted(_with_bytecode(archive, "pkg.zip"))
(['pkg/__init__.py'], ['pkg/__init__.py', 'pkg/__init__.pyc'])
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import tempfile
import warnings
import zipfile
from pathlib import Path

CHECKED_HASH_PYC = 0b11
"""PEP 552 flags of a ``.pyc`` header: hash-based (bit 0), checked against the source (bit 1)."""


def spark_zips() -> list[Path]:
    """The zips on the ``PYTHONPATH`` of Spark's Python processes, for the PySpark installed here."""
    import pyspark

    folder = Path(pyspark.__file__).parent / "python" / "lib"
    return sorted(folder.glob("*.zip"))


def _pyc(source: bytes, path_in_archive: str) -> bytes:
    """A checked hash-based ``.pyc`` of a module's source, its code named as the zip importer names it."""
    with warnings.catch_warnings():  # a module's SyntaxWarnings are for its authors, not for this step
        warnings.simplefilter("ignore")
        code = compile(importlib.util.decode_source(source), path_in_archive, "exec", dont_inherit=True)
    header = importlib.util.MAGIC_NUMBER + CHECKED_HASH_PYC.to_bytes(4, "little")
    return header + importlib.util.source_hash(source) + marshal.dumps(code)


def _compiled(name: str) -> bool:
    """Whether a zip entry is a module that gets a ``.pyc``: not PySpark's own tests, which no worker imports
    (they are most of the zip)."""
    return name.endswith(".py") and "/tests/" not in name


def _with_bytecode(archive: zipfile.ZipFile, archive_path: str) -> dict:
    """Every entry of ``archive`` (as it was, compression included), plus a compressed ``.pyc`` beside each
    module: ``{name: (entry or name, content)}``."""
    entries = {
        info.filename: (info, archive.read(info)) for info in archive.infolist() if not info.filename.endswith(".pyc")
    }
    for name, (_, source) in list(entries.items()):
        if _compiled(name):
            pyc = zipfile.ZipInfo(name[:-3] + ".pyc", archive.getinfo(name).date_time)
            pyc.compress_type = zipfile.ZIP_DEFLATED
            entries[pyc.filename] = (pyc, _pyc(source, f"{archive_path}{os.sep}{name}"))
    return entries


def _up_to_date(archive: zipfile.ZipFile) -> bool:
    """Whether every module has a ``.pyc`` made from its current source by this Python."""
    names = set(archive.namelist())
    for name in names:
        if _compiled(name):
            compiled = name[:-3] + ".pyc"
            if compiled not in names:
                return False
            header = archive.read(compiled)[:16]
            if header[:4] != importlib.util.MAGIC_NUMBER or header[8:16] != importlib.util.source_hash(
                archive.read(name)
            ):
                return False
    return True


def add_bytecode(zip_path: Path) -> bool:
    """Add a checked ``.pyc`` beside every ``.py`` of a zip (written to a new file, then renamed over the old
    one); ``False`` when the zip had them already."""
    with zipfile.ZipFile(zip_path) as archive:
        if _up_to_date(archive):
            return False
        entries = _with_bytecode(archive, str(zip_path))
    handle, temporary = tempfile.mkstemp(dir=zip_path.parent, suffix=".zip")
    os.close(handle)
    try:
        with zipfile.ZipFile(temporary, "w") as archive:
            for entry, content in entries.values():
                archive.writestr(entry, content)
        os.chmod(temporary, 0o644)
        os.replace(temporary, zip_path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return True


def main() -> int:
    for zip_path in spark_zips():
        print(("compiled " if add_bytecode(zip_path) else "already compiled ") + str(zip_path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
