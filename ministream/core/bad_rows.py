"""Bad input: the row that made a step fail, and what is wrong with it, in one line.

A step works on a chunk of rows at a time, in loops written for speed that do not check each row. A row
without its key column, an event time written as a string, a key that is a list, or a row that your own
function cannot read makes Python fail somewhere inside the step, with a message (``KeyError: 'key'``,
``'<=' not supported between instances of 'int' and 'str'``) that names neither the row nor the step.

When that happens, the engine walks the chunk again (:func:`bad_row_error`), knowing from the plan what the
step reads: the columns of its key, its event-time columns, the columns its ``sum`` and ``avg`` add up, and
the functions it calls on a row. The first row that breaks one of those is named, with what is wrong with it,
in a :class:`~ministream.errors.PipelineError`. The check costs nothing until a step fails, and a failure it
cannot pin on a row is raised as it was.

What a row must be (as in a Spark DataFrame, where the schema says it once for every row):

- a ``dict`` of column values;
- its key columns present, and its key hashable (a string, a number, a tuple of them, or ``None``);
- an event time that is whole milliseconds since the epoch, an ``int`` (or ``None`` when it is unknown: the
  row is then dropped, and counted, by the steps that need one);
- a number (or ``None``) in a column that ``sum`` or ``avg`` adds up.

>>> from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Tumbling, run_microbatch
>>> flow = Dataflow("clicks")
>>> flow.source("events", ScriptedSource([[{"user": "ann", "ts": 1_000}, {"user": "bob", "ts": "2024-01-01"}]])
...     ).key_by("user").window("counts", Tumbling("5 seconds"), n=Count()).sink("output", CollectingSink())
>>> run_microbatch(flow, output_mode="update")
Traceback (most recent call last):
...
ministream.errors.PipelineError: step 'counts': the row {'user': 'bob', 'ts': '2024-01-01'} has the event time '2024-01-01' in column 'ts', a str: an event time is whole milliseconds since the epoch, an int (None when it is unknown)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from ministream.core.lineage import distinct_event_times, event_time_columns
from ministream.core.steps import (
    AggregateSpec,
    DedupSpec,
    FilterSpec,
    FlatMapSpec,
    JoinSpec,
    MapSpec,
    Step,
    StepSpec,
    WatermarkSpec,
    WindowColumnSpec,
    WindowSpec,
)
from ministream.errors import PipelineError
from ministream.time.windows import Session

SHOWN = 200
"""How many characters of a row an error shows (a row of many columns is cut, with ``...``)."""

ADDED_UP = ("sum", "avg")
"""The aggregates that add their column's values up: they need numbers."""

ROW_ERRORS = (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError)
"""What a step's loops raise when a row is not what they read (a missing column, a value of the wrong type)."""


@attrs.frozen
class RowChecks:
    """What one input of a step reads from each row, from its spec and its input edge.

    >>> from operator import itemgetter
    >>> checks = RowChecks(key_fn=itemgetter("user"), event_times=("ts",))
    >>> checks.problem({"ts": 5}), checks.problem({"user": ["a"], "ts": 5})
    ("has no key column 'user' (its columns: ts)", "has the key ['a'], a list, which cannot be a key (a key is a string, a number, a tuple of them, or None)")
    >>> checks.problem({"user": "a", "ts": 5}) is None
    True
    """

    key_fn: Callable[[dict], Any] | None = None  # the input edge's key (a keyed step's), None for another step
    event_times: tuple[str, ...] = ()
    carried_time: str | None = None  # the event-time column the plan says the rows carry, which the step reads
    numbers: tuple[tuple[str, str], ...] = ()  # (column, aggregate): the columns that sum and avg add up
    functions: tuple[Callable[[dict], Any], ...] = ()

    def problem(self, row) -> str | None:
        """What is wrong with ``row`` for this input, in words that follow "the row ...", or ``None``."""
        if not isinstance(row, dict):
            return f"is not a row but {a_type(row)}: a row is a dict of column values"
        if self.key_fn is not None:
            try:
                key = self.key_fn(row)
            except KeyError as error:  # the key reads a column the row does not have
                return f"has no key column {error.args[0]!r} (its columns: {', '.join(map(str, row)) or 'none'})"
            except ROW_ERRORS as error:
                return f"has no key: the key function raised {_error(error)}"
            try:
                hash(key)
            except TypeError:
                return (
                    f"has the key {short_repr(key)}, {a_type(key)}, which cannot be a key "
                    "(a key is a string, a number, a tuple of them, or None)"
                )
        if self.carried_time is not None and self.carried_time not in row:
            return (
                f"has no column {self.carried_time!r}, the event time the plan says its rows carry (its columns: "
                f"{', '.join(map(str, row)) or 'none'}): a map before the step may have left it out; the plan takes "
                "a map to keep the event time of the rows it is given, so return that column from the map"
            )
        for column in self.event_times:
            value = row.get(column)
            if value is not None and type(value) not in (int, float):
                return (
                    f"has the event time {short_repr(value)} in column {column!r}, {a_type(value)}: an event time is whole "
                    "milliseconds since the epoch, an int (None when it is unknown)"
                )
        for column, aggregate in self.numbers:
            value = row.get(column)
            if value is not None and (type(value) is bool or not isinstance(value, (int, float))):
                return f"has {short_repr(value)} in column {column!r}, {a_type(value)}: {aggregate} adds up numbers"
        for function in self.functions:
            try:
                function(row)
            except ROW_ERRORS as error:
                return f"makes the step's function{_name(function)} raise {_error(error)}"
        return None


def checks_of(spec: StepSpec, input_number: int, key_fn=None, upstream: Step | None = None) -> RowChecks:
    """What input ``input_number`` of a step of ``spec`` reads from each row (its key, given by the input edge;
    ``upstream``: the step the input comes from, whose event time a deduplication reads).

    >>> from ministream.core.aggregates import Count, Sum
    >>> from ministream.time.windows import Tumbling
    >>> checks_of(WindowSpec(("user",), Tumbling(5_000), "ts", {"n": Count(), "total": Sum("amount")}), 0)
    RowChecks(key_fn=None, event_times=('ts',), carried_time=None, numbers=(('amount', 'sum'),), functions=())
    """
    event_times: tuple[str, ...] = ()
    numbers: tuple[tuple[str, str], ...] = ()
    functions: tuple[Callable[[dict], Any], ...] = ()
    if isinstance(spec, (WatermarkSpec, WindowColumnSpec)):
        event_times = (spec.column,)
    elif isinstance(spec, (AggregateSpec, WindowSpec)):
        if isinstance(spec, WindowSpec) and not spec.processing_time:
            event_times = (spec.column,)
        if isinstance(spec, WindowSpec) and isinstance(spec.assigner, Session) and callable(spec.assigner.gap):
            functions = (spec.assigner.gap,)  # a session gap computed from each row
        numbers = tuple(
            (function.column, function.name)
            for function in spec.aggregates.values()
            if function.name in ADDED_UP and function.column is not None
        )
    elif isinstance(spec, JoinSpec):
        times = [spec.between.left, spec.between.right] if spec.between is not None else []
        times += list(spec.key_time or ())
        event_times = tuple(times[input_number::2]) if times else ()  # the left side's columns, or the right's
        where = spec.left_where if input_number == 0 else spec.right_where
        functions = (where.fn,) if where is not None else ()
    elif isinstance(spec, (MapSpec, FlatMapSpec)):
        functions = (spec.fn,)
    elif isinstance(spec, FilterSpec):
        functions = (spec.predicate,)
    carried = None
    if isinstance(spec, DedupSpec) and upstream is not None:  # its event time is the lineage's, not its spec's
        carried_times = distinct_event_times(event_time_columns(upstream))
        carried = carried_times[0].column if carried_times else None
    return RowChecks(key_fn, event_times, carried, numbers, functions)


def aggregated_columns(spec: StepSpec) -> tuple[tuple[str, str], ...]:
    """The columns the aggregates of an aggregate or window step read, each with its aggregate in words.

    >>> from ministream.core.aggregates import Count, Sum
    >>> aggregated_columns(AggregateSpec(("user",), {"n": Count(), "total": Sum("amount")}))
    (('amount', 'sum(amount)'),)
    """
    if not isinstance(spec, (AggregateSpec, WindowSpec)):
        return ()
    functions = spec.aggregates.values()
    return tuple((f.column, f"{f.name}({f.column})") for f in functions if f.column is not None)


def missing_column_error(step_name: str, row, columns: tuple[tuple[str, str], ...]) -> PipelineError | None:
    """The error for an aggregate over a column that the rows do not have (a misspelt name, most often), found
    in ``row``, the first row of a chunk: Spark refuses such a query before it runs; without it the aggregate
    would read every row's value as null and come out null (a count, 0) without a word.

    >>> print(missing_column_error("totals", {"user": "a", "value": 1}, (("amount", "sum(amount)"),)))
    step 'totals': the rows have no column 'amount' for sum(amount); a row has user, value. (Spark: 'Cannot resolve column name "amount"'.)
    """
    if not isinstance(row, dict):
        return None
    for column, aggregate in columns:
        if column not in row:
            return PipelineError(
                f"step {step_name!r}: the rows have no column {column!r} for {aggregate}; a row has "
                f"{', '.join(map(str, row)) or 'no columns'}. (Spark: 'Cannot resolve column name \"{column}\"'.)"
            )
    return None


def bad_row_error(step_name: str, rows: Iterable, checks: RowChecks) -> PipelineError | None:
    """The error naming the first of ``rows`` that ``checks`` finds wrong, or ``None`` if every row passes.

    >>> from operator import itemgetter
    >>> error = bad_row_error("counts", [{"user": "a"}, {"ts": 1}], RowChecks(key_fn=itemgetter("user")))
    >>> str(error)
    "step 'counts': the row {'ts': 1} has no key column 'user' (its columns: ts)"
    """
    for row in rows:
        problem = checks.problem(row)
        if problem is not None:
            return PipelineError(f"step {step_name!r}: the row {short_repr(row)} {problem}")
    return None


def short_repr(value, limit: int = SHOWN) -> str:
    """``repr(value)``, cut to ``limit`` characters (ending in ``...`` when cut).

    >>> short_repr({"note": "x" * 50}, limit=20)
    "{'note': 'xxxxxx..."
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def a_type(value) -> str:
    """The type of ``value`` in words, as an error says it.

    >>> a_type("x"), a_type(1)
    ('a str', 'an int')
    """
    name = type(value).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def _name(function) -> str:
    name = getattr(function, "__name__", None)
    return "" if name in (None, "<lambda>") else f" {name}()"


def _error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
