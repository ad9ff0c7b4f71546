"""The rules of Spark's micro-batch model, one test each, on windowed aggregates (spark-semantics.md).

Each test runs ministream on a tiny script and checks the rule; ``test_rule_scripts_match_spark`` runs the
same scripts through the PySpark twins, so every expectation here is Spark's too. Times are seconds after the
epoch, so watermarks read as small numbers (WM_0 = 0).
"""

import attrs
import pytest

from ministream import CollectingSink, Count, Dataflow, ScriptedSource, Sum, run_microbatch
from ministream.core.events import EventsFileError, Field, parse_events
from ministream.errors import PipelineError
from ministream.lessons import compare_lesson, get_lesson
from ministream.time.watermarks import MicroBatchWatermarks
from ministream.time.windows import Sliding, Tumbling


def e(second: float, key: str = "a", value: float = 1.0) -> dict:
    """A row ``second`` seconds after the epoch."""
    return {"ts": round(second * 1000), "key": key, "value": float(value)}


TEN_SECOND_WINDOWS = Tumbling(10_000)


def run(script, mode="append", delay=5_000, windows=TEN_SECOND_WINDOWS, watermark_on="ts"):
    """A windowed count and sum per key, watermarked on ``ts`` with ``delay``; late rows to a side output."""
    flow = Dataflow("rules")
    events = flow.source("events", ScriptedSource(script)).with_watermark("watermark", watermark_on, delay)
    per_window = events.key_by("key").window("w", windows, late_rows="late", count=Count(), sum=Sum("value"))
    per_window.sink("output", CollectingSink())
    per_window.side_output("late").sink("late", CollectingSink())
    return run_microbatch(flow, output_mode=mode)


def windows_of(batch) -> list[tuple]:
    """A batch's rows as sorted (key, window start in s, count)."""
    return sorted((row["key"], row["window_start"] // 1000, row["count"]) for row in batch.rows)


def emitted(result) -> list[list[tuple]]:
    return [windows_of(batch) for batch in result.output()]


UPDATE_SCRIPT = [[e(1), e(3)], [e(16), e(4)], [e(2), e(30)], [e(5)]]

# Scripts that the Spark test below also runs: (lesson, params, script), named after their rule.
SCRIPTS = {
    "watermark": ("tumbling-window", {}, [[e(1), e(12)], [e(4)], [e(30), e(2)], [e(20)]]),
    "edges": ("tumbling-window", {}, [[e(1), e(15)], [e(9.999), e(10, "b")], [e(9), e(10)], [e(25)]]),
    "no_data": ("tumbling-window", {}, [[e(100)], [e(101)]]),
    "pre_epoch": ("tumbling-window", {}, [[e(-1), e(0.5), e(-10, "b"), e(0, "c")], [e(20)], [e(-3)]]),
    "per_window": ("sliding-window", {}, [[e(1), e(3)], [e(21)], [], [e(8), e(12)]]),
    "modes": ("tumbling-window", {}, UPDATE_SCRIPT),
}


def test_watermark_starts_at_zero_and_is_the_max_event_time_of_earlier_batches_minus_the_delay():
    """WM_0 = 0; WM_k = max event time of batches 0..k-1 minus the delay (here 5 s)."""
    assert run(SCRIPTS["watermark"][2]).watermarks == [0, 7_000, 7_000, 25_000]


def test_watermark_never_goes_down():
    """A batch whose rows are all older than the watermark leaves it where it is."""
    result = run([[e(20)], [e(1)], [e(2)]], mode="update")
    assert result.watermarks == [0, 15_000, 15_000]


def test_event_times_are_whole_milliseconds_and_the_watermark_keeps_them_exact():
    """Spark floors event times to milliseconds for its watermark; ministream takes only whole milliseconds
    (refusing finer ones), so WM = max - delay exactly, to the millisecond."""
    assert run([[{"ts": 12_345, "key": "a", "value": 1.0}], []], delay=1_000).watermarks == [0, 11_345]
    with pytest.raises(EventsFileError, match="finer than a millisecond"):
        parse_events(
            ['{"batch": 0, "ts": "1970-01-01T00:00:01.0005Z", "key": "a", "value": 1}'],
            [Field("key", str), Field("value", float)],
        )


def test_late_and_evictable_both_mean_at_or_before_the_watermark():
    """With WM_1 = WM_2 = 10 s: window [0, 10) is emitted in batch 1 (end 10 <= WM_1), and in batch 2 a row of
    [0, 10) is late (end 10 <= WM_1) while a row at 10 s, exactly on the watermark, counts in [10, 20)."""
    result = run(SCRIPTS["edges"][2])
    assert result.watermarks[:3] == [0, 10_000, 10_000]
    assert emitted(result)[1] == [("a", 0, 2)]  # a@1 and a@9.999 (late only against WM_0 = 0)
    assert [(late.batch_id, late.row["ts"]) for late in result.late_rows()] == [(2, 9_000)]


def test_rows_are_late_against_the_previous_batch_watermark_and_state_is_evicted_against_the_current():
    """In batch 1 (WM_0 = 0, WM_1 = 10 s) a row at 9.999 s still counts, and its window is emitted in the same
    batch: the row was filtered with WM_0 and the window finalized with WM_1."""
    result = run(SCRIPTS["edges"][2])
    assert result.late_rows() == [late for late in result.late_rows() if late.batch_id == 2]
    assert emitted(result)[1] == [("a", 0, 2)]


def test_a_no_data_batch_runs_when_the_watermark_advanced_after_the_last_batch():
    """After the last batch the watermark rose from 95 s to 96 s: Spark runs one more batch with no data,
    even though no window ends by 96 s (shouldRunAnotherBatch looks at the watermark, not the state)."""
    result = run(SCRIPTS["no_data"][2])
    assert result.watermarks == [0, 95_000, 96_000]
    assert emitted(result) == [[], [], []]


def test_no_no_data_batch_when_the_watermark_did_not_advance():
    """When the last batch leaves the watermark where it was, the run ends with the script."""
    assert len(run([[e(20)], [e(1)]]).output()) == 2


def test_no_no_data_batch_in_complete_mode():
    """Complete mode never evicts, so it never asks for a no-data batch."""
    assert len(run([[e(1)], [e(30)]], mode="complete").output()) == 2


def test_rows_at_or_before_the_epoch_are_late_from_the_first_batch():
    """WM_0 = 0 and late means end <= watermark: in batch 0 a row in [-10 s, 0) is already late, a row at 0 s
    (in [0, 10)) is not."""
    result = run(SCRIPTS["pre_epoch"][2], mode="update")
    assert emitted(result)[0] == [("a", 0, 1), ("c", 0, 1)]
    assert [(late.batch_id, late.row["ts"]) for late in result.late_rows()] == [(0, -1_000), (0, -10_000), (2, -3_000)]


def test_the_late_filter_runs_per_window():
    """Sliding 10 s every 5 s: in batch 3 (late against WM_2 = 16 s) a row at 12 s is late for [5, 15) but
    counts in [10, 20); a row at 8 s is late for both its windows, so it also goes to the late side output."""
    result = run(SCRIPTS["per_window"][2], windows=Sliding(10_000, 5_000), mode="update")
    assert [(late.row["ts"], late.window) for late in result.late_rows()] == [
        (8_000, (0, 10_000)),
        (8_000, (5_000, 15_000)),
        (12_000, (5_000, 15_000)),
    ]
    assert emitted(result)[3] == [("a", 10, 1)]
    assert [len(batch.rows) for batch in result.output("late")] == [0, 0, 0, 1]  # only the row late everywhere


def test_append_emits_a_window_once_when_the_watermark_passes_its_end():
    """Append: each window exactly once, in the first batch with end <= WM_k (WM_2 = 11 s for [0, 10), with
    the old row at 2 s counted; WM_3 = 25 s for [10, 20)), and then it is gone."""
    result = run([[e(1), e(3)], [e(16)], [e(2), e(30)], []])
    assert result.watermarks == [0, 0, 11_000, 25_000]
    assert emitted(result) == [[], [], [("a", 0, 3)], [("a", 10, 1)]]
    assert result.trace is None and result.graph.operators("w")[0].state_size() == 1  # [30, 40) waits


def test_update_emits_every_window_a_batch_touched_then_evicts_without_another_row():
    """Update: a batch emits the windows it added to, with their full value; a window the watermark passes
    is removed without another row ([0, 10) at the end of batch 2, [10, 20) in batch 3), so the row at 5 s in
    batch 3 is late."""
    result = run(UPDATE_SCRIPT, mode="update")
    assert result.watermarks == [0, 0, 11_000, 25_000]
    assert emitted(result) == [[("a", 0, 2)], [("a", 0, 3), ("a", 10, 1)], [("a", 0, 4), ("a", 30, 1)], []]
    assert [late.row["ts"] for late in result.late_rows()] == [5_000]


def test_complete_emits_every_window_every_batch_never_drops_late_rows_and_never_evicts():
    """Complete: the whole table each batch; the row at 5 s, late in update mode, still counts."""
    result = run(UPDATE_SCRIPT, mode="complete")
    assert emitted(result)[2:] == [[("a", 0, 4), ("a", 10, 1), ("a", 30, 1)], [("a", 0, 5), ("a", 10, 1), ("a", 30, 1)]]
    assert result.late_rows() == []


def test_several_watermarked_inputs_combine_by_min_or_max_and_an_input_without_rows_counts_as_zero():
    """The global watermark is the min (default) or max of the inputs' proposals; an input that has had no row
    yet proposes 0, holding the min at 0."""
    for policy, expected in (("min", [0, 0, 15_000]), ("max", [25_000, 25_000, 25_000])):
        marks = MicroBatchWatermarks({"left": 5_000, "right": 5_000}, policy)
        marks.observe("left", 30_000)
        got = [marks.advance()]
        got.append(marks.advance())  # still nothing on the right
        marks.observe("right", 20_000)
        got.append(marks.advance())
        assert got == expected, policy


def test_append_without_a_watermark_is_refused():
    """A windowed aggregate with no watermark at all cannot run in append mode (Spark refuses it too)."""
    flow = Dataflow("no-watermark")
    flow.source("events", ScriptedSource([[e(1)]])).key_by("key").window("w", Tumbling(10_000), count=Count()).sink(
        "output", CollectingSink()
    )
    with pytest.raises(PipelineError, match="append output mode needs a watermark on the window's event-time"):
        run_microbatch(flow, output_mode="append")
    assert [len(b.rows) for b in run_microbatch(flow, output_mode="update").output()] == [1]


def test_append_with_a_running_aggregation_is_refused_with_the_reason_and_sparks_words():
    """A running aggregation (no window, no watermark) cannot run in append mode: the message says why, what to
    use instead, and quotes Spark's refusal (tests/lessons/test_running_aggregation.py checks Spark says it)."""
    flow = Dataflow("running")
    flow.source("events", ScriptedSource([[e(1)]])).key_by("key").aggregate("totals", count=Count()).sink(
        "output", CollectingSink()
    )
    with pytest.raises(PipelineError) as refused:
        run_microbatch(flow, output_mode="append")
    assert str(refused.value) == (
        "step 'totals': append output mode cannot be used with an aggregation without a watermark. Append emits a "
        "group once, when no later row can change it, and without an event-time window and a watermark that "
        "moment never comes. Use output mode 'update' or 'complete'. (Spark 4.3 refuses it too: 'Invalid "
        "streaming output mode: append. This output mode is not supported for streaming aggregations without "
        "watermark on streaming DataFrames/DataSets.')"
    )


def test_a_window_on_a_column_without_a_watermark_is_refused_in_append_and_keeps_everything_in_update():
    """With the watermark on another column, the window's column has none: append is refused; update never
    drops a row as late nor removes a window."""
    script = [[{**e(1), "other": 50_000}], [{**e(2), "other": 60_000}]]
    with pytest.raises(PipelineError, match="needs a watermark on the window's event-time column"):
        run(script, watermark_on="other")
    result = run(script, mode="update", watermark_on="other")
    assert emitted(result)[1] == [("a", 0, 2)] and result.graph.operators("w")[0].state_size() == 1


def test_complete_mode_needs_an_aggregation():
    """Complete mode without an aggregation is refused, as Spark refuses it."""
    flow = Dataflow("plain")
    flow.source("events", ScriptedSource([[e(1)]])).map("same", dict).sink("output", CollectingSink())
    with pytest.raises(PipelineError, match="complete output mode needs an aggregation"):
        run_microbatch(flow, output_mode="complete")


def _lesson(name, mode):
    return attrs.evolve(get_lesson(name), output_mode=mode)


@pytest.mark.spark
@pytest.mark.parametrize(
    "rule, mode",
    [
        ("watermark", "append"),
        ("edges", "append"),
        ("no_data", "append"),
        ("pre_epoch", "update"),
        ("per_window", "update"),
        ("modes", "update"),
        ("modes", "complete"),
    ],
)
def test_rule_scripts_match_spark(rule, mode):
    """The scripts of the rules above give, batch for batch, the same rows and watermarks in Spark."""
    name, params, script = SCRIPTS[rule]
    result = compare_lesson(_lesson(name, mode), script, params)
    assert result.matches, result.table()
