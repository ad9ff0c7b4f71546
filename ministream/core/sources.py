"""Scripted sources: deterministic input, batch by batch.

A :class:`ScriptedSource` delivers a list of batches: batch ``k`` of the script is micro-batch ``k`` of the
run, exactly as ministream's Spark source replays the same script to the PySpark twin. Tests, lessons and
notebooks read their input from it (and write their output to a ``exactly_once.CollectingSink``), so every run can
be repeated exactly.

>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sinks import CollectingSink
>>> from ministream.models.microbatch import run_microbatch
>>> flow = Dataflow("evens")
>>> output = CollectingSink()
>>> flow.source("numbers", ScriptedSource([[{"n": 1}, {"n": 2}], [], [{"n": 4}]])).filter(
...     "even", lambda row: row["n"] % 2 == 0).sink("output", output)
>>> for batch in run_microbatch(flow).output("output"):
...     print(batch.batch_id, batch.rows)
0 [{'n': 2}]
1 []
2 [{'n': 4}]
"""

from __future__ import annotations

from itertools import accumulate

from ministream.core.bad_rows import a_type, short_repr
from ministream.core.faults import SimulatedCrash, rows_before_crash
from ministream.errors import PipelineError

_LIKE = ': a script is a list of batches, each a list of rows, like [[{"key": "a", "ts": 1000}], [], [{"key": "b", "ts": 2000}]]'
"""How a script is written, as the errors about one say it."""


def _script(batches) -> list:
    """``batches`` as a list, each batch checked to be a list of rows (or ``None``): a list of rows given as
    the script (one batch forgotten), or a batch that is a dict, would otherwise be read entry by entry.

    >>> _script([[{"n": 1}], None, []])
    [[{'n': 1}], None, []]
    >>> _script([{"n": 1}, {"n": 2}])
    Traceback (most recent call last):
    ...
    ministream.errors.PipelineError: ScriptedSource: batch 0 is a dict ({'n': 1}), not a list of rows: a script is a list of batches, each a list of rows, like [[{"key": "a", "ts": 1000}], [], [{"key": "b", "ts": 2000}]]
    """
    if isinstance(batches, (str, bytes, dict)):
        raise PipelineError(f"ScriptedSource: the script is {a_type(batches)}, not a list of batches{_LIKE}")
    batches = list(batches)
    for number, batch in enumerate(batches):
        if batch is not None and not isinstance(batch, (list, tuple)):
            shown = short_repr(batch, limit=80)
            raise PipelineError(
                f"ScriptedSource: batch {number} is {a_type(batch)} ({shown}), not a list of rows{_LIKE}"
            )
    return batches


class ScriptedSource:
    """A source that replays a script: a list of batches, each a list of rows (dicts).

    >>> source = ScriptedSource([[{"key": "a"}], [], [{"key": "b"}]])
    >>> len(source), source.batch(0), source.batch(1), source.batch(3)
    (3, [{'key': 'a'}], [], [])

    In the micro-batch model batch ``k`` is micro-batch ``k``; in the continuous model the batches are read
    one after the other, row by row. Empty batches are batches with no rows (Spark runs them too). A batch
    may also be ``None``: nothing arrived before that trigger (``core/triggers.py``), so the query runs a
    no-data batch there if a stateful step asks for one, and no batch at all otherwise.

    ``columns`` names the columns of its rows (a schema, as Spark's sources have one): the plan then knows
    them from the start, and refuses a step that names a column the rows do not have (``core/lineage.py``).

    A source can be told to crash (``core/faults.py``): ``crash_after=N`` delivers N rows, then raises
    ``SimulatedCrash`` when it is asked for more; a ``faults.Crash()`` entry in the script does the same where
    it stands. It crashes once: a recovering run reads past the crash point.
    """

    def __init__(
        self, batches: list[list[dict] | None], crash_after: int | None = None, columns: tuple[str, ...] | None = None
    ):
        self.columns = None if columns is None else tuple(columns)
        batches = _script(batches)
        self.positions, marked = rows_before_crash(batches)
        self.batches = [batch if batch is not None else [] for batch in self.positions]
        self.rows_before = [0, *accumulate(map(len, self.batches))]  # [k]: the rows of the batches before k
        self.crash_after = crash_after if crash_after is not None else marked
        self.crashed = False

    def __len__(self):
        return len(self.batches)

    def arrived(self, position: int) -> bool:
        """Whether anything (rows, or an empty batch) arrived for trigger firing ``position``: ``False`` for a
        ``None`` batch of the script and past its end.

        >>> source = ScriptedSource([[{"n": 1}], None, []])
        >>> [source.arrived(k) for k in range(4)]
        [True, False, True, False]
        """
        return position < len(self.positions) and self.positions[position] is not None

    def batch(self, batch_id: int) -> list[dict]:
        """The rows of batch ``batch_id`` (none past the end of the script)."""
        return self.batches[batch_id] if batch_id < len(self.batches) else []

    def read(self, batch_id: int) -> list[dict]:
        """The rows of batch ``batch_id`` as a running query reads them: like :meth:`batch`, but a source told
        to crash raises ``SimulatedCrash`` when it reads the batch that holds its crash point."""
        delivered = self.rows_before[min(batch_id, len(self.batches))]
        rows = self.batch(batch_id)
        self.crash_if_due(delivered, len(rows))
        return rows

    def crash_if_due(self, delivered: int, wanted: int = 1) -> None:
        """Raise ``SimulatedCrash`` (once) if, having delivered ``delivered`` rows, the source is asked for
        ``wanted`` more and its crash point is among them."""
        if self.crash_after is not None and not self.crashed and delivered <= self.crash_after < delivered + wanted:
            self.crashed = True
            raise SimulatedCrash(
                f"source crashed after delivering {self.crash_after} of its records (crash_after={self.crash_after})"
            )

    def __repr__(self):
        return f"ScriptedSource({len(self.batches)} batches, {sum(map(len, self.batches))} rows)"
