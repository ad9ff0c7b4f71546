"""The physical graph (``core/physical.py``): subtasks joined by channels, run by a seeded scheduler; a keyed
step's rows reach the subtask that owns their key group, and the output does not depend on the parallelism or
the seed."""

import pytest

from ministream.core.aggregates import Count, Sum
from ministream.core.plan import Dataflow
from ministream.core.results import normalize_row
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.models.microbatch import run_microbatch
from ministream.operators.planner import physical_graph
from ministream.state.keygroups import key_group_of, subtask_of_key_group


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
