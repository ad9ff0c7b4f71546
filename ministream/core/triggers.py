"""Triggers: when a micro-batch query runs a batch, and when it runs one with no data.

A streaming query does not run batches on its own: a *trigger* starts each one. Spark has three kinds, and
ministream runs the same three over a script (``run_microbatch(flow, trigger=...)``):

- :meth:`Trigger.processing_time` (Spark's default, ``ProcessingTime``): the trigger fires again and again;
  each firing runs a batch with the data that arrived since the last one, or, when none arrived, a *no-data
  batch* if a stateful step asks for one (its watermark would let it emit or evict), or nothing at all;
- :meth:`Trigger.once` (``Trigger.Once``): one batch with all the data available when the query starts,
  then the query stops; never a no-data batch, so what the new watermark makes due waits for the next start;
- :meth:`Trigger.available_now` (``Trigger.AvailableNow``): every batch the available data makes (one per
  scripted batch, as a source with a rate limit of one file per batch gives), then the no-data batch its
  last watermark asks for, then the query stops.

**Ticks.** In a script, position k is trigger firing k. A position holds the rows that arrived before that
firing, or ``None`` when nothing arrived: then the firing runs a no-data batch if a step asks for one, or
runs nothing (no batch id is spent). Spark's own tests add data and wait for the query to catch up
(``processAllAvailable``); that is a data position followed by a ``None`` one. A script without ``None``
positions is a source that always has the next batch waiting: no-data batches come only after its end.

**The no-data batch rule** (Spark's ``shouldRunAnotherBatch``, asked of every stateful step with the new
watermark): a windowed or watermarked aggregation in append or update mode, a deduplication with a
watermark, a join whose state the watermark cleans, and a process function in event-time mode ask for one
when the new watermark is above the one their last batch ran with; a process function in processing-time
mode asks at every firing (its timers follow the clock). ``no_data_batches=False`` (Spark's
``spark.sql.streaming.noDataMicroBatches.enabled=false``) turns them all off: the next data batch then
evicts with the new watermark while it late-filters with the previous one.

After the script the clock stands still, so a trailing no-data batch runs only while the watermark moved in
the last batch (a batch with the same watermark and the same time could change nothing).

>>> Trigger.once()
Trigger(kind='once')
>>> Trigger.processing_time().describe(), Trigger.available_now().describe()
('ProcessingTime', 'AvailableNow')
"""

from __future__ import annotations

from typing import Literal

import attrs

TriggerKind = Literal["processing_time", "once", "available_now"]
TRIGGER_KINDS: tuple[TriggerKind, ...] = ("processing_time", "once", "available_now")


@attrs.frozen
class Trigger:
    """When batches run: ``kind`` is ``"processing_time"`` (the default), ``"once"`` or ``"available_now"``.

    >>> Trigger("sometimes")
    Traceback (most recent call last):
    ...
    ValueError: a trigger is 'processing_time', 'once' or 'available_now', not 'sometimes'
    """

    kind: TriggerKind = attrs.field(default="processing_time")

    @kind.validator
    def _check_kind(self, attribute, value):
        if value not in TRIGGER_KINDS:
            raise ValueError(f"a trigger is 'processing_time', 'once' or 'available_now', not {value!r}")

    @classmethod
    def processing_time(cls) -> Trigger:
        """Spark's default trigger: a batch at every firing of the script (data, no-data, or none)."""
        return cls("processing_time")

    @classmethod
    def once(cls) -> Trigger:
        """Spark's ``Trigger.Once``: one batch with everything available, no no-data batch, then stop."""
        return cls("once")

    @classmethod
    def available_now(cls) -> Trigger:
        """Spark's ``Trigger.AvailableNow``: a batch per scripted batch available, the trailing no-data
        batch, then stop."""
        return cls("available_now")

    def describe(self) -> str:
        """Spark's name for the trigger."""
        return {"processing_time": "ProcessingTime", "once": "Once", "available_now": "AvailableNow"}[self.kind]
