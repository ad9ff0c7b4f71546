"""Random two-input scripts (matches inside, on and outside the bounds; late rows on either side; one side
idle) and random duplicate streams: ministream agrees with Spark on every one.

CI runs a few short scripts; a longer run is one command, per lesson with the fuzzer (which also shrinks a
disagreement to a small events file): ``ministream fuzz outer-join --runs 50 --param how=full_outer``; or for
every case here: ``MINISTREAM_FUZZ_RUNS=25 .venv/bin/python -m pytest tests/lessons/test_join_fuzz.py``.
"""

import os
import random

import pytest

from ministream.lessons import compare_lesson, get_lesson

RUNS = int(os.environ.get("MINISTREAM_FUZZ_RUNS", "1"))

CASES = [
    ("stream-join", {}),
    ("outer-join", {"how": "full_outer"}),
    ("outer-join", {"how": "left_semi", "within": "7 seconds"}),
    ("idle-input", {"policy": "max"}),
    ("deduplication", {"key": "within"}),
    ("deduplication", {"key": "id_and_time", "delay": "3 seconds"}),
]


def scripts(name, params, runs, seed=0):
    lesson = get_lesson(name)
    rng = random.Random(f"{name}-{sorted(params.items())}-{seed}")
    return [lesson.random_script(rng, lesson.resolve_params(params)) for _ in range(runs)]


@pytest.mark.spark
@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}-{'-'.join(p.values()) or 'default'}" for n, p in CASES])
def test_random_scripts_match_spark(name, params):
    """On random scripts, every batch (rows, watermark, no-data batches) is the same as in Spark."""
    for script in scripts(name, params, RUNS):
        result = compare_lesson(get_lesson(name), script, params)
        assert result.matches, f"script {script}\n{result.table()}"


@pytest.mark.parametrize("name,params", CASES, ids=[f"{n}-{'-'.join(p.values()) or 'default'}" for n, p in CASES])
def test_random_scripts_do_not_depend_on_parallelism_or_seed(name, params):
    """On random scripts, ministream's batches are the same at parallelism 1, 2 and 4 and any seed."""
    lesson = get_lesson(name)
    for n, script in enumerate(scripts(name, params, 20, seed=1)):
        expected = [sorted(map(repr, b.rows)) for b in lesson.run(script, params).output()]
        got = [sorted(map(repr, b.rows)) for b in lesson.run(script, params, parallelism=1 + n % 4, seed=n).output()]
        assert got == expected
