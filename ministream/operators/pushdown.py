"""Predicate pushdown: where Spark's optimizer runs a condition decides which rows move a watermark.

Spark's optimizer moves each condition as far down the plan as it can go: below a select, below another
filter, below a ``withWatermark`` when it does not read the event-time column, and into one side of a join.
A row that such a condition drops below a watermark never reaches it, so it does not move that watermark,
and through it the query's: where a condition runs changes which rows are late and when windows close.
ministream finds the same places, and gives each ``with_watermark`` step the conditions that run before it
(``WatermarkOperator.pushed``); the rows themselves still go where the plan sends them, and each filter
still drops them where it stands (a condition that runs twice drops the same rows).

The moves, as Spark 4.3 makes them (its rules ``PushDownPredicates``, ``PushPredicateThroughJoin`` and
``InferFiltersFromConstraints``; measured in ``tutorials/spark-facts.md``, "Where a condition runs"):

1. a filter after a watermark that declares the columns it reads, and does not read the event time, runs
   below it (through selects, which rename, other filters, unions: into each of their inputs, window
   columns when it does not read them, and aggregations and windows when it reads only their keys);
2. a join side's own condition (``left_where``, ``right_where``) runs below that side when an outer join
   does not preserve it, and so does ``key IS NOT NULL`` on the keys compared with ``=``;
3. a filter after a join, on one side's columns only, runs below that side when the join type lets it:
   either side of an inner join, the left of a left outer or left semi join, the right of a right outer
   join, neither side of a full outer join;
4. a condition on one join key of a side (a filter before the join, the side's own condition, or a filter
   after the join that rule 3 moved to the side) also holds for the other side's matching key, since the
   keys are equal: Spark copies it there, both ways in an inner or left semi join, onto the right of a left
   outer join, onto the left of a right outer join, and not at all through a key compared with ``<=>``
   (Spark infers from ``=`` only).

A join with a static table (``join_static``) is a join whose left side is the stream: a filter after it on
the stream's columns moves into the stream (both join types keep it: rule 3), an inner join adds ``key IS
NOT NULL`` there (rule 2), and a condition on the table's key holds for the stream's key it equals (rule 4); a
condition on the table's other columns does not reach the stream.

Filters after a step are followed along a single path only: a step read by two steps keeps every row. A
join's type is the one Spark runs it as (``outer_join_elimination.spark_join_type``: a window on the time of
the side an outer join pads with nulls makes it an inner join).

Spark's optimizer suites pin each move on batch plans: ``FilterPushdownSuite`` ("joins: push to either side",
"joins: push down left outer join #1", "joins: push down right outer join #1", "aggregate: push down filter
when filter on group by expression"), ``InferFiltersFromConstraintsSuite`` ("single inner join: filter out
values on either side on equi-join keys") and ``OuterJoinEliminationSuite`` ("joins: full outer to inner").
What they do to a watermark is measured on streaming queries (``tests/operators/test_pushdown.py``).

>>> from ministream.core.plan import Dataflow
>>> from ministream.core.sources import ScriptedSource
>>> flow = Dataflow("f")
>>> left = flow.source("l", ScriptedSource([])).with_watermark("lw", "ts", 0).key_by("key")
>>> right = flow.source("r", ScriptedSource([])).select("rs", r_key="key", r_ts="ts").with_watermark("rw", "r_ts", 0)
>>> joined = left.join("join", right.key_by("r_key"), how="inner")
>>> _ = joined.filter("not_b", lambda row: row["key"] != "b", columns="key")
>>> [predicate({"r_key": "b", "r_ts": 5}) for predicate in pushed_below_watermark(flow, flow.step("rw"))]
[True, False]
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from ministream.core.lineage import output_columns
from ministream.core.outer_join_elimination import PRESERVED, spark_join_type
from ministream.core.plan import Dataflow
from ministream.core.pruning import readers
from ministream.core.steps import (
    AggregateSpec,
    FilterSpec,
    JoinSpec,
    SelectSpec,
    StaticJoinSpec,
    Step,
    UnionSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
    WindowTimeSpec,
)
from ministream.operators.watermark import KeysNotNull


@attrs.frozen
class Condition:
    """A condition that Spark's optimizer moves: ``predicate`` of a row and the ``columns`` it reads, both named
    as in the rows of the step it is a condition of, and where it comes from, in words (``None`` for the
    ``key IS NOT NULL`` Spark adds to every join side)."""

    predicate: Callable[[dict], bool]
    columns: tuple[str, ...]
    origin: str | None = None


@attrs.frozen
class Names:
    """The names that the columns of rows after some steps had before them, so that a condition on the later
    rows can run on the earlier ones: ``renamed``, ``{column after: its name before}``, once a select or an
    aggregation has listed every column (``None``: the same names); ``computed``, the columns a step made on
    the way (a window's bounds, a static table's columns), which had none; ``aliases``, ``{column: the column
    it equals}`` after an inner join with a static table, whose key column equals the stream's in every row.

    >>> Names().computing("window_end").before(("key",)), Names().computing("window_end").before(("window_end",))
    (('key',), None)
    >>> Names().selected((("k", "key"), ("n", "n"))).selected((("key", "k"),)).before(("key",))
    ('key',)
    >>> Names().computing("table_key").aliasing({"table_key": "key"}).before(("table_key",))
    ('key',)
    """

    renamed: dict[str, str] | None = None
    computed: frozenset[str] = frozenset()
    aliases: dict[str, str] = attrs.field(factory=dict)

    def before(self, columns: tuple[str, ...]) -> tuple[str, ...] | None:
        """The names ``columns`` had before, or ``None`` when one of them did not exist there."""
        columns = tuple(self.aliases.get(column, column) for column in columns)
        if any(column in self.computed for column in columns):
            return None
        if self.renamed is None:
            return tuple(columns)
        if not all(column in self.renamed for column in columns):
            return None
        return tuple(self.renamed[column] for column in columns)

    def selected(self, columns: tuple[tuple[str, str], ...]) -> Names:
        """After a step whose rows have exactly ``columns``, ``(new, old)`` pairs as a select's."""
        renamed = {}
        for new, old in columns:
            earlier = self.before((old,))
            if earlier is not None:
                renamed[new] = earlier[0]
        return Names(renamed)

    def computing(self, *columns: str) -> Names:
        """After a step that adds ``columns`` (or replaces them), the other columns kept as they are."""
        renamed = None if self.renamed is None else {c: n for c, n in self.renamed.items() if c not in columns}
        aliases = {alias: column for alias, column in self.aliases.items() if alias not in columns}
        return Names(renamed, self.computed | set(columns), aliases)

    def aliasing(self, aliases: dict[str, str]) -> Names:
        """After a step whose rows have each column of ``aliases`` equal to the column it names."""
        computed = self.computed - set(aliases)
        return Names(self.renamed, computed, {**self.aliases, **aliases})

    def predicate_before(self, predicate):
        """``predicate`` of a row after, as a predicate of a row before."""
        if self.renamed is None and not self.aliases:
            return predicate
        renamed, aliases = self.renamed, self.aliases

        def on_row_before(row: dict) -> bool:
            after = dict(row) if renamed is None else {new: row.get(old) for new, old in renamed.items()}
            for alias, column in aliases.items():
                after[alias] = after.get(column)
            return predicate(after)

        return on_row_before


FILTERS_MOVE_INTO = {
    "inner": (True, True),
    "left_outer": (True, False),
    "right_outer": (False, True),
    "full_outer": (False, False),
    "left_semi": (True, False),
}
"""Rule 3: which sides of each join type a filter after the join moves into, (left, right)."""

INFERRED_ONTO = {
    "inner": (True, True),
    "left_outer": (False, True),
    "right_outer": (True, False),
    "full_outer": (False, False),
    "left_semi": (True, True),
}
"""Rule 4: onto which sides of each join type Spark copies a condition on the other side's key, (left, right)."""


def pushed_below_watermark(flow: Dataflow, step: Step) -> list:
    """The conditions that Spark's optimizer runs below the ``with_watermark`` step ``step``, each as a
    predicate of the rows there (rules 1 to 4): :func:`moved_below`'s predicates.

    >>> from ministream.core.sources import ScriptedSource
    >>> flow = Dataflow("f")
    >>> events = flow.source("events", ScriptedSource([])).with_watermark("wm", "ts", 0)
    >>> _ = events.filter("big", lambda row: row["value"] > 4, columns="value").filter("recent", bool)
    >>> [predicate({"value": 5, "ts": 1}) for predicate in pushed_below_watermark(flow, flow.step("wm"))]
    [True]
    """
    return [condition.predicate for condition in moved_below(flow, step)]


def moved_below(flow: Dataflow, step: Step) -> list[Condition]:
    """The conditions that Spark's optimizer runs below the ``with_watermark`` step ``step``, named as in the
    rows there, each with where it comes from."""
    spec = step.spec
    assert isinstance(spec, WatermarkSpec)
    event_time = spec.column
    filters, end, names, last = _path_after(flow, step)
    pushed = [condition for condition in filters if event_time not in condition.columns]  # rule 1
    if end is not None and isinstance(end.spec, JoinSpec):
        side = [edge.upstream for edge in end.inputs].index(last)
        for condition in into_join_side(flow, end, side):
            here = names.before(condition.columns)
            if here is not None and event_time not in here:
                pushed.append(Condition(names.predicate_before(condition.predicate), here, condition.origin))
    return pushed


def into_join_side(flow: Dataflow, join: Step, side: int) -> list[Condition]:
    """The conditions that Spark's optimizer runs below the ``join`` step, on side ``side`` (0 left, 1 right),
    named as in that side's rows: rules 2, 3 and 4."""
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    how = spark_join_type(flow, join)  # a window on the padded side's time makes an outer join inner
    inferred_how = spark_join_type(flow, join, inferring=True)  # a static join's only after the inference
    conditions: list[Condition] = []
    keys = (spec.left_keys, spec.right_keys)[side]
    if side not in PRESERVED.get(how, ()):  # rule 2: the side's own condition
        where = _where(join, side)
        if where is not None:
            conditions.append(where)
    if drops_null_keys(flow, join, side):  # rule 2: key IS NOT NULL
        equal_keys = tuple(key for key, safe in zip(keys, spec.null_safe_keys()) if not safe)
        conditions.append(Condition(KeysNotNull(equal_keys), equal_keys))
    conditions += moved_into(flow, join, side)  # rule 3
    if INFERRED_ONTO[inferred_how][side]:  # rule 4, through the keys compared with '='
        other_keys = (spec.left_keys, spec.right_keys)[1 - side]
        for condition in key_conditions(flow, join, 1 - side):
            (column,) = set(condition.columns)
            if spec.null_safe_keys()[other_keys.index(column)]:
                continue
            key = keys[other_keys.index(column)]
            origin = None if condition.origin is None else f"{condition.origin}, copied from {column} to {key},"
            conditions.append(Condition(_on_key(condition.predicate, column, key), (key,), origin))
    return conditions


def drops_null_keys(flow: Dataflow, join: Step, side: int) -> bool:
    """Whether Spark drops side ``side``'s rows whose key is null (compared with ``=``) before ``join``: the
    ``isnotnull`` it infers from the keys, on a side the join does not keep when it infers (rule 2). A row that
    does reach the join with a null key is stored by it, and Spark's join finds a key's rows by looking the key
    up in its state, where a null key is equal to a null key: in a full outer join, a null key meets a null key
    even with ``=`` (measured, ``tutorials/spark-facts.md``)."""
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    if all(spec.null_safe_keys()):
        return False
    return side not in PRESERVED.get(spark_join_type(flow, join, inferring=True), ())


def _where(join: Step, side: int) -> Condition | None:
    """The join's own condition on side ``side``'s columns, when it declares them."""
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    where = (spec.left_where, spec.right_where)[side]
    if where is None or where.columns is None:
        return None
    return Condition(where.fn, where.columns, f"the {('left', 'right')[side]} condition of join {join.name!r}")


def moved_into(flow: Dataflow, join: Step, side: int) -> list[Condition]:
    """Rule 3: the filters after ``join`` that run below it on side ``side``: those whose columns are all that
    side's (of a side whose columns the plan does not know, its keys)."""
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    how = spark_join_type(flow, join)
    if not FILTERS_MOVE_INTO[how][side]:
        return []
    columns = output_columns(join.inputs[side].upstream)
    if columns is None:  # the plan does not know the side's columns: its keys are among them
        columns = (spec.left_keys, spec.right_keys)[side]
    if spec.using and side != (1 if how == "right_outer" else 0):
        # the keys appear once in the output, as the left side's (the right side's in a right outer join)
        columns = tuple(column for column in columns if column not in spec.left_keys)
    filters, _, _, _ = _path_after(flow, join)
    return [condition for condition in filters if set(condition.columns) <= set(columns)]


def key_conditions(flow: Dataflow, join: Step, side: int) -> list[Condition]:
    """The conditions known to hold on side ``side``'s rows at ``join`` that read one of its keys and nothing
    else (what rule 4 copies to the other side): filters before the join (through selects, filters and
    watermarks), the side's own condition, and the filters after the join that rule 3 moves to it."""
    spec = join.spec
    assert isinstance(spec, JoinSpec)
    keys = (spec.left_keys, spec.right_keys)[side]
    conditions = _conditions_before(join.inputs[side].upstream)
    where = _where(join, side)
    if where is not None:
        conditions.append(where)
    conditions += moved_into(flow, join, side)
    return [c for c in conditions if len(set(c.columns)) == 1 and c.columns[0] in keys]


def _conditions_before(step: Step) -> list[Condition]:
    """The conditions of the filters that declare their columns on the way to ``step`` (through selects,
    filters, watermarks and joins with a static table, which keep the stream's columns as they are), named as
    in ``step``'s rows; a filter on a column that a select drops later holds for no column there, and is left
    out."""
    conditions: list[Condition] = []
    names: dict[str, str] | None = None  # {column at this step: its name at ``step``}; None: the same
    current = step
    while isinstance(current.spec, (SelectSpec, FilterSpec, WatermarkSpec, StaticJoinSpec)):
        spec = current.spec
        if isinstance(spec, FilterSpec) and spec.columns is not None:
            origin = f"filter {current.name!r}"
            if names is None:
                conditions.append(Condition(spec.predicate, spec.columns, origin))
            elif all(column in names for column in spec.columns):
                there = {column: names[column] for column in spec.columns}
                predicate = Names(there).predicate_before(spec.predicate)
                conditions.append(Condition(predicate, tuple(there.values()), origin))
        if isinstance(spec, SelectSpec):  # going up: the columns before the select, by their names at ``step``
            after = names
            names = {
                old: new if after is None else after[new] for new, old in spec.columns if after is None or new in after
            }
        current = current.inputs[0].upstream
    return conditions


def _path_after(flow: Dataflow, step: Step) -> tuple[list[Condition], Step | None, Names, Step]:
    """Walk the single path after ``step`` through selects, filters, unions, window columns, aggregations and
    windows (only their keys pass), and joins with a static table (only the stream's columns pass). Returns the filters on the way that declare their columns, each as a
    condition of ``step``'s rows; the first other step (``None`` where the path splits or ends); the names its
    columns had at ``step``; and the last step of the walk (the input of that other step)."""
    filters: list[Condition] = []
    names = Names()
    current = step
    while True:
        consumers = readers(flow, current)
        if len(consumers) != 1:
            return filters, None, names, current
        following = consumers[0]
        spec = following.spec
        if isinstance(spec, SelectSpec):
            names = names.selected(spec.columns)
        elif isinstance(spec, UnionSpec):
            pass  # Spark moves a filter after a union into each of its inputs: the columns keep their names
        elif isinstance(spec, (AggregateSpec, WindowSpec)) and spec.key_columns and not _processing_time(spec):
            # and a filter on the grouping keys below an aggregation: the other columns are computed there
            names = names.selected(tuple((key, key) for key in spec.key_columns))
        elif isinstance(spec, WindowColumnSpec):  # a window's bounds, computed from the event time
            names = names.computing(spec.start, spec.end)
        elif isinstance(spec, WindowTimeSpec):
            names = names.computing(spec.column)
        elif isinstance(spec, StaticJoinSpec):
            # the stream is the left side of a stream-static join, which both join types keep: a filter after
            # it on the stream's columns moves into it (rule 3), one on the table's columns does not reach it;
            # an inner join adds `key IS NOT NULL` on the stream (rule 2), and its table keys equal the
            # stream's in every row: a condition on one of them holds for the stream's key (rule 4)
            merged = {key for key, table_key in zip(spec.stream_keys, spec.table_keys) if key == table_key}
            own = [column for column in spec.table_columns() if column not in merged]
            if spec.how == "inner":
                keys = names.before(spec.stream_keys)
                if keys is not None:
                    filters.append(Condition(names.predicate_before(KeysNotNull(spec.stream_keys)), keys))
                equal = {
                    table_key: key for key, table_key in zip(spec.stream_keys, spec.table_keys) if key != table_key
                }
                names = names.computing(*own).aliasing(equal)
            else:
                names = names.computing(*own)
        elif isinstance(spec, FilterSpec):
            read = None if spec.columns is None else names.before(spec.columns)
            if read is not None:
                origin = f"filter {following.name!r}"
                copied = [column for column in spec.columns if column in names.aliases]
                if copied:
                    targets = ", ".join(names.aliases[column] for column in copied)
                    origin += f", copied from {', '.join(copied)} to {targets},"
                filters.append(Condition(names.predicate_before(spec.predicate), read, origin))
        else:
            return filters, following, names, current
        current = following


def _processing_time(spec) -> bool:
    """A window of processing time (Flink's, for the continuous model): Spark has none."""
    return bool(getattr(spec, "processing_time", False))


def _on_key(predicate, column: str, key: str):
    """A condition on one side's key ``column``, as a condition on the other side's matching ``key``."""
    return lambda row: predicate({column: row.get(key)})
