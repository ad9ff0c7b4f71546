"""Row accounting (``core/accounting.py``): every row a run reads is passed on, kept, late or dropped, and the sums
hold exactly, for every lesson and for hand-made examples whose numbers are counted by hand."""

import pytest

from ministream.core.accounting import general_rule
from ministream.core.aggregates import Count
from ministream.core.operator import Operator
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.lessons import LESSON_MODULES, get_lesson
from ministream.lessons.lesson import Lesson, event
from ministream.models.microbatch import run_microbatch
from ministream.time.windows import Sliding, Tumbling
from ministream.tools.cli import main

LESSON_NAMES = [module.replace("_", "-") for module in LESSON_MODULES]


def plain_run(lesson, **settings):
    """The lesson's pipeline on its default events in the micro-batch model, without a crash (the checkpoint
    lessons' own ``run`` crashes and recovers, which reads some rows twice)."""
    return Lesson.run(lesson, **settings)


def script_rows(script) -> int:
    batches = script.values() if isinstance(script, dict) else [script]
    return sum(len(batch) for stream in batches for batch in stream)


@pytest.mark.parametrize("name", LESSON_NAMES)
def test_every_lesson_accounts_for_every_row(name):
    """In every lesson, each step's rows in equal the sum of its outcomes, each step receives what its inputs
    sent, and the rows that entered are the rows of the script."""
    lesson = get_lesson(name)
    run = plain_run(lesson)
    accounting = run.accounting()
    assert accounting.problems() == []
    assert accounting.entered == script_rows(lesson.default_script)
    for step in accounting.steps:
        assert step.rows_in == sum(step.outcomes.values()), step
        if step.kind != "source":
            assert step.rows_in == step.sent_to_it, step
        late_rows = {(late.batch_id, id(late.row)) for late in run.late_rows(step.step)}
        assert step.outcomes.get("late", 0) + step.partly_late == len(late_rows), step


def test_a_hand_made_run_counts_each_outcome_exactly():
    """Ten rows: one filtered out, two duplicates, one without event time, one late for its window; the rest
    reach the window step and are aggregated."""
    script = [
        [
            {"id": "p1", **event(1, "a", 5)},
            {"id": "p1", **event(1, "a", 5)},  # a duplicate
            {"id": "p2", **event(3, "b", 0)},  # filtered out
            {"id": "p3", **event(12, "a", 2)},
        ],
        [
            {"id": "p4", **event(4, "b", 1)},
            {"id": "p5", **event(6, "a", 1), "ts": None},  # no event time
            {"id": "p6", **event(25, "a", 1)},
        ],
        [
            {"id": "p7", **event(8, "b", 1)},  # [10:00:00, 10:00:10) ends at WM_1 = 10:00:10: late
            {"id": "p3", **event(12, "a", 2)},  # a duplicate
            {"id": "p8", **event(15, "b", 1)},
        ],
    ]
    flow = Dataflow("payments")
    paid = flow.source("payments", ScriptedSource(script)).filter("paid", lambda row: row["value"] > 0)
    events = paid.drop_duplicates("once", ["id"]).with_watermark("watermark", "ts", "2 seconds")
    events.key_by("key").window("per_window", Tumbling("10 seconds"), count=Count()).sink("output", CollectingSink())
    run = run_microbatch(flow)
    accounting = run.accounting()
    outcomes = {step.step: (step.rows_in, step.outcomes) for step in accounting.steps}
    assert outcomes == {
        "payments": (10, {"delivered": 10}),
        "paid": (10, {"passed on": 9, "dropped: filtered out": 1}),
        "once": (9, {"passed on": 7, "dropped: duplicate": 2}),
        "watermark": (7, {"passed on": 7}),
        "per_window": (7, {"aggregated": 5, "late": 1, "dropped: no event time in column 'ts'": 1}),
        "output": (4, {"written to the sink": 4}),
    }
    assert accounting.step("per_window").derived is None  # the window step counts what it aggregates
    assert accounting.step("per_window").late_rules == {"end <= watermark of the previous batch": 1}
    assert len(run.late_rows()) == 1
    assert accounting.format().splitlines()[4:] == [
        "  watermark: 7 rows in: 7 passed on",
        (
            "  per_window: 7 rows in: 5 aggregated, 1 late (end <= watermark of the previous batch), "
            "1 dropped (no event time in column 'ts'); 4 rows out"
        ),
        "  output: 4 rows in: 4 written to the sink",
        "every row is accounted for",
    ]


def test_a_row_late_for_some_of_its_sliding_windows_counts_as_aggregated():
    """With sliding windows a row is late only when all its windows are: 10:00:08 is late for
    [10:00:00, 10:00:10) but counts in [10:00:05, 10:00:15); 10:00:02 is late for both of its windows."""
    flow = Dataflow("sliding")
    flow.source("events", ScriptedSource([[event(12, "a")], [], [event(8, "a"), event(2, "a")]])).with_watermark(
        "watermark", "ts", "0 seconds"
    ).key_by("key").window("per_window", Sliding("10 seconds", "5 seconds"), count=Count()).sink(
        "output", CollectingSink()
    )
    run = run_microbatch(flow)
    step = run.accounting().step("per_window")
    assert (step.rows_in, step.outcomes, step.partly_late) == (3, {"aggregated": 2, "late": 1}, 1)
    assert len(run.late_rows()) == 3  # (row, window) pairs: one for 10:00:08, two for 10:00:02


def test_late_counts_match_the_late_rows_of_the_late_data_lesson():
    """The late-data lesson drops 2 rows: the accounting counts them as late, as run.late_rows() lists
    them, and as the side output receives them."""
    run = get_lesson("late-data").run()
    accounting = run.accounting()
    step = accounting.step("per_window")
    assert step.outcomes == {"aggregated": 9, "late": 2}
    assert step.outcomes["late"] == len(run.late_rows("per_window")) == 2
    assert step.rows_out == {None: 4, "late": 2}
    assert accounting.step("late").outcomes == {"written to the sink": 2}


def test_a_step_that_loses_rows_is_caught():
    """An operator that says it counts its rows but swallows them leaves rows unexplained: the accounting
    is not balanced and says which step."""

    class Swallow(Operator):
        counts_rows = True

        def process(self, records, input_index):
            pass

    flow = Dataflow("lossy")
    flow.source("events", ScriptedSource([[{"key": "a"}, {"key": "b"}]])).key_by("key").operator_step(
        "swallow", "custom", Swallow
    ).sink("output", CollectingSink())
    accounting = run_microbatch(flow).accounting()
    assert not accounting.balanced
    assert accounting.problems() == ["step 'swallow': 2 rows in, but its outcomes add up to 0"]
    assert accounting.format().endswith("UNACCOUNTED: step 'swallow': 2 rows in, but its outcomes add up to 0")


def test_flat_map_counts_the_rows_it_turned_into_rows_and_those_that_gave_none():
    """A flat_map keeps a row that gives at least one row, and drops one that gives none."""
    flow = Dataflow("words")
    flow.source("lines", ScriptedSource([[{"line": "to be"}, {"line": ""}, {"line": "or"}]])).flat_map(
        "split", lambda row: [{"word": word} for word in row["line"].split()]
    ).sink("output", CollectingSink())
    step = run_microbatch(flow).accounting().step("split")
    assert (step.rows_in, step.outcomes, step.rows_out) == (
        3,
        {"turned into rows": 2, "dropped: flat_map returned no rows": 1},
        {None: 3},
    )


BAD_EVENTS = [
    '{"batch": 0, "ts": "2024-01-01T10:00:01Z", "key": "a", "value": 1}',
    '{"batch": 0, "ts": "2024-13-01T10:00:03Z", "key": "b", "value": 2}',
    "not json at all",
    "",
    '{"batch": 1, "ts": "2024-01-01T10:00:15Z", "key": "a", "value": 4}',
    '{"batch": 1, "ts": "2024-01-01T10:00:16Z", "key": "a"}',
    '{"batch": 2, "ts": "2024-01-01T10:00:25Z", "key": "b", "value": 6}',
]


def test_lines_read_are_rows_entered_plus_dead_letters(tmp_path):
    """Six lines (an empty one is no line): three enter the pipeline, three are dead-lettered, by reason."""
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(BAD_EVENTS) + "\n")
    lesson = get_lesson("late-data")
    dead_letters = []
    script = lesson.read_script(path, dead_letters)
    accounting = lesson.run(script).accounting(path, dead_letters)
    assert (accounting.read, accounting.entered, accounting.dead_letters) == (
        6,
        3,
        {"bad field 'ts'": 1, "not valid JSON": 1, "bad field 'value'": 1},
    )
    assert accounting.read == accounting.entered + sum(accounting.dead_letters.values())
    assert accounting.balanced
    short = lesson.run(script).accounting(path, dead_letters[:2])  # a dead letter the account did not get
    assert short.problems() == [
        "6 lines read from events.jsonl, but 3 rows entered the pipeline and 2 were dead-lettered"
    ]


def test_the_command_prints_the_accounting_with_dead_letters(tmp_path, capsys):
    """``ministream run LESSON --events F --dead-letters D --accounting`` ends with the file's account and
    each step's."""
    path, dead = tmp_path / "events.jsonl", tmp_path / "dead.jsonl"
    path.write_text("\n".join(BAD_EVENTS) + "\n")
    assert main(["run", "late-data", "--events", str(path), "--dead-letters", str(dead), "--accounting"]) == 0
    printed = capsys.readouterr().out
    assert printed[printed.index("accounting:") :].splitlines() == [
        (
            "accounting: read 6 lines of events.jsonl: 3 entered the pipeline, 3 dead-lettered "
            "(1 bad field 'ts', 1 not valid JSON, 1 bad field 'value')"
        ),
        "  events: 3 rows delivered by the source",
        "  watermark: 3 rows in: 3 passed on",
        "  per_window: 3 rows in: 3 aggregated; 2 rows out",
        "  output: 2 rows in: 2 written to the sink",
        "  late: 0 rows in: 0 written to the sink",
        "every row is accounted for",
    ]
    assert len(dead.read_text().splitlines()) == 3


def test_the_command_prints_no_accounting_unless_asked(capsys):
    """Without ``--accounting`` the output of ``ministream run`` is unchanged."""
    assert main(["run", "late-data"]) == 0
    assert "accounting" not in capsys.readouterr().out


def test_the_continuous_model_accounts_for_every_row_too():
    """A continuous run counts the same way: the tumbling-window lesson's rows add up, row by row."""
    accounting = get_lesson("tumbling-window").run(model="continuous").accounting()
    assert accounting.balanced
    assert accounting.step("per_window").rows_in == 8


def test_general_rule_leaves_the_times_out():
    """Late rows add up under one rule whatever their times: the times are left out of it."""
    assert general_rule(
        "clicks row dropped: click_time 2024-01-01T10:00:28Z <= watermark 2024-01-01T10:00:30Z of the previous batch"
    ) == ("clicks row dropped: click_time <= watermark of the previous batch")


def test_session_windows_count_what_they_aggregate_and_drop():
    """With a gap per key, the session-window lesson drops the 4 rows of keys c and d (no gap): the step
    counts its 8 aggregated rows itself, so nothing is derived."""
    step = get_lesson("session-window").run(params={"gap_by": "key"}).accounting().step("sessions")
    assert (step.rows_in, step.outcomes, step.derived) == (
        12,
        {"aggregated": 8, "dropped: no session gap longer than zero": 4},
        None,
    )
