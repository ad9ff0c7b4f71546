"""Outer join elimination: when Spark runs a query without the outer join it was written with.

A left outer join emits every left row at least once, with its matches or padded with nulls. Under an
aggregation that reads only left columns and whose aggregates ignore duplicates (``max``, ``min``), the join
therefore cannot change the result, and Spark's optimizer rule ``EliminateOuterJoin`` removes it (since
Spark 3.4, SPARK-38886): the aggregation reads the left rows directly. In a batch query that only saves work. In a streaming query it
changes the rows, because the join was what held the rows back and what the right input's watermark went
through. Measured on Spark 4.3 (``tutorials/spark-facts.md``, "Chained stateful operators"):

- the join is removed under a tumbling window, a session window, or a sliding window whose slide is its size
  (Spark runs that one as a tumbling window), also through selects and filters of the kept side's columns;
  not under a sliding window (it runs through an ``Expand`` node, which hides the join from the rule), and not
  when an aggregate counts or sums;
- a right outer join likewise, under a window of the right side's columns; a full outer join under a window
  of one side's columns too (the window drops rows whose time is null, which makes the join an outer join of
  that side first);
- the other side's rows then reach nothing: its watermark never moves, and counts as 0 in the watermark
  policy (under ``min`` the query's watermark stays at 0, and an append-mode window never closes; under
  ``max`` it is the kept side's);
- the window runs with the query's watermark, and the kept side's rows reach it in their own batch.

ministream does the same, so that its rows are Spark's: :func:`kept_side` says which side of a join Spark keeps
when it removes the join, the planner then runs the join as
:class:`~ministream.operators.removed_outer_join.RemovedOuterJoin`, and :func:`removed_watermarks` names the
``with_watermark`` steps whose rows Spark never runs (their watermark stays at 0). It can only tell which side
a column comes from when the plan knows one side's columns (a ``select``, or a source that declares its
columns: ``lineage.output_columns``); when it knows neither, it keeps the join.

>>> from ministream.core.aggregates import Max
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.time.ranges import TimeRange
>>> from ministream.time.windows import Tumbling
>>> flow = Dataflow("f")
>>> left = flow.source("left", ScriptedSource([], columns=("l_key", "l_ts", "l_value")))
>>> right = flow.source("right", ScriptedSource([], columns=("r_key", "r_ts"))).with_watermark("wm", "r_ts", 0)
>>> joined = left.with_watermark("l_wm", "l_ts", 0).key_by("l_key").join(
...     "join", right.key_by("r_key"), how="left_outer", between=TimeRange("l_ts", "r_ts", 0, 1_000))
>>> _ = joined.key_by("l_key").window("highest", Tumbling(1_000), column="l_ts", top=Max("l_value"))
>>> kept_side(flow, flow.step("join")), sorted(removed_watermarks(flow))
(0, ['wm'])
"""

from __future__ import annotations

from collections.abc import Iterator

from ministream.core.lineage import event_time_columns, output_columns
from ministream.core.pruning import columns_read_after, readers
from ministream.core.steps import FilterSpec, JoinSpec, SelectSpec, StaticJoinSpec, Step, WatermarkSpec, WindowSpec
from ministream.time.windows import Sliding

DUPLICATE_AGNOSTIC = ("max", "min")
"""The aggregates whose result does not change when a row is repeated."""

PRESERVED = {"left_outer": (0,), "right_outer": (1,), "full_outer": (0, 1)}
"""The sides (0: left, 1: right) whose rows an outer join emits even without a match."""


def kept_side(flow, join: Step) -> int | None:
    """The side (0: left, 1: right) whose rows Spark's optimizer passes on when it removes ``join``, or
    ``None`` when it keeps the join. ``flow`` is the plan (a ``Dataflow``) the join is in."""
    spec = join.spec
    if not isinstance(spec, JoinSpec) or spec.how not in PRESERVED:
        return None
    found = _window_after(flow, join)
    window = None if found is None else found[0]
    if window is None or not all(f.name in DUPLICATE_AGNOSTIC for f in window.aggregates.values()):
        return None
    assigner = window.assigner
    if isinstance(assigner, Sliding) and assigner.slide != assigner.size:
        return None  # Spark's Expand node sits between the aggregation and the join
    read = columns_read_after(flow, join)
    if read is None:
        return None
    sides = [output_columns(edge.upstream) for edge in join.inputs]
    for side in PRESERVED[spec.how]:
        kept, other = sides[side], sides[1 - side]
        if other is not None and not read & set(other):  # no column of the other side is read
            return side
        if other is None and kept is not None and read <= set(kept):  # only the kept side's columns are read
            return side
    return None  # other columns are read, or the plan does not know the sides' columns


NULL_REJECTED = {
    "left_outer": ("left_outer", "inner"),
    "right_outer": ("inner", "right_outer"),
    "full_outer": ("left_outer", "right_outer"),
}
"""The join type an outer join becomes when a condition after it rejects null values of one side's column,
by that side (left, right): the rows that side pads with nulls go, so it need not pad them."""


def spark_join_type(flow, join: Step, inferring: bool = False) -> str:
    """The join type Spark runs ``join`` as. The other half of ``EliminateOuterJoin``: a step after an outer
    join that drops the rows where a column is null (:func:`null_rejected_after`: a window, on its time
    column; an inner join with a static table, on its keys) makes Spark add ``isnotnull`` of that column, so
    such a column of the side the join pads with nulls makes a left or right outer join an inner join, and a
    full outer join an outer join of that side (measured for tumbling, sliding and session windows, and
    for an inner join with a static table).

    ``inferring=True``: the type the join has when Spark's optimizer infers conditions from its keys
    (``InferFiltersFromConstraints``: the ``isnotnull`` of a key on a side the join does not keep, a key's
    condition copied to the other key). A window's ``isnotnull`` is in the plan from the start, so the join is
    already the new type then; a static join's is itself inferred in that pass, and the join changes type
    only after it: the conditions inferred from the join's keys are those of the type it was written with (a
    right outer join, then an inner join with a static table on the left key, runs as an inner join with
    ``isnotnull`` of the left key and none of the right key: ``tutorials/spark-facts.md``, "Where a condition
    runs").

    >>> from ministream.core.aggregates import Count
    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> from ministream.time.ranges import TimeRange
    >>> from ministream.time.windows import Tumbling
    >>> flow = Dataflow("f")
    >>> left = flow.source("left", ScriptedSource([], columns=("l_key", "l_ts"))).with_watermark("lw", "l_ts", 0)
    >>> right = flow.source("right", ScriptedSource([], columns=("r_key", "r_ts"))).with_watermark("rw", "r_ts", 0)
    >>> joined = left.key_by("l_key").join(
    ...     "join", right.key_by("r_key"), how="left_outer", between=TimeRange("l_ts", "r_ts", 0, 1_000))
    >>> _ = joined.key_by("r_key").window("per_second", Tumbling(1_000), column="r_ts", n=Count())
    >>> spark_join_type(flow, flow.step("join"))
    'inner'
    """
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    how: str = spec.how
    rejected = null_rejected_after(flow, join, not inferring) if how in NULL_REJECTED else frozenset()
    for side in (0, 1):
        upstream = join.inputs[side].upstream
        known = output_columns(upstream) or tuple(event_time_columns(upstream))
        if how in NULL_REJECTED and rejected & set(known):
            how = NULL_REJECTED[how][side]
    return how


def removed_watermarks(flow) -> frozenset[str]:
    """The names of the ``with_watermark`` steps whose rows Spark never runs, because they only lead to the
    side of a join it removes: each step back from that input, as long as it has no other reader (a step
    read by another step too still runs its rows, for that one)."""
    removed = set()
    for join in flow.steps:
        side = kept_side(flow, join)
        if side is None:
            continue
        step = join.inputs[1 - side].upstream
        while len(readers(flow, step)) == 1 and len(step.inputs) == 1:
            if isinstance(step.spec, WatermarkSpec):
                removed.add(step.name)
            step = step.inputs[0].upstream
    return frozenset(removed)


def _walk_after(flow, join: Step) -> Iterator[tuple[Step, dict[str, str]]]:
    """The steps on the single path after ``join``, each with the renames of the selects before it (``{column
    there: its name in the join's rows}``), until the path splits or ends; the caller stops where it wants."""
    step = join
    rename: dict[str, str] = {}
    while True:
        following = readers(flow, step)
        if len(following) != 1:
            return
        step = following[0]
        yield step, rename
        if isinstance(step.spec, SelectSpec):
            rename = {new: rename.get(old, old) for new, old in step.spec.columns}


def _window_after(flow, join: Step) -> tuple[WindowSpec, dict[str, str]] | None:
    """The window step that reads the join's rows (its spec), through selects and filters that declare their
    columns, and the selects' renames on the way (``{column at the window: its name in the join's rows}``);
    ``None``: anything else reads them, or more than one step."""
    for step, rename in _walk_after(flow, join):
        spec = step.spec
        if isinstance(spec, WindowSpec):
            return spec, rename
        if not (isinstance(spec, SelectSpec) or (isinstance(spec, FilterSpec) and spec.columns is not None)):
            return None
    return None


def null_rejected_after(flow, join: Step, static_joins: bool = True) -> frozenset[str]:
    """The columns of ``join``'s rows whose nulls a step after it drops, so that Spark adds ``isnotnull`` of
    them above the join: a window's time column (a row with no time is in no window), and the stream's keys of
    an inner join with a static table (a null key matches nothing; not with ``static_joins=False``), through
    selects, filters and other joins with a static table.

    >>> from ministream.core.plan import Dataflow
    >>> from ministream.core.sources import ScriptedSource
    >>> from ministream.time.ranges import TimeRange
    >>> flow = Dataflow("f")
    >>> left = flow.source("left", ScriptedSource([])).with_watermark("lw", "l_ts", 0).key_by("l_key")
    >>> right = flow.source("right", ScriptedSource([])).with_watermark("rw", "r_ts", 0).key_by("r_key")
    >>> joined = left.join("join", right, how="left_outer", between=TimeRange("l_ts", "r_ts", 0, 1_000))
    >>> _ = joined.select("s", ad="r_key").join_static("ads", [{"ad": "a", "name": "A"}], on="ad")
    >>> sorted(null_rejected_after(flow, flow.step("join")))
    ['r_key']
    """
    rejected: set[str] = set()
    for step, rename in _walk_after(flow, join):
        spec = step.spec
        if isinstance(spec, WindowSpec):
            if spec.column is not None:
                rejected.add(rename.get(spec.column, spec.column))
            break
        if isinstance(spec, StaticJoinSpec):
            if spec.how == "inner" and static_joins:
                rejected.update(rename.get(key, key) for key in spec.stream_keys)
        elif not isinstance(spec, (SelectSpec, FilterSpec)):
            break
    return frozenset(rejected)
