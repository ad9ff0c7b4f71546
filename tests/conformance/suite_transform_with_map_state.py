"""Spark's ``TransformWithMapStateSuite`` (Scala): map state in ``transformWithState``, replayed by ministream
(and by Spark through PySpark twins of the suite's processor).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithMapStateSuite.scala``, the newest
version this project could read (commit 6d7b1e42a599 of apache/spark, ``TimeMode.None()``; line numbers refer
to it). The suite mixes in ``AlsoTestWithChangelogCheckpointingEnabled``: each test runs twice, with and
without RocksDB's changelog checkpoints (a storage variant), and is one case here, named after the first,
``... (with changelog checkpointing)``. Each ``AddData`` of the tests is one batch (``MemoryStream``). The
input rows are the suite's ``InputMapRow(key, action, value: (String, String))``: the pair is a struct column
``value`` whose fields are a map key and a map value.

Five tests check that map state refuses a null map key (in ``getValue``, ``containsKey``, ``updateValue`` and
``removeKey``) and a null map value (``ILLEGAL_STATE_STORE_VALUE.NULL_VALUE``): ministream's ``MapState``
refuses them too (``state/keyed.py``, ``refuse_null``). They are replayed by ministream, not by Spark: a PySpark
processor's map keys and values are rows, and a row holding a null is no null value.
"""

from ministream.operators.process import Processor
from tests.conformance.harness import ROCKSDB, ExpectFailure, NotExpressible, Query, add, case, check_answer, check_new

SUITE = "TransformWithMapStateSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/TransformWithMapStateSuite.scala"
VARIANT = " (with changelog checkpointing)"
INPUT_MAP_ROW = "key STRING, action STRING, value STRUCT<_1: STRING, _2: STRING>"
"""The suite's ``InputMapRow(key, action, value: (String, String))``."""
OUTPUT = "key STRING, user_key STRING, user_value STRING"
"""The ``(String, String, String)`` rows of ``TestMapStateProcessor``."""


def named(test: str) -> str:
    return test + VARIANT


def pair(value) -> tuple:
    """The ``(map key, map value)`` of a row's struct ``value`` (a tuple, or a dict of its two fields)."""
    return tuple(value.values()) if isinstance(value, dict) else tuple(value)


# -- the suite's processor, in ministream --------------------------------------------------------------------------


class MapActions(Processor):
    """``TestMapStateProcessor``: each row is an action on the key's map state ``sessionState``, in order, with
    the row's pair (map key, map value): ``updateValue`` puts the pair; ``getValue`` outputs the map key and its
    value (null when absent); ``containsKey`` outputs the map key and "true" or "false"; ``exists`` outputs
    "exists" and whether the key has a map at all; ``iterator`` outputs every (map key, value); ``keys`` every
    map key beside the row's map value; ``values`` every value beside the row's map key; ``removeKey`` removes
    the map key; ``clear`` removes the whole map."""

    output_schema = OUTPUT

    def init(self, handle):
        self.map = handle.get_map_state("sessionState")

    def handle_input_rows(self, key, rows, timer_values):
        out = []

        def emit(first, second):
            out.append({"key": key, "user_key": first, "user_value": second})

        for row in rows:
            action = row["action"]
            user_key, user_value = pair(row["value"])
            if action == "exists":
                emit("exists", str(self.map.exists()).lower())  # Scala's Boolean.toString
            elif action == "getValue":
                emit(user_key, self.map.get(user_key))
            elif action == "containsKey":
                emit(user_key, str(self.map.contains(user_key)).lower())
            elif action == "updateValue":
                self.map.put(user_key, user_value)
            elif action == "iterator":
                for map_key, value in self.map.items():
                    emit(map_key, value)
            elif action == "keys":
                map_keys = self.map.keys()  # in insertion order (the check compares multisets)
                for map_key in map_keys:
                    emit(map_key, user_value)
            elif action == "values":
                for entry in self.map.items():  # ministream's MapState has no values(): each pair's value
                    emit(user_key, entry[1])
            elif action == "removeKey":
                self.map.remove(user_key)
            elif action == "clear":
                self.map.clear()
        return out


# -- the PySpark twin ----------------------------------------------------------------------------------------------


def map_actions_twin(output_mode: str):
    """``inputData.toDS().groupByKey(x => x.key).transformWithState(new TestMapStateProcessor(),
    TimeMode.None(), <output mode>)``, with a Python processor that applies the same actions."""

    def twin(inputs):
        from pyspark.sql import Row
        from pyspark.sql.streaming import StatefulProcessor

        class MapActionsTwin(StatefulProcessor):
            def init(self, handle):
                self.map = handle.getMapState("sessionState", "k STRING", "v STRING")

            def handleInputRows(self, key, rows, timerValues):
                out = []

                def emit(first, second):
                    out.append(Row(key=key[0], user_key=first, user_value=second))

                for row in rows:
                    # the struct comes as a dict (a Row would take the same subscripts)
                    action, user_key, user_value = row.action, row.value["_1"], row.value["_2"]
                    if action == "exists":
                        emit("exists", str(self.map.exists()).lower())
                    elif action == "getValue":
                        found = self.map.getValue((user_key,))
                        emit(user_key, None if found is None else found[0])
                    elif action == "containsKey":
                        emit(user_key, str(self.map.containsKey((user_key,))).lower())
                    elif action == "updateValue":
                        self.map.updateValue((user_key,), (user_value,))
                    elif action == "iterator":
                        for map_key, value in self.map.iterator():
                            emit(map_key[0], value[0])
                    elif action == "keys":
                        map_keys = self.map.keys()  # an iterator of one-field tuples
                        for map_key in map_keys:
                            emit(map_key[0], user_value)
                    elif action == "values":
                        for value in self.map.values():
                            emit(user_key, value[0])
                    elif action == "removeKey":
                        self.map.removeKey((user_key,))
                    elif action == "clear":
                        self.map.clear()
                return iter(out)

            def close(self):
                pass

        frame = inputs["inputData"]
        return frame.groupBy("key").transformWithState(MapActionsTwin(), OUTPUT, output_mode.capitalize(), "None")

    return twin


def map_query(output_mode: str) -> Query:
    def pipeline(inputs):
        return inputs["inputData"].key_by("key").process("map", MapActions(), output_mode=output_mode)

    return Query(pipeline, map_actions_twin(output_mode), output_mode, conf=ROCKSDB)


# -- the cases -------------------------------------------------------------------------------------------------


def row(key: str, action: str, user_key: str = "", user_value: str = "") -> tuple:
    """An ``InputMapRow(key, action, (user_key, user_value))`` of the tests."""
    return (key, action, (user_key, user_value))


CASES = [
    case(
        SUITE,
        named("Test retrieving value with non-existing user key"),
        115,
        inputs={"inputData": INPUT_MAP_ROW},
        output=("key", "user_key", "user_value"),
        queries={"query": map_query("update")},
        steps=[add("inputData", row("k1", "getValue", "v1")), check_answer(("k1", "v1", None))],
        variants=2,
    ),
    case(
        SUITE,
        named("Test map state correctness"),
        163,
        inputs={"inputData": INPUT_MAP_ROW},
        output=("key", "user_key", "user_value"),
        queries={"query": map_query("append")},
        steps=[
            # exists()
            add("inputData", row("k1", "updateValue", "v1", "10")),
            add("inputData", row("k1", "exists")),
            add("inputData", row("k2", "exists")),
            check_new(("k1", "exists", "true"), ("k2", "exists", "false")),
            # updateValue and getValue: the same map key under two grouping keys, and put again
            add("inputData", row("k1", "updateValue", "v2", "5")),
            add("inputData", row("k2", "updateValue", "v2", "3")),
            add("inputData", row("k2", "updateValue", "v2", "12")),
            add("inputData", row("k2", "updateValue", "v4", "1")),
            add("inputData", row("k1", "getValue", "v2")),
            check_new(("k1", "v2", "5")),
            add("inputData", row("k2", "getValue", "v2")),
            check_new(("k2", "v2", "12")),
            # the whole map of a grouping key: pairs, keys, values
            add("inputData", row("k2", "iterator")),
            check_new(("k2", "v2", "12"), ("k2", "v4", "1")),
            add("inputData", row("k2", "keys")),
            check_new(("k2", "v2", ""), ("k2", "v4", "")),
            add("inputData", row("k2", "values")),
            check_new(("k2", "", "12"), ("k2", "", "1")),
            # removeKey and clear
            add("inputData", row("k1", "removeKey", "v2")),
            add("inputData", row("k1", "containsKey", "v2")),
            check_new(("k1", "v2", "false")),
            add("inputData", row("k2", "clear")),
            add("inputData", row("k2", "iterator")),
            check_new(),
            add("inputData", row("k2", "exists")),
            add("inputData", row("k1", "clear")),
            add("inputData", row("k3", "updateValue", "v7", "11")),
            check_new(("k2", "exists", "false")),
        ],
        variants=2,
        ci=True,
        notes="The test's last action checks state metrics (numMapStateVars, one row updated and one removed in "
        "the last batch): not checked.",
    ),
]

NULL_IN_PYSPARK = "a PySpark processor's map keys and values are rows: a row holding a null is no null value"


def refused(test: str, line: int, input_row: tuple) -> object:
    """One of the suite's tests that give map state a null key or value: the query fails (``NULL_VALUE``)."""
    return case(
        SUITE,
        named(test),
        line,
        inputs={"inputData": INPUT_MAP_ROW},
        output=("key", "user_key", "user_value"),
        queries={"query": Query(map_query("update").pipeline, None, "update", conf=ROCKSDB)},
        steps=[add("inputData", input_row), ExpectFailure("ILLEGAL_STATE_STORE_VALUE.NULL_VALUE", "NULL_VALUE")],
        variants=2,
        spark=NULL_IN_PYSPARK,
    )


CASES += [
    *[
        refused(f"Test {call} with null user key", 134, ("k1", call, (None, "")))
        for call in ("getValue", "containsKey", "updateValue", "removeKey")
    ],
    refused("Test put value with null value", 139, ("k1", "updateValue", ("k1", None))),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        SUITE,
        named("transformWithMapState - batch should succeed"),
        224,
        "a batch (not streaming) Dataset",
        variants=2,
    ),
]
