"""The running aggregate: per key, a count, sum, min, max or average over every row seen so far.

``stream.key_by("key").aggregate("totals", count=Count(), sum=Sum("value"))`` is Spark's streaming
``groupBy("key").agg(count("*"), sum("value"))``. The aggregate functions themselves (what a row adds to an
accumulator) are in ``core/aggregates.py``; this operator keeps one accumulator list per key in keyed state
and emits the keys a batch touched (update mode) or every key (complete mode).

When results are emitted depends on the model and, in micro-batch, on Spark's output mode:

- **update**: at the end of each batch, every key that the batch touched, with its full current value;
- **complete**: at the end of each batch, every key there is;
- **append**: refused: an aggregate without a watermark never knows that a key is final (windowed
  aggregates, which can be final, are in ``operators/window.py``);
- **continuous model**: after every record, the record's key with its new value (a changelog).

>>> from ministream.core.aggregates import Count, Sum
>>> from ministream.core.operator import StepContext
>>> totals = RunningAggregate(("key",), {"count": Count(), "sum": Sum("value")})
>>> ctx = StepContext.for_testing(output_mode="update"); totals.open(ctx)
>>> totals.process([("a", {"key": "a", "value": 2}), ("a", {"key": "a", "value": 3})], 0)
>>> totals.on_batch_end(None); ctx.emitted
[{'key': 'a', 'count': 2, 'sum': 5}]
"""

from __future__ import annotations

from ministream.core.aggregates import AggregateFunction, add_row, new_accumulators, results
from ministream.core.operator import Operator
from ministream.errors import PipelineError
from ministream.state.keygroups import key_group_of


class RunningAggregate(Operator):
    """Per key, a running aggregate over every row ever seen: Spark's streaming ``groupBy().agg()``.

    State: ``self.groups[key_group][key] = [accumulator per aggregate]`` (the keyed state table
    ``"aggregate"``), ``self.touched``: the keys this batch updated (for update mode), and ``self.changed``:
    the keys written since the last snapshot, marked for incremental checkpoints. The table is copy on write
    (``state/copy_on_write.py``): an accumulator list whose key is not marked yet may be in the last snapshot, so it
    is copied before it changes, which lets a snapshot share every list instead of copying it.
    """

    keyed = True

    def __init__(self, key_columns: tuple[str, ...], aggregates: dict[str, AggregateFunction]):
        self.key_columns = key_columns
        self.names = list(aggregates)
        self.functions = list(aggregates.values())

    @staticmethod
    def check_output_mode(step_name: str, output_mode: str, has_watermark: bool) -> None:
        """Refuse append mode, as Spark does: an aggregate without a watermark never knows a key is final."""
        if output_mode == "append":
            raise PipelineError(
                f"step {step_name!r}: append output mode cannot be used with an aggregation without a "
                "watermark. Append emits a group once, when no later row can change it, and without an "
                "event-time window and a watermark that moment never comes. Use output mode 'update' or "
                "'complete'. (Spark 4.3 refuses it too: 'Invalid streaming output mode: append. This output "
                "mode is not supported for streaming aggregations without watermark on streaming "
                "DataFrames/DataSets.')"
            )

    def open(self, ctx):
        super().open(ctx)
        self.groups = ctx.state.table("aggregate")  # {key_group: {key: [accumulator, ...]}}
        self.changed = ctx.state.track_changes("aggregate", copy_on_write=True)  # {key: None}
        self.touched = {}  # {key: None}, in first-touched order

    def process(self, pairs, input_index):
        groups, functions, changed = self.groups, self.functions, self.changed
        continuous = self.ctx.model == "continuous"
        for key, row in pairs:
            group = groups.setdefault(key_group_of(key), {})
            accumulators = group.get(key)
            if accumulators is None:
                accumulators = group[key] = new_accumulators(functions)
                changed[key] = None
            elif key not in changed:  # copy on write: the last snapshot may hold this list
                accumulators = group[key] = list(accumulators)
                changed[key] = None
            add_row(accumulators, functions, row)
            if continuous:
                self._emit([key], "its value changed (the continuous model emits every update)")
            else:
                self.touched[key] = None

    def on_batch_end(self, batch):
        if self.ctx.output_mode == "complete":
            keys = [key for group in sorted(self.groups) for key in self.groups[group]]
            self._emit(keys, "complete mode emits every key at every batch")
        else:
            self._emit(list(self.touched), "updated in this batch (update mode emits the keys a batch touched)")
        self.touched = {}

    def _emit(self, keys: list, why: str) -> None:
        rows = []
        for key in keys:
            row = key_columns_of(self.key_columns, key)
            row.update(results(self.groups[key_group_of(key)][key], self.names, self.functions))
            rows.append(row)
            if self.ctx.tracing:
                self.ctx.explain("emit", f"key {key!r} emitted: {why}", row)
        self.ctx.emit(rows)


def key_columns_of(key_columns: tuple[str, ...], key) -> dict:
    """The group-by columns of an output row: a single key, or a tuple spread over several columns."""
    if len(key_columns) == 1:
        return {key_columns[0]: key}
    return dict(zip(key_columns, key))
