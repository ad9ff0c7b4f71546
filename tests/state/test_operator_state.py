"""Operator state is dealt out on a rescale as each list was declared: an even split gives every item to exactly
one new subtask, in order, in parts whose sizes differ by at most one; union gives every item to every one."""

import random

import pytest

from ministream.errors import PipelineError
from ministream.state.operator_state import OperatorState, redistribute, split_snapshots


def test_an_even_split_keeps_every_item_once_in_order():
    """For random lists and parallelisms, the parts put end to end are the old lists put end to end, and their
    sizes differ by at most one."""
    rng = random.Random(3)
    for _ in range(200):
        lists = [[rng.random() for _ in range(rng.randint(0, 5))] for _ in range(rng.randint(1, 5))]
        parts = redistribute(lists, rng.randint(1, 6), "even")
        assert [item for part in parts for item in part] == [item for old in lists for item in old]
        assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_union_gives_every_subtask_every_item():
    """Union: each of the new subtasks gets all items of all old subtasks."""
    assert redistribute([[1], [2, 3]], 3, "union") == [[1, 2, 3]] * 3


def test_lists_keep_their_own_mode_in_a_split():
    """A snapshot with an even list and a union list is split by each list's mode."""
    old = [
        {"buffer": {"mode": "even", "items": ["a", "b"]}, "offsets": {"mode": "union", "items": ["p0"]}},
        {"buffer": {"mode": "even", "items": ["c"]}, "offsets": {"mode": "union", "items": ["p1"]}},
    ]
    shares = split_snapshots(old, 2)
    assert [share["buffer"]["items"] for share in shares] == [["a", "b"], ["c"]]
    assert [share["offsets"]["items"] for share in shares] == [["p0", "p1"], ["p0", "p1"]]


def test_a_list_declared_twice_with_two_modes_is_refused():
    """A list is declared once, with one mode: another mode later is an error naming the list."""
    state = OperatorState()
    state.list("buffer", "even")
    with pytest.raises(PipelineError, match="'buffer' was declared 'even'"):
        state.list("buffer", "union")
