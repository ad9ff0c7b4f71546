"""Each refusal of the compiler (``spark/compiler/refusals.py``) that Spark can be asked about, asked: the
query the compiler would have had to write, run on Spark, fails with Spark's own error (the compiler's
one-line messages: tests/spark/test_compiler_source.py). Two measured permissions too: what the compiler
writes instead of refusing."""

import pytest

from ministream.lessons.lesson import BASE_TIME
from ministream.spark import SparkQueryError, run_query, scripted_stream
from ministream.spark.compiler.runtime import map_rows, pair_predicate, row_predicate

pytestmark = pytest.mark.spark

SCHEMA = {"ts": "TIMESTAMP", "key": "STRING", "value": "DOUBLE"}
SCRIPT = [[{"ts": BASE_TIME + 1000, "key": "a", "value": 1.0}], [{"ts": BASE_TIME + 30_000, "key": "a", "value": 2.0}]]


def events(spark):
    return scripted_stream(spark, "ts TIMESTAMP, key STRING, value DOUBLE", SCRIPT)


def sides(spark):
    from pyspark.sql import functions as F

    left = events(spark).select(F.col("key").alias("lk"), F.col("ts").alias("lt")).withWatermark("lt", "5 seconds")
    right = events(spark).select(F.col("key").alias("rk"), F.col("ts").alias("rt")).withWatermark("rt", "5 seconds")
    return left, right


NO_WATERMARK = "STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION.*without watermark"


def test_a_udf_map_of_the_event_time_loses_the_watermark(spark):
    """A Python map's output ts is a new column without the watermark's mark: a windowed count after it in
    append mode is refused as an aggregation without a watermark."""
    from pyspark.sql import functions as F

    marked = events(spark).withWatermark("ts", "5 seconds")
    copied = marked.select(map_rows("copy", dict, SCHEMA, SCHEMA)(F.struct("ts", "key", "value")).alias("row"))
    windows = copied.select("row.*").groupBy("key", F.window("ts", "10 seconds")).count()
    with pytest.raises(SparkQueryError, match=NO_WATERMARK):
        run_query(windows, "append")


def test_a_udf_filter_keeps_the_watermark(spark):
    """A Python filter keeps the columns themselves, and their mark: the same count after it runs and emits."""
    from pyspark.sql import functions as F

    marked = events(spark).withWatermark("ts", "5 seconds")
    kept = marked.filter(row_predicate(lambda row: True, {"value": "DOUBLE"})(F.struct("value")))
    counts = kept.groupBy("key", F.window("ts", "10 seconds")).count().select("key", "count")
    assert [batch.rows for batch in run_query(counts, "append")] == [[], [], [{"key": "a", "count": 1}]]


def test_window_bounds_taken_out_as_columns_lose_the_watermark(spark):
    """window(...).end as a column of its own has no mark: grouping by it in append mode is refused."""
    from pyspark.sql import functions as F

    marked = events(spark).withWatermark("ts", "5 seconds")
    windowed = marked.select(F.window("ts", "10 seconds").alias("window")).select(
        F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end")
    )
    with pytest.raises(SparkQueryError, match=NO_WATERMARK):
        run_query(windowed.groupBy("window_start", "window_end").count(), "append")


def test_sorting_a_stream_outside_complete_mode_is_refused(spark):
    """orderBy on a stream without an aggregation in complete mode is refused."""
    with pytest.raises(SparkQueryError, match="Sorting is not supported on streaming DataFrames/Datasets"):
        run_query(events(spark).orderBy("key"), "append")


@pytest.mark.parametrize("how", ["left_outer", "left_semi"])
def test_a_udf_on_the_pair_in_an_outer_or_semi_join_is_refused(spark, how):
    """A Python condition that reads both sides cannot stay in an outer or semi join's ON clause."""
    from pyspark.sql import functions as F

    left, right = sides(spark)
    pair = pair_predicate(lambda one, other: True, {"lk": "STRING"}, {"rk": "STRING"})(F.struct("lk"), F.struct("rk"))
    joined = left.join(right, F.expr("lk = rk AND rt >= lt AND rt <= lt + interval 10 seconds") & pair, how)
    with pytest.raises(SparkQueryError, match="PYTHON_UDF_IN_ON_CLAUSE"):
        run_query(joined, "append")


def test_a_udf_on_the_kept_side_of_an_outer_join_runs(spark):
    """A Python condition on the side a left outer join keeps reads that side only: Spark runs it in the ON
    clause (what the compiler writes for left_where of a left outer join)."""
    from pyspark.sql import functions as F

    left, right = sides(spark)
    kept = row_predicate(lambda row: True, {"lk": "STRING"})(F.struct("lk"))
    joined = left.join(right, F.expr("lk = rk AND rt >= lt AND rt <= lt + interval 10 seconds") & kept, "left_outer")
    rows = [row for batch in run_query(joined, "append") for row in batch.rows]
    assert rows == [
        {"lk": "a", "lt": BASE_TIME + 1000, "rk": "a", "rt": BASE_TIME + 1000},
        {"lk": "a", "lt": BASE_TIME + 30_000, "rk": "a", "rt": BASE_TIME + 30_000},
    ]


def test_an_inner_stream_stream_join_runs_in_update_mode(spark):
    """Spark 4.3 runs an inner stream-stream join in update mode (each joined row once, as in append), so the
    compiler does not refuse it (ministream's engine does, with the message of older Spark versions)."""
    from pyspark.sql import functions as F

    left, right = sides(spark)
    joined = left.join(right, F.expr("lk = rk AND rt >= lt AND rt <= lt + interval 10 seconds"), "inner")
    assert sum(len(batch.rows) for batch in run_query(joined, "update")) == 2


def test_the_continuous_trigger_refuses_an_aggregation(spark):
    """Spark's continuous processing runs map-like queries only."""
    from pyspark.errors import AnalysisException

    counts = spark.readStream.format("rate").load().groupBy("value").count()
    writer = counts.writeStream.format("console").outputMode("complete").trigger(continuous="1 second")
    with pytest.raises(AnalysisException, match="Continuous processing does not support Aggregate operations"):
        writer.start().stop()


def test_a_python_aggregate_function_is_refused_in_a_streaming_aggregation(spark):
    """A grouped-aggregate pandas UDF cannot aggregate a stream: why a Custom aggregate compiles to
    collect_list and a UDF that folds the list."""
    import pandas as pd
    from pyspark.sql import functions as F

    @F.pandas_udf("double")
    def spread(values: pd.Series) -> float:
        return float(values.max() - values.min())

    with pytest.raises(SparkQueryError, match="Streaming aggregation doesn't support group aggregate pandas UDF"):
        run_query(events(spark).groupBy("key").agg(spread("value").alias("spread")), "update")


def test_a_watermark_on_a_column_that_is_not_a_timestamp_is_refused(spark):
    """withWatermark needs a TIMESTAMP column."""
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="EVENT_TIME_IS_NOT_ON_TIMESTAMP_TYPE"):
        events(spark).withWatermark("value", "5 seconds")
