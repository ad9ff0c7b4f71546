"""Random scripts for the window lessons (out of order, duplicates, late rows, rows exactly on window edges
and on the watermark, empty batches): ministream agrees with Spark on every one.

CI runs one short script per case; a longer run is one command:
``MINISTREAM_FUZZ_RUNS=25 .venv/bin/python -m pytest tests/lessons/test_window_scripts.py`` (each case then runs 25
scripts), or ``ministream fuzz LESSON --runs N`` for one lesson.
"""

import os
import random

import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.window_scripts import random_window_script
from ministream.time.windows import last_start

RUNS = int(os.environ.get("MINISTREAM_FUZZ_RUNS", "1"))

CASES = [
    ("tumbling-window", {}),
    ("sliding-window", {"size": "7 seconds", "slide": "3 seconds", "offset": "1 second"}),
    ("late-data", {"delay": "0 seconds"}),
    ("output-modes", {"mode": "update"}),
    ("output-modes", {"mode": "complete", "size": "5 seconds"}),
]
IDS = [f"{name}-{'-'.join(params.values()) or 'default'}".replace(" ", "") for name, params in CASES]


def scripts(name, params, runs, seed=0):
    lesson = get_lesson(name)
    rng = random.Random(f"{name}-{sorted(params.items())}-{seed}")
    return [lesson.random_script(rng, lesson.resolve_params(params)) for _ in range(runs)]


@pytest.mark.spark
@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_random_scripts_match_spark(name, params):
    """On random scripts, every batch (rows, watermark, no-data batches) is the same as in Spark."""
    for script in scripts(name, params, RUNS):
        result = compare_lesson(get_lesson(name), script, params)
        assert result.matches, f"script {script}\n{result.table()}"


@pytest.mark.parametrize("name,params", CASES, ids=IDS)
def test_random_scripts_do_not_depend_on_parallelism_or_seed(name, params):
    """On random scripts, ministream's batches and late rows are the same at parallelism 1 to 4 and any seed."""
    lesson = get_lesson(name)

    def seen(run):
        return (
            [sorted(map(repr, b.rows)) for b in run.output()],
            sorted(repr((late.batch_id, late.row, late.window)) for late in run.late_rows()),
        )

    for n, script in enumerate(scripts(name, params, 20, seed=1)):
        expected = seen(lesson.run(script, params))
        assert seen(lesson.run(script, params, parallelism=1 + n % 4, seed=n)) == expected


def test_the_generator_aims_at_the_edges():
    """Over a few seeds the scripts hold empty batches, duplicates, late rows, rows exactly on a window start
    and rows 1 ms either side of one."""
    params = {"size": 10_000, "delay": 5_000}
    rows, empty, late = [], 0, 0
    lesson = get_lesson("tumbling-window")
    for seed in range(30):
        script = random_window_script(random.Random(seed), params)
        empty += sum(not batch for batch in script)
        rows += [row for batch in script for row in batch]
        late += len(lesson.run(script).late_rows())
    offsets = {row["ts"] - last_start(row["ts"], 10_000) for row in rows}
    assert empty > 0 and late > 0
    assert len({repr(row) for row in rows}) < len(rows)  # duplicates
    assert {0, 1, 9_999} <= offsets
