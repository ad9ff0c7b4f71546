"""Random pipelines: plans drawn at random, written as pipeline files, to fuzz the compiler and the engine.

``ministream fuzz LESSON`` draws random *events* for a fixed pipeline. ``ministream fuzz --pipelines N`` draws the
pipelines too: one or two sources, a watermark or none, a few stateless steps, then one or two chained
stateful steps (a running aggregate, tumbling, sliding or session windows, deduplication, a stream-stream join;
deduplication then an aggregate or a window, or on each side of a join; a join then a window over its rows),
with random durations, output modes and watermark policies, each drawn only where Spark accepts it (append mode
needs a watermark, session windows refuse update mode, joins run in append mode...), and keyed process
functions (the processors of ``tools/random_processors.py``: a per-key counter, a counter of quiet keys on
an event-time timer, which needs a watermark, and ``KeyLatest``, whose output event time a window or a
deduplication after it reads), which the compiler runs through ``spark/processor_adapter.py``.
Some plans join the rows with a static table of regions (:class:`StaticTable`: one input's rows, one side's
before a stream-stream join, or the joined rows after it; some tables change between batches), then filter
them on the stream's columns, the table's key or its region: Spark's optimizer moves some of those filters
below the watermark (``operators/pushdown.py``).
A :class:`RandomPlan` is typed data; :func:`pipeline_source` writes it as a pipeline file
(``lessons/pipeline_file.py``), and the lesson is loaded from that very text, so the file a disagreement
leaves behind is exactly the pipeline that was run.

>>> plan = random_plan(random.Random("pipelines:0:0"))
>>> plan == random_plan(random.Random("pipelines:0:0"))
True
>>> lesson = plan_lesson(RandomPlan(stateful=(Stateful("tumbling", size=10_000),), delays=(5_000,)), "example")
>>> print(lesson.doc)
A random pipeline: watermark 5 seconds on events; tumbling 10 seconds windows per key (append mode).
>>> [len(batch.rows) for batch in lesson.run([[{"ts": 1_000, "key": "a", "value": 1.0}],
...                                            [{"ts": 20_000, "key": "a", "value": 2.0}]]).output()]
[0, 0, 1]
"""

from __future__ import annotations

import random

import attrs

from ministream.lessons.lesson import Lesson
from ministream.lessons.pipeline_file import pipeline_lesson
from ministream.time.units import format_duration

FIELDS = {"key": str, "value": float}
"""Every random pipeline's events: a key among a few (``fuzz.KEYS``) and a small whole number."""

AGGREGATES = {"count": "Count()", "sum": 'Sum("{value}")', "max": 'Max("{value}")', "min": 'Min("{value}")'}
"""The aggregates a step may compute, and how a pipeline file writes them (``{value}``: the value column's name,
``value``, or ``l_value`` after a join)."""

JOIN_TYPES = ("inner", "left_outer", "right_outer", "full_outer", "left_semi")

FILTERED_KEYS = ("a", "b", "c")
"""The keys of the random scripts (``fuzz.KEYS``): a filter on a key (after a join or an aggregation) drops one
of them."""


@attrs.frozen
class Stateless:
    """A stateless step on one input: ``filter`` (``value > number``), ``map`` (``value * number``) or
    ``select`` (keep the columns, the number says nothing). After a join, a filter names the ``column`` it
    reads: ``l_value`` or ``r_value`` (``value > number``, a null value as 0), ``l_key`` or ``r_key``
    (``key != `` the key ``number`` stands for, :data:`FILTERED_KEYS`)."""

    kind: str
    number: int = 0
    column: str = "value"


@attrs.frozen
class Stateful:
    """A stateful step: ``aggregate``, ``tumbling``, ``sliding``, ``session``, ``dedup``, ``join`` or
    ``process``, with its settings (durations in ms)."""

    kind: str
    keyed: bool = True
    size: int = 0
    slide: int = 0
    aggregates: tuple[str, ...] = ("count",)
    dedup: str = "key"  # dedup: "key", "key_ts" (the key and the event time), "row" or "within" (the watermark)
    how: str = "inner"  # join
    lower: int | None = None  # join: right.ts - left.ts >= lower
    upper: int | None = None  # join: right.ts - left.ts <= upper
    null_safe: bool = False  # join: the keys compared with <=> (a null key meets a null key), not =
    processor: str = "counter"  # process: "counter" (KeyCounter), "quiet" (QuietKeyCounter, its gap in size) or
    # "latest" (KeyLatest: its output event time, latest, is the event time of a window after it)
    side: str = "l"  # a window after a join: the side whose columns it reads, "l" (l_key, l_ts...) or "r"; a
    # process step before a join: the side it runs on


REGIONS = ("north", "south")
"""The regions of the static table's rows, in turn: a filter on the region keeps the rows not in one of them."""


@attrs.frozen
class StaticTable:
    """A join with a static table (``join_static``): on the one input's rows before its stateful steps; with
    two inputs, on the joined rows right after the stream-stream join, or on one side's rows before it
    (``before_join``). ``column`` is the stream's key column it joins on (``key``, or ``l_key`` or ``r_key``
    with two inputs: a side's key), ``table_key`` the table's name for it (the same, or ``t_key``), ``keys``
    the keys the table has (each with a region of :data:`REGIONS`, in turn), and ``filters`` come after the
    join, each on a stream column, the table's key or ``region``. ``changes``: ``(batch id, keys)``, the table
    as it is from that micro-batch on (a table updated between batches, ``join_static(changes=...)``)."""

    how: str = "inner"
    column: str = "key"
    table_key: str = "key"
    keys: tuple[str, ...] = ("a", "b")
    filters: tuple[Stateless, ...] = ()
    before_join: bool = False
    changes: tuple[tuple[int, tuple[str, ...]], ...] = ()

    def rows(self, keys: tuple[str, ...] | None = None) -> list[dict]:
        """The table's rows (of ``keys``, the keys of a change, or of the table as it starts).

        >>> StaticTable(keys=("a", "c")).rows()
        [{'key': 'a', 'region': 'north'}, {'key': 'c', 'region': 'south'}]
        """
        keys = self.keys if keys is None else keys
        return [{self.table_key: key, "region": REGIONS[i % len(REGIONS)]} for i, key in enumerate(keys)]


@attrs.frozen
class RandomPlan:
    """A random pipeline as data: its inputs, each input's watermark delay (``None``: no watermark) and
    stateless steps, its chain of stateful steps, its output mode and watermark policy."""

    stateful: tuple[Stateful, ...]
    """The chain, in order: one or two steps; with two inputs, a join, with a dedup before it (on each side) or
    ``KeyLatest`` (on the side the step names), or a window after it (over the joined rows, :data:`AFTER_JOIN`)."""
    inputs: tuple[str, ...] = ("events",)
    delays: tuple[int | None, ...] = (None,)
    stateless: tuple[tuple[Stateless, ...], ...] = ((),)
    output_mode: str = "append"
    policy: str = "min"
    after_join: tuple[Stateless, ...] = ()
    """Filters on the joined rows, right after the join: Spark's optimizer moves some of them into a side
    (``operators/pushdown.py``)."""
    after_keyed: tuple[Stateless, ...] = ()
    """Filters on the key after the last step, an aggregation or a window per key: Spark's optimizer moves
    them below it, and below the watermark."""
    static: StaticTable | None = None
    """A join with a static table, and filters after it: before the stateful steps of one input, right after
    the join of two."""
    second_output: Stateful | None = None
    """A second output, another stateful step over the same rows as the first (after the stateless steps, the
    watermark and the static table), in the same output mode; in a plan of two inputs, over the left side's rows
    as the join reads them (``l_key``, ``l_ts``, ``l_value``). The pipeline returns both (``{"output": ...,
    "second": ...}``): in Spark, two queries, each with its own watermark (the second, only the left side's)."""

    def describe(self) -> str:
        """The plan in a line of words (the pipeline file's docstring)."""
        parts = [
            f"watermark {format_duration(delay)} on {name}"
            for name, delay in zip(self.inputs, self.delays)
            if delay is not None
        ]
        for name, steps in zip(self.inputs, self.stateless):
            parts += [_describe_stateless(step, name) for step in steps]
        if self.static is not None and len(self.inputs) == 1:
            parts += _describe_static(self.static)
        joined = False  # a step after the join runs on its rows
        for step in self.stateful:
            if step.kind == "join" and self.static is not None and self.static.before_join:
                parts += _describe_static(self.static)
            rows = f" of the joined rows{' (right columns)' if step.side == 'r' else ''}" if joined else ""
            parts.append(_describe_stateful(step, len(self.inputs) > 1) + rows)
            if step.kind == "join":
                parts += (
                    _describe_static(self.static) if self.static is not None and not self.static.before_join else []
                )
                parts += [_describe_stateless(filter_step, "the joined rows") for filter_step in self.after_join]
            joined = joined or step.kind == "join"
        parts += [_describe_stateless(filter_step, "the output") for filter_step in self.after_keyed]
        if self.second_output is not None:
            rows = f" of the {self.inputs[0]} rows" if len(self.inputs) > 1 else ""
            parts.append(f"a second output{rows}: {_describe_stateful(self.second_output)}")
        policy = f", {self.policy} watermark policy" if len(self.inputs) > 1 else ""
        return f"A random pipeline: {'; '.join(parts)} ({self.output_mode} mode{policy})."


def _describe_static(static: StaticTable) -> list[str]:
    on = static.column if static.table_key == static.column else f"{static.column} = {static.table_key}"
    side = " before the join" if static.before_join else ""
    parts = [f"{static.how} join with a static table of keys {', '.join(static.keys)} on {on}{side}"]
    parts += [
        f"the table has keys {', '.join(keys) or 'none'} from batch {batch_id} on" for batch_id, keys in static.changes
    ]
    return parts + [_describe_stateless(filter_step, "the enriched rows") for filter_step in static.filters]


def _describe_stateless(step: Stateless, name: str) -> str:
    if step.column == "region":
        return f"region != {REGIONS[step.number % len(REGIONS)]} on {name}"
    if step.column.endswith("key"):
        return f"{step.column} != {FILTERED_KEYS[step.number % len(FILTERED_KEYS)]} on {name}"
    value = step.column
    return {"filter": f"{value} > {step.number}", "map": f"{value} * {step.number}", "select": "select"}[
        step.kind
    ] + f" on {name}"


def _describe_stateful(step: Stateful, on_each_side: bool = False) -> str:
    per = " per key" if step.keyed else ""
    if step.kind in ("tumbling", "session"):
        return f"{step.kind} {format_duration(step.size)} windows{per}"
    if step.kind == "sliding":
        return f"sliding {format_duration(step.size)} windows every {format_duration(step.slide)}{per}"
    if step.kind == "dedup":
        return f"dedup by {step.dedup}{' on each side' if on_each_side else ''}"
    if step.kind == "join":
        bounds = "" if step.lower is None and step.upper is None else f" within [{step.lower}, {step.upper}] ms"
        return f"{step.how} join on key{' (<=>)' if step.null_safe else ''}{bounds}"
    if step.kind == "process":
        if on_each_side:  # before a join: one side's rows
            side = {"l": "left", "r": "right"}[step.side]
            names = ", ".join(f"{step.side}_{column}" for column in ("key", "ts")) + f" and {step.side}_value"
            return f"process on {side}: rows per key so far and the batch's latest time, as {names}"
        if step.processor == "quiet":
            return f"process: rows per key until quiet for {format_duration(step.size)} (event-time timer)"
        if step.processor == "latest":
            return "process: rows per key so far, with the batch's latest time as the output event time"
        return "process: rows per key so far"
    return f"{step.kind}{per}"


# -- drawing a plan -----------------------------------------------------------------------------------------------

DELAYS = (0, 1_000, 2_000, 5_000, 10_000)
SIZES = (1_000, 2_000, 5_000, 10_000)
GAPS = (0, 500, 1_000, 2_000)
"""The quiet-key counter's gaps: short, so that random events (a few keys, seconds apart) leave keys quiet."""


def random_plan(rng: random.Random, kinds: tuple[str, ...] | None = None) -> RandomPlan:
    """A random plan that Spark accepts (``kinds``: the stateful kinds to draw from; all by default).

    >>> plans = [random_plan(random.Random(seed)) for seed in range(200)]
    >>> sorted({plan.stateful[0].kind for plan in plans})
    ['aggregate', 'dedup', 'join', 'process', 'session', 'sliding', 'tumbling']
    >>> sorted({len(plan.stateful) for plan in plans}), sorted({len(plan.inputs) for plan in plans})
    ([1, 2], [1, 2])
    >>> sorted({plan.stateful[-1].kind for plan in plans if plan.stateful[0].kind == "join"})  # a window after
    ['join', 'session', 'sliding']
    """
    kinds = kinds or STATEFUL_KINDS
    first = rng.choice(kinds)
    if first == "join":
        return _join_plan(rng)
    step = _stateful(rng, first)
    chain = [step]
    if first == "dedup" and rng.random() < 0.5:  # dedup then an aggregate: Spark chains them in every mode
        chain.append(_stateful(rng, rng.choice(("aggregate", "tumbling", "sliding", "session"))))
    modes = modes_for(chain)
    mode = rng.choice(modes)
    needs_watermark = mode == "append" and any(s.kind in WINDOWED for s in chain)
    needs_watermark = needs_watermark or any(s.kind == "dedup" and s.dedup == "within" for s in chain)
    needs_watermark = needs_watermark or any(s.kind == "process" and s.processor == "quiet" for s in chain)
    delay = rng.choice(DELAYS) if needs_watermark or rng.random() < 0.6 else None
    plan = RandomPlan(
        stateful=tuple(chain),
        delays=(delay,),
        stateless=(_stateless(rng),),
        output_mode=mode,
    )
    last = chain[-1]
    if last.keyed and last.kind in ("aggregate", *WINDOWED) and rng.random() < 0.3:  # drawn last, as after_join
        plan = attrs.evolve(plan, after_keyed=(Stateless("filter", rng.randint(0, 2), "key"),))
    if rng.random() < STATIC_SHARE:  # drawn after everything else, so that earlier seeds keep their plans
        plan = attrs.evolve(plan, static=random_static_table(rng, ("key",), ("value",)))
    if first == "process":  # drawn last too
        plan = _after_process(rng, plan)
    return _second_output(rng, _changing_table(rng, plan))


SECOND_OUTPUT = 0.2
"""The share of plans that draw a second output (fewer have one: a step the output mode or the watermark does
not allow is not drawn again)."""


def _second_output(rng: random.Random, plan: RandomPlan) -> RandomPlan:
    """Maybe a second output (drawn last, so that a seed keeps the plan it drew before): an aggregation, a
    window or a deduplication over the rows the first output's steps read (in a plan of two inputs, the left
    side's), allowed in the plan's output mode (a window in append mode, or a deduplication within the
    watermark, only under a watermark: the first input's).

    >>> plans = [random_plan(random.Random(seed)) for seed in range(300)]
    >>> seconds = [plan for plan in plans if plan.second_output is not None]
    >>> sorted({plan.second_output.kind for plan in seconds}), sorted({len(plan.inputs) for plan in seconds})
    (['aggregate', 'dedup', 'session', 'sliding', 'tumbling'], [1, 2])
    """
    if rng.random() >= SECOND_OUTPUT:
        return plan
    step = _stateful(rng, rng.choice(("aggregate", "tumbling", "sliding", "session", "dedup")))
    watermarked = plan.delays[0] is not None
    if plan.output_mode not in modes_for([step]) or (step.dedup == "within" and not watermarked):
        return plan
    if plan.output_mode == "append" and step.kind in WINDOWED and not watermarked:
        return plan
    return attrs.evolve(plan, second_output=step)


AFTER_PROCESS = 0.4
"""The share of process plans whose processor is :class:`KeyLatest` (``tools/random_processors.py``), of which half
have a window over its output event time after it."""


def _after_process(rng: random.Random, plan: RandomPlan) -> RandomPlan:
    """A process plan, maybe made to run :class:`KeyLatest` (event-time mode, so a watermark) with a window
    over its ``latest`` column after it (Spark chains stateful steps in append mode only); maybe a filter
    on the count after the last step; and maybe a deduplication after a lone ``KeyLatest``.

    >>> plans = [random_plan(random.Random(seed), ("process",)) for seed in range(60)]
    >>> sorted({tuple(step.kind for step in plan.stateful) for plan in plans})  # doctest: +NORMALIZE_WHITESPACE
    [('process',), ('process', 'dedup'), ('process', 'session'), ('process', 'sliding'), ('process', 'tumbling')]
    >>> {plan.output_mode for plan in plans if len(plan.stateful) > 1}, any(plan.after_keyed for plan in plans)
    ({'append'}, True)
    """
    if rng.random() < AFTER_PROCESS:
        latest = attrs.evolve(plan.stateful[0], processor="latest")
        delay = plan.delays[0] if plan.delays[0] is not None else rng.choice(DELAYS)
        chain: tuple[Stateful, ...] = (latest,)
        mode = plan.output_mode
        if rng.random() < 0.5:
            chain, mode = (latest, _stateful(rng, rng.choice(WINDOWED))), "append"
        plan = attrs.evolve(plan, stateful=chain, delays=(delay,), output_mode=mode)
    if rng.random() < 0.3 and len(plan.stateful) == 1:
        plan = attrs.evolve(plan, after_keyed=(Stateless("filter", rng.randint(0, 2), "count"),))
    if plan.stateful[-1].processor == "latest" and len(plan.stateful) == 1 and rng.random() < DEDUP_AFTER_PROCESS:
        # drawn last: a deduplication of KeyLatest's rows (by key, by the whole row, or by key within the
        # watermark, over its output event time), chained in append mode
        dedup = Stateful("dedup", dedup=rng.choice(("key", "row", "within")))
        plan = attrs.evolve(plan, stateful=(plan.stateful[0], dedup), output_mode="append")
    return plan


DEDUP_AFTER_PROCESS = 0.5
"""The share of the plans running :class:`KeyLatest` alone that deduplicate its rows after it."""


STATIC_SHARE = 0.25
"""The share of plans with a join with a static table."""


def random_static_table(rng: random.Random, keys: tuple[str, ...], values: tuple[str, ...]) -> StaticTable:
    """A join with a static table on one of the stream's ``keys`` columns, inner or left outer, then up to two
    filters, each on one of the stream's ``values`` columns, the key it joins on, the table's key or the region.

    >>> random_static_table(random.Random(0), ("key",), ("value",)).how
    'left_outer'
    """
    how = rng.choice(("inner", "left_outer"))
    column = rng.choice(keys)
    table_key = rng.choice((column, "t_key"))
    table_keys = tuple(sorted(rng.sample(FILTERED_KEYS, rng.randint(1, len(FILTERED_KEYS)))))
    columns = (*values, column, "region") + (("t_key",) if table_key == "t_key" else ())
    filters = tuple(
        Stateless("filter", rng.randint(0, 5), rng.choice(columns)) for _ in range(rng.choice((0, 1, 1, 2)))
    )
    return StaticTable(how, column, table_key, table_keys, filters)


STATEFUL_KINDS = ("aggregate", "tumbling", "sliding", "session", "dedup", "join", "process")
WINDOWED = ("tumbling", "sliding", "session")
AFTER_JOIN = WINDOWED
"""The steps a plan may run on a join's rows: windows over one side's event time (``l_ts``, per ``l_key`` or
global, of ``l_value``; or the right side's ``r_...`` columns, except after a left semi join, which emits left
rows only), in append mode (Spark's ``MultiStatefulOperatorsSuite`` chains a time-interval join and a window the
same way). Each step then runs with the join's output watermark (``models/watermark_propagation.py``). A window
of one side's columns leaves the other side's event time unread, so Spark prunes it, and that side drops no
late row (``core/pruning.py``). A window of ``max`` and ``min`` alone over the side an outer join preserves
makes Spark's optimizer remove the join (``core/outer_join_elimination.py``), and ministream with it."""


def valid_chain(chain, inputs: int) -> bool:
    """Whether a chain of stateful steps is one the generator draws: with two inputs, a join, before it a
    dedup (on each side) or ``KeyLatest`` (on one side), and after it only a step of :data:`AFTER_JOIN`
    (over the right side, not after a left semi join); with one input, no join.

    >>> valid_chain([Stateful("join"), Stateful("tumbling")], 2), valid_chain([Stateful("tumbling")], 2)
    (True, False)
    >>> valid_chain([Stateful("join"), Stateful("dedup")], 2), valid_chain([Stateful("dedup")], 1)
    (False, True)
    >>> valid_chain([Stateful("join", how="left_semi"), Stateful("tumbling", side="r")], 2)
    False
    >>> valid_chain([Stateful("process", processor="latest", side="r"), Stateful("join")], 2)  # on the right
    True
    """
    kinds = [step.kind for step in chain]
    if "join" not in kinds:
        return inputs == 1
    join = kinds.index("join")
    before, after = chain[:join], chain[join + 1 :]
    if chain[join].how == "left_semi" and any(step.side == "r" for step in after):
        return False
    key_latest = before and before[0].kind == "process" and before[0].processor == "latest"
    if before and (len(before) > 1 or not (before[0].kind == "dedup" or key_latest)):
        return False
    return inputs == 2 and all(step.kind in AFTER_JOIN for step in after)


def _stateful(rng: random.Random, kind: str) -> Stateful:
    aggregates = tuple(sorted(rng.sample(sorted(AGGREGATES), rng.randint(1, 2))))
    keyed = kind == "session" or rng.random() < 0.8
    if kind in ("tumbling", "session"):
        return Stateful(kind, keyed, size=rng.choice(SIZES), aggregates=aggregates)
    if kind == "sliding":
        size = rng.choice(SIZES[1:])
        slide = rng.choice([s for s in SIZES if s < size] + [size // 2, size // 5 or 1])
        return Stateful(kind, keyed, size=size, slide=slide, aggregates=aggregates)
    if kind == "dedup":
        return Stateful(kind, True, dedup=rng.choice(("key", "key_ts", "row", "within")))
    if kind == "process":
        return Stateful(kind, True, size=rng.choice(GAPS), processor=rng.choice(("counter", "quiet")))
    return Stateful("aggregate", keyed, aggregates=aggregates)


def modes_for(chain) -> list[str]:
    """The output modes Spark accepts for a chain of stateful steps.

    >>> modes_for([Stateful("dedup"), Stateful("session", size=5_000)])
    ['append', 'complete']
    """
    if any(step.kind == "join" for step in chain):
        return ["append"]
    kinds = {step.kind for step in chain}
    if "process" in kinds:  # transformWithState runs in append or update mode; chained, in append mode only
        return ["append", "update"] if len(chain) == 1 else ["append"]
    if kinds <= {"dedup"}:
        return ["append", "update"]
    if "session" in kinds:
        return ["append", "complete"]
    if "aggregate" in kinds:
        return ["update", "complete"]
    return ["append", "update", "complete"]


def _stateless(rng: random.Random) -> tuple[Stateless, ...]:
    steps = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        kind = rng.choice(("filter", "map", "select"))
        steps.append(Stateless(kind, rng.randint(2, 6) if kind == "filter" else rng.randint(2, 3)))
    return tuple(steps)


def _join_plan(rng: random.Random) -> RandomPlan:
    how = rng.choice(JOIN_TYPES)
    bounded = how != "inner" or rng.random() < 0.7
    lower = upper = None
    if bounded:
        lower = rng.choice((-5_000, -2_000, -1_000, 0))
        upper = rng.choice((0, 1_000, 2_000, 5_000))
    join = Stateful("join", how=how, lower=lower, upper=upper)
    chain: tuple[Stateful, ...] = (join,)
    draw = rng.random()
    if draw < 0.3:  # each side deduplicated, then joined: two chained stateful steps per side
        chain = (Stateful("dedup", dedup=rng.choice(("key", "key_ts", "row", "within"))), join)
    elif draw < 0.6:  # joined, then windowed over the joined rows' left event time (a watermark on each side)
        window = _stateful(rng, rng.choice(AFTER_JOIN))
        chain = (join, window)
    if how == "inner" and not bounded and len(chain) == 1:
        delays = (rng.choice((None, *DELAYS)), rng.choice((None, *DELAYS)))
    else:
        delays = (rng.choice(DELAYS), rng.choice(DELAYS))
    stateless, policy = (_stateless(rng), _stateless(rng)), rng.choice(("min", "max"))
    if len(chain) == 2 and chain[1].kind in AFTER_JOIN:
        # drawn last, so that a plan over the left side is the one drawn before sides were drawn
        side = "r" if how != "left_semi" and rng.random() < 0.4 else "l"
        chain = (join, attrs.evolve(chain[1], side=side))
    plan = RandomPlan(
        stateful=chain,
        inputs=("left", "right"),
        delays=delays,
        stateless=stateless,
        output_mode="append",
        policy=policy,
        after_join=_after_join(rng, how),  # drawn after everything else, for the same reason
    )
    if rng.random() < STATIC_SHARE:  # and the static table after it
        sides = ("l",) if how == "left_semi" else ("l", "r")
        static = random_static_table(rng, tuple(f"{s}_key" for s in sides), tuple(f"{s}_value" for s in sides))
        plan = attrs.evolve(plan, static=static)
    if plan.static is not None and rng.random() < BEFORE_JOIN:  # drawn last, as the changes below
        plan = attrs.evolve(plan, static=_before_join(plan.static))
    plan = _changing_table(rng, plan)
    if chain[0].kind != "dedup" and rng.random() < PROCESS_BEFORE_JOIN:  # drawn last too
        delays = (plan.delays[0] if plan.delays[0] is not None else rng.choice(DELAYS), plan.delays[1])
        plan = attrs.evolve(plan, stateful=(Stateful("process", processor="latest"), *chain), delays=delays)
        if rng.random() < PROCESS_ON_RIGHT:  # drawn after the left side's watermark, which it then keeps
            delays = (plan.delays[0], plan.delays[1] if plan.delays[1] is not None else rng.choice(DELAYS))
            process = Stateful("process", processor="latest", side="r")
            plan = attrs.evolve(plan, stateful=(process, *chain), delays=delays)
    plan = _second_output(rng, plan)  # drawn last too
    if rng.random() < NULL_SAFE:  # drawn after everything else: the plans drawn before keep their steps
        plan = attrs.evolve(
            plan, stateful=tuple(attrs.evolve(s, null_safe=True) if s.kind == "join" else s for s in plan.stateful)
        )
    return plan


NULL_SAFE = 0.3
"""The share of join plans whose keys are compared with ``<=>`` (``null_safe=True``): the scripts' null keys
(``pipeline_fuzz.NULL_KEYS``) then meet each other, where with ``=`` Spark drops them before the join on each
side it does not keep."""

PROCESS_BEFORE_JOIN = 0.2
"""The share of join plans (without a dedup before the join) with one side running :class:`KeyLatest` before
it: the join reads its rows, renamed ``l_key``, ``l_ts`` (its output event time, ``latest``) and ``l_value``, or
``r_key``, ``r_ts`` and ``r_value`` on the right side."""

PROCESS_ON_RIGHT = 0.5
"""The share of those plans whose :class:`KeyLatest` runs on the right side, not the left."""


BEFORE_JOIN = 0.5
"""The share of the static tables of two-input plans joined to one side before the stream-stream join (Spark
runs the stream-static join in that side's part of the query), not to the joined rows after it."""


def _before_join(static: StaticTable) -> StaticTable:
    """``static`` joined to the side of its key column before the stream-stream join: its filters read that
    side's columns, so a filter on the other side's value reads this side's.

    >>> _before_join(StaticTable(column="r_key", filters=(Stateless("filter", 3, "l_value"),))).filters
    (Stateless(kind='filter', number=3, column='r_value'),)
    """
    side = static.column[:2]  # "l_" or "r_"
    filters = tuple(
        attrs.evolve(step, column=side + "value") if step.column.endswith("_value") else step for step in static.filters
    )
    return attrs.evolve(static, before_join=True, filters=filters)


CHANGING_SHARE = 0.3
"""The share of static tables that change between batches (from batch 1 or 2 on, their keys drawn again)."""


def _changing_table(rng: random.Random, plan: RandomPlan) -> RandomPlan:
    """Maybe make the plan's static table change once: from batch 1 or 2 on it has other keys (maybe none).
    Drawn after everything else, so that a seed keeps the plan it drew before tables changed.

    >>> plans = [random_plan(random.Random(seed)) for seed in range(200)]
    >>> sorted({batch_id for plan in plans if plan.static for batch_id, _ in plan.static.changes})
    [1, 2]
    """
    if plan.static is None or rng.random() >= CHANGING_SHARE:
        return plan
    batch_id = rng.choice((1, 2))
    keys = tuple(sorted(rng.sample(FILTERED_KEYS, rng.randint(0, len(FILTERED_KEYS)))))
    return attrs.evolve(plan, static=attrs.evolve(plan.static, changes=((batch_id, keys),)))


def _after_join(rng: random.Random, how: str) -> tuple[Stateless, ...]:
    """Filters on the joined rows, on one side's value or key (a left semi join's rows have the left side's
    columns only)."""
    columns = ("l_value", "l_key") if how == "left_semi" else ("l_value", "r_value", "l_key", "r_key")
    steps = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        steps.append(Stateless("filter", rng.randint(1, 6), rng.choice(columns)))
    return tuple(steps)


# -- the plan as a pipeline file ----------------------------------------------------------------------------------


def pipeline_source(plan: RandomPlan) -> str:
    """The pipeline file of ``plan``: Python that ``lessons/pipeline_file.py`` loads.

    >>> print(pipeline_source(RandomPlan(stateful=(Stateful("aggregate", aggregates=("count",)),),
    ...                                  output_mode="update")))
    \"\"\"A random pipeline: aggregate per key (update mode).\"\"\"
    <BLANKLINE>
    from ministream import Count, Max, Min, Session, Sliding, Sum, TimeRange, Tumbling
    <BLANKLINE>
    FIELDS = {"key": str, "value": float}
    OUTPUT_MODE = "update"
    <BLANKLINE>
    <BLANKLINE>
    def pipeline(events):
        return events.key_by("key").aggregate("aggregate", count=Count())
    <BLANKLINE>
    """
    lines = [
        f'"""{plan.describe()}"""',
        "",
        "from ministream import Count, Max, Min, Session, Sliding, Sum, TimeRange, Tumbling",
    ]
    if any(step.kind == "process" for step in plan.stateful):
        lines.append("from ministream.tools.random_processors import KeyCounter, KeyLatest, QuietKeyCounter")
    lines += ["", 'FIELDS = {"key": str, "value": float}']
    if len(plan.inputs) > 1:
        lines.append(f"INPUTS = {plan.inputs!r}")
        lines.append(f'WATERMARK_POLICY = "{plan.policy}"')
    lines.append(f'OUTPUT_MODE = "{plan.output_mode}"')
    lines += ["", "", f"def pipeline({', '.join(plan.inputs)}):"]
    body: list[str] = []
    join = any(step.kind == "join" for step in plan.stateful)
    for name, delay, steps in zip(plan.inputs, plan.delays, plan.stateless):
        prefix = f"{name[0]}_" if join else ""  # a join's sides have their own column names (l_key, r_key...)
        columns = ", ".join(f'{prefix}{column}="{prefix}{column}"' for column in ("key", "ts", "value"))
        # KeyLatest before the join, on its side: its input keeps the source's names, its rows are renamed
        processed = join and plan.stateful[0].kind == "process" and prefix == f"{plan.stateful[0].side}_"
        if join and not processed:
            renames = ", ".join(f'{prefix}{column}="{column}"' for column in ("key", "ts", "value"))
            body.append(f'{name} = {name}.select("{name}_columns", {renames})')
        named = "" if processed else prefix  # the prefix of the columns the stateless steps read
        stateless = [
            f"{name} = {name}.{_stateless_call(step, f'{name}_{step.kind}_{i}', named)}" for i, step in enumerate(steps)
        ]
        # maps before the watermark: a map rebuilds each row, ts included, in a UDF whose column carries no mark
        body += [line for line, step in zip(stateless, steps) if step.kind == "map"]
        if delay is not None:
            body.append(f'{name} = {name}.with_watermark("{name}_watermark", "{named}ts", "{format_duration(delay)}")')
        body += [line for line, step in zip(stateless, steps) if step.kind != "map"]
        if processed:  # its output event time, latest, is the side's event time in the join (l_ts or r_ts)
            body.append(f"{name} = {name}.{_stateful_call(plan.stateful[0], 'process', plan)}")
            renames = f'{prefix}key="key", {prefix}ts="latest", {prefix}value="value"'
            body.append(f'{name} = {name}.select("{name}_columns", {renames})')
        elif join and any(step.kind == "map" for step in steps):  # a join must know each side's columns
            body.append(f'{name} = {name}.select("{name}_known_columns", {columns})')
        if join and plan.stateful[0].kind == "dedup":  # a join's dedup runs on each side, on its own columns
            body.append(f"{name} = {name}.{_dedup_call(plan.stateful[0], f'{name}_dedup', prefix)}")
        if join and plan.static is not None and plan.static.before_join and plan.static.column.startswith(prefix):
            body.append(f"{name} = {name}.{_static_call(plan.static)}")  # one side's rows, before the join
    stream = plan.inputs[0]
    if plan.static is not None and not join:
        body.append(f"{stream} = {stream}.{_static_call(plan.static)}")
    if plan.second_output is not None:  # over the same rows as the first output's steps (the join's left side)
        second = plan.second_output
        call = _stateful_call(second, f"second_{second.kind}", plan, prefix="l_" if join else "")
        body.append(f"second = {stream}.{call}")
    static_after = plan.static if plan.static is not None and not plan.static.before_join else None
    joined = False  # a step after the join reads its rows: one side's columns, l_key, l_ts and l_value or r_...
    for index, step in enumerate(plan.stateful):
        if join and step.kind in ("dedup", "process"):  # written on the sides, above
            continue
        name = f"{step.kind}" if index == 0 else f"{step.kind}_{index}"
        after = plan.stateful[index - 1] if index else None
        time = "latest" if after is not None and after.kind == "process" else None  # KeyLatest's output event time
        call = _stateful_call(step, name, plan, prefix=f"{step.side}_" if joined else "", column=time)
        joined = joined or step.kind == "join"
        if step.kind == "join" and (plan.after_join or static_after is not None):
            body.append(f"{stream} = {stream}.{call}")
            calls = [_static_call(static_after)] if static_after is not None else []
            calls += [
                _column_filter_call(filter_step, f"joined_filter_{i}") for i, filter_step in enumerate(plan.after_join)
            ]
            call = ".".join(calls)
            if index < len(plan.stateful) - 1:
                body.append(f"{stream} = {stream}.{call}")
                continue
        if index == len(plan.stateful) - 1:
            filters = "".join(
                f".{_column_filter_call(key_filter, f'key_filter_{i}')}"
                for i, key_filter in enumerate(plan.after_keyed)
            )
            if plan.second_output is not None:  # two outputs: two sinks, and two queries in Spark
                body.append(f'return {{"output": {stream}.{call}{filters}, "second": second}}')
            else:
                body.append(f"return {stream}.{call}{filters}")
        else:
            body.append(f"{stream} = {stream}.{call}")
    lines += [f"    {line}" for line in body]
    return "\n".join(lines) + "\n"


def _stateless_call(step: Stateless, name: str, prefix: str = "") -> str:
    value = f'row["{prefix}value"]'
    if step.kind == "filter":
        return f'filter("{name}", lambda row: {value} > {step.number}, columns=["{prefix}value"])'
    if step.kind == "map":
        return f'map("{name}", lambda row: {{**row, "{prefix}value": {value} * {step.number}}})'
    columns = ", ".join(f'{prefix}{column}="{prefix}{column}"' for column in ("key", "ts", "value"))
    return f'select("{name}", {columns})'


def _static_call(static: StaticTable) -> str:
    """The join with the static table, then the filters after it."""
    on = f'{{"{static.column}": "{static.table_key}"}}'
    changes = {batch_id: static.rows(keys) for batch_id, keys in static.changes}
    changed = f", changes={changes!r}" if changes else ""
    call = f'join_static("regions", {static.rows()!r}, on={on}, how="{static.how}"{changed})'
    filters = [_column_filter_call(step, f"enriched_filter_{i}") for i, step in enumerate(static.filters)]
    return ".".join([call, *filters])


def _column_filter_call(step: Stateless, name: str) -> str:
    """A filter on one named column, after a join or an aggregation: on a key, ``!=`` one key; on the region of
    a static table, ``!=`` one region; on a value, ``>`` a number, a null value (the padding of an outer join)
    counting as 0."""
    column = f'row["{step.column}"]'
    if step.column == "region":
        condition = f'{column} != "{REGIONS[step.number % len(REGIONS)]}"'
    elif step.column.endswith("key"):
        condition = f'{column} != "{FILTERED_KEYS[step.number % len(FILTERED_KEYS)]}"'
    else:
        condition = f"({column} or 0) > {step.number}"
    return f'filter("{name}", lambda row: {condition}, columns=["{step.column}"])'


def _dedup_call(step: Stateful, name: str, prefix: str = "") -> str:
    key, ts = f'"{prefix}key"', f'"{prefix}ts"'
    columns = {"key": key, "key_ts": f"[{key}, {ts}]", "row": "", "within": f"{key}, within_watermark=True"}
    arguments = f'"{name}", {columns[step.dedup]}' if columns[step.dedup] else f'"{name}"'
    return f"drop_duplicates({arguments})"


def _stateful_call(step: Stateful, name: str, plan: RandomPlan, prefix: str = "", column: str | None = None) -> str:
    """The call of one stateful step; ``prefix``: its input's column names start with it (``l_`` or ``r_``
    after a join, whose windows then name their event-time column, as the join's rows carry two); ``column``:
    the event-time column a window names (``latest`` after a process step)."""
    value = f"{prefix}value"
    aggregates = ", ".join(f"{aggregate}={AGGREGATES[aggregate].format(value=value)}" for aggregate in step.aggregates)
    key = f'key_by("{prefix}key")' if step.keyed else "key_by([])"
    if step.kind == "aggregate":
        return f'{key}.aggregate("{name}", {aggregates})'
    if step.kind in WINDOWED:
        if step.kind == "tumbling":
            assigner = f'Tumbling("{format_duration(step.size)}")'
        elif step.kind == "sliding":
            assigner = f'Sliding("{format_duration(step.size)}", "{format_duration(step.slide)}")'
        else:
            assigner = f'Session("{format_duration(step.size)}")'
        time = f', column="{column or prefix + "ts"}"' if prefix or column else ""
        return f'{key}.window("{name}", {assigner}{time}, {aggregates})'
    if step.kind == "dedup":
        return _dedup_call(step, name, prefix)
    if step.kind == "join":
        between = ""
        if step.lower is not None or step.upper is not None:
            between = f', between=TimeRange("l_ts", "r_ts", lower={step.lower}, upper={step.upper})'
        null_safe = ", null_safe=True" if step.null_safe else ""
        return f'key_by("l_key").join("{name}", right.key_by("r_key"), how="{step.how}"{between}{null_safe})'
    if step.kind == "process":
        if step.processor == "quiet":
            return f'key_by("key").process("{name}", QuietKeyCounter({step.size}), time_mode="event_time")'
        if step.processor == "latest":
            return f'key_by("key").process("{name}", KeyLatest(), time_mode="event_time", event_time_column="latest")'
        return f'key_by("key").process("{name}", KeyCounter())'
    raise ValueError(f"no such stateful kind: {step.kind}")


def plan_lesson(plan: RandomPlan, name: str) -> Lesson:
    """The lesson of ``plan``'s pipeline file, loaded from its text as if from ``NAME.py``."""
    return pipeline_lesson(pipeline_source(plan), f"{name}.py")
