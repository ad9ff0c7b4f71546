"""No operator keeps a row after it is folded or evicted (issue 21, memory): every input row of each operator
the bench measures is watched with a weak reference, and after the run the rows still alive are exactly the
rows the operator's state holds (the stored rows of a join that the watermark has not evicted yet), and none
for an operator that folds its rows (aggregates, windows, the process step) or keeps only their keys
(deduplication). The sink counts the rows and drops them (``CountingSink``), and no trace is kept: a trace, a
``CollectingSink`` or a late row's record would hold rows on purpose."""

from __future__ import annotations

import weakref

import pytest

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.workload import CountingSink, in_batches, make_events


class Row(dict):
    """A row that a weak reference can watch (a plain ``dict`` cannot be)."""

    __slots__ = ("__weakref__",)


class WatchedSource:
    """A scripted source whose rows are made as they are read, each watched by a weak reference in ``refs``:
    the script holds plain dicts, the run gets fresh ``Row`` objects that only the engine refers to."""

    def __init__(self, batches: list[list[dict]], columns=None):
        self.batches = batches
        self.columns = None if columns is None else tuple(columns)
        self.refs: list[weakref.ref] = []

    def __len__(self) -> int:
        return len(self.batches)

    def arrived(self, position: int) -> bool:
        return position < len(self.batches)

    def read(self, position: int) -> list[dict]:
        rows = [Row(event) for event in self.batches[position]] if position < len(self.batches) else []
        self.refs += map(weakref.ref, rows)
        return rows

    batch = read

    def alive(self) -> int:
        return sum(ref() is not None for ref in self.refs)


def watched(benched, script) -> dict | WatchedSource:
    """The operator's input (``Benched.inputs``), each source's batches made watched."""
    inputs = benched.inputs(script)
    if isinstance(inputs, dict):  # a join: its two sides
        return {side: WatchedSource(batches, benched.columns[side]) for side, batches in inputs.items()}
    return WatchedSource(inputs)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_no_row_outlives_its_folding_or_its_eviction(name):
    """Each bench operator over 20,000 events in 20 batches: the input rows still referenced after the run are
    the rows its state holds, as many as ``state_size()`` counts for a join, none for the others; the run did
    read every row."""
    benched = OPERATORS[name]
    inputs = watched(benched, in_batches(make_events(20_000, keys=200), 20))
    sources = list(inputs.values()) if isinstance(inputs, dict) else [inputs]
    run = run_microbatch(benched.build(inputs, sink=CountingSink()), output_mode=benched.output_mode)
    read = sum(len(source.refs) for source in sources)
    alive = sum(source.alive() for source in sources)
    assert read >= 20_000
    if name.startswith("join_"):
        [join] = run.graph.operators("join")
        held = join.state_size()
        assert 0 < held < read / 10  # the watermark evicted all but the last rows
        assert alive == held
    else:
        assert alive == 0
