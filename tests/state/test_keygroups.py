"""Key groups (``state/keygroups.py``): a key belongs to one of 128 key groups, the same in every process, and
each subtask owns a contiguous range of them."""

from ministream.state.keygroups import MAX_PARALLELISM, key_group_of, key_group_range, subtask_of_key_group


def test_key_groups_partition_every_group_exactly_once():
    """At any parallelism, the subtasks' key-group ranges cover every key group exactly once."""
    for parallelism in (1, 2, 3, 4, 7, 128):
        groups = [g for i in range(parallelism) for g in key_group_range(i, parallelism)]
        assert groups == list(range(MAX_PARALLELISM))
        assert all(
            subtask_of_key_group(g, parallelism) == i
            for i in range(parallelism)
            for g in key_group_range(i, parallelism)
        )


def test_key_group_is_stable_across_processes():
    """A key's group comes from CRC-32, not Python's salted hash, so it is the same in every process."""
    import subprocess
    import sys

    code = "from ministream.state.keygroups import key_group_of; print(key_group_of('alice'), key_group_of(('x', 1)))"
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, check=False, text=True, env={"PYTHONHASHSEED": str(seed)}
        ).stdout
        for seed in (1, 2)
    }
    assert runs == {f"{key_group_of('alice')} {key_group_of(('x', 1))}\n"}
