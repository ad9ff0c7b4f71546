"""Column pruning: which columns of a step's output the steps after it read.

Spark's optimizer (its ``ColumnPruning`` rule) removes from every node of a plan the columns that no node
above it reads. Mostly that changes nothing but speed. It changes rows in one place: a stateful operator
drops late rows by the watermarked column **of its input**, the one column that carries the watermark's mark.
When nothing at or after the operator reads that column, Spark prunes it below the operator, which then
sees no watermarked column and drops no late row, although the watermark itself still moves (the
``with_watermark`` step stays). Measured on Spark 4.3 (``tutorials/spark-facts.md``, "Column pruning"):

- a join side whose event time neither the join (keys, time range, conditions) nor any step after it reads
  drops none of its late rows: ``left.join(right, "key")`` followed by a window on the left time only;
- ``dropDuplicates(["id"])`` drops no late row when its event time is not a key column and no step after it
  reads the column (a count per id, or a select without it).

This module answers the question for the planner, by walking the plan downstream from a step: each kind of
step reads some columns of its input and passes on the columns the steps after it read. ``None`` means
"any column": a sink writes every column, a Python function (``map``, a process function, a key from a
function) sees the whole row, and a step this walk does not know is taken to read everything, which keeps
a late-row filter.

>>> from ministream.core.aggregates import Min
>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sources import ScriptedSource
>>> from ministream.time.windows import Tumbling
>>> flow = Dataflow("f")
>>> events = flow.source("events", ScriptedSource([])).with_watermark("wm", "ts", 0)
>>> unique = events.drop_duplicates("unique", ["id"])
>>> _ = unique.window("lowest", Tumbling(1_000), column="ts", low=Min("value"))
>>> sorted(columns_read_after(flow, flow.step("unique")))
['ts', 'value']
"""

from __future__ import annotations

import operator

from ministream.core.steps import (
    AggregateSpec,
    DedupSpec,
    Edge,
    FilterSpec,
    JoinSpec,
    SelectSpec,
    SortSpec,
    StaticJoinSpec,
    Step,
    UnionSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
    WindowTimeSpec,
)

Columns = frozenset[str] | None
"""A set of column names, or ``None`` for "any column"."""


def readers(flow, step: Step) -> list[Step]:
    """The steps of ``flow`` (a ``Dataflow``) with an input from ``step``."""
    return [other for other in flow.steps if any(edge.upstream is step for edge in other.inputs)]


def columns_read_after(flow, step: Step) -> Columns:
    """The columns of ``step``'s output that some step after it reads (``None``: any of them).

    ``flow`` is the plan (a ``Dataflow``): the steps that read ``step`` are found among its steps."""
    read: set[str] = set()
    for consumer in flow.steps:
        for edge in consumer.inputs:
            if edge.upstream is not step:
                continue
            if edge.output is not None:  # a side output: its rows are not this output's
                return None
            columns = step_reads(consumer, edge, columns_read_after(flow, consumer))
            if columns is None:
                return None
            read |= columns
    return frozenset(read)


def step_reads(step: Step, edge: Edge, after: Columns) -> Columns:
    """The columns of its input (along ``edge``) that ``step`` reads, when the steps after it read ``after``.

    >>> from ministream.core.steps import SelectSpec
    >>> select = Step("renamed", SelectSpec((("time", "ts"), ("id", "id"))))
    >>> sorted(step_reads(select, Edge(select), frozenset({"id"})))
    ['id']
    """
    spec = step.spec
    key = _key_reads(edge)
    if key is None:
        return None
    if isinstance(spec, SelectSpec):  # each kept column is read under its old name, if read after
        return frozenset(old for new, old in spec.columns if after is None or new in after)
    if isinstance(spec, AggregateSpec):  # its output is its keys and results: nothing else passes
        return _with(key | set(spec.key_columns), _aggregate_reads(spec.aggregates))
    if isinstance(spec, WindowSpec):
        return _with(key | set(spec.key_columns) | {spec.column}, _aggregate_reads(spec.aggregates))
    if after is None:  # the rest pass their input's columns on
        return None
    if isinstance(spec, FilterSpec):
        return None if spec.columns is None else after | key | set(spec.columns)
    if isinstance(spec, WatermarkSpec):
        return after | {spec.column}
    if isinstance(spec, SortSpec):
        return after | set(spec.columns)
    if isinstance(spec, WindowColumnSpec):  # start and end are made here, from the time column
        return (after - {spec.start, spec.end}) | {spec.column}
    if isinstance(spec, WindowTimeSpec):
        return (after - {spec.column}) | {spec.start, spec.end}
    if isinstance(spec, DedupSpec):  # no columns: the whole row is the key
        return None if not spec.columns else after | key | set(spec.columns)
    if isinstance(spec, UnionSpec):
        return after
    if isinstance(spec, StaticJoinSpec):
        return after | key | set(spec.stream_keys)
    if isinstance(spec, JoinSpec):  # passes on every column read after it (a column of the other side too)
        side = step.inputs.index(edge)
        own = join_side_reads(spec, side)
        return None if own is None else after | key | own
    return None  # a map, a process function, a sink, an operator of your own: the whole row


def join_side_reads(spec: JoinSpec, side: int) -> Columns:
    """The columns of one side (0: left, 1: right) that the join itself reads: its keys, its time range's and
    key time's column, its one-sided condition's columns; ``None`` when a condition may read any column
    (a condition on the pair sees both whole rows)."""
    condition = (spec.left_where, spec.right_where)[side]
    if spec.where is not None or (condition is not None and condition.columns is None):
        return None
    read = set((spec.left_keys, spec.right_keys)[side])
    if spec.between is not None:
        read.add((spec.between.left, spec.between.right)[side])
    if spec.key_time is not None:
        read.add(spec.key_time[side])
    if condition is not None and condition.columns is not None:
        read |= set(condition.columns)
    return frozenset(read)


def _key_reads(edge: Edge) -> frozenset[str] | None:
    """The columns a hash edge's key reads: its key columns, or ``None`` when a Python function makes it."""
    if edge.key_fn is None or not edge.key_columns or isinstance(edge.key_fn, operator.itemgetter):
        return frozenset(edge.key_columns)
    return None


def _aggregate_reads(aggregates) -> Columns:
    """The columns aggregates read: each one's column; a custom aggregate of the whole row reads them all
    (``count(*)`` reads none)."""
    read = set()
    for function in aggregates.values():
        if function.column is not None:
            read.add(function.column)
        elif function.name != "count":
            return None
    return frozenset(read)


def _with(columns: frozenset[str], more: Columns) -> Columns:
    """``columns`` and ``more`` (``None`` if ``more`` is)."""
    return None if more is None else frozenset(columns | more)
