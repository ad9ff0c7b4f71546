"""Lesson device-sessions: map state and event-time timers in a keyed process function agree with Spark's
transformWithState batch for batch, with the default events, other parameters and random scripts.

CI runs two random scripts; a longer run is one command:
``MINISTREAM_FUZZ_RUNS=25 .venv/bin/python -m pytest tests/lessons/test_device_sessions.py -k random``.
"""

import os
import random

import attrs
import pytest

from ministream.lessons import compare_lesson, get_lesson
from ministream.lessons.device_sessions import TRANSFORM_WITH_STATE_CONF
from ministream.tools.cli import main

LESSON = get_lesson("device-sessions")
RUNS = int(os.environ.get("MINISTREAM_FUZZ_RUNS", "2"))


def random_scripts(runs, seed=0):
    rng = random.Random(f"device-sessions-{seed}")
    return [LESSON.random_script(rng, LESSON.resolve_params()) for _ in range(runs)]


@pytest.mark.spark
def test_matches_spark_with_the_default_events():
    """Heartbeats, timeouts, the late row and the final no-data batch are the same in ministream and Spark."""
    result = compare_lesson(LESSON)
    assert result.matches, result.table()
    assert [b.batch_id for b in result.batches] == [0, 1, 2, 3, 4, 5, 6]
    assert result.rows_matched == 7


@pytest.mark.spark
def test_cli_compare_exits_0_with_other_heartbeat_and_timeout(capsys):
    """`ministream compare device-sessions --param heartbeat=... --param timeout=...` matches Spark too."""
    status = main(["compare", "device-sessions", "--param", "heartbeat=20 seconds", "--param", "timeout=15 seconds"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.strip().splitlines()[-1].startswith("device-sessions: 7 of 7 batches match")


@pytest.mark.spark
def test_comparison_fails_on_a_twin_with_another_timeout():
    """A twin whose sessions time out one second later makes the comparison fail on the closed rows."""
    from ministream.lessons.device_sessions import twin

    def late_twin(inputs, params):
        return twin(inputs, {**params, "timeout": params["timeout"] + 1_000})

    result = compare_lesson(attrs.evolve(LESSON, twin=late_twin))
    assert not result.matches
    differing = [b for b in result.batches if not b.matches]
    assert all(row[2] == ("kind", "closed") for b in differing for row in b.only_ministream)


@pytest.mark.spark
def test_random_scripts_match_spark():
    """On random game events (several devices and sessions, late rows, big jumps of time), every batch matches."""
    for script in random_scripts(RUNS):
        result = compare_lesson(LESSON, script)
        assert result.matches, f"script {script}\n{result.table()}"


def test_same_output_for_any_parallelism_and_seed():
    """ministream's batches are the same at parallelism 1, 2 and 4 and any seed, on the default and random events."""
    for n, script in enumerate([None] + random_scripts(10, seed=1)):
        expected = [sorted(map(repr, b.rows)) for b in LESSON.run(script).output()]
        for parallelism, seed in ((2, n), (4, n + 1)):
            got = [sorted(map(repr, b.rows)) for b in LESSON.run(script, parallelism=parallelism, seed=seed).output()]
            assert got == expected


def test_the_trace_says_why_a_row_was_dropped_and_a_timer_fired():
    """The trace names the late row of batch 3 and the timers that produced the heartbeats."""
    run = LESSON.run(trace=True)
    [late] = run.trace.of_kind("late")
    assert late.batch_id == 3 and late.row["device"] == "d2" and "previous batch's watermark" in late.text
    assert any(line.batch_id == 3 and "2024-01-01T10:00:30Z fired" in line.text for line in run.trace.of_kind("timer"))


def test_every_session_closes_once_in_the_continuous_model():
    """The same processor, run per record with Flink-style watermarks, closes every session once (the final
    watermark, +∞, fires every timer)."""
    [batch] = LESSON.run(model="continuous").output()
    closed = sorted((r["device"], r["session"]) for r in batch.rows if r["kind"] == "closed")
    assert closed == [("d1", "s1"), ("d1", "s2"), ("d2", "s7"), ("d3", "s9")]


@pytest.mark.spark
def test_state_store_setting_is_sparks_rocksdb_provider():
    """The lesson's Spark setting is ministream.spark.ROCKSDB_STATE_STORE, which transformWithState requires."""
    from ministream.spark import ROCKSDB_STATE_STORE

    assert TRANSFORM_WITH_STATE_CONF == ROCKSDB_STATE_STORE
    assert LESSON.spark_conf == ROCKSDB_STATE_STORE


PER_WINDOW = {"per_window": 30_000}


def test_a_window_after_the_process_step_counts_its_rows_by_their_time():
    """``per_window=30 seconds``: the process step's rows go on to a tumbling window per kind over their
    ``time`` (its event_time_column); the window of 10:00:30 (two heartbeats, d2's close) comes out in batch 6,
    when the watermark passes 10:01:00, and the later ones wait for a watermark the script never reaches."""
    from ministream.time.units import format_clock

    run = LESSON.run(params=PER_WINDOW)
    rows = [
        (batch.batch_id, row["kind"], format_clock(row["window_start"]), row["rows"], row["points"])
        for batch in run.output()
        for row in batch.rows
    ]
    assert sorted(rows) == [(6, "closed", "10:00:30", 1, 5.0), (6, "heartbeat", "10:00:30", 2, 16.0)]
    assert LESSON.mode(LESSON.resolve_params(PER_WINDOW)) == "append"


def test_a_negative_window_is_refused():
    """A window cannot be negative: a one-line error naming the parameter."""
    from ministream.errors import PipelineError

    with pytest.raises(PipelineError, match="--param per_window: a window's size cannot be negative"):
        LESSON.run(params={"per_window": -1_000})


@pytest.mark.spark
def test_a_window_after_the_process_step_matches_spark():
    """``per_window``: the hand-written twin (``eventTimeColumnName="time"``, then ``groupBy(kind, window)``), the
    adapter twin and the twin compiled from the pipeline give ministream's rows batch for batch, on the lesson's
    events, and the hand-written one on random ones too."""
    from ministream.lessons.device_sessions import adapter_twin
    from ministream.spark.compiler import compiled_lesson_twin

    result = compare_lesson(LESSON, params=PER_WINDOW)
    assert result.matches, result.table()
    assert result.rows_matched == 2
    adapted = compare_lesson(attrs.evolve(LESSON, twin=adapter_twin), params=PER_WINDOW)
    assert adapted.matches, adapted.table()
    compiled = compiled_lesson_twin(LESSON, PER_WINDOW)
    assert "eventTimeColumnName" not in compiled.source  # the step's spec carries it to processor_twin
    assert 'sessions.groupBy("kind", F.window("time", "30 seconds"))' in compiled.source
    twinned = compare_lesson(attrs.evolve(LESSON, twin=compiled.twin, spark_conf=compiled.conf), params=PER_WINDOW)
    assert twinned.matches, twinned.table()
    for script in random_scripts(RUNS, seed="per-window"):
        result = compare_lesson(LESSON, script, PER_WINDOW)
        assert result.matches, f"script {script}\n{result.table()}"
