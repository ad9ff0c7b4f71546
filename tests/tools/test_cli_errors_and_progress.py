"""The command line as a learner meets it, run in a subprocess: every bad input is one line naming the file and
what is wrong (no traceback), every bad line of a file is reported, a duration needs its unit, help text has
no reST quotes, and long work shows progress."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ministream.core.events import MAX_REPORTED

ROOT = Path(__file__).resolve().parents[2]
GOOD = '{"batch": 0, "ts": "2024-01-01T10:00:00Z", "key": "a", "value": 1}'


def ministream(*args, cwd=ROOT, timeout=900):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "ministream.tools.cli", *map(str, args)]
    return subprocess.run(command, check=False, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout)


def refused(*args, cwd=ROOT) -> str:
    """Run a command that must exit 2 with nothing on stdout; return its stderr."""
    done = ministream(*args, cwd=cwd)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr


def test_a_missing_events_file_is_one_line(tmp_path):
    """A path that does not exist: one line naming it, and where paths are read from."""
    assert refused("run", "running-aggregation", "--events", "nowhere.jsonl", cwd=tmp_path) == (
        "ministream: error: nowhere.jsonl: there is no such file (paths are read from the folder the command runs in)\n"
    )


def test_a_folder_given_as_events_file_is_one_line(tmp_path):
    """A folder instead of a file: one line saying so."""
    assert refused("run", "running-aggregation", "--events", tmp_path) == (
        f"ministream: error: {tmp_path}: this is a folder, not an events file: give the path of a .jsonl file\n"
    )


def test_an_empty_events_file_is_one_line(tmp_path):
    """An empty file: one line naming it, with a good line to copy."""
    events = tmp_path / "empty.jsonl"
    events.write_text("")
    assert refused("run", "running-aggregation", "--events", events) == (
        f"ministream: error: {events}: the file has no events: write one JSON object per line, like "
        '{"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": 1.0}\n'
    )


def test_a_utf16_events_file_is_one_line(tmp_path):
    """A file saved as UTF-16 (as some Windows editors do): one line saying to save it as UTF-8."""
    events = tmp_path / "utf16.jsonl"
    events.write_text(GOOD + "\n", encoding="utf-16")
    assert refused("run", "running-aggregation", "--events", events) == (
        f"ministream: error: {events}: this is UTF-16 text (it starts with a UTF-16 byte order mark): "
        "save the file as UTF-8\n"
    )


def test_a_latin1_events_file_names_the_line_and_the_byte(tmp_path):
    """A file in another 8-bit encoding: the line and column of the first byte UTF-8 does not allow."""
    events = tmp_path / "latin1.jsonl"
    events.write_bytes((GOOD + "\n" + GOOD.replace('"a"', '"caf\xe9"') + "\n").encode("latin-1"))
    assert refused("run", "running-aggregation", "--events", events) == (
        f"ministream: error: {events} line 2: this is not UTF-8 text (byte 0xe9 at column 55): save the file as UTF-8\n"
    )


def test_every_bad_line_of_a_file_is_reported(tmp_path):
    """Three bad lines among good ones: three lines naming each, then how many there are."""
    events = tmp_path / "events.jsonl"
    events.write_text(
        "\n".join(
            [GOOD, "not json", GOOD.replace('"value": 1', '"value": "x"'), GOOD, GOOD.replace('"key": "a", ', "")]
        )
        + "\n"
    )
    assert refused("run", "running-aggregation", "--events", events).splitlines() == [
        (
            f"ministream: error: {events} line 2: this is not valid JSON (Expecting value at column 1): write each "
            'event as one JSON object on its own line, like {"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", '
            '"value": 1.0}'
        ),
        f"ministream: error: {events} line 3, field 'value': 'x' is not a number: give a number like 1.5",
        (
            f"ministream: error: {events} line 5, field 'key': missing: every event needs 'batch', 'ts', 'key' and "
            """'value', like {"batch": 0, "ts": "2024-01-01T10:00:05Z", "key": "a", "value": 1.0}"""
        ),
        f"ministream: error: {events}: 3 bad lines",
    ]


def test_bad_lines_beyond_the_limit_are_counted(tmp_path):
    """A file of 25 bad lines: the first ten reported, and the count of all of them."""
    events = tmp_path / "events.jsonl"
    events.write_text("oops\n" * 25)
    lines = refused("run", "running-aggregation", "--events", events).splitlines()
    assert len(lines) == MAX_REPORTED + 1
    assert lines[0].startswith(f"ministream: error: {events} line 1: this is not valid JSON")
    assert lines[MAX_REPORTED - 1].startswith(f"ministream: error: {events} line {MAX_REPORTED}: ")
    assert lines[-1] == f"ministream: error: {events}: 25 bad lines, the first {MAX_REPORTED} shown above"


def test_a_duration_without_a_unit_is_refused_with_the_spelling_to_use():
    """`--param size=10` could mean 10 ms or 10 s: it is refused, with both spellings."""
    assert refused("run", "tumbling-window", "--param", "size=10") == (
        "ministream: error: --param size: '10' has no unit: write it like '10 seconds' or '10 milliseconds'\n"
    )


@pytest.mark.parametrize("command", ["", "run", "compare", "fuzz", "bench", "diagrams"])
def test_help_has_no_rest_quotes(command):
    """`--help` reads as plain text: no reST double backquotes."""
    done = ministream(*command.split(), "--help")
    assert done.returncode == 0 and "usage: ministream" in done.stdout
    assert "``" not in done.stdout


@pytest.mark.slow
def test_bench_shows_a_progress_bar_on_stderr():
    """`ministream bench` draws a bar on stderr, one part at a time, and prints its figures on stdout."""
    done = ministream("bench", "--no-spark", "--events", "2000")
    assert done.returncode == 0, done.stderr
    bar = done.stderr.replace("\r", "\n")
    assert "bench: engine:   0%" in bar and "bench: checkpoints:  67%" in bar and "bench: 100%" in bar
    assert "3/3" in bar
    assert "tumbling_count: " in done.stdout and ", floor " in done.stdout and "\nfigure" in done.stdout


@pytest.mark.spark
def test_fuzz_shows_a_progress_bar_and_a_line_per_script():
    """`ministream fuzz LESSON --runs 2`: a bar counting scripts on stderr; a line per script and the summary on
    stdout."""
    done = ministream("fuzz", "tumbling-window", "--runs", "2", "--out", "/tmp/ministream-fuzz-test")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "tumbling-window script 0",
        "tumbling-window script 1",
        "tumbling-window",
    ]
    assert lines[-1] == "tumbling-window: 2 of 2 random scripts match Spark batch for batch (seed 0)"
    bar = done.stderr.replace("\r", "\n")
    assert "starting Spark (about 10 s)" in bar and "fuzz tumbling-window: 100%" in bar and "2/2" in bar


@pytest.mark.spark
def test_compare_all_prints_a_line_per_lesson_as_it_finishes():
    """`ministream compare --all` (what `make demo` runs): a header, then a line per lesson as each one finishes,
    then the count; on stderr only Spark's start and the planned crashes of the three recovery lessons."""
    from ministream.lessons import all_lessons

    done = ministream("compare", "--all")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    names = [lesson.name for lesson in all_lessons()]
    twins = [lesson.name for lesson in all_lessons() if lesson.twin is not None]
    assert lines[0] == f"every lesson in ministream and in Spark, a line as each one finishes ({len(names)} lessons)"
    assert lines[1].split() == ["lesson", "batches", "matched", "rows", "matched", "result"]
    assert [line.split()[0] for line in lines[2:-1]] == names
    assert all(line.split()[-1] == "match" for line in lines[2:-1] if line.split()[0] in twins)
    assert [line.split() for line in lines[2:-1] if line.split()[0] not in twins] == [
        ["operator-state", "-", "-", "no", "Spark", "twin"]
    ]
    assert lines[-1] == f"{len(twins)} of {len(twins)} lessons match Spark batch for batch"
    assert done.stderr.splitlines() == [
        "starting Spark (about 10 s)",
        "Spark's query stopped in batch 3 as planned: foreachBatch raised after 1 of 3 rows",  # checkpoint-recovery
        "Spark's query stopped in batch 1 as planned: foreachBatch raised after 0 of 3 rows",  # rescale
        "Spark's query stopped in batch 3 as planned: foreachBatch raised after 1 of 2 rows",  # changelog
    ]


def test_the_activation_line_of_the_readme_puts_ministream_on_the_path():
    """The README's `source .venv/bin/activate` (here: this interpreter's environment) makes `ministream ...` work
    as the README writes it."""
    assert "source .venv/bin/activate" in (ROOT / "README.md").read_text()
    activate = Path(sys.prefix) / "bin" / "activate"
    done = subprocess.run(
        ["bash", "-c", f"source {activate} && ministream lessons"],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("running-aggregation ")
