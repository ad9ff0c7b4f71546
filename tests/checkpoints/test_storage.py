"""Checkpoint storage: state comes back equal, files appear whole, torn and corrupt checkpoints are skipped."""

from hypothesis import given, settings
from hypothesis import strategies as st

from ministream.checkpoints.coordinator import load_latest
from ministream.checkpoints.recovery import run_with_recovery
from ministream.checkpoints.storage import (
    DirectoryStorage,
    MemoryStorage,
    decode_json,
    encode_json,
    file_tree,
    from_plain,
    to_plain,
)
from ministream.core.faults import crash_at
from ministream.lessons import get_lesson

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=5), st.floats(allow_nan=False, allow_infinity=False)
)
keys = st.one_of(st.integers(), st.text(max_size=5), st.tuples(st.text(max_size=3), st.integers()))
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(keys, inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(values)
def test_state_round_trips_through_json(value):
    """Any snapshot-shaped value (tuples, int and tuple keys, nested) comes back from JSON equal, with the same
    types: a tuple stays a tuple, an int key stays an int."""
    back = decode_json(encode_json(value))
    assert back == value
    assert repr(back) == repr(value)


def test_objects_json_cannot_hold_are_pickled():
    """A user's accumulator of any class is stored (pickled) and comes back equal."""
    from fractions import Fraction

    assert from_plain(to_plain({"acc": Fraction(1, 3)})) == {"acc": Fraction(1, 3)}
    assert "__pickle__" in to_plain(Fraction(1, 3))


def _checkpointed_storage(storage):
    """A running-aggregation run that leaves checkpoints 0, 1 and 2 (one per batch) in ``storage``."""
    lesson = get_lesson("running-aggregation")
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    run_with_recovery(flow, output_mode="update", storage=storage)
    return lesson


def test_directory_layout_and_no_temporary_files_left(tmp_path):
    """A directory checkpoint is one file per checkpoint, its parts then its manifest (the last line), beside
    the offsets log; every file was renamed into place, so no ``.tmp`` file is left behind."""
    storage = DirectoryStorage(tmp_path)
    _checkpointed_storage(storage)
    tree = file_tree(tmp_path)
    assert [line.split()[0] for line in tree.splitlines()] == [
        "chk-0",
        "chk-1",
        "chk-2",
        "offsets/0",
        "offsets/1",
        "offsets/2",
    ]
    assert ".tmp" not in tree
    parts = [line.split()[0] for line in storage.parts(2).splitlines()]
    assert parts == ["checkpoint.json", "state/output/0.json", "state/totals/0.json", "manifest.json"]
    last_line = (tmp_path / "chk-2").read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[1]
    assert decode_json(last_line)["checkpoint_id"] == 2


def test_corrupt_checkpoint_file_is_reported_and_the_previous_one_is_used(tmp_path):
    """A state file whose sha256 differs from the manifest's makes its checkpoint corrupt: recovery reports
    it, naming the file, and restores the previous complete checkpoint."""
    storage = DirectoryStorage(tmp_path)
    _checkpointed_storage(storage)
    assert b"[3, 13.0]" in storage.chain(2)[0][1]["state/totals/0.json"]
    checkpoint_file = tmp_path / "chk-2"
    checkpoint_file.write_bytes(checkpoint_file.read_bytes().replace(b"[3, 13.0]", b"[3, 14.0]"))
    checkpoint = load_latest(storage)
    assert checkpoint.checkpoint_id == 1
    assert [str(p) for p in storage.problems] == [
        "checkpoint 2 skipped: chk-2/state/totals/0.json is corrupt (its sha256 differs from the manifest's)"
    ]


def test_recovery_after_a_corrupt_checkpoint_still_gives_the_failure_free_output(tmp_path):
    """A run crashes in batch 2 while the newest checkpoint (batch 1) is corrupt: it restores checkpoint 0,
    runs batches 1 and 2 again, and its output is still the failure-free one."""
    lesson = get_lesson("running-aggregation")
    storage = DirectoryStorage(tmp_path)
    flow = lesson.pipeline(lesson.default_script, lesson.resolve_params())
    crash_at(flow, 6)  # batch 2 holds rows 5 and 6: the crash comes while it reads
    original_save = storage.save_files

    def save_and_damage(checkpoint_id, files, base=None):
        original_save(checkpoint_id, files, base)
        if checkpoint_id == 1:
            checkpoint_file = tmp_path / "chk-1"  # the same length, other bytes, at the start of checkpoint.json
            checkpoint_file.write_bytes(b'{"damaged": 1}' + checkpoint_file.read_bytes()[14:])

    storage.save_files = save_and_damage
    run = run_with_recovery(flow, output_mode="update", storage=storage)
    assert [attempt.restored_from for attempt in run.attempts] == [None, 0]
    assert run.problems == [
        "checkpoint 1 skipped: chk-1/checkpoint.json is corrupt (its sha256 differs from the manifest's)"
    ]
    assert run.output() == lesson.run().output()


def test_torn_checkpoint_without_manifest_is_skipped(tmp_path):
    """A checkpoint file that does not end with its manifest (cut short, e.g. copied in part) is torn: skipped,
    reported."""
    storage = DirectoryStorage(tmp_path)
    _checkpointed_storage(storage)
    checkpoint_file = tmp_path / "chk-2"
    checkpoint_file.write_bytes(checkpoint_file.read_bytes()[:100])
    assert load_latest(storage).checkpoint_id == 1
    assert str(storage.problems[0]) == (
        "checkpoint 2 skipped: chk-2/manifest.json is missing: the checkpoint is torn (the run died while storing it)"
    )


def test_missing_state_file_makes_a_checkpoint_torn(tmp_path):
    """A part listed in the manifest but absent makes the checkpoint torn, in memory as on disk (where the
    file is too short to hold it)."""
    storage = MemoryStorage()
    _checkpointed_storage(storage)
    del storage.files[2]["state/totals/0.json"]
    assert load_latest(storage).checkpoint_id == 1
    assert (
        str(storage.problems[0]) == "checkpoint 2 skipped: chk-2/state/totals/0.json is missing: the checkpoint is torn"
    )
    storage = DirectoryStorage(tmp_path)
    _checkpointed_storage(storage)
    data = (tmp_path / "chk-2").read_bytes()
    manifest = data.rstrip(b"\n").rsplit(b"\n", 1)[1]
    offset, _ = decode_json(manifest)["at"]["state/totals/0.json"]
    (tmp_path / "chk-2").write_bytes(data[:offset] + b"\n" + manifest + b"\n")  # the last part cut off
    assert load_latest(storage).checkpoint_id == 1
    assert (
        str(storage.problems[0]) == "checkpoint 2 skipped: chk-2/state/totals/0.json is missing: the checkpoint is torn"
    )


def test_retain_keeps_only_the_newest_checkpoints():
    """``retain=2`` deletes older checkpoints as new ones complete."""
    storage = MemoryStorage(retain=2)
    _checkpointed_storage(storage)
    assert storage.checkpoint_ids() == [1, 2]
