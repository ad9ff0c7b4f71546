"""The notebook build (``workshop/build.py``): the exercises go into the notebooks, before the recap, once; the
notebooks the tests execute have them solved; the committed notebooks are the built ones."""

import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from ministream.lessons import all_lessons
from ministream.workshop.build import course_sources, notebook_text, stale_notebooks, with_solutions
from ministream.workshop.commands import main as workshop
from ministream.workshop.course import LESSON_NOTEBOOKS, course
from ministream.workshop.notebooks.cells import PROGRESS, NotebookSource, markdown, to_notebook, with_exercises

pytestmark = pytest.mark.notebook

REPOSITORY = next(folder for folder in Path(__file__).resolve().parents if (folder / "pyproject.toml").exists())


def test_with_solutions_fills_every_exercise_cell():
    """The notebooks the tests execute have every exercise solved and every check expected to pass."""
    built = with_solutions(to_notebook(NotebookSource(2, "windows", ("tumbling-window",), [])))
    exercise_cells = [cell for cell in built.cells if "exercise" in cell.metadata.get("tags", [])]
    assert [cell.source.split("(")[0] for cell in exercise_cells] == [
        "def window_of",
        "def next_watermark",
        "def pipeline",
    ]
    assert all("raises-exception" not in cell.metadata.get("tags", []) for cell in built.cells)


def test_start_here_lists_the_course_and_the_two_commands():
    """00-start-here gives the two commands from a fresh clone, the one for a pip install, and every notebook
    of the course."""
    notebook = nbformat.read(REPOSITORY / "notebooks" / "00-start-here.ipynb", as_version=4)
    text = "\n".join(cell.source for cell in notebook.cells)
    assert "make -C ministream notebooks" in text and "git clone" in text and "ministream workshop copy" in text
    assert all(f"`{step.name}`" in text for step in course())


def test_exercises_go_before_the_recap():
    """A notebook's exercises come right before its recap, each as its task, its cell and its check."""
    source = NotebookSource(
        2, "windows", ("tumbling-window",), [markdown("# 2. Windows\n\nYou will be able to"), markdown("## Recap")]
    )
    cells = with_exercises(source)
    tags = [cell.tags for cell in cells]
    assert tags.count(("exercise",)) == 3 and tags.count(("check", "raises-exception")) == 3
    assert cells[-1].source.startswith("## Recap") and "Exercise 2.1" in cells[3].source


def test_lesson_notebooks_show_progress_first():
    """A lesson notebook's first code cell shows what long work says (Spark starting, a planned crash) as plain
    lines; the start-here notebook, which starts no Spark, has no such cell."""
    for source in course_sources():
        first_code = next(cell for cell in with_exercises(source) if cell.kind == "code")
        assert (first_code.source == PROGRESS) == bool(source.lessons), source.name


def test_notebooks_draw_with_the_package():
    """No notebook cell draws with matplotlib itself: every plot comes from ``ministream.tools.plots``, which
    returns figures that show as images in any notebook (no plotting code lives only in a notebook)."""
    for source in course_sources():
        for cell in source.cells:
            assert not re.search(r"matplotlib|\bplt\.|\bFigure\(", cell.source), f"{source.name}: {cell.source[:80]}"


def test_notebooks_are_what_their_modules_generate():
    """Every notebook in notebooks/ is, byte for byte, what its module in ministream/workshop/notebooks/
    generates, and every numbered notebook there has a module (edit the module, then run
    ``python -m ministream.workshop build``)."""
    assert stale_notebooks(REPOSITORY / "notebooks") == [], "run `python -m ministream.workshop build`"


def test_each_notebook_module_names_the_lessons_its_code_runs():
    """A notebook module's lessons are the lessons its code cells load, in order (they choose its exercises and
    its place in the course), and no two notebooks share a number."""
    for source in LESSON_NOTEBOOKS:
        calls = [
            name
            for cell in source.cells
            if cell.kind == "code"
            for name in re.findall(r"""get_lesson\(["']([a-z0-9-]+)["']\)""", cell.source)
        ]
        assert source.lessons == tuple(dict.fromkeys(calls)), source.name
    numbers = [source.number for source in course_sources()]
    assert len(set(numbers)) == len(numbers)


def test_a_notebook_is_generated_the_same_every_time():
    """Generating a notebook twice gives the same text: cell ids are fixed, nothing random or dated."""
    first = [notebook_text(source) for source in course_sources()]
    assert [notebook_text(source) for source in course_sources()] == first
    notebook = nbformat.reads(first[1], as_version=4)
    assert notebook.metadata.kernelspec.name == "ministream"
    assert notebook.cells[0].id == "running-aggregation-0"


def test_workshop_list_and_copy(tmp_path):
    """``workshop list`` names every notebook in teaching order; ``workshop copy DIR`` writes them all, and
    leaves a notebook already there alone unless told to overwrite it."""
    out = io.StringIO()
    assert workshop(["list"], out) == 0
    names = [line.split()[1] for line in out.getvalue().splitlines()]
    assert names[0] == "00-start-here.ipynb" and names[1:] == [step.name for step in course()]

    assert workshop(["copy", str(tmp_path / "mine")], io.StringIO()) == 0
    copied = sorted(path.name for path in (tmp_path / "mine").iterdir())
    assert copied == sorted(source.name for source in course_sources())
    assert stale_notebooks(tmp_path / "mine") == []
    (tmp_path / "mine" / "02-tumbling-window.ipynb").write_text("my work")
    out = io.StringIO()
    workshop(["copy", str(tmp_path / "mine")], out)
    assert (tmp_path / "mine" / "02-tumbling-window.ipynb").read_text() == "my work"
    assert "already there, left alone" in out.getvalue()
    workshop(["copy", "--force", str(tmp_path / "mine")], io.StringIO())
    assert stale_notebooks(tmp_path / "mine") == []


def test_workshop_check_reports_each_notebook_under_a_progress_bar(capsys):
    """``workshop check`` prints a line per notebook it ran and keeps a progress bar (tqdm) on stderr that
    counts the notebooks."""
    out = io.StringIO()
    assert workshop(["check", "00-start-here.ipynb"], out) == 0
    assert out.getvalue().splitlines() == ["ok      00-start-here.ipynb", "1 of 1 notebooks ran with their solutions"]
    bar = capsys.readouterr().err
    assert "workshop check" in bar and "1/1" in bar


def test_build_needs_a_folder(tmp_path, monkeypatch):
    """``workshop build`` writes into an existing folder only (default notebooks/ of the working directory)."""
    monkeypatch.chdir(tmp_path)
    assert workshop(["build"], io.StringIO()) == 2
    (tmp_path / "notebooks").mkdir()
    out = io.StringIO()
    assert workshop(["build"], out) == 0
    count = len(course_sources())
    assert stale_notebooks(tmp_path / "notebooks") == [] and f"{count} of {count} notebooks updated" in out.getvalue()


def _run(command, cwd, env):
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.spark
def test_installed_wheel_runs_outside_the_repository(tmp_path):
    """Built as a wheel and installed (not editable) in a folder away from the repository, ministream lists its
    lessons, runs one, compares one with Spark, lists the workshop and writes its notebooks, the same as the
    repository's: nothing it needs at run time lies outside the package."""
    source, wheels, site, elsewhere = (tmp_path / name for name in ("source", "wheels", "site", "elsewhere"))
    shutil.copytree(REPOSITORY / "ministream", source / "ministream", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPOSITORY / "pyproject.toml", source)  # a copy: building does not write into the repository
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(wheels), str(source)], elsewhere, env)
    [wheel] = wheels.glob("ministream-*.whl")
    _run([*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)], elsewhere, env)

    where = _run([sys.executable, "-c", "import ministream; print(ministream.__file__)"], elsewhere, env)
    assert Path(where.strip()).is_relative_to(site), where  # not the repository's editable install
    ministream = [str(site / "bin" / "ministream")]
    lessons = _run(ministream + ["lessons"], elsewhere, env)
    assert len(lessons.splitlines()) == len(all_lessons()) and "tumbling-window" in lessons
    assert "batch 0" in _run(ministream + ["run", "tumbling-window"], elsewhere, env)
    _run(ministream + ["compare", "running-aggregation"], elsewhere, env)  # exit 0: every batch matches Spark
    listed = _run(ministream + ["workshop"], elsewhere, env)
    assert "00-start-here.ipynb" in listed and "15-checkpoints.ipynb" in listed
    _run(ministream + ["workshop", "copy", "course"], elsewhere, env)
    for path in sorted((REPOSITORY / "notebooks").glob("*.ipynb")):
        assert (elsewhere / "course" / path.name).read_text() == path.read_text(), path.name
