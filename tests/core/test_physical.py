"""The runtime: key groups, keyed state, subtasks and the seeded scheduler."""

import pytest

from ministream.core.aggregates import Count, Sum
from ministream.core.plan import Dataflow
from ministream.core.results import normalize_row
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.errors import PipelineError
from ministream.models.microbatch import run_microbatch
from ministream.operators.planner import physical_graph
from ministream.state.keyed import KeyedStateBackend, ListState, MapState, ValueState
from ministream.state.keygroups import MAX_PARALLELISM, key_group_of, key_group_range, subtask_of_key_group


def keyed_count_flow(script):
    flow = Dataflow("count")
    flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
        "totals", count=Count(), sum=Sum("value")
    ).sink("output", CollectingSink())
    return flow


SCRIPT = [
    [{"key": f"k{i % 7}", "value": i} for i in range(40)],
    [],
    [{"key": f"k{i % 11}", "value": 2 * i} for i in range(30)],
]


def as_multisets(batches):
    return [(b.batch_id, b.watermark, sorted(map(normalize_row, b.rows))) for b in batches]


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


@pytest.mark.parametrize("parallelism", [1, 2, 4])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_output_does_not_depend_on_parallelism_or_seed(parallelism, seed):
    """The same script gives the same rows in every batch whatever the parallelism and scheduler seed."""
    expected = as_multisets(run_microbatch(keyed_count_flow(SCRIPT), output_mode="update").output())
    got = run_microbatch(keyed_count_flow(SCRIPT), output_mode="update", parallelism=parallelism, seed=seed)
    assert as_multisets(got.output()) == expected


def test_seed_changes_the_interleaving():
    """Different seeds really interleave subtasks differently (so the test above is not vacuous)."""
    orders = set()
    for seed in range(5):
        flow = Dataflow("order")
        seen = []
        flow.source("events", ScriptedSource(SCRIPT)).key_by("key").aggregate("totals", count=Count()).map(
            "observe", lambda row, seen=seen: seen.append(row["key"]) or row
        ).sink("output", CollectingSink())
        run_microbatch(flow, output_mode="complete", parallelism=4, seed=seed)
        orders.add(tuple(seen))
    assert len(orders) > 1


def test_keyed_step_routes_each_key_to_its_key_group_owner():
    """Every row of a key reaches the one subtask that owns the key's key group."""
    graph_run = run_microbatch(keyed_count_flow(SCRIPT), output_mode="update", parallelism=4)
    for subtask in graph_run.graph.by_step["totals"]:
        for key in subtask.operator.ctx.state.keys("aggregate"):
            assert subtask_of_key_group(key_group_of(key), 4) == subtask.index


def test_physical_graph_has_one_channel_per_sender_receiver_pair():
    """A hash edge from 1 source subtask into 3 keyed subtasks is 3 channels; gathering them is 3 more."""
    graph = physical_graph(keyed_count_flow(SCRIPT), parallelism=3)
    assert [len(s.inputs) for s in graph.subtasks] == [0, 1, 1, 1, 3]


def test_complete_mode_needs_an_aggregation():
    """Complete mode without an aggregation is refused, as Spark refuses it."""
    flow = Dataflow("plain")
    flow.source("events", ScriptedSource(SCRIPT)).map("same", dict).sink("output", CollectingSink())
    with pytest.raises(PipelineError, match="complete output mode needs an aggregation"):
        run_microbatch(flow, output_mode="complete")


def test_step_names_are_unique():
    """Two steps with one name are refused: traces and diagrams name steps."""
    flow = Dataflow("twice")
    events = flow.source("events", ScriptedSource([]))
    events.map("same", dict)
    with pytest.raises(PipelineError, match="already has a step named 'same'"):
        events.map("same", dict)


def test_stateless_operators_keep_empty_batches():
    """map, filter and flat_map pass through batches, and an empty batch is still a batch in the output."""
    flow = Dataflow("words")
    sink = CollectingSink()
    flow.source("lines", ScriptedSource([[{"line": "a b"}], [], [{"line": "c"}]])).flat_map(
        "split", lambda row: [{"word": w} for w in row["line"].split()]
    ).filter("not_b", lambda row: row["word"] != "b").map("upper", lambda row: {"word": row["word"].upper()}).sink(
        "output", sink
    )
    batches = run_microbatch(flow).output()
    assert [(b.batch_id, b.rows) for b in batches] == [(0, [{"word": "A"}]), (1, []), (2, [{"word": "C"}])]
