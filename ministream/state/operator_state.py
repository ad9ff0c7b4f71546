"""Operator state: state a subtask keeps for itself, not for a key, and how it is split when the parallelism
changes.

Keyed state belongs to a key and moves with it (by key group, ``keygroups.py``). Some state belongs to no key:
the rows a sink has buffered but not yet written, the offsets a source has read up to. Flink calls it
*operator state*: each subtask keeps named lists of items, which a checkpoint saves per subtask. Restored at the
same parallelism, each subtask gets its own lists back. At another parallelism the lists of the old subtasks
must be dealt out to the new ones, in one of two ways, chosen per list when it is declared:

- ``"even"`` (Flink's ``getListState``, *even-split redistribution*): the old subtasks' lists are put end to end
  and cut into as many contiguous parts as there are new subtasks, of sizes that differ by at most one. Each
  item goes to exactly one subtask: right for a buffer of rows, which must be written once.
- ``"union"`` (Flink's ``getUnionListState``): every new subtask gets all the items, and keeps the ones it needs:
  right for a source's offsets, where each new subtask takes the offsets of the partitions it is assigned
  (Flink's Kafka consumer did this).

Items are plain data (they go into the checkpoint's JSON).

>>> redistribute([["a", "b", "c"], ["d"]], 3, "even")
[['a', 'b'], ['c'], ['d']]
>>> redistribute([["p0:4"], ["p1:7"]], 3, "union")
[['p0:4', 'p1:7'], ['p0:4', 'p1:7'], ['p0:4', 'p1:7']]
"""

from __future__ import annotations

from typing import Any, Literal

from ministream.errors import PipelineError

Redistribution = Literal["even", "union"]
REDISTRIBUTIONS = ("even", "union")


def redistribute(lists: list[list], parallelism: int, mode: str) -> list[list]:
    """The lists of the old subtasks, in subtask order, dealt out to ``parallelism`` new subtasks.

    >>> redistribute([[1, 2], [3, 4], [5]], 2, "even")
    [[1, 2, 3], [4, 5]]
    >>> redistribute([[1]], 2, "even")
    [[1], []]
    """
    items = [item for old in lists for item in old]
    if mode == "union":
        return [list(items) for _ in range(parallelism)]
    if mode != "even":
        raise PipelineError(f"operator state is redistributed 'even' or 'union', not {mode!r}")
    size, extra = divmod(len(items), parallelism)
    parts, start = [], 0
    for index in range(parallelism):
        end = start + size + (1 if index < extra else 0)
        parts.append(items[start:end])
        start = end
    return parts


class OperatorState:
    """A subtask's operator state: named lists, each declared with its redistribution.

    State: ``self.lists = {name: [items]}``, ``self.modes = {name: "even" | "union"}``.

    >>> state = OperatorState()
    >>> buffer = state.list("buffer", "even"); buffer += ["r1", "r2"]
    >>> state.snapshot()
    {'buffer': {'mode': 'even', 'items': ['r1', 'r2']}}
    >>> restored = OperatorState(); restored.restore(state.snapshot()); restored.list("buffer", "even")
    ['r1', 'r2']
    """

    def __init__(self):
        self.lists: dict[str, list] = {}
        self.modes: dict[str, str] = {}

    def list(self, name: str, mode: Redistribution = "even") -> list:
        """The list called ``name`` (created empty the first time), redistributed ``mode`` on a rescale."""
        if mode not in REDISTRIBUTIONS:
            raise PipelineError(f"operator state {name!r}: redistribution is 'even' or 'union', not {mode!r}")
        if self.modes.setdefault(name, mode) != mode:
            raise PipelineError(f"operator state {name!r} was declared {self.modes[name]!r}, not {mode!r}")
        return self.lists.setdefault(name, [])

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """Every list with its mode, copied: ``{name: {"mode": ..., "items": [...]}}``."""
        return {name: {"mode": self.modes[name], "items": list(items)} for name, items in self.lists.items()}

    def restore(self, snapshot: dict) -> None:
        """Take back the lists of a snapshot (this subtask's share of them, after a rescale)."""
        for name, saved in snapshot.items():
            self.modes[name] = saved["mode"]
            self.lists[name] = list(saved["items"])


def split_snapshots(snapshots: list[dict], parallelism: int) -> list[dict]:
    """The operator state snapshots of a step's old subtasks (in subtask order), as one per new subtask: each
    list redistributed by its own mode.

    >>> old = [{"buffer": {"mode": "even", "items": [1, 2, 3]}}, {"buffer": {"mode": "even", "items": [4]}}]
    >>> split_snapshots(old, 1)
    [{'buffer': {'mode': 'even', 'items': [1, 2, 3, 4]}}]
    """
    names = list(dict.fromkeys(name for snapshot in snapshots for name in snapshot))
    shares: list[dict] = [{} for _ in range(parallelism)]
    for name in names:
        modes = {snapshot[name]["mode"] for snapshot in snapshots if name in snapshot}
        if len(modes) != 1:
            raise PipelineError(f"operator state {name!r}: its subtasks declared it {sorted(modes)}, give one mode")
        mode = modes.pop()
        parts = redistribute([snapshot.get(name, {"items": []})["items"] for snapshot in snapshots], parallelism, mode)
        for share, items in zip(shares, parts):
            share[name] = {"mode": mode, "items": items}
    return shares
