"""The learner's machine: is everything the workshop needs there? (Checked without starting Spark.)

>>> "python" in report()
True
"""

from __future__ import annotations

import shutil
import subprocess
import sys


def _java() -> str:
    import os

    java = os.path.join(os.environ["JAVA_HOME"], "bin", "java") if os.environ.get("JAVA_HOME") else shutil.which("java")
    if not java:
        return "missing: PySpark needs Java 17 (sudo apt-get install -y openjdk-17-jre-headless)"
    try:
        done = subprocess.run([java, "-version"], capture_output=True, check=False, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"found at {java}, but it does not run: {error}"
    first = (done.stderr or done.stdout).strip().splitlines()
    return first[0] if first else f"found at {java}"


def _package(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "missing: run `make setup`"


def report() -> str:
    """One line per thing the workshop needs: Python, Java for Spark, PySpark, graphviz's ``dot``, Jupyter."""
    lines = [
        f"python      {sys.version.split()[0]} ({sys.executable})",
        f"java        {_java()}",
        f"pyspark     {_package('pyspark')}",
        f"dot         {shutil.which('dot') or 'missing: diagrams need Debian graphviz (make setup installs it)'}",
        f"jupyterlab  {_package('jupyterlab')}",
    ]
    return "\n".join(lines)
