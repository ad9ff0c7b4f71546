"""Recovery: a crash and a restore from the last complete checkpoint give the failure-free output, for every
lesson, in both models, at any parallelism.

The crash points are drawn from a seeded generator, a few per lesson and model (and always the first and the
last row). The long run is one command::

    MINISTREAM_CRASH_RUNS=40 .venv/bin/python -m pytest -q tests/checkpoints/test_recovery.py
"""

import copy
import os
import random

import pytest

from ministream.checkpoints.coordinator import Checkpoint, load_latest
from ministream.checkpoints.exactly_once import SinkCrash
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.restore import restore_graph
from ministream.checkpoints.storage import DirectoryStorage, MemoryStorage
from ministream.core.faults import crash_at, total_rows
from ministream.errors import PipelineError
from ministream.lessons import all_lessons, get_lesson
from ministream.lessons.crash_checks import check_recovery, recovered_outputs, run_lesson_with_recovery, same_output
from ministream.operators.planner import physical_graph
from ministream.state.keygroups import subtask_of_key
from ministream.tools.cli import main

RUNS = int(os.environ.get("MINISTREAM_CRASH_RUNS", "3"))
"""Random crash points per lesson and model, besides the first and the last row."""


def _supports(lesson, model: str) -> bool:
    if model == "microbatch":
        return True
    try:
        lesson.run(model="continuous")
    except PipelineError:
        return False
    return True


def crash_points(lesson, model: str) -> list[int]:
    """The crash points tried for a lesson in a model: row 0, the last row, and ``RUNS`` seeded random ones."""
    total = total_rows(lesson.pipeline(lesson.default_script, lesson.resolve_params()))
    rng = random.Random(f"{lesson.name}/{model}")
    return sorted({0, total - 1} | {rng.randrange(total) for _ in range(RUNS)})


CASES = [
    (lesson.name, model, rows)
    for lesson in all_lessons()
    for model in ("microbatch", "continuous")
    if _supports(lesson, model)
    for rows in crash_points(lesson, model)
]
PER_SUBTASK_OUTPUT = {"operator-state"}
"""Lessons whose output depends on the parallelism by design: the buffered writer writes the groups each subtask
gathers, so a restore at another parallelism writes other groups (every row still once: its own tests check
that, tests/lessons/test_operator_state.py). Here they recover at the parallelism they crashed at."""

SETTINGS = [
    {"parallelism": 1},
    {"parallelism": 2, "restore_parallelism": 4},
    {"parallelism": 4, "restore_parallelism": 1},
    {"parallelism": 2, "mode": "unaligned", "interval": 1},
    {"parallelism": 1, "interval": 3, "seed": 5},
]


def test_every_lesson_is_covered():
    """The property below runs every registered lesson in the micro-batch model, and the continuous model
    where the lesson runs there."""
    assert {name for name, model, _ in CASES if model == "microbatch"} == {lesson.name for lesson in all_lessons()}
    assert any(model == "continuous" for _, model, _ in CASES)


@pytest.mark.parametrize("name, model, rows", CASES)
def test_recovered_output_equals_failure_free_output(name, model, rows):
    """Crashed after any number of rows and recovered from the last complete checkpoint (at the same or
    another parallelism; aligned or unaligned barriers), a lesson's output equals its failure-free output."""
    lesson = get_lesson(name)
    rng = random.Random(f"{name}/{model}/{rows}")
    settings = dict(rng.choice(SETTINGS))
    if model == "microbatch":
        settings.pop("mode", None), settings.pop("interval", None)
    if name in PER_SUBTASK_OUTPUT:
        settings.pop("restore_parallelism", None)
    run, expected, same = check_recovery(lesson, crash_after_rows=rows, model=model, **settings)
    assert run.crashes == 1
    assert same, f"{settings}: {run.output()} != {expected}"


@pytest.mark.parametrize("name, model, rows", CASES)
def test_cli_crash_at_gives_the_failure_free_output(name, model, rows, capsys):
    """`ministream run LESSON --crash-at N` prints the recovered output, says it equals the run without a
    crash, and exits 0, for every lesson and every N the property test tries."""
    assert main(["run", name, "--crash-at", str(rows), "--model", model]) == 0
    out = capsys.readouterr().out
    assert "crashed: source crashed after delivering" in out
    assert f"{name}: the recovered output equals the output of the run without a crash" in out


def test_cli_crash_at_with_incremental_checkpoints_writes_deltas_and_recovers(tmp_path, capsys):
    """`--crash-at N --incremental K --checkpoint-dir D` keeps delta checkpoints in D and still recovers to the
    failure-free output; without --crash-at the checkpoint flags are refused, naming the one given."""
    folder = tmp_path / "checkpoints"
    assert (
        main(["run", "tumbling-window", "--crash-at", "7", "--incremental", "2", "--checkpoint-dir", str(folder)]) == 0
    )
    assert "tumbling-window: the recovered output equals the output of the run without a crash" in (
        capsys.readouterr().out
    )
    storage = DirectoryStorage(folder)
    assert [n for n in storage.checkpoint_ids() if ".delta.json" in storage.parts(n)] == [1, 2, 4]
    for flags in (
        ["--incremental", "2"],
        ["--checkpoint-dir", str(tmp_path / "other")],
        ["--restore-parallelism", "2"],
    ):
        assert main(["run", "tumbling-window", *flags]) == 2
        assert f"{flags[0]} only applies to a run that crashes and recovers: add --crash-at N" in (
            capsys.readouterr().err
        )


SINK_CASES = [
    (lesson.name, batch.batch_id)
    for lesson in all_lessons()
    if lesson.name
    not in ("checkpoint-recovery", "rescale", "operator-state", "changelog")  # they crash their sink themselves
    for batch in lesson.run().output()
]


@pytest.mark.parametrize("name, batch_id", SINK_CASES)
def test_a_sink_crash_in_any_batch_reruns_that_batch(name, batch_id):
    """A sink that crashes while writing micro-batch k (trailing no-data batches included) makes the
    recovery run batch k again, as its offsets log planned it: the output is the failure-free one."""
    lesson = get_lesson(name)
    values = lesson.resolve_params()
    timestamps = lesson.batch_timestamps(lesson.default_script, values) if lesson.batch_timestamps else None
    run = run_with_recovery(
        lesson.pipeline(lesson.default_script, values),
        output_mode=lesson.mode(values),
        watermark_policy=lesson.policy(values),
        sink_crash=SinkCrash(batch_id, 1),
        batch_timestamps=timestamps,
        parallelism=2,
        restore_parallelism=1,
    )
    assert run.crashes == 1 and run.attempts[-1].restored_from == (batch_id - 1 if batch_id else None)
    assert any(same_output("microbatch", run.output(), output) for output in recovered_outputs(lesson, run))


@pytest.mark.parametrize("model", ["microbatch", "continuous"])
@pytest.mark.parametrize("name", ["tumbling-window", "session-window", "deduplication", "device-sessions"])
def test_restoring_one_checkpoint_at_parallelism_1_2_4_gives_one_output(name, model):
    """The same checkpoint, taken at parallelism 2, restored at parallelism 1, 2 and 4, gives one output: the
    failure-free one (keyed state and timers move by key group)."""
    lesson = get_lesson(name)
    if not _supports(lesson, model):
        pytest.skip(f"{name} does not run in the continuous model")
    rows = total_rows(lesson.pipeline(lesson.default_script, lesson.resolve_params())) * 2 // 3
    outputs, restored = [], set()
    for parallelism in (1, 2, 4):
        run = run_lesson_with_recovery(
            lesson, crash_after_rows=rows, model=model, parallelism=2, restore_parallelism=parallelism, interval=1
        )
        restored.add(run.attempts[-1].restored_from)
        outputs.append(run.output())
    assert len(restored) == 1 and None not in restored
    expected = lesson.run(model=model).output()
    assert all(same_output(model, output, expected) for output in outputs)


def test_rescale_hands_each_key_to_the_subtask_that_owns_its_key_group():
    """Restored at parallelism 1, 2 or 4, every key's accumulator is in the subtask that owns its key group,
    and no key is lost or doubled."""
    lesson = get_lesson("running-aggregation")
    storage = MemoryStorage()
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    run_with_recovery(flow, output_mode="update", parallelism=2, storage=storage)
    checkpoint = load_latest(storage)
    for parallelism in (1, 2, 4):
        graph = physical_graph(lesson.pipeline(lesson.default_script, {}), parallelism, output_mode="update")
        restore_graph(graph, copy.deepcopy(checkpoint))
        found = {}
        for subtask in graph.by_step["totals"]:
            for group in subtask.operator.groups.values():
                for key, accumulators in group.items():
                    assert subtask.index == subtask_of_key(key, parallelism)
                    found[key] = accumulators
        assert found == {"a": [3, 9.0], "b": [3, 13.0], "c": [1, 1.0]}


def test_a_crashed_batch_runs_again_with_the_same_id_watermarks_and_offsets():
    """A crash in the middle of micro-batch 3 leaves its offsets log entry without a commit: the recovering
    run restores checkpoint 2 and runs batch 3 again, as logged: same id, watermarks and offsets."""
    lesson = get_lesson("tumbling-window")
    storage = MemoryStorage()
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    crash_at(flow, 7)  # the 8th row is in batch 3
    run = run_with_recovery(flow, storage=storage, trace=True)
    assert [attempt.restored_from for attempt in run.attempts] == [None, 2]
    batch_3 = [(s.batch_id, s.watermark, s.late_watermark) for s in run.trace.batches if s.batch_id == 3]
    assert len(batch_3) == 2 and batch_3[0] == batch_3[1]
    assert storage.offsets(3) == {
        "batch_id": 3,
        "watermark": batch_3[0][1],
        "late_watermark": batch_3[0][2],
        "offsets": {"events": 4},
    }
    assert same_output("microbatch", run.output(), lesson.run().output())  # rows of a batch: in any order


def test_a_checkpoint_holds_offsets_keyed_state_timers_and_watermarks():
    """A continuous checkpoint holds the sources' offsets, each keyed step's state by key group, timers, the
    watermark step's largest event time, and every subtask's watermark and valve."""
    lesson = get_lesson("device-sessions")
    storage = MemoryStorage()
    run_lesson_with_recovery(lesson, crash_after_rows=None, model="continuous", interval=3, storage=storage)
    assert load_latest(storage).sources["events"]["offset"] == sum(len(batch) for batch in lesson.default_script)
    checkpoint = Checkpoint.from_files(storage.files[2])  # after 6 rows, sessions open
    assert checkpoint.sources["events"]["offset"] == 6
    sessions = checkpoint.operators["sessions"][0]
    assert sessions["keyed"] and sessions["timers"]
    assert {key for group in sessions["timers"].values() for key in group["event_time"]} == {"d1", "d2"}
    assert checkpoint.operators["watermark"][0]["max_seen"] is not None
    assert checkpoint.subtasks["sessions[0]"]["watermark"] == checkpoint.subtasks["sessions[0]"]["valve"]["watermark"]


def test_too_many_crash_rows_is_refused_with_the_range():
    """A crash point past the script's rows is refused, with the rows it may be."""
    lesson = get_lesson("running-aggregation")
    with pytest.raises(PipelineError, match=r"--crash-at 7: the script has 7 rows, so a crash can come after 0 to 6"):
        crash_at(lesson.pipeline(lesson.default_script, {}), 7)


def test_a_process_function_sees_the_same_watermark_after_a_restore():
    """A continuous-model process step's watermark is in its snapshot: a processor that reports the watermark
    it sees with every row reports the same values after a crash and a restore."""
    from ministream import CollectingSink, Dataflow, ScriptedSource
    from ministream.models.continuous import run_continuous
    from ministream.operators.process import Processor

    class Seen(Processor):
        def handle_input_rows(self, key, rows, timer_values):
            return [{"key": key, "ts": row["ts"], "watermark_seen": timer_values.watermark} for row in rows]

    def flow():
        built = Dataflow("seen")
        rows = [{"key": key, "ts": ts} for key, ts in (("a", 1_000), ("a", 5_000), ("b", 9_000), ("a", 12_000))]
        built.source("events", ScriptedSource([rows])).with_watermark("wm", "ts", "1 second").key_by("key").process(
            "seen", Seen(), time_mode="event_time"
        ).sink("output", CollectingSink())
        return built

    expected = run_continuous(flow()).output()
    for rows in range(4):
        crashing = flow()
        crash_at(crashing, rows)
        run = run_with_recovery(crashing, model="continuous", interval=1)
        assert same_output("continuous", run.output(), expected)
