"""Flink's ``IntervalJoinOperatorTest``, replayed in ministream's continuous model (``flink.py`` says how).

Source: ``flink-runtime/src/test/java/org/apache/flink/streaming/api/operators/co/IntervalJoinOperatorTest.java``
(Flink master of 2024-12-11). The class is parametrised by ``lhsFasterThanRhs``: each test runs twice, its
name followed by ``[lhs faster than rhs: true]`` or ``[... false]``; the flag only changes the order in which
the test's helper feeds the two sides, so both runs are cases here, with the same expected records.

Every element is a ``TestElem(ts, "lhs" | "rhs")`` of key ``"key"`` with timestamp ``ts``; here a left row is
``{"key": "key", "l": ts}`` and a right row ``{"rkey": "key", "r": ts}``, and the join is
``key_by("key").join(..., between=TimeRange("l", "r", lower, upper, lower_inclusive, upper_inclusive))``. The
test's ``PassthroughFunction`` emits the pair with the later timestamp; ministream's joined row carries both
times and ``time``, the later one.

What the cases pin down (each a rule of ``operators/interval_join.py``): a row without a time is refused; an
exclusive bound moves by 1 ms; a
row is late when its time is below the operator's watermark (the lower of the two inputs'; strictly below);
a late row is dropped (Flink's late side outputs: the join's ``late_rows``); a left row is cleaned once the
watermark reaches ``l + max(upper, 0)``, a right row at ``r + max(-lower, 0)``; the state survives a restore;
no result is ever behind a watermark already forwarded.
"""

from ministream.core.plan import Dataflow
from ministream.core.sinks import CollectingSink
from ministream.core.sources import ScriptedSource
from ministream.time.ranges import TimeRange
from tests.conformance.flink import (
    buffers,
    expect_records,
    fails,
    flink_case,
    left,
    no_late_records,
    reopen,
    restore,
    right,
    side_output,
    snapshot,
    watermark,
)

SUITE = "IntervalJoinOperatorTest"
SOURCE = "flink-runtime/src/test/java/org/apache/flink/streaming/api/operators/co/IntervalJoinOperatorTest.java"
INPUTS = {"left": "lhs_timestamps", "right": "rhs_timestamps"}
"""The harness plays both ``with_watermark`` steps: ``processElement1`` / ``processWatermark1`` leave the
left one, ``...2`` the right one."""


def interval_join(lower: int, lower_inclusive: bool, upper: int, upper_inclusive: bool):
    """``IntervalJoinOperator(lower, upper, lowerInclusive, upperInclusive, ...)`` keyed by ``TestElem.key``."""

    def pipeline() -> Dataflow:
        flow = Dataflow("interval-join")
        lhs = flow.source("lhs", ScriptedSource([], columns=("key", "l"))).with_watermark("lhs_timestamps", "l", 0)
        rhs = flow.source("rhs", ScriptedSource([], columns=("rkey", "r"))).with_watermark("rhs_timestamps", "r", 0)
        between = TimeRange("l", "r", lower, upper, lower_inclusive, upper_inclusive)
        lhs.key_by("key").join("join", rhs.key_by("rkey"), between=between).sink("output", CollectingSink())
        return flow

    return pipeline


def elements_and_watermarks(first: int, last: int, lhs_faster: bool) -> list:
    """The test's ``processElementsAndWatermarks(from, to)``: each side's elements ``first..last``, each
    followed by its watermark; the left side first when ``lhs_faster``, else the right side first."""
    lhs = [step for ts in range(first, last + 1) for step in (left(ts), watermark(ts, "left"))]
    rhs = [step for ts in range(first, last + 1) for step in (right(ts), watermark(ts, "right"))]
    return lhs + rhs if lhs_faster else rhs + lhs


def fill() -> list:
    """Five elements per side (left first), no watermark: the state cleanup tests' start."""
    return [left(ts) for ts in range(1, 6)] + [right(ts) for ts in range(1, 6)]


def both(test: str, line: int, make_steps, bounds=(-1, True, 1, True), notes: str = "") -> list:
    """The two runs of a parametrised test: ``make_steps(lhs_faster)`` gives each run's steps."""
    return [
        flink_case(
            SUITE,
            f"{test} [lhs faster than rhs: {str(flag).lower()}]",
            line,
            pipeline=interval_join(*bounds),
            inputs=INPUTS,
            result=lambda row: (row["l"], row["r"]),
            notes=notes,
            steps=make_steps(flag),
        )
        for flag in (True, False)
    ]


def bounds_case(test: str, line: int, bounds: tuple, pairs: list, notes: str = "") -> list:
    """A test of one pair of bounds: elements and watermarks 1 to 4 on each side, then the pairs."""
    return both(
        test,
        line,
        lambda flag: [*elements_and_watermarks(1, 4, flag), expect_records(*pairs), no_late_records()],
        bounds,
        notes,
    )


def cleanup_case(test: str, line: int, bounds: tuple, at_1: tuple, at_4: tuple) -> list:
    """A state cleanup test: after five elements per side, the buffers at the common watermarks 1, 4, 6."""
    return both(
        test,
        line,
        lambda flag: [
            *fill(),
            watermark(1, "left"),
            watermark(1, "right"),  # common watermark 1
            buffers(*at_1),
            watermark(4, "left"),
            watermark(4, "right"),  # common watermark 4
            buffers(*at_4),
            watermark(6, "left"),
            watermark(6, "right"),  # common watermark 6: every buffer empty
            buffers([], []),
        ],
        bounds,
        "The output is not checked here, only the buffers.",
    )


def mirrored(flag: bool) -> list:
    return [
        *elements_and_watermarks(1, 4, flag),
        expect_records((1, 2), (1, 3), (2, 3), (2, 4), (3, 4)),
        no_late_records(),
        # a fresh harness: the bounds mirrored (-upper, upperInclusive, -lower, lowerInclusive)
        reopen(interval_join(-3, False, -1, True)),
        *elements_and_watermarks(1, 4, flag),
        expect_records((2, 1), (3, 1), (3, 2), (4, 2), (4, 3)),
        no_late_records(),
    ]


def restored(flag: bool) -> list:
    steps = []
    for ts in (1, 2, 3):
        steps += [left(ts), watermark(ts, "left"), right(ts), watermark(ts, "right")]
    return [
        *steps,
        snapshot(),
        expect_records((1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3)),  # the first harness's output
        no_late_records(),
        restore(),
        left(4),
        watermark(4, "left"),
        right(4),
        watermark(4, "right"),
        expect_records((3, 4), (4, 3), (4, 4)),  # the restored harness's output only
        no_late_records(),
    ]


def timestamps(flag: bool) -> list:
    """The context tests: the function asserts, for every pair, the left time, the right time or the result's
    time (the later of the two); here: every pair of the bounds, each with ``time == max(l, r)``."""
    return [
        *elements_and_watermarks(1, 4, flag),
        expect_records((1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3), (4, 4)),
    ]


def discards_late(flag: bool) -> list:
    steps = [step for ts in (1, 2, 3) for step in (left(ts), right(ts))]
    steps += [watermark(3, "left"), watermark(3, "right"), left(1)]  # left 1 is late: not joined again
    steps += [step for ts in (4, 5) for step in (left(ts), right(ts))]
    return [
        *steps,
        expect_records(
            (1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3), (4, 4), (4, 5), (5, 4), (5, 5)
        ),
        no_late_records(),
    ]


def late_data(flag: bool) -> list:
    return [
        left(3),
        right(3),
        watermark(3, "left"),
        watermark(3, "right"),
        left(4),
        right(4),
        left(1),  # the left element is late
        right(2),  # the right element is late
        left(5),
        right(5),
        expect_records((3, 3), (3, 4), (4, 3), (4, 4), (4, 5), (5, 4), (5, 5)),
        side_output(1, side="left"),
        side_output(2, side="right"),
    ]


CASES = [
    *both(
        "testImplementationMirrorsCorrectly",
        72,
        mirrored,
        (1, True, 3, False),
        "Two harnesses: (lower 1 inclusive, upper 3 exclusive), then the mirrored bounds, which give the mirrored pairs.",
    ),
    *bounds_case(
        "testNegativeInclusiveAndNegativeInclusive", 104, (-2, True, -1, True), [(2, 1), (3, 1), (3, 2), (4, 2), (4, 3)]
    ),
    *bounds_case(
        "testNegativeInclusiveAndPositiveInclusive",
        119,
        (-1, True, 1, True),
        [(1, 1), (1, 2), (2, 1), (2, 2), (2, 3), (3, 2), (3, 3), (3, 4), (4, 3), (4, 4)],
    ),
    *bounds_case(
        "testPositiveInclusiveAndPositiveInclusive", 139, (1, True, 2, True), [(1, 2), (1, 3), (2, 3), (2, 4), (3, 4)]
    ),
    *bounds_case("testNegativeExclusiveAndNegativeExlusive", 154, (-3, False, -1, False), [(3, 1), (4, 2)]),
    *bounds_case(
        "testNegativeExclusiveAndPositiveExlusive", 164, (-1, False, 1, False), [(1, 1), (2, 2), (3, 3), (4, 4)]
    ),
    *bounds_case("testPositiveExclusiveAndPositiveExlusive", 178, (1, False, 3, False), [(1, 3), (2, 4)]),
    *cleanup_case(
        "testStateCleanupNegativeInclusiveNegativeInclusive",
        188,
        (-1, True, 0, True),
        ([2, 3, 4, 5], [1, 2, 3, 4, 5]),
        ([5], [4, 5]),
    ),
    *cleanup_case(
        "testStateCleanupNegativePositiveNegativeExlusive",
        218,
        (-2, False, 1, False),
        ([2, 3, 4, 5], [1, 2, 3, 4, 5]),
        ([5], [4, 5]),
    ),
    *cleanup_case(
        "testStateCleanupPositiveInclusivePositiveInclusive",
        247,
        (0, True, 1, True),
        ([1, 2, 3, 4, 5], [2, 3, 4, 5]),
        ([4, 5], [5]),
    ),
    *cleanup_case(
        "testStateCleanupPositiveExlusivePositiveExclusive",
        276,
        (-1, False, 2, False),
        ([1, 2, 3, 4, 5], [2, 3, 4, 5]),
        ([4, 5], [5]),
    ),
    *both(
        "testRestoreFromSnapshot",
        305,
        restored,
        notes="The buffers survive a snapshot and a restore: left 3 and right 3 join the new elements at 4.",
    ),
    *both(
        "testContextCorrectLeftTimestamp",
        388,
        timestamps,
        notes="The function's assertion (ctx.getLeftTimestamp() == left.ts) is the joined row's l column.",
    ),
    *both(
        "testReturnsCorrectTimestamp",
        427,
        timestamps,
        notes="The function's assertion (ctx.getTimestamp() == max of the two) is the joined row's time column.",
    ),
    *both(
        "testContextCorrectRightTimestamp",
        469,
        timestamps,
        notes="The function's assertion (ctx.getRightTimestamp() == right.ts) is the joined row's r column.",
    ),
    *both(
        "testDiscardsLateData",
        540,
        discards_late,
        notes="Left 1 after the common watermark 3 is late (1 < 3): dropped, and not joined again.",
    ),
    *both(
        "testLateData",
        574,
        late_data,
        notes="Flink sends the late elements to each side's late output tag; ministream has no side output on a "
        "join, and lists them in the join's late rows (Run.late_rows()), which the case checks per side.",
    ),
]

NO_TIMESTAMP_NOTES = (
    "A record without a timestamp is a row whose time column is None; ministream refuses it as Flink does "
    "(Flink's message: 'Long.MIN_VALUE timestamp: Elements used in interval stream joins need to have timestamps "
    "meaningful timestamps.')."
)
CASES += [
    *both(
        "testFailsWithNoTimestampsLeft",
        508,
        lambda flag: [fails(left(None), "Elements used in interval stream joins need to have timestamps")],
        (0, True, 0, True),
        NO_TIMESTAMP_NOTES,
    ),
    *both(
        "testFailsWithNoTimestampsRight",
        524,
        lambda flag: [fails(right(None), "Elements used in interval stream joins need to have timestamps")],
        (0, True, 0, True),
        NO_TIMESTAMP_NOTES,
    ),
]

NOT_EXPRESSIBLE: list = []
