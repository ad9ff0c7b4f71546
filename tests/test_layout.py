"""The test suite's own layout: a folder per layer of the package, a docstring stating the rule on every test,
and engine tests that load without PySpark or Jupyter (``make test-engine``)."""

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
MODULES = sorted(TESTS.rglob("test_*.py"))

EXTRAS = ("pyspark", "pandas", "pyarrow", "nbformat", "nbclient", "jupyter_client", "matplotlib", "graphviz")
"""Packages of the spark, notebooks and viz extras, and ministream.spark, which imports PySpark."""


def test_every_test_folder_is_a_layer_of_the_package():
    """Each folder of tests/ is named after the subpackage of ministream whose modules it tests, but for
    tests/conformance: Spark's and Flink's own test cases, replayed across every layer."""
    folders = {path.parent.name for path in MODULES if path.parent != TESTS} - {"conformance"}
    assert {name for name in folders if not (ROOT / "ministream" / name / "__init__.py").exists()} == set()


def test_every_test_states_its_rule_in_a_docstring():
    """Every test function has a docstring (one sentence: the rule it checks)."""
    missing = [
        f"{path.relative_to(ROOT)}::{node.name}"
        for path in MODULES
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test") and not ast.get_docstring(node)
    ]
    assert missing == []


def engine_ignores() -> list[Path]:
    """The test modules and folders ``make test-engine`` leaves out (its ``--ignore`` options)."""
    makefile = (ROOT / "Makefile").read_text()
    return [ROOT / path for path in re.findall(r"--ignore=(\S+)", makefile)]


def top_level_imports(path: Path) -> set[str]:
    """The modules a test module imports at its top (not inside a function, which runs only in a test)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_engine_test_modules_import_no_extra_at_the_top():
    """A test module that ``make test-engine`` collects imports neither PySpark, pandas, pyarrow, Jupyter,
    matplotlib, Graphviz nor ministream.spark at its top, so that it loads with the dev extra only."""
    ignored = engine_ignores()
    assert ignored, "the Makefile's test-engine target has no --ignore options"
    collected = [path for path in MODULES if not any(path == skip or skip in path.parents for skip in ignored)]
    loaded = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in collected
        for name in top_level_imports(path)
        if name.split(".", maxsplit=1)[0] in EXTRAS
        or name == "ministream.spark"
        or name.startswith("ministream.spark.")
    }
    assert loaded == set()
