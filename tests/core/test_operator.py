"""Stateless operators (``core/operator.py``): map, filter and flat_map transform rows batch by batch."""

from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.models.microbatch import run_microbatch


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
