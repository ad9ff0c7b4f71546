"""Flink's ``WindowOperatorTest``, replayed in ministream's continuous model (``flink.py`` says how).

Source: ``flink-streaming-java/src/test/java/org/apache/flink/streaming/runtime/operators/windowing/
WindowOperatorTest.java`` (Flink master of 2024-12-11). The steps were transcribed from the catalog of that
file (one element, watermark or check at a time, as the test's harness takes them); the expected output
queues are the test's.

Every test keys ``Tuple2<String, Integer>`` records by ``f0`` and sums ``f1`` per window (a ``SumReducer``, or
an iterable function that sums); here a record is ``{"key": f0, "value": f1, "ts": timestamp}`` and the
window step sums ``value``. What the test's window function makes of the sum is the case's ``result``.

What the cases pin down (each is a rule of ``operators/window.py`` and ``operators/sessions.py``): a window
fires when the watermark reaches ``end - 1``, its results before the watermark is forwarded; a result's
timestamp is ``end - 1``; a window's state goes at ``end - 1 + allowed lateness``, and a row for a window that
fired but is still kept fires it again at once; lateness is judged per window, and a row goes to the late
side output only when all its windows are gone; a session is late when the session it merges into is; a
restored operator keeps its windows; a processing-time window holds the rows that arrived while the clock
was in it, and fires when the clock reaches its end - 1.
"""

from ministream import Sum
from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.time.windows import Session, Sliding, Tumbling
from tests.conformance.flink import (
    W,
    element,
    expect,
    flink_case,
    processing_time,
    restore,
    side_output,
    snapshot,
    watermark,
)
from tests.conformance.harness import NotExpressible

SUITE = "WindowOperatorTest"
SOURCE = (
    "flink-streaming-java/src/test/java/org/apache/flink/streaming/runtime/operators/windowing/WindowOperatorTest.java"
)
INPUTS = {None: "timestamps"}
"""The harness plays the ``with_watermark`` step: the test's records and watermarks leave it."""


def sums(assigner, lateness: int = 0, late: bool = False, processing_time: bool = False) -> Dataflow:
    """``WindowOperator(assigner, EventTimeTrigger, allowedLateness, sum of f1, lateDataOutputTag)`` keyed by
    ``f0``: ``key_by("key").window(assigner, allowed_lateness=..., late_rows="late", value=Sum("value"))``;
    ``processing_time``: a processing-time assigner and ``ProcessingTimeTrigger``."""
    flow = Dataflow("window-operator")
    records = flow.source("records", ScriptedSource([], columns=("key", "value", "ts")))
    keyed = records.with_watermark("timestamps", "ts", 0).key_by("key")
    windows = keyed.window(
        "window",
        assigner,
        column="ts",
        allowed_lateness=lateness,
        late_rows="late" if late else None,
        processing_time=processing_time,
        value=Sum("value"),
    )
    windows.sink("output", CollectingSink())
    if late:
        windows.side_output("late").sink("late", CollectingSink())
    return flow


ALL_TIME = Tumbling(2**63)
"""One window from 0 to 2^63 ms, fired by the final watermark only: Flink's global window with the end-of-stream
trigger, for rows at or after time 0."""


def key_and_sum(row: dict) -> tuple:
    """``PassThroughWindowFunction`` of the reduced value, or ``RichSumReducer``: ``(key, sum)``."""
    return row["key"], row["value"]


def session_of(row: dict) -> tuple:
    """``SessionWindowFunction`` and its reduced and process variants: ``(key + "-" + sum, start, end)``."""
    return f"{row['key']}-{row['value']}", row["window_start"], row["window_end"]


def mocked_gap(row: dict) -> int:
    """The test's mocked ``SessionWindowTimeGapExtractor``: 3 s for key1; for key2 1 s when f1 is 10, else 2 s;
    0 otherwise."""
    if row["key"] == "key1":
        return 3_000
    if row["key"] == "key2":
        return 1_000 if row["value"] == 10 else 2_000
    return 0


# -- the cases ---------------------------------------------------------------------------------------------------

STEPS_SLIDING_EVENT_TIME_WINDOWS_REDUCE = [
    # add elements out-of-order
    element("key2", 1, 3999),
    element("key2", 1, 3000),
    element("key1", 1, 20),
    element("key1", 1, 0),
    element("key1", 1, 999),
    element("key2", 1, 1998),
    element("key2", 1, 1999),
    element("key2", 1, 1000),
    watermark(999),
    expect((("key1", 3), 999), W(999)),
    watermark(1999),
    expect((("key1", 3), 999), W(999), (("key1", 3), 1999), (("key2", 3), 1999), W(1999)),
    watermark(2999),
    expect(
        (("key1", 3), 999),
        W(999),
        (("key1", 3), 1999),
        (("key2", 3), 1999),
        W(1999),
        (("key1", 3), 2999),
        (("key2", 3), 2999),
        W(2999),
    ),
    # do a snapshot, close and restore again
    snapshot(),
    # new harness initialised from the snapshot (its output queue is fresh)
    restore(),
    watermark(3999),
    expect((("key2", 5), 3999), W(3999)),
    watermark(4999),
    expect((("key2", 5), 3999), W(3999), (("key2", 2), 4999), W(4999)),
    watermark(5999),
    expect((("key2", 5), 3999), W(3999), (("key2", 2), 4999), W(4999), (("key2", 2), 5999), W(5999)),
    # those don't have any effect...
    watermark(6999),
    watermark(7999),
    expect(
        (("key2", 5), 3999),
        W(3999),
        (("key2", 2), 4999),
        W(4999),
        (("key2", 2), 5999),
        W(5999),
        W(6999),
        W(7999),
    ),
]
"""The steps of testSlidingEventTimeWindowsReduce (the same in testSlidingEventTimeWindowsApply)."""


STEPS_TUMBLING_EVENT_TIME_WINDOWS_REDUCE = [
    # add elements out-of-order
    element("key2", 1, 3999),
    element("key2", 1, 3000),
    element("key1", 1, 20),
    element("key1", 1, 0),
    element("key1", 1, 999),
    element("key2", 1, 1998),
    element("key2", 1, 1999),
    element("key2", 1, 1000),
    watermark(999),
    expect(W(999)),
    watermark(1999),
    expect(W(999), W(1999)),
    # do a snapshot, close and restore again
    snapshot(),
    expect(W(999), W(1999)),
    # new harness initialised from the snapshot (its output queue is fresh)
    restore(),
    watermark(2999),
    expect((("key1", 3), 2999), (("key2", 3), 2999), W(2999)),
    watermark(3999),
    expect((("key1", 3), 2999), (("key2", 3), 2999), W(2999), W(3999)),
    watermark(4999),
    expect((("key1", 3), 2999), (("key2", 3), 2999), W(2999), W(3999), W(4999)),
    watermark(5999),
    expect(
        (("key1", 3), 2999),
        (("key2", 3), 2999),
        W(2999),
        W(3999),
        W(4999),
        (("key2", 2), 5999),
        W(5999),
    ),
    # those don't have any effect...
    watermark(6999),
    watermark(7999),
    expect(
        (("key1", 3), 2999),
        (("key2", 3), 2999),
        W(2999),
        W(3999),
        W(4999),
        (("key2", 2), 5999),
        W(5999),
        W(6999),
        W(7999),
    ),
]
"""The steps of testTumblingEventTimeWindowsReduce (the same in testTumblingEventTimeWindowsApply)."""


STEPS_SESSION_WINDOWS = [
    # add elements out-of-order
    element("key2", 1, 0),
    element("key2", 2, 1000),
    element("key2", 3, 2500),
    element("key1", 1, 10),
    element("key1", 2, 1000),
    # do a snapshot, close and restore again
    snapshot(),
    expect(),
    # new harness initialised from the snapshot (its output queue is fresh)
    restore(),
    element("key1", 3, 2500),
    element("key2", 4, 5501),
    element("key2", 5, 6000),
    element("key2", 5, 6000),
    element("key2", 6, 6050),
    watermark(12000),
    element("key2", 10, 15000),
    element("key2", 20, 15000),
    watermark(17999),
    expect(
        (("key1-6", 10, 5500), 5499),
        (("key2-6", 0, 5500), 5499),
        (("key2-20", 5501, 9050), 9049),
        W(12000),
        (("key2-30", 15000, 18000), 17999),
        W(17999),
    ),
]
"""The steps of testSessionWindows (the same in testSessionWindowsWithProcessFunction)."""


STEPS_REDUCE_SESSION_WINDOWS = [
    # add elements out-of-order
    element("key2", 1, 0),
    element("key2", 2, 1000),
    element("key2", 3, 2500),
    # do a snapshot, close and restore again
    snapshot(),
    # new harness initialised from the snapshot (its output queue is fresh)
    restore(),
    element("key1", 1, 10),
    element("key1", 2, 1000),
    element("key1", 3, 2500),
    element("key2", 4, 5501),
    element("key2", 5, 6000),
    element("key2", 5, 6000),
    element("key2", 6, 6050),
    watermark(12000),
    element("key2", 10, 15000),
    element("key2", 20, 15000),
    watermark(17999),
    expect(
        (("key1-6", 10, 5500), 5499),
        (("key2-6", 0, 5500), 5499),
        (("key2-20", 5501, 9050), 9049),
        W(12000),
        (("key2-30", 15000, 18000), 17999),
        W(17999),
    ),
]
"""The steps of testReduceSessionWindows (the same in testReduceSessionWindowsWithProcessFunction)."""


STEPS_CLEANUP_TIMER_WITH_EMPTY_LIST_STATE_FOR_TUMBLING_WINDOWS = [
    # normal element
    element("key2", 1, 1000),
    watermark(1599),
    watermark(1999),
    watermark(2000),
    watermark(5000),
    expect(W(1599), (("key2", 1), 1999), W(1999), W(2000), W(5000)),
]
"""The steps of testCleanupTimerWithEmptyListStateForTumblingWindows (the same in testCleanupTimerWithEmptyReduceStateForTumblingWindows)."""


CASES = [
    flink_case(
        SUITE,
        "testSlidingEventTimeWindowsReduce",
        212,
        pipeline=lambda: sums(Sliding("3 seconds", "1 second")),
        inputs=INPUTS,
        result=key_and_sum,
        notes="SumReducer with PassThroughWindowFunction: (key, sum).",
        steps=STEPS_SLIDING_EVENT_TIME_WINDOWS_REDUCE,
    ),
    flink_case(
        SUITE,
        "testSlidingEventTimeWindowsApply",
        251,
        pipeline=lambda: sums(Sliding("3 seconds", "1 second")),
        inputs=INPUTS,
        result=key_and_sum,
        notes="RichSumReducer (an iterable window function): (key, sum); the assertion that its close() ran twice (once per harness) is about Flink's function lifecycle and is not replayed.",
        steps=STEPS_SLIDING_EVENT_TIME_WINDOWS_REDUCE,
    ),
    flink_case(
        SUITE,
        "testTumblingEventTimeWindowsReduce",
        396,
        pipeline=lambda: sums(Tumbling("3 seconds")),
        inputs=INPUTS,
        result=key_and_sum,
        notes="SumReducer with PassThroughWindowFunction: (key, sum).",
        steps=STEPS_TUMBLING_EVENT_TIME_WINDOWS_REDUCE,
    ),
    flink_case(
        SUITE,
        "testTumblingEventTimeWindowsApply",
        433,
        pipeline=lambda: sums(Tumbling("3 seconds")),
        inputs=INPUTS,
        result=key_and_sum,
        notes="RichSumReducer: (key, sum); the close() count is not replayed.",
        steps=STEPS_TUMBLING_EVENT_TIME_WINDOWS_REDUCE,
    ),
    flink_case(
        SUITE,
        "testSessionWindows",
        471,
        pipeline=lambda: sums(Session("3 seconds")),
        inputs=INPUTS,
        result=session_of,
        notes="SessionWindowFunction: (key-sum, start, end).",
        steps=STEPS_SESSION_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testSessionWindowsWithProcessFunction",
        564,
        pipeline=lambda: sums(Session("3 seconds")),
        inputs=INPUTS,
        result=session_of,
        notes="SessionProcessWindowFunction: (key-sum, start, end).",
        steps=STEPS_SESSION_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testReduceSessionWindows",
        658,
        pipeline=lambda: sums(Session("3 seconds")),
        inputs=INPUTS,
        result=session_of,
        notes="SumReducer then ReducedSessionWindowFunction: (key-sum, start, end).",
        steps=STEPS_REDUCE_SESSION_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testReduceSessionWindowsWithProcessFunction",
        745,
        pipeline=lambda: sums(Session("3 seconds")),
        inputs=INPUTS,
        result=session_of,
        notes="SumReducer then ReducedProcessSessionWindowFunction: (key-sum, start, end).",
        steps=STEPS_REDUCE_SESSION_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testEndOfStreamTrigger",
        1335,
        pipeline=lambda: sums(ALL_TIME),
        inputs=INPUTS,
        result=key_and_sum,
        notes="GlobalWindows with the end-of-stream trigger is one window per key that only the final watermark (Long.MAX_VALUE) fires; ministream writes it as a tumbling window of 2^63 ms, [0, 2^63), whose end - 1 is Long.MAX_VALUE (every timestamp of the test is at or after 0).",
        steps=[
            # add elements out-of-order
            element("key2", 1, 3000),
            element("key2", 1, 3999),
            element("key1", 1, 20),
            element("key1", 1, 0),
            element("key1", 1, 999),
            element("key2", 1, 1998),
            element("key2", 1, 1999),
            element("key2", 1, 1000),
            expect(),
            # Watermark.MAX_WATERMARK
            watermark(9223372036854775807),
            expect(
                (("key1", 3), 9223372036854775807),
                (("key2", 5), 9223372036854775807),
                W(9223372036854775807),
            ),
        ],
    ),
    flink_case(
        SUITE,
        "testProcessingTimeTumblingWindows",
        1402,
        pipeline=lambda: sums(Tumbling("3 seconds"), processing_time=True),
        inputs=INPUTS,
        result=key_and_sum,
        notes="The elements' timestamps are not read: each goes into the window of the processing time at which it arrives.",
        steps=[
            processing_time(3),
            # timestamp is ignored in processing time
            element("key2", 1, 9223372036854775807),
            element("key2", 1, 7000),
            element("key2", 1, 7000),
            element("key1", 1, 7000),
            element("key1", 1, 7000),
            processing_time(5000),
            expect((("key2", 3), 2999), (("key1", 2), 2999)),
            element("key1", 1, 7000),
            element("key1", 1, 7000),
            element("key1", 1, 7000),
            processing_time(7000),
            expect((("key2", 3), 2999), (("key1", 2), 2999), (("key1", 3), 5999)),
        ],
    ),
    flink_case(
        SUITE,
        "testProcessingTimeSlidingWindows",
        1478,
        pipeline=lambda: sums(Sliding("3 seconds", "1 second"), processing_time=True),
        inputs=INPUTS,
        result=key_and_sum,
        notes="",
        steps=[
            # timestamp is ignored in processing time
            processing_time(3),
            element("key2", 1, 9223372036854775807),
            processing_time(1000),
            expect((("key2", 1), 999)),
            element("key2", 1, 9223372036854775807),
            element("key2", 1, 9223372036854775807),
            processing_time(2000),
            expect((("key2", 1), 999), (("key2", 3), 1999)),
            element("key1", 1, 9223372036854775807),
            element("key1", 1, 9223372036854775807),
            processing_time(3000),
            expect((("key2", 1), 999), (("key2", 3), 1999), (("key2", 3), 2999), (("key1", 2), 2999)),
            element("key1", 1, 9223372036854775807),
            element("key1", 1, 9223372036854775807),
            element("key1", 1, 9223372036854775807),
            processing_time(7000),
            expect(
                (("key2", 1), 999),
                (("key2", 3), 1999),
                (("key2", 3), 2999),
                (("key1", 2), 2999),
                (("key2", 2), 3999),
                (("key1", 5), 3999),
                (("key1", 5), 4999),
                (("key1", 3), 5999),
            ),
        ],
    ),
    flink_case(
        SUITE,
        "testProcessingTimeSessionWindows",
        1579,
        pipeline=lambda: sums(Session("3 seconds"), processing_time=True),
        inputs=INPUTS,
        result=key_and_sum,
        notes="The test compares the output as a multiset (same size, each record expected).",
        steps=[
            # timestamp is ignored in processing time
            processing_time(3),
            element("key2", 1, 1),
            # Long.MAX_VALUE));
            processing_time(1000),
            element("key2", 1, 1002),
            # Long.MAX_VALUE));
            processing_time(5000),
            expect((("key2", 2), 3999)),
            element("key2", 1, 5000),
            element("key2", 1, 5000),
            element("key1", 1, 5000),
            element("key1", 1, 5000),
            element("key1", 1, 5000),
            processing_time(10000),
            expect((("key2", 2), 3999), (("key2", 2), 7999), (("key1", 3), 7999)),
            # the test's own check: the output has the expected size and each record is expected (a multiset)
        ],
    ),
    flink_case(
        SUITE,
        "testDynamicEventTimeSessionWindows",
        1665,
        pipeline=lambda: sums(Session(mocked_gap)),
        inputs=INPUTS,
        result=session_of,
        notes="The mocked gap extractor is a gap function of the row (Session(fn)).",
        steps=[
            # test different gaps for different keys
            element("key1", 3, 10),
            element("key2", 4, 5000),
            element("key2", 5, 6000),
            watermark(8999),
            # test gap when it produces an end time before current timeout the furthest timeout is respected
            element("key2", 1, 9000),
            element("key2", 2, 10000),
            element("key2", 10, 10500),
            watermark(12999),
            # test gap when it produces an end time after current timeout
            element("key2", 10, 13000),
            element("key2", 10, 13500),
            element("key2", 1, 14000),
            watermark(16999),
            expect(
                (("key1-3", 10, 3010), 3009),
                (("key2-9", 5000, 8000), 7999),
                W(8999),
                (("key2-13", 9000, 12000), 11999),
                W(12999),
                (("key2-21", 13000, 16000), 15999),
                W(16999),
            ),
        ],
    ),
    flink_case(
        SUITE,
        "testDynamicProcessingTimeSessionWindows",
        1765,
        pipeline=lambda: sums(Session(mocked_gap), processing_time=True),
        inputs=INPUTS,
        result=session_of,
        notes="",
        steps=[
            # test different gaps for different keys
            processing_time(10),
            element("key1", 3, 10),
            processing_time(5000),
            element("key2", 4, 5000),
            processing_time(6000),
            element("key2", 5, 6000),
            processing_time(8999),
            # test gap when it produces an end time before current timeout the furthest timeout is respected
            processing_time(9000),
            element("key2", 1, 9000),
            processing_time(10000),
            element("key2", 2, 10000),
            processing_time(10500),
            element("key2", 10, 10500),
            processing_time(10500),
            # test gap when it produces an end time after current timeout
            processing_time(13000),
            element("key2", 10, 13000),
            processing_time(13500),
            element("key2", 10, 13500),
            processing_time(14000),
            element("key2", 1, 14000),
            processing_time(16999),
            expect(
                (("key1-3", 10, 3010), 3009),
                (("key2-9", 5000, 8000), 7999),
                (("key2-13", 9000, 12000), 11999),
                (("key2-21", 13000, 16000), 15999),
            ),
        ],
    ),
    flink_case(
        SUITE,
        "testCleanupTimeOverflow",
        1950,
        pipeline=lambda: sums(Tumbling(1000), lateness=2000),
        inputs=INPUTS,
        result=key_and_sum,
        notes="Flink must cap the cleanup time (end - 1 + lateness) at Long.MAX_VALUE rather than let it wrap around; ministream's times are Python integers, which do not overflow, so the window fires at its end and not before. The test's assertions on Java long arithmetic are not replayed.",
        steps=[
            element("key2", 1, 9223372036854774057),
            # the garbage collection timer would wrap-around
            # not replayed: assertThat(9223372036854774999 + lateness).isLessThan(9223372036854774999);
            # and it would prematurely fire with watermark (Long.MAX_VALUE - 1500)
            # not replayed: assertThat(9223372036854774999 + lateness).isLessThan(Long.MAX_VALUE - 1500);
            # if we don't correctly prevent wrap-around in the garbage collection timers this watermark will clean our window state for the just-added element/window
            watermark(9223372036854774307),
            # this watermark is before the end timestamp of our only window
            # not replayed: assertThat(9223372036854774999).isStrictlyBetween(Long.MAX_VALUE - 1500, Long.MAX_VALUE);
            # push in a watermark that will trigger computation of our window (window.maxTimestamp())
            watermark(9223372036854774999),
            expect(W(9223372036854774307), (("key2", 1), 9223372036854774999), W(9223372036854774999)),
        ],
    ),
    flink_case(
        SUITE,
        "testSideOutputDueToLatenessTumbling",
        2037,
        pipeline=lambda: sums(Tumbling("2 seconds"), late=True),
        inputs=INPUTS,
        result=key_and_sum,
        notes="",
        steps=[
            # normal element
            element("key2", 1, 1000),
            watermark(1985),
            # this will not be dropped because window.maxTimestamp() + allowedLateness > currentWatermark
            element("key2", 1, 1980),
            watermark(1999),
            # sideoutput as late, will reuse previous timestamp since only input tuple is sideoutputed
            element("key2", 1, 1998),
            element("key2", 1, 2001),
            watermark(2999),
            watermark(3999),
            expect(W(1985), (("key2", 2), 1999), W(1999), W(2999), (("key2", 1), 3999), W(3999)),
            side_output((("key2", 1), 1998)),
        ],
    ),
    flink_case(
        SUITE,
        "testSideOutputDueToLatenessSliding",
        2118,
        pipeline=lambda: sums(Sliding("3 seconds", "1 second"), late=True),
        inputs=INPUTS,
        result=key_and_sum,
        notes="A row goes to the side output only when every one of its windows is late.",
        steps=[
            element("key2", 1, 1000),
            watermark(1999),
            element("key2", 1, 2000),
            watermark(3000),
            element("key1", 1, 3001),
            # lateness is set to 0 and window size = 3 sec and slide 1, the following 2 elements (2400) are assigned to windows ending at 2999, 3999, 4999. The 2999 is dropped because it is already late (WM = 2999) but the rest are kept.
            element("key2", 1, 2400),
            element("key2", 1, 2400),
            element("key1", 1, 3001),
            element("key2", 1, 3900),
            watermark(6000),
            # sideoutput element due to lateness
            element("key1", 1, 3001),
            watermark(25000),
            expect(
                (("key2", 1), 1999),
                W(1999),
                (("key2", 2), 2999),
                W(3000),
                (("key2", 5), 3999),
                (("key1", 2), 3999),
                (("key2", 4), 4999),
                (("key1", 2), 4999),
                (("key2", 1), 5999),
                (("key1", 2), 5999),
                W(6000),
                W(25000),
            ),
            side_output((("key1", 1), 3001)),
        ],
    ),
    flink_case(
        SUITE,
        "testSideOutputDueToLatenessSessionZeroLatenessPurgingTrigger",
        2217,
        pipeline=lambda: sums(Session("3 seconds"), late=True),
        inputs=INPUTS,
        result=session_of,
        notes="The purging trigger is replayed by the default trigger: with zero allowed lateness a session's state goes when it fires, so purging its contents at the firing changes nothing.",
        steps=[
            element("key2", 1, 1000),
            watermark(1999),
            element("key2", 1, 2000),
            watermark(4998),
            # this will not be dropped because the session we're adding two has maxTimestamp after the current watermark
            element("key2", 1, 4500),
            # new session
            element("key2", 1, 8500),
            watermark(7400),
            # this will merge the two sessions into one
            element("key2", 1, 7000),
            watermark(11501),
            # new session
            element("key2", 1, 11600),
            watermark(14600),
            # this is side output as late
            element("key2", 1, 10000),
            # this is also side output as late (we test that they are not accidentally merged)
            element("key2", 1, 10100),
            element("key2", 1, 14500),
            watermark(20000),
            watermark(100000),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-1", 14500, 17500), 17499),
                W(20000),
                W(100000),
            ),
            side_output((("key2", 1), 10000), (("key2", 1), 10100)),
        ],
    ),
    flink_case(
        SUITE,
        "testSideOutputDueToLatenessSessionZeroLateness",
        2323,
        pipeline=lambda: sums(Session("3 seconds"), late=True),
        inputs=INPUTS,
        result=session_of,
        notes="",
        steps=[
            element("key2", 1, 1000),
            watermark(1999),
            element("key2", 1, 2000),
            watermark(4998),
            # this will not be dropped because the session we're adding two has maxTimestamp after the current watermark
            element("key2", 1, 4500),
            # new session
            element("key2", 1, 8500),
            watermark(7400),
            # this will merge the two sessions into one
            element("key2", 1, 7000),
            watermark(11501),
            # new session
            element("key2", 1, 11600),
            watermark(14600),
            # this is sideoutput as late, reuse last timestamp
            element("key2", 1, 10000),
            element("key2", 1, 14500),
            watermark(20000),
            watermark(100000),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-1", 14500, 17500), 17499),
                W(20000),
                W(100000),
            ),
            side_output((("key2", 1), 10000)),
        ],
    ),
    flink_case(
        SUITE,
        "testNotSideOutputDueToLatenessSessionWithLateness",
        2518,
        pipeline=lambda: sums(Session("3 seconds"), lateness=10, late=True),
        inputs=INPUTS,
        result=session_of,
        notes="",
        steps=[
            element("key2", 1, 1000),
            watermark(1999),
            element("key2", 1, 2000),
            watermark(4998),
            # this will not be sideoutput because the session we're adding two has maxTimestamp after the current watermark
            element("key2", 1, 4500),
            # new session
            element("key2", 1, 8500),
            watermark(7400),
            # this will merge the two sessions into one
            element("key2", 1, 7000),
            watermark(11501),
            # new session
            element("key2", 1, 11600),
            watermark(14600),
            # because of the small allowed lateness and because the trigger is accumulating this will be merged into the session (11600-14600) and therefore will not be sideoutput as late
            element("key2", 1, 10000),
            element("key2", 1, 14500),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-2", 10000, 14600), 14599),
            ),
            # no side output was produced at all
            side_output(none=True),
            watermark(20000),
            watermark(100000),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-2", 10000, 14600), 14599),
                (("key2-3", 10000, 17500), 17499),
                W(20000),
                W(100000),
            ),
            # no side output was produced at all
            side_output(none=True),
        ],
    ),
    flink_case(
        SUITE,
        "testNotSideOutputDueToLatenessSessionWithHugeLateness",
        2736,
        pipeline=lambda: sums(Session("3 seconds"), lateness=10_000, late=True),
        inputs=INPUTS,
        result=session_of,
        notes="",
        steps=[
            element("key2", 1, 1000),
            watermark(1999),
            element("key2", 1, 2000),
            watermark(4998),
            # this will not be sideoutput because the session we're adding two has maxTimestamp after the current watermark
            element("key2", 1, 4500),
            # new session
            element("key2", 1, 8500),
            watermark(7400),
            # this will merge the two sessions into one
            element("key2", 1, 7000),
            watermark(11501),
            # new session
            element("key2", 1, 11600),
            watermark(14600),
            element("key2", 1, 10000),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-7", 1000, 14600), 14599),
            ),
            # no side output was produced at all
            side_output(none=True),
            element("key2", 1, 14500),
            watermark(20000),
            watermark(100000),
            expect(
                W(1999),
                W(4998),
                W(7400),
                (("key2-5", 1000, 11500), 11499),
                W(11501),
                (("key2-1", 11600, 14600), 14599),
                W(14600),
                (("key2-7", 1000, 14600), 14599),
                (("key2-8", 1000, 17500), 17499),
                W(20000),
                W(100000),
            ),
            # no side output was produced at all
            side_output(none=True),
        ],
    ),
    flink_case(
        SUITE,
        "testCleanupTimerWithEmptyListStateForTumblingWindows",
        2912,
        pipeline=lambda: sums(Tumbling("2 seconds"), lateness=1),
        inputs=INPUTS,
        result=key_and_sum,
        notes="PassThroughFunction emits the window's elements: here the only one, (key, value), which is the sum.",
        steps=STEPS_CLEANUP_TIMER_WITH_EMPTY_LIST_STATE_FOR_TUMBLING_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testCleanupTimerWithEmptyReduceStateForTumblingWindows",
        2969,
        pipeline=lambda: sums(Tumbling("2 seconds"), lateness=1),
        inputs=INPUTS,
        result=key_and_sum,
        notes="",
        steps=STEPS_CLEANUP_TIMER_WITH_EMPTY_LIST_STATE_FOR_TUMBLING_WINDOWS,
    ),
    flink_case(
        SUITE,
        "testCleanupTimerWithEmptyListStateForSessionWindows",
        3029,
        pipeline=lambda: sums(Session("3 seconds"), lateness=10),
        inputs=INPUTS,
        result=key_and_sum,
        notes="PassThroughFunction emits the session's only element, (key, value), which is the sum.",
        steps=[
            element("key2", 1, 1000),
            watermark(4998),
            watermark(14600),
            expect((("key2", 1), 3999), W(4998), W(14600)),
        ],
    ),
    flink_case(
        SUITE,
        "testCleanupTimerWithEmptyReduceStateForSessionWindows",
        3080,
        pipeline=lambda: sums(Session("3 seconds"), lateness=10),
        inputs=INPUTS,
        result=session_of,
        notes="",
        steps=[
            element("key2", 1, 1000),
            watermark(4998),
            watermark(14600),
            expect((("key2-1", 1000, 4000), 3999), W(4998), W(14600)),
        ],
    ),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        "testSessionWindowsWithCountTrigger",
        832,
        "a count trigger (PurgingTrigger.of(CountTrigger.of(4))): a ministream window fires only when the watermark passes its end",
    ),
    NotExpressible(
        SUITE,
        "testSessionWindowsWithContinuousEventTimeTrigger",
        923,
        "a continuous event-time trigger (fires every 2 seconds of event time before the session ends): a ministream window fires only at its end",
    ),
    NotExpressible(
        SUITE,
        "testPointSessions",
        1019,
        "a custom window assigner (PointSessionWindows: an empty window [t, t) for some elements): ministream's assigners are tumbling, sliding and session windows",
    ),
    NotExpressible(
        SUITE,
        "testContinuousWatermarkTrigger",
        1097,
        "a continuous event-time trigger (a global window fired every 3 seconds of event time): a ministream window fires once, when the watermark passes its end",
    ),
    NotExpressible(
        SUITE,
        "testCountTrigger",
        1221,
        "a purging count trigger (a global window fired and emptied every 4 rows): a ministream window fires when the watermark passes its end",
    ),
    NotExpressible(
        SUITE,
        "testLateness",
        1867,
        "a purging trigger with allowed lateness (PurgingTrigger.of(EventTimeTrigger)): a late firing emits only the rows since the last firing, and ministream's windows accumulate",
    ),
    NotExpressible(
        SUITE,
        "testDropDueToLatenessSessionWithLatenessPurgingTrigger",
        2422,
        "a purging trigger with allowed lateness: a late firing emits only the rows since the last firing, and ministream's windows accumulate",
    ),
    NotExpressible(
        SUITE,
        "testNotSideOutputDueToLatenessSessionWithHugeLatenessPurgingTrigger",
        2633,
        "a purging trigger with allowed lateness: a late firing emits only the rows since the last firing, and ministream's windows accumulate",
    ),
    NotExpressible(
        SUITE,
        "testCleanupTimerWithEmptyListStateForTumblingWindows2",
        2840,
        "a custom trigger (EventTimeTriggerAccumGC fires again at the cleanup time)",
    ),
    NotExpressible(
        SUITE,
        "testCleanupTimerWithEmptyStateNoResultForTumblingWindows",
        3134,
        "a custom trigger that fires on every element, a window function that emits nothing, and checks of the window's internal list state",
    ),
]
