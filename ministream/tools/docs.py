"""Executable prose: tutorial code pulled from the real source files, so it cannot drift from them.

A tutorial in ``tutorials/`` shows a lesson's code by *including* it rather than pasting it: a marker line
names a function (or class) of the package, and the fenced code block right after it holds that function's
current source::

    <!-- include ministream.lessons.running_aggregation.pipeline -->
    ```python
    def pipeline(script, params) -> Dataflow:
        ...
    ```

``python -m ministream.tools.docs`` rewrites every such block from the source; the test suite fails when a block
differs from the source (``check``), and runs every ``>>>`` example of the tutorials as a doctest.

>>> text = "<!-- include ministream.time.units.format_clock -->\\n```python\\nold\\n```\\n"
>>> sync_text(text).splitlines()[2]
'def format_clock(ms: int | None) -> str:'
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import textwrap
from pathlib import Path

from ministream.lessons import all_lessons, get_lesson

LESSONS_TABLE = re.compile(r"(<!-- lessons -->\n)(?P<body>.*?)(<!-- /lessons -->)", re.S)
INCLUDE = re.compile(r"(<!-- include (?P<target>[\w./-]+) -->\n```python\n)(?P<body>.*?)(```)", re.S)


def source_of(target: str, folder: str | Path = ".") -> str:
    """The current source text of ``package.module.name`` (a function or a class), dedented; or the whole text
    of a file, when ``target`` is a path (with a ``/``, relative to ``folder``, the page's own: a pipeline
    file such as ``examples/my_pipeline.py``)."""
    if "/" in target:
        return (Path(folder) / target).read_text(encoding="utf-8")
    module_name, _, attribute = target.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError):
        obj = importlib.import_module(target)
    return textwrap.dedent(inspect.getsource(obj))


def lessons_table() -> str:
    """The README's table of lessons, from the lesson registry."""

    rows = ["| lesson | what it teaches |", "| --- | --- |"]
    rows += [f"| `{lesson.name}` | {lesson.title} |" for lesson in all_lessons()]
    return "\n".join(rows) + "\n"


def sync_text(text: str, folder: str | Path = ".") -> str:
    """``text`` with every include block replaced by the current source of its target (a file's path is
    relative to ``folder``), and the lessons table (between ``<!-- lessons -->`` markers) rebuilt from the
    registry."""
    text = INCLUDE.sub(
        lambda m: m.group(1) + source_of(m.group("target"), folder).rstrip("\n") + "\n" + m.group(4), text
    )
    return LESSONS_TABLE.sub(lambda m: m.group(1) + lessons_table() + m.group(3), text)


def stale_includes(path: str | Path) -> list[str]:
    """The include targets of a Markdown file whose block no longer matches the source (and ``"lessons"``
    when its lessons table is out of date)."""
    text = Path(path).read_text()
    stale = [
        m.group("target")
        for m in INCLUDE.finditer(text)
        if m.group("body").rstrip("\n") != source_of(m.group("target"), Path(path).parent).rstrip("\n")
    ]
    stale += ["lessons" for m in LESSONS_TABLE.finditer(text) if m.group("body") != lessons_table()]
    return stale


def sync(paths) -> list[Path]:
    """Rewrite the include blocks of the given Markdown files; return the files that changed."""
    changed = []
    for path in map(Path, paths):
        text = path.read_text()
        new = sync_text(text, path.parent)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


def record_spark_listings(page: str | Path = "tutorials/15-checkpoint-recovery.md") -> list[str]:
    """Run Spark and put what it wrote in the page's recorded blocks: the checkpoint folders of the
    checkpoint-recovery lesson (``spark.checkpoint.checkpoint_folders``) and a state store's files
    (``spark.state_files.state_files``). Returns a line per block: updated or unchanged."""
    from ministream.spark import checkpoint, state_files  # needs PySpark: only this command runs Spark

    folders = checkpoint.checkpoint_folders(get_lesson("checkpoint-recovery"))
    said = [("updated " if checkpoint.refresh_page(page, folders.text) else "unchanged ") + f"{page} (folders)"]
    said.append(
        ("updated " if state_files.refresh_page(page, state_files.state_files()) else "unchanged ")
        + f"{page} (state files)"
    )
    return said


def main(argv: list[str]) -> None:
    """``python -m ministream.tools.docs [--spark] [FILES]``, from the top of the repository (``make docs``):
    refresh the include blocks of ``FILES`` (every tutorial and the README by default); with ``--spark``, first
    re-record the Spark listings of tutorial 15 from a real run."""
    if "--spark" in argv:
        argv = [arg for arg in argv if arg != "--spark"]
        for line in record_spark_listings():
            print(line)
    root = Path.cwd()
    for changed_path in sync(argv or sorted(root.glob("tutorials/*.md")) + [root / "README.md"]):
        print(f"updated {changed_path}")


if __name__ == "__main__":
    main(sys.argv[1:])
