"""Keyed state (``state/keyed.py``): state primitives read and write the current key's value, and a snapshot
restores by key group into the subtasks that own them."""

import pytest

from ministream.state.keyed import KeyedStateBackend, ListState, MapState, ValueState
from ministream.state.keygroups import key_group_of, key_group_range, subtask_of_key_group


def test_keyed_state_is_scoped_to_the_current_key():
    """A state primitive reads and writes only the value of the key currently set."""
    backend = KeyedStateBackend()
    seen, tags, last = ListState(backend, "seen"), MapState(backend, "tags"), ValueState(backend, "last")
    backend.set_current_key("a")
    seen.add(1)
    tags.put("x", 1)
    last.update("a-last")
    backend.set_current_key("b")
    assert (seen.get(), tags.items(), last.value()) == ([], [], None)
    backend.set_current_key("a")
    assert (seen.get(), tags.items(), last.value()) == ([1], [("x", 1)], "a-last")


def test_state_snapshot_restores_by_key_group():
    """A snapshot split by key group restores into the subtasks that own those groups at a new parallelism."""
    backend = KeyedStateBackend()
    count = ValueState(backend, "count")
    for key in ("a", "b", "c", "d", "e"):
        backend.set_current_key(key)
        count.update(ord(key))
    snapshot = backend.snapshot()
    restored = {}
    for subtask in range(3):
        part = KeyedStateBackend()
        part.restore(snapshot, key_group_range(subtask, 3))
        for key in part.keys("count"):
            assert subtask_of_key_group(key_group_of(key), 3) == subtask
            restored[key] = part.tables["count"][key_group_of(key)][key]
    assert restored == {key: ord(key) for key in "abcde"}


@pytest.mark.parametrize("ttl", [False, True], ids=["plain", "with a time-to-live"])
def test_list_and_map_state_refuse_what_sparks_state_refuses(ttl):
    """A list holds no None and is never set empty, a map has no None key or value (Spark:
    ILLEGAL_STATE_STORE_VALUE.NULL_VALUE and .EMPTY_LIST_VALUE, TransformWithListStateSuite and
    TransformWithMapStateSuite); the state is left as it was, and clear() still empties a list."""
    from ministream.errors import PipelineError
    from ministream.state.ttl import TtlListState, TtlMapState

    backend = KeyedStateBackend()
    backend.set_current_key("k")
    items = TtlListState(backend, "items", 10, lambda: 0) if ttl else ListState(backend, "items")
    sessions = TtlMapState(backend, "sessions", 10, lambda: 0) if ttl else MapState(backend, "sessions")
    items.add_all(["a", "b"])
    sessions.put("s1", 1)
    refusals = {
        "NULL_VALUE": [
            lambda: items.add(None),
            lambda: items.add_all(None),
            lambda: items.add_all(["c", None]),
            lambda: items.update(None),
            lambda: items.update([None]),
            lambda: sessions.put(None, 1),
            lambda: sessions.put("s2", None),
            lambda: sessions.get(None),
            lambda: sessions.contains(None),
            lambda: sessions.remove(None),
        ],
        "EMPTY_LIST_VALUE": [lambda: items.update([]), lambda: items.add_all([])],
    }
    for error, calls in refusals.items():
        for call in calls:
            with pytest.raises(PipelineError, match=f"state '(items|sessions)': .*ILLEGAL_STATE_STORE_VALUE.{error}"):
                call()
    assert (items.get(), sessions.items()) == (["a", "b"], [("s1", 1)])
    items.clear()
    assert items.get() == []
