"""Row accounting: where every row of a run went, and a check that nothing is unexplained.

A streaming engine that loses rows without a word is hard to trust and harder to learn from. So every run
keeps an account, at two levels:

- **the input**: the lines read from an events file = the rows that entered the pipeline + the lines
  dead-lettered (``core/events.py``), by reason;
- **each step**: the rows in = the rows it kept + the rows it found late + the rows it dropped on purpose.
  What "kept" means depends on the step: *passed on* (a map, a filter, a deduplication: each row out is a
  row in), *aggregated*, *stored in state* (a join), *handed to the processor*, *written to the sink*.
  *Late* rows are those the watermark kept out (an operator's ``late_rows``, ``time/lateness.py``), by rule;
  *dropped* rows are those a step drops by design (``ctx.drop``: filtered out, a duplicate, no event time).

The counts come from three places. The physical graph counts, in its :class:`RowCounts`, the rows that reach
each subtask and the rows each subtask sends on, sources included (``core/physical.py``: a subtask counts a
chunk of rows when it takes it from a channel, its output when it sends one). Operators report what they kept and dropped (``ctx.count``, ``ctx.drop``) and
keep their late rows. And for a step whose operator does not count what it kept (the running and windowed
aggregates), the kept rows are *derived*, as the rows neither late nor dropped, and marked so.

Then the account checks three equations, and names any that fails: for each step, rows in = the sum of its
outcomes; for each step, the rows it received = the rows its inputs sent it; and, with an events file,
lines read = rows entered + lines dead-lettered.

>>> from ministream.core.plan import Dataflow
>>> from ministream.models.microbatch import run_microbatch
>>> from ministream.core.sinks import CollectingSink
>>> from ministream.core.sources import ScriptedSource
>>> flow = Dataflow("payments")
>>> payments = flow.source("payments", ScriptedSource([
...     [{"id": "p1", "amount": 5}, {"id": "p1", "amount": 5}, {"id": "p2", "amount": 0}],
...     [{"id": "p3", "amount": 2}]]))
>>> payments.filter("paid", lambda row: row["amount"] > 0).drop_duplicates("once", ["id"]).sink(
...     "output", CollectingSink())
>>> print(run_microbatch(flow).accounting().format())
4 rows entered the pipeline
  payments: 4 rows delivered by the source
  paid: 4 rows in: 3 passed on, 1 dropped (filtered out)
  once: 3 rows in: 2 passed on, 1 dropped (duplicate)
  output: 2 rows in: 2 written to the sink
every row is accounted for

Spark reports a part of this in its progress reports (``numInputRows``, ``numRowsDroppedByWatermark`` per
stateful operator); Flink counts ``numRecordsIn`` and ``numRecordsOut`` per operator and
``numLateRecordsDropped`` per window operator. Neither adds them up for you.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

PASSES_ROWS_ON = ("map", "select", "filter", "watermark", "drop_duplicates", "drop_duplicates_within")
"""Step kinds whose every output row is one of their input rows, passed on: the rows out are the rows kept."""

DERIVED_OUTCOME = {"aggregate": "aggregated", "window_aggregate": "aggregated"}
"""What a step of this kind does with a row it keeps, when its operator does not count it (the outcome is
then derived: the rows in minus the late and dropped ones)."""


class RowCounts:
    """The rows each step received and emitted during a run, all subtasks together.

    State: ``self.rows_in``: ``{step: rows its operator received}``; ``self.rows_out``:
    ``{(step, output): rows it emitted}``, where ``output`` is ``None`` for the main output or a side
    output's name (a source's rows out are the rows it delivered).
    """

    def __init__(self):
        self.rows_in: dict[str, int] = {}
        self.rows_out: dict[tuple[str, str | None], int] = {}

    def received(self, step: str, rows: int) -> None:
        self.rows_in[step] = self.rows_in.get(step, 0) + rows

    def sent(self, step: str, rows: int, output: str | None = None) -> None:
        self.rows_out[(step, output)] = self.rows_out.get((step, output), 0) + rows


@attrs.frozen
class StepAccount:
    """Where the rows that reached one step went.

    ``outcomes`` is ``{outcome: rows}``: what the step kept (``"passed on"``, ``"aggregated"``...), ``"late"``,
    and ``"dropped: <reason>"``; ``late_rules`` splits the late rows by rule (the times left out);
    ``derived`` names the outcome the step did not count itself, if any (the rows in minus the others).
    ``sent_to_it`` is what its input steps sent it, ``rows_out`` what it emitted (``{output: rows}``, ``None``
    for the main output); ``partly_late`` the rows late for some of their windows only (sliding windows),
    which counted in the others.
    """

    step: str
    kind: str
    rows_in: int
    outcomes: dict[str, int]
    late_rules: dict[str, int] = attrs.field(factory=dict)
    derived: str | None = None
    sent_to_it: int | None = None
    rows_out: dict = attrs.field(factory=dict)
    partly_late: int = 0

    @property
    def unexplained(self) -> int:
        """Rows in that no outcome accounts for (negative: outcomes for more rows than came in)."""
        return self.rows_in - sum(self.outcomes.values())

    def problems(self) -> list[str]:
        """The equations of this step that do not hold, in words."""
        found = []
        if self.unexplained:
            found.append(
                f"step {self.step!r}: {self.rows_in} rows in, but its outcomes add up to {sum(self.outcomes.values())}"
            )
        if self.sent_to_it is not None and self.sent_to_it != self.rows_in:
            found.append(f"step {self.step!r}: its inputs sent {self.sent_to_it} rows, it received {self.rows_in}")
        return found

    def format(self) -> str:
        """One line: ``per_window: 10 rows in: 8 aggregated*, 2 late (end <= watermark ...)``."""
        if self.kind == "source":
            return f"{self.step}: {_rows(self.rows_in)} delivered by the source"
        parts = []
        for outcome, rows in self.outcomes.items():
            if outcome == "late":
                rules = "; ".join(
                    f"{n} {rule}" if len(self.late_rules) > 1 else rule for rule, n in self.late_rules.items()
                )
                parts.append(f"{rows} late ({rules})")
            elif outcome.startswith("dropped: "):
                parts.append(f"{rows} dropped ({outcome.removeprefix('dropped: ')})")
            else:
                parts.append(f"{rows} {outcome}{'*' if outcome == self.derived else ''}")
        text = f"{self.step}: {_rows(self.rows_in)} in: {', '.join(parts) or 'nothing'}"
        if self.partly_late:
            text += (
                f" ({self.partly_late} of them late for some of their windows, counted in the others: "
                "see run.late_rows())"
            )
        if self.kind not in PASSES_ROWS_ON and self.kind != "sink":
            text += f"; {_rows(self.rows_out.get(None, 0))} out"
        for output, rows in self.rows_out.items():
            if output is not None:
                text += f"; {_rows(rows)} to side output {output!r}"
        return text


@attrs.frozen
class Accounting:
    """The account of a run: what came in, and where it went, step by step (see the module's docstring).

    ``read`` is the number of lines read from the events file (``None`` when the run had no file), and
    ``dead_letters`` ``{reason: lines}`` those set aside; ``entered`` the rows the sources delivered.
    """

    entered: int
    steps: list[StepAccount]
    read: int | None = None
    events_file: str | None = None
    dead_letters: dict[str, int] = attrs.field(factory=dict)

    def step(self, name: str) -> StepAccount:
        """The account of the step called ``name``."""
        for account in self.steps:
            if account.step == name:
                return account
        raise KeyError(f"no step named {name!r} in the accounting")

    def problems(self) -> list[str]:
        """Every equation that does not hold, in words (empty: every row is accounted for)."""
        found = []
        dead = sum(self.dead_letters.values())
        if self.read is not None and self.read != self.entered + dead:
            found.append(
                f"{self.read} lines read from {self.events_file}, but {self.entered} rows entered the "
                f"pipeline and {dead} were dead-lettered"
            )
        for account in self.steps:
            found += account.problems()
        return found

    @property
    def balanced(self) -> bool:
        """Whether every row is accounted for."""
        return not self.problems()

    def format(self) -> str:
        """The account as text, one line per step, ending with the verdict."""
        if self.read is None:
            lines = [f"{_rows(self.entered)} entered the pipeline"]
        else:
            dead = sum(self.dead_letters.values())
            reasons = ", ".join(f"{n} {reason}" for reason, n in self.dead_letters.items())
            lines = [
                f"read {self.read} line{'s' if self.read != 1 else ''} of {self.events_file}: {self.entered} "
                f"entered the pipeline, {dead} dead-lettered" + (f" ({reasons})" if reasons else "")
            ]
        lines += [f"  {account.format()}" for account in self.steps]
        if any(account.derived for account in self.steps):
            lines.append("  * derived, not counted by the step: its rows in minus the late and dropped ones")
        problems = self.problems()
        lines += [f"UNACCOUNTED: {problem}" for problem in problems] or ["every row is accounted for"]
        return "\n".join(lines)


def account(run, events_file=None, dead_letters=None) -> Accounting:
    """The accounting of a run (``Run.accounting()`` calls it).

    Args:
        run: what ``run_microbatch`` or ``run_continuous`` returned.
        events_file: the events file the script was read from, if any: its non-empty lines are counted.
        dead_letters: the ``events.DeadLetter`` list the file's bad lines were set aside in.
    """
    counts: RowCounts = run.row_counts
    flow = run.graph.flow
    steps = []
    for step in flow.steps:
        if step.kind == "source":
            delivered = counts.rows_out.get((step.name, None), 0)
            steps.append(
                StepAccount(step.name, "source", delivered, {"delivered": delivered}, rows_out={None: delivered})
            )
        else:
            steps.append(_step_account(step, run.graph.operators(step.name), counts))
    read: int | None = None
    letters: dict[str, int] = {}  # {reason: dead-lettered lines}
    if events_file is not None:
        with open(events_file, encoding="utf-8-sig") as lines:
            read = sum(1 for line in lines if line.strip())
        for letter in dead_letters or []:
            reason = dead_letter_reason(letter.reason)
            letters[reason] = letters.get(reason, 0) + 1
    entered = sum(account.rows_in for account in steps if account.kind == "source")
    return Accounting(entered, steps, read, None if events_file is None else Path(events_file).name, letters or {})


def _step_account(step, operators: list, counts: RowCounts) -> StepAccount:
    """One step's outcomes: reported by its operators, late from their ``late_rows``, passed on from its rows
    out, or derived."""
    rows_in = counts.rows_in.get(step.name, 0)
    rows_out = {output: rows for (name, output), rows in counts.rows_out.items() if name == step.name}
    reported: dict[str, int] = {}  # {outcome: rows}
    late_rules: dict[str, int] = {}  # {rule: rows}
    partly_late = 0
    for operator in operators:
        for outcome, rows in operator.ctx.outcomes.items():
            reported[outcome] = reported.get(outcome, 0) + rows
        rules, partly = late_rows_by_rule(operator)
        partly_late += partly
        for rule, rows in rules.items():
            late_rules[rule] = late_rules.get(rule, 0) + rows
    kept = {}
    if step.kind in PASSES_ROWS_ON:
        kept["passed on"] = rows_out.get(None, 0)
    late = sum(late_rules.values())
    derived = None
    if step.kind not in PASSES_ROWS_ON and not any(op.counts_rows for op in operators):
        derived = DERIVED_OUTCOME.get(step.kind, "kept")
        kept[derived] = max(0, rows_in - late - sum(reported.values()))
    outcomes = {**kept, **{o: n for o, n in reported.items() if not o.startswith("dropped: ")}}
    if late:
        outcomes["late"] = late
    outcomes.update({o: n for o, n in reported.items() if o.startswith("dropped: ")})
    sent_to_it = sum(counts.rows_out.get((edge.upstream.name, edge.output), 0) for edge in step.inputs)
    return StepAccount(step.name, step.kind, rows_in, outcomes, late_rules, derived, sent_to_it, rows_out, partly_late)


def late_rows_by_rule(operator) -> tuple[dict[str, int], int]:
    """The rows an operator found late, as ``{rule: rows}`` (:func:`general_rule`), and the number of rows late
    for only some of their windows.

    An operator keeps one ``LateRow`` per late row, except a window step in the micro-batch model, which keeps
    one per (row, window): a row of sliding windows can be late for its older windows and count in the newer
    ones. Such a row is late only if it was late for all its windows; otherwise it was aggregated.

    >>> from ministream.time.lateness import LateRow
    >>> from ministream.time.windows import Sliding
    >>> class Step: assigner, column = Sliding(10, 5), "ts"
    >>> step = Step()
    >>> row, old = {"ts": 12}, {"ts": 3}   # row is in [5, 15) and [10, 20); old in [-5, 5) and [0, 10)
    >>> step.late_rows = [LateRow(1, "w", row, (5, 15), 15, "end 15 <= watermark 15"),
    ...                   LateRow(1, "w", old, (-5, 5), 15, "end 5 <= watermark 15"),
    ...                   LateRow(1, "w", old, (0, 10), 15, "end 10 <= watermark 15")]
    >>> late_rows_by_rule(step)
    ({'end 10 <= watermark 15': 1}, 1)
    """
    entries = list(getattr(operator, "late_rows", ()))
    assign = getattr(getattr(operator, "assigner", None), "assign", None)
    rules: dict[str, int] = {}
    if assign is None:
        for late in entries:
            rule = general_rule(late.rule)
            rules[rule] = rules.get(rule, 0) + 1
        return rules, 0
    by_row: dict[tuple, list] = {}  # {(batch_id, id(row)): [LateRow, ...]}: the same row object in one batch
    for late in entries:
        by_row.setdefault((late.batch_id, id(late.row)), []).append(late)
    partly = 0
    for (batch_id, _), lates in by_row.items():
        late_windows = {late.window for late in lates}
        times = len(lates) // len(late_windows)  # the same row object may have come more than once
        row_windows = assign(lates[0].row[operator.column])
        if batch_id is None or late_windows >= set(row_windows):  # continuous: one entry per late row
            rule = general_rule(max(lates, key=lambda late: late.window or ()).rule)
            rules[rule] = rules.get(rule, 0) + (len(lates) if batch_id is None else times)
        else:
            partly += times
    return rules, partly


_TIME = re.compile(r" ?(\d{4}-\d\d-\d\dT)?\d\d:\d\d:\d\d(\.\d+)?Z?")


def general_rule(rule: str) -> str:
    """A late row's rule without its times, so that the rows late by the same rule add up.

    >>> general_rule("end 10:00:10 <= watermark 10:00:10 of the previous batch")
    'end <= watermark of the previous batch'
    >>> general_rule("row dropped: ts 2024-01-01T10:00:02Z <= watermark 2024-01-01T10:00:05Z of the previous batch")
    'ts <= watermark of the previous batch'
    """
    return _TIME.sub("", rule).removeprefix("row dropped: ")


def dead_letter_reason(reason: str) -> str:
    """A dead letter's reason, short enough to add the lines up by it.

    >>> dead_letter_reason("field 'ts': '2024-13-01' is not an ISO-8601 timestamp: write it like ...")
    "bad field 'ts'"
    >>> dead_letter_reason("this is not valid JSON (Expecting value at column 1): write each event as ...")
    'not valid JSON'
    """
    if reason.startswith("field "):
        return "bad " + reason.split(":", maxsplit=1)[0]
    return reason.split(":", maxsplit=1)[0].split(" (", maxsplit=1)[0].removeprefix("this is ")


def _rows(n: int) -> str:
    return f"{n} row{'s' if n != 1 else ''}"
