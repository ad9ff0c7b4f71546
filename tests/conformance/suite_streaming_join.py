"""Spark's ``StreamingJoinSuite`` (``StreamingInnerJoinSuite``, ``StreamingOuterJoinSuite``,
``StreamingFullOuterJoinSuite``, ``StreamingLeftSemiJoinSuite``), replayed by ministream (and by Spark through
each case's PySpark twin).

Source: ``sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingJoinSuite.scala`` (Spark master of
2026-01-07). Each test runs four times in Spark (join state format 2 or 3, with or without changelog
checkpoints, two providers): one case here, named after the first. The state-row metrics the tests assert
are not checked.

Column names: a join ``USING`` columns (Spark's ``df1.join(df2, Seq("key"))``) is ministream's
``join(..., using=True)`` and keeps Spark's naming, one ``key`` column. A join on ``left("key") ===
right("key")`` keeps two columns named ``key`` in Spark; ministream's rows are dicts, so each side renames
its columns first (``left_key``...), and the twins alias the same columns the same way.
"""

from ministream import Tumbling
from ministream.core.steps import RowCondition
from ministream.time.ranges import TimeRange
from ministream.time.units import parse_duration, parse_timestamp
from tests.conformance.harness import (
    ClearSink,
    ExpectFailure,
    NewStream,
    NotExpressible,
    Query,
    StartStream,
    StopStream,
    add,
    add_many,
    case,
    check_answer,
    check_new,
)

INNER, OUTER = "StreamingInnerJoinSuite", "StreamingOuterJoinSuite"
FULL, SEMI = "StreamingFullOuterJoinSuite", "StreamingLeftSemiJoinSuite"
SOURCE = "sql/core/src/test/scala/org/apache/spark/sql/streaming/StreamingJoinSuite.scala"
ALL4 = " with (with changelog checkpointing = false) (with virtual column family joins)"
VCF = " (with virtual column family joins)"
NO_VCF = " (without virtual column family joins)"
TWO_INTS = {"leftInput": "value INT", "rightInput": "value INT"}
TWO_PAIRS = {"leftInput": "_1 INT, _2 INT", "rightInput": "_1 INT, _2 INT"}
SELF = {"inputStream": "_1 INT, _2 BIGINT"}
NO_DATA_OFF = {"spark.sql.streaming.noDataMicroBatches.enabled": "false"}


def times(value):
    """``value * k`` that keeps a null null."""
    return lambda v: None if v is None else v * value


# -- setupStream and the windowed joins ------------------------------------------------------------------------


def setup_stream(stream, prefix: str, multiplier: int, watermark: str | None = "10 seconds"):
    """The suite's ``setupStream(prefix, multiplier)``: ``select(value as key, timestamp_seconds(value) as
    <prefix>Time, value * multiplier as <prefix>Value).withWatermark(<prefix>Time, "10 seconds")``."""
    rows = stream.map(
        f"{prefix}_columns",
        lambda row: {
            "key": row["value"],
            f"{prefix}Time": row["value"] * 1000,
            f"{prefix}Value": row["value"] * multiplier,
        },
    ).select(f"{prefix}_select", key="key", **{f"{prefix}Time": f"{prefix}Time", f"{prefix}Value": f"{prefix}Value"})
    return rows if watermark is None else rows.with_watermark(f"{prefix}_watermark", f"{prefix}Time", watermark)


def setup_stream_twin(df, prefix: str, multiplier: int, watermark: str | None = "10 seconds"):
    from pyspark.sql import functions as F

    rows = df.select(
        F.col("value").alias("key"),
        F.timestamp_seconds("value").alias(f"{prefix}Time"),
        (F.col("value") * multiplier).alias(f"{prefix}Value"),
    )
    return rows if watermark is None else rows.withWatermark(f"{prefix}Time", watermark)


def windowed(stream, prefix: str, value_type=None):
    """``select($"key", window($"<prefix>Time", "10 second"), $"<prefix>Value")`` (the value cast to a string
    when ``value_type`` is ``str``)."""
    windows = stream.with_window(f"{prefix}_window", Tumbling("10 seconds"), column=f"{prefix}Time")
    value = f"{prefix}Value"
    if value_type is str:
        windows = windows.map(f"{prefix}_as_string", lambda row: {**row, value: str(row[value])})
    return windows.select(
        f"{prefix}_windowed", key="key", window_start="window_start", window_end="window_end", **{value: value}
    )


def windowed_twin(df, prefix: str, value_type=None):
    from pyspark.sql import functions as F

    value = F.col(f"{prefix}Value")
    if value_type is str:
        value = value.cast("string").alias(f"{prefix}Value")
    return df.select("key", F.window(f"{prefix}Time", "10 second").alias("window"), value)


def windowed_join(how: str):
    """``setupWindowedJoin(joinType)``: the windowed streams joined ``USING (key, window)``; output ``(key,
    window end in seconds, leftValue[, rightValue])``."""

    def pipeline(inputs):
        left = windowed(setup_stream(inputs["leftInput"], "left", 2), "left")
        right = windowed(setup_stream(inputs["rightInput"], "right", 3), "right")
        keys = ["key", "window_start", "window_end"]
        joined = left.key_by(keys).join("join", right.key_by(keys), how=how, using=True)
        return joined.map("columns", lambda row: {**row, "end": row["window_end"] // 1000})

    def twin(inputs):
        from pyspark.sql import functions as F

        left = windowed_twin(setup_stream_twin(inputs["leftInput"], "left", 2), "left")
        right = windowed_twin(setup_stream_twin(inputs["rightInput"], "right", 3), "right")
        joined = left.join(right, ["key", "window"], how)
        values = ["leftValue"] if how == "left_semi" else ["leftValue", "rightValue"]
        return joined.select("key", F.col("window.end").cast("long").alias("end"), *values)

    return pipeline, twin


def conditioned_join(how: str, side: str):
    """``setupWindowedJoinWithLeftCondition`` / ``...RightCondition``: the windowed streams (rightValue as a
    string) joined on ``left.key = right.key AND left.window = right.window AND leftValue > 4`` (or
    ``rightValue.cast("int") > 7``), columns as the test selects them per join type."""

    def pipeline(inputs):
        left = windowed(setup_stream(inputs["leftInput"], "left", 2), "left")
        right = windowed(setup_stream(inputs["rightInput"], "right", 3), "right", str)
        left = left.select("left_names", l_key="key", l_start="window_start", l_end="window_end", leftValue="leftValue")
        right = right.select(
            "right_names", r_key="key", r_start="window_start", r_end="window_end", rightValue="rightValue"
        )
        condition = {
            "left_where": RowCondition(lambda row: row["leftValue"] > 4, ("leftValue",)),
            "right_where": RowCondition(lambda row: int(row["rightValue"]) > 7, ("rightValue",)),
        }
        chosen = {f"{side}_where": condition[f"{side}_where"]}
        joined = left.key_by(["l_key", "l_start", "l_end"]).join(
            "join", right.key_by(["r_key", "r_start", "r_end"]), how=how, **chosen
        )
        return joined.map("columns", lambda row: _condition_columns(how, row))

    def twin(inputs):

        left = windowed_twin(setup_stream_twin(inputs["leftInput"], "left", 2), "left")
        right = windowed_twin(setup_stream_twin(inputs["rightInput"], "right", 3), "right", str)
        extra = left["leftValue"] > 4 if side == "left" else right["rightValue"].cast("int") > 7
        joined = left.join(right, (left["key"] == right["key"]) & (left["window"] == right["window"]) & extra, how)
        if how == "left_semi":
            return joined.select(left["key"].alias("key"), left["window.end"].cast("long").alias("end"), "leftValue")
        if how == "full_outer":
            return joined.select(
                left["key"].alias("l_key"),
                left["window.end"].cast("long").alias("l_end"),
                "leftValue",
                right["key"].alias("r_key"),
                right["window.end"].cast("long").alias("r_end"),
                "rightValue",
            )
        chosen = left if how != "right_outer" else right
        return joined.select(
            chosen["key"].alias("key"), chosen["window.end"].cast("long").alias("end"), "leftValue", "rightValue"
        )

    return pipeline, twin


def _condition_columns(how: str, row: dict) -> dict:
    def seconds(value):
        return None if value is None else value // 1000

    if how == "full_outer":
        return {
            "l_key": row["l_key"],
            "l_end": seconds(row["l_end"]),
            "leftValue": row["leftValue"],
            "r_key": row["r_key"],
            "r_end": seconds(row["r_end"]),
            "rightValue": row["rightValue"],
        }
    side = "r" if how == "right_outer" else "l"
    return {
        "key": row[f"{side}_key"],
        "end": seconds(row[f"{side}_end"]),
        "leftValue": row["leftValue"],
        "rightValue": row.get("rightValue"),
    }


CONDITION_OUTPUT = {
    "left_semi": ("key", "end", "leftValue"),
    "left_outer": ("key", "end", "leftValue", "rightValue"),
    "right_outer": ("key", "end", "leftValue", "rightValue"),
    "full_outer": ("l_key", "l_end", "leftValue", "r_key", "r_end", "rightValue"),
}


# -- range conditions ------------------------------------------------------------------------------------------


def range_join(how: str, watermark="10 seconds", lower="interval 5 seconds", upper="interval 5 seconds", suffix=""):
    """``setupJoinWithRangeCondition(joinType, watermark, lower, upper)``: ``(key, time)`` pairs, ``leftKey =
    rightKey AND leftTime BETWEEN rightTime - lower AND rightTime + upper``; output ``(leftKey, leftTime)`` for
    a left semi join, else ``(leftKey, rightKey, leftTime, rightTime)``, times in seconds."""
    low, high = parse_duration(lower), parse_duration(upper)
    left_name, right_name = f"leftInput{suffix}", f"rightInput{suffix}"

    def side(stream, prefix, multiplier):
        rows = stream.map(
            f"{prefix}_columns",
            lambda row: {
                f"{prefix}Key": row["_1"],
                f"{prefix}Time": row["_2"] * 1000,
                f"{prefix}Value": row["_1"] * multiplier,
            },
        )
        names = {f"{prefix}Key": f"{prefix}Key", f"{prefix}Time": f"{prefix}Time", f"{prefix}Value": f"{prefix}Value"}
        return rows.select(f"{prefix}_select", **names).with_watermark(
            f"{prefix}_watermark", f"{prefix}Time", watermark
        )

    def pipeline(inputs):
        left = side(inputs[left_name], "left", 2)
        right = side(inputs[right_name], "right", 3)
        within = TimeRange(
            "leftTime", "rightTime", lower=-high, upper=low
        )  # rightTime - lower <= leftTime <= rightTime + upper
        joined = left.key_by("leftKey").join("join", right.key_by("rightKey"), how=how, between=within)
        return joined.map("columns", _range_columns)

    def twin(inputs):
        from pyspark.sql import functions as F

        def side_twin(df, prefix, multiplier):
            rows = df.toDF(f"{prefix}Key", "time").select(
                f"{prefix}Key",
                F.timestamp_seconds("time").alias(f"{prefix}Time"),
                (F.col(f"{prefix}Key") * multiplier).alias(f"{prefix}Value"),
            )
            return rows.withWatermark(f"{prefix}Time", watermark)

        left = side_twin(inputs[left_name], "left", 2)
        right = side_twin(inputs[right_name], "right", 3)
        condition = F.expr(f"leftKey = rightKey AND leftTime BETWEEN rightTime - {lower} AND rightTime + {upper}")
        joined = left.join(right, condition, how)
        if how == "left_semi":
            return joined.select("leftKey", F.col("leftTime").cast("int").alias("leftTime"))
        return joined.select(
            "leftKey",
            "rightKey",
            F.col("leftTime").cast("int").alias("leftTime"),
            F.col("rightTime").cast("int").alias("rightTime"),
        )

    return pipeline, twin


def _range_columns(row: dict) -> dict:
    left = row["leftTime"]
    out = {"leftKey": row["leftKey"], "leftTime": None if left is None else left // 1000}
    if "rightKey" in row:
        right = row["rightTime"]
        out.update(rightKey=row["rightKey"], rightTime=None if right is None else right // 1000)
    return out


RANGE_OUTPUT = ("leftKey", "rightKey", "leftTime", "rightTime")


def range_query(how: str, **settings) -> Query:
    pipeline, twin = range_join(how, **settings)
    return Query(pipeline, twin, output=("leftKey", "leftTime") if how == "left_semi" else RANGE_OUTPUT)


# -- self joins ------------------------------------------------------------------------------------------------


def self_join(how: str, mirror: bool = False):
    """``setupSelfJoin(joinType)``: one input ``(value, timestamp)``; left: every row, right: the even ones,
    joined on ``leftId = rightId AND rightTime >= leftTime AND rightTime <= leftTime + 5 seconds``; ``mirror``:
    the right outer test's shape (even rows on the left, the condition the other way)."""

    def pipeline(inputs):
        rows = inputs["inputStream"].map("rows", lambda row: {"value": row["_1"], "timestamp": row["_2"] * 1000})
        evens = rows.filter("even", lambda row: row["value"] % 2 == 0, columns="value")
        every = rows
        if mirror:
            every, evens = evens, rows
        left = every.select("left_columns", leftId="value", leftTime="timestamp")
        right = evens.select("right_columns", rightId="value", rightTime="timestamp")
        left = left.with_watermark("left_watermark", "leftTime", "5 seconds")
        right = right.with_watermark("right_watermark", "rightTime", "5 seconds")
        within = (
            TimeRange("leftTime", "rightTime", lower=-5_000, upper=0)
            if mirror
            else TimeRange("leftTime", "rightTime", 0, 5_000)
        )
        joined = left.key_by("leftId").join("join", right.key_by("rightId"), how=how, between=within)
        return joined.map("columns", _self_columns)

    def twin(inputs):
        from pyspark.sql import functions as F

        df = inputs["inputStream"].select(F.col("_1").alias("value"), F.timestamp_seconds("_2").alias("timestamp"))
        if mirror:
            left = df.where(F.col("value") % 2 == 0).select(
                F.col("value").alias("leftId"), F.col("timestamp").alias("leftTime")
            )
            right = df.select(F.col("value").alias("rightId"), F.col("timestamp").alias("rightTime"))
            condition = "leftId = rightId AND leftTime >= rightTime AND leftTime <= rightTime + interval 5 seconds"
        else:
            left = df.select(F.col("value").alias("leftId"), F.col("timestamp").alias("leftTime"))
            right = df.where(F.col("value") % 2 == 0).select(
                F.col("value").alias("rightId"), F.col("timestamp").alias("rightTime")
            )
            condition = "leftId = rightId AND rightTime >= leftTime AND rightTime <= leftTime + interval 5 seconds"
        joined = left.withWatermark("leftTime", "5 seconds").join(
            right.withWatermark("rightTime", "5 seconds"), F.expr(condition), how
        )
        if how == "left_semi":
            return joined.select("leftId", F.col("leftTime").cast("int").alias("leftTime"))
        return joined.select(
            "leftId",
            F.col("leftTime").cast("int").alias("leftTime"),
            "rightId",
            F.col("rightTime").cast("int").alias("rightTime"),
        )

    return pipeline, twin


def _self_columns(row: dict) -> dict:
    def seconds(value):
        return None if value is None else value // 1000

    out = {"leftId": row.get("leftId"), "leftTime": seconds(row.get("leftTime"))}
    if "rightId" in row:
        out.update(rightId=row["rightId"], rightTime=seconds(row["rightTime"]))
    return out


SELF_OUTPUT = ("leftId", "leftTime", "rightId", "rightTime")
SELF_1 = [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
SELF_2 = [(6, 6), (7, 7), (8, 8), (9, 9), (10, 10)]
SELF_3 = [(11, 11), (12, 12), (13, 13), (14, 14), (15, 15)]


def self_query(how: str, mirror: bool = False) -> Query:
    pipeline, twin = self_join(how, mirror)
    return Query(pipeline, twin, output=("leftId", "leftTime") if how == "left_semi" else SELF_OUTPUT)


# -- the other queries -----------------------------------------------------------------------------------------


def key_values(stream, prefix: str, multiplier: int):
    """``select($"value" as "key", ($"value" * multiplier) as "<prefix>Value")``."""
    rows = stream.map(
        f"{prefix}_columns", lambda row: {"key": row["value"], f"{prefix}Value": times(multiplier)(row["value"])}
    )
    return rows.select(f"{prefix}_select", key="key", **{f"{prefix}Value": f"{prefix}Value"})


def key_join(inputs, left="input1", right="input2"):
    """``df1.join(df2, "key")`` of ``(key, leftValue = 2 * value)`` and ``(key, rightValue = 3 * value)``."""
    one, two = key_values(inputs[left], "left", 2), key_values(inputs[right], "right", 3)
    return one.key_by("key").join("join", two.key_by("key"), using=True)


def key_join_twin(inputs, left="input1", right="input2"):
    from pyspark.sql import functions as F

    one = inputs[left].select(F.col("value").alias("key"), (F.col("value") * 2).alias("leftValue"))
    two = inputs[right].select(F.col("value").alias("key"), (F.col("value") * 3).alias("rightValue"))
    return one.join(two, "key")


def windows_join(watermark_left: bool):
    """The windowed inner join of 'inner join on windows': ``select($"key", window($"timestamp", "10 second"),
    $"leftValue")`` on each side (a watermark on the left only, or none), joined ``USING (key, window)``."""

    def pipeline(inputs):
        left = setup_stream(inputs["input1"], "left", 2, "10 seconds" if watermark_left else None)
        right = setup_stream(inputs["input2"], "right", 3, None)
        left, right = windowed(left, "left"), windowed(right, "right")
        keys = ["key", "window_start", "window_end"]
        joined = left.key_by(keys).join("join", right.key_by(keys), using=True)
        return joined.map("columns", lambda row: {**row, "end": row["window_end"] // 1000})

    def twin(inputs):
        from pyspark.sql import functions as F

        left = setup_stream_twin(inputs["input1"], "left", 2, "10 seconds" if watermark_left else None)
        right = setup_stream_twin(inputs["input2"], "right", 3, None)
        joined = windowed_twin(left, "left").join(windowed_twin(right, "right"), ["key", "window"])
        return joined.select("key", F.col("window.end").cast("long").alias("end"), "leftValue", "rightValue")

    return Query(pipeline, twin)


def one_side_range(inputs):
    """``leftKey = rightKey AND leftTime < rightTime - interval 5 seconds``: a bound on one side only."""
    left = _pairs(inputs["leftInput"], "left", 2)
    right = _pairs(inputs["rightInput"], "right", 3)
    within = TimeRange("leftTime", "rightTime", lower=5_000, lower_inclusive=False)
    joined = left.key_by("leftKey").join("join", right.key_by("rightKey"), between=within)
    return joined.map("columns", _range_columns)


def one_side_range_twin(inputs):
    from pyspark.sql import functions as F

    left = _pairs_twin(inputs["leftInput"], "left", 2)
    right = _pairs_twin(inputs["rightInput"], "right", 3)
    joined = left.join(right, F.expr("leftKey = rightKey AND leftTime < rightTime - interval 5 seconds"))
    return joined.select(
        "leftKey", F.col("leftTime").cast("int").alias("leftTime"), F.col("rightTime").cast("int").alias("rightTime")
    )


def two_side_range(inputs):
    """``leftKey = rightKey AND leftTime BETWEEN rightTime - interval 10 seconds AND rightTime + interval 5
    seconds``, watermarks of 20 and 30 seconds."""
    left = _pairs(inputs["leftInput"], "left", 2, "20 seconds")
    right = _pairs(inputs["rightInput"], "right", 3, "30 seconds")
    within = TimeRange("leftTime", "rightTime", lower=-5_000, upper=10_000)
    joined = left.key_by("leftKey").join("join", right.key_by("rightKey"), between=within)
    return joined.map("columns", _range_columns)


def two_side_range_twin(inputs):
    from pyspark.sql import functions as F

    left = _pairs_twin(inputs["leftInput"], "left", 2, "20 seconds")
    right = _pairs_twin(inputs["rightInput"], "right", 3, "30 seconds")
    condition = (
        "leftKey = rightKey AND leftTime BETWEEN rightTime - interval 10 seconds AND rightTime + interval 5 seconds"
    )
    joined = left.join(right, F.expr(condition))
    return joined.select(
        "leftKey", F.col("leftTime").cast("int").alias("leftTime"), F.col("rightTime").cast("int").alias("rightTime")
    )


def _pairs(stream, prefix, multiplier, watermark="10 seconds"):
    """``toDF("<prefix>Key", "time").select($"<prefix>Key", timestamp_seconds($"time") as "<prefix>Time",
    ($"<prefix>Key" * multiplier) as "<prefix>Value").withWatermark("<prefix>Time", watermark)``."""
    rows = stream.map(
        f"{prefix}_columns",
        lambda row: {
            f"{prefix}Key": row["_1"],
            f"{prefix}Time": row["_2"] * 1000,
            f"{prefix}Value": row["_1"] * multiplier,
        },
    )
    names = {f"{prefix}{c}": f"{prefix}{c}" for c in ("Key", "Time", "Value")}
    return rows.select(f"{prefix}_select", **names).with_watermark(f"{prefix}_watermark", f"{prefix}Time", watermark)


def _pairs_twin(df, prefix, multiplier, watermark="10 seconds"):
    from pyspark.sql import functions as F

    rows = df.toDF(f"{prefix}Key", "time").select(
        f"{prefix}Key",
        F.timestamp_seconds("time").alias(f"{prefix}Time"),
        (F.col(f"{prefix}Key") * multiplier).alias(f"{prefix}Value"),
    )
    return rows.withWatermark(f"{prefix}Time", watermark)


def no_equality(inputs):
    """``df1.join(df2, expr("leftKey < rightKey"))``: a condition, and no equal keys."""
    one = inputs["input1"].select("left", leftKey="value")
    two = inputs["input2"].select("right", rightKey="value")
    return one.key_by([]).join("join", two.key_by([]), where=lambda left, right: left["leftKey"] < right["rightKey"])


def no_equality_twin(inputs):
    from pyspark.sql import functions as F

    one = inputs["input1"].select(F.col("value").alias("leftKey"), (F.col("value") * 2).alias("leftValue"))
    two = inputs["input2"].select(F.col("value").alias("rightKey"), (F.col("value") * 3).alias("rightValue"))
    return one.join(two, F.expr("leftKey < rightKey"))


def self_key_join(inputs):
    """``df.select($"value" % 5 as "key", $"value").join(df.select(...), "key")``; the right ``value`` is
    renamed (Spark keeps two columns named ``value``)."""
    rows = inputs["input"].map("modulo", lambda row: {"key": row["value"] % 5, "value": row["value"]})
    left = rows.select("left_columns", key="key", value="value")
    right = rows.select("right_columns", key="key", right_value="value")
    return left.key_by("key").join("join", right.key_by("key"), using=True)


def self_key_join_twin(inputs):
    from pyspark.sql import functions as F

    df = inputs["input"]
    left = df.select((F.col("value") % 5).alias("key"), F.col("value"))
    right = df.select((F.col("value") % 5).alias("key"), F.col("value").alias("right_value"))
    return left.join(right, "key")


def three_streams(inputs):
    """``df1.join(df2, expr("leftKey = middleKey")).join(df3, expr("rightKey = middleKey"))``."""

    def side(name, prefix, multiplier):
        rows = inputs[name].map(
            f"{prefix}_columns", lambda row: {f"{prefix}Key": row["value"], f"{prefix}Value": row["value"] * multiplier}
        )
        return rows.select(f"{prefix}_select", **{f"{prefix}Key": f"{prefix}Key", f"{prefix}Value": f"{prefix}Value"})

    left, middle, right = side("input1", "left", 2), side("input2", "middle", 3), side("input3", "right", 5)
    first = left.key_by("leftKey").join("first_join", middle.key_by("middleKey"))
    return first.key_by("middleKey").join("second_join", right.key_by("rightKey"))


def three_streams_twin(inputs):
    from pyspark.sql import functions as F

    def side(name, prefix, multiplier):
        return inputs[name].select(
            F.col("value").alias(f"{prefix}Key"), (F.col("value") * multiplier).alias(f"{prefix}Value")
        )

    left, middle, right = side("input1", "left", 2), side("input2", "middle", 3), side("input3", "right", 5)
    return left.join(middle, F.expr("leftKey = middleKey")).join(right, F.expr("rightKey = middleKey"))


def null_safe(inputs):
    """``left.selectExpr("value as leftKey", "value * 2 as leftValue")`` joined with the right on ``leftKey <=>
    rightKey``."""
    one = inputs["input1"].map("left", lambda row: {"leftKey": row["value"], "leftValue": times(2)(row["value"])})
    two = inputs["input2"].map("right", lambda row: {"rightKey": row["value"], "rightValue": times(3)(row["value"])})
    return one.key_by("leftKey").join("join", two.key_by("rightKey"), null_safe=True)


def null_safe_twin(inputs):
    from pyspark.sql import functions as F

    one = inputs["input1"].selectExpr("value as leftKey", "value * 2 as leftValue")
    two = inputs["input2"].selectExpr("value as rightKey", "value * 3 as rightValue")
    return one.join(two, F.expr("leftKey <=> rightKey")).select("leftKey", "rightKey", "leftValue", "rightValue")


def union_with_join(inputs):
    """``input1.select(value as key, value as leftValue, value as rightValue).union(df2.join(df3, df2("key") ===
    df3("key") && df2("leftTime") === df3("rightTime")).select(df2("key"), leftValue, rightValue))``."""
    plain = inputs["input1"].map(
        "plain", lambda row: {"key": row["value"], "leftValue": row["value"], "rightValue": row["value"]}
    )
    left = setup_stream(inputs["input2"], "left", 2)
    right = setup_stream(inputs["input3"], "right", 3).select(
        "right_key", right_key="key", rightTime="rightTime", rightValue="rightValue"
    )
    joined = left.key_by(["key", "leftTime"]).join("join", right.key_by(["right_key", "rightTime"]))
    joined = joined.select("columns", key="key", leftValue="leftValue", rightValue="rightValue")
    return plain.union("union", joined)


def union_with_join_twin(inputs):
    from pyspark.sql import functions as F

    plain = inputs["input1"].select(
        F.col("value").alias("key"), F.col("value").alias("leftValue"), F.col("value").alias("rightValue")
    )
    left = setup_stream_twin(inputs["input2"], "left", 2)
    right = setup_stream_twin(inputs["input3"], "right", 3)
    joined = left.join(right, (left["key"] == right["key"]) & (left["leftTime"] == right["rightTime"]), "inner")
    return plain.union(joined.select(left["key"], "leftValue", "rightValue"))


def events_join(how: str, delays: tuple[str, str], names: tuple[str, str]):
    """SPARK-32148 / SPARK-38684: ``(eventTime, id, comment)`` inputs, ``left.id = right.id AND
    left.eventTime BETWEEN right.eventTime - INTERVAL 30 seconds AND right.eventTime + INTERVAL 30 seconds``;
    the two sides' columns renamed ``l_...`` and ``r_...``."""

    def pipeline(inputs):
        left = inputs["input1"].map(
            "left", lambda row: {"l_eventTime": row["_1"], "l_id": row["_2"], f"l_{names[0]}": row["_3"]}
        )
        right = inputs["input2"].map(
            "right", lambda row: {"r_eventTime": row["_1"], "r_id": row["_2"], f"r_{names[1]}": row["_3"]}
        )
        left = left.select("left_names", l_eventTime="l_eventTime", l_id="l_id", **{f"l_{names[0]}": f"l_{names[0]}"})
        right = right.select(
            "right_names", r_eventTime="r_eventTime", r_id="r_id", **{f"r_{names[1]}": f"r_{names[1]}"}
        )
        left = left.with_watermark("left_watermark", "l_eventTime", delays[0])
        right = right.with_watermark("right_watermark", "r_eventTime", delays[1])
        within = TimeRange("l_eventTime", "r_eventTime", lower=-30_000, upper=30_000)
        return left.key_by("l_id").join("join", right.key_by("r_id"), how=how, between=within)

    def twin(inputs):
        from pyspark.sql import functions as F

        left = (
            inputs["input1"]
            .selectExpr("_1 as eventTime", "_2 as id", f"_3 as {names[0]}")
            .withWatermark("eventTime", delays[0])
        )
        right = (
            inputs["input2"]
            .selectExpr("_1 as eventTime", "_2 as id", f"_3 as {names[1]}")
            .withWatermark("eventTime", delays[1])
        )
        condition = F.expr(
            "left.id = right.id AND left.eventTime BETWEEN right.eventTime - INTERVAL 30 seconds AND "
            "right.eventTime + INTERVAL 30 seconds"
        )
        joined = left.alias("left").join(right.alias("right"), condition, how)
        return joined.select(
            F.col("left.eventTime").alias("l_eventTime"),
            F.col("left.id").alias("l_id"),
            F.col(f"left.{names[0]}").alias(f"l_{names[0]}"),
            F.col("right.eventTime").alias("r_eventTime"),
            F.col("right.id").alias("r_id"),
            F.col(f"right.{names[1]}").alias(f"r_{names[1]}"),
        )

    return pipeline, twin


def ts(text: str) -> int:
    """A ``java.sql.Timestamp.valueOf`` of the test, as ms (read in UTC: only the differences matter)."""
    return parse_timestamp(text.replace(" ", "T") + "Z")


def nullable_keys(inputs):
    """'left-outer: joining ... join key': ``leftKey1 <=> rightKey1 AND leftKey2 = rightKey2 AND leftWindow =
    rightWindow``, windows of 10 seconds on each side's time."""

    def side(name, prefix, multiplier):
        rows = inputs[name].map(
            f"{prefix}_columns",
            lambda row: {
                f"{prefix}Key1": row["_1"],
                f"{prefix}Key2": row["_2"],
                f"{prefix}Time": row["_2"] * 1000,
                f"{prefix}Value": row["_2"] * multiplier,
            },
        )
        names = {f"{prefix}{c}": f"{prefix}{c}" for c in ("Key1", "Key2", "Time", "Value")}
        rows = rows.select(f"{prefix}_select", **names).with_watermark(
            f"{prefix}_watermark", f"{prefix}Time", "10 seconds"
        )
        windows = rows.with_window(
            f"{prefix}_window",
            Tumbling("10 seconds"),
            column=f"{prefix}Time",
            start=f"{prefix}WindowStart",
            end=f"{prefix}WindowEnd",
        )
        keep = {f"{prefix}{c}": f"{prefix}{c}" for c in ("Key1", "Key2", "WindowStart", "WindowEnd", "Value")}
        return windows.select(f"{prefix}_windowed", **keep)

    left, right = side("input1", "left", 2), side("input2", "right", 3)
    keys = ("Key1", "Key2", "WindowStart", "WindowEnd")
    joined = left.key_by([f"left{k}" for k in keys]).join(
        "join", right.key_by([f"right{k}" for k in keys]), how="left_outer", null_safe=["leftKey1"]
    )
    return joined.map("columns", lambda row: {**row, "end": row["leftWindowEnd"] // 1000})


def nullable_keys_twin(inputs):
    from pyspark.sql import functions as F

    one = inputs["input1"].selectExpr(
        "_1 as leftKey1", "_2 as leftKey2", "timestamp_seconds(_2) as leftTime", "_2 * 2 as leftValue"
    )
    two = inputs["input2"].selectExpr(
        "_1 as rightKey1", "_2 as rightKey2", "timestamp_seconds(_2) as rightTime", "_2 * 3 as rightValue"
    )
    one = one.withWatermark("leftTime", "10 seconds").select(
        "leftKey1", "leftKey2", F.window("leftTime", "10 second").alias("leftWindow"), "leftValue"
    )
    two = two.withWatermark("rightTime", "10 seconds").select(
        "rightKey1", "rightKey2", F.window("rightTime", "10 second").alias("rightWindow"), "rightValue"
    )
    joined = one.join(
        two, F.expr("leftKey1 <=> rightKey1 AND leftKey2 = rightKey2 AND leftWindow = rightWindow"), "left_outer"
    )
    return joined.select(
        "leftKey1",
        "rightKey1",
        "leftKey2",
        "rightKey2",
        F.col("leftWindow.end").cast("long").alias("end"),
        "leftValue",
        "rightValue",
    )


NULLABLE_OUTPUT = ("leftKey1", "rightKey1", "leftKey2", "rightKey2", "end", "leftValue", "rightValue")


def key_and_time(inputs):
    """SPARK-49829: ``(key, eventTime)`` inputs, watermarks of 0 seconds, joined ``USING (key, eventTime)``,
    left outer; output ``(key, eventTime in seconds)``."""

    def side(name):
        rows = inputs[name].map(f"{name}_columns", lambda row: {"key": row["_1"], "eventTime": row["_2"] * 1000})
        return rows.select(f"{name}_select", key="key", eventTime="eventTime").with_watermark(
            f"{name}_watermark", "eventTime", "0 seconds"
        )

    keys = ["key", "eventTime"]
    joined = (
        side("memoryStream1")
        .key_by(keys)
        .join("join", side("memoryStream2").key_by(keys), how="left_outer", using=True)
    )
    return joined.map("columns", lambda row: {"key": row["key"], "eventTime": row["eventTime"] // 1000})


def key_and_time_twin(inputs):
    def side(name):
        return (
            inputs[name]
            .selectExpr("_1 AS key", "timestamp_seconds(_2) AS eventTime")
            .withWatermark("eventTime", "0 seconds")
        )

    joined = side("memoryStream1").join(side("memoryStream2"), ["key", "eventTime"], "leftOuter")
    return joined.selectExpr("key", "CAST(eventTime AS long) AS eventTime")


def chained_outer(inputs):
    """SPARK-49829: ``data1.join(data2, Seq("eventTime"), "leftOuter").join(data3, Seq("eventTime"),
    "leftOuter")`` of ``(eventTime, v<n>)`` inputs, watermarks of 0 seconds."""

    def side(number):
        name = f"memoryStream{number}"
        rows = inputs[name].map(f"{name}_columns", lambda row: {"eventTime": row["_1"] * 1000, f"v{number}": row["_2"]})
        rows = rows.select(f"{name}_select", **{"eventTime": "eventTime", f"v{number}": f"v{number}"})
        return rows.with_watermark(f"{name}_watermark", "eventTime", "0 seconds")

    first = side(1).key_by("eventTime").join("first_join", side(2).key_by("eventTime"), how="left_outer", using=True)
    second = first.key_by("eventTime").join("second_join", side(3).key_by("eventTime"), how="left_outer", using=True)
    return second.map("columns", lambda row: {**row, "eventTime": row["eventTime"] // 1000})


def chained_outer_twin(inputs):
    def side(number):
        df = inputs[f"memoryStream{number}"]
        return df.selectExpr("timestamp_seconds(_1) AS eventTime", f"_2 AS v{number}").withWatermark(
            "eventTime", "0 seconds"
        )

    joined = side(1).join(side(2), ["eventTime"], "leftOuter").join(side(3), ["eventTime"], "leftOuter")
    return joined.selectExpr("CAST(eventTime AS long) AS eventTime", "v1", "v2", "v3")


def non_key_condition(inputs):
    """'left outer join with non-key condition violated': ``left("key") === right("key") && left("window") ===
    right("window") && $"leftValue" > 10 && ($"rightValue" < 300 || $"rightValue" > 1000)``, left outer."""
    left = windowed(setup_stream(inputs["leftInput"], "left", 2), "left")
    right = windowed(setup_stream(inputs["rightInput"], "right", 3), "right")
    left = left.select("left_names", l_key="key", l_start="window_start", l_end="window_end", leftValue="leftValue")
    right = right.select(
        "right_names", r_key="key", r_start="window_start", r_end="window_end", rightValue="rightValue"
    )
    joined = left.key_by(["l_key", "l_start", "l_end"]).join(
        "join",
        right.key_by(["r_key", "r_start", "r_end"]),
        how="left_outer",
        left_where=RowCondition(lambda row: row["leftValue"] > 10, ("leftValue",)),
        right_where=RowCondition(lambda row: row["rightValue"] < 300 or row["rightValue"] > 1000, ("rightValue",)),
    )
    return joined.map("columns", lambda row: _condition_columns("left_outer", row))


def non_key_condition_twin(inputs):
    from pyspark.sql import functions as F

    left = windowed_twin(setup_stream_twin(inputs["leftInput"], "left", 2), "left")
    right = windowed_twin(setup_stream_twin(inputs["rightInput"], "right", 3), "right")
    condition = (
        (left["key"] == right["key"])
        & (left["window"] == right["window"])
        & (F.col("leftValue") > 10)
        & ((F.col("rightValue") < 300) | (F.col("rightValue") > 1000))
    )
    joined = left.join(right, condition, "left_outer")
    return joined.select(
        left["key"].alias("key"), left["window.end"].cast("long").alias("end"), "leftValue", "rightValue"
    )


# -- the steps of the windowed and conditioned tests ---------------------------------------------------------


def windowed_steps_outer(nulls):
    return [
        add_many(leftInput=[1, 2, 3, 4, 5], rightInput=[3, 4, 5, 6, 7]),
        check_new((3, 10, 6, 9), (4, 10, 8, 12), (5, 10, 10, 15)),
        add_many(leftInput=[21], rightInput=[22]),
        check_new(*nulls),
        add("leftInput", 22),
        check_new((22, 30, 44, 66)),
    ]


def range_outer_steps(outer):
    return [
        add("leftInput", (1, 5), (3, 5)),
        check_answer(),
        add("rightInput", (1, 10), (2, 5)),
        check_new((1, 1, 5, 10)),
        add("rightInput", (1, 11)),
        check_new(),
        add("leftInput", (1, 7), (1, 30)),
        check_new((1, 1, 7, 10), (1, 1, 7, 11)),
        add("rightInput", (0, 30)),
        check_new(outer),
    ]


def range_outer_steps_2(outer):
    return [
        add("leftInput2", (1, 210), (3, 5)),
        check_answer(),
        add("rightInput2", (1, 300), (2, 5)),
        check_new((1, 1, 210, 300)),
        add("rightInput2", (1, 450)),
        check_new(),
        add("leftInput2", (1, 260), (1, 1800)),
        check_new((1, 1, 260, 300), (1, 1, 260, 450)),
        add("rightInput2", (0, 1800)),
        check_new(outer),
    ]


def range_outer_case(how: str, outer: tuple):
    return case(
        OUTER,
        f"{how.replace('_', ' ')} with watermark range condition" + ALL4,
        1353,
        inputs={**TWO_PAIRS, "leftInput2": "_1 INT, _2 INT", "rightInput2": "_1 INT, _2 INT"},
        output=RANGE_OUTPUT,
        queries={
            "joined": range_query(how),
            "joined2": range_query(
                how,
                watermark="10 minutes",
                lower="interval 3 minutes 30 seconds",
                upper="interval 3 minutes 30 seconds",
                suffix="2",
            ),
            "joined2, ANSI": range_query(
                how,
                watermark="10 minutes",
                lower="interval '3:30' minute to second",
                upper="interval '3:30' minute to second",
                suffix="2",
            ),
        },
        steps=[
            *range_outer_steps(outer),
            NewStream(query="joined2"),
            *range_outer_steps_2(outer),
            NewStream(query="joined2, ANSI"),
            *range_outer_steps_2(outer),
        ],
        variants=4,
        ci=how == "left_outer",
        notes="One test with three testStream runs on fresh inputs; the bounds are SQL and ANSI intervals.",
    )


def condition_case(suite: str, how: str, side: str, line: int, steps: list, **settings):
    pipeline, twin = conditioned_join(how, side)
    name = {
        "left_outer": "left outer",
        "right_outer": "right outer",
        "full_outer": "full outer",
        "left_semi": "left semi",
    }[how]
    return case(
        suite,
        f"{name} early state exclusion on {side}" + ALL4,
        line,
        inputs=TWO_INTS,
        output=CONDITION_OUTPUT[how],
        pipeline=pipeline,
        twin=twin,
        steps=steps,
        variants=4,
        **settings,
    )


def windowed_case(suite: str, how: str, line: int, steps: list, **settings):
    pipeline, twin = windowed_join(how)
    name = {
        "left_outer": "left outer",
        "right_outer": "right outer",
        "full_outer": "full outer",
        "left_semi": "left semi",
    }[how]
    values = ("leftValue",) if how == "left_semi" else ("leftValue", "rightValue")
    return case(
        suite,
        f"windowed {name} join" + ALL4,
        line,
        inputs=TWO_INTS,
        output=("key", "end", *values),
        pipeline=pipeline,
        twin=twin,
        steps=steps,
        variants=4,
        **settings,
    )


KEY_JOIN = Query(key_join, key_join_twin, output=("key", "leftValue", "rightValue"))
WINDOWS_OUTPUT = ("key", "end", "leftValue", "rightValue")
EVENTS_INPUTS = {"input1": "_1 TIMESTAMP, _2 STRING, _3 STRING", "input2": "_1 TIMESTAMP, _2 STRING, _3 STRING"}


# -- the cases -------------------------------------------------------------------------------------------------

CASES = [
    case(
        INNER,
        "stream stream inner join on non-time column" + ALL4,
        324,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("key", "leftValue", "rightValue"),
        queries={"query": KEY_JOIN},
        steps=[
            add("input1", 1),
            check_answer(),
            add("input2", 1, 10),
            check_new((1, 2, 3)),
            add("input1", 10),
            check_new((10, 20, 30)),
            add("input2", 1),
            check_new((1, 2, 3)),
            StopStream(),
            StartStream(),
            add("input1", 1),
            check_new((1, 2, 3), (1, 2, 3)),
            StopStream(),
            StartStream(),
            add("input1", 100),
            add("input2", 100),
            check_new((100, 200, 300)),
        ],
        variants=4,
        ci=True,
    ),
    case(
        INNER,
        "stream stream inner join on windows - without watermark" + ALL4,
        353,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=WINDOWS_OUTPUT,
        queries={"query": windows_join(watermark_left=False)},
        steps=[
            add("input1", 1),
            check_new(),
            add("input2", 1),
            check_new((1, 10, 2, 3)),
            StopStream(),
            StartStream(),
            add("input1", 25),
            check_new(),
            StopStream(),
            StartStream(),
            add("input2", 25),
            check_new((25, 30, 50, 75)),
            add("input1", 1),
            check_new((1, 10, 2, 3)),
            StopStream(),
            StartStream(),
            add("input1", 5),
            check_new(),
            add("input2", 5),
            check_new((5, 10, 10, 15)),
        ],
        variants=4,
    ),
    case(
        INNER,
        "stream stream inner join on windows - with watermark" + ALL4,
        394,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=WINDOWS_OUTPUT,
        queries={"query": windows_join(watermark_left=True)},
        steps=[
            add("input1", 1),
            check_answer(),
            add("input2", 1),
            check_answer((1, 10, 2, 3)),
            StopStream(),
            StartStream(),
            add("input1", 25),
            check_new(),
            add("input2", 25),
            check_new((25, 30, 50, 75)),
            StopStream(),
            StartStream(),
            add("input2", 1),
            check_new(),
            add("input1", 5),
            check_new(),
        ],
        variants=4,
        ci=True,
        notes="A watermark on the left only: the window in the key evicts both sides; the right row 1 is not "
        "late (its input has no watermark) but finds its window evicted.",
    ),
    case(
        INNER,
        "stream stream inner join with time range - with watermark - one side condition" + ALL4,
        443,
        inputs=TWO_PAIRS,
        output=("leftKey", "leftTime", "rightTime"),
        pipeline=one_side_range,
        twin=one_side_range_twin,
        steps=[
            add("leftInput", (1, 5)),
            check_answer(),
            add("rightInput", (1, 11)),
            check_new((1, 5, 11)),
            add("rightInput", (1, 10)),
            check_new(),
            add("leftInput", (1, 3), (1, 30)),
            check_new((1, 3, 10), (1, 3, 11)),
            add("rightInput", (0, 30)),
            check_new(),
            add("rightInput", (1, 20), (1, 21), (1, 28)),
            check_new((1, 3, 21), (1, 5, 21), (1, 3, 28), (1, 5, 28)),
            add("leftInput", (1, 20), (1, 21)),
            check_new((1, 21, 28)),
        ],
        variants=4,
        ci=True,
    ),
    case(
        INNER,
        "stream stream inner join with time range - with watermark - two side conditions" + ALL4,
        503,
        inputs=TWO_PAIRS,
        output=("leftKey", "leftTime", "rightTime"),
        pipeline=two_side_range,
        twin=two_side_range_twin,
        steps=[
            add("leftInput", (1, 20)),
            check_answer(),
            add("rightInput", (1, 14), (1, 15), (1, 25), (1, 26), (1, 30), (1, 31)),
            check_new((1, 20, 15), (1, 20, 25), (1, 20, 26), (1, 20, 30)),
            add("rightInput", (1, 60)),
            check_new(),
            add("leftInput", (1, 49), (1, 50), (1, 65), (1, 66)),
            check_new((1, 50, 60), (1, 65, 60)),
            add("leftInput", (1, 30), (1, 31)),
            check_new((1, 31, 26), (1, 31, 30), (1, 31, 31)),
            add("rightInput", (1, 80)),
            check_new(),
            add("rightInput", (1, 46), (1, 50)),
            check_new((1, 49, 50), (1, 50, 50)),
        ],
        variants=4,
        ci=True,
    ),
    case(
        INNER,
        "stream stream inner join without equality predicate" + ALL4,
        589,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("leftKey", "rightKey"),
        pipeline=no_equality,
        twin=no_equality_twin,
        steps=[
            add("input1", 1),
            ExpectFailure("needs equal keys", "Stream-stream join without equality predicate is not supported"),
        ],
        variants=4,
    ),
    case(
        INNER,
        "stream stream self join" + ALL4,
        606,
        inputs={"input": "value INT"},
        output=("key", "value", "right_value"),
        pipeline=self_key_join,
        twin=self_key_join_twin,
        steps=[
            add("input", 1, 2),
            check_answer((1, 1, 1), (2, 2, 2)),
            StopStream(),
            StartStream(),
            add("input", 3, 6),
            check_answer((3, 3, 3), (1, 1, 1), (1, 1, 6), (2, 2, 2), (1, 6, 1), (1, 6, 6)),
        ],
        variants=4,
        notes="Spark's output has two columns named value; the right one is renamed right_value.",
    ),
    case(
        INNER,
        "join between three streams" + ALL4,
        671,
        inputs={"input1": "value INT", "input2": "value INT", "input3": "value INT"},
        output=("leftKey", "leftValue", "middleKey", "middleValue", "rightKey", "rightValue"),
        pipeline=three_streams,
        twin=three_streams_twin,
        steps=[
            add("input1", 1, 5),
            add("input2", 1, 5, 10),
            add("input3", 5, 10),
            check_new((5, 10, 5, 15, 5, 25)),
        ],
        variants=4,
    ),
    case(
        INNER,
        "SPARK-35896: metrics in StateOperatorProgress are output correctly" + ALL4,
        925,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=WINDOWS_OUTPUT,
        queries={"query": windows_join(watermark_left=True)},
        steps=[
            StartStream(conf={"spark.sql.shuffle.partitions": "3"}),
            add("input1", 1),
            check_answer(),
            add("input2", 1),
            check_answer((1, 10, 2, 3)),
            add("input1", 25),
            check_new(),
            add("input2", 25),
            check_new((25, 30, 50, 75)),
        ],
        variants=4,
    ),
    *[
        case(
            INNER,
            f"joining {left} left join key with {right} right join key" + ALL4,
            line,
            inputs={"input1": "value INT", "input2": "value INT"},
            output=("leftKey", "rightKey", "leftValue", "rightValue"),
            pipeline=null_safe,
            twin=null_safe_twin,
            steps=[add("input1", *rows1), add("input2", *rows2), check_new(*expected)],
            variants=4,
            ci=line == 1002,
        )
        for left, right, line, rows1, rows2, expected in (
            ("non-nullable", "nullable", 978, (1, 5), (1, 5, 10, None), ((1, 1, 2, 3), (5, 5, 10, 15))),
            ("nullable", "non-nullable", 990, (1, 5, 10, None), (1, 5), ((1, 1, 2, 3), (5, 5, 10, 15))),
            (
                "nullable",
                "nullable",
                1002,
                (1, 5, 10, None),
                (1, 5, None),
                ((1, 1, 2, 3), (5, 5, 10, 15), (None, None, None, None)),
            ),
        )
    ],
    case(
        INNER,
        "SPARK-51779 Restart streaming join query with virtual column families" + VCF,
        1102,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("key", "leftValue", "rightValue"),
        queries={"query": KEY_JOIN},
        steps=[
            StartStream(checkpoint="checkpointDir"),
            add("input1", 1, 2),
            check_answer(),
            add("input2", 1, 10),
            check_new((1, 2, 3)),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("input1", 2, 10),
            check_new((10, 20, 30)),
            add("input2", 2),
            check_new((2, 4, 6), (2, 4, 6)),
        ],
        notes="The RocksDB metric asserts are not checked.",
    ),
    case(
        INNER,
        "SPARK-51779 Restart the join query and changing state format versions should reuse the version from offset "
        "log" + VCF,
        1180,
        inputs={"input1": "value INT", "input2": "value INT"},
        output=("key", "leftValue", "rightValue"),
        queries={"query": KEY_JOIN},
        steps=[
            StartStream(checkpoint="checkpointDir", conf={"spark.sql.streaming.join.stateFormatVersion": "3"}),
            add("input1", 1, 2),
            check_answer(),
            add("input2", 1, 10),
            check_new((1, 2, 3)),
            StopStream(),
            ClearSink(),
            StartStream(checkpoint="checkpointDir", conf={"spark.sql.streaming.join.stateFormatVersion": "2"}),
            add("input1", 2, 10),
            check_answer((10, 20, 30)),
        ],
        notes="The second testStream of the test is a restart on the same checkpoint with a new sink.",
    ),
    # -- StreamingOuterJoinSuite -------------------------------------------------------------------------------
    condition_case(
        OUTER,
        "left_outer",
        "left",
        1239,
        [
            StartStream(checkpoint="checkpointDir"),
            add_many(leftInput=[1, 2, 3], rightInput=[3, 4, 5]),
            check_new((3, 10, 6, "9"), (1, 10, 2, None), (2, 10, 4, None)),
            add_many(leftInput=[20], rightInput=[21]),
            check_new(),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("rightInput", 20),
            check_new((20, 30, 40, "60")),
        ],
        ci=True,
    ),
    condition_case(
        OUTER,
        "left_outer",
        "right",
        1262,
        [
            add_many(leftInput=[3, 4, 5], rightInput=[1, 2, 3]),
            check_new((3, 10, 6, "9")),
            add_many(leftInput=[20], rightInput=[21]),
            check_new((4, 10, 8, None), (5, 10, 10, None)),
            add("rightInput", 20),
            check_new((20, 30, 40, "60")),
        ],
    ),
    condition_case(
        OUTER,
        "right_outer",
        "left",
        1279,
        [
            add_many(leftInput=[1, 2, 3], rightInput=[3, 4, 5]),
            check_new((3, 10, 6, "9")),
            add_many(leftInput=[20], rightInput=[21]),
            check_new((4, 10, None, "12"), (5, 10, None, "15")),
            add("rightInput", 20),
            check_new((20, 30, 40, "60")),
        ],
    ),
    condition_case(
        OUTER,
        "right_outer",
        "right",
        1296,
        [
            add_many(leftInput=[3, 4, 5], rightInput=[1, 2, 3]),
            check_new((3, 10, 6, "9"), (1, 10, None, "3"), (2, 10, None, "6")),
            add_many(leftInput=[20], rightInput=[21]),
            check_new(),
            add("rightInput", 20),
            check_new((20, 30, 40, "60")),
        ],
    ),
    windowed_case(OUTER, "left_outer", 1313, windowed_steps_outer([(1, 10, 2, None), (2, 10, 4, None)]), ci=True),
    windowed_case(OUTER, "right_outer", 1331, windowed_steps_outer([(6, 10, None, 18), (7, 10, None, 21)])),
    range_outer_case("left_outer", (3, None, 5, None)),
    range_outer_case("right_outer", (None, 2, None, 5)),
    case(
        OUTER,
        "left outer join with non-key condition violated" + ALL4,
        1407,
        inputs=TWO_INTS,
        output=("key", "end", "leftValue", "rightValue"),
        pipeline=non_key_condition,
        twin=non_key_condition_twin,
        steps=[
            add_many(leftInput=[1, 2, 3], rightInput=[1, 2, 3]),
            check_new((1, 10, 2, None), (2, 10, 4, None), (3, 10, 6, None)),
            add_many(leftInput=[20], rightInput=[21]),
            check_new(),
            add("rightInput", 20),
            check_new((20, 30, 40, 60)),
            add_many(leftInput=[40, 41], rightInput=[40, 41]),
            check_new((40, 50, 80, 120), (41, 50, 82, 123)),
            add_many(leftInput=[70], rightInput=[71]),
            check_new(),
            add("rightInput", 70),
            check_new((70, 80, 140, 210)),
            add_many(leftInput=[101, 102, 103], rightInput=[101, 102, 103]),
            check_new(),
            add_many(leftInput=[1000], rightInput=[1001]),
            check_new((101, 110, 202, None), (102, 110, 204, None), (103, 110, 206, None)),
        ],
        variants=4,
        ci=True,
        notes="The right-only part of the condition runs below the right input's watermark (Spark's optimizer "
        "moves it there): the right rows it drops never move the watermark.",
    ),
    case(
        OUTER,
        "SPARK-26187 self left outer join should not return outer nulls for already matched rows" + ALL4,
        1466,
        inputs=SELF,
        output=SELF_OUTPUT,
        queries={"query": self_query("left_outer")},
        steps=[
            add("inputStream", *SELF_1),
            check_new((2, 2, 2, 2), (4, 4, 4, 4)),
            add("inputStream", *SELF_2),
            check_new((6, 6, 6, 6), (8, 8, 8, 8), (10, 10, 10, 10)),
            add("inputStream", *SELF_3),
            check_new((12, 12, 12, 12), (14, 14, 14, 14), (1, 1, None, None), (3, 3, None, None)),
        ],
        variants=4,
        ci=True,
    ),
    case(
        OUTER,
        "SPARK-26187 self right outer join should not return outer nulls for already matched rows" + ALL4,
        1509,
        inputs=SELF,
        output=SELF_OUTPUT,
        queries={"query": self_query("right_outer", mirror=True)},
        steps=[
            add("inputStream", *SELF_1),
            check_new((2, 2, 2, 2), (4, 4, 4, 4)),
            add("inputStream", *SELF_2),
            check_new((6, 6, 6, 6), (8, 8, 8, 8), (10, 10, 10, 10)),
            add("inputStream", *SELF_3),
            check_new((12, 12, 12, 12), (14, 14, 14, 14), (None, None, 1, 1), (None, None, 3, 3)),
        ],
        variants=4,
    ),
    case(
        OUTER,
        "SPARK-29438: ensure UNION doesn't lead stream-stream join to use shifted partition IDs" + ALL4,
        1609,
        inputs={"input1": "value INT", "input2": "value INT", "input3": "value INT"},
        output=("key", "leftValue", "rightValue"),
        pipeline=union_with_join,
        twin=union_with_join_twin,
        steps=[
            StartStream(checkpoint="tempDir"),
            add_many(input1=[11, 12, 13], input2=[11, 12, 13, 14, 15], input3=[13, 14, 15, 16, 17]),
            check_new((11, 11, 11), (12, 12, 12), (13, 13, 13), (13, 26, 39), (14, 28, 42), (15, 30, 45)),
            StopStream(),
            StartStream(checkpoint="tempDir"),
            add_many(input1=[21, 22, 23], input2=[21, 22, 23, 24, 25], input3=[23, 24, 25, 26, 27]),
            check_new((21, 21, 21), (22, 22, 22), (23, 23, 23), (23, 46, 69), (24, 48, 72), (25, 50, 75)),
        ],
        variants=4,
        notes="The test restarts with new MemoryStreams of another partitioning that replay the first batch: "
        "the same inputs, restarted.",
    ),
    case(
        OUTER,
        "SPARK-32148 stream-stream join regression on Spark 3.0.0" + ALL4,
        1666,
        inputs=EVENTS_INPUTS,
        output=("l_eventTime", "l_id", "l_comment", "r_eventTime", "r_id", "r_name"),
        queries={"query": Query(*events_join("left_outer", ("2 minutes", "4 minutes"), ("comment", "name")))},
        steps=[
            add_many(
                input1=[
                    (ts("2020-01-01 00:00:00"), "abc", "has no join partner"),
                    (ts("2020-01-02 00:00:00"), "abc", "joined with A"),
                    (ts("2020-01-02 01:00:00"), "abc", "joined with B"),
                ],
                input2=[
                    (ts("2020-01-02 00:00:10"), "abc", "A"),
                    (ts("2020-01-02 00:59:59"), "abc", "B"),
                    (ts("2020-01-02 02:00:00"), "abc", "C"),
                ],
            ),
            check_new(
                (ts("2020-01-01 00:00:00"), "abc", "has no join partner", None, None, None),
                (ts("2020-01-02 00:00:00"), "abc", "joined with A", ts("2020-01-02 00:00:10"), "abc", "A"),
                (ts("2020-01-02 01:00:00"), "abc", "joined with B", ts("2020-01-02 00:59:59"), "abc", "B"),
            ),
        ],
        variants=4,
        ci=True,
        notes="Both sides have columns eventTime and id: they are renamed l_... and r_... (Spark keeps both "
        "names twice). The test's timestamps are local times of its JVM; the replay reads them in UTC.",
    ),
    *[
        case(
            OUTER,
            f"left-outer: joining {left} left join key with {right} right join key" + ALL4,
            line,
            inputs={"input1": "_1 INT, _2 INT", "input2": "_1 INT, _2 INT"},
            output=NULLABLE_OUTPUT,
            pipeline=nullable_keys,
            twin=nullable_keys_twin,
            steps=[
                add("input1", *rows1),
                add("input2", *rows2),
                check_new(*first),
                add("input1", (1, 21)),
                add("input2", (1, 22)),
                check_new(*second),
            ],
            variants=4,
        )
        for left, right, line, rows1, rows2, first, second in (
            (
                "non-nullable",
                "nullable",
                1709,
                ((1, 1), (1, 2), (1, 3), (1, 4), (1, 5)),
                ((1, 3), (1, 4), (1, 5), (1, 6)),
                ((1, 1, 3, 3, 10, 6, 9), (1, 1, 4, 4, 10, 8, 12), (1, 1, 5, 5, 10, 10, 15)),
                ((1, None, 1, None, 10, 2, None), (1, None, 2, None, 10, 4, None)),
            ),
            (
                "nullable",
                "non-nullable",
                1737,
                ((1, 1), (None, 2), (1, 3), (1, 4), (1, 5)),
                ((1, 3), (1, 4), (1, 5), (1, 6)),
                ((1, 1, 3, 3, 10, 6, 9), (1, 1, 4, 4, 10, 8, 12), (1, 1, 5, 5, 10, 10, 15)),
                ((1, None, 1, None, 10, 2, None), (None, None, 2, None, 10, 4, None)),
            ),
            (
                "nullable",
                "nullable",
                1765,
                ((1, 1), (None, 2), (1, 3), (None, 4), (1, 5)),
                ((1, 3), (None, 4), (1, 5), (1, 6)),
                ((1, 1, 3, 3, 10, 6, 9), (None, None, 4, 4, 10, 8, 12), (1, 1, 5, 5, 10, 10, 15)),
                ((1, None, 1, None, 10, 2, None), (None, None, 2, None, 10, 4, None)),
            ),
        )
    ],
    case(
        OUTER,
        "SPARK-38684: outer join works correctly even if processing input rows and evicting state rows for same "
        "grouping key happens in the same micro-batch" + ALL4,
        1819,
        inputs=EVENTS_INPUTS,
        output=("l_eventTime", "l_id", "l_comment", "r_eventTime", "r_id", "r_comment"),
        queries={
            "query": Query(
                *events_join("left_outer", ("0 second", "0 second"), ("comment", "comment")), conf=NO_DATA_OFF
            )
        },
        steps=[
            add_many(
                input1=[(ts("2020-01-02 00:00:00"), "abc", "left in batch 1")],
                input2=[(ts("2020-01-02 00:01:00"), "abc", "right in batch 1")],
            ),
            check_new(),
            add_many(
                input1=[(ts("2020-01-02 01:00:00"), "abc", "left in batch 2")],
                input2=[(ts("2020-01-02 01:01:00"), "abc", "right in batch 2")],
            ),
            check_new(),
            add("input1", (ts("2020-01-02 01:30:00"), "abc", "left in batch 3")),
            check_new((ts("2020-01-02 00:00:00"), "abc", "left in batch 1", None, None, None)),
            add("input2", (ts("2020-01-02 01:30:10"), "abc", "match with left in batch 3")),
            check_new(
                (ts("2020-01-02 01:00:00"), "abc", "left in batch 2", None, None, None),
                (
                    ts("2020-01-02 01:30:00"),
                    "abc",
                    "left in batch 3",
                    ts("2020-01-02 01:30:10"),
                    "abc",
                    "match with left in batch 3",
                ),
            ),
        ],
        variants=4,
        ci=True,
    ),
    case(
        OUTER,
        "SPARK-49829 left-outer join, input being unmatched is between WM for late event and WM for eviction" + NO_VCF,
        1882,
        inputs={"memoryStream1": "_1 STRING, _2 INT", "memoryStream2": "_1 STRING, _2 INT"},
        output=("key", "eventTime"),
        queries={"query": Query(key_and_time, key_and_time_twin, conf=NO_DATA_OFF)},
        steps=[
            StartStream(checkpoint="checkpoint"),
            add_many(memoryStream1=[("a", 1), ("b", 2)], memoryStream2=[("b", 2), ("c", 1)]),
            check_new(("b", 2)),
            add("memoryStream1", ("d", 1)),
            check_new(("a", 1), ("d", 1)),
        ],
        ci=True,
        notes="The test also reads the join's state store; only the rows are checked.",
    ),
    # -- StreamingFullOuterJoinSuite ---------------------------------------------------------------------------
    windowed_case(
        FULL,
        "full_outer",
        1947,
        [
            StartStream(checkpoint="checkpointDir"),
            add_many(leftInput=[1, 2, 3, 4, 5], rightInput=[3, 4, 5, 6, 7]),
            check_new((3, 10, 6, 9), (4, 10, 8, 12), (5, 10, 10, 15)),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add_many(leftInput=[21], rightInput=[22]),
            check_new((1, 10, 2, None), (2, 10, 4, None), (6, 10, None, 18), (7, 10, None, 21)),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("leftInput", 22),
            check_new((22, 30, 44, 66)),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("leftInput", 1),
            check_new(),
            add("rightInput", 5),
            check_new(),
        ],
        ci=True,
    ),
    condition_case(
        FULL,
        "full_outer",
        "left",
        2008,
        [
            add_many(leftInput=[1, 2, 3], rightInput=[3, 4, 5]),
            check_new((1, 10, 2, None, None, None), (2, 10, 4, None, None, None), (3, 10, 6, 3, 10, "9")),
            add_many(leftInput=[20], rightInput=[21]),
            check_new((None, None, None, 4, 10, "12"), (None, None, None, 5, 10, "15")),
            add("rightInput", 20),
            check_new((20, 30, 40, 20, 30, "60")),
        ],
    ),
    condition_case(
        FULL,
        "full_outer",
        "right",
        2041,
        [
            add_many(leftInput=[3, 4, 5], rightInput=[1, 2, 3]),
            check_new((None, None, None, 1, 10, "3"), (None, None, None, 2, 10, "6"), (3, 10, 6, 3, 10, "9")),
            add_many(leftInput=[20], rightInput=[21]),
            check_new((4, 10, 8, None, None, None), (5, 10, 10, None, None, None)),
            add("rightInput", 20),
            check_new((20, 30, 40, 20, 30, "60")),
        ],
        ci=True,
    ),
    case(
        FULL,
        "full outer join with watermark range condition" + ALL4,
        2075,
        inputs=TWO_PAIRS,
        output=RANGE_OUTPUT,
        queries={"query": range_query("full_outer")},
        steps=[
            add("leftInput", (1, 5), (3, 5)),
            check_new(),
            add("rightInput", (1, 10), (2, 5)),
            check_new((1, 1, 5, 10)),
            add("rightInput", (1, 9)),
            check_new((1, 1, 5, 9)),
            add("leftInput", (1, 7), (1, 30)),
            check_new((1, 1, 7, 9), (1, 1, 7, 10)),
            add("rightInput", (0, 30)),
            check_new((3, None, 5, None), (None, 2, None, 5)),
        ],
        variants=4,
    ),
    case(
        FULL,
        "self full outer join" + ALL4,
        2121,
        inputs=SELF,
        output=SELF_OUTPUT,
        queries={"query": self_query("full_outer")},
        steps=[
            add("inputStream", *SELF_1),
            check_new((2, 2, 2, 2), (4, 4, 4, 4)),
            add("inputStream", *SELF_2),
            check_new((6, 6, 6, 6), (8, 8, 8, 8), (10, 10, 10, 10)),
            add("inputStream", *SELF_3),
            check_new((12, 12, 12, 12), (14, 14, 14, 14), (1, 1, None, None), (3, 3, None, None)),
        ],
        variants=4,
    ),
    # -- StreamingLeftSemiJoinSuite ----------------------------------------------------------------------------
    windowed_case(
        SEMI,
        "left_semi",
        2166,
        [
            StartStream(checkpoint="checkpointDir"),
            add_many(leftInput=[1, 2, 3, 4, 5], rightInput=[3, 4, 5, 6, 7]),
            check_new((3, 10, 6), (4, 10, 8), (5, 10, 10)),
            add_many(leftInput=[21], rightInput=[22]),
            check_new(),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("leftInput", 22),
            check_new((22, 30, 44)),
            StopStream(),
            StartStream(checkpoint="checkpointDir"),
            add("leftInput", 1),
            check_new(),
            add("rightInput", 5),
            check_new(),
        ],
        ci=True,
    ),
    condition_case(
        SEMI,
        "left_semi",
        "left",
        2222,
        [
            add_many(leftInput=[1, 2, 3], rightInput=[3, 4, 5]),
            check_new((3, 10, 6)),
            add_many(leftInput=[20], rightInput=[21]),
            check_new(),
            add("rightInput", 20),
            check_new((20, 30, 40)),
        ],
    ),
    condition_case(
        SEMI,
        "left_semi",
        "right",
        2254,
        [
            add_many(leftInput=[3, 4, 5], rightInput=[1, 2, 3]),
            check_new((3, 10, 6)),
            add_many(leftInput=[20], rightInput=[21]),
            check_new(),
            add("rightInput", 20),
            check_new((20, 30, 40)),
        ],
    ),
    case(
        SEMI,
        "left semi join with watermark range condition" + ALL4,
        2286,
        inputs=TWO_PAIRS,
        output=("leftKey", "leftTime"),
        queries={"query": range_query("left_semi")},
        steps=[
            add("leftInput", (1, 5), (3, 5)),
            check_new(),
            add("rightInput", (1, 10), (2, 5)),
            check_new((1, 5)),
            add("rightInput", (1, 9)),
            check_new(),
            add("leftInput", (1, 7), (1, 30)),
            check_new((1, 7)),
            add("rightInput", (0, 30)),
            check_new(),
        ],
        variants=4,
    ),
    case(
        SEMI,
        "self left semi join" + ALL4,
        2331,
        inputs=SELF,
        output=("leftId", "leftTime"),
        queries={"query": self_query("left_semi")},
        steps=[
            add("inputStream", *SELF_1),
            check_new((2, 2), (4, 4)),
            add("inputStream", *SELF_2),
            check_new((6, 6), (8, 8), (10, 10)),
            add("inputStream", *SELF_3),
            check_new((12, 12), (14, 14)),
        ],
        variants=4,
        notes="Spark infers the filter value % 2 = 0 for the left side from the equal keys and the right "
        "side's filter (the test's state metrics show it); the rows are the same without it.",
    ),
    case(
        SEMI,
        "SPARK-49829 two chained stream-stream left outer joins among three input streams" + NO_VCF,
        2371,
        inputs={
            "memoryStream1": "_1 BIGINT, _2 INT",
            "memoryStream2": "_1 BIGINT, _2 INT",
            "memoryStream3": "_1 BIGINT, _2 INT",
        },
        output=("eventTime", "v1", "v2", "v3"),
        queries={"query": Query(chained_outer, chained_outer_twin, conf=NO_DATA_OFF)},
        steps=[
            add_many(memoryStream1=[(20, 1)], memoryStream2=[(20, 1)], memoryStream3=[(20, 1)]),
            check_new((20, 1, 1, 1)),
            add_many(memoryStream1=[(21, 2)], memoryStream2=[(21, 2)]),
            check_new(),
            add_many(memoryStream1=[(22, 3)], memoryStream3=[(22, 3)]),
            check_new(),
            add("memoryStream1", (23, 4)),
            check_new((21, 2, 2, None)),
            add_many(memoryStream1=[(24, 5)], memoryStream2=[(24, 5)], memoryStream3=[(24, 5)]),
            check_new((24, 5, 5, 5)),
            add("memoryStream1", (100, 6)),
            check_new((22, 3, None, 3), (23, 4, None, None)),
        ],
        ci=True,
        notes="The test also reads the state stores of both joins; only the rows are checked.",
    ),
]

NOT_EXPRESSIBLE = [
    NotExpressible(
        INNER,
        "locality preferences of StateStoreAwareZippedRDD" + ALL4,
        627,
        "a unit test of Spark's scheduler (preferred locations of state-store-aware partitions)",
        variants=4,
    ),
    NotExpressible(
        INNER,
        "streaming join should require StatefulOpClusteredDistribution from children" + ALL4,
        691,
        "a check of Spark's physical plan (both join children hash-partitioned into the shuffle partitions)",
        variants=4,
    ),
    NotExpressible(
        INNER,
        "SPARK-26187 restore the stream-stream inner join query from Spark 2.4" + ALL4,
        727,
        "restores a checkpoint written by Spark 2.4.0 (a test resource) and checks its join state format",
        variants=4,
    ),
    NotExpressible(
        INNER,
        "SPARK-48687 - restore the stream-stream inner join query from Spark 3.5 and changing the join condition "
        "(key schema) should fail the query" + ALL4,
        785,
        "restores a Spark 3.5.1 checkpoint and expects Spark's state key schema compatibility error",
        variants=4,
    ),
    NotExpressible(
        INNER,
        "SPARK-48687 - restore the stream-stream inner join query from Spark 3.5 and changing the value schema "
        "should fail the query" + ALL4,
        855,
        "restores a Spark 3.5.1 checkpoint and expects Spark's state value schema compatibility error",
        variants=4,
    ),
    NotExpressible(
        INNER,
        "SPARK-51779 Verify StateSchemaV3 writes correct key and value schemas for join operator" + VCF,
        1018,
        "reads the state schema file Spark writes into the checkpoint",
    ),
    NotExpressible(
        INNER,
        "SPARK-51779 Join query using virtual column families with HDFS should fail" + VCF,
        1149,
        "a capability error of one of Spark's state store providers",
    ),
    NotExpressible(
        OUTER,
        "SPARK-26187 restore the stream-stream outer join query from Spark 2.4" + ALL4,
        1553,
        "restores a checkpoint written by Spark 2.4.0 (a test resource) and expects a refusal of its state format",
        variants=4,
    ),
]
