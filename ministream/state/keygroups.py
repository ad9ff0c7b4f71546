"""Key groups: how a key finds its subtask, the same way in every process and at every parallelism.

A keyed step runs as N parallel *subtasks*; every record of one key must reach the same subtask, because that
subtask holds the key's state. ministream does what Flink does:

1. hash the key with a **stable** hash (Python's ``hash(str)`` is salted per process, so a restarted process
   would send keys elsewhere and lose their state);
2. take the hash modulo ``MAX_PARALLELISM`` to get the key's *key group*, a number that never changes;
3. give each subtask a contiguous range of key groups.

State is stored per key group, so a checkpoint taken with 2 subtasks can be restored into 4: each new subtask
takes the key groups of its range. Changing N never changes a key's group, only which subtask owns the group.

>>> key_group_of("alice")
38
>>> subtask_of_key_group(38, parallelism=2), subtask_of_key_group(38, parallelism=4)
(0, 1)
>>> key_group_range(1, parallelism=2)
range(64, 128)
"""

from __future__ import annotations

import functools
import zlib

MAX_PARALLELISM = 128
"""The number of key groups, and so the largest parallelism a keyed step can have (Flink's default)."""


def stable_hash(key) -> int:
    """A hash of the key that is the same in every process: CRC-32 of the key's ``repr``.

    ``repr`` tells ``1`` from ``"1"`` and ``(1, 2)`` from ``"(1, 2)"``, so different keys hash differently.

    >>> stable_hash("alice") == stable_hash("alice"), stable_hash(1) == stable_hash("1")
    (True, False)
    """
    return zlib.crc32(repr(key).encode("utf-8"))


@functools.lru_cache(maxsize=1 << 16)
def key_group_of(key, max_parallelism: int = MAX_PARALLELISM) -> int:
    """The key group of a key: its stable hash modulo the maximum parallelism.

    Cached, because a stream sees the same keys again and again.

    >>> key_group_of("bob"), key_group_of(("bob", 0))
    (82, 78)
    """
    return stable_hash(key) % max_parallelism


def subtask_of_key_group(key_group: int, parallelism: int, max_parallelism: int = MAX_PARALLELISM) -> int:
    """The subtask that owns a key group when the step runs with ``parallelism`` subtasks.

    Subtask ``i`` owns the key groups from ``i * max // n`` up to ``(i + 1) * max // n``.

    >>> [subtask_of_key_group(g, 3) for g in (0, 42, 43, 85, 86, 127)]
    [0, 0, 1, 1, 2, 2]
    """
    return key_group * parallelism // max_parallelism


def key_group_range(subtask: int, parallelism: int, max_parallelism: int = MAX_PARALLELISM) -> range:
    """The key groups owned by one subtask: a contiguous range.

    >>> key_group_range(0, 3), key_group_range(2, 3)
    (range(0, 43), range(86, 128))
    """
    if not 1 <= parallelism <= max_parallelism:
        raise ValueError(f"parallelism must be between 1 and {max_parallelism}, got {parallelism}")
    start = -(-subtask * max_parallelism // parallelism)
    end = -(-(subtask + 1) * max_parallelism // parallelism)
    return range(start, end)


def subtask_of_key(key, parallelism: int) -> int:
    """The subtask that processes a key: the owner of its key group.

    >>> subtask_of_key("alice", 1), subtask_of_key("alice", 4)
    (0, 1)
    """
    return subtask_of_key_group(key_group_of(key), parallelism)
