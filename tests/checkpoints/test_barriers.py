"""Barriers: a checkpoint completes when every subtask has acknowledged it; the rules of the three modes."""

import pytest

from ministream.checkpoints.coordinator import Checkpoint
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.restore import restore_graph
from ministream.checkpoints.storage import MemoryStorage
from ministream.errors import PipelineError
from ministream.lessons import get_lesson
from ministream.lessons.barrier_alignment import checkpointed_run
from ministream.operators.planner import physical_graph


def test_a_checkpoint_completes_only_when_the_sink_has_acknowledged_it():
    """Every subtask acknowledges barrier n after its upstream did; the sink's acknowledgement comes last,
    and only then is checkpoint n stored."""
    run = checkpointed_run(seed=0)
    lines = [
        (line.step, line.text)
        for line in run.trace.lines
        if line.kind == "barrier" and line.text.startswith("barrier 1 ") and "snapshot taken" in line.text
    ]
    assert [step for step, _ in lines] == ["totals", "output"]


def test_only_one_unaligned_checkpoint_is_in_flight():
    """A trigger while an unaligned checkpoint is in flight is skipped (Flink's rule for unaligned ones)."""
    run = checkpointed_run({"mode": "unaligned", "interval": 1}, seed=1)
    assert [line.text for line in run.trace.lines if line.kind == "skipped"]


def test_an_unaligned_checkpoint_is_restored_only_at_its_parallelism():
    """In-flight data belongs to the old channels: restoring an unaligned checkpoint elsewhere is refused."""
    lesson = get_lesson("running-aggregation")
    checkpoint = _unaligned_checkpoint_with_in_flight_data()
    graph = physical_graph(lesson.pipeline(lesson.default_script, {}), 4, model="continuous")
    with pytest.raises(
        PipelineError,
        match=f"checkpoint {checkpoint.checkpoint_id} is unaligned: its in-flight "
        "data belongs to the channels of parallelism 2",
    ):
        restore_graph(graph, checkpoint)


def _unaligned_checkpoint_with_in_flight_data():
    """An unaligned checkpoint taken at parallelism 2 that holds in-flight data."""
    lesson = get_lesson("running-aggregation")
    for seed in range(20):
        storage = MemoryStorage()
        flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
        run_with_recovery(
            flow, model="continuous", mode="unaligned", interval=1, parallelism=2, seed=seed, storage=storage
        )
        for checkpoint_id in storage.checkpoint_ids():
            checkpoint = Checkpoint.from_files(storage.files[checkpoint_id])
            if checkpoint.channels:
                return checkpoint
    raise AssertionError("no seed gave an unaligned checkpoint with in-flight data")


def test_mode_and_interval_are_checked():
    """An unknown mode or an interval below one row is refused with the reason."""
    lesson = get_lesson("running-aggregation")
    for settings, message in (
        ({"mode": "sideways"}, "checkpoint mode must be one of"),
        ({"interval": 0}, "a checkpoint interval is a number of rows"),
    ):
        with pytest.raises(ValueError, match=message):
            run_with_recovery(lesson.pipeline(lesson.default_script, {}), model="continuous", **settings)
