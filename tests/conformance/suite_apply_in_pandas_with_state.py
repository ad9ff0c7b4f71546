"""PySpark's ``applyInPandasWithState`` tests (``GroupedApplyInPandasWithStateTests``), replayed by ministream
(a keyed process function) and by Spark.

Source: ``python/pyspark/sql/tests/pandas/test_pandas_grouped_map_with_state.py`` (Spark master of
2026-01-07). Every test reads one text file with the lines ``hello`` and ``this`` (one micro-batch), groups
by the line, and calls a function once per group with the group's rows and its state; the function may emit
any rows, for its key or not. ``foreachBatch`` compares each batch as a set.
"""

from ministream.operators.process import Processor
from tests.conformance.harness import NotExpressible, Query, add, case, check_last

SUITE = "GroupedApplyInPandasWithStateTests"
SOURCE = "python/pyspark/sql/tests/pandas/test_pandas_grouped_map_with_state.py"
LINES = {"lines": "value STRING"}


class Function(Processor):
    """The test's function as a process function: ``state`` is a value state ``c``; ``kind`` says what it
    emits (each test's function)."""

    output_schema = "key STRING, countAsString STRING"

    def __init__(self, kind: str):
        self.kind = kind

    def init(self, handle):
        self.state = handle.get_value_state("c")

    def handle_input_rows(self, key, rows, timer_values):
        total = len(rows)
        if self.kind in ("basic", "with_null"):
            self.state.update(total)
            assert self.state.value() == 1
            return [{"key": key if self.kind == "basic" else None, "countAsString": str(total)}]
        if self.kind == "no_state":
            return [{"key": key, "countAsString": "100"}, {"key": "foo", "countAsString": "222"}]
        if self.kind == "more_data":
            self.state.update(1)
            return [
                {"key": key, "countAsString": "1"},
                {"key": "foo", "countAsString": "666"},
                {"key": key + "_2", "countAsString": "2"},
            ]
        if self.kind == "fewer_data":
            self.state.update(1)
        return []


def query(kind: str) -> Query:
    def pipeline(inputs):
        return inputs["lines"].key_by("value").process("function", Function(kind), output_mode="update")

    def twin(inputs):
        from pyspark.sql.streaming.state import GroupStateTimeout

        def function(key, frames, state):
            import pandas as pd

            total = sum(len(frame) for frame in frames)
            if kind in ("basic", "with_null"):
                state.update((total,))
                assert state.get[0] == 1
                yield pd.DataFrame({"key": [key[0] if kind == "basic" else None], "countAsString": [str(total)]})
            elif kind == "no_state":
                yield pd.DataFrame({"key": [key[0], "foo"], "countAsString": ["100", "222"]})
            elif kind == "more_data":
                state.update((1,))
                yield pd.DataFrame({"key": [key[0], "foo", key[0] + "_2"], "countAsString": ["1", "666", "2"]})
            else:
                if kind == "fewer_data":
                    state.update((1,))
                yield pd.DataFrame({"key": [], "countAsString": []})

        lines = inputs["lines"]
        return lines.groupBy(lines["value"]).applyInPandasWithState(
            function, Function.output_schema, "c LONG", "Update", GroupStateTimeout.NoTimeout
        )

    return Query(pipeline, twin, "update", conf={"spark.sql.shuffle.partitions": "5"})


def function_case(test: str, line: int, kind: str, expected: list, **settings):
    return case(
        SUITE,
        test,
        line,
        inputs=LINES,
        output=("key", "countAsString"),
        queries={"query": query(kind)},
        steps=[add("lines", "hello", "this"), check_last(*expected, as_set=True)],
        files=True,
        **settings,
    )


CASES = [
    function_case("test_apply_in_pandas_with_state_basic", 103, "basic", [("hello", "1"), ("this", "1")], ci=True),
    function_case(
        "test_apply_in_pandas_with_state_basic_no_state",
        123,
        "no_state",
        [("hello", "100"), ("this", "100"), ("foo", "222")],
    ),
    function_case("test_apply_in_pandas_with_state_basic_no_state_no_data", 138, "no_data", []),
    function_case(
        "test_apply_in_pandas_with_state_basic_more_data",
        149,
        "more_data",
        [("hello", "1"), ("foo", "666"), ("hello_2", "2"), ("this", "1"), ("this_2", "2")],
    ),
    function_case("test_apply_in_pandas_with_state_basic_fewer_data", 170, "fewer_data", []),
    function_case("test_apply_in_pandas_with_state_basic_with_null", 182, "with_null", [(None, "1")]),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        "test_apply_in_pandas_with_state_python_worker_random_failure",
        199,
        "kills PySpark's Python worker at random and reruns until the output converges: not deterministic",
    ),
    NotExpressible(
        SUITE,
        "test_apply_in_pandas_with_state_int_to_decimal_coercion",
        321,
        "pandas' int to decimal coercion of output columns (spark.sql.execution.pythonUDF.pandas...)",
    ),
]
