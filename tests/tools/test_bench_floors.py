"""The bench's floors (``tools/bench/floors.py``) give, batch for batch, the rows the engine gives: a ratio to
a floor means something only if both do the same work. No timings here."""

import pytest

from ministream.models.microbatch import run_microbatch
from ministream.tools.bench import floors
from ministream.tools.bench.engine import OPERATORS
from ministream.tools.bench.workload import in_batches, make_events


@pytest.mark.parametrize("name", list(OPERATORS))
def test_each_floor_gives_the_engines_rows(name):
    """Each operator's floor emits the same rows as its engine pipeline, in each batch, on 20 batches of the
    bench's events (late rows, merges, evictions and the no-data batch included)."""
    benched = OPERATORS[name]
    data = benched.inputs(in_batches(make_events(6_000, keys=50), 20))
    emitted = [batch.rows for batch in run_microbatch(benched.build(data), output_mode=benched.output_mode).output()]
    floor = benched.floor(data)
    assert len(emitted) >= 20 and sum(map(len, emitted)) > 0  # a no-data batch after the script, with a watermark
    assert floors.same_rows(emitted, floor)


def test_same_rows_sees_a_missing_row():
    """Two runs differ when one batch lacks a row the other has, even if the totals agree."""
    assert not floors.same_rows([[{"a": 1}], []], [[], [{"a": 1}]])
