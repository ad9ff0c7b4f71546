"""Spark's ``TransformWithListStateSuite`` (Scala): list state in ``transformWithState``, replayed by ministream
(and by Spark through PySpark twins of the suite's processors).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithListStateSuite.scala``, the newest
version this project could read (commit 7df4b8db76ff of apache/spark, with Spark 4's processor API:
``TimeMode.None()``, ``handleInputRows(key, rows, timerValues)``; line numbers refer to it). The suite mixes in
``AlsoTestWithChangelogCheckpointingEnabled``: each test runs twice, with and without RocksDB's changelog
checkpoints (a storage variant), and is one case here, named after the first, ``... (with changelog
checkpointing)``. Each ``AddData`` of the tests is one batch (``MemoryStream``); the processors are written
here twice, as a ministream ``Processor`` and as a PySpark ``StatefulProcessor`` (in the twin, so that Spark's
Python workers need nothing from this file).

Six tests check that list state refuses a null value, a null list or an empty list
(``ILLEGAL_STATE_STORE_VALUE.NULL_VALUE`` and ``.EMPTY_LIST_VALUE``): ministream's ``ListState`` refuses them
too (``state/keyed.py``, ``checked_list``). They are replayed by ministream; the two empty-list ones by Spark
too, and not the null ones: a PySpark processor stores rows, and a row holding a null is no null value.
"""

from ministream.operators.process import Processor
from tests.conformance.harness import ROCKSDB, ExpectFailure, Query, add, case, check_new

SUITE = "TransformWithListStateSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithListStateSuite.scala"
VARIANT = " (with changelog checkpointing)"
INPUT_ROW = "key STRING, action STRING, value STRING"
"""The suite's ``InputRow(key, action, value)``."""
KEY_VALUE = "key STRING, value STRING"
"""The ``(String, String)`` rows of ``TestListStateProcessor``: the grouping key and a value."""


def named(test: str) -> str:
    return test + VARIANT


# -- the suite's processors, in ministream ------------------------------------------------------------------------


TRIES = {
    "tryAppendingNull": lambda items: items.add(None),
    "tryAppendingNullValueInList": lambda items: items.add_all([None]),
    "tryAppendingNullList": lambda items: items.add_all(None),
    "tryPutNullList": lambda items: items.update(None),
    "tryPuttingNullInList": lambda items: items.update([None]),
    "tryPutEmptyList": lambda items: items.update([]),
    "tryAppendingEmptyList": lambda items: items.add_all([]),
}
"""The processor's actions that write what list state refuses: Spark's ``appendValue(null)``,
``appendList(Array(null))``, ``appendList(null)``, ``put(null)``, ``put(Array(null))``, ``put(Array())`` and
``appendList(Array())``, as ``add``, ``add_all`` and ``update``."""


class ListActions(Processor):
    """``TestListStateProcessor``: each row is an action on the key's list state ``testListState``, in order:
    ``emit`` outputs the row's value; ``append`` adds it to the list; ``appendAll`` adds its comma-separated
    values; ``put`` replaces the list with them; ``remove`` clears the list; ``emitAllInState`` outputs every
    value of the list and clears it; the ``try...`` actions write what list state refuses (:data:`TRIES`). Any
    other action does nothing (the correctness test sends one,
    ``appendList``, that the processor does not know)."""

    output_schema = KEY_VALUE

    def init(self, handle):
        self.items = handle.get_list_state("testListState")

    def handle_input_rows(self, key, rows, timer_values):
        out = []
        for row in rows:
            action, value = row["action"], row["value"]
            if action == "emit":
                out.append({"key": key, "value": value})
            elif action == "emitAllInState":
                out += [{"key": key, "value": item} for item in self.items.get()]
                self.items.clear()
            elif action == "append":
                self.items.add(value)
            elif action == "appendAll":
                self.items.add_all(value.split(","))
            elif action == "put":
                self.items.update(value.split(","))
            elif action == "remove":
                self.items.clear()
            elif action in TRIES:
                TRIES[action](self.items)
        return out


class ToggleSaveAndEmit(Processor):
    """``ToggleSaveAndEmitProcessor``: a boolean value state toggles per batch of the key. Off (or unset): the
    key's rows are appended to its list state and nothing is emitted, and it turns on. On: it turns off, and
    the batch's rows are emitted, then the stored ones, and the list is cleared."""

    output_schema = "value STRING"

    def init(self, handle):
        self.stored = handle.get_list_state("testListState")
        self.on = handle.get_value_state("testValueState")

    def handle_input_rows(self, key, rows, timer_values):
        if not self.on.value():
            for row in rows:
                self.stored.add(row["value"])
            self.on.update(True)
            return []
        self.on.clear()
        stored = self.stored.get()
        self.stored.clear()
        return [{"value": row["value"]} for row in rows] + [{"value": item} for item in stored]


# -- the PySpark twins ---------------------------------------------------------------------------------------------


def list_actions_twin(inputs):
    """``inputData.toDS().groupByKey(x => x.key).transformWithState(new TestListStateProcessor(), TimeMode.None(),
    OutputMode.Update())``, with a Python processor that applies the same actions."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class ListActionsTwin(StatefulProcessor):
        def init(self, handle):
            self.items = handle.getListState("testListState", "item STRING")

        def handleInputRows(self, key, rows, timerValues):
            out = []
            for row in rows:
                if row.action == "emit":
                    out.append(Row(key=key[0], value=row.value))
                elif row.action == "emitAllInState":
                    out += [Row(key=key[0], value=item[0]) for item in self.items.get()]
                    self.items.clear()
                elif row.action == "append":
                    self.items.appendValue((row.value,))
                elif row.action == "appendAll":
                    self.items.appendList([(item,) for item in row.value.split(",")])
                elif row.action == "put":
                    self.items.put([(item,) for item in row.value.split(",")])
                elif row.action == "remove":
                    self.items.clear()
                elif row.action == "tryPutEmptyList":
                    self.items.put([])
                elif row.action == "tryAppendingEmptyList":
                    self.items.appendList([])
            return iter(out)

        def close(self):
            pass

    return inputs["inputData"].groupBy("key").transformWithState(ListActionsTwin(), KEY_VALUE, "Update", "None")


def toggle_twin(inputs):
    """``inputData.toDS().groupByKey(x => x).transformWithState(new ToggleSaveAndEmitProcessor(), ...)``."""
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor

    class ToggleTwin(StatefulProcessor):
        def init(self, handle):
            self.stored = handle.getListState("testListState", "item STRING")
            self.on = handle.getValueState("testValueState", "on BOOLEAN")

        def handleInputRows(self, key, rows, timerValues):
            values = [row.value for row in rows]
            if not (self.on.exists() and self.on.get()[0]):
                self.stored.appendList([(value,) for value in values])
                self.on.update((True,))
                return iter([])
            self.on.clear()
            stored = [item[0] for item in self.stored.get()]
            self.stored.clear()
            return iter([Row(value=value) for value in values + stored])

        def close(self):
            pass

    return inputs["inputData"].groupBy("value").transformWithState(ToggleTwin(), "value STRING", "Update", "None")


def list_actions(inputs):
    return inputs["inputData"].key_by("key").process("list", ListActions(), output_mode="update")


def toggle(inputs):
    return inputs["inputData"].key_by("value").process("toggle", ToggleSaveAndEmit(), output_mode="update")


# -- the cases -------------------------------------------------------------------------------------------------


def row(key: str, action: str, value: str = "") -> tuple:
    """An ``InputRow(key, action, value)`` of the tests."""
    return (key, action, value)


CASES = [
    case(
        SUITE,
        named("test list state correctness"),
        252,
        inputs={"inputData": INPUT_ROW},
        output=("key", "value"),
        queries={"query": Query(list_actions, list_actions_twin, "update", conf=ROCKSDB)},
        steps=[
            # no interaction with the state
            add("inputData", row("k1", "emit", "v1")),
            check_new(("k1", "v1")),
            # a simple append
            add("inputData", row("k1", "append", "v2")),
            add("inputData", row("k1", "emitAllInState")),
            check_new(("k1", "v2")),
            # several appends are kept, per key, and emitted
            add("inputData", row("k2", "append", "v1")),
            add("inputData", row("k1", "append", "v4")),
            add("inputData", row("k2", "append", "v2")),
            add("inputData", row("k1", "emit", "v5")),
            add("inputData", row("k2", "emit", "v3")),
            check_new(("k1", "v5"), ("k2", "v3")),
            add("inputData", row("k1", "emitAllInState")),
            add("inputData", row("k2", "emitAllInState")),
            check_new(("k2", "v1"), ("k2", "v2"), ("k1", "v4")),
            # appendAll, then append
            add("inputData", row("k3", "appendAll", "v1,v2,v3")),
            add("inputData", row("k3", "emit", "v4")),
            add("inputData", row("k3", "append", "v5")),
            check_new(("k3", "v4")),
            add("inputData", row("k3", "emitAllInState")),
            check_new(("k3", "v1"), ("k3", "v2"), ("k3", "v3"), ("k3", "v5")),
            # remove clears the list ("appendList" is no action of the processor)
            add("inputData", row("k4", "append", "v2")),
            add("inputData", row("k4", "appendList", "v3,v4")),
            add("inputData", row("k4", "remove")),
            add("inputData", row("k4", "emitAllInState")),
            check_new(),
            # put replaces what the list held
            add("inputData", row("k5", "appendAll", "v1,v2,v3")),
            add("inputData", row("k5", "append", "v4")),
            add("inputData", row("k5", "put", "v5,v6")),
            add("inputData", row("k5", "emitAllInState")),
            check_new(("k5", "v5"), ("k5", "v6")),
        ],
        variants=2,
        ci=True,
        notes="The test's last action checks a state metric (numListStateVars > 0): not checked.",
    ),
    case(
        SUITE,
        named("test ValueState And ListState in Processor"),
        307,
        inputs={"inputData": "value STRING"},
        output="value",
        queries={"query": Query(toggle, toggle_twin, "update", conf=ROCKSDB)},
        steps=[
            add("inputData", "k1"),
            add("inputData", "k2"),
            check_new(),
            add("inputData", "k1"),
            add("inputData", "k2"),
            check_new("k1", "k1", "k2", "k2"),
        ],
        variants=2,
        notes="Each AddData is a batch: the key's second batch emits its row, then the stored one.",
    ),
]


NULL_IN_PYSPARK = (
    "a PySpark processor's list state stores rows: a null element is a row holding a null, which Spark stores"
)


def refused(test: str, line: int, action: str, error: str, twinned: bool) -> object:
    """One of the suite's tests that write what list state refuses: the query fails with Spark's error class."""
    return case(
        SUITE,
        named(test),
        line,
        inputs={"inputData": INPUT_ROW},
        output=("key", "value"),
        queries={"query": Query(list_actions, list_actions_twin if twinned else None, "update", conf=ROCKSDB)},
        steps=[add("inputData", row("k1", action)), ExpectFailure(f"ILLEGAL_STATE_STORE_VALUE.{error}", error)],
        variants=2,
        spark=None if twinned else NULL_IN_PYSPARK,
    )


CASES += [
    refused("test appending null value in list state throw exception", 132, "tryAppendingNull", "NULL_VALUE", False),
    refused("test putting null value in list state throw exception", 152, "tryPuttingNullInList", "NULL_VALUE", False),
    refused("test putting null list in list state throw exception", 172, "tryPutNullList", "NULL_VALUE", False),
    refused("test appending null list in list state throw exception", 192, "tryAppendingNullList", "NULL_VALUE", False),
    refused("test putting empty list in list state throw exception", 212, "tryPutEmptyList", "EMPTY_LIST_VALUE", True),
    refused(
        "test appending empty list in list state throw exception",
        232,
        "tryAppendingEmptyList",
        "EMPTY_LIST_VALUE",
        True,
    ),
]

NOT_EXPRESSIBLE: list = []
