"""The differential fuzzer (ministream/tools/fuzz.py): seeded random scripts, shrinking to a small failing script, and
an events file that `ministream compare --events` replays."""

import json
import random

import attrs
import pytest

from ministream.core.compare import compare_batches
from ministream.core.events import Field, read_events
from ministream.core.results import BatchResult
from ministream.lessons import get_lesson
from ministream.tools import fuzz
from ministream.tools.cli import main
from ministream.tools.fuzz import (
    Outcome,
    fuzz_lesson,
    generic_random_script,
    random_script,
    shrink,
    shrink_candidates,
    trimmed,
)

FIELDS = [Field("key", str), Field("value", float)]


def test_a_seed_gives_the_same_script_every_time():
    """Random scripts are a function of the seed: the same seed, the same script."""
    lesson = get_lesson("running-aggregation")
    params = lesson.resolve_params()
    one = random_script(lesson, random.Random("x:1:0"), params)
    assert one == random_script(lesson, random.Random("x:1:0"), params)
    assert one != random_script(lesson, random.Random("x:1:1"), params)


def test_generic_scripts_have_the_lessons_fields_and_end_with_a_row():
    """Every generic row has ts and the lesson's fields; text fields take few values, numbers are whole; the
    last batch is not empty (an events file cannot end with an empty batch)."""
    for seed in range(30):
        script = generic_random_script(random.Random(seed), {"size": 10_000, "delay": 5_000}, FIELDS)
        assert 2 <= len(script) <= 5 and script[-1]
        for row in (row for batch in script for row in batch):
            assert set(row) == {"ts", "key", "value"}
            assert row["key"] in fuzz.KEYS and row["value"] == int(row["value"])


def test_generic_scripts_hit_the_edges():
    """Over a few seeds the generic generator produces empty batches, duplicates, rows exactly on a multiple
    of a duration, and rows 1 ms off one."""
    rows, empty = [], 0
    for seed in range(40):
        script = generic_random_script(random.Random(seed), {"size": 10_000, "delay": 5_000}, FIELDS)
        empty += sum(not batch for batch in script)
        rows += [row for batch in script for row in batch]
    assert empty > 0
    assert len({json.dumps(row, sort_keys=True) for row in rows}) < len(rows)  # duplicates
    assert any(row["ts"] % 10_000 == 0 for row in rows) and any(row["ts"] % 10_000 in (1, 9_999) for row in rows)


def test_generic_scripts_for_several_inputs_give_each_input_its_batches():
    """A lesson with two inputs gets {input: batches}, both inputs with the same number of batches."""
    script = generic_random_script(random.Random(3), {}, FIELDS, inputs=("left", "right"))
    assert set(script) == {"left", "right"} and len(script["left"]) == len(script["right"])


def test_trimmed_drops_trailing_empty_batches_and_empty_scripts():
    """A shrunk script loses its trailing empty batches; one with no row left is no script at all."""
    assert trimmed({"l": [[{"n": 1}], []], "r": [[], []]}) == {"l": [[{"n": 1}]], "r": [[]]}
    assert trimmed([[], [{"n": 1}], []]) == [[], [{"n": 1}]]
    assert trimmed([[]]) is None


def test_shrink_candidates_cut_batches_first_then_ever_smaller_groups_of_rows():
    """Candidates drop one whole batch (the last first), then halves, quarters... of the rows, down to one."""
    script = [[{"n": 1}, {"n": 2}], [{"n": 3}, {"n": 4}]]
    candidates = shrink_candidates(script)
    assert candidates[:2] == [[[{"n": 1}, {"n": 2}]], [[{"n": 3}, {"n": 4}]]]
    assert [[{"n": 1}, {"n": 2}], [{"n": 4}]] in candidates  # one row cut
    assert script not in candidates


def fake_check(culprit):
    """A stand-in for running both engines: the script 'differs' when it holds a row with value ``culprit``."""
    calls = []

    def check(lesson, script, params=None, parallelism=1):
        calls.append(script)
        rows = [row for batch in script for row in batch]
        bad = any(row["value"] == culprit for row in rows)
        ours = [BatchResult(0, None, [{"n": len(rows) + bad}])]
        return Outcome(compare_batches(ours, [BatchResult(0, None, [{"n": len(rows)}])]))

    return check, calls


def test_shrinking_keeps_only_what_still_fails(monkeypatch):
    """Shrinking cuts batches and rows while the disagreement stays, down to the one row that causes it."""
    check, calls = fake_check(culprit=7.0)
    monkeypatch.setattr(fuzz, "check_script", check)
    script = [[{"ts": i, "key": "a", "value": float(i % 9)} for i in range(b * 4, b * 4 + 4)] for b in range(4)]
    small, outcome, runs = shrink(None, script, check(None, script), budget=100)
    assert small == [[{"ts": 7, "key": "a", "value": 7.0}]]
    assert outcome.kind == "differs" and runs == len(calls) - 1


def test_shrinking_stops_at_its_budget(monkeypatch):
    """Shrinking never runs the engines more often than its budget."""
    check, calls = fake_check(culprit=3.0)
    monkeypatch.setattr(fuzz, "check_script", check)
    script = [[{"ts": i, "key": "a", "value": float(i % 9)}] for i in range(12)]
    _, _, runs = shrink(None, script, check(None, script), budget=5)
    assert runs == 5 == len(calls) - 1


def test_cli_fuzz_needs_a_lesson_or_all_and_no_param_with_all(capsys):
    """`ministream fuzz` wants a lesson name (or a pipeline file), --all or --pipelines N, and --param and
    --output only with one lesson (as `compare` does)."""
    assert main(["fuzz"]) == 2
    assert "give a lesson name, a pipeline file, --all or --pipelines N" in capsys.readouterr().err
    assert main(["fuzz", "running-aggregation", "--pipelines", "2"]) == 2
    assert "--pipelines draws its own pipelines: give no lesson" in capsys.readouterr().err
    assert main(["fuzz", "--all", "--param", "gap=5 seconds"]) == 2
    assert "--param changes one lesson's parameters" in capsys.readouterr().err
    assert main(["fuzz", "--all", "--output", "totals"]) == 2 and main(["compare", "--all", "--output", "totals"]) == 2
    assert capsys.readouterr().err.splitlines() == 2 * [
        "ministream: error: --output chooses an output of one pipeline file: give its path, not --all"
    ]


@pytest.mark.spark
def test_a_disagreement_is_shrunk_to_an_events_file_that_compare_replays(tmp_path, monkeypatch, capsys):
    """With a broken twin (it drops rows with a value above 5), the fuzzer finds the difference, shrinks it to
    a one-row events file, and `ministream compare --events FILE` reproduces it (and passes with the real
    twin)."""
    lesson = get_lesson("session-window")
    real_twin = lesson.twin

    def broken_twin(inputs, params):
        return real_twin({"events": inputs["events"].where("value <= 5")}, params)

    broken = attrs.evolve(lesson, twin=broken_twin)
    params = {"mode": "complete"}
    report = fuzz_lesson(broken, runs=1, seed=11, params=params, out_dir=tmp_path, shrink_budget=8)
    [failure] = report.failures
    assert not report.matches and failure.outcome.kind == "differs"
    assert failure.events_file.exists()
    script = read_events(failure.events_file, lesson.fields)
    assert script == failure.script
    rows = [row for batch in script for row in batch]
    assert len(rows) == 1 and rows[0]["value"] > 5
    assert failure.command == f"ministream compare session-window --events {failure.events_file} --param mode=complete"

    monkeypatch.setattr(lesson, "twin", broken_twin)
    assert main(["compare", "session-window", "--events", str(failure.events_file), "--param", "mode=complete"]) == 1
    assert "only in ministream" in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["compare", "session-window", "--events", str(failure.events_file), "--param", "mode=complete"]) == 0


GENERIC_FITS = {
    "running-aggregation": "no event time and no crash: only keys and values matter",
    "barrier-alignment": "a running count over two inputs, which the generic generator fills both",
}
"""The lessons whose random scripts come from ``generic_random_script``, and why it fits them."""

NOT_IN_OTHER_FUZZ_TESTS = [
    ("running-aggregation", {}),
    ("state-ttl", {}),
    ("processing-time", {}),
    ("microbatch-vs-continuous", {}),
    ("checkpoint-recovery", {}),
    ("checkpoint-recovery", {"delivery": "at_least_once"}),
    ("barrier-alignment", {}),
    ("rescale", {}),
]
"""Lessons whose random scripts no other test compares with Spark (test_window_fuzz, test_join_fuzz,
test_lesson_session_window and test_lesson_device_sessions cover the other ten)."""

CI_FUZZ_SEED = 2
"""The seed of the scripts CI fuzzes (each of them has output rows, and the recovery lessons' crash batch too);
a longer run of any lesson: ``ministream fuzz LESSON --runs 20`` (tutorials/differential-testing.md)."""


def test_every_lesson_has_a_random_script_that_fits_it():
    """Every lesson with a twin has its own random_script, unless the generic generator fits it (GENERIC_FITS)."""
    from ministream.lessons import all_lessons

    lacking = {lesson.name for lesson in all_lessons() if lesson.twin is not None and lesson.random_script is None}
    assert lacking == set(GENERIC_FITS)


@pytest.mark.parametrize(
    "name,params",
    [
        ("checkpoint-recovery", {}),
        ("checkpoint-recovery", {"crash_batch": "6"}),
        ("rescale", {}),
        ("rescale", {"crash_batch": "3"}),
        ("changelog", {}),
    ],
)
def test_recovery_scripts_reach_the_crash_batch_and_end_with_a_row(name, params):
    """A recovery lesson's random scripts have more batches than crash_batch and a last batch with rows, so that
    both engines crash there (Spark's twin fails when its query never gets there) and an events file keeps
    every batch; ministream's run crashes once and restores the checkpoint of the batch before."""
    lesson = get_lesson(name)
    values = lesson.resolve_params(params)
    for index in range(20):
        script = random_script(lesson, random.Random(f"{name}:0:{index}"), values)
        assert len(script) > values["crash_batch"] and script[-1]
        run = lesson.run(script, params)
        assert [attempt.restored_from for attempt in run.attempts] == [None, values["crash_batch"] - 1]


@pytest.mark.parametrize("name", ["state-ttl", "processing-time"])
def test_processing_time_scripts_leave_keys_silent(name):
    """The processing-time lessons' random scripts have runs of empty batches, in which state expires and timers
    fire: over a few seeds ministream's output shows a forgotten user or a silent sensor."""
    lesson = get_lesson(name)
    values = lesson.resolve_params()
    forgotten = 0  # alerts of silent sensors, or users seen before and no longer remembered
    for index in range(10):
        script = random_script(lesson, random.Random(f"{name}:0:{index}"), values)
        assert any(not batch for batch in script)
        seen = set()
        for row in (row for batch in lesson.run(script).output() for row in batch.rows):
            forgotten += "alert_time" in row or (row["key"] in seen and row["remembered"] == 0)
            seen.add(row["key"])
    assert forgotten > 0


@pytest.mark.spark
@pytest.mark.parametrize(
    "name,params",
    NOT_IN_OTHER_FUZZ_TESTS,
    ids=[f"{n}-{'-'.join(p.values()) or 'default'}" for n, p in NOT_IN_OTHER_FUZZ_TESTS],
)
def test_fuzzing_finds_no_difference(name, params):
    """On a fixed-seed random script, the lessons no other fuzz test covers give the same batches as Spark
    (what ``ministream fuzz LESSON --runs 1 --seed 2`` checks)."""
    report = fuzz_lesson(get_lesson(name), runs=1, seed=CI_FUZZ_SEED, params=params, shrink_budget=0)
    assert report.matches, "\n".join(outcome.describe() for outcome in report.outcomes)


def test_the_results_page_has_a_row_for_every_lesson_and_a_replay_for_every_disagreement():
    """tutorials/differential-testing.md's table (recorded by tutorials/record_fuzz.py) has one row per lesson
    with a twin, in teaching order, 20 scripts each; a lesson where some disagreed names the events file that
    replays it, and the file is in tests/data/fuzz/."""
    import re
    from pathlib import Path

    from ministream.lessons import all_lessons

    root = Path(__file__).resolve().parents[2]
    page = (root / "tutorials" / "differential-testing.md").read_text()
    rows = re.findall(r"^\| `([\w-]+)` \| (\d+) \| (\d+) \| (\d+) \|$", page, re.M)
    assert [name for name, *_ in rows] == [lesson.name for lesson in all_lessons() if lesson.twin is not None]
    for name, runs, agreed, _ in rows:
        assert int(runs) == 20 and 0 <= int(agreed) <= 20
        replays = re.findall(rf"^- `{name}`: replay: ministream compare {name} --events (\S+)", page, re.M)
        assert len(replays) == int(runs) - int(agreed)
        assert all((root / path).exists() for path in replays)
