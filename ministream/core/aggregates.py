"""Aggregate functions: how the rows of a group fold into one value (count, sum, min, max, average, your own).

An aggregate function is what ``aggregate(...)`` and ``window(...)`` steps compute per group:
``count=Count()``, ``total=Sum("value")``. Each keeps an *accumulator* per group: ``create()`` makes an empty
one, ``add(accumulator, value)`` folds a value in, ``result(accumulator)`` reads the answer and, for session
windows, ``merge`` joins two. A null value is skipped, as SQL's aggregates skip it; ``Count()`` counts rows.
The same functions compile to Spark's ``count("*")``, ``sum("value")``... in the Spark backend.

>>> functions = [Count(), Sum("value"), Avg("value")]
>>> accumulators = new_accumulators(functions)
>>> add_rows(accumulators, functions, [{"value": 2}, {"value": None}, {"value": 4}])
>>> results(accumulators, ["count", "sum", "avg"], functions)
{'count': 3, 'sum': 6, 'avg': 3.0}
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from functools import reduce
from itertools import islice
from typing import Any

import attrs


def identity(accumulator):
    """The result of an aggregate whose accumulator is already its result (count, sum, min, max)."""
    return accumulator


@attrs.frozen
class AggregateFunction:
    """One aggregate over one column: ``create`` an accumulator, ``add`` a value, ``merge`` two, read the
    ``result``. ``column=None`` means the whole row (for ``Count()``). Null values (``None``) are skipped,
    as SQL skips them."""

    column: str | None
    create: Callable[[], Any]
    add: Callable[[Any, Any], Any]
    merge: Callable[[Any, Any], Any]
    result: Callable[[Any], Any] = identity
    name: str = "aggregate"
    add_all: Callable[[Any, list], Any] | None = None
    """Optional: fold a whole list of values at once, with the same result as calling ``add`` for each in
    order (``Count`` adds ``len(values)``); it lets operators work a batch at a time."""
    add_count: Callable[[Any, int], Any] | None = None
    """Optional, for a function that reads no value of a row, only that it is there (``count("*")``): fold
    ``n`` rows at once. An operator whose functions all have one needs only how many rows each key has."""


def _plus(acc, value):
    if acc is None:  # the first value is kept as it is, not added to anything: a string would pass unnoticed
        if isinstance(value, str):
            raise TypeError(f"sum adds up numbers, not {value!r}")  # the engine names the row (core/bad_rows.py)
        return value
    return acc + value


def _plus_all(acc, values):
    """A left fold with ``+``, as ``_plus`` one value at a time does: the same float rounding. (Not ``sum``:
    from Python 3.12 it adds floats with compensation, which can differ from a left fold in the last bit.)"""
    if not values:
        return acc
    if acc is None:  # the first value starts the sum (checked by _plus), the others are added to it
        acc, values = _plus(None, values[0]), islice(values, 1, None)
    return reduce(operator.add, values, acc)


def _keep(pick):
    return lambda acc, value: value if acc is None else pick(acc, value)


def _both(combine):
    return lambda a, b: b if a is None else a if b is None else combine(a, b)


def Count(column: str | None = None) -> AggregateFunction:
    """Count rows (``count("*")``), or the non-null values of one column.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("counts")
    >>> script = [[{"key": "a", "value": 1}, {"key": "a", "value": None}, {"key": "a", "value": 2}]]
    >>> flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
    ...     "totals", rows=Count(), values=Count("value")).sink("output", CollectingSink())
    >>> run_microbatch(flow, output_mode="update").output()[0].rows
    [{'key': 'a', 'rows': 3, 'values': 2}]
    """
    return AggregateFunction(
        column,
        lambda: 0,
        lambda acc, value: acc + 1,
        lambda a, b: a + b,
        name="count",
        add_all=lambda acc, values: acc + len(values),
        add_count=operator.add if column is None else None,
    )


def Sum(column: str) -> AggregateFunction:
    """Add up a column (``sum(col)``): ``None`` until a non-null value arrives.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("sums")
    >>> script = [[{"key": "a", "value": 4}, {"key": "a", "value": 1.5}],
    ...           [{"key": "a", "value": None}, {"key": "b", "value": None}]]
    >>> flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
    ...     "totals", total=Sum("value")).sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'total': 5.5}], [{'key': 'a', 'total': 5.5}, {'key': 'b', 'total': None}]]
    """
    return AggregateFunction(column, lambda: None, _plus, _both(lambda a, b: a + b), name="sum", add_all=_plus_all)


def Min(column: str) -> AggregateFunction:
    """The smallest value of a column (``min(col)``), ``None`` until a non-null value arrives.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("lows")
    >>> script = [[{"key": "a", "value": 4}, {"key": "a", "value": 1.5}],
    ...           [{"key": "a", "value": None}, {"key": "b", "value": None}]]
    >>> flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
    ...     "totals", low=Min("value")).sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'low': 1.5}], [{'key': 'a', 'low': 1.5}, {'key': 'b', 'low': None}]]
    """
    return AggregateFunction(column, lambda: None, _keep(min), _both(min), name="min")


def Max(column: str) -> AggregateFunction:
    """The largest value of a column (``max(col)``), ``None`` until a non-null value arrives.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("highs")
    >>> script = [[{"key": "a", "value": 4}, {"key": "a", "value": 1.5}],
    ...           [{"key": "a", "value": None}, {"key": "b", "value": None}]]
    >>> flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
    ...     "totals", high=Max("value")).sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'high': 4}], [{'key': 'a', 'high': 4}, {'key': 'b', 'high': None}]]
    """
    return AggregateFunction(column, lambda: None, _keep(max), _both(max), name="max")


def Avg(column: str) -> AggregateFunction:
    """The mean of a column (``avg(col)``), kept as ``(sum, count)`` so that it can be merged.

    >>> from ministream import CollectingSink, Dataflow, ScriptedSource, run_microbatch
    >>> flow = Dataflow("means")
    >>> script = [[{"key": "a", "value": 4}, {"key": "a", "value": 1.5}],
    ...           [{"key": "a", "value": None}, {"key": "b", "value": None}]]
    >>> flow.source("events", ScriptedSource(script)).key_by("key").aggregate(
    ...     "totals", mean=Avg("value")).sink("output", CollectingSink())
    >>> [batch.rows for batch in run_microbatch(flow, output_mode="update").output()]
    [[{'key': 'a', 'mean': 2.75}], [{'key': 'a', 'mean': 2.75}, {'key': 'b', 'mean': None}]]
    """
    return AggregateFunction(
        column,
        lambda: (0, 0),
        lambda acc, value: (acc[0] + value, acc[1] + 1),
        lambda a, b: (a[0] + b[0], a[1] + b[1]),
        lambda acc: acc[0] / acc[1] if acc[1] else None,
        name="avg",
    )


def Custom(column: str | None, create, add, result=identity, merge=None) -> AggregateFunction:
    """A user-defined aggregate: the same four parts as the built-in ones.

    >>> spread = Custom("value", create=lambda: None,
    ...                 add=lambda acc, v: (v, v) if acc is None else (min(acc[0], v), max(acc[1], v)),
    ...                 result=lambda acc: acc[1] - acc[0])
    >>> acc = None
    >>> for v in (4, 1, 9): acc = spread.add(acc, v)
    >>> spread.result(acc)
    8
    """
    return AggregateFunction(column, create, add, merge, result, name="custom")


def new_accumulators(functions: list[AggregateFunction]) -> list:
    """One fresh accumulator per aggregate function."""
    return [function.create() for function in functions]


def add_rows(accumulators: list, functions: list[AggregateFunction], rows: list[dict]) -> None:
    """Fold a group of rows into the accumulators, in place: the same result as ``add_row`` for each row in
    order, but one call per aggregate rather than per row where the aggregate has ``add_all``.

    >>> accumulators = new_accumulators([Count(), Sum("value")])
    >>> add_rows(accumulators, [Count(), Sum("value")], [{"value": 2}, {"value": None}, {"value": 5}])
    >>> accumulators
    [3, 7]
    """
    for i, function in enumerate(functions):
        column = function.column
        if function.add_all is None:
            for row in rows:
                add_row_to(accumulators, i, function, row)
            continue
        values = rows if column is None else [row[column] for row in rows if row.get(column) is not None]
        accumulators[i] = function.add_all(accumulators[i], values)


def add_groups(accumulator_lists: list[list], functions: list[AggregateFunction], row_groups: list[list[dict]]) -> None:
    """Fold each group of rows into its own accumulators, in place: ``add_rows(accumulator_lists[g],
    functions, row_groups[g])`` for every ``g``, but aggregate by aggregate over all the groups, so that an
    aggregate with ``add_all`` costs one ``map`` over the groups instead of a call of ``add_rows`` per group.
    A batch of 1,000 rows over 1,000 keys has ~630 groups of one or two rows: there, what a group costs
    matters more than what a row costs.

    >>> functions = [Count(), Sum("value")]
    >>> a, b = new_accumulators(functions), new_accumulators(functions)
    >>> add_groups([a, b], functions, [[{"value": 2}, {"value": 5}], [{"value": None}]]); a, b
    ([2, 7], [1, None])
    """
    for i, function in enumerate(functions):
        if function.add_all is None:
            for accumulators, rows in zip(accumulator_lists, row_groups):
                for row in rows:
                    add_row_to(accumulators, i, function, row)
            continue
        column = function.column
        if column is None:
            values = row_groups
        else:
            values = [[row[column] for row in rows if row.get(column) is not None] for rows in row_groups]
        folded = map(function.add_all, [accumulators[i] for accumulators in accumulator_lists], values)
        for accumulators, accumulator in zip(accumulator_lists, folded):
            accumulators[i] = accumulator


def add_counts(accumulator_lists: list[list], functions: list[AggregateFunction], counts: list[int]) -> None:
    """Fold ``counts[g]`` rows into ``accumulator_lists[g]``, in place, for functions that read no value of a
    row (each has ``add_count``: ``count("*")``): what :func:`add_groups` does, from how many rows each group
    has rather than from the rows.

    >>> a, b = new_accumulators([Count()]), new_accumulators([Count()])
    >>> add_counts([a, b], [Count()], [2, 1]); a, b
    ([2], [1])
    """
    for i, function in enumerate(functions):
        assert function.add_count is not None, f"{function.name} reads the rows' values: fold them with add_groups"
        folded = map(function.add_count, [accumulators[i] for accumulators in accumulator_lists], counts)
        for accumulators, accumulator in zip(accumulator_lists, folded):
            accumulators[i] = accumulator


def add_row_to(accumulators: list, i: int, function: AggregateFunction, row: dict) -> None:
    """Fold one row into accumulator ``i`` (a ``None`` value is skipped)."""
    if function.column is None:
        accumulators[i] = function.add(accumulators[i], row)
    else:
        value = row.get(function.column)
        if value is not None:
            accumulators[i] = function.add(accumulators[i], value)


def add_row(accumulators: list, functions: list[AggregateFunction], row: dict) -> None:
    """Fold one row into the accumulators, in place (a ``None`` value is skipped, as SQL skips nulls)."""
    for i, function in enumerate(functions):
        if function.column is None:
            accumulators[i] = function.add(accumulators[i], row)
        else:
            value = row.get(function.column)
            if value is not None:
                accumulators[i] = function.add(accumulators[i], value)


def row_folder(functions: list[AggregateFunction]) -> Callable[[tuple, dict], tuple]:
    """A function ``fold(accumulators, row)`` that returns a tuple of accumulators with ``row`` folded in, as
    ``add_row`` folds it, leaving the tuple it was given as it was; made once per step, it is what a loop over
    rows calls. A tuple of plain values (counts, sums) holds no other object, so Python's garbage collector
    stops looking at it after its first pass, where it walks a list every time: state that holds many of them
    costs the collector nothing. With a single aggregate it calls that aggregate's ``add`` directly.

    >>> fold = row_folder([Count(), Sum("value")])
    >>> fold(fold((0, None), {"value": 2}), {"value": None})
    (2, 2)
    """
    if len(functions) != 1:

        def fold(accumulators, row):
            folded = list(accumulators)
            add_row(folded, functions, row)
            return tuple(folded)

        return fold
    add, column = functions[0].add, functions[0].column

    def fold_row(accumulators, row):  # an aggregate of whole rows (Count())
        return (add(accumulators[0], row),)

    def fold_value(accumulators, row):  # an aggregate of one column: a null value is skipped
        value = row.get(column)
        return accumulators if value is None else (add(accumulators[0], value),)

    return fold_row if column is None else fold_value


def table_folder(functions: list[AggregateFunction]) -> Callable[[dict, Any, dict], None]:
    """A function ``fold(table, key, row)`` that folds ``row`` into ``table[key]``, a list of accumulators
    (made the first time), as ``add_row`` does; made once per step, it is what a loop over rows calls. With a
    single aggregate it calls that aggregate's ``create`` and ``add`` directly.

    >>> fold = table_folder([Count()])
    >>> table = {}
    >>> fold(table, "a", {"value": 1}); fold(table, "a", {"value": 2}); fold(table, "b", {"value": 3}); table
    {'a': [2], 'b': [1]}
    """
    if len(functions) != 1:

        def fold(table, key, row):
            accumulators = table.get(key)
            if accumulators is None:
                accumulators = table[key] = new_accumulators(functions)
            add_row(accumulators, functions, row)

        return fold
    create, add, column = functions[0].create, functions[0].add, functions[0].column

    def fold_row(table, key, row):  # an aggregate of whole rows (Count())
        accumulators = table.get(key)
        if accumulators is None:
            table[key] = [add(create(), row)]
        else:
            accumulators[0] = add(accumulators[0], row)

    def fold_value(table, key, row):  # an aggregate of one column: a null value is skipped
        accumulators = table.get(key)
        if accumulators is None:
            accumulators = table[key] = [create()]
        value = row.get(column)
        if value is not None:
            accumulators[0] = add(accumulators[0], value)

    return fold_row if column is None else fold_value


def tuple_table_folder(functions: list[AggregateFunction]) -> Callable[[dict, Any, dict], None]:
    """As :func:`table_folder`, but ``table[key]`` is a tuple of accumulators that each fold replaces
    (:func:`row_folder`): a table of many keys then holds nothing the garbage collector walks again.

    >>> fold = tuple_table_folder([Count()])
    >>> table = {}
    >>> fold(table, "a", {"value": 1}); fold(table, "a", {"value": 2}); fold(table, "b", {"value": 3}); table
    {'a': (2,), 'b': (1,)}
    """
    if len(functions) != 1:
        fold_tuple = row_folder(functions)

        def fold(table, key, row):
            accumulators = table.get(key)
            if accumulators is None:
                accumulators = tuple(new_accumulators(functions))
            table[key] = fold_tuple(accumulators, row)

        return fold
    create, add, column = functions[0].create, functions[0].add, functions[0].column

    def fold_row(table, key, row):  # an aggregate of whole rows (Count())
        accumulators = table.get(key)
        table[key] = (add(create() if accumulators is None else accumulators[0], row),)

    def fold_value(table, key, row):  # an aggregate of one column: a null value is skipped
        accumulators = table.get(key)
        if accumulators is None:
            accumulators = table[key] = (create(),)
        value = row.get(column)
        if value is not None:
            table[key] = (add(accumulators[0], value),)

    return fold_row if column is None else fold_value


def results(accumulators: list, names: list[str], functions: list[AggregateFunction]) -> dict:
    """The output columns of one group: ``{name: result}``."""
    return {name: function.result(acc) for name, function, acc in zip(names, functions, accumulators)}
