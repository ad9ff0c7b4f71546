"""The package's architecture: one subpackage per layer, each importing only the layers below it (the contracts of
``lint-imports``), no import cycle even through imports inside functions, no import inside a function to dodge a
cycle, no layer reaching back to the root package, a docstring on every module, and an engine that imports and runs
without PySpark."""

import ast
import subprocess
import sys
from pathlib import Path

import ministream

PACKAGE = Path(ministream.__file__).resolve().parent
ROOT = PACKAGE.parent

LOCAL_IMPORTS_ALLOWED = {
    "ministream.spark": "needs PySpark, which a function imports only when it runs Spark",
}
"""Modules that may be imported inside a function, and why (PySpark, Jupyter and matplotlib themselves are not
ministream modules: they are never counted here)."""

LOCAL_IMPORTS_ALLOWED_IN = {
    "ministream.workshop.solutions": "its functions are pasted into notebook cells and must import what they use",
}
"""Modules whose functions may import any ministream module, and why."""


def package_modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name), found on disk."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = package_modules()


def resolve(name: str) -> str | None:
    """The module an imported name lives in: ``ministream.core.plan.Dataflow`` is in ``ministream.core.plan``."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def imports_of(module: str) -> list[tuple[str, int, bool]]:
    """The ministream modules ``module`` imports: (imported module, line, inside a function?) for every import
    statement, at the top, under ``if``, in a class or inside a function; relative imports resolved."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []

    def add(name, node, inside):
        if name.partition(".")[0] == "ministream" and (target := resolve(name)):
            found.append((target, node.lineno, inside))

    def walk(node, inside):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, inside)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - (node.level - 1)] if node.level else []
            prefix = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:  # `from ministream.core import plan` imports the module ministream.core.plan
                target = f"{prefix}.{alias.name}"
                add(target if target in MODULES else prefix, node, inside)
        for child in ast.iter_child_nodes(node):
            walk(child, inside or isinstance(node, FUNCTIONS))

    walk(ast.parse(path.read_text(), str(path)), inside=False)
    return found


IMPORTS = {module: imports_of(module) for module in MODULES}


def dependencies(module: str) -> set[str]:
    """The modules whose import ``module`` starts: what it imports and their packages (importing
    ``ministream.core.plan`` runs ``ministream/core/__init__.py`` first), leaving out the root package and
    ``module``'s own packages, which are imported before it."""
    own = {module.rsplit(".", n)[0] for n in range(module.count(".") + 1)}
    found = set()
    for target, _, _ in IMPORTS[module]:
        parts = target.split(".")
        found |= {".".join(parts[:n]) for n in range(2, len(parts) + 1)}
    return found - own


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_import_linter_keeps_every_contract():
    """``lint-imports`` keeps every contract of pyproject.toml: each layer imports only the layers below it,
    and the engine imports no Spark, Jupyter or plotting library."""
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def test_no_import_cycle_even_through_imports_inside_functions():
    """No module depends on itself through its imports, counting the imports inside functions and the packages
    each import runs."""
    graph = {module: dependencies(module) for module in MODULES}
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle():
    """The cycle finder reports a cycle of two modules and nothing for a chain (so that the test above can fail)."""
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_no_function_imports_a_ministream_module_but_spark():
    """No function imports a ministream module (an import inside a function dodges a cycle), except
    ministream.spark, which needs PySpark, and the workshop solutions, which are pasted into notebook cells."""
    local = [
        f"{module}:{line} imports {target} inside a function"
        for module, found in IMPORTS.items()
        if module not in LOCAL_IMPORTS_ALLOWED_IN
        for target, line, inside in found
        if inside
        and not any(target == allowed or target.startswith(allowed + ".") for allowed in LOCAL_IMPORTS_ALLOWED)
    ]
    assert local == []


def test_no_layer_imports_the_root_package():
    """No module of a layer imports the root package ``ministream`` (``from ministream import Dataflow``): the
    root re-exports the layers, so that would be a cycle (the workshop solutions' functions, pasted into notebook
    cells, import the public names as a learner does)."""
    assert {
        f"{module}:{line}"
        for module, found in IMPORTS.items()
        if module != "ministream"
        for target, line, inside in found
        if target == "ministream" and not (inside and module in LOCAL_IMPORTS_ALLOWED_IN)
    } == set()


def test_every_module_has_a_docstring():
    """Every module, package and ``__main__`` of ministream opens with a docstring saying what it holds."""
    assert [module for module, path in MODULES.items() if not ast.get_docstring(ast.parse(path.read_text()))] == []


REFUSE = """
import importlib.abc, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("pyspark", "pandas", "pyarrow"):
            raise ModuleNotFoundError(f"No module named {name!r} (refused by the test)", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""
"""A Python where PySpark, pandas and pyarrow cannot be imported, installed or not."""


def test_ministream_imports_and_runs_a_lesson_without_pyspark():
    """``import ministream`` and a lesson's ministream run work in a Python that cannot import PySpark, pandas or
    pyarrow: the engine does not need Spark."""
    program = REFUSE + (
        "import ministream\n"
        "from ministream.lessons import get_lesson\n"
        "lesson = get_lesson('tumbling-window')\n"
        "print(len(lesson.run().output()) > 0)\n"
        "import pyspark\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=False, timeout=120)
    assert done.stdout == "True\n", done.stderr
    assert "No module named 'pyspark' (refused by the test)" in done.stderr  # the finder really refuses it
