"""The conformance suite's catalog: every suite's cases, which the tests replay, and the page that counts them.

Each ``suite_*.py`` module defines ``SUITE``, ``SOURCE`` (the upstream test file), ``CASES`` (the tests
replayed) and ``NOT_EXPRESSIBLE`` (the tests that are not, each with its reason). ``python -m
tests.conformance.catalog`` writes ``tutorials/conformance.md`` from them; ``--check`` says whether the page
is up to date (the test suite runs that check).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.conformance import (
    suite_apply_in_pandas_with_state,
    suite_event_time_watermark,
    suite_flink_interval_join,
    suite_flink_window_operator,
    suite_multi_stateful_operators,
    suite_pyspark_transform_with_state,
    suite_state_primitives,
    suite_streaming_aggregation,
    suite_streaming_deduplication,
    suite_streaming_join,
    suite_streaming_session_window,
    suite_transform_with_list_state,
    suite_transform_with_map_state,
    suite_transform_with_state,
    suite_transform_with_state_chaining,
    suite_transform_with_state_initial_state,
    suite_transform_with_state_ttl,
)

SUITES = [
    suite_event_time_watermark,
    suite_streaming_aggregation,
    suite_streaming_deduplication,
    suite_streaming_session_window,
    suite_streaming_join,
    suite_multi_stateful_operators,
    suite_transform_with_state,
    suite_transform_with_list_state,
    suite_transform_with_map_state,
    suite_transform_with_state_chaining,
    suite_transform_with_state_initial_state,
    suite_transform_with_state_ttl,
    suite_state_primitives,
    suite_pyspark_transform_with_state,
    suite_apply_in_pandas_with_state,
    suite_flink_window_operator,
    suite_flink_interval_join,
]
"""The suite modules, in the order of the page."""

ENGINE_CASES = [case for suite in SUITES for case in suite.CASES]
NOT_EXPRESSIBLE = [item for suite in SUITES for item in suite.NOT_EXPRESSIBLE]

ALL_SPARK = os.environ.get("MINISTREAM_CONFORMANCE", "").strip().lower() == "all"
"""``MINISTREAM_CONFORMANCE=all``: the Spark replay runs every case it can, not only those marked for CI."""

SPARK_CASES = [case for case in ENGINE_CASES if case.spark is None and (case.ci or ALL_SPARK)]


def case_id(case) -> str:
    """A case's test id: its suite and test name."""
    return case.id


def run_case(case) -> None:
    """Replay one case in ministream: a Spark ``Case`` batch by batch, a ``FlinkCase`` message by message, a
    ``PrimitiveCase`` (a unit test of Spark's state primitives) call by call on ministream's primitives."""
    from tests.conformance.flink import FlinkCase, run_flink
    from tests.conformance.harness import run_engine
    from tests.conformance.primitives import PrimitiveCase, run_primitive

    if isinstance(case, FlinkCase):
        run_flink(case)
    elif isinstance(case, PrimitiveCase):
        run_primitive(case)
    else:
        run_engine(case)


# -- the page --------------------------------------------------------------------------------------------------

PAGE = Path(__file__).resolve().parents[2] / "tutorials" / "conformance.md"

TEST_NAMES = {
    suite_event_time_watermark: (33, "EventTimeWatermarkSuite"),
    suite_streaming_aggregation: (42, "StreamingAggregationSuite"),
    suite_streaming_deduplication: (
        31,
        "StreamingDeduplicationSuite (23), StreamingDeduplicationWithinWatermarkSuite (8)",
    ),
    suite_streaming_session_window: (48, "StreamingSessionWindowSuite"),
    suite_streaming_join: (
        186,
        (
            "StreamingInnerJoinSuite (72), StreamingOuterJoinSuite (73), StreamingFullOuterJoinSuite (20), "
            "StreamingLeftSemiJoinSuite (21)"
        ),
    ),
    suite_multi_stateful_operators: (10, "MultiStatefulOperatorsSuite"),
    suite_transform_with_state: (
        130,
        "TransformWithStateUnsafeRowSuite (58), TransformWithStateAvroSuite (58), TransformWithStateValidationSuite (14)",
    ),
    suite_transform_with_list_state: (16, "TransformWithListStateSuite"),
    suite_transform_with_map_state: (16, "TransformWithMapStateSuite"),
    suite_transform_with_state_chaining: (40, "TransformWithStateChainingSuite"),
    suite_transform_with_state_initial_state: (12, "TransformWithStateInitialStateSuite"),
    suite_transform_with_state_ttl: (
        100,
        "TransformWithValueStateTTLSuite (28), TransformWithListStateTTLSuite (44), TransformWithMapStateTTLSuite (28)",
    ),
    suite_state_primitives: (
        114,
        (
            "TimerSuite (24), ValueStateSuite (24), ListStateSuite (22), MapStateSuite (10), "
            "StatefulProcessorHandleSuite (34)"
        ),
    ),
    suite_pyspark_transform_with_state: (
        40,
        "TransformWithStateInPandasTests (20), TransformWithStateInPySparkTests (20)",
    ),
    suite_apply_in_pandas_with_state: (8, "GroupedApplyInPandasWithStateTests"),
    suite_flink_window_operator: (35, "WindowOperatorTest"),
    suite_flink_interval_join: (38, "IntervalJoinOperatorTest"),
}
"""Per suite module: how many test names the upstream runners generate (a test runs once per storage variant,
encoding or parameter), and the test classes. Every one is a replayed case's (``variants``) or a listed one's."""

SPARK_SECONDS_PER_BATCH = 1.2
"""What a data batch of a case costs the Spark replay, measured over every twin (617 s for 519 data batches on 2
cores): the micro-batch itself (about 0.8 s with the shared session, tutorials/spark-facts.md), plus the
query's starts and restarts and its no-data batches."""


def _variants(item) -> int:
    return getattr(item, "variants", 1)


def _spark_batches(case) -> int:
    """How many data batches the Spark replay of a case runs (one per ``AddData``), an estimate of its cost."""
    from tests.conformance.harness import AddData

    return sum(1 for step in case.steps if isinstance(step, AddData))


def _upstream(module) -> str:
    source = module.SOURCE
    return f"`{source.rsplit('/', 1)[-1]}`"


def render_page() -> str:
    """The text of ``tutorials/conformance.md``, from the suites' cases."""
    lines = [
        "# Conformance: Spark's and Flink's own streaming tests, replayed",
        "",
        "<!-- Generated by `python -m tests.conformance.catalog` from tests/conformance/suite_*.py; do not edit:",
        "     tests/conformance/test_conformance.py checks that this page is up to date. -->",
        "",
        "ministream claims to run streaming queries the way Spark (micro-batch model) and Flink (continuous",
        "model) do. The strongest evidence it can give is the engines' own tests: `tests/conformance/` replays",
        "the tests of Spark's streaming suites (and of PySpark's stateful APIs) and of Flink's window and",
        "interval-join operators, one test per case, each citing its suite and test name and asserting the",
        "rows the original test asserts. Spark's `StreamTest` actions become ministream trigger firings",
        "(`AddData` then `CheckAnswer` is a batch, no-data batches run where Spark's rule runs them,",
        "`StopStream`/`StartStream` is a restart from a checkpoint); Flink's operator harness becomes messages",
        "sent to the operator in the continuous model (`tests/conformance/flink.py`).",
        "",
        "The same steps also run through Spark itself: each Spark case has a PySpark twin (written in the case,",
        "or copied from the PySpark test), so that the transcription, not only ministream, is checked against the",
        "real engine. A case whose ministream answer or Spark answer differs from the test's fails the suite,",
        "unless the difference was found and explained: those few are listed below, with the reason, and a test",
        "checks that each still differs (a fix shows at once).",
        "",
        "## What runs where",
        "",
    ]
    spark_all = [case for case in ENGINE_CASES if case.spark is None]
    spark_ci = [case for case in spark_all if case.ci]
    batches_all = sum(_spark_batches(case) for case in spark_all)
    batches_ci = sum(_spark_batches(case) for case in spark_ci)
    lines += [
        (
            f"- **Every replayed case, in ministream** ({len(ENGINE_CASES)} cases, a few seconds):"
            " `pytest tests/conformance -m 'not spark'`, part of the engine tests CI runs."
        ),
        (
            f"- **The Spark twins CI runs** ({len(spark_ci)} cases, {batches_ci} data batches, about"
            f" {round(batches_ci * SPARK_SECONDS_PER_BATCH / 60)} minutes at {SPARK_SECONDS_PER_BATCH} s a batch):"
            " `pytest tests/conformance -m spark`, with the other Spark tests. They are chosen to cover each suite"
            " and each kind of step (restarts, no-data batches, failures, several inputs)."
        ),
        (
            f"- **Every Spark twin** ({len(spark_all)} cases, {batches_all} data batches, about"
            f" {round(batches_all * SPARK_SECONDS_PER_BATCH / 60)} minutes):"
            " `MINISTREAM_CONFORMANCE=all pytest tests/conformance -m spark`."
        ),
        "",
        "Parts of the plan API that no upstream test exercises positively (a condition on both rows of a join",
        "pair, a left outer stream-static join) have cases of ministream's own, with hand-written twins, in",
        "`tests/conformance/test_api_twins.py`; CI runs them in both engines. The module of",
        "`MultiStatefulOperatorsSuite` (`tests/conformance/suite_multi_stateful_operators.py`) also holds one case",
        "of ministream's own, run in both engines: a window after a left outer join that counts the rows the join",
        "pads late. It counts no upstream test name, and the table below leaves it out.",
        "",
        "## Cases per suite",
        "",
        "A *test name* is one test as the upstream runner names it (a test that runs once per state store, encoding",
        "or parameter has several); a *case* is one replayed test (its storage variants count once).",
        "",
        (
            "| suite | upstream file | test names | replayed cases (their test names) | agree in ministream |"
            " Spark twins (in CI) | not expressible (test names) |"
        ),
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    totals = [0, 0, 0, 0, 0, 0, 0, 0]
    for module in SUITES:
        names, classes = TEST_NAMES[module]
        cases = [case for case in module.CASES if _variants(case)]  # a case of ministream's own has 0 test names
        listed = module.NOT_EXPRESSIBLE
        covered = sum(_variants(case) for case in cases)
        twins = [case for case in cases if case.spark is None]
        in_ci = [case for case in twins if case.ci]
        listed_names = sum(item.variants for item in listed)
        flink = "flink" in module.__name__
        twin_text = "(Flink)" if flink else f"{len(twins)} ({len(in_ci)})"
        agree = sum(not getattr(case, "differs", "") for case in cases)
        lines.append(
            f"| {classes} | {_upstream(module)} | {names} | {len(cases)} ({covered}) | {agree} | {twin_text} |"
            f" {len(listed)} ({listed_names}) |"
        )
        for i, value in enumerate(
            [names, len(cases), covered, len(twins), len(in_ci), len(listed), listed_names, agree]
        ):
            totals[i] += value
    lines += [
        (
            f"| **all** | | {totals[0]} | {totals[1]} ({totals[2]}) | {totals[7]} | {totals[3]} ({totals[4]}) |"
            f" {totals[5]} ({totals[6]}) |"
        ),
        "",
        "Replayed in ministream but not in Spark:",
        "",
    ]
    no_twin: dict[str, list[str]] = {}
    for case in ENGINE_CASES:
        if case.spark is not None:
            no_twin.setdefault(case.spark, []).append(case.test)
    for reason, tests in no_twin.items():
        shown = f"{len(tests)} cases" if len(tests) > 12 else ", ".join(f"`{test}`" for test in tests)
        lines.append(f"- {reason}: {shown}.")
    differing = [case for case in ENGINE_CASES if getattr(case, "differs", "")]
    if differing:
        lines += ["", "## Where ministream differs, and why", ""]
        lines += [f"- **{case.id}**: {case.differs}" for case in differing]
    lines += [
        "",
        "## Not expressible, and why",
        "",
        "Each listed test needs something ministream's API does not say (or an engine internal: a checkpoint",
        "file of an older Spark, a state schema check, a plan inspection, a metric). The list only shrinks:",
        "`tests/conformance/not_expressible.txt` freezes it, and a test fails if a test is added to it.",
        "",
    ]
    for module in SUITES:
        if not module.NOT_EXPRESSIBLE:
            continue
        lines += [f"### {TEST_NAMES[module][1]}", ""]
        for item in module.NOT_EXPRESSIBLE:
            many = f" ({item.variants} test names)" if item.variants > 1 else ""
            lines.append(f"- `{item.test}`{many}, line {item.line}: {item.reason}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


BASELINE = Path(__file__).resolve().parent / "not_expressible.txt"
"""The ids of the tests listed as not expressible when the list was frozen: the list may only shrink."""


def main(argv: list[str] | None = None) -> int:
    """Write the page (``--check``: only say whether it is up to date; ``--freeze``: rewrite the baseline)."""
    args = sys.argv[1:] if argv is None else argv
    text = render_page()
    if "--check" in args:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE} is out of date: run python -m tests.conformance.catalog")
            return 1
        return 0
    if "--freeze" in args:
        BASELINE.write_text("".join(f"{item.id}\n" for item in NOT_EXPRESSIBLE))
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
